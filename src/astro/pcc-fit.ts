// The colour fit of PCC (Siril SPCC style, predecessor §5.3): per ratio (R/G, B/G) a robust
// line image_ratio = a + b · catalogue_ratio, where the catalogue ratio is relative to the white
// reference; the image ratio a white-reference star would have is a + b, so k_R = 1/(a+b),
// k_B likewise, k_G = 1, then all divided by the largest (no channel is amplified).
//
// Robustness: Siegel repeated-median line (50 % breakdown), then stars further than 3 robust σ
// from either line are dropped and the line is refitted. When the catalogue colours barely vary
// (a slope cannot be determined) the line goes through the origin (pure channel gain, the
// physical model of a diagonal correction). Guards are checked by the caller (pcc.ts).

import type { ChannelLine } from './pcc-types.js';

function median(v: ArrayLike<number>): number {
  const s = Array.from(v).sort((a, b) => a - b);
  if (s.length === 0) return NaN;
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Siegel repeated-median line y = a + b·x; null with fewer than two distinct x. */
export function siegelLine(x: number[], y: number[]): { a: number; b: number } | null {
  const n = x.length;
  const inner: number[] = [];
  for (let i = 0; i < n; i++) {
    const s: number[] = [];
    for (let j = 0; j < n; j++) {
      if (j === i) continue;
      const dx = x[j]! - x[i]!;
      if (dx !== 0) s.push((y[j]! - y[i]!) / dx);
    }
    if (s.length > 0) inner.push(median(s));
  }
  if (inner.length < 2) return null;
  const b = median(inner);
  const a = median(x.map((xi, i) => y[i]! - b * xi));
  return { a, b };
}

/** Relative spread of x below which a slope is not determined (1.4826·MAD / median). */
export const MIN_COLOUR_SPREAD = 0.03;

export function fitLine(x: number[], y: number[]): ChannelLine {
  const mx = median(x);
  const spread = (1.4826 * median(x.map((v) => Math.abs(v - mx)))) / Math.abs(mx);
  let a = 0;
  let b: number;
  const line = spread >= MIN_COLOUR_SPREAD ? siegelLine(x, y) : null;
  if (line && line.a + line.b > 0) {
    a = line.a;
    b = line.b;
  } else {
    b = median(x.map((xi, i) => y[i]! / xi));
  }
  const rel = x.map((xi, i) => (y[i]! - (a + b * xi)) / (a + b * xi));
  const mr = median(rel);
  const residual = 1.4826 * median(rel.map((r) => Math.abs(r - mr)));
  return { intercept: a, slope: b, at_white: a + b, residual_rms: residual };
}

/** Relative residuals of each point about a line. */
export function relResiduals(l: ChannelLine, x: number[], y: number[]): number[] {
  return x.map((xi, i) => (y[i]! - (l.intercept + l.slope * xi)) / (l.intercept + l.slope * xi));
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
