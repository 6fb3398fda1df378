// Background gradient model of the BGE phase (the predecessor's classic method), on whole
// planes of the RGB stack (one stacked image, not frames: three f32 planes of W·H).
//
//   1. Object mask on the luminance (R+G+B)/3: a coarse block-median background (blocks of the
//      tile size, bilinearly interpolated so a gradient does not trip the threshold), pixels more
//      than `MASK_SIGMA` robust sigmas above it are stars or bright structure; the mask is dilated
//      by bge.star_dilate_px (square, separable running max). Non-finite pixels are masked too.
//   2. Tiles of the seeing-based tile.* geometry (size T, stride T·(1 − overlap), plus half tiles
//      along the borders so samples reach T/4 from the edges); per tile and
//      channel the sample is the `sample_quantile` quantile of the unmasked pixels (taken relative
//      to the tile's least-squares plane, whose value at the tile centre is added back, so the
//      gradient inside a tile does not bias it) after a 3σ clip (a low quantile stays on sky even where faint halos escape the mask; its constant
//      offset below the mean cancels when the sky level is added back). A tile with fewer than
//      `MIN_TILE_FREE` unmasked pixels has no sample.
//   3. Coarse grid of spacing G = clip(max(2T, min(W,H)/grid_cells), 64, max(64, min(W,H)/4));
//      cell value = mean of the samples whose tile centres fall in the cell (those within 3 robust
//      sigmas of the cell median), at the mean of their centres (cells without samples dropped).
//   4. Surface per channel through the cell values: thin-plate spline with smoothing and a
//      polynomial part of poly_order (rbf) or a least-squares polynomial of poly_order (poly), both with IRLS Huber weights (δ = 1.5
//      robust sigmas of the residuals, ≤ 10 rounds, tolerance 1e-4) so outlier cells (a galaxy,
//      a missed bright star) are pulled in less. The surface is evaluated on a node lattice
//      every `EVAL_STEP` px and bilinearly interpolated (it is smooth, far smoother than 8 px).
//   5. Correction: out = in − S + median(S) per channel, so the sky level stays (positive) and
//      only the gradient goes; S is smooth, so no pixel noise is added.

import { selectInPlace } from '../../../algorithms/robust-stats.js';

export const MASK_SIGMA = 3;
export const MIN_TILE_FREE_FRACTION = 0.25;
const EVAL_STEP = 8;

export interface TileGeometry {
  seeing_px: number;
  seeing_source: string;
  tile_px: number;
  stride_px: number;
  overlap_fraction: number;
  tmin: number;
  tmax: number;
}

/** tile.* geometry (the predecessor's): size = floor(clamp(size_factor · seeing, tmin, tmax)). */
export function tileGeometry(width: number, height: number, tile: { size_factor: number; min_size: number; max_divisor: number; overlap_fraction: number }, seeing: number | null, seeingSource: string): TileGeometry {
  const s = seeing !== null && Number.isFinite(seeing) && seeing > 0 ? seeing : 3.0;
  const tmin = Math.max(16, tile.min_size);
  const tmax = Math.max(tmin, Math.floor(Math.min(width, height) / tile.max_divisor));
  const size = Math.floor(Math.min(Math.max(tile.size_factor * s, tmin), tmax));
  const overlap = Math.min(0.5, Math.max(0, tile.overlap_fraction));
  return { seeing_px: s, seeing_source: seeing === null ? 'default_3px' : seeingSource, tile_px: size, stride_px: Math.max(1, Math.round(size * (1 - overlap))), overlap_fraction: overlap, tmin, tmax };
}

export function quantileSorted(v: ArrayLike<number>, q: number): number {
  const n = v.length;
  if (n === 0) return NaN;
  const pos = Math.min(n - 1, Math.max(0, q * (n - 1)));
  const i = Math.floor(pos);
  const f = pos - i;
  return i + 1 < n ? v[i]! * (1 - f) + v[i + 1]! * f : v[i]!;
}

export function median(values: ArrayLike<number>): number {
  const v = Float64Array.from(values as ArrayLike<number>).filter(Number.isFinite).sort();
  return quantileSorted(v, 0.5);
}

/** Median and 1.4826·MAD of the finite values. */
export function robustSigma(values: Float32Array | Float64Array): { med: number; sigma: number } {
  const v = Float64Array.from(values).filter(Number.isFinite).sort();
  const med = quantileSorted(v, 0.5);
  const dev = v.map((x) => Math.abs(x - med)).sort();
  return { med, sigma: 1.4826 * quantileSorted(dev, 0.5) };
}

/** Block-median background of `plane` interpolated to every pixel (bilinear between block centres). */
export function coarseBackground(plane: Float32Array, width: number, height: number, block: number): Float32Array {
  const bw = Math.max(1, Math.ceil(width / block));
  const bh = Math.max(1, Math.ceil(height / block));
  const grid = new Float64Array(bw * bh);
  const buf = new Float64Array(block * block);
  for (let by = 0; by < bh; by++) {
    for (let bx = 0; bx < bw; bx++) {
      let n = 0;
      for (let y = by * block; y < Math.min(height, (by + 1) * block); y++) {
        for (let x = bx * block; x < Math.min(width, (bx + 1) * block); x++) {
          const v = plane[y * width + x]!;
          if (Number.isFinite(v)) buf[n++] = v;
        }
      }
      grid[by * bw + bx] = n > 0 ? quantileSorted(buf.subarray(0, n).sort(), 0.5) : NaN;
    }
  }
  // Blocks without data take the median of the others so interpolation stays finite.
  const fill = median(grid);
  for (let i = 0; i < grid.length; i++) if (!Number.isFinite(grid[i]!)) grid[i] = Number.isFinite(fill) ? fill : 0;
  const centre = (i: number) => i * block + block / 2 - 0.5;
  return latticeToPixels(grid, bw, bh, centre, width, height);
}

/** Bilinear interpolation of a lattice with node k at pixel coordinate pos(k) (clamped at the edges). */
function latticeToPixels(grid: Float64Array, gw: number, gh: number, pos: (k: number) => number, width: number, height: number): Float32Array {
  const out = new Float32Array(width * height);
  const ix0 = new Int32Array(width);
  const fx = new Float64Array(width);
  const step = gw > 1 ? pos(1) - pos(0) : 1;
  for (let x = 0; x < width; x++) {
    const t = Math.min(gw - 1, Math.max(0, (x - pos(0)) / step));
    const i = Math.min(gw - 2, Math.floor(t));
    ix0[x] = Math.max(0, i);
    fx[x] = gw > 1 ? t - Math.max(0, i) : 0;
  }
  for (let y = 0; y < height; y++) {
    const t = Math.min(gh - 1, Math.max(0, (y - pos(0)) / step));
    const j = Math.max(0, Math.min(gh - 2, Math.floor(t)));
    const fy = gh > 1 ? t - j : 0;
    const r0 = j * gw;
    const r1 = Math.min(gh - 1, j + 1) * gw;
    for (let x = 0; x < width; x++) {
      const i = ix0[x]!;
      const i1 = Math.min(gw - 1, i + 1);
      const f = fx[x]!;
      const a = grid[r0 + i]! * (1 - f) + grid[r0 + i1]! * f;
      const b = grid[r1 + i]! * (1 - f) + grid[r1 + i1]! * f;
      out[y * width + x] = a * (1 - fy) + b * fy;
    }
  }
  return out;
}

/** Square dilation of a 0/1 mask by radius r (separable running counts, O(W·H)). */
export function dilate(mask: Uint8Array, width: number, height: number, r: number): Uint8Array {
  if (r <= 0) return mask;
  const tmp = new Uint8Array(mask.length);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    let count = 0;
    for (let x = 0; x < Math.min(width, r); x++) count += mask[row + x]!;
    for (let x = 0; x < width; x++) {
      if (x + r < width) count += mask[row + x + r]!;
      if (x - r - 1 >= 0) count -= mask[row + x - r - 1]!;
      tmp[row + x] = count > 0 ? 1 : 0;
    }
  }
  const out = new Uint8Array(mask.length);
  for (let x = 0; x < width; x++) {
    let count = 0;
    for (let y = 0; y < Math.min(height, r); y++) count += tmp[y * width + x]!;
    for (let y = 0; y < height; y++) {
      if (y + r < height) count += tmp[(y + r) * width + x]!;
      if (y - r - 1 >= 0) count -= tmp[(y - r - 1) * width + x]!;
      out[y * width + x] = count > 0 ? 1 : 0;
    }
  }
  return out;
}

/** Stars and bright structure of the luminance, dilated; 1 = masked. */
export function objectMask(planes: Float32Array[], width: number, height: number, block: number, dilatePx: number): { mask: Uint8Array; masked_fraction: number; noise: number } {
  const n = width * height;
  const lum = new Float32Array(n);
  for (const p of planes) for (let i = 0; i < n; i++) lum[i] = lum[i]! + p[i]! / planes.length;
  const bg = coarseBackground(lum, width, height, block);
  const resid = new Float32Array(n);
  for (let i = 0; i < n; i++) resid[i] = lum[i]! - bg[i]!;
  const stride = Math.max(1, Math.floor(n / 500_000));
  const sample = new Float32Array(Math.ceil(n / stride));
  for (let i = 0, k = 0; i < n; i += stride) sample[k++] = resid[i]!;
  const { med, sigma } = robustSigma(sample);
  const thr = med + MASK_SIGMA * sigma;
  const raw = new Uint8Array(n);
  for (let i = 0; i < n; i++) {
    const v = resid[i]!;
    raw[i] = !(v - v === 0) || v > thr ? 1 : 0;
  }
  const mask = dilate(raw, width, height, dilatePx);
  let m = 0;
  for (let i = 0; i < n; i++) m += mask[i]!;
  return { mask, masked_fraction: m / n, noise: sigma };
}

export interface TileSample {
  x: number;
  y: number;
  /** Per channel sample values. */
  values: number[];
  free_fraction: number;
}

/** Per tile: clipped low quantile of the unmasked pixels of each channel. */
export function tileSamples(planes: Float32Array[], mask: Uint8Array, width: number, height: number, geo: TileGeometry, quantile: number): { samples: TileSample[]; tiles: number } {
  const T = Math.min(geo.tile_px, width, height);
  // Full tiles on the stride, plus half tiles along the borders (centres T/4 from the edge), so
  // the surface is pinned near the edges and corners instead of extrapolated over T/2 px.
  const spans = (extent: number): [number, number][] => {
    const s: [number, number][] = [];
    const half = Math.max(1, Math.floor(T / 2));
    s.push([0, half]);
    for (let p = 0; p + T <= extent; p += geo.stride_px) s.push([p, p + T]);
    if (s[s.length - 1]![1] < extent) s.push([extent - T, extent]);
    s.push([extent - half, extent]);
    return s;
  };
  const xs = spans(width);
  const ys = spans(height);
  const samples: TileSample[] = [];
  for (const [y0, y1] of ys) {
    for (const [x0, x1] of xs) {
      const s = patchSample(planes, mask, width, x0, y0, x1, y1, quantile);
      if (s) samples.push(s);
    }
  }
  return { samples, tiles: xs.length * ys.length };
}

const patchScratch = { buf: new Float64Array(0), xs: new Float64Array(0), ys: new Float64Array(0) };

/**
 * The background sample of the box [x0, x1) × [y0, y1) (pixel bounds inside the image): per
 * channel the clipped `quantile` of the unmasked pixels relative to their least-squares plane,
 * plus the plane at the box centre; null when fewer than MIN_TILE_FREE_FRACTION of the box is
 * unmasked or a value is not finite. Shared by the classic tile grid and AutoBGE's placed samples.
 */
export function patchSample(planes: Float32Array[], mask: Uint8Array, width: number, x0: number, y0: number, x1: number, y1: number, quantile: number): TileSample | null {
  const area = (x1 - x0) * (y1 - y0);
  if (patchScratch.buf.length < area) patchScratch.buf = new Float64Array(area);
  if (patchScratch.xs.length < area) patchScratch.xs = new Float64Array(area);
  if (patchScratch.ys.length < area) patchScratch.ys = new Float64Array(area);
  const { buf, xs: xs0, ys: ys0 } = patchScratch;
  const values: number[] = [];
  let free = 0;
  const cx = (x0 + x1) / 2 - 0.5;
  const cy = (y0 + y1) / 2 - 0.5;
  for (let c = 0; c < planes.length; c++) {
    const p = planes[c]!;
    let n = 0;
    for (let y = y0; y < y1; y++) {
      for (let x = x0; x < x1; x++) {
        const i = y * width + x;
        if (mask[i] === 0) {
          xs0[n] = x - cx;
          ys0[n] = y - cy;
          buf[n++] = p[i]!;
        }
      }
    }
    free = n;
    if (n < MIN_TILE_FREE_FRACTION * area || n < 3) return null;
    // Sample relative to the tile's least-squares plane (value at the centre added back):
    // the gradient inside a tile (several noise sigmas across it) then neither widens the
    // distribution nor moves the low quantile by a slope-dependent amount.
    const [a, bx, by] = planeFit(buf, xs0, ys0, n);
    for (let k = 0; k < n; k++) buf[k] = buf[k]! - (a + bx * xs0[k]! + by * ys0[k]!);
    values.push(a + clippedQuantile(buf.subarray(0, n), quantile));
  }
  return values.every(Number.isFinite) ? { x: cx, y: cy, values, free_fraction: free / area } : null;
}

/** Least-squares plane v ≈ a + bx·x + by·y through n samples (x, y centred on the tile). */
function planeFit(v: Float64Array, x: Float64Array, y: Float64Array, n: number): [number, number, number] {
  let sx = 0;
  let sy = 0;
  let sxx = 0;
  let syy = 0;
  let sxy = 0;
  let sv = 0;
  let sxv = 0;
  let syv = 0;
  for (let k = 0; k < n; k++) {
    const xi = x[k]!;
    const yi = y[k]!;
    const vi = v[k]!;
    sx += xi;
    sy += yi;
    sxx += xi * xi;
    syy += yi * yi;
    sxy += xi * yi;
    sv += vi;
    sxv += xi * vi;
    syv += yi * vi;
  }
  const m = Float64Array.of(n, sx, sy, sx, sxx, sxy, sy, sxy, syy);
  const r = solve(m, Float64Array.of(sv, sxv, syv), 3);
  return r ? [r[0]!, r[1]!, r[2]!] : [sv / Math.max(1, n), 0, 0];
}

/** Interpolated q quantile of a[0..n) (reorders a). */
export function selectQuantile(a: Float64Array, n: number, q: number): number {
  const pos = Math.min(n - 1, Math.max(0, q * (n - 1)));
  const k = Math.floor(pos);
  const lo = selectInPlace(a, k, 0, n - 1);
  if (pos === k || k + 1 >= n) return lo;
  // After selecting k every element right of k is ≥ a[k]: the next order statistic is their min.
  let next = Infinity;
  for (let i = k + 1; i < n; i++) if (a[i]! < next) next = a[i]!;
  return lo + (next - lo) * (pos - k);
}

const scratch = { dev: new Float64Array(0) };

/** `q` quantile after up to three rounds of a 3σ (MAD) clip around the median (reorders v). */
function clippedQuantile(v: Float64Array, q: number): number {
  let n = v.length;
  if (scratch.dev.length < n) scratch.dev = new Float64Array(n);
  const dev = scratch.dev;
  for (let round = 0; round < 3; round++) {
    const med = selectQuantile(v, n, 0.5);
    for (let i = 0; i < n; i++) dev[i] = Math.abs(v[i]! - med);
    const sig = 1.4826 * selectQuantile(dev, n, 0.5);
    if (!(sig > 0)) break;
    const lo = med - 3 * sig;
    const hi = med + 3 * sig;
    let kept = 0;
    for (let i = 0; i < n; i++) if (v[i]! >= lo && v[i]! <= hi) kept++;
    if (kept === n || kept < 16) break;
    let m = 0;
    for (let i = 0; i < n; i++) {
      const x = v[i]!;
      if (x >= lo && x <= hi) v[m++] = x;
    }
    n = m;
  }
  return selectQuantile(v, n, q);
}

export interface GridPoint {
  x: number;
  y: number;
  values: number[];
  tiles: number;
}

/** Coarse grid spacing G and the cell medians of the tile samples. */
export function gridCells(samples: TileSample[], width: number, height: number, tilePx: number, gridCellsN: number): { spacing: number; cols: number; rows: number; points: GridPoint[] } {
  const short = Math.min(width, height);
  const spacing = Math.round(Math.min(Math.max(Math.max(2 * tilePx, short / gridCellsN), 64), Math.max(64, short / 4)));
  const cols = Math.max(1, Math.ceil(width / spacing));
  const rows = Math.max(1, Math.ceil(height / spacing));
  const cells: TileSample[][] = Array.from({ length: cols * rows }, () => []);
  for (const s of samples) {
    const cx = Math.min(cols - 1, Math.floor(s.x / spacing));
    const cy = Math.min(rows - 1, Math.floor(s.y / spacing));
    cells[cy * cols + cx]!.push(s);
  }
  const points: GridPoint[] = [];
  for (const cell of cells) {
    if (cell.length === 0) continue;
    const channels = cell[0]!.values.length;
    // Robust mean at the mean position of the kept samples: a plain median value at the mean
    // position is off by the gradient times the position mismatch (tenths of a sigma here).
    const keep = cell.filter((s) =>
      Array.from({ length: channels }, (_, c) => c).every((c) => {
        const vals = Float64Array.from(cell.map((t) => t.values[c]!));
        const { med, sigma } = robustSigma(vals);
        return !(sigma > 0) || Math.abs(s.values[c]! - med) <= 3 * sigma;
      }),
    );
    const use = keep.length > 0 ? keep : cell;
    points.push({
      x: use.reduce((a, s) => a + s.x, 0) / use.length,
      y: use.reduce((a, s) => a + s.y, 0) / use.length,
      values: Array.from({ length: channels }, (_, c) => use.reduce((a, s) => a + s.values[c]!, 0) / use.length),
      tiles: use.length,
    });
  }
  return { spacing, cols, rows, points };
}

/** Solves A x = b (dense, n×n, row-major) by Gaussian elimination with partial pivoting. */
function solve(a: Float64Array, b: Float64Array, n: number): Float64Array | null {
  const m = Float64Array.from(a);
  const x = Float64Array.from(b);
  for (let k = 0; k < n; k++) {
    let p = k;
    for (let i = k + 1; i < n; i++) if (Math.abs(m[i * n + k]!) > Math.abs(m[p * n + k]!)) p = i;
    if (!(Math.abs(m[p * n + k]!) > 1e-300)) return null;
    if (p !== k) {
      for (let j = 0; j < n; j++) {
        const t = m[k * n + j]!;
        m[k * n + j] = m[p * n + j]!;
        m[p * n + j] = t;
      }
      const t = x[k]!;
      x[k] = x[p]!;
      x[p] = t;
    }
    const d = m[k * n + k]!;
    for (let i = k + 1; i < n; i++) {
      const f = m[i * n + k]! / d;
      if (f === 0) continue;
      for (let j = k; j < n; j++) m[i * n + j] = m[i * n + j]! - f * m[k * n + j]!;
      x[i] = x[i]! - f * x[k]!;
    }
  }
  for (let k = n - 1; k >= 0; k--) {
    let s = x[k]!;
    for (let j = k + 1; j < n; j++) s -= m[k * n + j]! * x[j]!;
    x[k] = s / m[k * n + k]!;
  }
  return x.every(Number.isFinite) ? x : null;
}

export type FitMethod = 'rbf' | 'poly';

/** A fitted smooth surface: value at a pixel position. */
export interface Surface {
  at(x: number, y: number): number;
}

/** Polynomial terms x^i y^j (i + j ≤ order) in coordinates normalised by `scale`. */
function polyTerms(x: number, y: number, order: number, out: number[]): number[] {
  out.length = 0;
  for (let d = 0; d <= order; d++) for (let i = d; i >= 0; i--) out.push(x ** i * y ** (d - i));
  return out;
}

const tps = (r2: number) => (r2 > 0 ? 0.5 * r2 * Math.log(r2) : 0);

/**
 * Weighted fit of one channel: poly (least squares) or rbf (thin-plate spline with smoothing
 * λ/w_i on the diagonal, plus the polynomial part). Coordinates are normalised by the long side.
 */
export function fitSurface(method: FitMethod, pts: { x: number; y: number; z: number }[], w: number[], order: number, lambda: number): Surface | null {
  const n = pts.length;
  if (method === 'poly') {
    const t: number[] = [];
    const m = polyTerms(0, 0, order, t).length;
    if (n < m) return null;
    const ata = new Float64Array(m * m);
    const atb = new Float64Array(m);
    for (let k = 0; k < n; k++) {
      const p = pts[k]!;
      polyTerms(p.x, p.y, order, t);
      for (let i = 0; i < m; i++) {
        atb[i] = atb[i]! + w[k]! * t[i]! * p.z;
        for (let j = 0; j < m; j++) ata[i * m + j] = ata[i * m + j]! + w[k]! * t[i]! * t[j]!;
      }
    }
    const c = solve(ata, atb, m);
    if (!c) return null;
    return {
      at(x, y) {
        polyTerms(x, y, order, t);
        let s = 0;
        for (let i = 0; i < m; i++) s += c[i]! * t[i]!;
        return s;
      },
    };
  }
  // Thin-plate spline whose polynomial part has the order of poly_order (not just affine): the
  // surface extrapolates to the image edges along the low-order trend instead of a plane.
  const t: number[] = [];
  const m = polyTerms(0, 0, order, t).length;
  if (n < m + 1) return null;
  const size = n + m;
  const a = new Float64Array(size * size);
  const b = new Float64Array(size);
  for (let i = 0; i < n; i++) {
    const pi = pts[i]!;
    for (let j = 0; j < n; j++) {
      const pj = pts[j]!;
      a[i * size + j] = tps((pi.x - pj.x) ** 2 + (pi.y - pj.y) ** 2);
    }
    a[i * size + i] = a[i * size + i]! + lambda / Math.max(w[i]!, 1e-6);
    polyTerms(pi.x, pi.y, order, t);
    for (let k = 0; k < m; k++) a[i * size + n + k] = a[(n + k) * size + i] = t[k]!;
    b[i] = pi.z;
  }
  const c = solve(a, b, size);
  if (!c) return null;
  return {
    at(x, y) {
      polyTerms(x, y, order, t);
      let s = 0;
      for (let k = 0; k < m; k++) s += c[n + k]! * t[k]!;
      for (let i = 0; i < n; i++) {
        const p = pts[i]!;
        s += c[i]! * tps((x - p.x) ** 2 + (y - p.y) ** 2);
      }
      return s;
    },
  };
}

export interface ChannelFit {
  surface: Surface;
  iterations: number;
  /** RMS of the residuals of the (unweighted) cell values, in image units. */
  residual_rms: number;
  /** Robust sigma of the residuals. */
  residual_sigma: number;
  /** Cells whose final IRLS weight is below 0.5 (treated as outliers). */
  outliers: number;
}

/**
 * Robust (IRLS Huber) fit of one channel's cell values; coordinates in pixels. `noiseFloor`
 * bounds the Huber δ from below: sample values are precise to a few hundredths of the pixel
 * noise, so without a floor a smooth surface that is merely imperfect would mark real
 * background structure as outliers; outliers that matter (a galaxy, a missed star) sit far
 * above a tenth of the pixel noise.
 */
export function fitChannel(points: GridPoint[], channel: number, method: FitMethod, order: number, scale: number, lambda: number, noiseFloor = 0): ChannelFit | null {
  const pts = points.map((p) => ({ x: p.x / scale, y: p.y / scale, z: p.values[channel]! }));
  let w = pts.map(() => 1);
  let surface: Surface | null = null;
  let prev: number[] | null = null;
  let iterations = 0;
  let resid: number[] = [];
  let sigma = 0;
  for (let it = 0; it < 10; it++) {
    iterations = it + 1;
    const s = fitSurface(method, pts, w, order, lambda);
    if (!s) return null;
    surface = s;
    resid = pts.map((p) => p.z - s.at(p.x, p.y));
    const fitted = pts.map((p) => s.at(p.x, p.y));
    sigma = robustSigma(Float64Array.from(resid)).sigma;
    const delta = 1.5 * Math.max(sigma, noiseFloor, 1e-12);
    w = resid.map((r) => (Math.abs(r) <= delta ? 1 : delta / Math.abs(r)));
    if (prev) {
      const change = Math.max(...fitted.map((f, i) => Math.abs(f - prev![i]!)));
      const range = Math.max(1e-12, Math.max(...fitted) - Math.min(...fitted), Math.abs(median(fitted)));
      if (change / range < 1e-4) break;
    }
    prev = fitted;
  }
  if (!surface) return null;
  const final = surface;
  const rms = Math.sqrt(resid.reduce((a, r) => a + r * r, 0) / Math.max(1, resid.length));
  return {
    surface: { at: (x, y) => final.at(x / scale, y / scale) },
    iterations,
    residual_rms: rms,
    residual_sigma: sigma,
    outliers: w.filter((v) => v < 0.5).length,
  };
}

/** The surface at every pixel: evaluated on a lattice every EVAL_STEP px and interpolated. */
export function renderSurface(surface: Surface, width: number, height: number): Float32Array {
  const gw = Math.ceil((width - 1) / EVAL_STEP) + 1;
  const gh = Math.ceil((height - 1) / EVAL_STEP) + 1;
  const grid = new Float64Array(gw * gh);
  for (let j = 0; j < gh; j++) for (let i = 0; i < gw; i++) grid[j * gw + i] = surface.at(i * EVAL_STEP, j * EVAL_STEP);
  return latticeToPixels(grid, gw, gh, (k) => k * EVAL_STEP, width, height);
}
