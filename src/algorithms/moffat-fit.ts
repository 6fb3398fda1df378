// Elliptical Moffat fit of one star patch (Levenberg–Marquardt), used for FWHM, shape and β.
//
// Profile, written so that its Gaussian limit is a regular point of the parameter space:
//   f = (1 + u·Q)^(−1/u),   Q = a·dx² + 2b·dx·dy + c·dy²,  (dx, dy) = (x − x0, y − y0),  u = 1/β,
// which is the Moffat (1 + r²/α²)^−β with α² = β/a on a principal axis, and tends to exp(−Q) (a
// Gaussian) as u → 0. (Parametrised by β and α directly, near-Gaussian stars — β of 5 to ∞, common
// with good optics — leave the fit crawling along a degenerate valley for dozens of iterations.)
// Half maximum where Q = (2^u − 1)/u (→ ln 2): along a principal axis of C = [[a, b], [b, c]],
// HWHM² = λ·(2^u − 1)/u with λ the eigenvalue of C⁻¹.
//
// Pixel integration is modelled, not corrected afterwards: a camera pixel records the PSF's
// average over its area, which to second order is f + ∇²f/24 (the 1-px box has variance 1/12 per
// axis), with ∇²f = f·[(1 + u)·|∇Q|²/(1 + uQ)² − 2(a + c)/(1 + uQ)]. So
//   m(x, y) = B + A · f · [1 + ((1 + u)|∇Q|²/(1 + uQ)² − 2(a + c)/(1 + uQ)) / 24].
// Eight free parameters [B, A, x0, y0, a, b, c, u], u kept in [0.001, 1.25] (β 0.8 … 1000) by
// projection (a step that would cross a bound stops u there and re-solves the other seven for
// that δu, so near-Gaussian stars at u = 0.001 converge as fast as the others); a fit ends once an
// accepted step lowers χ² by < 1e-4 of itself (what is left is ~1 % of a parameter's error);
// unweighted least squares over the patch's unmasked (non-NaN) pixels; the Jacobian is that of the
// point-sampled profile scaled by the pixel factor (Levenberg–Marquardt only needs a descent
// direction; χ² uses the full model).
// Fitting a point-sampled Moffat to pixel-integrated stars instead overestimates FWHM by ~5 % at
// 2.5 px (still 1.8 % after subtracting a box's 2·ln2/12 px² from the squared half width) and
// biases β up by ~10 %; with the model the bias is −0.7 % at 2.5 px, falling as FWHM⁻⁴, which
// `pixelResidual` removes (fourth-order terms). Measured on noise-free pixel-integrated Moffat
// stars (the fixture renderer) of β 2.5–8: |FWHM error| ≤ 0.3 % for FWHM ≥ 2 px, ≤ 1.3 % at
// 1.6 px; β within 5 % for FWHM ≥ 2.5 px (test/algorithms/stars.test.ts repeats the check).
// Invariant: inputs are never modified; no allocation per iteration (scratch lives in the fitter).

/** Fourth-order pixel-integration residual: FWHM × (1 + 0.25/FWHM⁴) (calibrated, see above). */
export function pixelResidual(fwhm: number): number {
  return fwhm * (1 + PIXEL_RESIDUAL / fwhm ** 4);
}
export const PIXEL_RESIDUAL = 0.25;

export interface MoffatFit {
  ok: boolean;
  background: number;
  amplitude: number;
  x: number;
  y: number;
  beta: number;
  /** FWHM along the major and minor axes after the pixel correction (px). */
  fwhmMajor: number;
  fwhmMinor: number;
  /** Direction of the major axis, degrees from +x toward +y, in [0, 180). */
  angle: number;
  iterations: number;
  /** RMS of the residuals (patch units). */
  rms: number;
  /** Quadratic-form coefficients of the fitted profile: Q = a·dx² + 2b·dx·dy + c·dy². */
  qa: number;
  qb: number;
  qc: number;
}

/** g = ln(1 + uQ)/u (→ Q as u → 0) and ∂g/∂u, by series where uQ is tiny. */
function gAndDu(u: number, q: number, out: { g: number; du: number }): void {
  const t = u * q;
  if (t < 1e-4) {
    out.g = q * (1 - t / 2 + (t * t) / 3);
    out.du = q * q * (-0.5 + (2 / 3) * t);
    return;
  }
  const l = Math.log1p(t);
  out.g = l / u;
  out.du = (t / (1 + t) - l) / (u * u);
}

const unitScratch = { g: 0, du: 0 };

/** The fitted profile at pixel (x, y) with unit amplitude and no background (pixel-integrated to 2nd order). */
export function moffatUnit(fit: MoffatFit, x: number, y: number): number {
  const dx = x - fit.x;
  const dy = y - fit.y;
  const a = fit.qa;
  const b = fit.qb;
  const c = fit.qc;
  const u = 1 / fit.beta;
  const q = a * dx * dx + 2 * b * dx * dy + c * dy * dy;
  const w = 1 + u * q;
  const qx = 2 * (a * dx + b * dy);
  const qy = 2 * (b * dx + c * dy);
  const pix = 1 + (((1 + u) * (qx * qx + qy * qy)) / (w * w) - (2 * (a + c)) / w) / 24;
  gAndDu(u, q, unitScratch);
  return Math.exp(-unitScratch.g) * pix;
}

export interface PatchView {
  /** Patch values (background-subtracted), row-major `size` × `size`; NaN = masked. */
  values: Float64Array;
  size: number;
  /** Pixel coordinates of patch element (0, 0). */
  x0: number;
  y0: number;
}

const NP = 8;
/**
 * Relative χ² drop of an accepted step that ends the fit. Drops shrink geometrically near the
 * minimum (by ~40× per step on the bench stars), so after one below 1e-4 what is left to gain is
 * ~1e-6 of χ², a parameter change of ~1 % of its statistical error; the next iteration's damped
 * steps mostly fail within the Jacobian's approximation anyway.
 */
const FIT_DROP = 1e-4;
/** Bounds of u = 1/β. */
const U_MIN = 1e-3;
const U_MAX = 1.25;

/** Solves the symmetric positive system M·x = v (M is NP×NP, row-major, modified). */
function solve(m: Float64Array, v: Float64Array, out: Float64Array): boolean {
  // Cholesky decomposition in place (lower triangle).
  for (let j = 0; j < NP; j++) {
    let d = m[j * NP + j]!;
    for (let k = 0; k < j; k++) d -= m[j * NP + k]! ** 2;
    if (!(d > 0)) return false;
    const l = Math.sqrt(d);
    m[j * NP + j] = l;
    for (let i = j + 1; i < NP; i++) {
      let s = m[i * NP + j]!;
      for (let k = 0; k < j; k++) s -= m[i * NP + k]! * m[j * NP + k]!;
      m[i * NP + j] = s / l;
    }
  }
  for (let i = 0; i < NP; i++) {
    let s = v[i]!;
    for (let k = 0; k < i; k++) s -= m[i * NP + k]! * out[k]!;
    out[i] = s / m[i * NP + i]!;
  }
  for (let i = NP - 1; i >= 0; i--) {
    let s = out[i]!;
    for (let k = i + 1; k < NP; k++) s -= m[k * NP + i]! * out[k]!;
    out[i] = s / m[i * NP + i]!;
  }
  return true;
}

export class MoffatFitter {
  private readonly jtj = new Float64Array(NP * NP);
  private readonly jtr = new Float64Array(NP);
  private readonly sys = new Float64Array(NP * NP);
  private readonly rhs = new Float64Array(NP);
  private readonly step = new Float64Array(NP);
  private readonly p = new Float64Array(NP);
  private readonly trial = new Float64Array(NP);
  private readonly gd = { g: 0, du: 0 };

  /** Sum of squared residuals at parameters `p`; NaN when the parameters are invalid. */
  private chi2(patch: PatchView, p: Float64Array): number {
    const B = p[0]!, A = p[1]!, xc = p[2]!, yc = p[3]!, a = p[4]!, b = p[5]!, c = p[6]!, u = p[7]!;
    if (!(a > 0 && c > 0 && a * c - b * b > 0 && u >= U_MIN && u <= U_MAX && A > 0)) return NaN;
    const { values, size, x0, y0 } = patch;
    const gd = this.gd;
    let s = 0;
    for (let j = 0; j < size; j++) {
      const dy = y0 + j - yc;
      for (let i = 0; i < size; i++) {
        const v = values[j * size + i]!;
        if (v !== v) continue;
        const dx = x0 + i - xc;
        const q = a * dx * dx + 2 * b * dx * dy + c * dy * dy;
        const w = 1 + u * q;
        const qx = 2 * (a * dx + b * dy);
        const qy = 2 * (b * dx + c * dy);
        const pix = 1 + (((1 + u) * (qx * qx + qy * qy)) / (w * w) - (2 * (a + c)) / w) / 24;
        gAndDu(u, q, gd);
        const r = v - (B + A * Math.exp(-gd.g) * pix);
        s += r * r;
      }
    }
    return s;
  }

  /** Normal equations JᵀJ and Jᵀr at `p` (accumulated in locals: this is the hot loop). */
  private normal(patch: PatchView, p: Float64Array): void {
    const B = p[0]!, A = p[1]!, xc = p[2]!, yc = p[3]!, a = p[4]!, b = p[5]!, c = p[6]!, u = p[7]!;
    const { values, size, x0, y0 } = patch;
    const gd = this.gd;
    let h00 = 0, h01 = 0, h02 = 0, h03 = 0, h04 = 0, h05 = 0, h06 = 0, h07 = 0, h11 = 0, h12 = 0, h13 = 0, h14 = 0, h15 = 0, h16 = 0, h17 = 0, h22 = 0, h23 = 0, h24 = 0, h25 = 0, h26 = 0, h27 = 0, h33 = 0, h34 = 0, h35 = 0, h36 = 0, h37 = 0, h44 = 0, h45 = 0, h46 = 0, h47 = 0, h55 = 0, h56 = 0, h57 = 0, h66 = 0, h67 = 0, h77 = 0;
    let r0 = 0, r1 = 0, r2 = 0, r3 = 0, r4 = 0, r5 = 0, r6 = 0, r7 = 0;
    for (let j = 0; j < size; j++) {
      const dy = y0 + j - yc;
      for (let i = 0; i < size; i++) {
        const v = values[j * size + i]!;
        if (v !== v) continue;
        const dx = x0 + i - xc;
        const q = a * dx * dx + 2 * b * dx * dy + c * dy * dy;
        const w = 1 + u * q;
        const qx = 2 * (a * dx + b * dy);
        const qy = 2 * (b * dx + c * dy);
        const pix = 1 + (((1 + u) * (qx * qx + qy * qy)) / (w * w) - (2 * (a + c)) / w) / 24;
        gAndDu(u, q, gd);
        const f = Math.exp(-gd.g) * pix;
        const r = v - (B + A * f);
        // ∂m/∂Q = −A·f/(1 + uQ); ∂m/∂u = −A·f·∂g/∂u.
        const dq = (-A * f) / w;
        const g0 = 1;
        const g1 = f;
        const g2 = -dq * qx;
        const g3 = -dq * qy;
        const g4 = dq * dx * dx;
        const g5 = 2 * dq * dx * dy;
        const g6 = dq * dy * dy;
        const g7 = -A * f * gd.du;
        r0 += g0 * r;
        r1 += g1 * r;
        r2 += g2 * r;
        r3 += g3 * r;
        r4 += g4 * r;
        r5 += g5 * r;
        r6 += g6 * r;
        r7 += g7 * r;
        h00 += g0 * g0;
        h01 += g0 * g1;
        h02 += g0 * g2;
        h03 += g0 * g3;
        h04 += g0 * g4;
        h05 += g0 * g5;
        h06 += g0 * g6;
        h07 += g0 * g7;
        h11 += g1 * g1;
        h12 += g1 * g2;
        h13 += g1 * g3;
        h14 += g1 * g4;
        h15 += g1 * g5;
        h16 += g1 * g6;
        h17 += g1 * g7;
        h22 += g2 * g2;
        h23 += g2 * g3;
        h24 += g2 * g4;
        h25 += g2 * g5;
        h26 += g2 * g6;
        h27 += g2 * g7;
        h33 += g3 * g3;
        h34 += g3 * g4;
        h35 += g3 * g5;
        h36 += g3 * g6;
        h37 += g3 * g7;
        h44 += g4 * g4;
        h45 += g4 * g5;
        h46 += g4 * g6;
        h47 += g4 * g7;
        h55 += g5 * g5;
        h56 += g5 * g6;
        h57 += g5 * g7;
        h66 += g6 * g6;
        h67 += g6 * g7;
        h77 += g7 * g7;
      }
    }
    const jtj = this.jtj;
    const jtr = this.jtr;
    jtr[0] = r0;
    jtr[1] = r1;
    jtr[2] = r2;
    jtr[3] = r3;
    jtr[4] = r4;
    jtr[5] = r5;
    jtr[6] = r6;
    jtr[7] = r7;
    jtj[0] = h00;
    jtj[1] = h01;
    jtj[8] = h01;
    jtj[2] = h02;
    jtj[16] = h02;
    jtj[3] = h03;
    jtj[24] = h03;
    jtj[4] = h04;
    jtj[32] = h04;
    jtj[5] = h05;
    jtj[40] = h05;
    jtj[6] = h06;
    jtj[48] = h06;
    jtj[7] = h07;
    jtj[56] = h07;
    jtj[9] = h11;
    jtj[10] = h12;
    jtj[17] = h12;
    jtj[11] = h13;
    jtj[25] = h13;
    jtj[12] = h14;
    jtj[33] = h14;
    jtj[13] = h15;
    jtj[41] = h15;
    jtj[14] = h16;
    jtj[49] = h16;
    jtj[15] = h17;
    jtj[57] = h17;
    jtj[18] = h22;
    jtj[19] = h23;
    jtj[26] = h23;
    jtj[20] = h24;
    jtj[34] = h24;
    jtj[21] = h25;
    jtj[42] = h25;
    jtj[22] = h26;
    jtj[50] = h26;
    jtj[23] = h27;
    jtj[58] = h27;
    jtj[27] = h33;
    jtj[28] = h34;
    jtj[35] = h34;
    jtj[29] = h35;
    jtj[43] = h35;
    jtj[30] = h36;
    jtj[51] = h36;
    jtj[31] = h37;
    jtj[59] = h37;
    jtj[36] = h44;
    jtj[37] = h45;
    jtj[44] = h45;
    jtj[38] = h46;
    jtj[52] = h46;
    jtj[39] = h47;
    jtj[60] = h47;
    jtj[45] = h55;
    jtj[46] = h56;
    jtj[53] = h56;
    jtj[47] = h57;
    jtj[61] = h57;
    jtj[54] = h66;
    jtj[55] = h67;
    jtj[62] = h67;
    jtj[63] = h77;
  }

  /**
   * The damped step (JᵀJ + λ·diag)·δ = Jᵀr into `step`; with a finite `du`, δu = du is given and
   * the other seven components solved for it (its coupling moved to the right-hand side).
   */
  private solveStep(lambda: number, du: number): boolean {
    const sys = this.sys;
    const rhs = this.rhs;
    const jtj = this.jtj;
    sys.set(jtj);
    rhs.set(this.jtr);
    for (let m = 0; m < NP; m++) sys[m * NP + m] = jtj[m * NP + m]! * (1 + lambda) + 1e-30;
    if (du === du) {
      for (let m = 0; m < NP - 1; m++) {
        rhs[m] = rhs[m]! - jtj[m * NP + 7]! * du;
        sys[m * NP + 7] = 0;
        sys[7 * NP + m] = 0;
      }
      sys[7 * NP + 7] = 1;
      rhs[7] = du;
    }
    return solve(sys, rhs, this.step);
  }

  /**
   * Fits the patch. Start: centre (x, y), amplitude, background 0, and the Gaussian-equivalent
   * second-moment matrix [[mxx, mxy], [mxy, myy]] (px²) which seeds the shape at β = 3.
   */
  fit(patch: PatchView, start: { x: number; y: number; amplitude: number; mxx: number; myy: number; mxy: number }, maxIterations = 30, from?: MoffatFit): MoffatFit {
    const p = this.p;
    // A Gaussian with covariance M is exp(−dᵀM⁻¹d/2): C = M⁻¹/2, and (1 + uQ)^(−1/u) ≈ exp(−Q)
    // near the core for any u, so that C suits the start at β = 3.
    const sxx = Math.max(0.1, start.mxx);
    const syy = Math.max(0.1, start.myy);
    let sxy = start.mxy;
    if (sxx * syy - sxy * sxy <= 0) sxy = 0;
    const det = sxx * syy - sxy * sxy;
    p[0] = 0;
    p[1] = Math.max(start.amplitude, 1e-12);
    p[2] = start.x;
    p[3] = start.y;
    p[4] = syy / det / 2;
    p[5] = -sxy / det / 2;
    p[6] = sxx / det / 2;
    p[7] = 1 / 3;
    if (from && from.ok) {
      p[0] = from.background;
      p[1] = from.amplitude;
      p[2] = from.x;
      p[3] = from.y;
      p[4] = from.qa;
      p[5] = from.qb;
      p[6] = from.qc;
      p[7] = Math.min(U_MAX, Math.max(U_MIN, 1 / from.beta));
    }
    let chi = this.chi2(patch, p);
    const fail = (iterations: number): MoffatFit => ({ ok: false, background: NaN, amplitude: NaN, x: NaN, y: NaN, beta: NaN, fwhmMajor: NaN, fwhmMinor: NaN, angle: NaN, iterations, rms: NaN, qa: NaN, qb: NaN, qc: NaN });
    if (!Number.isFinite(chi)) return fail(0);
    let lambda = 1e-3;
    let it = 0;
    let converged = false;
    for (; it < maxIterations && !converged; it++) {
      this.normal(patch, p);
      let improved = false;
      for (let attempt = 0; attempt < 12; attempt++) {
        if (!this.solveStep(lambda, NaN)) {
          lambda *= 10;
          continue;
        }
        // A step that takes u beyond a bound: u stops at the bound and the other seven parameters
        // are solved again with that δu given (projected Levenberg–Marquardt). Merely clamping u
        // leaves them a poor direction: near-Gaussian stars (u at U_MIN) then crawled to the
        // iteration cap with most trial steps refused.
        const u0 = p[7]!;
        const u1 = u0 + this.step[7]!;
        if ((u1 < U_MIN || u1 > U_MAX) && !this.solveStep(lambda, Math.min(U_MAX, Math.max(U_MIN, u1)) - u0)) {
          lambda *= 10;
          continue;
        }
        const t = this.trial;
        for (let m = 0; m < NP; m++) t[m] = p[m]! + this.step[m]!;
        // Projected step: u stays within its bounds (a Gaussian star sits at the lower one).
        t[7] = Math.min(U_MAX, Math.max(U_MIN, t[7]!));
        const c2 = this.chi2(patch, t);
        if (Number.isFinite(c2) && c2 <= chi) {
          const drop = chi - c2;
          p.set(t);
          lambda = Math.max(lambda / 5, 1e-7);
          improved = true;
          const moved = Math.abs(this.step[2]!) + Math.abs(this.step[3]!);
          if (drop <= FIT_DROP * chi || (moved < 1e-6 && drop <= 1e-6 * chi)) converged = true;
          chi = c2;
          break;
        }
        lambda *= 8;
      }
      if (!improved) {
        converged = true;
      }
    }
    const B = p[0]!, A = p[1]!, xc = p[2]!, yc = p[3]!, a = p[4]!, b = p[5]!, c = p[6]!, uu = p[7]!;
    const beta = 1 / uu;
    const d = a * c - b * b;
    if (!(d > 0) || !(A > 0)) return fail(it);
    // S = C⁻¹; its eigenvalues and major-axis direction.
    const s11 = c / d;
    const s22 = a / d;
    const s12 = -b / d;
    const tr = (s11 + s22) / 2;
    const disc = Math.sqrt(((s11 - s22) / 2) ** 2 + s12 * s12);
    const l1 = tr + disc;
    const l2 = tr - disc;
    // Half maximum at Q = (2^u − 1)/u.
    const qh = (2 ** uu - 1) / uu;
    const h1 = l1 * qh;
    const h2 = l2 * qh;
    if (!(h2 > 0)) return fail(it);
    let angle = (0.5 * Math.atan2(2 * s12, s11 - s22) * 180) / Math.PI;
    if (angle < 0) angle += 180;
    let n = 0;
    for (let q = 0; q < patch.values.length; q++) if (patch.values[q] === patch.values[q]) n++;
    return {
      ok: true,
      background: B,
      amplitude: A,
      x: xc,
      y: yc,
      beta,
      fwhmMajor: pixelResidual(2 * Math.sqrt(h1)),
      fwhmMinor: pixelResidual(2 * Math.sqrt(h2)),
      angle,
      iterations: it,
      rms: Math.sqrt(chi / Math.max(1, n - NP)),
      qa: a,
      qb: b,
      qc: c,
    };
  }
}
