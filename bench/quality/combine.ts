// Re-stacking of the bench's cubes band by band, as the engine does (owned rows plus the
// pre-mask's GROW halo, per-pixel median first), with three rejections:
// - none:        weighted mean of the valid samples (src/cpu/stack.ts, method none);
// - today:       the engine's pre-mask (κσ_f + α|M − L|) then sigma clipping (stack.ts sigma);
// - noise-model: the pre-mask with the noise-model seed bound, then src/cpu/reject-noise.ts
//                (sigma), started from the median, with the reference's sky under each pixel.
// Samples are normalised (v·scale + offset) when the band is copied; with local normalization
// the cube already holds a·v + b (scale 1, offset 0).

import { expectedSpread, noiseFrameParams, rejectNoiseModel } from '../../src/cpu/reject-noise.js';
import { stack } from '../../src/cpu/stack.js';
import { ALPHA, GROW, premask } from './premask.js';

export type Rejection = 'none' | 'today' | 'noise-model';
export const REJECTIONS: readonly Rejection[] = ['none', 'today', 'noise-model'];

export interface ChannelInput {
  width: number;
  height: number;
  frames: number;
  cube: Float32Array;
  scale: number[];
  offset: number[];
  weight: number[];
  /** Normalised pixel noise σ_f, shot-noise coefficient K_f and seeing tolerance α_f per frame. */
  noise: number[];
  poisson: number[];
  seeing: number[];
  /** The reference's level (today's pre-mask L) and sky under each pixel (noise model B). */
  level: number;
  background: Float32Array;
}

export interface RejectionSettings {
  low: number;
  high: number;
  maxIters: number;
  minFraction: number;
}

export interface Combined {
  mean: Float32Array;
  count: Uint32Array;
  /** Samples removed by the pre-mask and by the rejection. */
  masked: number;
  rejected: number;
  ms: number;
}

const BAND = 64;

export function combine(c: ChannelInput, which: readonly Rejection[], r: RejectionSettings): Map<Rejection, Combined> {
  const { width: W, height: H, frames: N } = c;
  const out = new Map<Rejection, Combined>(which.map((k) => [k, { mean: new Float32Array(W * H), count: new Uint32Array(W * H), masked: 0, rejected: 0, ms: 0 }]));
  const nfp = noiseFrameParams({ width: W, rows: 1, frames: N, method: 'sigma', low: r.low, high: r.high, maxIters: r.maxIters, minFraction: r.minFraction, noise: c.noise, poisson: c.poisson, seeing: c.seeing });
  const plane = W * H;
  for (let y0 = 0; y0 < H; y0 += BAND) {
    const rows = Math.min(BAND, H - y0);
    const wy0 = Math.max(0, y0 - GROW);
    const wy1 = Math.min(H, y0 + rows + GROW);
    const wRows = wy1 - wy0;
    const ownedY0 = y0 - wy0;
    const work = new Float32Array(N * wRows * W);
    for (let f = 0; f < N; f++) {
      const s = c.scale[f]!;
      const o = c.offset[f]!;
      const from = f * plane + wy0 * W;
      for (let i = 0; i < wRows * W; i++) work[f * wRows * W + i] = Math.fround(c.cube[from + i]! * s + o);
    }
    const base = { width: W, rows: wRows, frames: N, low: r.low, high: r.high, maxIters: r.maxIters, minFraction: r.minFraction };
    const t0 = performance.now();
    const median = stack(work, { ...base, method: 'median' }).mean;
    const tMedian = performance.now() - t0;
    const owned = (band: Float32Array) => {
      const o = new Float32Array(N * rows * W);
      for (let f = 0; f < N; f++) o.set(band.subarray((f * wRows + ownedY0) * W, (f * wRows + ownedY0 + rows) * W), f * rows * W);
      return o;
    };
    const put = (k: Rejection, mean: Float32Array, count: Uint32Array, rejected: number, masked: number, ms: number) => {
      const t = out.get(k)!;
      t.mean.set(mean, y0 * W);
      t.count.set(count, y0 * W);
      t.rejected += rejected;
      t.masked += masked;
      t.ms += ms;
    };
    const tally = (a: Uint32Array, b: Uint32Array) => [...a, ...b].reduce((x, y) => x + y, 0);
    for (const k of which) {
      const t = performance.now();
      if (k === 'none') {
        const res = stack(owned(work), { ...base, rows, method: 'none', weight: c.weight });
        put(k, res.mean, res.count, 0, 0, performance.now() - t);
        continue;
      }
      const band = work.slice();
      const masked = premask({
        band,
        median,
        width: W,
        rows: wRows,
        frames: N,
        ownedY0,
        ownedRows: rows,
        minFraction: r.minFraction,
        threshold:
          k === 'today'
            ? (f, _i, m) => {
                const s = c.noise[f]!;
                if (!(s > 0)) return [Infinity, Infinity];
                const tol = ALPHA * Math.abs(m - c.level);
                return [r.high * s + tol, r.low * s + tol];
              }
            : (f, i, m) => {
                const tau = expectedSpread(nfp, f, m, c.background[wy0 * W + i]!);
                return [r.high * tau, r.low * tau];
              },
      });
      const ob = owned(band);
      if (k === 'today') {
        const res = stack(ob, { ...base, rows, method: 'sigma', weight: c.weight });
        put(k, res.mean, res.count, tally(res.rejectedLow, res.rejectedHigh), masked, performance.now() - t + tMedian);
      } else {
        const res = rejectNoiseModel(ob, { ...base, rows, method: 'sigma', weight: c.weight, noise: c.noise, poisson: c.poisson, seeing: c.seeing }, { centre: median.subarray(ownedY0 * W, (ownedY0 + rows) * W), background: c.background.subarray(y0 * W, (y0 + rows) * W) });
        put(k, res.mean, res.count, tally(res.rejectedLow, res.rejectedHigh), masked, performance.now() - t + tMedian);
      }
    }
  }
  return out;
}
