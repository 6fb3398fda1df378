// The tiled phases that are Raw Stack's phases run on the tiled state (the shared stages behind
// them: scan, calibration with dark matching, postprocess, report), under the predecessor's
// phase names where they differ (INPUT_SCAN runs as SCAN_INPUT), each recording the tiled keys
// it reads (records.ts).

import { tiledReportSection } from '../report-section.js';
import { astrometryPhase } from '../../rawstack/phases/astrometry.js';
import { bgePhase } from '../../rawstack/phases/bge.js';
import { calibrationPhase } from '../../rawstack/phases/calibration.js';
import { hmsPhase } from '../../rawstack/phases/hms.js';
import { inputScanPhase } from '../../rawstack/phases/input-scan.js';
import { pccPhase } from '../../rawstack/phases/pcc.js';
import { reportPhase } from '../../rawstack/phases/report.js';
import { fromRawStack, tiledPhase } from '../records.js';

export const scanInputPhase = tiledPhase('SCAN_INPUT', ['input'], fromRawStack(inputScanPhase));
export const tiledCalibrationPhase = tiledPhase('CALIBRATION', ['calibration', 'resume.keep_intermediates'], fromRawStack(calibrationPhase));
export const tiledAstrometryPhase = tiledPhase('ASTROMETRY', ['astrometry'], fromRawStack(astrometryPhase));
export const tiledBgePhase = tiledPhase('BGE', ['bge'], fromRawStack(bgePhase));
export const tiledPccPhase = tiledPhase('PCC', ['pcc'], fromRawStack(pccPhase));
export const tiledHmsPhase = tiledPhase('HYPERMETRIC_STRETCH', ['hypermetric_stretch'], fromRawStack(hmsPhase));
const rawReport = fromRawStack(reportPhase);
export const tiledReportPhase = tiledPhase('REPORT', ['report'], {
  ...rawReport,
  // The tiles-and-weights section reaches the shared report through the STACKING-like summaries.
  async run(ctx) {
    const section = tiledReportSection(ctx.state);
    if (section) ctx.state.summaries.TILES = section as unknown as Record<string, unknown>;
    return rawReport.run(ctx);
  },
});
