// Stacking weights of the frames (frame.weight), set once the frame decisions are final: by
// FRAME_FILTERING after its filter, or from its prepare() when it is skipped in quality mode
// `off` — so STACKING always finds them, whichever way the run went.
//   stacking.weighting = quality: w ∝ q = score/(1 − score) (frame-metrics.ts qualityWeights:
//     the inverse-variance form of the final quality_score), mean 1 over the included frames;
//     all 1 when no included frame has a positive score;
//   stacking.weighting = uniform: 1.
// Excluded frames get null (they are not stacked). Run queue: per filter group.

import { qualityWeights } from '../../algorithms/frame-metrics.js';
import { filterGroups } from './queue.js';
import type { RawStackState } from './state.js';

export interface WeightSummary {
  weighting: 'quality' | 'uniform';
  n_weighted: number;
  min: number | null;
  max: number | null;
}

export function computeWeights(state: RawStackState): WeightSummary {
  const weighting = state.config.stacking.weighting;
  // Run queue: per filter group (each filter is stacked on its own, mean 1 within it).
  for (const g of filterGroups(state)) {
    const included = g.frames.map((f) => f.status === 'included');
    const w =
      weighting === 'uniform'
        ? included.map((inc) => (inc ? 1 : 0))
        : qualityWeights(
            g.frames.map((f) => f.metrics?.quality_score ?? NaN),
            included,
          );
    g.frames.forEach((f, i) => {
      f.weight = included[i] ? w[i]! : null;
    });
  }
  const used = state.frames.flatMap((f) => (f.weight !== null ? [f.weight] : []));
  return { weighting, n_weighted: used.length, min: used.length ? Math.min(...used) : null, max: used.length ? Math.max(...used) : null };
}
