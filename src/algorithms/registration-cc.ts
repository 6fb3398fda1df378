// registration_cc: normalised cross-correlation between the reference and a frame warped onto
// it with the registration matrix, measured on small proxies of both images. It says whether
// the frame's stars really land on the reference's stars (a wrong or failed registration
// scores near 0) and, to a lesser degree, how much of the reference's star pattern the frame
// shows (clouds and haze score lower).
//
// Proxy (makeCcProxy, once per image; the reference's is reused for every frame):
// 1. bin×bin mean binning (default 2; for raw CFA mosaics use an even bin so every proxy
//    pixel mixes whole Bayer cells: a luminance proxy without colour artefacts). Binning by
//    4 halves the cost again but blurs stars so much that a frame misregistered by 10 px
//    still scores ~0.4, and a cloudy frame scores nearly as high as a clear one;
// 2. background removal: medians over tiles of 32×32 proxy pixels, bilinearly interpolated
//    between tile centres and subtracted (sky gradients and vignetting must not correlate);
// 3. clipping to [−3σ, min(30σ, the 99.9th percentile)] so a few bright stars, hot pixels
//    or a satellite trail cannot dominate the sums. A noise-relative level, not a percentile
//    alone: in a sparse field the 99.5th percentile lies at the faint stars, flattens every
//    star to one value and leaves the sky noise in charge (cc 0.8 instead of 0.97 for a
//    perfect registration); in a frame crossed by a bright trail the percentile lies on the
//    trail;
// 4. a small Gaussian blur (σ = 1 proxy pixel, 5 taps) so that stars, which are about one
//    proxy pixel wide, survive the bilinear resampling of the warp (without it a half-pixel
//    shift alone would halve the correlation of a perfectly registered frame);
// 5. a noise floor: values below the background are set to 0 (only the excess above it is
//    kept). With all the sky noise in, the score of a perfect registration would depend on
//    the data's signal-to-noise ratio (short exposures would fail a fixed min_correlation);
//    with none (a floor of a few σ) clouds would hardly lower it.
//
// registrationCc warps the frame proxy into the reference proxy's grid (bilinear; pixels
// that fall outside the frame or touch NaN are excluded) and correlates over the pixels valid
// in both, tile by tile (16×16 proxy pixels): per tile centred variances and covariance, and
// a tile whose variance in one image is more than 3× what the typical frame/reference ratio
// predicts from the other (a satellite trail, a plane, a reflection in one image only) is
// scaled down to that limit, so a local artefact costs only its area. Result in [−1, 1].
// On the fixtures: good frames 0.98–0.99 (mono and OSC), bad seeing and trailed 0.89–0.90,
// clouds 0.91, a satellite trail 0.92–0.93; 1° off 0.53, 10 px off < 0.1.
//
// Invariants: NaN marks "no data" everywhere; nothing here throws for a bad frame (failures
// are { ok: false, code, detail }); no per-pixel allocation; deterministic.
// Cost on the 2-core machine for 2048×1536: ~30 ms per proxy, ~10 ms per correlation. GPU
// note: binning + background, the clipped blur and the warp + per-tile five-sum reduction
// are each one pass over the image and would map to one kernel each.

import { invertAffine, type Affine } from './affine.js';
import { MAD_TO_SIGMA, selectInPlace } from './robust-stats.js';

export interface CcProxyOptions {
  /** Binning factor (even for CFA mosaics). Default 2. */
  bin?: number;
  /** Background tile size in proxy pixels. Default 32. */
  backgroundTile?: number;
  /** Upper clip level as a percentile of the background-subtracted proxy (the 30σ cap
   * usually clips lower). Default 99.9. */
  clipPercentile?: number;
  /** Gaussian blur σ in proxy pixels (0 = none). Default 1. */
  smoothSigma?: number;
  /**
   * Values up to the background + k·σ(noise) are set to 0 and the excess kept; null keeps
   * the noise. Default 0 (the negative half of the sky noise goes).
   */
  noiseFloorSigmas?: number | null;
}

export interface CcProxy {
  /** Proxy size and the full-resolution size it was made from. */
  width: number;
  height: number;
  bin: number;
  fullWidth: number;
  fullHeight: number;
  /** Row-major proxy values; NaN where the image has no data. */
  data: Float32Array;
}

/** Highest clip level in units of the proxy's noise σ above its median. */
const CLIP_SIGMAS = 30;
/** Tile side (proxy pixels) of the robust variance bookkeeping. */
const CC_TILE = 16;
/** Largest variance ratio a tile may show over the typical one before it is capped. */
const CC_VARIANCE_CAP = 3;

export type CcFailureCode = 'no_overlap' | 'no_signal';

export type CcResult =
  | { ok: true; cc: number; /** Fraction of the reference proxy covered by valid frame data. */ overlap: number }
  | { ok: false; code: CcFailureCode; detail: string };

/** Builds the correlation proxy of one image plane (row-major, `width`×`height`). */
export function makeCcProxy(plane: Float32Array, width: number, height: number, options: CcProxyOptions = {}): CcProxy {
  const builder = new CcProxyBuilder(width, height, options);
  builder.addRows(0, plane.subarray(0, builder.rowsUsed * width));
  return builder.finish();
}

/**
 * Buffers a caller lends proxy building, reused from one proxy to the next (a frame worker's
 * proxies are dropped after each frame's correlation): the proxy's own values and the blur's
 * intermediate plane, grown as needed. A proxy built with a scratch is valid until the scratch's
 * next use.
 */
export interface CcScratch {
  proxy: Float32Array | null;
  blur: Float32Array | null;
}

/** `n` values of the scratch's buffer `key`, grown (replaced) when too small. */
function lend(scratch: CcScratch | undefined, key: keyof CcScratch, n: number): Float32Array {
  if (!scratch) return new Float32Array(n);
  let b = scratch[key];
  if (!b || b.length < n) scratch[key] = b = new Float32Array(n);
  return b.subarray(0, n);
}

/**
 * The same proxy from bands of rows, so the full-resolution plane never has to be in memory at
 * once (QUALITY_ANALYSIS reads frames band by band). Bands must come in order, start on a
 * multiple of `bin` and hold whole multiples of `bin` rows (except rows beyond `rowsUsed`,
 * which the proxy ignores); the result is identical to makeCcProxy on the whole plane.
 */
export class CcProxyBuilder {
  readonly bin: number;
  readonly pw: number;
  readonly ph: number;
  /** Full-resolution rows the proxy covers (ph·bin); rows below are not needed. */
  readonly rowsUsed: number;
  private readonly data: Float32Array;
  private hasNaN = false;
  private nextRow = 0;

  constructor(
    readonly width: number,
    readonly height: number,
    private readonly options: CcProxyOptions = {},
    private readonly scratch?: CcScratch,
  ) {
    this.bin = Math.max(1, Math.floor(options.bin ?? 2));
    this.pw = Math.max(1, Math.floor(width / this.bin));
    this.ph = Math.max(1, Math.floor(height / this.bin));
    this.rowsUsed = Math.min(height, this.ph * this.bin);
    // Every value is written by addRows (binRows fills each block of the rows it is given).
    this.data = lend(scratch, 'proxy', this.pw * this.ph);
  }

  /** Rows y0 … y0 + rows.length/width − 1 of the plane. */
  addRows(y0: number, rows: Float32Array): void {
    const n = Math.floor(rows.length / this.width);
    if (y0 !== this.nextRow || y0 % this.bin !== 0) throw new Error(`CcProxyBuilder: rows must come in order from a multiple of ${this.bin} (expected ${this.nextRow}, got ${y0})`);
    const usable = Math.min(n, this.rowsUsed - y0);
    if (usable <= 0) return;
    // Only the last band may end inside a block (an image less than `bin` rows high).
    if (usable % this.bin !== 0 && y0 + usable < this.rowsUsed) throw new Error(`CcProxyBuilder: a band of ${usable} rows is not a multiple of ${this.bin}`);
    const py0 = y0 / this.bin;
    const pRows = Math.ceil(usable / this.bin);
    if (binRows(rows, this.width, this.bin, this.pw, pRows, this.data.subarray(py0 * this.pw, (py0 + pRows) * this.pw))) this.hasNaN = true;
    this.nextRow = y0 + usable;
  }

  finish(): CcProxy {
    if (this.nextRow < this.rowsUsed) throw new Error(`CcProxyBuilder: rows ${this.nextRow}..${this.rowsUsed - 1} are missing`);
    const { pw, ph, data, options } = this;
    const tile = Math.max(4, Math.floor(options.backgroundTile ?? 32));
    const percentile = options.clipPercentile ?? 99.9;
    const sigma = options.smoothSigma ?? 1;
    const floorSigmas = options.noiseFloorSigmas === undefined ? 0 : options.noiseFloorSigmas;
    subtractBackground(data, pw, ph, tile);
    const levels = clipLevels(data, percentile);
    const kernel = sigma > 0 ? gaussianKernel(sigma) : null;
    // The floor sits at the background plus k·σ of the noise as it is after the blur.
    const floor = floorSigmas === null ? -Infinity : levels.median + floorSigmas * levels.sigma * (kernel ? kernel.noiseGain : 1);
    // Clip, blur and floor in two passes over the proxy (rows, then columns).
    blurClipFloor(data, pw, ph, levels.lo, levels.hi, floor, kernel, this.hasNaN, kernel ? lend(this.scratch, 'blur', pw * ph) : null);
    return { width: pw, height: ph, bin: this.bin, fullWidth: this.width, fullHeight: this.height, data };
  }
}

/**
 * Mean of each bin×bin block over its finite pixels (NaN when it has none) for `pRows` proxy
 * rows from `plane` (which starts at the first full-resolution row of those blocks), into `out`.
 * Returns whether some block had no finite pixel.
 */
function binRows(plane: Float32Array, width: number, bin: number, pw: number, pRows: number, out: Float32Array): boolean {
  const sum = new Float64Array(pw);
  const cnt = new Int32Array(pw);
  let hasNaN = false;
  if (bin === 2) {
    // The default: one 2×2 cell per output; a non-finite sum sends the cell to the slow path.
    for (let py = 0; py < pRows; py++) {
      const r0 = 2 * py * width;
      const r1 = r0 + width;
      for (let px = 0; px < pw; px++) {
        const i = 2 * px;
        const s = plane[r0 + i]! + plane[r0 + i + 1]! + plane[r1 + i]! + plane[r1 + i + 1]!;
        if (s - s === 0) {
          out[py * pw + px] = 0.25 * s;
          continue;
        }
        let t = 0;
        let c = 0;
        for (const v of [plane[r0 + i]!, plane[r0 + i + 1]!, plane[r1 + i]!, plane[r1 + i + 1]!]) {
          if (v - v === 0) {
            t += v;
            c++;
          }
        }
        out[py * pw + px] = c > 0 ? t / c : NaN;
        if (c === 0) hasNaN = true;
      }
    }
    return hasNaN;
  }
  for (let py = 0; py < pRows; py++) {
    sum.fill(0);
    cnt.fill(0);
    for (let dy = 0; dy < bin; dy++) {
      const row = (py * bin + dy) * width;
      for (let px = 0; px < pw; px++) {
        const base = row + px * bin;
        let s = 0;
        let c = 0;
        for (let dx = 0; dx < bin; dx++) {
          const v = plane[base + dx]!;
          // v === v is false only for NaN; ±Infinity is excluded as well.
          if (v - v === 0) {
            s += v;
            c++;
          }
        }
        sum[px]! += s;
        cnt[px]! += c;
      }
    }
    for (let px = 0; px < pw; px++) {
      out[py * pw + px] = cnt[px]! > 0 ? sum[px]! / cnt[px]! : NaN;
      if (cnt[px] === 0) hasNaN = true;
    }
  }
  return hasNaN;
}

/** Subtracts a bilinear interpolation of tile medians (finite pixels only). */
function subtractBackground(data: Float32Array, w: number, h: number, tile: number): void {
  const tx = Math.max(1, Math.round(w / tile));
  const ty = Math.max(1, Math.round(h / tile));
  const grid = new Float64Array(tx * ty);
  const scratch = new Float32Array(Math.ceil(w / tx + 1) * Math.ceil(h / ty + 1));
  for (let j = 0; j < ty; j++) {
    const y0 = Math.floor((j * h) / ty);
    const y1 = Math.floor(((j + 1) * h) / ty);
    for (let i = 0; i < tx; i++) {
      const x0 = Math.floor((i * w) / tx);
      const x1 = Math.floor(((i + 1) * w) / tx);
      // Every other row and column: a median of ~250 samples is plenty and 4× cheaper.
      const step = x1 - x0 >= 8 && y1 - y0 >= 8 ? 2 : 1;
      let n = 0;
      for (let y = y0; y < y1; y += step) {
        for (let x = x0; x < x1; x += step) {
          const v = data[y * w + x]!;
          if (v === v) scratch[n++] = v;
        }
      }
      grid[j * tx + i] = n > 0 ? selectInPlace(scratch.subarray(0, n), n >> 1) : NaN;
    }
  }
  fillMissing(grid, tx, ty);
  // Bilinear between tile centres; constant beyond the outermost centres. Column weights
  // once, then per row the two interpolated grid rows.
  const colA = new Int32Array(w);
  const colB = new Int32Array(w);
  const colF = new Float64Array(w);
  for (let x = 0; x < w; x++) {
    const gx = Math.min(tx - 1, Math.max(0, ((x + 0.5) * tx) / w - 0.5));
    const ia = Math.max(0, Math.min(tx - 2, Math.floor(gx)));
    colA[x] = ia;
    colB[x] = Math.min(tx - 1, ia + 1);
    colF[x] = tx > 1 ? gx - ia : 0;
  }
  const rowGrid = new Float64Array(tx);
  for (let y = 0; y < h; y++) {
    const gy = Math.min(ty - 1, Math.max(0, ((y + 0.5) * ty) / h - 0.5));
    const ja = Math.max(0, Math.min(ty - 2, Math.floor(gy)));
    const jb = Math.min(ty - 1, ja + 1);
    const fy = ty > 1 ? gy - ja : 0;
    for (let i = 0; i < tx; i++) rowGrid[i] = grid[ja * tx + i]! * (1 - fy) + grid[jb * tx + i]! * fy;
    const row = y * w;
    for (let x = 0; x < w; x++) {
      const f = colF[x]!;
      data[row + x] = data[row + x]! - (rowGrid[colA[x]!]! * (1 - f) + rowGrid[colB[x]!]! * f);
    }
  }
}

/** Replaces NaN tiles by the mean of the finite ones (0 when there are none). */
function fillMissing(grid: Float64Array, tx: number, ty: number): void {
  let s = 0;
  let n = 0;
  for (let k = 0; k < tx * ty; k++) {
    if (grid[k]! === grid[k]!) {
      s += grid[k]!;
      n++;
    }
  }
  const fill = n > 0 ? s / n : 0;
  for (let k = 0; k < tx * ty; k++) if (grid[k]! !== grid[k]!) grid[k] = fill;
}

/**
 * Clip levels [median − 3σ, min(percentile, median + CLIP_SIGMAS·σ)] with σ from the MAD
 * about the median, from at most ~2¹⁷ evenly strided samples (the statistics of a
 * quarter-million-pixel proxy do not need every pixel; selection is the costly part).
 */
function clipLevels(data: Float32Array, percentile: number): { lo: number; hi: number; median: number; sigma: number } {
  const stride = Math.max(1, Math.floor(data.length / 131072));
  const finite = new Float32Array(Math.ceil(data.length / stride));
  let n = 0;
  for (let k = 0; k < data.length; k += stride) {
    const v = data[k]!;
    if (v === v) finite[n++] = v;
  }
  if (n === 0) return { lo: -Infinity, hi: Infinity, median: 0, sigma: 0 };
  const values = finite.subarray(0, n);
  const hiRank = Math.min(n - 1, Math.max(0, Math.floor((percentile / 100) * (n - 1))));
  const pHi = selectInPlace(values, hiRank);
  const median = selectInPlace(values, n >> 1);
  for (let k = 0; k < n; k++) values[k] = Math.abs(values[k]! - median);
  const sigma = MAD_TO_SIGMA * selectInPlace(values, n >> 1);
  // Never above CLIP_SIGMAS·σ (see the head comment); the percentile matters only when σ is
  // tiny (noise-free data).
  const hi = sigma > 0 ? Math.min(pHi, median + CLIP_SIGMAS * sigma) : pHi;
  return { lo: median - 3 * sigma, hi, median, sigma };
}

interface Kernel {
  r: number;
  weights: Float64Array;
  /** Factor by which the 2D blur reduces the σ of white noise: (Σw²)² in variance → Σw² in σ. */
  noiseGain: number;
}

/** Normalised Gaussian truncated at 2σ (5 taps for σ = 1; the tails do not matter here). */
function gaussianKernel(sigma: number): Kernel {
  const r = Math.max(1, Math.ceil(2 * sigma));
  const weights = new Float64Array(2 * r + 1);
  let sum = 0;
  for (let k = -r; k <= r; k++) sum += weights[k + r] = Math.exp(-(k * k) / (2 * sigma * sigma));
  let gain = 0;
  for (let k = 0; k <= 2 * r; k++) {
    weights[k] = weights[k]! / sum;
    gain += weights[k]! ** 2;
  }
  return { r, weights, noiseGain: gain };
}

/**
 * In place: clip each finite value to [lo, hi], blur with the separable kernel (NaN-aware:
 * weights renormalised over finite taps near NaN and borders; NaN stays NaN), then keep only
 * the excess over `floor` (values ≤ floor → 0). Rows go through a clipped scratch row into a
 * temporary; columns accumulate whole rows (sequential memory access in both passes).
 */
function blurClipFloor(data: Float32Array, w: number, h: number, lo: number, hi: number, floor: number, kernel: Kernel | null, hasNaN: boolean, scratch: Float32Array | null = null): void {
  const clipTo = (v: number) => (v > hi ? hi : v < lo ? lo : v);
  if (!kernel) {
    for (let k = 0; k < data.length; k++) {
      const v = data[k]!;
      if (v !== v) continue;
      const c = clipTo(v);
      data[k] = c > floor ? c - floor : 0;
    }
    return;
  }
  const { r, weights } = kernel;
  const taps = 2 * r + 1;
  // Fully written by the row pass below.
  const tmp = scratch ?? new Float32Array(w * h);
  const rowBuf = new Float32Array(w);
  // Interior range of x (and y) where all taps are inside; everything when NaN are present
  // goes through the renormalising edge path.
  const x0 = hasNaN ? w : Math.min(r, w);
  const x1 = hasNaN ? w : Math.max(x0, w - r);
  const five = taps === 5;
  const [w0, w1, w2] = [weights[0]!, weights[1]!, weights[2]!];
  // Rows: clip into rowBuf, convolve into tmp.
  for (let y = 0; y < h; y++) {
    const row = y * w;
    for (let x = 0; x < w; x++) {
      const v = data[row + x]!;
      rowBuf[x] = v > hi ? hi : v < lo ? lo : v; // NaN passes through unchanged
    }
    for (let x = 0; x < Math.min(x0, w); x++) tmp[row + x] = edgeTap(rowBuf, x, 1, Math.max(-r, -x), Math.min(r, w - 1 - x), weights, r);
    if (five) {
      // The default σ = 1 kernel, unrolled (it is symmetric: w0 = w4, w1 = w3).
      for (let x = x0; x < x1; x++) {
        tmp[row + x] = w0 * (rowBuf[x - 2]! + rowBuf[x + 2]!) + w1 * (rowBuf[x - 1]! + rowBuf[x + 1]!) + w2 * rowBuf[x]!;
      }
    } else {
      for (let x = x0; x < x1; x++) {
        let s = 0;
        const base = x - r;
        for (let k = 0; k < taps; k++) s += weights[k]! * rowBuf[base + k]!;
        tmp[row + x] = s;
      }
    }
    for (let x = Math.max(x1, x0); x < w; x++) tmp[row + x] = edgeTap(rowBuf, x, 1, Math.max(-r, -x), Math.min(r, w - 1 - x), weights, r);
  }
  // Columns: tmp → data, one output row at a time.
  const acc = new Float64Array(w);
  for (let y = 0; y < h; y++) {
    const row = y * w;
    if (!hasNaN && y >= r && y < h - r && five) {
      const a = row - 2 * w;
      const b = row - w;
      const c = row + w;
      const d = row + 2 * w;
      for (let x = 0; x < w; x++) {
        const v = w0 * (tmp[a + x]! + tmp[d + x]!) + w1 * (tmp[b + x]! + tmp[c + x]!) + w2 * tmp[row + x]!;
        data[row + x] = v > floor ? v - floor : 0;
      }
    } else if (!hasNaN && y >= r && y < h - r) {
      acc.fill(0);
      for (let k = 0; k < taps; k++) {
        const wk = weights[k]!;
        const src = (y - r + k) * w;
        for (let x = 0; x < w; x++) acc[x]! += wk * tmp[src + x]!;
      }
      for (let x = 0; x < w; x++) {
        const v = acc[x]!;
        data[row + x] = v > floor ? v - floor : 0;
      }
    } else {
      const k0 = Math.max(-r, -y);
      const k1 = Math.min(r, h - 1 - y);
      for (let x = 0; x < w; x++) {
        const v = edgeTap(tmp, row + x, w, k0, k1, weights, r);
        data[row + x] = v !== v ? NaN : v > floor ? v - floor : 0;
      }
    }
  }
}

/** One output of the blur near a border or NaN: renormalised over the finite taps. */
function edgeTap(src: Float32Array, idx: number, stride: number, k0: number, k1: number, kernel: Float64Array, r: number): number {
  if (src[idx]! !== src[idx]!) return NaN;
  let s = 0;
  let ws = 0;
  for (let k = k0; k <= k1; k++) {
    const v = src[idx + k * stride]!;
    if (v === v) {
      s += kernel[k + r]! * v;
      ws += kernel[k + r]!;
    }
  }
  return s / ws;
}

/**
 * Correlation of the reference proxy with the frame proxy warped onto it by `matrix`
 * (frame pixel → reference pixel, full-resolution coordinates).
 */
export function registrationCc(reference: CcProxy, frame: CcProxy, matrix: Readonly<Affine>, options: { minOverlap?: number } = {}): CcResult {
  const minOverlap = options.minOverlap ?? 0.05;
  const inv = invertAffine(matrix);
  if (!inv) return { ok: false, code: 'no_overlap', detail: 'the registration matrix is singular' };
  // Reference proxy (i, j) ↔ full (bR·i + (bR−1)/2, …) → frame full via inv → frame proxy.
  const bR = reference.bin;
  const bF = frame.bin;
  const oR = (bR - 1) / 2;
  const oF = (bF - 1) / 2;
  const [[a, b, c], [d, e, f]] = inv;
  // Frame proxy coordinate = (inv · (bR·i + oR, bR·j + oR) − oF) / bF, affine in (i, j).
  const ax = (a * bR) / bF;
  const bx = (b * bR) / bF;
  const cx = (a * oR + b * oR + c - oF) / bF;
  const ay = (d * bR) / bF;
  const by = (e * bR) / bF;
  const cy = (d * oR + e * oR + f - oF) / bF;
  const fw = frame.width;
  const fh = frame.height;
  const fd = frame.data;
  const rd = reference.data;
  const rw = reference.width;
  const rh = reference.height;
  // Per-tile sums: n, Σa, Σb, Σa², Σb², Σab.
  const tile = CC_TILE;
  const tx = Math.max(1, Math.ceil(rw / tile));
  const ty = Math.max(1, Math.ceil(rh / tile));
  const sums = new Float64Array(tx * ty * 6);
  let n = 0;
  // Tiny frames (a 1-pixel-wide proxy) cannot interpolate; they take the nearest pixel.
  const nearest = fw < 2 || fh < 2;
  for (let j = 0; j < rh; j++) {
    const tileRow = Math.floor(j / tile) * tx;
    // Per row the frame coordinate advances by (ax, ay) per pixel; per tile segment the
    // sums stay in locals and are flushed once.
    for (let i0 = 0; i0 < rw; i0 += tile) {
      const i1 = Math.min(rw, i0 + tile);
      let c = 0;
      let sa = 0;
      let sb = 0;
      let saa = 0;
      let sbb = 0;
      let sab = 0;
      let x = ax * i0 + bx * j + cx;
      let y = ay * i0 + by * j + cy;
      for (let i = i0; i < i1; i++, x += ax, y += ay) {
        const ra = rd[j * rw + i]!;
        if (ra !== ra) continue;
        if (!(x >= 0 && y >= 0 && x <= fw - 1 && y <= fh - 1)) continue;
        let v: number;
        if (nearest) {
          v = fd[Math.round(y) * fw + Math.round(x)]!;
        } else {
          const xi = Math.min(fw - 2, x | 0);
          const yi = Math.min(fh - 2, y | 0);
          const u = x - xi;
          const w = y - yi;
          const p = yi * fw + xi;
          const top = fd[p]! + u * (fd[p + 1]! - fd[p]!);
          const bottom = fd[p + fw]! + u * (fd[p + fw + 1]! - fd[p + fw]!);
          v = top + w * (bottom - top);
        }
        if (v !== v) continue;
        c++;
        sa += ra;
        sb += v;
        saa += ra * ra;
        sbb += v * v;
        sab += ra * v;
      }
      if (c === 0) continue;
      n += c;
      const t = (tileRow + i0 / tile) * 6;
      sums[t]! += c;
      sums[t + 1]! += sa;
      sums[t + 2]! += sb;
      sums[t + 3]! += saa;
      sums[t + 4]! += sbb;
      sums[t + 5]! += sab;
    }
  }
  const overlap = n / (rw * rh);
  if (n < 16 || overlap < minOverlap) {
    return { ok: false, code: 'no_overlap', detail: `the warped frame covers ${(100 * overlap).toFixed(1)} % of the reference (need ${(100 * minOverlap).toFixed(0)} %)` };
  }
  // Centred tile variances and covariance. Tiles whose variance one image cannot explain by
  // the other (a satellite trail, a plane, a reflection in one frame only) are capped at
  // CC_VARIANCE_CAP × the typical frame/reference variance ratio, so a local artefact lowers
  // the score only as much as the area it covers, not by its brightness.
  const nt = tx * ty;
  const va = new Float64Array(nt);
  const vb = new Float64Array(nt);
  const cv = new Float64Array(nt);
  const ratios: number[] = [];
  for (let t = 0; t < nt; t++) {
    const m = sums[t * 6]!;
    if (m < 2) continue;
    const sa = sums[t * 6 + 1]!;
    const sb = sums[t * 6 + 2]!;
    va[t] = Math.max(0, sums[t * 6 + 3]! - (sa * sa) / m);
    vb[t] = Math.max(0, sums[t * 6 + 4]! - (sb * sb) / m);
    cv[t] = sums[t * 6 + 5]! - (sa * sb) / m;
    if (va[t]! > 0 && vb[t]! > 0) ratios.push(vb[t]! / va[t]!);
  }
  if (ratios.length === 0) return { ok: false, code: 'no_signal', detail: 'one of the proxies is constant over the overlap' };
  ratios.sort((p, q) => p - q);
  const ratio = ratios[ratios.length >> 1]!;
  let sva = 0;
  let svb = 0;
  let scv = 0;
  for (let t = 0; t < nt; t++) {
    const a = va[t]!;
    const b = vb[t]!;
    if (!(a > 0 && b > 0)) {
      sva += a;
      svb += b;
      continue;
    }
    // Capping a variance is scaling that image's values in the tile: the covariance scales
    // with the square roots, which keeps every tile (and the sum) within Cauchy–Schwarz.
    const a2 = Math.min(a, (CC_VARIANCE_CAP * b) / ratio);
    const b2 = Math.min(b, CC_VARIANCE_CAP * ratio * a);
    sva += a2;
    svb += b2;
    scv += cv[t]! * Math.sqrt((a2 / a) * (b2 / b));
  }
  if (!(sva > 0 && svb > 0)) return { ok: false, code: 'no_signal', detail: 'one of the proxies is constant over the overlap' };
  const cc = Math.max(-1, Math.min(1, scv / Math.sqrt(sva * svb)));
  return { ok: true, cc, overlap };
}

