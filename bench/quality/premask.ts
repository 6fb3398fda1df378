// The stacking pre-mask's rule (src/cpu/premask.ts: seeds against the
// per-pixel median, strong seeds beyond twice the threshold grown by GROW px in the same
// frame, the keep rule) with the seed threshold as a parameter, for the stacking-quality bench:
// - `today`: the engine's threshold κσ_f + α·|M − L| (α = 0.5, L the reference's level);
// - `noise-model`: κ·τ_f(M, B) of src/cpu/reject-noise.ts (noise, shot noise, seeing), which is
//   what the integration puts into the pre-mask's seed test.
// Host-only, f64, written for clarity rather than speed (the bench's one-off re-stacks). Works
// on a band of normalised samples (frames × rows × width) in place: masked samples become NaN
// on the owned rows; returns the number masked.

import { minKeep } from '../../src/cpu/stack.js';

export const GROW = 2;
export const ALPHA = 0.5;

export interface PremaskBand {
  /** Normalised samples, frames × rows × width (modified: masked samples → NaN). */
  band: Float32Array;
  /** Per-pixel median of the normalised samples (rows × width). */
  median: Float32Array;
  width: number;
  rows: number;
  frames: number;
  /** Owned rows [ownedY0, ownedY0 + ownedRows) of the band. */
  ownedY0: number;
  ownedRows: number;
  minFraction: number;
  /** Seed thresholds of frame f at band pixel i: [high, low] (Infinity: never). */
  threshold: (f: number, i: number, median: number) => [number, number];
}

export function premask(a: PremaskBand): number {
  const { band, median, width: W, rows: R, frames: N } = a;
  const plane = W * R;
  const mask = new Uint8Array(N * plane); // 1 seed/grown high, 2 low
  for (let f = 0; f < N; f++) {
    const base = f * plane;
    const strong: number[] = [];
    for (let i = 0; i < plane; i++) {
      const v = band[base + i]!;
      const m = median[i]!;
      if (v !== v || m !== m) continue;
      const [th, tl] = a.threshold(f, i, m);
      const d = v - m;
      if (d > th) {
        mask[base + i] = 1;
        if (d > 2 * th) strong.push(i);
      } else if (-d > tl) {
        mask[base + i] = 2;
        if (-d > 2 * tl) strong.push(i);
      }
    }
    for (const i of strong) {
      const y = Math.floor(i / W);
      const x = i - y * W;
      const tag = mask[base + i]!;
      for (let yy = Math.max(0, y - GROW); yy <= Math.min(R - 1, y + GROW); yy++) {
        for (let xx = Math.max(0, x - GROW); xx <= Math.min(W - 1, x + GROW); xx++) if (mask[base + yy * W + xx] === 0) mask[base + yy * W + xx] = tag;
      }
    }
  }
  let masked = 0;
  const mf = Math.fround(a.minFraction);
  for (let r = a.ownedY0; r < a.ownedY0 + a.ownedRows; r++) {
    for (let x = 0; x < W; x++) {
      const i = r * W + x;
      let nv = 0;
      let nm = 0;
      for (let f = 0; f < N; f++) {
        const v = band[f * plane + i]!;
        if (v !== v) continue;
        nv++;
        if (mask[f * plane + i]) nm++;
      }
      if (nm === 0 || nv - nm < minKeep(nv, mf)) continue;
      for (let f = 0; f < N; f++) {
        if (mask[f * plane + i] && band[f * plane + i] === band[f * plane + i]) {
          band[f * plane + i] = NaN;
          masked++;
        }
      }
    }
  }
  return masked;
}
