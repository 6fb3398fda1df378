// TILE_GRID, REGISTRATION, PREWARP and COMMON_OVERLAP.
// TILE_GRID: the seeing F is the median FWHM over the measured frames (3 px when none has one);
//   the grid follows tile-grid.ts; tile_grid.json.
// REGISTRATION: Raw Stack's registration (star triangles, RANSAC, least squares) onto the
//   reference; a frame that does not register is excluded, no quality filter runs.
//   global_registration.json holds every frame's frame → reference matrix.
// PREWARP: not needed: STACKING warps each band as it reads it, nothing is cached.
// COMMON_OVERLAP: each frame's footprint on the reference grid, from its matrix (analytic, no
//   pixels read): per tile the fraction of the tile the frame covers (5 × 5 samples), per
//   image the union and the intersection of the footprints (8-px samples). Pixels no frame covers
//   come out NaN from STACKING.

import { applyAffine, invertAffine, type Affine } from '../../../algorithms/affine.js';
import { ok, skipped, failed } from '../../phase.js';
import { registrationPhase } from '../../rawstack/phases/registration.js';
import { fromRawStack, writeArtifact, tiledPhase } from '../records.js';
import type { TiledPhase } from '../reasons.js';
import { tileCount, tileGrid, tileRect } from '../tile-grid.js';

function median(v: number[]): number | null {
  const s = v.filter((x) => Number.isFinite(x) && x > 0).sort((a, b) => a - b);
  if (s.length === 0) return null;
  const n = s.length;
  return n % 2 ? s[n >> 1]! : 0.5 * (s[n / 2 - 1]! + s[n / 2]!);
}

export const tileGridPhase: TiledPhase = tiledPhase('TILE_GRID', ['tile'], {
  name: 'TILE_GRID',
  optional: false,
  async run(ctx) {
    const s = ctx.state;
    if (s.width === null || s.height === null) return failed('input_error', 'SCAN_INPUT did not determine the image size');
    const t = s.config.tiled.tile;
    const seeing = median(s.frames.filter((f) => f.status === 'included' && f.metrics).map((f) => f.metrics!.fwhm));
    if (seeing === null) ctx.warn('seeing_unmeasured', 'no frame has a measured FWHM: the tile size assumes 3 px seeing');
    const g = tileGrid(s.width, s.height, seeing, t);
    s.tiled.grid = g;
    const n = tileCount(g);
    const body = {
      image_width: g.imageWidth,
      image_height: g.imageHeight,
      num_tiles: n,
      tiles_x: g.originsX.length,
      tiles_y: g.originsY.length,
      overlap_fraction: t.overlap_fraction,
      overlap_px: g.overlapPx,
      seeing_fwhm_median: g.seeingFwhm,
      seeing_measured: g.seeingMeasured,
      seeing_tile_size: g.tileSize,
      stride_px: g.stride,
      tile_config: t,
      tiles: Array.from({ length: n }, (_, i) => tileRect(g, i)),
    };
    const rel = await writeArtifact(s, 'TILE_GRID', 'tile_grid.json', body);
    return ok({ num_tiles: n, tile_size: g.tileSize, stride_px: g.stride, seeing_fwhm: g.seeingFwhm, artifact: rel });
  },
});

export const tiledRegistrationPhase: TiledPhase = tiledPhase('REGISTRATION', [], {
  name: 'REGISTRATION',
  optional: false,
  async run(ctx) {
    const outcome = await fromRawStack(registrationPhase).run(ctx);
    if (outcome.status !== 'ok') return outcome;
    const s = ctx.state;
    const frames = s.frames.filter((f) => f.registration);
    const warps = frames.map((f) => {
      const m = f.registration!.matrix;
      return {
        index: f.index,
        file: f.name,
        ok: f.registration!.ok,
        ...(m ? { a00: m[0][0], a01: m[0][1], tx: m[0][2], a10: m[1][0], a11: m[1][1], ty: m[1][2], shift_px: Math.hypot(m[0][2], m[1][2]) } : {}),
        matched: f.registration!.matched,
        residual_rms_px: f.registration!.residual_rms_px,
        ...(f.registration!.code ? { code: f.registration!.code } : {}),
      };
    });
    const rel = await writeArtifact(s, 'REGISTRATION', 'global_registration.json', { num_frames: frames.length, ref_frame: s.referenceIndex, direction: 'frame pixel -> reference pixel', warps });
    return ok({ ...(outcome.details ?? {}), artifact: rel });
  },
});

export const prewarpPhase: TiledPhase = tiledPhase('PREWARP', [], {
  name: 'PREWARP',
  optional: false,
  async run() {
    return skipped('not_needed', 'STACKING warps every band as it reads it: no prewarped frames are cached');
  },
});

/** Whether reference pixel (x, y) falls on frame pixels under `toFrame`. */
function covers(toFrame: Affine, x: number, y: number, w: number, h: number): boolean {
  const [u, v] = applyAffine(toFrame, x, y);
  return u >= -0.5 && v >= -0.5 && u <= w - 0.5 && v <= h - 0.5;
}

export const commonOverlapPhase: TiledPhase = tiledPhase('COMMON_OVERLAP', [], {
  name: 'COMMON_OVERLAP',
  optional: false,
  async run(ctx) {
    const s = ctx.state;
    const g = s.tiled.grid;
    if (!g || s.width === null || s.height === null) return failed('input_error', 'TILE_GRID did not run');
    const W = s.width;
    const H = s.height;
    const frames = s.frames.filter((f) => f.status === 'included' && f.registration?.ok && f.registration.matrix);
    if (frames.length === 0) return failed('no_frames', 'no registered frame');
    const n = tileCount(g);
    const toFrames = frames.map((f) => invertAffine(f.registration!.matrix!));
    s.tiled.coverage.clear();
    const covering = new Array(n).fill(0);
    const meanCover = new Array(n).fill(0);
    frames.forEach((f, k) => {
      const m = toFrames[k];
      const cov = new Float32Array(n);
      for (let t = 0; t < n; t++) {
        if (!m) continue;
        const r = tileRect(g, t);
        let c = 0;
        for (let j = 0; j < 5; j++) for (let i = 0; i < 5; i++) if (covers(m, r.x + ((i + 0.5) * r.width) / 5, r.y + ((j + 0.5) * r.height) / 5, W, H)) c++;
        cov[t] = c / 25;
        if (c > 0) covering[t]++;
        meanCover[t] += cov[t]! / frames.length;
      }
      s.tiled.coverage.set(f.index, cov);
    });
    let union = 0;
    let common = 0;
    let samples = 0;
    for (let y = 4; y < H; y += 8) {
      for (let x = 4; x < W; x += 8) {
        samples++;
        let k = 0;
        for (const m of toFrames) if (m && covers(m, x, y, W, H)) k++;
        if (k > 0) union++;
        if (k === frames.length) common++;
      }
    }
    const body = {
      frames: frames.length,
      image_width: W,
      image_height: H,
      union_fraction: union / samples,
      common_fraction: common / samples,
      no_data: 'NaN in the stack where no frame covers a pixel',
      tiles: Array.from({ length: n }, (_, t) => ({ index: t, ...tileRect(g, t), frames_covering: covering[t], coverage_mean: Number(meanCover[t].toFixed(4)) })),
    };
    const rel = await writeArtifact(s, 'COMMON_OVERLAP', 'common_overlap.json', body);
    return ok({ union_fraction: Number(body.union_fraction.toFixed(4)), common_fraction: Number(body.common_fraction.toFixed(4)), artifact: rel });
  },
});
