// STATE_CLUSTERING and SYNTHETIC_FRAMES (maths in ../clustering.ts). Reduced mode (fewer frames
// than assumptions.frames_reduced_threshold, with reduced_mode_skip_clustering) or
// synthetic.enabled false: both end skipped, and their JSON says which mode ran and why.
// Otherwise STATE_CLUSTERING labels the frames and SYNTHETIC_FRAMES replaces the weight table by
// the blend of the per-cluster (virtual) synthetic frames.

import { failed, ok, skipped } from '../../phase.js';
import { clusterFrames, clusterTable } from '../clustering.js';
import { clustersOf, setClusters } from '../cluster-handoff.js';
import { writeArtifact, tiledPhase } from '../records.js';
import type { TiledPhase } from '../reasons.js';
import type { TiledState } from '../state.js';
import { tileCount } from '../tile-grid.js';



/** Why clustering does not run, or null when it does. */
function offReason(s: TiledState): { reason: 'reduced_mode' | 'disabled'; message: string } | null {
  const c = s.config.tiled;
  const n = s.tiled.table?.frames.length ?? 0;
  if (!c.synthetic.enabled) return { reason: 'disabled', message: 'synthetic.enabled is false' };
  if (c.assumptions.reduced_mode_skip_clustering && n < c.assumptions.frames_reduced_threshold) return { reason: 'reduced_mode', message: `${n} frames, below assumptions.frames_reduced_threshold = ${c.assumptions.frames_reduced_threshold}: the tile-weighted stack of all frames is the result` };
  return null;
}

function inputOf(s: TiledState) {
  const t = s.tiled.table!;
  const byIndex = new Map(s.frames.map((f) => [f.index, f]));
  return {
    g: t.frames.map((i) => s.tiled.global.get(i)?.g ?? 1),
    table: t.table,
    tiles: tileCount(s.tiled.grid!),
    l: s.tiled.local?.l ?? null,
    background: t.frames.map((i) => byIndex.get(i)?.metrics?.background_median ?? NaN),
    noise: t.frames.map((i) => byIndex.get(i)?.metrics?.background_rms ?? NaN),
  };
}

export const stateClusteringPhase: TiledPhase = tiledPhase('STATE_CLUSTERING', ['synthetic', 'assumptions'], {
  name: 'STATE_CLUSTERING',
  optional: false,
  async run(ctx) {
    const s = ctx.state;
    if (!s.tiled.table) return failed('input_error', 'TILE_RECONSTRUCTION did not run');
    const off = offReason(s);
    if (off) {
      await writeArtifact(s, 'STATE_CLUSTERING', 'state_clustering.json', { mode: 'off', reason: off.reason, message: off.message });
      return skipped(off.reason, off.message);
    }
    const c = clusterFrames(inputOf(s), s.config.tiled.synthetic.clustering.cluster_count_range as [number, number]);
    setClusters(s, c);
    const rel = await writeArtifact(s, 'STATE_CLUSTERING', 'state_clustering.json', { mode: 'clustered', n_clusters: c.k, method: c.method, feature_names: c.features, standardization: 'z-score', state_vectors_standardized: c.standardized, frames: s.tiled.table.frames, cluster_labels: c.labels, cluster_sizes: c.sizes });
    return ok({ n_clusters: c.k, method: c.method, artifact: rel });
  },
});

export const syntheticFramesPhase: TiledPhase = tiledPhase('SYNTHETIC_FRAMES', ['synthetic'], {
  name: 'SYNTHETIC_FRAMES',
  optional: false,
  async run(ctx) {
    const s = ctx.state;
    const c = clustersOf(s);
    setClusters(s, null);
    if (!c || !s.tiled.table) {
      const off = offReason(s);
      const message = off ? off.message : 'STATE_CLUSTERING made no clusters';
      await writeArtifact(s, 'SYNTHETIC_FRAMES', 'synthetic_frames.json', { mode: 'off', num_synthetic: 0, reason: off?.reason ?? 'no_clusters', message });
      return skipped(off?.reason ?? 'no_clusters', message);
    }
    const weighting = s.config.tiled.synthetic.weighting;
    const r = clusterTable(inputOf(s), c, weighting);
    s.tiled.table = { ...s.tiled.table, table: r.table, reason: `${s.tiled.table.reason}; blended over ${c.k} synthetic frames (${weighting})` };
    const rel = await writeArtifact(s, 'SYNTHETIC_FRAMES', 'synthetic_frames.json', { mode: 'virtual', num_synthetic: c.k, weighting, frames_min: s.config.tiled.synthetic.frames_min, frames_max: s.config.tiled.synthetic.frames_max, cluster_sizes: c.sizes, cluster_quality: r.clusterQuality, cluster_weights: r.clusterWeights, note: 'synthetic frames are weight tables applied by STACKING; no image is written' });
    return ok({ num_synthetic: c.k, weighting, artifact: rel });
  },
});
