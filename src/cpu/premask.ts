// Outlier pre-mask of STACKING (before rejection.method sigma or winsor): masks satellite and
// aircraft trails, cosmic rays and hot pixels as NaN, grown by GROW px, so that the configured
// rejection and the weighted mean never see them.
// Why: the stack kernel's sigma clipping is centred on the mean of the samples it is clipping.
// A single outlier among N samples then lies at most (N − 1)/√N σ from that centre, i.e. below
// 3σ for N ≤ 10: with the few frames of a short session a satellite trail is never rejected.
// Even where samples are rejected, a trail's faint wings stay below any per-pixel threshold and
// print a line at ~κσ/N. A robust centre and spatial growth fix both.
// Rule, per band and channel (samples normalised, v' = v·scale + offset):
//   M      = per-pixel median over the frames (the stack kernel's median method, first pass);
//   seed   = frame sample with v' − M > κ_high·σ_f + α·|M − L|   (high)
//                          or M − v' > κ_low·σ_f  + α·|M − L|   (low),
//            κ = rejection.high / rejection.low, σ_f = the frame's pixel noise (normalised),
//            L = the reference's level, α = ALPHA: tolerance for star profiles, which differ
//            from frame to frame by seeing (a few tens of percent of the star's height);
//   grow   = every sample of the same frame within GROW px (Chebyshev) of a STRONG seed (one
//            beyond twice the seed threshold) is masked too, tagged like the first strong seed
//            (raster order) that reaches it. Strong seeds are trails' and cosmic rays' cores,
//            never noise (a 6σ deviate in ~1e-9 samples); growing around every seed would also
//            grow the 0.3 % of 3σ noise deviates into 25-pixel holes;
//   With rejection.bounds noise_model the seed bound is κ·τ_f instead (NoiseModelSeeds).
//   keep   = a pixel keeps all its samples when masking would leave fewer than
//            max(1, ceil(min_fraction · valid)) of them (the rejection's own floor).
// Invariants: the result at a pixel depends only on samples within GROW + the warp's reach, so
// bands carry GROW halo rows and any band plan gives the same image; masked samples are tallied
// per frame (low/high) only on the band's owned rows, so tallies are exact across bands.

import { minKeep } from './stack.js';
import type { PoolKernel } from './worker-pool.js';

/** Growth radius (px) around seed samples. */
export const GROW = 2;
/** Fraction of the local signal |M − L| tolerated as frame-to-frame profile difference. */
export const ALPHA = 0.5;
/** Fewest frames for which the median is a robust centre. */
export const MIN_FRAMES = 3;

/** Mask byte values (shared with shaders/premask/premask_*.wgsl). */
export const SEED_HIGH = 1;
export const SEED_LOW = 2;
export const GROWN_HIGH = 3;
export const GROWN_LOW = 4;
export const STRONG_HIGH = 5;
export const STRONG_LOW = 6;

export interface PremaskArgs {
  /** Frames × rows × width normalisable samples of one channel (the work band incl. halo). */
  band: Float32Array;
  /** Per-pixel median of the normalised samples (rows × width). */
  median: Float32Array;
  /** Frames × rows × width mask bytes (zeroed by the caller). */
  mask: Uint8Array;
  width: number;
  rows: number;
  frames: number;
  scale: number[];
  offset: number[];
  /** Normalised pixel noise per frame. */
  sigma: number[];
  kLow: number;
  kHigh: number;
  level: number;
  minFraction: number;
  /** Owned rows of the work band: [ownedY0, ownedY0 + ownedRows). */
  ownedY0: number;
  ownedRows: number;
  /**
   * Owned columns [ownedX0, ownedX0 + ownedCols) when `band` is a column window of a wider band
   * with GROW halo columns each side (the host pre-mask's windows of many frames): premaskApply
   * applies and tallies only those. Default: every column.
   */
  ownedX0?: number;
  ownedCols?: number;
  /** 2·frames tallies (low per frame, then high), added to. */
  rejected: Uint32Array;
  /** [valid samples of the owned rows, masked samples of the owned rows], added to. */
  counts: BigUint64Array;
  /**
   * False: leave counts[0] alone (saves a pass over every sample; STACKING derives the valid
   * count from the stack's own tallies). Default true.
   */
  countValid?: boolean;
  /**
   * When given, the band index of every sample premaskApply sets to NaN is stored here (order
   * unspecified), so a caller whose band also sits on a device can NaN those samples there
   * instead of uploading the band. `nanCount[0]` (shared across workers, Atomics) is advanced by
   * each call's count; a call whose indices do not fit stores none, so nanCount[0] >
   * nanIndex.length means "incomplete: upload the band".
   */
  nanIndex?: Uint32Array;
  nanCount?: Uint32Array;
  /**
   * When `band` holds rows [row0, row0 + rows) of a larger band of `plane` samples per frame
   * (a row chunk of it), and with `col0` and `width` columns [col0, col0 + band width) of that
   * band's `width` (a window of it), nanIndex gets indices into that larger band. Default:
   * `band` itself.
   */
  nanIndexOf?: { plane: number; row0: number; col0?: number; width?: number };
  /** Seeds by the noise model's bound instead of κσ_f + α·|M − L| (NoiseModelSeeds). */
  noiseModel?: NoiseModelSeeds | null;
  /**
   * The per-pixel screen premaskScreen filled for every row of the band from all frames' bounds
   * (rows × width), and with the noise model the signal S beside it: premaskFlag calls then read
   * it instead of each computing its own over the whole plane (with the frames split across
   * workers, that per-call screen cost as much as the samples' own test, measured). Absent: each
   * call computes its own from its frames. Either screen only lets through samples that the
   * exact rule then decides, so the mask is the same.
   */
  screen?: Float32Array;
  signal?: Float32Array;
}

/**
 * The noise-model seed bound (src/cpu/reject-noise.ts, docs/stacking-quality.md): a sample is a
 * seed when it lies beyond κ·τ_f of the median, τ_f² = σ_f² + K_f·S + (α_f·S)², S = max(M − B, 0):
 * on the sky κσ_f as before, on a star a bound that grows with the signal, so a sharp frame's
 * higher core (or a soft frame's wider wing) is no seed where a fixed α·|M − L| was too tight.
 */
export interface NoiseModelSeeds {
  /** Sky B under each pixel of the work band (rows × width, normalised units; NaN → S = 0). */
  background: Float32Array;
  /** Per frame: K_f and α_f. */
  poisson: number[];
  seeing: number[];
}

/**
 * The screen's per-pixel scratch, kept per thread across calls: a pool worker allocates almost
 * nothing else, so a fresh array per call stayed uncollected (2 MB per call on a 2048-wide
 * band, tens of MB per worker by a run's last bands).
 */
let screenScratch = new Float32Array(0);
function screenOf(n: number): Float32Array {
  if (screenScratch.length < n) screenScratch = new Float32Array(n);
  return screenScratch.subarray(0, n);
}
/** The noise-model screen's per-pixel signal, kept per thread likewise. */
let signalScratch = new Float32Array(0);
function signalOf(n: number): Float32Array {
  if (signalScratch.length < n) signalScratch = new Float32Array(n);
  return signalScratch.subarray(0, n);
}

/** Seeds and growth of frames [f0, f1) (independent per frame). */
export function premaskFlag(a: PremaskArgs, f0: number, f1: number): void {
  if (a.noiseModel) return premaskFlagNoise(a, a.noiseModel, f0, f1);
  const { width: W, rows: R, band, median: M, mask, level: L } = a;
  const plane = W * R;
  // The star-profile tolerance t = α·|M − L| depends on the pixel only. Arithmetic is f32 step
  // by step, as in shaders/premask/premask_flag.wgsl, so both paths flag alike.
  const f32 = Math.fround;
  const alpha = f32(ALPHA);
  const level = f32(L);
  // Fast screen: nearly every sample is no seed, which the f64 deviation d64 = v·sc + of − M
  // shows without the f32 rounding chain when it clears the thresholds by a margin. For such a
  // sample |d64| <= max(hi, lo) + t, so |v·sc + of| <= |M| + max(hi, lo) + t, and the f32
  // chain (three roundings of at most 2^-24 of |v·sc + of|, |d| and the threshold each) moves d
  // against the threshold by less than 2^-22 · (|M| + 2·(max(hi, lo) + t)); the screen keeps
  // a margin of 2e-6 · (|M| + 2·(max(hi, lo) + t)), half of it for storing it as f32 (one more
  // rounding of at most 2^-24 · t). Samples the screen does not clear go through the exact f32
  // rule, so the result is the same. One f32 per pixel (the only per-call scratch, reused per
  // thread: screenOf).
  const screen = a.screen ?? screenOf(plane);
  if (!a.screen) fillScreen(a, f0, f1, 0, R, screen);
  for (let f = f0; f < f1; f++) {
    const sc = f32(a.scale[f]!);
    const of = f32(a.offset[f]!);
    const sig = a.sigma[f]!;
    if (!(sig > 0)) continue;
    const hi = f32(a.kHigh * sig);
    const lo = f32(a.kLow * sig);
    const base = f * plane;
    const strong: number[] = [];
    for (let i = 0; i < plane; i++) {
      const v = band[base + i]!;
      const d64 = v * sc + of - M[i]!;
      const u = screen[i]!;
      if (!(d64 > hi + u || -d64 > lo + u)) {
        // Cleared by the screen (or NaN, where no comparison holds either) — unless the median
        // is NaN, where u is NaN too and the exact rule below answers (also "no seed").
        if (u === u) continue;
      }
      // v·sc is exact in f64, so one rounding of the sum is the fused multiply-add of the shader.
      const m = M[i]!;
      const d = f32(f32(v * sc + of) - m); // NaN sample or median: no comparison holds
      const t = f32(alpha * f32(Math.abs(f32(m - level))));
      const th = f32(hi + t);
      const tl = f32(lo + t);
      if (d > th) {
        if (d > 2 * th) (mask[base + i] = STRONG_HIGH), strong.push(i);
        else mask[base + i] = SEED_HIGH;
      } else if (-d > tl) {
        if (-d > 2 * tl) (mask[base + i] = STRONG_LOW), strong.push(i);
        else mask[base + i] = SEED_LOW;
      }
    }
    growStrong(mask, base, strong, W, R);
  }
}

/**
 * The plain rule's screen of rows [r0, r1) from the bounds of frames [f0, f1) (premaskFlag's
 * comment): kMax is the largest of those frames' thresholds, so a screen from more frames is
 * only wider, never lets a seed through.
 */
function fillScreen(a: PremaskArgs, f0: number, f1: number, r0: number, r1: number, screen: Float32Array): void {
  const f32 = Math.fround;
  const alpha = f32(ALPHA);
  const level = f32(a.level);
  const M = a.median;
  let kMax = 0;
  for (let f = f0; f < f1; f++) {
    const sig = a.sigma[f]!;
    if (sig > 0) kMax = Math.max(kMax, f32(a.kHigh * sig), f32(a.kLow * sig));
  }
  for (let i = r0 * a.width, end = r1 * a.width; i < end; i++) {
    const m = M[i]!;
    const t = f32(alpha * f32(Math.abs(f32(m - level))));
    screen[i] = t - 2e-6 * (Math.abs(m) + 2 * (kMax + t)); // NaN median: NaN, the screen never passes
  }
}

/**
 * The noise-model screen and signal of rows [r0, r1) from the smallest bound of frames [f0, f1)
 * (premaskFlagNoise): a screen from more frames is only lower, never lets a seed through.
 */
function fillScreenNoise(a: PremaskArgs, nm: NoiseModelSeeds, f0: number, f1: number, r0: number, r1: number, screen: Float32Array, signal: Float32Array): void {
  let s2Min = Infinity;
  let kMin = Infinity;
  let a2Min = Infinity;
  for (let f = f0; f < f1; f++) {
    const sig = a.sigma[f]!;
    if (!(sig > 0)) continue;
    s2Min = Math.min(s2Min, sig * sig);
    kMin = Math.min(kMin, nm.poisson[f]!);
    a2Min = Math.min(a2Min, nm.seeing[f]! * nm.seeing[f]!);
  }
  const kk = Math.min(a.kLow, a.kHigh);
  const M = a.median;
  const B = nm.background;
  for (let i = r0 * a.width, end = r1 * a.width; i < end; i++) {
    const m = M[i]!;
    const b = B[i]!;
    const S = b === b ? Math.max(m - b, 0) : 0;
    signal[i] = S;
    // Below the smallest bound of any frame, with a margin for f32 storage: no seed. (No frame
    // with a noise: Infinity; premaskFlagNoise then flags nothing anyway.)
    screen[i] = kk * Math.sqrt(s2Min + kMin * S + a2Min * S * S) * (1 - 1e-6);
  }
}

/**
 * Fills `a.screen` (and `a.signal` with the noise model) on rows [r0, r1) from every frame's
 * bounds, for the premaskFlag calls that follow (PremaskArgs.screen).
 */
export function premaskScreen(a: PremaskArgs, r0: number, r1: number): void {
  if (a.noiseModel) fillScreenNoise(a, a.noiseModel, 0, a.frames, r0, r1, a.screen!, a.signal!);
  else fillScreen(a, 0, a.frames, r0, r1, a.screen!);
}

/**
 * Growth in raster order of the strong seeds (the list is in raster order); grown cells never
 * become seeds themselves.
 */
function growStrong(mask: Uint8Array, base: number, strong: number[], W: number, R: number): void {
  for (const i of strong) {
    const y = Math.floor(i / W);
    const x = i - y * W;
    const tag = mask[base + i] === STRONG_HIGH ? GROWN_HIGH : GROWN_LOW;
    for (let yy = Math.max(0, y - GROW); yy <= Math.min(R - 1, y + GROW); yy++) {
      const row = base + yy * W;
      for (let xx = Math.max(0, x - GROW); xx <= Math.min(W - 1, x + GROW); xx++) if (mask[row + xx] === 0) mask[row + xx] = tag;
    }
  }
}

/**
 * premaskFlag with the noise-model seed bound (NoiseModelSeeds). Per pixel the smallest τ any
 * frame can have screens the samples first (nearly every sample is no seed), so the square
 * root per sample is taken only for the few that come near a bound. f64 arithmetic; the WGSL
 * twin (premask_flag.wgsl, NOISE = 1) computes τ in f32, so the two may part for a sample
 * within rounding distance of a bound (test/gpu/premask.test.ts).
 */
function premaskFlagNoise(a: PremaskArgs, nm: NoiseModelSeeds, f0: number, f1: number): void {
  const { width: W, rows: R, band, median: M, mask } = a;
  const plane = W * R;
  let any = false;
  for (let f = f0; f < f1; f++) if (a.sigma[f]! > 0) any = true;
  if (!any) return;
  // A given screen is used only with its signal (premaskScreen fills both); else this call's own.
  const given = a.screen !== undefined && a.signal !== undefined;
  const screen = given ? a.screen! : screenOf(plane);
  const signal = given ? a.signal! : signalOf(plane);
  if (!given) fillScreenNoise(a, nm, f0, f1, 0, R, screen, signal);
  for (let f = f0; f < f1; f++) {
    const sc = a.scale[f]!;
    const of = a.offset[f]!;
    const sig = a.sigma[f]!;
    if (!(sig > 0)) continue;
    const s2 = sig * sig;
    const K = nm.poisson[f]!;
    const a2 = nm.seeing[f]! * nm.seeing[f]!;
    const base = f * plane;
    const strong: number[] = [];
    for (let i = 0; i < plane; i++) {
      const d = Math.fround(band[base + i]! * sc + of) - M[i]!;
      if (!(Math.abs(d) > screen[i]!)) continue; // also NaN sample or median
      const S = signal[i]!;
      const tau = Math.sqrt(s2 + K * S + a2 * S * S);
      const th = a.kHigh * tau;
      const tl = a.kLow * tau;
      if (d > th) {
        if (d > 2 * th) (mask[base + i] = STRONG_HIGH), strong.push(i);
        else mask[base + i] = SEED_HIGH;
      } else if (-d > tl) {
        if (-d > 2 * tl) (mask[base + i] = STRONG_LOW), strong.push(i);
        else mask[base + i] = SEED_LOW;
      }
    }
    growStrong(mask, base, strong, W, R);
  }
}

/**
 * Applies the masks on owned rows [r0, r1) (work-band rows): the keep rule per pixel, NaN for
 * masked samples, per-frame tallies and the counts. Masks are sparse (trails, cosmic rays, hot
 * pixels: well under 1 % of the samples), so the pixels with any mask are found first (an OR of
 * the frames' mask bytes, a word at a time where aligned) and only those are visited frame by
 * frame; the valid-sample count (unless countValid is false) is one NaN scan per frame.
 */
export function premaskApply(a: PremaskArgs, r0: number, r1: number): void {
  const { width: W, rows: R, frames: N, band, mask } = a;
  const plane = W * R;
  const from = Math.max(r0, a.ownedY0) * W;
  const to = Math.min(r1, a.ownedY0 + a.ownedRows) * W;
  if (to <= from) return;
  const n = to - from;
  const x0 = a.ownedX0 ?? 0;
  const x1 = a.ownedCols === undefined ? W : x0 + a.ownedCols;
  const allColumns = x0 === 0 && x1 === W;
  // Valid (non-NaN) samples of the owned rows and columns (0 when not asked for).
  let valid = 0;
  if (a.countValid !== false) {
    for (let f = 0; f < N; f++) {
      const base = f * plane + from;
      for (let k = 0; k < n; k++) {
        const v = band[base + k]!;
        if (v === v && (allColumns || (k % W >= x0 && k % W < x1))) valid++;
      }
    }
  }
  // Pixels with a mask byte in any frame (owned columns only: any[k] stays 0 outside them).
  const any = new Uint8Array(n);
  const words = (n >> 2) << 2;
  const anyWords = new Uint32Array(any.buffer, 0, n >> 2);
  for (let f = 0; f < N; f++) {
    const base = f * plane + from;
    const off = mask.byteOffset + base;
    let k0 = 0;
    if ((off & 3) === 0) {
      const mw = new Uint32Array(mask.buffer, off, n >> 2);
      for (let q = 0; q < mw.length; q++) {
        const m = mw[q]!;
        if (m !== 0) anyWords[q] = anyWords[q]! | m;
      }
      k0 = words;
    }
    for (let k = k0; k < n; k++) {
      const m = mask[base + k]!;
      if (m !== 0) any[k] = any[k]! | m;
    }
  }
  // The masked pixels' indices; their samples are then visited frame-major (ascending
  // addresses within each frame plane, which the cache prefetches well).
  if (!allColumns) {
    for (let k = 0; k < n; k += W) {
      any.fill(0, k, k + x0);
      any.fill(0, k + x1, k + W);
    }
  }
  let count = 0;
  for (let k = 0; k < n; k++) if (any[k] !== 0) count++;
  const idx = new Int32Array(count);
  for (let k = 0, j = 0; k < n; k++) if (any[k] !== 0) idx[j++] = k;
  const nv = new Uint32Array(count);
  const nm = new Uint32Array(count);
  for (let f = 0; f < N; f++) {
    const base = f * plane + from;
    for (let j = 0; j < count; j++) {
      const i = base + idx[j]!;
      const v = band[i]!;
      if (v !== v) continue;
      nv[j]!++;
      if (mask[i] !== 0) nm[j]!++;
    }
  }
  // nm[j] becomes the apply flag: 1 where the masked samples go, 0 where the keep rule keeps all.
  const mf = Math.fround(a.minFraction);
  for (let j = 0; j < count; j++) {
    const v = nv[j]!;
    const m = nm[j]!;
    nm[j] = m > 0 && v - m >= minKeep(v, mf) ? 1 : 0;
  }
  const low = new Uint32Array(N);
  const high = new Uint32Array(N);
  let masked = 0;
  const record = a.nanIndex !== undefined && a.nanCount !== undefined;
  const list: number[] = [];
  const map = a.nanIndexOf;
  // Pixel j's index within a frame of the band the indices refer to (with map) or of `band`.
  let at: Int32Array | null = null;
  if (record) {
    at = new Int32Array(count);
    const mapW = map?.width ?? W;
    const col0 = map?.col0 ?? 0;
    const row0 = map?.row0 ?? 0;
    for (let j = 0; j < count; j++) {
      const k = from + idx[j]!;
      const y = Math.floor(k / W);
      at[j] = (row0 + y) * mapW + col0 + (k - y * W);
    }
  }
  const framePlane = map ? map.plane : plane;
  for (let f = 0; f < N; f++) {
    const base = f * plane + from;
    for (let j = 0; j < count; j++) {
      if (nm[j] === 0) continue;
      const i = base + idx[j]!;
      const t = mask[i]!;
      if (t === 0) continue;
      const v = band[i]!;
      if (v !== v) continue;
      band[i] = NaN;
      if (record) list.push(f * framePlane + at![j]!);
      masked++;
      if (t === SEED_HIGH || t === GROWN_HIGH || t === STRONG_HIGH) high[f]!++;
      else low[f]!++;
    }
  }
  if (record && list.length > 0) {
    const cursor = a.nanCount!;
    const at = cursor.buffer instanceof SharedArrayBuffer ? Atomics.add(cursor, 0, list.length) : (cursor[0] = cursor[0]! + list.length) - list.length;
    if (at + list.length <= a.nanIndex!.length) a.nanIndex!.set(list, at);
  }
  const shared = a.rejected.buffer instanceof SharedArrayBuffer;
  for (let f = 0; f < N; f++) {
    if (low[f]) shared ? Atomics.add(a.rejected, f, low[f]!) : (a.rejected[f]! += low[f]!);
    if (high[f]) shared ? Atomics.add(a.rejected, N + f, high[f]!) : (a.rejected[N + f]! += high[f]!);
  }
  if (a.counts.buffer instanceof SharedArrayBuffer) {
    Atomics.add(a.counts, 0, BigInt(valid));
    Atomics.add(a.counts, 1, BigInt(masked));
  } else {
    a.counts[0]! += BigInt(valid);
    a.counts[1]! += BigInt(masked);
  }
}

/**
 * Moves the owned rows of every frame to a compact frames × ownedRows × width layout at the
 * start of `band` (in place; later frames never overwrite earlier ones' rows). Returns the view.
 */
export function compactOwned(band: Float32Array, width: number, rows: number, frames: number, ownedY0: number, ownedRows: number): Float32Array {
  const plane = width * rows;
  const owned = width * ownedRows;
  for (let f = 0; f < frames; f++) {
    const from = f * plane + ownedY0 * width;
    const to = f * owned;
    if (from !== to) band.copyWithin(to, from, from + owned);
  }
  return band.subarray(0, frames * owned);
}

/** premaskFlag and premaskApply as worker-pool handles (the stacking engine runs them over frames and rows). */
export const PREMASK_SCREEN: PoolKernel = { module: import.meta.url, name: 'premaskScreen' satisfies keyof typeof import('./premask.js') };
export const PREMASK_FLAG: PoolKernel = { module: import.meta.url, name: 'premaskFlag' satisfies keyof typeof import('./premask.js') };
export const PREMASK_APPLY: PoolKernel = { module: import.meta.url, name: 'premaskApply' satisfies keyof typeof import('./premask.js') };
