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
//   keep   = a pixel keeps all its samples when masking would leave fewer than
//            max(1, ceil(min_fraction · valid)) of them (the rejection's own floor).
// Invariants: the result at a pixel depends only on samples within GROW + the warp's reach, so
// bands carry GROW halo rows and any band plan gives the same image; masked samples are tallied
// per frame (low/high) only on the band's owned rows, so tallies are exact across bands.

import { minKeep } from '../../cpu/stack.js';

/** Growth radius (px) around seed samples. */
export const GROW = 2;
/** Fraction of the local signal |M − L| tolerated as frame-to-frame profile difference. */
export const ALPHA = 0.5;
/** Fewest frames for which the median is a robust centre. */
export const MIN_FRAMES = 3;

/** Mask byte values. */
const SEED_HIGH = 1;
const SEED_LOW = 2;
const GROWN_HIGH = 3;
const GROWN_LOW = 4;
const STRONG_HIGH = 5;
const STRONG_LOW = 6;

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
  /** 2·frames tallies (low per frame, then high), added to. */
  rejected: Uint32Array;
  /** [valid samples of the owned rows, masked samples of the owned rows], added to. */
  counts: BigUint64Array;
}

/** Seeds and growth of frames [f0, f1) (independent per frame). */
export function premaskFlag(a: PremaskArgs, f0: number, f1: number): void {
  const { width: W, rows: R, band, median: M, mask, level: L } = a;
  const plane = W * R;
  for (let f = f0; f < f1; f++) {
    const sc = a.scale[f]!;
    const of = a.offset[f]!;
    const sig = a.sigma[f]!;
    if (!(sig > 0)) continue;
    const hi = a.kHigh * sig;
    const lo = a.kLow * sig;
    const base = f * plane;
    let seeds = 0;
    for (let i = 0; i < plane; i++) {
      const v = band[base + i]!;
      if (v !== v) continue;
      const m = M[i]!;
      if (m !== m) continue;
      const d = Math.fround(v * sc + of) - m;
      const tol = ALPHA * Math.abs(m - L);
      if (d > hi + tol) {
        mask[base + i] = d > 2 * (hi + tol) ? STRONG_HIGH : SEED_HIGH;
        if (d > 2 * (hi + tol)) seeds++;
      } else if (-d > lo + tol) {
        mask[base + i] = -d > 2 * (lo + tol) ? STRONG_LOW : SEED_LOW;
        if (-d > 2 * (lo + tol)) seeds++;
      }
    }
    if (seeds === 0) continue;
    // Growth in raster order of the strong seeds; grown cells never become seeds themselves.
    for (let y = 0; y < R; y++) {
      for (let x = 0; x < W; x++) {
        const s = mask[base + y * W + x]!;
        if (s !== STRONG_HIGH && s !== STRONG_LOW) continue;
        const tag = s === STRONG_HIGH ? GROWN_HIGH : GROWN_LOW;
        for (let yy = Math.max(0, y - GROW); yy <= Math.min(R - 1, y + GROW); yy++) {
          const row = base + yy * W;
          for (let xx = Math.max(0, x - GROW); xx <= Math.min(W - 1, x + GROW); xx++) if (mask[row + xx] === 0) mask[row + xx] = tag;
        }
      }
    }
  }
}

/**
 * Applies the masks on owned rows [r0, r1) (work-band rows): the keep rule per pixel, NaN for
 * masked samples, per-frame tallies and the counts.
 */
export function premaskApply(a: PremaskArgs, r0: number, r1: number): void {
  const { width: W, rows: R, frames: N, band, mask } = a;
  const plane = W * R;
  const mf = Math.fround(a.minFraction);
  const low = new Uint32Array(N);
  const high = new Uint32Array(N);
  let valid = 0;
  let masked = 0;
  for (let r = Math.max(r0, a.ownedY0); r < Math.min(r1, a.ownedY0 + a.ownedRows); r++) {
    for (let x = 0; x < W; x++) {
      const i = r * W + x;
      let nv = 0;
      let nm = 0;
      for (let f = 0, j = i; f < N; f++, j += plane) {
        const v = band[j]!;
        if (v !== v) continue;
        nv++;
        if (mask[j] !== 0) nm++;
      }
      valid += nv;
      if (nm === 0 || nv - nm < minKeep(nv, mf)) continue;
      for (let f = 0, j = i; f < N; f++, j += plane) {
        const t = mask[j]!;
        if (t === 0) continue;
        const v = band[j]!;
        if (v !== v) continue;
        band[j] = NaN;
        masked++;
        if (t === SEED_HIGH || t === GROWN_HIGH || t === STRONG_HIGH) high[f]!++;
        else low[f]!++;
      }
    }
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
