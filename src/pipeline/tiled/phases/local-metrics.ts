// LOCAL_METRICS: per frame and tile, what the local weight L is made of (weights.ts).
// - Stars: each frame's stored stars (GLOBAL_METRICS; unsaturated ones carry FWHM, eccentricity,
//   peak) mapped onto the reference grid by the frame's registration matrix; per tile the
//   count and the medians of FWHM, roundness √(1 − e²) and contrast peak/σ (σ the frame noise);
//   a tile holding fewer than tile.star_min_count stars borrows its neighbours' (poolStars).
//   The tile's FWHM is read off the frame's seeing map (fwhm-surface.ts; local_metrics.star_mode.
//   fwhm_map, default local: the robust surface over all the frame's stars plus the nearby stars'
//   residual median), not the median of its few stars, unless fwhm_map is tile; each frame's
//   surface is recorded in local_metrics.json.
// - Structure: the tile's rectangle mapped into the frame (bounding box of its corners, clipped),
//   cosmetic-corrected (stages/stacking/cosmetic.ts: hot pixels are not structure) and
//   measured by the tile_metrics kernel (WGSL where device-policy.ts places it, else
//   cpu/tile-metrics.ts; step 2 on a Bayer mosaic):
//   E/σ² (E the 90th percentile of the squared neighbour differences: robust to trails and
//   cosmic rays) and the tile's sky (mean of its samples at most 3σ above the frame's sky) less the
//   frame's sky as its background. On the frame workers (stages/frames/tasks.ts `tiles`,
//   runtime_limits.parallel_workers frames in memory at a time), or one frame at a time on the
//   main thread when the kernel runs on the device. A frame that cannot be read has no
//   structure measurement (the lowest L in STRUCTURE tiles) and a frame event says so.
// - Local normalization's binned planes: the same read bins each frame as STACKING's LN setup
//   would (rawstack/ln-premeasured.ts, as Raw Stack's QUALITY_ANALYSIS does), so STACKING does
//   not read every frame again. Held in memory only (capped there): a run resumed at a later
//   phase has none and STACKING reads, with the same planes.
// L is computed from these relative to the frame's own medians (relativeToFrame), since G
// already carries the frame's global quality; with the FWHM penalty law (star_mode.fwhm_penalty,
// the default) a tile's FWHM is relative to the frame's sharp part instead (the
// fwhm_reference_quantile of its tile FWHMs), so a frame soft over much of the field still
// stands out where it is soft.
// A tile the frame covers less than half of (COMMON_OVERLAP) has no measurement for it (the
// lowest L there). With fewer than local_metrics.min_frames frames, or stacking.weight_mode not
// `local`, L is not computed: the stack degrades to global weights (or uniform), with a warning
// and the mode recorded in local_metrics.json.

import { applyAffine, invertAffine } from '../../../algorithms/affine.js';
import { TILE_METRICS_FIELDS, tileMetrics, type TileMetricsParams } from '../../../cpu/tile-metrics.js';
import type { GpuContext } from '../../../gpu/context.js';
import { GpuError } from '../../../gpu/errors.js';
import { tileMetricsGpu } from '../../../gpu/kernels/tile-metrics.js';
import { gpuFor } from '../../device-policy.js';
import { failed, ok } from '../../phase.js';
import { pixelSource } from '../../rawstack/state.js';
import { tileMetricsFrame, unpackStars, type LnBinSpec, type TileMetricsTask, type TileMetricsTaskResult } from '../../stages/frames/tasks.js';
import { FrameWorkers, mapFrames } from '../../stages/frames/workers.js';
import { dropLnPlanes, lnWanted, rememberLnPlanes, wantedLnBinSpec } from '../../rawstack/ln-premeasured.js';
import type { FrameRecord } from '../../rawstack/state.js';
import { writeArtifact, tiledPhase, round5 } from '../records.js';
import type { TiledState } from '../state.js';
import type { TiledPhase } from '../reasons.js';
import { tileCount, tileRect, type TileGrid } from '../tile-grid.js';
import { LOCAL_Z_FLOOR, localWeights, SURFACE_Z_FLOOR, Z_FLOOR, type TileMeasure } from '../weights.js';
import { evalFwhmSurface, fitFwhmSurface, localFwhmAt, type FwhmSurface } from '../fwhm-surface.js';
import { finiteMedian } from '../../../algorithms/robust-stats.js';

/** Outlier threshold (σ of the frame noise) of the cosmetic pass before the structure measure (hot pixels are not structure). */
const COSMETIC_SIGMA = 5;

/** The tile_metrics kernel on the device when placed there (a plane over one binding: TypeScript), else TypeScript. */
async function measureTiles(ctx: GpuContext | null, plane: Float32Array, p: TileMetricsParams): Promise<Float64Array> {
  if (ctx) {
    try {
      return await tileMetricsGpu(ctx, plane, p);
    } catch (e) {
      if (!(e instanceof GpuError && e.code === 'BINDING_TOO_LARGE')) throw e;
    }
  }
  return tileMetrics(plane, p);
}

/** The q-quantile of the finite values (linear between order statistics); NaN when none. */
function tileQuantile(v: readonly number[], q: number): number {
  const s = v.filter(Number.isFinite).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const at = q * (s.length - 1);
  const i = Math.floor(at);
  return i + 1 < s.length ? s[i]! + (at - i) * (s[i + 1]! - s[i]!) : s[i]!;
}

/**
 * A frame's tile measurements relative to the frame's own medians (FWHM, roundness and contrast
 * over all its measured stars, E/σ² over its tiles): G already carries the frame's global
 * seeing, transparency and noise, so L carries only how this region differs from the frame as a
 * whole, and W = G·L counts each once (a frame soft on the left and sharp on the right is not
 * penalised on the right for its global FWHM). Star counts and backgrounds stay as measured.
 */
function relativeToFrame(row: TileMeasure[], stars: readonly PooledStar[], surface: FwhmSurface | null, fwhmQuantile: number | null): TileMeasure[] {
  const all = (k: 'fwhm' | 'round' | 'contrast') => finiteMedian(stars.map((st) => st[k]));
  // With a surface, FWHM relative to the surface's median over the tiles: the same scale as its tile values.
  // With the penalty law, relative to the frame's sharp part (a low quantile over its tiles): a frame
  // soft over much of the field has a soft median, against which its soft tiles would not stand out.
  const f = fwhmQuantile !== null ? tileQuantile(row.map((m) => m.fwhm), fwhmQuantile) : surface && surface.model !== 'none' ? finiteMedian(row.map((m) => m.fwhm)) : all('fwhm');
  const r = all('round');
  const c = all('contrast');
  const e = finiteMedian(row.map((m) => m.structure));
  return row.map((m) => ({ ...m, fwhm: m.fwhm / f, roundness: m.roundness / r, contrast: m.contrast / c, structure: m.structure / e }));
}

interface PooledStar {
  x: number;
  y: number;
  fwhm: number;
  round: number;
  contrast: number;
}

/**
 * Per tile, the stars its star statistics are made of: the frame's stars inside the tile, or,
 * where the tile holds fewer than `k`, the k stars nearest to its centre within one tile size of
 * it (on the reference grid; fewer when there are not that many). Seeing varies smoothly on the
 * scale of the weight field's window (a tile), so borrowing neighbours' stars measures the same
 * seeing, with a median over k stars instead of over the two or three a small tile holds in a
 * sparse field; without it such fields had only STRUCTURE tiles, whose E/σ² (then a mean) moved ≤ 1.2× with
 * seeing and whose L added noise for almost no sharpness (bench/RESULTS.md, tiled workflow).
 */
export function poolStars(stars: readonly PooledStar[], g: TileGrid, k: number): { fwhm: number[]; round: number[]; contrast: number[] }[] {
  const n = tileCount(g);
  const nx = g.originsX.length;
  const out = Array.from({ length: n }, () => ({ fwhm: [] as number[], round: [] as number[], contrast: [] as number[] }));
  const radius = Math.max(g.sizeX, g.sizeY);
  // Stars bucketed in cells of `radius`: a tile and its search circle touch at most 3 × 3 cells
  // around the tile's centre, so each tile looks at the stars near it, not at all of them.
  const cell = (v: number) => Math.floor(v / radius);
  const buckets = new Map<string, PooledStar[]>();
  for (const st of stars) {
    if (!(Number.isFinite(st.x) && Number.isFinite(st.y))) continue;
    const key = `${cell(st.x)},${cell(st.y)}`;
    const b = buckets.get(key);
    if (b) b.push(st);
    else buckets.set(key, [st]);
  }
  for (let t = 0; t < n; t++) {
    const ox = g.originsX[t % nx]!;
    const oy = g.originsY[Math.floor(t / nx)]!;
    const cx = ox + g.sizeX / 2;
    const cy = oy + g.sizeY / 2;
    const near: PooledStar[] = [];
    for (let j = cell(cy) - 1; j <= cell(cy) + 1; j++) for (let i = cell(cx) - 1; i <= cell(cx) + 1; i++) near.push(...(buckets.get(`${i},${j}`) ?? []));
    let chosen = near.filter((st) => st.x >= ox && st.x < ox + g.sizeX && st.y >= oy && st.y < oy + g.sizeY);
    if (chosen.length < k) {
      chosen = near
        .map((st) => ({ st, d: Math.hypot(st.x - cx, st.y - cy) }))
        .filter((e) => e.d <= radius)
        .sort((a, b) => a.d - b.d)
        .slice(0, k)
        .map((e) => e.st);
    }
    const b = out[t]!;
    for (const st of chosen) {
      b.fwhm.push(st.fwhm);
      b.round.push(st.round);
      b.contrast.push(st.contrast);
    }
  }
  return out;
}

/** What LOCAL_METRICS knows of a frame before reading its pixels: its stars per tile, and the tile task. */
function framePlan(f: FrameRecord, g: TileGrid, W: number, H: number, osc: boolean, starMinCount: number, fwhmMap: 'surface' | 'plane' | 'local' | 'tile') {
  const n = tileCount(g);
  const toRef = f.registration!.matrix!;
  const toFrame = invertAffine(toRef)!;
  const noise = f.metrics?.background_rms ?? NaN;
  const sky = f.metrics?.background_median ?? NaN;
  // Stars on the reference grid, into every tile that holds them.
  const stars: PooledStar[] = [];
  for (const st of f.stars ? unpackStars(f.stars.xyf, f.stars.shapes) : []) {
    if (!(st.fwhm !== undefined && Number.isFinite(st.fwhm))) continue;
    const [x, y] = applyAffine(toRef, st.x, st.y);
    stars.push({ x, y, fwhm: st.fwhm, round: Math.sqrt(1 - Math.min(1, (st.eccentricity ?? 0) ** 2)), contrast: noise > 0 ? (st.peak ?? NaN) / noise : NaN });
  }
  const starsIn = poolStars(stars, g, starMinCount);
  // The frame's seeing map over all its stars, read at the tile centres (fwhm-surface.ts).
  const surface: FwhmSurface | null = fwhmMap === 'tile' ? null : fitFwhmSurface(stars, g.imageWidth, g.imageHeight, fwhmMap === 'plane' ? 'plane' : 'quadratic');
  const centres = Array.from({ length: n }, (_, t) => {
    const r = tileRect(g, t);
    return [r.x + r.width / 2, r.y + r.height / 2] as const;
  });
  const tileFwhm = !surface ? centres.map(() => NaN) : fwhmMap === 'local' ? localFwhmAt(surface, stars, centres, Math.max(g.sizeX, g.sizeY)) : centres.map(([x, y]) => evalFwhmSurface(surface, x, y));
  // Structure: tile rectangles in frame pixels (bounding box of the mapped corners, clipped).
  const rects = new Int32Array(4 * n);
  for (let t = 0; t < n; t++) {
    const r = tileRect(g, t);
    const pts = [applyAffine(toFrame, r.x, r.y), applyAffine(toFrame, r.x + r.width, r.y), applyAffine(toFrame, r.x, r.y + r.height), applyAffine(toFrame, r.x + r.width, r.y + r.height)];
    let x0 = Math.max(0, Math.floor(Math.min(...pts.map((p) => p[0]))));
    let y0 = Math.max(0, Math.floor(Math.min(...pts.map((p) => p[1]))));
    const x1 = Math.min(W, Math.ceil(Math.max(...pts.map((p) => p[0]))));
    const y1 = Math.min(H, Math.ceil(Math.max(...pts.map((p) => p[1]))));
    if (osc) {
      x0 &= ~1;
      y0 &= ~1;
    }
    rects.set([x0, y0, Math.max(0, x1 - x0), Math.max(0, y1 - y0)], 4 * t);
  }
  // Sky samples: at most 3σ above the frame's sky (stars excluded); no cut without a measured sky.
  const bgCut = Number.isFinite(sky) && noise > 0 ? sky + 3 * noise : Number.MAX_VALUE;
  const task = (file: string): TileMetricsTask => ({ kind: 'tiles', file, width: W, height: H, step: osc ? 2 : 1, rects, bgCut, unit: noise * noise, cosmetic: noise > 0 ? { sigma: COSMETIC_SIGMA, noise } : null });
  return { stars, starsIn, surface, tileFwhm, noise, sky, task };
}

function surfaceRecord(s: FwhmSurface) {
  return { model: s.model, coefficients: s.coefficients.map(round5), center: s.center, scale: s.scale, stars: s.stars, inliers: s.inliers, residual_sigma: round5(s.residual_sigma), range: s.range.map(round5) };
}

/**
 * LOCAL_METRICS is the last reader of the frames' star lists (GLOBAL_METRICS measures them,
 * REGISTRATION matches them): they go once it has run, so the run does not hold a thousand
 * frames' lists to its end and the checkpoints from here on (written from the state) leave them
 * out: most of a checkpoint's bytes and of its encoding time on the main thread.
 */
function releaseStarLists(s: TiledState): void {
  for (const f of s.frames) f.stars = null;
}

export const localMetricsPhase: TiledPhase = tiledPhase('LOCAL_METRICS', ['local_metrics', 'tile.star_min_count', 'stacking.weight_mode'], {
  name: 'LOCAL_METRICS',
  optional: false,
  async run(ctx) {
    const s = ctx.state;
    const g = s.tiled.grid;
    if (!g || s.width === null || s.height === null) return failed('input_error', 'TILE_GRID did not run');
    const cfg = s.config.tiled;
    const frames = s.frames.filter((f) => f.status === 'included' && f.registration?.ok && f.registration.matrix && s.tiled.coverage.has(f.index));
    if (frames.length === 0) return failed('no_frames', 'no registered frame');
    const n = tileCount(g);
    const mode = cfg.stacking.weight_mode;
    const minFrames = cfg.local_metrics.min_frames;
    if (mode !== 'local' || frames.length < minFrames) {
      const reason = mode !== 'local' ? `stacking.weight_mode is ${mode}` : `${frames.length} frames, below local_metrics.min_frames = ${minFrames}`;
      if (mode === 'local') ctx.warn('local_weights_off', `local weights off: ${reason}; the stack uses global weights only`);
      s.tiled.local = { frames: frames.map((f) => f.index), measures: [], l: null, types: [] };
      const rel = await writeArtifact(s, 'LOCAL_METRICS', 'local_metrics.json', { mode: mode === 'uniform' ? 'uniform' : 'global', reason, num_frames: frames.length, num_tiles: n });
      releaseStarLists(s);
      return ok({ mode: mode === 'uniform' ? 'uniform' : 'global', weight_reason: reason, artifact: rel });
    }
    const osc = s.colorMode === 'OSC';
    const tmCtx = gpuFor(s.gpu, 'tile_metrics');
    const measures: TileMeasure[][] = [];
    const relative: TileMeasure[][] = [];
    const W = s.width;
    const H = s.height;
    let done = 0;
    let unreadable = 0;
    // Per frame: its stars per tile and its tile rectangles (main thread, no pixels), then the
    // pixels' tile sums: on the device where placed (one frame at a time), else on the frame
    // workers (runtime_limits.parallel_workers frames at a time, results in frame order).
    const fwhmMap = cfg.local_metrics.star_mode.fwhm_map;
    const plans = frames.map((f) => framePlan(f, g, W, H, osc, cfg.tile.star_min_count, fwhmMap));
    // LN planes for STACKING from this read (see the head comment); no spec: STACKING reads.
    dropLnPlanes(s);
    const wanted = lnWanted(s);
    const lnSpecs: (LnBinSpec | undefined)[] = [];
    const workers = new FrameWorkers(tmCtx ? 0 : Math.min(s.config.runtime_limits.parallel_workers, frames.length));
    try {
      await mapFrames(
        frames,
        tmCtx ? 1 : Math.max(1, workers.size),
        ctx.signal,
        async (f, i): Promise<TileMetricsTaskResult> => {
          const lnBin = (lnSpecs[i] = await wantedLnBinSpec(s, f, wanted, f.index === s.referenceIndex));
          const task = { ...plans[i]!.task(pixelSource(f)), ...(lnBin ? { lnBin } : {}) };
          if (!tmCtx) return (await workers.run(task)) as TileMetricsTaskResult;
          return tileMetricsFrame(task, (data, p) => measureTiles(tmCtx, data, p));
        },
        (f, r, i) => {
          const { stars, starsIn, surface, tileFwhm, noise, sky } = plans[i]!;
          const cov = s.tiled.coverage.get(f.index)!;
          const lnBin = lnSpecs[i];
          if (r.ok && r.lnPlanes && lnBin) rememberLnPlanes(s, f, lnBin, r.lnPlanes);
          if (!r.ok) {
            // No pixels, no structure measurement: the lowest L in its STRUCTURE tiles.
            unreadable++;
            ctx.frame(f.index, f.name, 'unmeasured', r.fitsCode, { detail: r.detail });
          }
          const tm = r.ok ? r.metrics : null;
          const row: TileMeasure[] = [];
          for (let t = 0; t < n; t++) {
            const b = starsIn[t]!;
            const usable = cov[t]! >= 0.5;
            row.push({
              stars: usable ? b.fwhm.length : 0,
              // A tile's seeing: the frame's surface there (when one was fitted), else its stars' median; none without stars near it.
              fwhm: usable && b.fwhm.length > 0 ? (surface ? tileFwhm[t]! : finiteMedian(b.fwhm)) : NaN,
              roundness: usable ? finiteMedian(b.round) : NaN,
              contrast: usable ? finiteMedian(b.contrast) : NaN,
              structure: usable && tm && noise > 0 ? tm[TILE_METRICS_FIELDS * t + 2]! / (noise * noise) : NaN,
              // The tile's sky relative to the frame's: what a cloud or a gradient adds here, not the sky level.
              background: usable && tm ? tm[TILE_METRICS_FIELDS * t + 4]! - sky : NaN,
            });
          }
          measures.push(row);
          relative.push(relativeToFrame(row, stars, surface, cfg.local_metrics.star_mode.fwhm_penalty > 0 ? cfg.local_metrics.star_mode.fwhm_reference_quantile : null));
          ctx.progress(++done, frames.length, 'frames');
        },
      );
    } finally {
      await workers.close();
    }
    const lm = cfg.local_metrics;
    const fwhmFloor = lm.star_mode.fwhm_z_floor ?? (fwhmMap === 'tile' ? Z_FLOOR : fwhmMap === 'local' ? LOCAL_Z_FLOOR : SURFACE_Z_FLOOR);
    const lw = localWeights(relative, n, { star_min_count: cfg.tile.star_min_count, star: lm.star_mode.weights, fwhmFloor, fwhmPenalty: lm.star_mode.fwhm_penalty, fwhmDeadband: lm.star_mode.fwhm_deadband, structure: lm.structure_mode, clamp: lm.clamp as [number, number] }, frames.map((f) => f.metrics?.background_rms ?? NaN));
    s.tiled.local = { frames: frames.map((f) => f.index), measures, l: lw.l, types: lw.types };
    const starTiles = lw.types.filter((t) => t === 'STAR').length;
    const body = {
      mode: 'local',
      num_frames: frames.length,
      num_tiles: n,
      tile_types: lw.types,
      star_tiles: starTiles,
      structure_tiles: n - starTiles,
      frames_unmeasured: unreadable,
      fwhm_map: fwhmMap,
      fwhm_z_floor: fwhmFloor,
      fwhm_penalty: lm.star_mode.fwhm_penalty,
      fwhm_reference_quantile: lm.star_mode.fwhm_penalty > 0 ? lm.star_mode.fwhm_reference_quantile : undefined,
      fwhm_deadband: lm.star_mode.fwhm_penalty > 0 ? lm.star_mode.fwhm_deadband : undefined,
      // Per frame (in \`frames\` order): the seeing surface on the reference grid, FWHM(u, v) with
      // u = (x − center[0]) / scale[0], v likewise; coefficients of 1, u, v, u², uv, v².
      fwhm_surfaces: fwhmMap === 'tile' ? undefined : plans.map((p) => surfaceRecord(p.surface!)),
      frames: frames.map((f) => ({ index: f.index, file: f.name })),
      // frames × tiles, row per frame.
      tile_metrics: measures.map((row, fi) =>
        row.map((m, t) => ({ star_count: m.stars, fwhm: round5(m.fwhm), roundness: round5(m.roundness), contrast: round5(m.contrast), structure: round5(m.structure), background: round5(m.background), quality_score: round5(lw.q[fi * n + t]!), local_weight: round5(lw.l[fi * n + t]!) })),
      ),
    };
    const rel = await writeArtifact(s, 'LOCAL_METRICS', 'local_metrics.json', body);
    releaseStarLists(s);
    return ok({ mode: 'local', star_tiles: starTiles, structure_tiles: n - starTiles, artifact: rel });
  },
});
