// TypeScript reference for shaders/stretch/*: the tone curves with the kernels' contracts,
// evaluated in f64 and rounded to f32 once at the end (the kernels work in f32; tests state
// the tolerance). Formulas, exactly (see the shader headers for the same text):
//
// MTF (PixInsight HistogramTransformation / Siril autostretch), per channel (c0 < c1, 0 < m < 1):
//   t = clamp((x − c0) / (c1 − c0), 0, 1);  out = MTF(m, t) = (m − 1) t / ((2m − 1) t − m)
//   MTF(m, 0) = 0, MTF(m, m) = 1/2, MTF(m, 1) = 1; m = 1/2 is the identity.
//
// HyperMetric Stretch per-pixel colour stretch (the predecessor's port of VeraLux HMS), on R,
// G, B:
//   a_c = max(x_c − anchor, 0);  L = wR a_R + wG a_G + wB a_B
//   f(v) = (asinh(D v + b) − asinh(b)) / (asinh(D vw + b) − asinh(b)),
//          D = 10^logD, b = protectB ≥ 0, vw = white − anchor (so f(0) = 0 and f(vw) = 1)
//   Ls = clamp(f(L), 0, 1);  k = Ls^p (p = convergencePower; 0 at Ls = 0)
//   cp_c = Ls (r_c (1 − k) + k), r_c = a_c / L (0 when L = 0)   colour-preserving, → neutral
//   w = grip Ls^shadow (Ls^0 = 1);  v_c = w cp_c + (1 − w) clamp(f(a_c), 0, 1)
//   out_c = pedestal + (1 − pedestal) clamp(v_c, 0, 1)
// HMS drives this with its solved logD (bisection so that f(median L) = target_bg), its colour
// strategy (grip = colorGrip, shadow = shadowConvergence; ready_to_use maps strategy s < 0 to
// shadow 3|s|, grip 1, else grip 1 − 0.6 s), and pedestal 0.005; output scaling and the final
// MTF to target_bg are separate passes (stats + stretch_mtf).
// No-data: non-finite inputs (NaN, ±Inf) give NaN (for asinh: in all three channels of the pixel).
// Parameters are rounded to f32 first (c0, m, c1; anchor, weights, white, D, b), exactly as the
// kernels receive them, so the reference and the kernels evaluate the same curve.

/** Midtones transfer function (exact at 0, m and 1). */
export function mtf(m: number, t: number): number {
  if (t <= 0) return 0;
  if (t >= 1) return 1;
  return ((m - 1) * t) / ((2 * m - 1) * t - m);
}

export interface MtfParams {
  /** Shadows clip: input mapped to 0. */
  c0: number;
  /** Midtones balance in (0, 1): the (clipped, normalised) input level mapped to 1/2. */
  m: number;
  /** Highlights clip: input mapped to 1. */
  c1: number;
}

export function checkMtf(p: MtfParams): void {
  if (!(p.c1 > p.c0) || !Number.isFinite(p.c0) || !Number.isFinite(p.c1)) throw new RangeError(`mtf: need finite c0 < c1 (got ${p.c0}, ${p.c1})`);
  if (!(p.m > 0 && p.m < 1)) throw new RangeError(`mtf: midtones m must be in (0, 1) (got ${p.m})`);
}

/** MTF with clipping on one plane. */
export function stretchMtf(input: Float32Array, p: MtfParams): Float32Array {
  checkMtf(p);
  const out = new Float32Array(input.length);
  const c0 = Math.fround(p.c0);
  const m = Math.fround(p.m);
  const inv = 1 / (Math.fround(p.c1) - c0);
  const a = m - 1;
  const b = 2 * m - 1;
  for (let i = 0; i < input.length; i++) {
    const x = input[i]!;
    if (x - x !== 0) {
      out[i] = NaN;
      continue;
    }
    const t = (x - c0) * inv;
    out[i] = t <= 0 ? 0 : t >= 1 ? 1 : (a * t) / (b * t - m);
  }
  return out;
}

/** Luminance weights of the rec709 profile (HMS's default sensor profile). */
export const REC709: readonly [number, number, number] = [0.2126, 0.7152, 0.0722];

export interface AsinhParams {
  /** Black point subtracted from each channel before anything else. */
  anchor: number;
  /** Luminance weights wR, wG, wB (≥ 0, not all 0). */
  weights: readonly [number, number, number];
  /** Stretch strength: D = 10^logD. */
  logD: number;
  /** b = HMS protect_b (≥ 0): larger b keeps the curve closer to linear near black. */
  protectB: number;
  /** Input level (before anchoring) that maps to 1; default 1. */
  white?: number;
  /** p = HMS convergence_power (> 0): how fast colour converges to neutral in highlights. */
  convergencePower: number;
  /** grip = HMS color_grip in [0, 1]: 1 = fully colour-preserving, 0 = per-channel stretch. */
  colorGrip: number;
  /** shadow = HMS shadow_convergence (≥ 0): per-channel stretch weight rises in the shadows. */
  shadowConvergence?: number;
  /** Output pedestal in [0, 1): outputs span [pedestal, 1]. */
  pedestal?: number;
}

/** The curve constants both paths use (f64). */
export interface AsinhCurve {
  /** 10^logD, rounded to f32 */
  d: number;
  /** protectB, rounded to f32 */
  b: number;
  /** sqrt(b² + 1) */
  sb: number;
  /** b + sqrt(b² + 1) */
  bsb: number;
  /** 1 / (asinh(D vw + b) − asinh(b)) */
  norm: number;
  vw: number;
}

export function asinhCurve(p: AsinhParams): AsinhCurve {
  const white = Math.fround(p.white ?? 1);
  const vw = white - Math.fround(p.anchor);
  const [wr, wg, wb] = p.weights;
  if (!(vw > 0)) throw new RangeError(`asinh: white ${white} must exceed anchor ${p.anchor}`);
  if (!(p.protectB >= 0) || !Number.isFinite(p.logD)) throw new RangeError(`asinh: need protectB >= 0 and a finite logD`);
  if (!(wr >= 0 && wg >= 0 && wb >= 0 && wr + wg + wb > 0)) throw new RangeError('asinh: weights must be >= 0 and not all 0');
  if (!(p.convergencePower > 0)) throw new RangeError('asinh: convergencePower must be > 0');
  if (!(p.colorGrip >= 0 && p.colorGrip <= 1)) throw new RangeError('asinh: colorGrip must be in [0, 1]');
  if (!((p.shadowConvergence ?? 0) >= 0)) throw new RangeError('asinh: shadowConvergence must be >= 0');
  const pedestal = p.pedestal ?? 0;
  if (!(pedestal >= 0 && pedestal < 1)) throw new RangeError('asinh: pedestal must be in [0, 1)');
  const d = Math.fround(10 ** p.logD);
  const b = Math.fround(p.protectB);
  const sb = Math.sqrt(b * b + 1);
  const bsb = b + sb;
  const curve: AsinhCurve = { d, b, sb, bsb, norm: 1, vw };
  curve.norm = 1 / numerator(curve, vw);
  return curve;
}

/** asinh(D v + b) − asinh(b) for v ≥ 0, without cancellation. */
function numerator(c: AsinhCurve, v: number): number {
  const dv = c.d * v;
  const u = dv + c.b;
  const su = Math.sqrt(u * u + 1);
  return Math.log1p((dv * (1 + (u + c.b) / (su + c.sb))) / c.bsb);
}

/** The normalised curve f(v) (unclamped), v ≥ 0 (anchored units). */
export function asinhCurveValue(c: AsinhCurve, v: number): number {
  return numerator(c, v) * c.norm;
}

const clamp01 = (v: number) => (v < 0 ? 0 : v > 1 ? 1 : v);

/** The HMS per-pixel stretch of three planes of equal length. */
export function stretchAsinh(r: Float32Array, g: Float32Array, b: Float32Array, p: AsinhParams): [Float32Array, Float32Array, Float32Array] {
  const n = r.length;
  if (g.length !== n || b.length !== n) throw new RangeError('asinh: planes differ in length');
  const c = asinhCurve(p);
  const [wr, wg, wb] = p.weights.map(Math.fround) as [number, number, number];
  const anchor = Math.fround(p.anchor);
  const power = Math.fround(p.convergencePower);
  const grip = Math.fround(p.colorGrip);
  const shadow = Math.fround(p.shadowConvergence ?? 0);
  const pedestal = Math.fround(p.pedestal ?? 0);
  const keep = 1 - pedestal;
  const perChannel = grip < 1 || shadow > 0;
  const out: [Float32Array, Float32Array, Float32Array] = [new Float32Array(n), new Float32Array(n), new Float32Array(n)];
  const [or, og, ob] = out;
  for (let i = 0; i < n; i++) {
    const xr = r[i]!;
    const xg = g[i]!;
    const xb = b[i]!;
    if (xr - xr !== 0 || xg - xg !== 0 || xb - xb !== 0) {
      or[i] = og[i] = ob[i] = NaN;
      continue;
    }
    const ar = Math.max(xr - anchor, 0);
    const ag = Math.max(xg - anchor, 0);
    const ab = Math.max(xb - anchor, 0);
    const lum = wr * ar + wg * ag + wb * ab;
    const ls = clamp01(numerator(c, lum) * c.norm);
    const k = ls > 0 ? ls ** power : 0;
    const q = lum > 0 ? ls / lum : 0;
    let vr = q * ar * (1 - k) + ls * k;
    let vg = q * ag * (1 - k) + ls * k;
    let vb = q * ab * (1 - k) + ls * k;
    if (perChannel) {
      const w = grip * (shadow === 0 ? 1 : ls > 0 ? ls ** shadow : 0);
      vr = w * vr + (1 - w) * clamp01(numerator(c, ar) * c.norm);
      vg = w * vg + (1 - w) * clamp01(numerator(c, ag) * c.norm);
      vb = w * vb + (1 - w) * clamp01(numerator(c, ab) * c.norm);
    }
    or[i] = pedestal + keep * clamp01(vr);
    og[i] = pedestal + keep * clamp01(vg);
    ob[i] = pedestal + keep * clamp01(vb);
  }
  return out;
}

/** The HyperMetric Stretch settings that shape the per-pixel stretch (the predecessor's names). */
export interface HmsPixelSettings {
  mode: 'ready_to_use' | 'scientific';
  /** Luminance weights of the sensor profile (R, G, B). */
  weights: readonly [number, number, number];
  /** Black point (adaptive or statistical anchor), in the [0, 1] input scale. */
  anchor: number;
  /** Solved or fixed log10 of the stretch factor D. */
  logD: number;
  protect_b: number;
  convergence_power: number;
  /** Colour strategy s in [−1, 1] (fixed_color_strategy; `auto` uses it too). */
  color_strategy: number;
  /** Used in scientific mode only. */
  color_grip: number;
  /** Used in scientific mode only. */
  shadow_convergence: number;
}

/**
 * Maps HMS settings to this kernel's parameters the way the predecessor did: the curve is
 * normalised at anchored luminance 1 (white = 1 + anchor); ready_to_use turns the colour
 * strategy s into shadow = 3|s|, grip = 1 for s < 0, else grip = 1 − 0.6 s, shadow 0;
 * scientific takes color_grip and shadow_convergence as they are; a shadow weight at or below
 * 0.01 counts as none; outputs get the 0.005 pedestal (v → 0.995 v + 0.005).
 */
export function hmsPixelParams(s: HmsPixelSettings): AsinhParams {
  let grip: number;
  let shadow: number;
  if (s.mode === 'ready_to_use') {
    const k = Math.max(-1, Math.min(1, s.color_strategy));
    grip = k < 0 ? 1 : 1 - 0.6 * k;
    shadow = k < 0 ? 3 * -k : 0;
  } else {
    grip = s.color_grip;
    shadow = s.shadow_convergence;
  }
  return {
    anchor: s.anchor,
    weights: s.weights,
    logD: s.logD,
    protectB: s.protect_b,
    white: 1 + s.anchor,
    convergencePower: s.convergence_power,
    colorGrip: grip,
    shadowConvergence: shadow > 0.01 ? shadow : 0,
    pedestal: 0.005,
  };
}
