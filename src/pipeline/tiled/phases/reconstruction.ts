// TILE_RECONSTRUCTION, STATE_CLUSTERING and SYNTHETIC_FRAMES: the weight tables the stack uses.
// TILE_RECONSTRUCTION: W_ft = G_f · L_ft (mode local), G_f (global: few frames or
//   weight_mode global) or 1 (uniform); per tile D_t = Σ_f W_ft, the normalised table W/D and
//   N_eff = D²/ΣW² (weights.ts tileTable). No pixels are read: STACKING applies the table as a
//   smooth per-pixel weight field in one band pass (docs/tiled-workflow.md).
// STATE_CLUSTERING / SYNTHETIC_FRAMES (clustering.ts): below assumptions.frames_reduced_threshold
//   frames (reduced mode), or with synthetic.enabled false, both end skipped with the reason and
//   state_clustering.json / synthetic_frames.json say which mode ran and why; otherwise the
//   frames are clustered and the table is replaced by the per-cluster tables' blend.

import { ok, failed } from '../../phase.js';
import { writeArtifact, tiledPhase, round5 } from '../records.js';
import type { TiledPhase } from '../reasons.js';
import type { WeightMode } from '../state.js';
import { tileCount } from '../tile-grid.js';
import { tileTable } from '../weights.js';

export const tileReconstructionPhase: TiledPhase = tiledPhase('TILE_RECONSTRUCTION', ['stacking.weight_mode'], {
  name: 'TILE_RECONSTRUCTION',
  optional: false,
  async run(ctx) {
    const s = ctx.state;
    const g = s.tiled.grid;
    const local = s.tiled.local;
    if (!g || !local) return failed('input_error', 'LOCAL_METRICS did not run');
    const n = tileCount(g);
    const configured = s.config.tiled.stacking.weight_mode;
    const mode: WeightMode = configured === 'uniform' ? 'uniform' : local.l ? 'local' : 'global';
    const reason = mode === 'local' ? 'W = G·L per tile' : mode === 'global' ? (configured === 'global' ? 'stacking.weight_mode is global' : `fewer than local_metrics.min_frames (${s.config.tiled.local_metrics.min_frames}) frames: global weights only`) : 'stacking.weight_mode is uniform';
    const gmin = Math.min(...[...s.tiled.global.values()].map((v) => v.g));
    const gs = local.frames.map((i) => (mode === 'uniform' ? 1 : (s.tiled.global.get(i)?.g ?? gmin)));
    const tt = tileTable(gs, mode === 'local' ? local.l : null, n);
    s.tiled.table = { frames: local.frames, table: tt.table, mode, reason };
    const nEff = tt.nEff;
    const body = {
      mode,
      reason,
      num_frames: local.frames.length,
      num_tiles: n,
      frames: local.frames,
      tiles: Array.from({ length: n }, (_, t) => ({ index: t, type: local.types[t] ?? null, weight_sum: round5(tt.weightSum[t]!), n_eff: round5(nEff[t]!) })),
      n_eff: { min: round5(Math.min(...nEff)), median: round5([...nEff].sort((a, b) => a - b)[nEff.length >> 1]!), max: round5(Math.max(...nEff)) },
      // frames × tiles, each tile's column summing to 1 (what STACKING blends per pixel).
      weight_table: Array.from({ length: local.frames.length }, (_, f) => Array.from(tt.table.subarray(f * n, (f + 1) * n), (v) => round5(v))),
    };
    const rel = await writeArtifact(s, 'TILE_RECONSTRUCTION', 'tile_reconstruction.json', body);
    return ok({ mode, weight_reason: reason, n_eff_min: body.n_eff.min, n_eff_max: body.n_eff.max, artifact: rel });
  },
});
