// TypeScript reference for shaders/stack/stack.wgsl: per-pixel stacking of N frames of one band
// (frame-major: frame f, row r, column x at (f * rows + r) * width + x) with per-frame
// normalisation, rejection and a weighted mean of the survivors. Same contract as the kernel:
// - normalised sample v' = v * scale[f] + offset[f] rounded to f32 (the product is exact in f64,
//   so this is the fused result); NaN = no data, ignored by every sum, count, bound and median;
// - none | sigma | winsor | median exactly as described in the shader's head comment
//   (sigma: weighted-mean centre, weighted population sigma of the survivors, cumulative bounds,
//   min_keep = max(1, ceil(f32(min_fraction) * valid)) computed in f32 like the shader);
// - outputs: f32 mean (NaN where no survivor carries weight), survivor count, per-frame
//   low/high rejected-sample counts (exact; sum over frames = sum over pixels of valid - count).
// Arithmetic is f64 here (f32 on the device): the two can disagree only where a sample sits
// within rounding distance of a rejection bound; test/gpu/stack.test.ts measures how often.
// Written for speed: typed-array scratch reused across pixels, no allocation per pixel, and the
// sigma loop leaves a pixel as soon as an iteration rejects nothing new (a fixed point).

import { selectInPlace } from '../algorithms/robust-stats.js';

export type StackMethod = 'none' | 'sigma' | 'winsor' | 'median';
export const STACK_METHODS: readonly StackMethod[] = ['none', 'sigma', 'winsor', 'median'];

export interface StackParams {
  /** Pixels per row. */
  width: number;
  /** Rows of the band. */
  rows: number;
  /** Frames N in the input. */
  frames: number;
  method: StackMethod;
  /** Kappa below / above the centre (sigma, winsor). */
  low: number;
  high: number;
  /** sigma: most clipping iterations; winsor: winsorization steps. */
  maxIters: number;
  /** Clipping stops rather than leave fewer than ceil(minFraction * valid) samples (at least 1). */
  minFraction: number;
  /** Per-frame normalisation v * scale + offset (default 1 and 0). */
  scale?: ArrayLike<number>;
  offset?: ArrayLike<number>;
  /** Per-frame weights, >= 0 (default 1). */
  weight?: ArrayLike<number>;
  /** winsor: samples beyond m +- winsorK * sigma are replaced by the bound (default 1.5, Huber's constant). */
  winsorK?: number;
}

export interface StackResult {
  /** Weighted mean of the survivors per pixel (median for `median`), NaN where undefined. */
  mean: Float32Array;
  /** Surviving samples per pixel (valid samples for none/median). */
  count: Uint32Array;
  /** Per frame: samples rejected below / above the bounds. */
  rejectedLow: Uint32Array;
  rejectedHigh: Uint32Array;
}

export const METHOD_CODE: Record<StackMethod, number> = { none: 0, sigma: 1, winsor: 2, median: 3 };

/** Per-frame parameters with defaults filled in and validated. */
export interface FrameParams {
  scale: Float64Array;
  offset: Float64Array;
  weight: Float64Array;
}

export function frameParams(p: StackParams): FrameParams {
  const n = p.frames;
  const take = (a: ArrayLike<number> | undefined, name: string, dflt: number): Float64Array => {
    const out = new Float64Array(n).fill(dflt);
    if (a === undefined) return out;
    if (a.length !== n) throw new RangeError(`stack: ${name} has ${a.length} entries for ${n} frames`);
    for (let f = 0; f < n; f++) {
      const x = a[f]!;
      if (!Number.isFinite(x)) throw new RangeError(`stack: ${name}[${f}] = ${x} is not finite`);
      out[f] = Math.fround(x); // the device holds them as f32
    }
    return out;
  };
  const weight = take(p.weight, 'weight', 1);
  for (let f = 0; f < n; f++) if (weight[f]! < 0) throw new RangeError(`stack: weight[${f}] = ${weight[f]} is negative`);
  return { scale: take(p.scale, 'scale', 1), offset: take(p.offset, 'offset', 0), weight };
}

export function validateStackParams(p: StackParams, inputLength?: number): void {
  for (const [name, v] of Object.entries({ width: p.width, rows: p.rows, frames: p.frames })) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`stack: ${name} = ${v} must be a positive integer`);
  }
  if (!(p.method in METHOD_CODE)) throw new RangeError(`stack: unknown method "${p.method}"`);
  if (!(p.low > 0) || !(p.high > 0) || !Number.isFinite(p.low) || !Number.isFinite(p.high)) throw new RangeError('stack: low and high must be finite and > 0');
  if (!Number.isInteger(p.maxIters) || p.maxIters < 0) throw new RangeError(`stack: maxIters = ${p.maxIters} must be an integer >= 0`);
  if (!(p.minFraction >= 0 && p.minFraction <= 1)) throw new RangeError(`stack: minFraction = ${p.minFraction} must lie in [0, 1]`);
  const wk = p.winsorK ?? 1.5;
  if (!(wk > 0) || !Number.isFinite(wk)) throw new RangeError(`stack: winsorK = ${wk} must be finite and > 0`);
  if (inputLength !== undefined && inputLength < p.frames * p.rows * p.width) {
    throw new RangeError(`stack: input holds ${inputLength} samples, need ${p.frames} x ${p.rows} x ${p.width}`);
  }
}

/** erf from Numerical Recipes' Chebyshev fit of erfc (fractional error < 1.2e-7; ample for a correction factor). */
function erf(x: number): number {
  const z = Math.abs(x);
  const t = 1 / (1 + 0.5 * z);
  const r =
    t *
    Math.exp(
      -z * z -
        1.26551223 +
        t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277)))))))),
    );
  return x >= 0 ? 1 - r : r - 1;
}

/**
 * Consistency factor for the sigma of a winsorized Gaussian: 1 / sqrt(E[clamp(Z, -k, k)^2])
 * for standard normal Z (1.1335 for k = 1.5; Siril rounds it to 1.134).
 */
export function winsorCorrection(k: number): number {
  const phi = Math.exp(-0.5 * k * k) / Math.sqrt(2 * Math.PI);
  const Phi = 0.5 * (1 + erf(k / Math.SQRT2));
  const e = 2 * Phi - 1 - 2 * k * phi + 2 * k * k * (1 - Phi);
  return 1 / Math.sqrt(e);
}

/** max(1, ceil(minFraction * n)) with the product rounded to f32, as the shader computes it. */
export function minKeep(n: number, minFraction32: number): number {
  return Math.max(1, Math.ceil(Math.fround(n * minFraction32)));
}

/** Samples per tile: the tile of normalised samples (f32) stays well inside a 32 KiB L1 cache. */
const TILE_SAMPLES = 4096;

/** What the per-method chunk functions share; unpacked into locals before their loops. */
interface Work {
  n: number;
  /** Stride between one pixel's samples in the tile (pixels per chunk). */
  chunk: number;
  weight: Float64Array;
  kl: number;
  kh: number;
  mf: number;
  maxIters: number;
  wk: number;
  wc: number;
  mean: Float32Array;
  count: Uint32Array;
  low: Uint32Array;
  high: Uint32Array;
  scratch: Float64Array;
  /** Valid-sample statistics of the current pixel: count, sum w, then centre and sigma. */
  acc: Float64Array;
}

/** Stacks `frames` (frame-major, f32) per the contract above. */
export function stack(frames: Float32Array, p: StackParams): StackResult {
  validateStackParams(p, frames.length);
  const { width, rows, frames: n } = p;
  const { scale, offset, weight } = frameParams(p);
  const plane = width * rows;
  // Pixels are taken a row chunk at a time: first the chunk's samples are normalised frame by
  // frame into `tile` (tile[f * chunk + t], rounded to f32 by the store like the device's
  // samples), then each pixel runs its passes over its N samples at stride `chunk`. The
  // normalisation runs as one tight loop per frame, and every later pass reads L1-resident data.
  // One function per method keeps each hot loop small with complete type feedback (one large
  // function was deoptimised again and again by V8).
  const chunk = Math.max(1, Math.min(width, Math.floor(TILE_SAMPLES / n)));
  const tile = new Float32Array(chunk * n);
  const w: Work = {
    n,
    chunk,
    weight,
    kl: Math.fround(p.low),
    kh: Math.fround(p.high),
    mf: Math.fround(p.minFraction),
    maxIters: p.maxIters,
    wk: Math.fround(p.winsorK ?? 1.5),
    wc: Math.fround(winsorCorrection(p.winsorK ?? 1.5)),
    mean: new Float32Array(plane),
    count: new Uint32Array(plane),
    low: new Uint32Array(n),
    high: new Uint32Array(n),
    scratch: new Float64Array(n),
    acc: new Float64Array(4),
  };
  const run = { none: chunkNone, sigma: chunkSigma, winsor: chunkWinsor, median: chunkMedian }[p.method];
  for (let r = 0; r < rows; r++) {
    for (let x0 = 0; x0 < width; x0 += chunk) {
      const len = Math.min(chunk, width - x0);
      const row0 = r * width + x0;
      for (let f = 0; f < n; f++) {
        const sc = scale[f]!;
        const of = offset[f]!;
        const from = f * plane + row0;
        const to = f * chunk;
        for (let t = 0; t < len; t++) tile[to + t] = frames[from + t]! * sc + of; // rounded to f32 by the store
      }
      run(tile, len, row0, w);
    }
  }
  return { mean: w.mean, count: w.count, rejectedLow: w.low, rejectedHigh: w.high };
}

/**
 * Valid samples of the pixel at tile[t + f * chunk]: acc = [count, sum w, weighted mean,
 * weighted population sigma]. One pass, moments about the first valid sample (f64 leaves no
 * cancellation worth noting; the shader uses two passes in f32).
 */
function validStats(tile: Float32Array, t: number, n: number, chunk: number, weight: Float64Array, acc: Float64Array): void {
  const e = t + n * chunk;
  let pivot = tile[t]!;
  for (let j = t + chunk; pivot !== pivot && j < e; j += chunk) pivot = tile[j]!;
  let nv = 0;
  let sw = 0;
  let sd = 0;
  let sd2 = 0;
  for (let j = t, f = 0; j < e; j += chunk, f++) {
    const x = tile[j]!;
    if (x === x) {
      const w = weight[f]!;
      const d = x - pivot;
      nv++;
      sw += w;
      sd += w * d;
      sd2 += w * d * d;
    }
  }
  const mu = sd / sw;
  acc[0] = nv;
  acc[1] = sw;
  acc[2] = pivot + mu;
  acc[3] = Math.sqrt(Math.max(sd2 / sw - mu * mu, 0));
}

/** Adds the pixel's samples below lo / above hi to the per-frame rejection counts. */
function tally(tile: Float32Array, t: number, n: number, chunk: number, lo: number, hi: number, low: Uint32Array, high: Uint32Array): void {
  for (let j = t, f = 0; f < n; j += chunk, f++) {
    const x = tile[j]!;
    if (x < lo) low[f]!++;
    else if (x > hi) high[f]!++;
  }
}

function chunkNone(tile: Float32Array, len: number, i0: number, w: Work): void {
  const { n, chunk, weight, mean, count, acc } = w;
  for (let t = 0; t < len; t++) {
    validStats(tile, t, n, chunk, weight, acc);
    mean[i0 + t] = acc[0]! > 0 && acc[1]! > 0 ? acc[2]! : NaN;
    count[i0 + t] = acc[0]!;
  }
}

function chunkMedian(tile: Float32Array, len: number, i0: number, w: Work): void {
  const { n, chunk, mean, count, scratch, acc } = w;
  for (let t = 0; t < len; t++) {
    mean[i0 + t] = medianOf(tile, t, chunk, n, scratch, acc);
    count[i0 + t] = acc[0]!;
  }
}

function chunkSigma(tile: Float32Array, len: number, i0: number, w: Work): void {
  const { n, chunk, weight, kl, kh, mf, maxIters, mean, count, low, high, acc } = w;
  for (let t = 0; t < len; t++) {
    validStats(tile, t, n, chunk, weight, acc);
    const nv = acc[0]!;
    const valid = nv > 0 && acc[1]! > 0;
    let m = acc[2]!;
    let s = acc[3]!;
    const keep = minKeep(nv, mf);
    const e = t + n * chunk;
    let lo = -Infinity;
    let hi = Infinity;
    let cn = nv;
    // One pass per iteration: moments of the candidate set about the current centre give the
    // new centre and the next sigma (the shader does the same in f32).
    for (let it = 0; it < maxIters; it++) {
      const lc0 = m - kl * s;
      const hc0 = m + kh * s;
      // NaN-safe cumulative bounds: a NaN candidate keeps the old bound, as in the shader.
      const lc = lc0 > lo ? lc0 : lo;
      const hc = hc0 < hi ? hc0 : hi;
      let c = 0;
      let cw = 0;
      let sd = 0;
      let sd2 = 0;
      for (let j = t, f = 0; j < e; j += chunk, f++) {
        const x = tile[j]!;
        if (x >= lc && x <= hc) {
          const wf = weight[f]!;
          const d = x - m;
          c++;
          cw += wf;
          sd += wf * d;
          sd2 += wf * d * d;
        }
      }
      if (!(c >= keep && cw > 0)) break; // refused: the state, hence every later iteration, stays
      const changed = c !== cn;
      const mu = sd / cw;
      lo = lc;
      hi = hc;
      cn = c;
      m += mu;
      s = Math.sqrt(Math.max(sd2 / cw - mu * mu, 0));
      if (!changed) break; // a subset of equal size is the same set: a fixed point
    }
    mean[i0 + t] = valid ? m : NaN;
    count[i0 + t] = cn;
    if (cn < nv) tally(tile, t, n, chunk, lo, hi, low, high);
  }
}

function chunkWinsor(tile: Float32Array, len: number, i0: number, w: Work): void {
  const { n, chunk, weight, kl, kh, mf, maxIters, wk, wc, mean, count, low, high, acc } = w;
  for (let t = 0; t < len; t++) {
    validStats(tile, t, n, chunk, weight, acc);
    const nv = acc[0]!;
    const sw = acc[1]!;
    const valid = nv > 0 && sw > 0;
    const m0 = acc[2]!;
    let m = m0;
    let s = acc[3]!;
    const e = t + n * chunk;
    // Robust centre and sigma by winsorization (one pass per step: moments of the clamped
    // samples about the current centre), then one rejection.
    for (let it = 0; it < maxIters; it++) {
      const wl = m - wk * s;
      const wh = m + wk * s;
      let sd = 0;
      let sd2 = 0;
      for (let j = t, f = 0; j < e; j += chunk, f++) {
        const x = tile[j]!;
        if (x === x) {
          const d = Math.min(Math.max(x, wl), wh) - m;
          const wf = weight[f]!;
          sd += wf * d;
          sd2 += wf * d * d;
        }
      }
      const mu = sd / sw;
      s = wc * Math.sqrt(Math.max(sd2 / sw - mu * mu, 0));
      m += mu;
    }
    const lc = m - kl * s;
    const hc = m + kh * s;
    let c = 0;
    let cw = 0;
    let cwv = 0;
    for (let j = t, f = 0; j < e; j += chunk, f++) {
      const x = tile[j]!;
      if (x >= lc && x <= hc) {
        const wf = weight[f]!;
        c++;
        cw += wf;
        cwv += wf * x;
      }
    }
    if (c >= minKeep(nv, mf) && cw > 0) {
      mean[i0 + t] = cwv / cw;
      count[i0 + t] = c;
      if (c < nv) tally(tile, t, n, chunk, lc, hc, low, high);
    } else {
      mean[i0 + t] = valid ? m0 : NaN;
      count[i0 + t] = nv;
    }
  }
}

/**
 * Median of the valid samples tile[b + f * stride], f < n, whose count goes to acc[0] (mean of the two middle ones, in f32 like the
 * shader's (a + b) * 0.5), NaN when none is valid. Partial selection in `scratch`, no allocation.
 */
function medianOf(tile: Float32Array, b: number, stride: number, n: number, scratch: Float64Array, acc: Float64Array): number {
  let k = 0;
  for (let j = b, e = b + n * stride; j < e; j += stride) {
    const x = tile[j]!;
    if (x === x) scratch[k++] = x;
  }
  acc[0] = k;
  if (k === 0) return NaN;
  const lo = (k - 1) >> 1;
  const a = selectInPlace(scratch, lo, 0, k - 1);
  let c = a;
  if ((k & 1) === 0) {
    // After the selection, everything right of `lo` is >= a: the upper middle is their minimum.
    c = Infinity;
    for (let j = lo + 1; j < k; j++) if (scratch[j]! < c) c = scratch[j]!;
  }
  return Math.fround(Math.fround(a + c) * 0.5);
}

/** A stack taken one pixel at a time, with weights the caller sets before each pixel (stack-weightfield.ts). */
export interface PixelStacker {
  /** The pixel's normalised samples, frame by frame (the caller fills it). */
  readonly tile: Float32Array;
  /** Per-frame weights of the next pixel (the caller fills it; >= 0). */
  readonly weight: Float64Array;
  readonly scale: Float64Array;
  readonly offset: Float64Array;
  /** Runs the method on `tile` with `weight` and stores the result at output pixel i. */
  pixel(i: number): void;
  result(): StackResult;
}

/**
 * The same method code as stack(), driven pixel by pixel (a chunk of one pixel): for stacks whose
 * weights vary per pixel. Outputs and tallies follow stack()'s contract.
 */
export function pixelStacker(p: StackParams): PixelStacker {
  validateStackParams(p);
  const { width, rows, frames: n } = p;
  const { scale, offset } = frameParams(p);
  const tile = new Float32Array(n);
  const w: Work = {
    n,
    chunk: 1,
    weight: new Float64Array(n).fill(1),
    kl: Math.fround(p.low),
    kh: Math.fround(p.high),
    mf: Math.fround(p.minFraction),
    maxIters: p.maxIters,
    wk: Math.fround(p.winsorK ?? 1.5),
    wc: Math.fround(winsorCorrection(p.winsorK ?? 1.5)),
    mean: new Float32Array(width * rows),
    count: new Uint32Array(width * rows),
    low: new Uint32Array(n),
    high: new Uint32Array(n),
    scratch: new Float64Array(n),
    acc: new Float64Array(4),
  };
  const run = { none: chunkNone, sigma: chunkSigma, winsor: chunkWinsor, median: chunkMedian }[p.method];
  return {
    tile,
    weight: w.weight,
    scale,
    offset,
    pixel: (i) => run(tile, 1, i, w),
    result: () => ({ mean: w.mean, count: w.count, rejectedLow: w.low, rejectedHigh: w.high }),
  };
}
