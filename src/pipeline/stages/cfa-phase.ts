// A frame's CFA phase: the session's Bayer pattern (state.bayer, from the scan) shifted by the
// frame's own XBAYROFF/YBAYROFF (or BAYOFFX/BAYOFFY) and ROWORDER, i.e. the colour of stored
// pixel (0, 0) of that frame (cpu/debayer.ts cfaPhase has the convention). Every stage that
// debayers, bins CFA sites or measures per channel asks here, so a cropped or bottom-up frame
// gets the same answer everywhere.

import { cfaPhase, type CfaPattern } from '../../cpu/debayer.js';
import { keys, type FitsHeader } from '../../fits/index.js';

export function frameCfaPhase(pattern: CfaPattern, header: FitsHeader, height: number): CfaPattern {
  const off = keys.bayerOffset(header);
  return cfaPhase(pattern, off.x, off.y, keys.rowOrder(header) ?? 'TOP-DOWN', height);
}
