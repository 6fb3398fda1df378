// The `pcc.fallback: star_white` white balance: when photometric colour calibration cannot run
// for lack of data (no WCS, no catalogue, too few catalogue stars), the median colour of the
// image's unsaturated stars is made neutral. It is NOT photometric: it assumes the average
// field star is white, which it is not (the median field star is a G/K star, redder than the
// G2V white reference), so it is labelled `method: star_white` everywhere and never counts as a
// successful PCC (HYPERMETRIC_STRETCH's require_successful_pcc treats it as no PCC).
//
// Stars: the image's own detections (pcc-stars.ts), measured with PCC's aperture photometry and
// saturation tests (photometry.ts), brightest first, at most MAX_STARS; the factors are
// 1/median(R/G), 1, 1/median(B/G), divided by the largest, applied like PCC's (sky neutralised
// when background_neutralization is on).

import { channelStats, aperture, isMeasurement, linearityTest, NONLINEAR_FRACTION, radiiFor, type Measurement, type Planes } from './photometry.js';
import { PccError, throwIfAborted } from './pcc-errors.js';
import { applyFactors, resolveOptions } from './pcc.js';
import { detectImageStars, FALLBACK_FWHM, type ImageStars } from './pcc-stars.js';
import type { FwhmSource, PccOptions } from './pcc-types.js';

const MAX_STARS = 500;
const MIN_SNR = 20;

export interface StarWhiteResult {
  method: 'star_white';
  /** Always false: this is a white balance on the assumption that stars are white on average. */
  photometric: false;
  stars_detected: number;
  stars_measured: number;
  stars_used: number;
  /** Median image R/G and B/G of the stars used, before the factors. */
  median_rg: number;
  median_bg: number;
  /** Robust spread (MAD σ of ln ratio) of the stars' colours. */
  spread: { rg: number; bg: number };
  factors: [number, number, number];
  matrix: number[][];
  fwhm_px: number;
  fwhm_source: FwhmSource;
  rejected: Record<string, number>;
  background_neutralization: { applied: boolean; input_background: [number, number, number]; output_background: number };
}

function median(v: number[]): number {
  const s = v.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function runStarWhite(input: { width: number; height: number; data: Float32Array; options?: Partial<PccOptions>; saturation?: number | null; imageStars?: ImageStars; signal?: AbortSignal }): { result: StarWhiteResult; data: Float32Array } {
  const opt = resolveOptions(input.options);
  const { width, height } = input;
  const n = width * height;
  if (input.data.length !== 3 * n) throw new PccError('PCC_NOT_RGB', `image data has ${input.data.length} samples, expected 3 planes of ${width}×${height}`);
  const planes: Planes = { width, height, c: [input.data.subarray(0, n), input.data.subarray(n, 2 * n), input.data.subarray(2 * n, 3 * n)] };
  const img = input.imageStars ?? detectImageStars(planes);
  throwIfAborted(input.signal);
  const stats = planes.c.map((p) => channelStats(p));
  const fwhm = img.fwhm ?? FALLBACK_FWHM;
  const fwhmSource: FwhmSource = img.fwhm_source ?? 'fallback';
  const radii = radiiFor(fwhm, opt.min_aperture_px);
  const headerSat = input.saturation && input.saturation > 0 ? NONLINEAR_FRACTION * input.saturation : null;
  const sat = { level: [headerSat, headerSat, headerSat] as [number | null, number | null, number | null], fwhm };
  const rejected: Record<string, number> = {};
  const clipped: [number, number, number][] = [];
  const atMax: [number, number, number][] = [];
  const got: { rg: number; bg: number; m: Measurement }[] = [];
  for (const s of img.stars.slice(0, MAX_STARS)) {
    const m = aperture(planes, s.x, s.y, radii, stats, MIN_SNR, sat);
    if (!isMeasurement(m)) {
      rejected[m.reject] = (rejected[m.reject] ?? 0) + 1;
      if (m.by === 'flat_top' && m.peak) clipped.push(m.peak);
      if (m.by === 'data_max' && m.peak) atMax.push(m.peak);
      continue;
    }
    if (!(m.flux[0] > 0 && m.flux[1] > 0 && m.flux[2] > 0)) {
      rejected.bad_ratio = (rejected.bad_ratio ?? 0) + 1;
      continue;
    }
    got.push({ rg: m.flux[0] / m.flux[1], bg: m.flux[2] / m.flux[1], m });
  }
  const lin = linearityTest(got.map((g) => g.m), clipped, atMax);
  const used = got.filter((_, i) => {
    const hot = lin.flags[i]!;
    if (hot) rejected.nonlinear = (rejected.nonlinear ?? 0) + 1;
    return !hot;
  });
  if (used.length < opt.min_stars) {
    throw new PccError('PCC_TOO_FEW_STARS', `star_white: ${used.length} unsaturated stars measured (of ${img.detected} detected), need ≥ ${opt.min_stars}`, { method: 'star_white', stars_detected: img.detected, stars_used: used.length, rejected });
  }
  const mrg = median(used.map((g) => g.rg));
  const mbg = median(used.map((g) => g.bg));
  const mad = (v: number[]) => {
    const l = v.map(Math.log);
    const m = median(l);
    return 1.4826 * median(l.map((x) => Math.abs(x - m)));
  };
  const raw: [number, number, number] = [1 / mrg, 1, 1 / mbg];
  const top = Math.max(...raw);
  const k = raw.map((v) => v / top) as [number, number, number];
  const sky = stats.map((s) => s.sky) as [number, number, number];
  const { out, matrix, neutral, level } = applyFactors(input.data, n, k, sky, opt.background_neutralization, input.signal);
  return {
    result: {
      method: 'star_white',
      photometric: false,
      stars_detected: img.detected,
      stars_measured: got.length,
      stars_used: used.length,
      median_rg: mrg,
      median_bg: mbg,
      spread: { rg: mad(used.map((g) => g.rg)), bg: mad(used.map((g) => g.bg)) },
      factors: k,
      matrix,
      fwhm_px: fwhm,
      fwhm_source: fwhmSource,
      rejected,
      background_neutralization: { applied: neutral, input_background: sky, output_background: neutral ? level : NaN },
    },
    data: out,
  };
}
