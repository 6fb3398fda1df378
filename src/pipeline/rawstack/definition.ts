// The Raw Stack pipeline as the generic layer runs it (src/pipeline/run.ts): its kind (and so
// its run-folder layout), its phases in order (seed "Raw Stack processing path"), the phase that
// always runs (REPORT), what run.json records as input, and the state before INPUT_SCAN. The
// phase plan every reader sees comes from this list through run_start.

import type { RawStackConfig } from '../../config/rawstack.js';
import type { PipelineDefinition } from '../run.js';
import { calibrationPhase } from './phases/calibration.js';
import { cfaChannelPrepPhase } from './phases/cfa-channel-prep.js';
import { frameFilteringPhase } from './phases/frame-filtering.js';
import { inputScanPhase } from './phases/input-scan.js';
import { qualityAnalysisPhase } from './phases/quality-analysis.js';
import { referenceSelectionPhase } from './phases/reference-selection.js';
import { registrationPhase } from './phases/registration.js';
import { stackingPhase } from './phases/stacking.js';
import { astrometryPhase } from './phases/astrometry.js';
import { bgePhase } from './phases/bge.js';
import { pccPhase } from './phases/pcc.js';
import { hmsPhase } from './phases/hms.js';
import { reportPhase } from './phases/report.js';
import type { RawStackState } from './state.js';

export const RAWSTACK: PipelineDefinition<RawStackConfig, RawStackState> = {
  kind: 'rawstack',
  phases: [inputScanPhase, calibrationPhase, cfaChannelPrepPhase, referenceSelectionPhase, registrationPhase, qualityAnalysisPhase, frameFilteringPhase, stackingPhase, astrometryPhase, bgePhase, pccPhase, hmsPhase, reportPhase],
  alwaysRun: reportPhase.name,
  input: (config) => ({ lights_dir: config.lights_dir, pattern: config.pattern, queue: config.queue }),
  initialState: (base) => ({
    ...base,
    frames: [],
    colorMode: null,
    bayer: null,
    width: null,
    height: null,
    masters: { bias: null, dark: null, flat: null, darkflat: null },
    referenceIndex: null,
    referenceStrategy: null,
    outputs: {},
    queue: null,
    summaries: {},
  }),
};
