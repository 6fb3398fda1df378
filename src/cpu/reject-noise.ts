// Rejection that keeps signal: TypeScript reference for shaders/stack/reject_noise.wgsl, the
// `sigma` and `winsor` methods with bounds from a noise model instead of the samples' spread.
//
// Why. Today's sigma/winsor clip a pixel's samples at κ × their own spread. Where seeing varies,
// a star core's samples spread because the frames' PSFs differ, not because of noise: where
// most frames are soft, the few sharp frames' peaks sit far out in that skewed set and are
// clipped (the stack's FWHM grows, photometry scatters), and iterating makes it worse. And where
// backgrounds disagree (gradients after a global normalization) the spread is inflated at some
// pixels and good frames are thrown away at others. A sample should go only when it disagrees
// with the others beyond what noise AND seeing explain. So, per frame f and pixel, around a
// centre c (normalised units):
//   S      = max(c − B, 0)                       signal above the sky B under the pixel,
//   τ_f²   = σ_f² + K_f·S + (α_f·S)²             expected spread of frame f's sample:
//            σ_f  sky noise of the frame (read + sky shot noise),
//            K_f  shot-noise variance per unit of signal (scale_f / gain in e-/ADU),
//            α_f  seeing tolerance: the fraction of the signal by which a frame's sample may
//                 differ because its PSF differs (a sharper frame's core is higher, its wings
//                 lower; (F_typical/F_f)² − 1 at the core, see seeingTolerances),
//   reject f when v_f < c − κ_low·τ_f or v_f > c + κ_high·τ_f.
// This is IRAF's `ccdclip` (read noise, gain and a "sensitivity noise" term proportional to the
// signal) with the proportional term sized for seeing. On the sky (S ≈ 0) it is κσ clipping
// with the frame's measured noise, which a trail, cosmic ray or hot pixel cannot inflate (no
// (N − 1)/√N limit: one outlier among 5 frames goes), and which does not shrink where the
// frames happen to agree. On a star it widens with the signal, so seeing-driven differences
// stay; a defect on a star core survives unless it exceeds (1 + κα) × the core — the price, and
// the reason trails are also masked (with growth) by the pre-mask.
// Methods (the seed's choices keep their meaning: iterated clipping vs a winsorized centre):
// - sigma:  c starts at the per-pixel median (`centre`, the pre-mask's median pass; NaN → the
//           weighted mean of the valid samples); each of max_iters iterations keeps the samples
//           inside the bounds at c and moves c to their weighted mean; it stops at a fixed
//           point (same survivor count and sum) or when fewer than
//           min_keep = max(1, ceil(f32(min_fraction) · valid)) samples, or no weight, would be
//           left (that iteration is refused: the previous survivors stand).
// - winsor: c starts likewise; max_iters Huber steps c += Σ w·clamp(v − c, ±winsor_k·τ)/Σ w
//           (a winsorized mean with the noise model's per-sample scale), then one rejection
//           at the bounds around c under the same min_keep rule (refused: all valid samples).
// Outputs as src/cpu/stack.ts: weighted mean of the survivors (NaN where no valid sample
// carries weight), survivor count, per-frame low/high rejected counts at the final bounds.
// Inputs: band frame-major (frame f, row r, column x at (f·srcRows + srcRow0 + r)·width + x),
// NaN = no data; v' = v·scale + offset (f32) as in the stack kernel; per frame weight, σ_f
// (≤ 0 or NaN: unknown, the frame is never rejected), K_f, α_f; per pixel c₀ and B (rows ×
// width; B NaN → S = 0).
// Arithmetic is f64 here (f32 on the device); they may disagree where a sample sits within
// rounding distance of a bound (test/gpu/reject-noise.test.ts counts those).

import { frameParams, minKeep, type StackParams, type StackResult } from './stack.js';
import { rowWeights, type WeightFieldRows } from './stack-weightfield.js';

export type NoiseRejectMethod = 'sigma' | 'winsor';
export const NOISE_REJECT_METHODS: readonly NoiseRejectMethod[] = ['sigma', 'winsor'];

/**
 * Default seeing tolerance α (fraction of the signal above the sky): with κ = 3 a sample may
 * lie up to (1 + κα) = 4× the centre's signal — the core of a frame with half the typical
 * FWHM, or the wing of a soft frame against sharp ones (wings differ more than cores: at 2–3
 * FWHM a 1.8× softer frame's wing is 3–4× the sharp one's). 0.5 was measured too tight: on the
 * real-sky bench the pre-mask with α = 0.5 still widened the stack's stars by 2.6 % in the soft
 * patch, α = 1 by nothing (bench/RESULTS.md).
 */
export const DEFAULT_SEEING_TOLERANCE = 1;

export interface NoiseRejectParams extends Omit<StackParams, 'method'> {
  method: NoiseRejectMethod;
  /** Per frame: sky noise σ_f of a normalised sample; ≤ 0 or NaN = unknown (never rejected). */
  noise: ArrayLike<number>;
  /** Per frame: shot-noise variance per unit of normalised signal, K_f (default 0). */
  poisson?: ArrayLike<number>;
  /** Per frame: seeing tolerance α_f (default DEFAULT_SEEING_TOLERANCE). */
  seeing?: ArrayLike<number>;
  /** Rows per frame in the input and the input row of band row 0 (default: rows, 0). */
  srcRows?: number;
  srcRow0?: number;
}

export interface NoiseRejectPixels {
  /** Start centre per pixel (rows × width), normally the median; null or NaN → weighted mean. */
  centre: Float32Array | null;
  /** Sky background B under each pixel (rows × width), normalised units; NaN → S = 0. */
  background: Float32Array;
}

/** Per-frame noise-model parameters, validated and rounded to f32 as the device holds them. */
export interface NoiseFrameParams {
  /** σ_f² (NaN: never reject). */
  sigma2: Float64Array;
  poisson: Float64Array;
  /** α_f². */
  alpha2: Float64Array;
}

export function noiseFrameParams(p: NoiseRejectParams): NoiseFrameParams {
  const n = p.frames;
  const take = (a: ArrayLike<number> | undefined, name: string, dflt: number, nonNegative: boolean): Float64Array => {
    const out = new Float64Array(n).fill(dflt);
    if (a === undefined) return out;
    if (a.length !== n) throw new RangeError(`reject-noise: ${name} has ${a.length} entries for ${n} frames`);
    for (let f = 0; f < n; f++) {
      const x = a[f]!;
      if (nonNegative && !(x >= 0 && Number.isFinite(x))) throw new RangeError(`reject-noise: ${name}[${f}] = ${x} must be finite and >= 0`);
      out[f] = Math.fround(x);
    }
    return out;
  };
  if (p.noise.length !== n) throw new RangeError(`reject-noise: noise has ${p.noise.length} entries for ${n} frames`);
  const sigma2 = new Float64Array(n);
  for (let f = 0; f < n; f++) {
    const s = Math.fround(p.noise[f]!);
    sigma2[f] = s > 0 && Number.isFinite(s) ? Math.fround(s * s) : NaN;
  }
  const alpha = take(p.seeing, 'seeing', DEFAULT_SEEING_TOLERANCE, true);
  return { sigma2, poisson: take(p.poisson, 'poisson', 0, true), alpha2: alpha.map((a) => Math.fround(a * a)) };
}

export function validateNoiseReject(p: NoiseRejectParams, inputLength?: number, px?: NoiseRejectPixels): void {
  for (const [name, v] of Object.entries({ width: p.width, rows: p.rows, frames: p.frames })) {
    if (!Number.isInteger(v) || v < 1) throw new RangeError(`reject-noise: ${name} = ${v} must be a positive integer`);
  }
  if (!NOISE_REJECT_METHODS.includes(p.method)) throw new RangeError(`reject-noise: unknown method "${String(p.method)}" (sigma or winsor)`);
  if (!(p.low > 0) || !(p.high > 0) || !Number.isFinite(p.low) || !Number.isFinite(p.high)) throw new RangeError('reject-noise: low and high must be finite and > 0');
  if (!Number.isInteger(p.maxIters) || p.maxIters < 0) throw new RangeError(`reject-noise: maxIters = ${p.maxIters} must be an integer >= 0`);
  if (!(p.minFraction >= 0 && p.minFraction <= 1)) throw new RangeError(`reject-noise: minFraction = ${p.minFraction} must lie in [0, 1]`);
  const wk = p.winsorK ?? 1.5;
  if (!(wk > 0) || !Number.isFinite(wk)) throw new RangeError(`reject-noise: winsorK = ${wk} must be finite and > 0`);
  const srcRows = p.srcRows ?? p.rows;
  const srcRow0 = p.srcRow0 ?? 0;
  if (!(Number.isInteger(srcRows) && Number.isInteger(srcRow0) && srcRow0 >= 0 && srcRow0 + p.rows <= srcRows)) throw new RangeError(`reject-noise: rows ${srcRow0}..${srcRow0 + p.rows} outside the ${srcRows} rows per frame`);
  if (inputLength !== undefined && inputLength < p.frames * srcRows * p.width) throw new RangeError(`reject-noise: input holds ${inputLength} samples, need ${p.frames} x ${srcRows} x ${p.width}`);
  const plane = p.width * p.rows;
  if (px && (px.background.length < plane || (px.centre && px.centre.length < plane))) throw new RangeError(`reject-noise: per-pixel inputs need ${plane} values`);
}

/**
 * Expected spread τ_f of frame f's normalised sample at centre c over sky b (the contract's
 * bound is κ·τ); Infinity when the frame has no noise estimate. The stacking pre-mask's seed
 * test uses the same bound around the per-pixel median (κ_high·τ above, κ_low·τ below) instead
 * of κσ_f + α·|M − L|.
 */
export function expectedSpread(p: NoiseFrameParams, f: number, c: number, b: number): number {
  const s2 = p.sigma2[f]!;
  if (s2 !== s2) return Infinity;
  const s = b === b ? Math.max(c - b, 0) : 0;
  return Math.sqrt(s2 + p.poisson[f]! * s + p.alpha2[f]! * s * s);
}

/**
 * Seeing tolerance per frame from the frames' FWHM (at least `base`): a frame sharper than the
 * typical (median) one has its core higher by (F_med/F_f)² − 1 of the signal, which the high
 * bound κ_high·α_f·S must hold with 20 % to spare. Softer frames' cores are lower by less than
 * the signal itself, and their wings higher by a few times it, which the base covers
 * (DEFAULT_SEEING_TOLERANCE). NaN or non-positive FWHM → base.
 */
export function seeingTolerances(fwhm: readonly number[], kHigh: number, base = DEFAULT_SEEING_TOLERANCE): number[] {
  const ok = fwhm.filter((f) => f > 0 && Number.isFinite(f)).sort((a, b) => a - b);
  if (ok.length === 0) return fwhm.map(() => base);
  const med = ok.length % 2 ? ok[ok.length >> 1]! : (ok[ok.length / 2 - 1]! + ok[ok.length / 2]!) / 2;
  return fwhm.map((f) => (f > 0 && Number.isFinite(f) ? Math.max(base, (1.2 * ((med / f) ** 2 - 1)) / kHigh) : base));
}

/**
 * Rejects and combines one band per the contract above. With `field` (the tiled workflow's
 * weight field over the band's rows, cpu/stack-weightfield.ts) each frame's weight is read per
 * pixel from it (rowWeights) instead of p.weight, in every sum alike: the centres, the
 * survivors' mean and the min_keep rule's "no weight" test; bounds and tallies are unchanged.
 */
export function rejectNoiseModel(frames: Float32Array, p: NoiseRejectParams, px: NoiseRejectPixels, field: WeightFieldRows | null = null): StackResult {
  validateNoiseReject(p, frames.length, px);
  const { width: W, rows, frames: n } = p;
  const { scale, offset, weight: frameWeight } = frameParams({ ...p, method: 'sigma' });
  if (field && field.table.length !== n * field.tilesX * field.tilesY) throw new RangeError(`reject-noise: weight field holds ${field.table.length} weights, need ${n} × ${field.tilesY} × ${field.tilesX}`);
  // Per-pixel weights (field) of the current row, pixel-major, and the current pixel's.
  const rowBlend = field ? new Float64Array(n * field.tilesX) : null;
  const rowW = field ? new Float64Array(W * n) : null;
  const weight = field ? new Float64Array(n) : frameWeight;
  const { sigma2, poisson, alpha2 } = noiseFrameParams(p);
  const srcRows = p.srcRows ?? rows;
  const srcRow0 = p.srcRow0 ?? 0;
  const plane = W * rows;
  const mean = new Float32Array(plane);
  const count = new Uint32Array(plane);
  const low = new Uint32Array(n);
  const high = new Uint32Array(n);
  const v = new Float64Array(n);
  const lo = new Float64Array(n);
  const hi = new Float64Array(n);
  const kl = Math.fround(p.low);
  const kh = Math.fround(p.high);
  const mf = Math.fround(p.minFraction);
  const wk = Math.fround(p.winsorK ?? 1.5);
  const sigma = p.method === 'sigma';

  /** Bounds of every frame around centre c at pixel background b, scaled by kLow/kHigh. */
  const bounds = (c: number, b: number, kLow: number, kHigh: number) => {
    const s = b === b ? Math.max(c - b, 0) : 0;
    for (let f = 0; f < n; f++) {
      const s2 = sigma2[f]!;
      if (s2 !== s2) {
        lo[f] = -Infinity;
        hi[f] = Infinity;
        continue;
      }
      const tau = Math.sqrt(s2 + poisson[f]! * s + alpha2[f]! * s * s);
      lo[f] = c - kLow * tau;
      hi[f] = c + kHigh * tau;
    }
  };

  for (let r = 0; r < rows; r++) {
    if (field) rowWeights(field, n, W, r, rowBlend!, rowW!);
    for (let x = 0; x < W; x++) {
      const i = r * W + x;
      if (field) for (let f = 0; f < n; f++) weight[f] = rowW![x * n + f]!;
      let nv = 0;
      let sw = 0;
      let swv = 0;
      for (let f = 0; f < n; f++) {
        const raw = frames[(f * srcRows + srcRow0 + r) * W + x]!;
        const val = Math.fround(raw * scale[f]! + offset[f]!);
        v[f] = val;
        if (val === val) {
          nv++;
          sw += weight[f]!;
          swv += weight[f]! * val;
        }
      }
      if (!(nv > 0 && sw > 0)) {
        mean[i] = NaN;
        count[i] = nv;
        continue;
      }
      const m0 = swv / sw;
      const b = px.background[i]!;
      const c0 = px.centre ? px.centre[i]! : NaN;
      let c = c0 === c0 ? c0 : m0;
      const keep = minKeep(nv, mf);
      let outMean = m0;
      let outCount = nv;
      let bounded = false;
      /** Centre of the bounds the output's survivors passed. */
      let cAcc = NaN;
      if (sigma) {
        let prevN = -1;
        let prevS = NaN;
        for (let it = 0; it < p.maxIters; it++) {
          bounds(c, b, kl, kh);
          let k = 0;
          let kw = 0;
          let kwv = 0;
          for (let f = 0; f < n; f++) {
            const val = v[f]!;
            if (val >= lo[f]! && val <= hi[f]!) {
              k++;
              kw += weight[f]!;
              kwv += weight[f]! * val;
            }
          }
          if (!(k >= keep && kw > 0)) break; // refused: the previous survivors stand
          outMean = kwv / kw;
          outCount = k;
          bounded = true;
          cAcc = c;
          const fixed = k === prevN && kwv === prevS;
          prevN = k;
          prevS = kwv;
          if (fixed) break;
          c = outMean;
        }
      } else {
        for (let it = 0; it < p.maxIters; it++) {
          bounds(c, b, wk, wk);
          let acc = 0;
          for (let f = 0; f < n; f++) {
            const val = v[f]!;
            if (val === val) acc += weight[f]! * (Math.min(Math.max(val, lo[f]!), hi[f]!) - c);
          }
          c += acc / sw;
        }
        bounds(c, b, kl, kh);
        let k = 0;
        let kw = 0;
        let kwv = 0;
        for (let f = 0; f < n; f++) {
          const val = v[f]!;
          if (val >= lo[f]! && val <= hi[f]!) {
            k++;
            kw += weight[f]!;
            kwv += weight[f]! * val;
          }
        }
        if (k >= keep && kw > 0) {
          outMean = kwv / kw;
          outCount = k;
          bounded = true;
          cAcc = c;
        }
      }
      mean[i] = outMean;
      count[i] = outCount;
      if (bounded && outCount < nv) {
        bounds(cAcc, b, kl, kh);
        for (let f = 0; f < n; f++) {
          const val = v[f]!;
          if (val < lo[f]!) low[f]!++;
          else if (val > hi[f]!) high[f]!++;
        }
      }
    }
  }
  return { mean, count, rejectedLow: low, rejectedHigh: high };
}
