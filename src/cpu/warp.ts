// TypeScript reference for shaders/warp/*: affine resampling of a band of source rows into a
// band of output rows, with the kernels' exact contract.
//
// Geometry. Output pixel (x, y) of the full output image samples the source at
// (sx, sy) = A · (x, y, 1); pixel centres are integers, (0, 0) is the first stored pixel.
// Precision: the kernels evaluate the *displacement* (dx, dy) = (A − [I | 0]) · (x, y, 1) in
// 64-bit fixed point with 32 fractional bits (integer arithmetic on two 32-bit words in WGSL;
// exact f64 integers here): the coefficients are rounded to multiples of 2^-32 on the host,
// products and sums are exact, floor(dx) is the integer word and the fraction keeps its top 24
// bits (t = k·2^-24, exact in f32). The result is bit-identical on every device and in this
// reference, independent of fused/unfused multiply-add or compiler reassociation, and its error
// is set by the coefficient rounding alone: <= 2^-33·(|x| + |y| + 1) + 2^-24 px (~1e-6 px for a
// 4096-pixel image, any rotation; f32 absolute coordinates would carry ~2.4e-4 px). Limits:
// |a00 − 1|, |a01|, |a10|, |a11 − 1| < 4, |a02|, |a12| < 2^19, output coordinates < 2^16.
//
// No-data rules (identical in WGSL):
// - Outside the source: bilinear needs 0 <= sx <= W−1 and 0 <= sy <= H−1 (closed; no
//   extrapolation); Lanczos-3 needs the sample's nearest pixel inside the image, i.e.
//   sx in [−0.5, W−0.5) and sy in [−0.5, H−0.5) (the pixel footprints). Elsewhere: NaN, never 0.
// - Lanczos taps beyond the image edge get weight 0 and each axis's weights are renormalised
//   over the in-image taps (no edge replication, which would invent flat data).
// - Non-finite source values (NaN/±Inf) are missing taps: the result is Σ w·v / Σ w over the
//   finite taps when that Σ w >= minWeight (default 0.5), else NaN. A lone NaN pixel thus leaves
//   about one NaN output pixel instead of a 2×2 (bilinear) or 6×6 (Lanczos) hole, and the rest
//   of its neighbourhood stays usable for stacking.
// - Lanczos deringing (`clamp`): 'undershoot' (default) keeps the result from falling below the
//   smallest of the 2×2 nearest finite source pixels, which removes the dark rings that the
//   negative lobes draw around stars and hot pixels while leaving star peaks (which legitimately
//   rise above their 2×2 neighbours) and star flux untouched; 'range' also caps it at their
//   largest (no overshoot at all, but it clips peaks: −0.6% flux on a σ = 1.3 px star sampled at
//   its centre between pixels); 'off' is plain Lanczos-3. Bilinear never leaves the 2×2 range.
// - The source band must cover sourceRowsFor() of the output band (checkBandCoverage); both
//   implementations refuse a band that does not.
//
// Lanczos-3 weights: six taps floor(s)−2 … floor(s)+3, L(d) = sinc(d)·sinc(d/3), normalised to
// sum 1. Fractions within 2^-20 of an integer snap to it (exact delta weights, so identity and
// integer shifts reproduce the source exactly). Normalised Lanczos-3 reproduces constants
// exactly but a linear ramp only up to its first-moment error (<= 0.02 px; 0 at t = 0 and 1/2).
// The WGSL computes the weights with two trig calls per axis; this reference interpolates a
// 1025-entry table of exact normalised weights (fraction step 1/1024, linear in between:
// |weight error| <= 4.2e-7, Σ|error| <= 1.2e-6).

export type Affine = readonly [number, number, number, number, number, number];
export type WarpKernel = 'bilinear' | 'lanczos3';
export type WarpClamp = 'off' | 'undershoot' | 'range';

export interface WarpParams {
  /** Row-major 2×3 matrix [a00, a01, a02, a10, a11, a12]: output pixel → source pixel coordinates. */
  affine: Affine | readonly number[];
  /** Full output width (every output band spans all columns). */
  width: number;
  /** First output row of this band and the number of rows it produces. */
  y0: number;
  rows: number;
  /** Full source image size. */
  srcWidth: number;
  srcHeight: number;
  /** Source rows present in the source array or buffer: srcRows full-width rows from srcY0. */
  srcY0: number;
  srcRows: number;
  /** Lanczos-3 deringing, see the head comment. Default 'undershoot'. */
  clamp?: WarpClamp;
  /** Least summed weight of the finite taps that still gives a value (else NaN). Default 0.5, range (0, 1]. */
  minWeight?: number;
}

export const DEFAULT_MIN_WEIGHT = 0.5;
export const DEFAULT_CLAMP: WarpClamp = 'undershoot';
/** Uniform codes of the clamp modes (shared with the WGSL). */
export const CLAMP_CODE: Record<WarpClamp, number> = { off: 0, undershoot: 1, range: 2 };
/** Rows a kernel reads above (before) and below (after) iy = floor(sy); see sourceRowsFor. */
export const KERNEL_SUPPORT: Record<WarpKernel, { before: number; after: number }> = {
  bilinear: { before: 1, after: 1 },
  lanczos3: { before: 2, after: 3 },
};
/** Fractions below this (or above 1 − this) snap to the integer: 2^-20. */
export const SNAP = 2 ** -20;

/** Fixed-point unit: the displacement has 32 fractional bits. */
export const FIX = 2 ** 32;
const INV_FIX = 2 ** -32;
/** Fraction bits kept in t (t = k·2^-24 is exact in f32). */
const T_SHIFT = 2 ** 8;
const INV_T_SHIFT = 2 ** -8;
const T_UNIT = 2 ** -24;
/** SNAP in units of 2^-24. */
const SNAP_UNITS = SNAP / T_UNIT;
const T_ONE = 2 ** 24;

/** Largest output coordinate (exclusive): keeps every fixed-point product below 2^50. */
export const MAX_COORDINATE = 2 ** 16;
const MAX_LINEAR = 4;
const MAX_SHIFT = 2 ** 19;

/** The displacement as the kernels evaluate it (see the head comment). */
export interface Displacement {
  /**
   * (A − [I | 0]) rounded to integers in units of 2^-32 px, row-major [d00, d01, d02, d10, d11,
   * d12]. All sums of products with coordinates < 2^16 stay below 2^53, so f64 holds them exactly.
   */
  q: [number, number, number, number, number, number];
}

/** The fixed-point displacement coefficients of an affine matrix. */
export function displacement(affine: WarpParams['affine']): Displacement {
  if (affine.length !== 6 || !affine.every((v) => Number.isFinite(v))) throw new RangeError(`warp: affine must be 6 finite numbers, got [${affine.join(', ')}]`);
  const [a00, a01, a02, a10, a11, a12] = affine as Affine;
  const d = [a00 - 1, a01, a02, a10, a11 - 1, a12];
  d.forEach((v, i) => {
    const limit = i === 2 || i === 5 ? MAX_SHIFT : MAX_LINEAR;
    if (!(Math.abs(v) < limit)) throw new RangeError(`warp: affine [${affine.join(', ')}] is outside the supported range (|a00−1|, |a01|, |a10|, |a11−1| < ${MAX_LINEAR}; |a02|, |a12| < ${MAX_SHIFT})`);
  });
  return { q: d.map((v) => Math.round(v * FIX)) as Displacement['q'] };
}

/** Splits a fixed-point value into floor (pixels) and fraction units of 2^-24 (snapped when asked). */
function splitFixed(F: number, snap: boolean): [number, number] {
  let fl = Math.floor(F * INV_FIX);
  let k = Math.floor((F - fl * FIX) / T_SHIFT);
  if (snap) {
    if (k >= T_ONE - SNAP_UNITS) {
      fl += 1;
      k = 0;
    } else if (k < SNAP_UNITS) k = 0;
  }
  return [fl, k];
}

/**
 * The source position of output pixel (x, y) exactly as the kernels compute it: integer pixel
 * `i` and fraction `t` in [0, 1) per axis (sx = ix + tx). `snap` applies the Lanczos snapping
 * (fractions within 2^-20 of an integer become that integer).
 */
export function samplePosition(disp: Displacement, x: number, y: number, snap: boolean): { ix: number; tx: number; iy: number; ty: number } {
  const q = disp.q;
  const [fx, kx] = splitFixed(q[0] * x + (q[1] * y + q[2]), snap);
  const [fy, ky] = splitFixed(q[3] * x + (q[4] * y + q[5]), snap);
  return { ix: x + fx, tx: kx * T_UNIT, iy: y + fy, ty: ky * T_UNIT };
}

/**
 * Source rows an output band needs: every row any of its pixels' taps may read, i.e.
 * [min iy − before, max iy + after] over the band, clamped to the source image [0, height), with
 * iy = floor(sy) (after Lanczos snapping) and before/after = 2/3 for Lanczos-3 (taps iy−2 … iy+3)
 * and 1/1 for bilinear (rows iy, iy+1; iy−1 at the last image row, where the sample takes
 * fraction 1 from the row above). The fixed-point position is exactly affine, so its extremes are
 * at the band's corners. `width` is the output width, `height` the source height. rows = 0 when
 * the band maps entirely outside the source.
 */
export function sourceRowsFor(affine: WarpParams['affine'], y0: number, rows: number, width: number, height: number, kernel: WarpKernel): { y0: number; rows: number } {
  const d = displacement(affine);
  const { before, after } = KERNEL_SUPPORT[kernel];
  let lo = Infinity;
  let hi = -Infinity;
  for (const y of [y0, y0 + Math.max(rows, 1) - 1]) {
    for (const x of [0, Math.max(width, 1) - 1]) {
      const { iy } = samplePosition(d, x, y, kernel === 'lanczos3');
      lo = Math.min(lo, iy);
      hi = Math.max(hi, iy);
    }
  }
  const first = Math.max(0, lo - before);
  const last = Math.min(height - 1, hi + after);
  return last < first ? { y0: Math.min(Math.max(first, 0), height), rows: 0 } : { y0: first, rows: last - first + 1 };
}

/** Checks sizes and returns the resolved options (shared with the GPU wrapper). */
export function resolveWarpParams(p: WarpParams): { disp: Displacement; clamp: WarpClamp; minWeight: number } {
  for (const [name, v] of Object.entries({ width: p.width, y0: p.y0, rows: p.rows, srcWidth: p.srcWidth, srcHeight: p.srcHeight, srcY0: p.srcY0, srcRows: p.srcRows })) {
    if (!Number.isInteger(v) || v < 0) throw new RangeError(`warp: ${name} = ${v} must be a non-negative integer`);
  }
  if (p.width < 1 || p.srcWidth < 1 || p.srcHeight < 1) throw new RangeError('warp: image sizes must be at least 1');
  if (p.width > MAX_COORDINATE || p.y0 + p.rows > MAX_COORDINATE) throw new RangeError(`warp: output coordinates must stay below ${MAX_COORDINATE}`);
  if (p.srcY0 + p.srcRows > p.srcHeight) throw new RangeError(`warp: source band rows ${p.srcY0}..${p.srcY0 + p.srcRows} exceed the source height ${p.srcHeight}`);
  const minWeight = p.minWeight ?? DEFAULT_MIN_WEIGHT;
  if (!(minWeight > 0 && minWeight <= 1)) throw new RangeError(`warp: minWeight = ${minWeight} must be in (0, 1]`);
  const clamp = p.clamp ?? DEFAULT_CLAMP;
  if (!(clamp in CLAMP_CODE)) throw new RangeError(`warp: clamp "${clamp}" is not one of ${Object.keys(CLAMP_CODE).join(', ')}`);
  return { disp: displacement(p.affine), clamp, minWeight };
}

/**
 * Throws unless the supplied source band covers sourceRowsFor() of the output band. Both
 * implementations require this, so that a tap row inside the image is always present and
 * "missing data" only ever means non-finite values (the GPU kernels clamp row indices to the band
 * for memory safety and never test band membership per tap).
 */
export function checkBandCoverage(kernel: WarpKernel, p: WarpParams): void {
  const need = sourceRowsFor(p.affine, p.y0, p.rows, p.width, p.srcHeight, kernel);
  if (p.rows > 0 && need.rows > 0 && (need.y0 < p.srcY0 || need.y0 + need.rows > p.srcY0 + p.srcRows)) {
    throw new RangeError(
      `warp_${kernel}: output rows ${p.y0}..${p.y0 + p.rows} need source rows ${need.y0}..${need.y0 + need.rows}, but the band holds ${p.srcY0}..${p.srcY0 + p.srcRows}`,
    );
  }
}

function checkSource(kernel: WarpKernel, src: Float32Array, p: WarpParams): void {
  if (src.length < p.srcRows * p.srcWidth) throw new RangeError(`warp: source holds ${src.length} values, the band needs ${p.srcRows * p.srcWidth}`);
  checkBandCoverage(kernel, p);
}

// ---------------------------------------------------------------------------------------------
// Lanczos-3 weights

/**
 * Exact normalised Lanczos-3 weights of the taps k = −2 … 3 for fraction t in [0, 1), written to
 * out[o … o+5]. Same identities as the WGSL: with s = sin(πt/3), c = cos(πt/3),
 * sin(π(t−k)) = (−1)^k sin(πt) and sin(π(t−k)/3) = s·cos(kπ/3) − c·sin(kπ/3), the common factor
 * sin(πt)/t cancels in the normalisation and w_k ∝ n_k·t/(t−k)² with n = (B, C, A, B, C, A),
 * A = s, B = (√3/2)c − s/2 = sin(π(1−t)/3), C = −(s/2 + (√3/2)c) = −sin(π(1+t)/3).
 */
export function lanczos3Weights(t: number, out: Float64Array | number[], o = 0): void {
  if (t < SNAP) {
    for (let k = 0; k < 6; k++) out[o + k] = k === 2 ? 1 : 0;
    return;
  }
  if (t > 1 - SNAP) {
    for (let k = 0; k < 6; k++) out[o + k] = k === 3 ? 1 : 0;
    return;
  }
  const a = (Math.PI / 3) * t;
  const s = Math.sin(a);
  const c = Math.cos(a);
  const h = Math.sqrt(3) / 2;
  const nA = s * t;
  const nB = (h * c - 0.5 * s) * t;
  const nC = -(0.5 * s + h * c) * t;
  const w0 = nB / ((t + 2) * (t + 2));
  const w1 = nC / ((t + 1) * (t + 1));
  const w2 = nA / (t * t);
  const w3 = nB / ((t - 1) * (t - 1));
  const w4 = nC / ((t - 2) * (t - 2));
  const w5 = nA / ((t - 3) * (t - 3));
  const inv = 1 / (w0 + w1 + w2 + w3 + w4 + w5);
  out[o] = w0 * inv;
  out[o + 1] = w1 * inv;
  out[o + 2] = w2 * inv;
  out[o + 3] = w3 * inv;
  out[o + 4] = w4 * inv;
  out[o + 5] = w5 * inv;
}

/** Table steps per unit fraction (the brief's 1/1024 quantisation, linearly interpolated). */
export const LUT_STEPS = 1024;
let lut: Float64Array | undefined;
/** 6 weights at t = i / LUT_STEPS for i = 0 … LUT_STEPS (the last entry is the next pixel's delta). */
function lanczosTable(): Float64Array {
  if (lut) return lut;
  lut = new Float64Array((LUT_STEPS + 1) * 6);
  for (let i = 0; i <= LUT_STEPS; i++) lanczos3Weights(i / LUT_STEPS, lut, i * 6);
  return lut;
}

/** Table-interpolated weights for t in [0, 1) into out[o … o+5] (the reference's fast path). */
export function lanczos3WeightsLut(t: number, out: Float64Array, o = 0): void {
  const table = lanczosTable();
  const q = t * LUT_STEPS;
  const i = Math.min(Math.floor(q), LUT_STEPS - 1);
  const f = q - i;
  const b = i * 6;
  for (let k = 0; k < 6; k++) {
    const w = table[b + k]!;
    out[o + k] = w + f * (table[b + 6 + k]! - w);
  }
}

// ---------------------------------------------------------------------------------------------
// Bilinear

const isFinite = Number.isFinite;

/** Bilinear warp of one output band; returns rows × width values. */
export function warpBilinear(src: Float32Array, params: WarpParams): Float32Array {
  const { disp, minWeight } = resolveWarpParams(params);
  checkSource('bilinear', src, params);
  const { width, y0, rows, srcWidth: W, srcHeight: H, srcY0 } = params;
  const out = new Float32Array(rows * width);
  const xMax = Math.max(W, 2) - 2;
  const yMax = Math.max(H, 2) - 2;
  const [q00, q01, q02, q10, q11, q12] = disp.q;
  for (let r = 0; r < rows; r++) {
    const y = y0 + r;
    const o = r * width;
    // Same steps as samplePosition(…, snap = false), inlined for speed: the fixed-point values
    // are integers below 2^53, so the running sums and scalings by powers of 2 are exact.
    let Fx = q01 * y + q02;
    let Fy = q11 * y + q12;
    for (let x = 0; x < width; x++, Fx += q00, Fy += q10) {
      const kx = Math.floor(Fx * INV_T_SHIFT);
      const ky = Math.floor(Fy * INV_T_SHIFT);
      const flx = Math.floor(kx * T_UNIT);
      const fly = Math.floor(ky * T_UNIT);
      const tx = (kx - flx * T_ONE) * T_UNIT;
      const ty = (ky - fly * T_ONE) * T_UNIT;
      const ix = x + flx;
      const iy = y + fly;
      if (ix < 0 || iy < 0 || ix > W - 1 || iy > H - 1 || (ix === W - 1 && tx > 0) || (iy === H - 1 && ty > 0)) {
        out[o + x] = NaN;
        continue;
      }
      // The last column/row samples with fraction 1 from the one before (same value, no
      // extrapolation). All weights are exact in f32 (fractions are multiples of 2^-24).
      const x0 = ix < xMax ? ix : xMax;
      const yr0 = iy < yMax ? iy : yMax;
      const ux = ix - x0 + tx;
      const uy = iy - yr0 + ty;
      const x1 = x0 + 1 < W ? x0 + 1 : W - 1;
      const vx = 1 - ux;
      const vy = 1 - uy;
      // Rows yr0 and yr0 + 1 (or yr0 alone for a one-row image) lie in the covered band.
      const b0 = (yr0 - srcY0) * W;
      const b1 = yr0 + 1 < H ? b0 + W : b0;
      const p00 = src[b0 + x0]!;
      const p01 = src[b0 + x1]!;
      const p10 = src[b1 + x0]!;
      const p11 = src[b1 + x1]!;
      const v = vy * (vx * p00 + ux * p01) + uy * (vx * p10 + ux * p11);
      if (v - v === 0) {
        out[o + x] = v;
        continue;
      }
      // Non-finite taps: renormalise over the finite ones.
      let acc = 0;
      let wsum = 0;
      if (isFinite(p00)) (acc += vx * vy * p00), (wsum += vx * vy);
      if (isFinite(p01)) (acc += ux * vy * p01), (wsum += ux * vy);
      if (isFinite(p10)) (acc += vx * uy * p10), (wsum += vx * uy);
      if (isFinite(p11)) (acc += ux * uy * p11), (wsum += ux * uy);
      out[o + x] = wsum >= minWeight ? acc / wsum : NaN;
    }
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Lanczos-3

/** Lanczos-3 warp of one output band; returns rows × width values. */
export function warpLanczos3(src: Float32Array, params: WarpParams): Float32Array {
  const { disp, clamp, minWeight } = resolveWarpParams(params);
  checkSource('lanczos3', src, params);
  const { width, y0, rows, srcWidth: W, srcHeight: H, srcY0, srcRows } = params;
  const out = new Float32Array(rows * width);
  const clampLow = clamp !== 'off';
  const clampHigh = clamp === 'range';
  const bandEnd = srcY0 + srcRows;
  const table = lanczosTable();
  const wx = new Float64Array(6);
  const wy = new Float64Array(6);
  const [q00, q01, q02, q10, q11, q12] = disp.q;
  const snapHi = T_ONE - SNAP_UNITS;
  const lutScale = LUT_STEPS * T_UNIT;
  for (let r = 0; r < rows; r++) {
    const y = y0 + r;
    const o = r * width;
    // Same steps as samplePosition(…, snap = true), inlined for speed: the fixed-point values
    // are integers below 2^53, so the running sums and scalings by powers of 2 are exact.
    let Fx = q01 * y + q02;
    let Fy = q11 * y + q12;
    for (let x = 0; x < width; x++, Fx += q00, Fy += q10) {
      let kx = Math.floor(Fx * INV_T_SHIFT);
      let ky = Math.floor(Fy * INV_T_SHIFT);
      let flx = Math.floor(kx * T_UNIT);
      let fly = Math.floor(ky * T_UNIT);
      kx -= flx * T_ONE;
      ky -= fly * T_ONE;
      if (kx >= snapHi) (flx += 1), (kx = 0);
      else if (kx < SNAP_UNITS) kx = 0;
      if (ky >= snapHi) (fly += 1), (ky = 0);
      else if (ky < SNAP_UNITS) ky = 0;
      const ix = x + flx;
      const iy = y + fly;
      // Nearest pixel (fraction >= 1/2 rounds up) must be inside.
      const nx = kx >= T_ONE / 2 ? ix + 1 : ix;
      const ny = ky >= T_ONE / 2 ? iy + 1 : iy;
      if (nx < 0 || nx >= W || ny < 0 || ny >= H) {
        out[o + x] = NaN;
        continue;
      }
      // Table weights, linearly interpolated (lanczos3WeightsLut inlined).
      const qx = kx * lutScale;
      const qy = ky * lutScale;
      const ax = Math.floor(qx);
      const ay = Math.floor(qy);
      const fx = qx - ax;
      const fy = qy - ay;
      const bx = ax * 6;
      const by = ay * 6;
      let t0 = table[bx]!, t1 = table[bx + 1]!, t2 = table[bx + 2]!, t3 = table[bx + 3]!, t4 = table[bx + 4]!, t5 = table[bx + 5]!;
      const w0 = t0 + fx * (table[bx + 6]! - t0);
      const w1 = t1 + fx * (table[bx + 7]! - t1);
      const w2 = t2 + fx * (table[bx + 8]! - t2);
      const w3 = t3 + fx * (table[bx + 9]! - t3);
      const w4 = t4 + fx * (table[bx + 10]! - t4);
      const w5 = t5 + fx * (table[bx + 11]! - t5);
      (t0 = table[by]!), (t1 = table[by + 1]!), (t2 = table[by + 2]!), (t3 = table[by + 3]!), (t4 = table[by + 4]!), (t5 = table[by + 5]!);
      const v0 = t0 + fy * (table[by + 6]! - t0);
      const v1 = t1 + fy * (table[by + 7]! - t1);
      const v2 = t2 + fy * (table[by + 8]! - t2);
      const v3 = t3 + fy * (table[by + 9]! - t3);
      const v4 = t4 + fy * (table[by + 10]! - t4);
      const v5 = t5 + fy * (table[by + 11]! - t5);
      if (ix >= 2 && ix + 3 < W && iy - 2 >= srcY0 && iy + 3 < bandEnd) {
        const b0 = (iy - 2 - srcY0) * W + ix - 2;
        const b1 = b0 + W;
        const b2 = b1 + W;
        const b3 = b2 + W;
        const b4 = b3 + W;
        const b5 = b4 + W;
        const p22 = src[b2 + 2]!;
        const p23 = src[b2 + 3]!;
        const p32 = src[b3 + 2]!;
        const p33 = src[b3 + 3]!;
        let acc =
          v0 * (w0 * src[b0]! + w1 * src[b0 + 1]! + w2 * src[b0 + 2]! + w3 * src[b0 + 3]! + w4 * src[b0 + 4]! + w5 * src[b0 + 5]!) +
          v1 * (w0 * src[b1]! + w1 * src[b1 + 1]! + w2 * src[b1 + 2]! + w3 * src[b1 + 3]! + w4 * src[b1 + 4]! + w5 * src[b1 + 5]!) +
          v2 * (w0 * src[b2]! + w1 * src[b2 + 1]! + w2 * p22 + w3 * p23 + w4 * src[b2 + 4]! + w5 * src[b2 + 5]!) +
          v3 * (w0 * src[b3]! + w1 * src[b3 + 1]! + w2 * p32 + w3 * p33 + w4 * src[b3 + 4]! + w5 * src[b3 + 5]!) +
          v4 * (w0 * src[b4]! + w1 * src[b4 + 1]! + w2 * src[b4 + 2]! + w3 * src[b4 + 3]! + w4 * src[b4 + 4]! + w5 * src[b4 + 5]!) +
          v5 * (w0 * src[b5]! + w1 * src[b5 + 1]! + w2 * src[b5 + 2]! + w3 * src[b5 + 3]! + w4 * src[b5 + 4]! + w5 * src[b5 + 5]!);
        // A finite sum means all 36 taps were finite (0·NaN is NaN).
        if (acc - acc === 0) {
          if (clampLow) {
            const lo = Math.min(p22, p23, p32, p33);
            if (acc < lo) acc = lo;
          }
          if (clampHigh) {
            const hi = Math.max(p22, p23, p32, p33);
            if (acc > hi) acc = hi;
          }
          out[o + x] = acc;
          continue;
        }
      }
      (wx[0] = w0), (wx[1] = w1), (wx[2] = w2), (wx[3] = w3), (wx[4] = w4), (wx[5] = w5);
      (wy[0] = v0), (wy[1] = v1), (wy[2] = v2), (wy[3] = v3), (wy[4] = v4), (wy[5] = v5);
      out[o + x] = lanczosSlow(src, ix, iy, wx, wy, W, H, srcY0, bandEnd, clampLow, clampHigh, minWeight);
    }
  }
  return out;
}

/** Border renormalisation per axis, then renormalisation over usable taps (see head comment). */
function lanczosSlow(src: Float32Array, ix: number, iy: number, wx: Float64Array, wy: Float64Array, W: number, H: number, srcY0: number, bandEnd: number, clampLow: boolean, clampHigh: boolean, minWeight: number): number {
  let sx = 0;
  let sy = 0;
  for (let k = 0; k < 6; k++) {
    const c = ix - 2 + k;
    if (c < 0 || c >= W) wx[k] = 0;
    sx += wx[k]!;
    const rr = iy - 2 + k;
    if (rr < 0 || rr >= H) wy[k] = 0;
    sy += wy[k]!;
  }
  let acc = 0;
  let wsum = 0;
  let lo = Infinity;
  let hi = -Infinity;
  for (let j = 0; j < 6; j++) {
    const rr = iy - 2 + j;
    if (rr < srcY0 || rr >= bandEnd) continue;
    const wyj = wy[j]! / sy;
    for (let i = 0; i < 6; i++) {
      const c = ix - 2 + i;
      if (c < 0 || c >= W) continue;
      const v = src[(rr - srcY0) * W + c]!;
      if (!isFinite(v)) continue;
      const w = (wx[i]! / sx) * wyj;
      acc += w * v;
      wsum += w;
      if ((i === 2 || i === 3) && (j === 2 || j === 3)) {
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
    }
  }
  if (!(wsum >= minWeight)) return NaN;
  let v = acc / wsum;
  if (lo <= hi) {
    if (clampLow && v < lo) v = lo;
    if (clampHigh && v > hi) v = hi;
  }
  return v;
}

// ---------------------------------------------------------------------------------------------
// Separable Lanczos-3 (two 1-D passes) for near-identity transforms
//
// The affine map is split into a row pass and a column pass (the standard decomposition into two
// 1-D resamplings): the row pass samples source row v at u(x, v), the point of that row which
// output column x maps to (u = sx where sy = v: u = b00·x + b01·v + b02 with b01 = a01/a11,
// b00 = a00 − a01·a10/a11, b02 = a02 − a01·a12/a11), into an intermediate band at the output's
// columns; the column pass samples column x of it at the 2-D kernel's exact sy. Six taps per
// pass instead of 36, and each pass shares its window between 8 pixels (shaders/warp/
// lanczos3_rows.wgsl, lanczos3_cols.wgsl). Same rules as the 2-D kernel: positions in fixed
// point (the row pass's u with coefficients rounded to 2^-32 like D's), NaN where (sx, sy)'s
// nearest pixel is outside the source, per-axis edge renormalisation, non-finite taps dropped
// with the 2-D rule (the row pass keeps Σ w·v over the finite taps and Σ w over the dropped
// ones, in 2^-20 steps; the column pass combines them into exactly the 2-D sums' form), and the
// 'undershoot' deringing against the finite nearest pairs of the two nearest rows (each row's
// pair around its own u, which differs from sx by at most |a01/a11| px; a row with a dropped
// tap contributes no pair); 'range' deringing takes the 2-D kernel. The result differs from the
// 2-D kernel's only in that row v's taps sit at u(x, v) instead of sx (a shear of |a01/a11| px
// per row): both are Lanczos-3 interpolations of the same samples, with the same error against
// an analytic star field, flux, FWHM and noise (bench/warp-accuracy.ts, bench/RESULTS.md); a
// pixel whose dropped weight sits at min_weight may turn NaN in one and not the other.
//
// Intermediate layout: irows × width; column x's row r holds source row blockBase(x & ~7) + r,
// where blockBase is two rows above the lowest snapped floor(sy) on output row y0 over the
// 8-column block (so an 8-column row-pass group reads one source row).

/** Largest |a01| and |a10| the separable path takes (~2° of rotation; see separableValid). */
export const SEPARABLE_MAX_SHEAR = 0.035;
/** Pixels per group of either pass (the shared-window width). */
const SEP_GROUP = 8;

/** Row-pass displacement u − x = e00·x + e01·(v + 8) + e02 in units of 2^-32 px. */
export function separableRowDisplacement(affine: WarpParams['affine']): [number, number, number] {
  displacement(affine);
  const [a00, a01, a02, a10, a11, a12] = affine as Affine;
  const b01 = a01 / a11;
  const e00 = Math.round((a00 - b01 * a10 - 1) * FIX);
  const e01 = Math.round(b01 * FIX);
  const e02 = Math.round((a02 - b01 * a12) * FIX) - 8 * e01;
  return [e00, e01, e02];
}

/**
 * Whether the separable path applies (the wrapper falls back to the 2-D kernel otherwise):
 * |a01|, |a10| <= SEPARABLE_MAX_SHEAR (near-identity: the two-pass result stays within the
 * 2-D kernel's accuracy, measured up to 2°), and both passes' 8-pixel groups fit their 14-tap
 * windows and the 8-column blocks share a base row: 7·|a10|, 7·|u's x-step − 1|, 7·|a11 − 1|
 * below 1 (less the snapping), so no flips, no large scale changes.
 */
export function separableValid(params: Pick<WarpParams, 'affine' | 'clamp'>): boolean {
  if (params.clamp === 'range') return false;
  const [, a01, , a10] = params.affine as Affine;
  if (!(Math.abs(a01) <= SEPARABLE_MAX_SHEAR && Math.abs(a10) <= SEPARABLE_MAX_SHEAR)) return false;
  const q = displacement(params.affine).q;
  const e = separableRowDisplacement(params.affine);
  const ok = (v: number) => (SEP_GROUP - 1) * Math.abs(v / FIX) + 2 * SNAP < 1;
  return ok(q[3]) && ok(q[4]) && ok(e[0]);
}

/** Intermediate rows per column for an output band of `rows` rows (see the bound in the head comment of lanczos3_cols' wrapper). */
export function separableRows(affine: WarpParams['affine'], rows: number): number {
  const q11 = displacement(affine).q[4];
  // Taps of output row y0 + i lie at most i·(1 + |d11|) + 1 rows below row y0's, which lie at
  // most 3 rows below the block's base (one for the block, two for the taps above), plus 3 taps below.
  return rows + Math.ceil(Math.max(rows - 1, 0) * Math.abs(q11 / FIX)) + 8;
}

/** Snapped floor of the fixed-point value F (pixels), as split_snap in WGSL. */
function floorSnapped(F: number): number {
  return splitFixed(F, true)[0];
}

/** First source row of the intermediate for the 8-column block from xb (block_base in WGSL). */
export function blockBase(disp: Displacement, xb: number, width: number, y0: number): number {
  const q = disp.q;
  const xe = Math.min(xb + SEP_GROUP - 1, width - 1);
  const c = q[4] * y0 + q[5];
  return y0 + Math.min(floorSnapped(q[3] * xb + c), floorSnapped(q[3] * xe + c)) - 2;
}

/**
 * Separable Lanczos-3 warp of one output band (the two passes of shaders/warp/lanczos3_rows.wgsl
 * and lanczos3_cols.wgsl, in f64 with exact weights); requires separableValid(params).
 */
export function warpLanczos3Separable(src: Float32Array, params: WarpParams): Float32Array {
  const { disp, clamp, minWeight } = resolveWarpParams(params);
  checkSource('lanczos3', src, params);
  if (!separableValid(params)) throw new RangeError(`warp: the separable Lanczos path does not apply to [${params.affine.join(', ')}] (separableValid)`);
  const { width, y0, rows, srcWidth: W, srcHeight: H, srcY0, srcRows } = params;
  const out = new Float32Array(rows * width);
  if (rows === 0) return out;
  const irows = separableRows(params.affine, rows);
  const [e00, e01, e02] = separableRowDisplacement(params.affine);
  const acc = new Float64Array(irows * width);
  const miss = new Float64Array(irows * width);
  const lo = new Float64Array(irows * width).fill(Infinity);
  const w = new Float64Array(6);
  // Row pass.
  for (let xb = 0; xb < width; xb += SEP_GROUP) {
    const base = blockBase(disp, xb, width, y0);
    for (let r = 0; r < irows; r++) {
      const v = base + r;
      if (v < 0 || v >= H) continue; // weight 0 in the column pass; out of the nearest pairs
      const rb = (Math.min(Math.max(v - srcY0, 0), Math.max(srcRows - 1, 0))) * W;
      for (let x = xb; x < Math.min(xb + SEP_GROUP, width); x++) {
        const [fl, k] = splitFixed(e00 * x + e01 * (v + 8) + e02, true);
        const ix = x + fl;
        lanczos3Weights(k * T_UNIT, w);
        edgeWeights(w, ix - 2, W);
        let a = 0;
        let m = 0;
        for (let j = 0; j < 6; j++) {
          const val = src[rb + Math.min(Math.max(ix - 2 + j, 0), W - 1)]!;
          if (isFinite(val)) a += w[j]! * val;
          else m += w[j]!;
        }
        const i = r * width + x;
        acc[i] = a;
        // The kernels carry the dropped weight in 2^-20 steps and keep no minimum beside it.
        miss[i] = Math.sign(m) * Math.round(Math.min(Math.abs(m), 1.99) * 2 ** 20) * 2 ** -20;
        if (m !== 0) continue;
        for (let c = ix; c <= ix + 1; c++) {
          const val = src[rb + Math.min(Math.max(c, 0), W - 1)]!;
          if (isFinite(val)) lo[i] = Math.min(lo[i]!, val);
        }
      }
    }
  }
  // Column pass ('range' deringing never comes here: separableValid).
  const clampLow = clamp !== 'off';
  const bases = new Int32Array(Math.ceil(width / SEP_GROUP));
  for (let b = 0; b < bases.length; b++) bases[b] = blockBase(disp, b * SEP_GROUP, width, y0);
  for (let r = 0; r < rows; r++) {
    for (let x = 0; x < width; x++) {
      const base = bases[x >> 3]!;
      const { ix, tx, iy, ty } = samplePosition(disp, x, y0 + r, true);
      const nx = tx >= 0.5 ? ix + 1 : ix;
      const ny = ty >= 0.5 ? iy + 1 : iy;
      if (nx < 0 || nx >= W || ny < 0 || ny >= H) {
        out[r * width + x] = NaN;
        continue;
      }
      lanczos3Weights(ty, w);
      edgeWeights(w, iy - 2, H);
      let a = 0;
      let m = 0;
      const j0 = iy - 2 - base;
      for (let j = 0; j < 6; j++) {
        if (w[j] === 0) continue;
        const i = (j0 + j) * width + x;
        a += w[j]! * acc[i]!;
        m += w[j]! * miss[i]!;
      }
      const n0 = (j0 + 2) * width + x;
      const l = Math.min(lo[n0]!, lo[n0 + width]!);
      let val: number;
      if (m !== 0 && !(1 - m >= minWeight)) val = NaN;
      else {
        val = m === 0 ? a : a / (1 - m);
        if (clampLow && l !== Infinity && val < l) val = l; // Infinity: no finite nearest pixel
      }
      out[r * width + x] = val;
    }
  }
  return out;
}

/** Zeroes the weights of taps first … first+5 outside [0, n) and renormalises the rest. */
function edgeWeights(w: Float64Array, first: number, n: number): void {
  if (first >= 0 && first + 5 < n) return;
  let s = 0;
  for (let j = 0; j < 6; j++) {
    if (first + j < 0 || first + j >= n) w[j] = 0;
    s += w[j]!;
  }
  for (let j = 0; j < 6; j++) w[j] = w[j]! / s;
}

/** Dispatches on the kernel name (used by callers that pick the method from configuration). */
export function warp(kernel: WarpKernel, src: Float32Array, params: WarpParams): Float32Array {
  return kernel === 'bilinear' ? warpBilinear(src, params) : warpLanczos3(src, params);
}
