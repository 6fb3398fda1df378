// The gate every postprocess phase (ASTROMETRY, BGE, PCC, HYPERMETRIC_STRETCH) opens with: its
// postprocess.* switch off ends it `disabled`; without an RGB stack to work on (mono data, or
// STACKING wrote none) it ends `no_rgb_stack`.

import { skipped } from '../phase.js';
import type { RawStackOutcome } from './reasons.js';
import type { RawStackState } from './state.js';

export function postprocessGate(state: RawStackState, key: keyof RawStackState['config']['postprocess']): RawStackOutcome | null {
  if (!state.config.postprocess[key]) return skipped('disabled', `postprocess.${key} is false`);
  if (!state.outputs.stacked_rgb) return skipped('no_rgb_stack', 'no RGB stack (mono data or stacking did not produce one)');
  return null;
}
