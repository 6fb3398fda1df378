// ASTROMETRY and PCC until their issues land: each checks the skip rules the seed states
// (disabled, no RGB stack, no WCS) and otherwise ends `skipped` with reason `not_available`, so
// the event stream and the report already show them. BGE (phases/bge.ts) and
// HYPERMETRIC_STRETCH (phases/hms.ts) are real and re-exported here so run.ts keeps one import site.

import { skipped, type Phase, type PhaseOutcome } from '../../phase.js';
import type { RawStackState } from '../state.js';

export { bgePhase } from './bge.js';
export { hmsPhase } from './hms.js';

function placeholder(name: string, switchKey: keyof RawStackState['config']['postprocess'], needs: (s: RawStackState, outcomes: ReadonlyMap<string, PhaseOutcome>) => PhaseOutcome | null): Phase<RawStackState> {
  return {
    name,
    optional: true,
    async run(ctx) {
      const { state } = ctx;
      if (!state.config.postprocess[switchKey]) return skipped('disabled', `postprocess.${switchKey} is false`);
      return needs(state, ctx.outcomes) ?? skipped('not_available', `${name} is not implemented in this build yet`);
    },
  };
}

const noRgb = (s: RawStackState) => (s.outputs.stacked_rgb ? null : skipped('no_rgb_stack', 'no RGB stack (mono data or stacking did not produce one)'));

export const astrometryPhase = placeholder('ASTROMETRY', 'astrometry', noRgb);
export { pccPhase } from './pcc.js';
