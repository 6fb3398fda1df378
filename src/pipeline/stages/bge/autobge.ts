// AutoBGE sample placement (bge.method autobge; the predecessor's: "sample points placed
// automatically by gradient descent toward dim areas", then a two-stage polynomial + RBF model).
//
//   1. Descent map: the luminance (R+G+B)/3 with the object mask applied, averaged in blocks of
//      `downsample_scale` px, minus the background trend, box-smoothed over about one tile. The
//      trend is a stiff thin-plate spline (TREND_LAMBDA) through coarse cells one sample spacing
//      wide, refitted with cells more than 2σ above it left out. Removing it matters: on the raw
//      map every sample would slide toward the dim side of the frame's gradient and the bright
//      edge would lose its samples; on the detrended map local excess (nebulosity, a galaxy halo,
//      glow around bright stars) is what pushes samples.
//   2. Start points on a regular grid inside `border_margin` (spacing: the tile stride, widened
//      so at most MAX_AUTO_POINTS samples are placed; or from `num_sample_points`). Each sample
//      takes steepest-descent steps of one block on the smoothed map (a step must lower it by
//      more than the map's noise, so flat sky does not make samples wander), at most
//      `gradient_descent_max_iters` steps and never farther than MAX_MOVE_FRACTION of the spacing
//      from its start, so samples cannot pile up and the frame stays covered. Starts on the grid's
//      outer ring slide along their edge only (they pin the surface at the border). A start whose
//      patch is mostly masked (a star) first jumps to the nearest usable block within that reach.
//   3. At the final position the sample is the tile-sized patch estimate shared with classic
//      (stages/bge/model.ts patchSample). Screening, each rejection with its reason: `masked` (no
//      usable patch within reach), `duplicate` (ended within a quarter spacing of a dimmer
//      sample), and `bright_structure`: stage one of the model, a stiff spline (STAGE1_LAMBDA,
//      polynomial part of bge.poly_order) through the luminance samples, refitted without those
//      more than `bright_reject_sigma` robust sigmas above it (sigma never below
//      BRIGHT_FLOOR_NOISE of the luminance pixel noise) until nothing changes. Samples within one
//      spacing of the frame's edge are never rejected: at the edge a rise toward the border (a
//      light dome) cannot be told from nebulosity, and dropping them would leave the surface
//      extrapolating where the gradient is steepest.
//   4. Coverage guard: the frame is split into regions about COVERAGE_REGION_FRACTION of the short
//      side; a region left without samples gets back its dimmest bright-rejected sample
//      (`restored_for_coverage`), so the clip never leaves a hole the surface would bridge blindly.
//
// Stage two, the rbf surface per channel through the accepted samples, is bge.ts's (fitChannel).
// Deterministic: no random numbers (the grid replaces the predecessor's seeded random starts).

import { fitSurface, MIN_TILE_FREE_FRACTION, patchSample, robustSigma, selectQuantile, type Surface, type TileGeometry, type TileSample } from './model.js';

/** Most placed samples in auto mode (each rbf fit is a dense (n + m)³ solve, several per channel). */
export const MAX_AUTO_POINTS = 400;
/** Clip floor of the stage-one residuals, as a fraction of the luminance pixel noise. */
export const BRIGHT_FLOOR_NOISE = 0.1;
const COVERAGE_REGION_FRACTION = 0.4;
const LATTICE_STEP = 4;
/** Smoothing of the descent map's trend spline (coordinates over the long side): stiffer than a halo, looser than a quadratic. */
export const TREND_LAMBDA = 0.1;
/** Smoothing of the stage-one spline: stiff, so a nebula spanning several samples stands out of it. */
export const STAGE1_LAMBDA = 1;
/** Farthest a sample moves from its start, as a fraction of the sample spacing. */
export const MAX_MOVE_FRACTION = 1 / 3;
/** A block is usable as a sample position when at least this fraction of its patch is unmasked. */
const USABLE_FREE_FRACTION = Math.max(0.4, MIN_TILE_FREE_FRACTION);

export interface AutoBgeParams {
  num_sample_points: number;
  gradient_descent_max_iters: number;
  downsample_scale: number;
  border_margin: number;
  bright_reject_sigma: number;
}

export type AutoBgeRejection = 'masked' | 'duplicate' | 'bright_structure';

export interface PlacedSample extends TileSample {
  start_x: number;
  start_y: number;
  /** Distance from the start point to the end point of the descent, px. */
  moved_px: number;
  steps: number;
  status: 'accepted' | 'restored_for_coverage' | AutoBgeRejection;
  /** Stage-one luminance residual (bright_structure test); null when not measured. */
  residual: number | null;
}

export interface Placement {
  accepted: PlacedSample[];
  all: PlacedSample[];
  spacing_px: number;
  /** Half-width of the box a sample may move in (per axis), px. */
  reach_px: number;
  smoothing_px: number;
  starts: number;
  clip_sigma: number;
  stage1_residual_sigma: number;
}

/** Block means of the unmasked luminance and the unmasked fraction of each block. */
function blockMap(lum: Float32Array, mask: Uint8Array, width: number, height: number, d: number) {
  const bw = Math.ceil(width / d);
  const bh = Math.ceil(height / d);
  const sum = new Float64Array(bw * bh);
  const cnt = new Float64Array(bw * bh);
  const area = new Float64Array(bw * bh);
  for (let y = 0; y < height; y++) {
    const row = Math.floor(y / d) * bw;
    for (let x = 0; x < width; x++) {
      const b = row + Math.floor(x / d);
      area[b] = area[b]! + 1;
      const i = y * width + x;
      if (mask[i] === 0) {
        sum[b] = sum[b]! + lum[i]!;
        cnt[b] = cnt[b]! + 1;
      }
    }
  }
  const mean = new Float64Array(bw * bh);
  const free = new Float64Array(bw * bh);
  for (let b = 0; b < bw * bh; b++) {
    free[b] = cnt[b]! / Math.max(1, area[b]!);
    mean[b] = cnt[b]! > 0 ? sum[b]! / cnt[b]! : NaN;
  }
  return { bw, bh, mean, free, cnt };
}

/** Separable box mean of radius r over the finite values, weighted (NaN where nothing is finite). */
function boxMean(v: Float64Array, wgt: Float64Array, bw: number, bh: number, r: number): Float64Array {
  const num = new Float64Array(bw * bh);
  const den = new Float64Array(bw * bh);
  for (let i = 0; i < v.length; i++) {
    const ok = Number.isFinite(v[i]!) && wgt[i]! > 0;
    num[i] = ok ? v[i]! * wgt[i]! : 0;
    den[i] = ok ? wgt[i]! : 0;
  }
  const pass = (a: Float64Array, len: number, stride: number, lines: number, lineStride: number) => {
    const tmp = new Float64Array(len);
    for (let l = 0; l < lines; l++) {
      const base = l * lineStride;
      let s = 0;
      for (let k = 0; k < Math.min(len, r); k++) s += a[base + k * stride]!;
      for (let k = 0; k < len; k++) {
        if (k + r < len) s += a[base + (k + r) * stride]!;
        if (k - r - 1 >= 0) s -= a[base + (k - r - 1) * stride]!;
        tmp[k] = s;
      }
      for (let k = 0; k < len; k++) a[base + k * stride] = tmp[k]!;
    }
  };
  for (const a of [num, den]) {
    pass(a, bw, 1, bh, bw);
    pass(a, bh, bw, bw, 1);
  }
  const out = new Float64Array(bw * bh);
  for (let i = 0; i < out.length; i++) out[i] = den[i]! > 0 ? num[i]! / den[i]! : NaN;
  return out;
}

/**
 * Background trend of the block means: a thin-plate spline (smoothing `lambda`, polynomial part of
 * `order`) through coarse cells of `cell` blocks (median of their block means), refitted with the
 * cells more than 2 robust sigmas above it (or 4 below) left out until nothing changes. Flexible
 * enough for a light dome a quadratic misses, while a halo or nebula spanning cells is clipped
 * out as an excess. Returns the trend as a function of pixel position.
 */
function backgroundTrend(mean: Float64Array, cnt: Float64Array, bw: number, bh: number, d: number, cell: number, order: number, lambda: number, floor: number): Surface | null {
  const cw = Math.ceil(bw / cell);
  const ch = Math.ceil(bh / cell);
  const pts: { x: number; y: number; z: number }[] = [];
  const buf = new Float64Array(cell * cell);
  const scale = Math.max(bw, bh) * d;
  for (let cy = 0; cy < ch; cy++) {
    for (let cx = 0; cx < cw; cx++) {
      let k = 0;
      let sx = 0;
      let sy = 0;
      for (let by = cy * cell; by < Math.min(bh, (cy + 1) * cell); by++) {
        for (let bx = cx * cell; bx < Math.min(bw, (cx + 1) * cell); bx++) {
          const b = by * bw + bx;
          if (!Number.isFinite(mean[b]!) || cnt[b]! < (d * d) / 2) continue;
          buf[k++] = mean[b]!;
          sx += bx;
          sy += by;
        }
      }
      if (k < (cell * cell) / 4) continue;
      pts.push({ x: ((sx / k + 0.5) * d - 0.5) / scale, y: ((sy / k + 0.5) * d - 0.5) / scale, z: selectQuantile(buf, k, 0.5) });
    }
  }
  let w = pts.map(() => 1);
  let surface: Surface | null = null;
  for (let round = 0; round < 10; round++) {
    if (w.reduce((a, v) => a + v, 0) < 12) break;
    const s = fitSurface('rbf', pts, w, order, lambda);
    if (!s) break;
    surface = s;
    const r = Float64Array.from(pts, (p) => p.z - s.at(p.x, p.y));
    const { med, sigma } = robustSigma(r.filter((_, i) => w[i]! > 0));
    const sg = Math.max(sigma, floor);
    const next = Array.from(r, (v) => (v - med <= 2 * sg && v - med >= -4 * sg ? 1 : 0));
    if (next.every((v, i) => v === w[i])) break;
    w = next;
  }
  const fin = surface;
  return fin ? { at: (x, y) => fin.at(x / scale, y / scale) } : null;
}

/** The surface at every block centre: evaluated every LATTICE_STEP blocks and interpolated bilinearly. */
function blockLattice(surface: Surface | null, bw: number, bh: number, d: number): Float64Array {
  const out = new Float64Array(bw * bh);
  if (!surface) return out;
  const k = LATTICE_STEP;
  const gw = Math.ceil((bw - 1) / k) + 1;
  const gh = Math.ceil((bh - 1) / k) + 1;
  const centre = (b: number) => b * d + (d - 1) / 2;
  const g = new Float64Array(gw * gh);
  for (let j = 0; j < gh; j++) for (let i = 0; i < gw; i++) g[j * gw + i] = surface.at(centre(i * k), centre(j * k));
  for (let by = 0; by < bh; by++) {
    const j = Math.min(gh - 2, Math.floor(by / k));
    const fy = gh > 1 ? by / k - j : 0;
    for (let bx = 0; bx < bw; bx++) {
      const i = Math.min(gw - 2, Math.floor(bx / k));
      const fx = gw > 1 ? bx / k - i : 0;
      const i0 = Math.max(0, i);
      const j0 = Math.max(0, j);
      const i1 = Math.min(gw - 1, i0 + 1);
      const j1 = Math.min(gh - 1, j0 + 1);
      const a = g[j0 * gw + i0]! * (1 - fx) + g[j0 * gw + i1]! * fx;
      const c = g[j1 * gw + i0]! * (1 - fx) + g[j1 * gw + i1]! * fx;
      out[by * bw + bx] = a * (1 - fy) + c * fy;
    }
  }
  return out;
}

/** Evenly spaced positions from lo to hi (inclusive) about `spacing` apart. */
function axis(lo: number, hi: number, spacing: number): number[] {
  const n = Math.max(2, Math.round((hi - lo) / spacing) + 1);
  return Array.from({ length: n }, (_, i) => lo + ((hi - lo) * i) / (n - 1));
}

/**
 * Places, measures and screens the AutoBGE samples. `noise` is the luminance pixel noise (robust
 * sigma from objectMask); `order` the stage-one polynomial order (bge.poly_order).
 */
export function placeSamples(planes: Float32Array[], mask: Uint8Array, width: number, height: number, geo: TileGeometry, quantile: number, noise: number, order: number, p: AutoBgeParams): Placement {
  const n = width * height;
  const lum = new Float32Array(n);
  for (const pl of planes) for (let i = 0; i < n; i++) lum[i] = lum[i]! + pl[i]! / planes.length;
  const d = Math.max(1, Math.min(p.downsample_scale, Math.floor(Math.min(width, height) / 8)));
  const T = Math.min(geo.tile_px, width, height);
  const { bw, bh, mean, free, cnt } = blockMap(lum, mask, width, height, d);

  const m = Math.min(Math.max(0, p.border_margin), Math.floor(Math.min(width, height) / 4));
  const a = Math.max(1, width - 1 - 2 * m);
  const b = Math.max(1, height - 1 - 2 * m);
  // Spacing s whose inclusive grid (a/s + 1)(b/s + 1) holds `count` points.
  const spacingFor = (count: number) => {
    const c = Math.max(4, count);
    return (2 * a * b) / (Math.sqrt((a + b) ** 2 + 4 * a * b * (c - 1)) - (a + b));
  };
  const cap = p.num_sample_points > 0 ? p.num_sample_points : MAX_AUTO_POINTS;
  let spacing = Math.max(2 * d, p.num_sample_points > 0 ? spacingFor(p.num_sample_points) : Math.max(geo.stride_px, spacingFor(MAX_AUTO_POINTS)));
  while (axis(m, width - 1 - m, spacing).length * axis(m, height - 1 - m, spacing).length > cap) spacing *= 1.02;
  const xs = axis(m, width - 1 - m, spacing);
  const ys = axis(m, height - 1 - m, spacing);
  const reach = Math.max(1, Math.floor((spacing * MAX_MOVE_FRACTION) / d));

  // Descent map: block means minus the clipped background trend (cells one sample spacing wide), smoothed over a tile.
  const cell = Math.max(2, Math.round(spacing / d));
  // Too few usable cells for a trend (a tiny frame): the map is used as it is.
  const trend = backgroundTrend(mean, cnt, bw, bh, d, cell, order, TREND_LAMBDA, noise / (d * cell));
  const trendAt = blockLattice(trend, bw, bh, d);
  const excess = Float64Array.from(mean, (v, b) => v - trendAt[b]!);
  const rs = Math.max(1, Math.round(T / (2 * d)));
  const smooth = boxMean(excess, cnt, bw, bh, rs);
  const freeFrac = boxMean(free, new Float64Array(bw * bh).fill(1), bw, bh, rs);
  // A step must beat the smoothed map's noise (pixel noise over √pixels of the window).
  const eps = noise / (d * (2 * rs + 1));

  const blockOf = (v: number, nb: number) => Math.min(nb - 1, Math.max(0, Math.floor(v / d)));
  const bLo = (nb: number) => Math.min(nb - 1, Math.floor(m / d));
  const usable = (b: number) => freeFrac[b]! >= USABLE_FREE_FRACTION && Number.isFinite(smooth[b]!);

  const all: PlacedSample[] = [];
  for (const [iy, sy] of ys.entries()) {
    for (const [ix, sx] of xs.entries()) {
      // Starts on the outer ring of the grid slide along their edge only: they pin the surface at
      // the border, where it would otherwise extrapolate and where light domes are steepest.
      const pinX = (ix === 0 || ix === xs.length - 1);
      const pinY = (iy === 0 || iy === ys.length - 1);
      const bx0 = blockOf(sx, bw);
      const by0 = blockOf(sy, bh);
      const xMin = pinX ? bx0 : Math.max(bLo(bw), bx0 - reach);
      const xMax = pinX ? bx0 : Math.min(bw - 1 - bLo(bw), bx0 + reach);
      const yMin = pinY ? by0 : Math.max(bLo(bh), by0 - reach);
      const yMax = pinY ? by0 : Math.min(bh - 1 - bLo(bh), by0 + reach);
      let bx = bx0;
      let by = by0;
      let steps = 0;
      if (!usable(by * bw + bx)) {
        // Start on a star or saturated patch: nearest usable block within reach (ring search).
        let found = false;
        for (let rad = 1; rad <= reach && !found; rad++) {
          let best = Infinity;
          for (let y = Math.max(yMin, by0 - rad); y <= Math.min(yMax, by0 + rad); y++) {
            for (let x = Math.max(xMin, bx0 - rad); x <= Math.min(xMax, bx0 + rad); x++) {
              if (Math.max(Math.abs(x - bx0), Math.abs(y - by0)) !== rad || !usable(y * bw + x)) continue;
              const v = smooth[y * bw + x]!;
              if (v < best) {
                best = v;
                bx = x;
                by = y;
                found = true;
              }
            }
          }
        }
        if (found) steps++;
      }
      if (usable(by * bw + bx)) {
        for (let it = 0; it < p.gradient_descent_max_iters; it++) {
          let best = smooth[by * bw + bx]! - eps;
          let nx = -1;
          let ny = -1;
          for (let dy = -1; dy <= 1; dy++) {
            for (let dx = -1; dx <= 1; dx++) {
              const x = bx + dx;
              const y = by + dy;
              if ((dx === 0 && dy === 0) || x < xMin || x > xMax || y < yMin || y > yMax) continue;
              const b = y * bw + x;
              if (!usable(b)) continue;
              if (smooth[b]! < best) {
                best = smooth[b]!;
                nx = x;
                ny = y;
              }
            }
          }
          if (nx < 0) break;
          bx = nx;
          by = ny;
          steps++;
        }
      }
      // Pixel position: the start itself when it never moved (keeps the grid exact), else the block centre.
      const px = steps === 0 ? sx : Math.min(width - 1 - m, Math.max(m, bx * d + (d - 1) / 2));
      const py = steps === 0 ? sy : Math.min(height - 1 - m, Math.max(m, by * d + (d - 1) / 2));
      const box = (x: number, y: number) => [Math.max(0, Math.round(x - T / 2)), Math.max(0, Math.round(y - T / 2)), Math.min(width, Math.round(x + T / 2)), Math.min(height, Math.round(y + T / 2))] as const;
      const [x0, y0, x1, y1] = box(px, py);
      const s = usable(by * bw + bx) ? patchSample(planes, mask, width, x0, y0, x1, y1, quantile) : null;
      // x, y: the patch centre (the fit position; a patch is clipped at the frame's edge); moved_px: start → end point.
      const base = s ?? { x: (x0 + x1) / 2 - 0.5, y: (y0 + y1) / 2 - 0.5, values: [], free_fraction: 0 };
      all.push({ ...base, start_x: sx, start_y: sy, moved_px: Math.hypot(px - sx, py - sy), steps, status: s ? 'accepted' : 'masked', residual: null });
    }
  }

  // Duplicates: samples that converged onto the same dim spot; the dimmest one stays.
  const lumOf = (s: TileSample) => s.values.reduce((a, v) => a + v, 0) / s.values.length;
  const live = all.filter((s) => s.status === 'accepted').sort((a, b) => lumOf(a) - lumOf(b));
  const kept: PlacedSample[] = [];
  const dupRadius = Math.max(d, spacing / 4);
  for (const s of live) {
    if (kept.some((k) => Math.hypot(k.x - s.x, k.y - s.y) < dupRadius)) s.status = 'duplicate';
    else kept.push(s);
  }

  // Stage one: a robust smooth surface (rbf, polynomial part of `order`) through the luminance
  // samples, refitted without those more than bright_reject_sigma robust sigmas above it until
  // nothing changes; what stays above is bright structure the descent could not leave.
  const scale = Math.max(width, height);
  const pts = kept.map((q) => ({ x: q.x / scale, y: q.y / scale, z: lumOf(q) }));
  const edge = (q: PlacedSample) => Math.min(q.x, q.y, width - 1 - q.x, height - 1 - q.y) < spacing;
  let w = pts.map(() => 1);
  let resid = pts.map(() => 0);
  let stageSigma = 0;
  let clipSigma = BRIGHT_FLOOR_NOISE * noise;
  for (let round = 0; round < 10 && pts.length > 0; round++) {
    const surf = fitSurface('rbf', pts, w, order, STAGE1_LAMBDA);
    if (!surf) break;
    resid = pts.map((q) => q.z - surf.at(q.x, q.y));
    stageSigma = robustSigma(Float64Array.from(resid.filter((_, i) => w[i]! > 0))).sigma;
    clipSigma = Math.max(stageSigma, BRIGHT_FLOOR_NOISE * noise);
    const next = resid.map((r, i) => (r <= p.bright_reject_sigma * clipSigma || edge(kept[i]!) ? 1 : 0));
    if (next.every((v, i) => v === w[i])) break;
    w = next;
  }
  kept.forEach((q, i) => {
    q.residual = resid[i]!;
    if (w[i] === 0) q.status = 'bright_structure';
  });

  // Coverage guard: no region of the frame left without a sample.
  const region = Math.max(T, COVERAGE_REGION_FRACTION * Math.min(width, height));
  const rc = Math.max(1, Math.round(width / region));
  const rr = Math.max(1, Math.round(height / region));
  const regionOf = (s: PlacedSample) => Math.min(rr - 1, Math.floor((s.y / height) * rr)) * rc + Math.min(rc - 1, Math.floor((s.x / width) * rc));
  const covered = new Set(kept.filter((s) => s.status === 'accepted').map(regionOf));
  const restore = new Map<number, PlacedSample>();
  for (const s of kept) {
    if (s.status !== 'bright_structure' || covered.has(regionOf(s))) continue;
    const cur = restore.get(regionOf(s));
    if (!cur || s.residual! < cur.residual!) restore.set(regionOf(s), s);
  }
  for (const s of restore.values()) s.status = 'restored_for_coverage';

  return {
    accepted: kept.filter((s) => s.status === 'accepted' || s.status === 'restored_for_coverage'),
    all,
    spacing_px: spacing,
    reach_px: reach * d,
    smoothing_px: (2 * rs + 1) * d,
    starts: xs.length * ys.length,
    clip_sigma: clipSigma,
    stage1_residual_sigma: stageSigma,
  };
}
