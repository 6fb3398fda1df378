// Per-frame quality record (Siril-like), the relative quality score and the stacking weights.
//
// frameMetrics(detection) condenses one frame's star detection into a FrameMetrics record:
//   star_count        all detected stars (saturated and blended included);
//   fwhm              median FWHM (√(major·minor), full-resolution px) of the Moffat-fitted stars,
//                     (fewer than 5 fits: of the unsaturated stars with SNR ≥ 20, calibrated moments;
//                     fewer than MIN_SHAPE_STARS of those and more saturated stars: of the saturated
//                     stars, Moffat-fitted without their clipped pixels where stars.ts fitted them —
//                     a field of only bright stars; still fewer: every unsaturated star, as on a
//                     trailed or cloudy frame);
//   fwhm_x, fwhm_y    medians of the major- and minor-axis FWHMs of the same stars;
//   eccentricity      median of √(1 − (minor/major)²) over the same stars;
//   background_median, background_rms   global sky level and per-pixel noise (ADU);
//   median_star_flux  median aperture flux of the `fluxRankCount` (50) brightest stars, i.e. the flux
//                     of the ~25th brightest (saturated stars keep their ranks, not their fluxes).
//                     A median over *all* detections would measure the detection limit, not the sky:
//                     with star counts rising steeply toward faint magnitudes, the flux distribution
//                     above any threshold has a median fixed by the threshold (i.e. by the noise).
//                     The brightest N are the same stars in every frame of a sequence, so this
//                     median scales with transparency and exposure;
//   snr_estimate      median_star_flux / (background_rms · √n_ap), n_ap the aperture's pixel count
//                     (aperture radius 2 × frame FWHM): the background-limited SNR of the frame's
//                     typical bright star — falls with clouds (less flux), sky glow (more noise) and
//                     bad seeing (a larger aperture collects more noise);
//   saturation        fraction of pixels at or above the saturation level;
//   registration_cc   filled in by registration (null until then);
//   quality_score     filled in by scoreFrames (NaN until then).
//
// Quality score (scoreFrames), relative to the sequence so scores compare within a run:
//   q = (snr / snr~)² · (n / n~)^½ · (1 − e) / (1 − e~)        (~: median over the measured frames)
//   quality_score = q / (1 + q)   ∈ [0, 1): 0.5 for a median frame, → 1 for much better frames,
//                                 → 0 for frames with no stars or no usable metrics.
// (snr/snr~)² is the inverse-variance ratio of a background-limited point source after photometric
// normalisation; it carries transparency (flux²), noise (σ⁻²) and seeing (FWHM⁻², via the aperture).
// √(star count) rewards depth without double counting it, (1 − e) penalises elongated stars (e is
// capped at 0.95). Each factor is monotone, so the score rises with more stars, lower noise, lower
// FWHM and rounder stars. registration_cc is not part of it: reference selection needs the score
// before registration runs (cc is a filter rule instead).
//
// Stacking weight (weighting: quality): w_i ∝ q_i = score/(1 − score), the unbounded form of the
// same score — inverse-variance weighting of the normalised frames, tempered by roundness and star
// count — normalised to mean 1 over the included frames (all 1 when no frame has a positive q).
//
// Invariants: pure functions of their inputs; no exceptions for bad frames (missing values → NaN
// metrics → score 0).

import type { StarDetection } from './stars.js';

export interface FrameMetrics {
  star_count: number;
  fwhm: number;
  fwhm_x: number;
  fwhm_y: number;
  eccentricity: number;
  background_median: number;
  background_rms: number;
  snr_estimate: number;
  saturation: number;
  median_star_flux: number;
  registration_cc: number | null;
  quality_score: number;
}

export interface FrameMetricsOptions {
  /** How many of the brightest unsaturated stars set median_star_flux. Default 50. */
  fluxRankCount?: number;
  registrationCc?: number | null;
}

function median(values: number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const n = v.length;
  if (n === 0) return NaN;
  return n % 2 ? v[n >> 1]! : (v[n / 2 - 1]! + v[n / 2]!) / 2;
}

/** Fewer unsaturated stars than this with a usable shape: the shape metrics come from the saturated ones. */
export const MIN_SHAPE_STARS = 3;

/** The quality record of one frame from its star detection. */
export function frameMetrics(detection: StarDetection, options: FrameMetricsOptions = {}): FrameMetrics {
  const stars = detection.stars;
  let shape = stars.filter((s) => s.shape === 'fit' && !s.saturated);
  if (shape.length < 5) shape = stars.filter((s) => !s.saturated && s.snr >= 20);
  // Every star saturated (a wide field of only bright stars): their shapes, with the saturated
  // core measured as a plateau, are all that describes the frame; consistent within a sequence.
  if (shape.length < MIN_SHAPE_STARS) {
    const fitted = stars.filter((s) => s.saturated && s.shape === 'fit');
    const saturated = fitted.length >= MIN_SHAPE_STARS ? fitted : stars.filter((s) => s.saturated);
    if (saturated.length > shape.length) shape = saturated;
  }
  // Still too few (a trailed or cloudy frame: every star faint): whatever unsaturated stars there are.
  if (shape.length < MIN_SHAPE_STARS) {
    const faint = stars.filter((s) => !s.saturated);
    if (faint.length > shape.length) shape = faint;
  }
  const rank = options.fluxRankCount ?? 50;
  // Stars are sorted by flux, brightest first. Saturated stars stay in the ranking: a star that
  // saturates in one frame but not in the next must not shift the ranks (their clipped fluxes
  // still rank them at the top, and the median looks at rank K/2).
  const bright = stars.slice(0, rank);
  const medianFlux = median(bright.map((s) => s.flux));
  const apertureN = Math.PI * detection.apertureRadius ** 2;
  const rms = detection.backgroundRms;
  return {
    star_count: stars.length,
    fwhm: median(shape.map((s) => s.fwhm)),
    fwhm_x: median(shape.map((s) => s.fwhmMajor)),
    fwhm_y: median(shape.map((s) => s.fwhmMinor)),
    eccentricity: median(shape.map((s) => s.eccentricity)),
    background_median: detection.backgroundMedian,
    background_rms: rms,
    snr_estimate: rms > 0 && apertureN > 0 ? medianFlux / (rms * Math.sqrt(apertureN)) : NaN,
    saturation: detection.saturatedFraction,
    median_star_flux: medianFlux,
    registration_cc: options.registrationCc ?? null,
    quality_score: NaN,
  };
}

/** Metrics of a frame that could not be measured: no stars, every value NaN, score 0. */
export function emptyMetrics(): FrameMetrics {
  return {
    star_count: 0,
    fwhm: NaN,
    fwhm_x: NaN,
    fwhm_y: NaN,
    eccentricity: NaN,
    background_median: NaN,
    background_rms: NaN,
    snr_estimate: NaN,
    saturation: NaN,
    median_star_flux: NaN,
    registration_cc: null,
    quality_score: 0,
  };
}

const ECC_CAP = 0.95;

/** The unbounded quality q of each frame relative to the sequence medians (0 when unmeasurable). */
export function qualityRatios(frames: readonly FrameMetrics[]): number[] {
  const usable = (f: FrameMetrics) => f.star_count > 0 && Number.isFinite(f.snr_estimate) && f.snr_estimate > 0;
  const ok = frames.filter(usable);
  const snr0 = median(ok.map((f) => f.snr_estimate));
  const n0 = median(ok.map((f) => f.star_count));
  const round = (f: FrameMetrics) => 1 - Math.min(ECC_CAP, Number.isFinite(f.eccentricity) ? f.eccentricity : ECC_CAP);
  const e0 = median(ok.map(round));
  return frames.map((f) => {
    if (!usable(f) || !(snr0 > 0) || !(n0 > 0) || !(e0 > 0)) return 0;
    const q = (f.snr_estimate / snr0) ** 2 * Math.sqrt(f.star_count / n0) * (round(f) / e0);
    return Number.isFinite(q) ? Math.max(0, q) : 0;
  });
}

/** Copies of the records with quality_score = q/(1 + q) (see the head comment). */
export function scoreFrames(frames: readonly FrameMetrics[]): FrameMetrics[] {
  const q = qualityRatios(frames);
  return frames.map((f, i) => ({ ...f, quality_score: q[i]! / (1 + q[i]!) }));
}

/**
 * Stacking weights for `weighting: quality`: w ∝ score/(1 − score) on included frames, 0 on the
 * others, normalised to mean 1 over the included frames; all included frames 1 when none has a
 * positive score.
 */
export function qualityWeights(scores: readonly number[], included: readonly boolean[]): number[] {
  const q = scores.map((s, i) => (included[i] && Number.isFinite(s) && s > 0 ? Math.min(s, 1 - 1e-9) / (1 - Math.min(s, 1 - 1e-9)) : 0));
  const n = included.filter(Boolean).length;
  const sum = q.reduce((a, b) => a + b, 0);
  if (n === 0) return scores.map(() => 0);
  if (!(sum > 0)) return included.map((inc) => (inc ? 1 : 0));
  return q.map((v) => (v * n) / sum);
}
