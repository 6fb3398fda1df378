// The stack's own stars for PCC, found with the project's star detection (src/algorithms/
// stars.ts, used through its public API) on the luminance (mean of R, G, B): their FWHM sizes the
// photometry apertures, and the star_white fallback measures their colours.
//
// FWHM, in order of trust: the median Moffat-fit FWHM of unsaturated, unblended detected stars
// (`stack_stars`, at least MIN_FWHM_STARS of them); else the detection's frame FWHM scale
// (`stack_scale`, moment based, with as many clean detections); else the caller's own estimate (`catalog_probe`); else a fixed
// FALLBACK_FWHM (`fallback`), which the diagnostics and the phase report as such.

import { detectStars, type Star } from '../algorithms/stars.js';
import type { Planes } from './photometry.js';

export type FwhmSource = 'stack_stars' | 'stack_scale' | 'catalog_probe' | 'fallback';

/** FWHM (px) assumed when nothing could be measured. */
export const FALLBACK_FWHM = 3;
/** Fitted stars needed before their median FWHM is trusted. */
export const MIN_FWHM_STARS = 5;

export interface ImageStars {
  /** Unsaturated, unblended detected stars, brightest first (empty when detection failed). */
  stars: Star[];
  detected: number;
  /** Median Moffat FWHM of the fitted stars, the frame scale, or null. */
  fwhm: number | null;
  fwhm_source: Exclude<FwhmSource, 'catalog_probe' | 'fallback'> | null;
  fitted: number;
  /** Saturation level the detection used on the luminance (null when none was found). */
  saturation_level: number | null;
  /** Why detection failed, when it did. */
  failure: string | null;
}

function median(v: number[]): number {
  const s = v.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

export function detectImageStars(p: Planes, maxStars = 2000): ImageStars {
  const n = p.width * p.height;
  const lum = new Float32Array(n);
  const [r, g, b] = p.c;
  for (let i = 0; i < n; i++) lum[i] = (r[i]! + g[i]! + b[i]!) / 3;
  const det = detectStars(lum, p.width, p.height, { maxStars });
  if (!det.ok) return { stars: [], detected: 0, fwhm: null, fwhm_source: null, fitted: 0, saturation_level: null, failure: `${det.code}: ${det.detail}` };
  const clean = det.stars.filter((s) => !s.saturated && !s.blended);
  const fitted = clean.filter((s) => s.shape === 'fit' && s.fwhm > 0.5 && s.fwhm < 50).map((s) => s.fwhm);
  let fwhm: number | null = null;
  let src: ImageStars['fwhm_source'] = null;
  if (fitted.length >= MIN_FWHM_STARS) {
    fwhm = median(fitted);
    src = 'stack_stars';
  } else if (det.fwhmScale > 0.5 && clean.length >= MIN_FWHM_STARS) {
    fwhm = det.fwhmScale;
    src = 'stack_scale';
  }
  return { stars: clean, detected: det.stars.length, fwhm, fwhm_source: src, fitted: fitted.length, saturation_level: Number.isFinite(det.saturationLevel) ? det.saturationLevel : null, failure: null };
}
