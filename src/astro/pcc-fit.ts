// The colour fit of PCC (after Siril SPCC, as the predecessor did): per ratio (R/G, B/G) a robust line
// between the star's image ratio and its catalogue ratio (relative to the white reference, so
// the white reference sits at catalogue ratio 1); the image ratio a white-reference star would
// have, W, gives k_R = 1/W_R, k_B = 1/W_B, k_G = 1, then all divided by the largest (no channel
// is amplified).
//
// The line is fitted in log–log space, ln(image) = a + b·ln(catalogue), so W = exp(a). The
// predecessor fitted linear ratios; but a camera's dye bands relate to the sRGB colours of the
// catalogue model by close to a power law (for the generator's IMX571-like dyes ln–ln slopes
// stay within 0.83–0.87 for R/G and 0.57–0.60 for B/G over B−V −0.2…1.8, while the linear B/G
// relation is visibly convex), so the log–log line reads W with less model error, and its
// residuals are relative (≈ magnitudes / 1.086) without choosing a scale.
//
// Robustness: Siegel repeated-median line (50 % breakdown), then stars further than 3 robust σ
// from either line are dropped and the line is refitted. When the catalogue colours barely vary
// (a slope cannot be determined) the slope is fixed at 1 (pure channel gain, the physical model
// of a diagonal correction). Guards are checked by the caller (pcc.ts).

import { medianInPlace } from '../algorithms/robust-stats.js';
import type { ChannelLine } from './pcc-types.js';

/** Median of a copy (selection, O(n)). */
function median(v: ArrayLike<number>): number {
  return medianInPlace(Float64Array.from(v));
}

/** Siegel repeated-median line y = a + b·x; null with fewer than two distinct x. */
export function siegelLine(x: number[], y: number[]): { a: number; b: number } | null {
  const n = x.length;
  const inner: number[] = [];
  const s = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    let m = 0;
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      const dx = x[j]! - x[i]!;
      if (dx !== 0) s[m++] = (y[j]! - y[i]!) / dx;
    }
    if (m > 0) inner.push(medianInPlace(s.subarray(0, m)));
  }
  if (inner.length < 2) return null;
  const b = median(inner);
  const a = median(x.map((xi, i) => y[i]! - b * xi));
  return { a, b };
}

/** Robust spread of ln(catalogue ratio) below which a slope is not determined. */
export const MIN_COLOUR_SPREAD = 0.03;

/** Log–log line of image vs catalogue ratios (both > 0). */
export function fitLine(x: number[], y: number[]): ChannelLine {
  const lx = x.map(Math.log);
  const ly = y.map(Math.log);
  const mx = median(lx);
  const spread = 1.4826 * median(lx.map((v) => Math.abs(v - mx)));
  let a: number;
  let b = 1;
  const line = spread >= MIN_COLOUR_SPREAD ? siegelLine(lx, ly) : null;
  if (line) {
    a = line.a;
    b = line.b;
  } else {
    a = median(lx.map((v, i) => ly[i]! - v));
  }
  const res = lx.map((v, i) => ly[i]! - (a + b * v));
  const mr = median(res);
  return { intercept: a, slope: b, at_white: Math.exp(a), residual_rms: 1.4826 * median(res.map((r) => Math.abs(r - mr))), slope_fixed: !line };
}

/** ln residuals (≈ relative) of each point about a line. */
export function relResiduals(l: ChannelLine, x: number[], y: number[]): number[] {
  return x.map((xi, i) => Math.log(y[i]!) - (l.intercept + l.slope * Math.log(xi)));
}

export interface ColourFit {
  rg: ChannelLine;
  bg: ChannelLine;
  /** Per input star: kept after the outlier clip. */
  used: boolean[];
  factors: [number, number, number];
  determinant: number;
  condition_number: number;
  residual_rms: number;
}

/** Floor of the outlier clip's σ (relative), so an almost noiseless fit does not drop good stars. */
const CLIP_FLOOR = 0.01;

export function fitColours(catRg: number[], catBg: number[], imgRg: number[], imgBg: number[]): ColourFit {
  const n = catRg.length;
  let rg = fitLine(catRg, imgRg);
  let bg = fitLine(catBg, imgBg);
  const resR = relResiduals(rg, catRg, imgRg);
  const resB = relResiduals(bg, catBg, imgBg);
  const sR = Math.max(rg.residual_rms, CLIP_FLOOR);
  const sB = Math.max(bg.residual_rms, CLIP_FLOOR);
  const used = Array.from({ length: n }, (_, i) => Math.abs(resR[i]!) <= 3 * sR && Math.abs(resB[i]!) <= 3 * sB);
  const pick = (v: number[]) => v.filter((_, i) => used[i]);
  if (used.filter(Boolean).length >= 2) {
    rg = fitLine(pick(catRg), pick(imgRg));
    bg = fitLine(pick(catBg), pick(imgBg));
  }
  const raw: [number, number, number] = [1 / rg.at_white, 1, 1 / bg.at_white];
  const top = Math.max(...raw);
  const factors = raw.map((k) => k / top) as [number, number, number];
  const lo = Math.min(...factors);
  return {
    rg,
    bg,
    used,
    factors,
    determinant: factors[0] * factors[1] * factors[2],
    condition_number: lo > 0 ? 1 / lo : Infinity,
    residual_rms: Math.sqrt((rg.residual_rms ** 2 + bg.residual_rms ** 2) / 2),
  };
}
