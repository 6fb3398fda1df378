// The tiled reconstruction workflow as the generic layer runs it (src/pipeline/run.ts): kind
// `tiled` (its run-folder layout: config.yaml, logs/run_events.jsonl, artifacts/<phase>.json),
// the predecessor's phase names in its order, REPORT always run, the input run.json records, and
// the state before SCAN_INPUT (Raw Stack's state plus the tiled tables). config.yaml records the
// tiled settings (config/tiled-run.ts), not the Raw Stack keys derived from them.

import type { PipelineDefinition } from '../run.js';
import { RAWSTACK } from '../rawstack/definition.js';
import { channelSplitPhase, normalizationPhase } from './phases/normalization.js';
import { stateClusteringPhase, syntheticFramesPhase } from './phases/clustering.js';
import { commonOverlapPhase, prewarpPhase, tiledRegistrationPhase, tileGridPhase } from './phases/geometry.js';
import { globalMetricsPhase } from './phases/global-metrics.js';
import { localMetricsPhase } from './phases/local-metrics.js';
import { tileReconstructionPhase } from './phases/reconstruction.js';
import { scanInputPhase, tiledAstrometryPhase, tiledBgePhase, tiledCalibrationPhase, tiledHmsPhase, tiledPccPhase, tiledReportPhase } from './phases/shared.js';
import { debayerPhase, tiledStackingPhase } from './phases/stacking.js';
import { newTiledData, type TiledConfigBundle, type TiledState } from './state.js';

export const TILED: PipelineDefinition<TiledConfigBundle, TiledState> = {
  kind: 'tiled',
  phases: [
    scanInputPhase,
    tiledCalibrationPhase,
    channelSplitPhase,
    normalizationPhase,
    globalMetricsPhase,
    tileGridPhase,
    tiledRegistrationPhase,
    prewarpPhase,
    commonOverlapPhase,
    localMetricsPhase,
    tileReconstructionPhase,
    stateClusteringPhase,
    syntheticFramesPhase,
    tiledStackingPhase,
    debayerPhase,
    tiledAstrometryPhase,
    tiledBgePhase,
    tiledPccPhase,
    tiledHmsPhase,
    tiledReportPhase,
  ],
  alwaysRun: tiledReportPhase.name,
  input: (config) => ({ input_dir: config.tiled.input.input_dir, pattern: config.tiled.input.pattern }),
  inputInRunStart: true,
  effectiveConfig: (config) => config.tiled,
  // Raw Stack's state (the shared phases run on it) with the tiled tables beside it.
  initialState: (base) => ({ ...RAWSTACK.initialState(base), config: base.config, tiled: newTiledData() }),
};
