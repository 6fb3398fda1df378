// STATE_CLUSTERING hands its clusters to SYNTHETIC_FRAMES through the run's state object (kept
// out of TiledData, which is the tables the report and the artifacts show); a resume checkpoint
// carries them (checkpoint.ts), so SYNTHETIC_FRAMES can be the phase a resume starts from.

import type { Clusters } from './clustering.js';
import type { TiledState } from './state.js';

const clusters = new WeakMap<TiledState, Clusters>();

export const clustersOf = (s: TiledState): Clusters | null => clusters.get(s) ?? null;

export function setClusters(s: TiledState, c: Clusters | null): void {
  if (c) clusters.set(s, c);
  else clusters.delete(s);
}
