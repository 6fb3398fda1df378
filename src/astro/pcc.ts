// Photometric colour calibration of an in-memory linear RGB image with a TAN WCS against a list
// of catalogue stars (see pcc-file.ts for the file entry point and phases/pcc.ts for the phase).
//
// Steps: project the catalogue (mag window, inside the image; fewer than min_stars there is
// PCC_NO_CATALOG_STARS) → the image's own stars (pcc-stars.ts) give the FWHM that sizes the
// apertures → the brightest catalogue stars near their predicted positions give the WCS offset
// → aperture photometry of every catalogue star, saturated and non-linear ones refused
// (photometry.ts: aperture()'s flat-top / image-maximum / SATURATE tests, then linearityTest
// over all measured stars: flattened cores and stars near the clip level) → robust colour fit against blackbody colours relative to the
// white reference (pcc-fit.ts) → guards, in this order: min_stars (PCC_TOO_FEW_STARS), the
// slopes of image vs catalogue colour (below min_slope: PCC_COMPRESSED_COLOURS, ≤ 0:
// PCC_INVERTED_COLOURS — a clipped, blended or wrongly matched star sample, not a camera),
// max_condition_number (PCC_ILL_CONDITIONED), max_residual_rms (PCC_BAD_RESIDUAL) → diagonal
// matrix applied relative to the per-channel sky, so the sky comes out neutral
// (background_neutralization) while star colours get the fitted factors.
//
// Invariants: the input array is not modified; every failure is a PccError whose `diagnostics`
// holds what was measured so far (the phase writes them to pcc_diagnostics.json).

import { applyMatrix } from './color-matrix.js';
import type { CatalogStar } from './catalog/types.js';
import { fitColours } from './pcc-fit.js';
import { PccError, throwIfAborted } from './pcc-errors.js';
import type { FwhmSource, PccOptions, PccResult, PccStar, SaturationInfo } from './pcc-types.js';
import { aperture, channelStats, findPeak, isMeasurement, linearityTest, NONLINEAR_FRACTION, radiiFor, type Measurement, type Planes, type RejectReason } from './photometry.js';
import { detectImageStars, FALLBACK_FWHM, type ImageStars } from './pcc-stars.js';
import { blackbodyRgb, starTeff, whiteReference } from './star-color.js';
import type { TanWcs } from './wcs.js';

export const PCC_DEFAULTS: PccOptions = {
  mag_limit: 14,
  mag_bright_limit: 6,
  min_stars: 10,
  max_condition_number: 3.0,
  max_residual_rms: 0.35,
  white_reference: 'G2V',
  min_aperture_px: 4,
  background_neutralization: true,
  min_slope: 0.5,
  fallback: 'none',
};

/** Brightest stars used to measure the WCS offset (and the FWHM when the image's own stars give none). */
const PROBE_STARS = 150;
/** Probe stars peaking above this fraction of the brightest (sky-subtracted) sample are left out of the FWHM (flat tops). */
const PROBE_SATURATION = 0.5;
/** Search radius (px) for the probe stars: tolerates a WCS a few pixels off. */
const PROBE_SEARCH_PX = 12;
/** A probe peak must stand this many (summed) noise σ above its local sky. */
const PROBE_MIN_SIGNIFICANCE = 10;
/** Most stars measured (brightest first); more add time, not accuracy. */
const MAX_MEASURED = 2000;
/** Minimum per-channel SNR of a measured star. */
const MIN_SNR = 20;

export interface PccInput {
  width: number;
  height: number;
  /** Planar R, G, B (3·width·height). */
  data: Float32Array;
  wcs: TanWcs;
  catalog: CatalogStar[];
  /** Name of the catalogue source for the diagnostics (e.g. the CSV file). */
  source: string;
  options?: Partial<PccOptions>;
  /** Saturation level of the data (the header's SATURATE), or null. */
  saturation?: number | null;
  /** The image's detected stars when the caller has them already (else detected here). */
  imageStars?: ImageStars;
  signal?: AbortSignal;
}

export interface PccOutput {
  result: PccResult;
  /** Calibrated planar RGB. */
  data: Float32Array;
}

export function resolveOptions(o: Partial<PccOptions> = {}): PccOptions {
  const opt: PccOptions = { ...PCC_DEFAULTS };
  for (const [k, v] of Object.entries(o)) if (v !== undefined && k in PCC_DEFAULTS) (opt as unknown as Record<string, unknown>)[k] = v;
  const bad = (msg: string) => new PccError('PCC_BAD_OPTIONS', msg);
  if (!(opt.mag_limit > opt.mag_bright_limit)) throw bad(`mag_limit ${opt.mag_limit} must exceed mag_bright_limit ${opt.mag_bright_limit}`);
  if (!(Number.isInteger(opt.min_stars) && opt.min_stars >= 3)) throw bad(`min_stars ${opt.min_stars} must be an integer ≥ 3`);
  if (!(opt.max_condition_number >= 1)) throw bad(`max_condition_number ${opt.max_condition_number} must be ≥ 1`);
  if (!(opt.max_residual_rms > 0)) throw bad(`max_residual_rms ${opt.max_residual_rms} must be > 0`);
  if (!(opt.min_aperture_px > 0 && opt.min_aperture_px < 100)) throw bad(`min_aperture_px ${opt.min_aperture_px} must be in (0, 100)`);
  if (!(opt.min_slope >= 0 && opt.min_slope <= 1)) throw bad(`min_slope ${opt.min_slope} must be in [0, 1]`);
  if (opt.fallback !== 'none' && opt.fallback !== 'star_white') throw bad(`fallback ${String(opt.fallback)} must be none or star_white`);
  return opt;
}

function median(v: number[]): number {
  const s = v.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length === 0 ? NaN : s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const round = (v: number, d = 6) => (Number.isFinite(v) ? Number(v.toPrecision(d)) : v);

export function runPcc(input: PccInput): PccOutput {
  const opt = resolveOptions(input.options);
  const white = whiteReference(opt.white_reference);
  const { width, height, wcs } = input;
  const n = width * height;
  if (input.data.length !== 3 * n) throw new PccError('PCC_NOT_RGB', `image data has ${input.data.length} samples, expected 3 planes of ${width}×${height}`);
  const planes: Planes = { width, height, c: [input.data.subarray(0, n), input.data.subarray(n, 2 * n), input.data.subarray(2 * n, 3 * n)] };
  const diag: Record<string, unknown> = { used_source: input.source, white_reference: white, options: opt, catalog_stars_read: input.catalog.length };

  // Catalogue stars on the image, brightest first.
  const margin = 8;
  const inField: { s: CatalogStar; x: number; y: number }[] = [];
  for (const s of input.catalog) {
    if (s.mag < opt.mag_bright_limit || s.mag > opt.mag_limit) continue;
    const p = wcs.skyToPixel(s.ra, s.dec);
    if (!p || p[0] < margin || p[1] < margin || p[0] > width - 1 - margin || p[1] > height - 1 - margin) continue;
    inField.push({ s, x: p[0], y: p[1] });
  }
  inField.sort((a, b) => a.s.mag - b.s.mag);
  diag.stars_in_field = inField.length;
  if (inField.length < opt.min_stars) {
    const msg = inField.length === 0 ? `none of ${input.catalog.length} catalogue stars with ${opt.mag_bright_limit} ≤ mag ≤ ${opt.mag_limit} falls on the image` : `only ${inField.length} catalogue stars with ${opt.mag_bright_limit} ≤ mag ≤ ${opt.mag_limit} fall on the image, need ≥ ${opt.min_stars} (pcc.min_stars)`;
    throw new PccError('PCC_NO_CATALOG_STARS', msg, { ...diag, stars_matched: 0, stars_used: 0 });
  }
  throwIfAborted(input.signal);

  const stats = planes.c.map((p) => channelStats(p));
  const lumNoise = Math.sqrt(stats.reduce((a, s) => a + s.noise * s.noise, 0)) || 1e-12;
  diag.channel_sky = stats.map((s) => round(s.sky));
  diag.channel_noise = stats.map((s) => round(s.noise));

  // Probe: WCS offset and FWHM from the brightest stars.
  const skySum = stats.reduce((a, s) => a + s.sky, 0);
  const peakMax = stats.reduce((a, s) => a + s.max, 0) - skySum;
  // Moments inside a window of ±6 px first; a star wider than that window (oversampled images)
  // is measured again with a window of twice the first estimate.
  const probe = (window: number) => {
    const dxs: number[] = [];
    const dys: number[] = [];
    const fwhms: number[] = [];
    for (const st of inField.slice(0, PROBE_STARS)) {
      const pk = findPeak(planes, st.x, st.y, PROBE_SEARCH_PX, window, lumNoise);
      if (!pk || pk.significance < PROBE_MIN_SIGNIFICANCE) continue;
      dxs.push(pk.x - st.x);
      dys.push(pk.y - st.y);
      if (pk.fwhm > 0.8 && pk.fwhm < 30 && pk.peak - skySum < PROBE_SATURATION * peakMax) fwhms.push(pk.fwhm);
    }
    return { found: dxs.length, offset: (dxs.length >= 3 ? [median(dxs), median(dys)] : [0, 0]) as [number, number], fwhm: fwhms.length >= 3 ? median(fwhms) : null };
  };
  // FWHM: the image's own stars first (pcc-stars.ts); the probe's moments only when detection
  // found none; a fixed guess last, reported as such.
  const img = input.imageStars ?? detectImageStars(planes);
  throwIfAborted(input.signal);
  const known = img.fwhm ?? 0;
  let pr = probe(known > 0 ? Math.max(6, Math.min(24, Math.ceil(2 * known))) : 6);
  if (!(known > 0) && pr.fwhm !== null && 1.5 * pr.fwhm > 6) pr = probe(Math.min(24, Math.ceil(2 * pr.fwhm)));
  const offset = pr.offset;
  const fwhmSource: FwhmSource = img.fwhm !== null && img.fwhm_source ? img.fwhm_source : pr.fwhm !== null ? 'catalog_probe' : 'fallback';
  const fwhm = img.fwhm ?? pr.fwhm ?? FALLBACK_FWHM;
  const radii = radiiFor(fwhm, opt.min_aperture_px);
  Object.assign(diag, {
    probe_stars_found: pr.found,
    wcs_offset_px: offset.map((v) => round(v, 4)),
    fwhm_px: round(fwhm, 4),
    fwhm_source: fwhmSource,
    image_stars: { detected: img.detected, fitted: img.fitted, usable: img.stars.length, failure: img.failure },
    radii_px: { aperture: round(radii.aperture, 4), inner: round(radii.inner, 4), outer: round(radii.outer, 4) },
  });
  throwIfAborted(input.signal);

  // Photometry.
  const search = Math.max(2, fwhm);
  const window = Math.max(2, Math.ceil(1.5 * fwhm));
  const rejected: Record<RejectReason | 'not_found' | 'blended' | 'moved', number> = { edge: 0, no_data: 0, saturated: 0, nonlinear: 0, crowded_annulus: 0, low_snr: 0, few_sky_pixels: 0, not_found: 0, blended: 0, moved: 0 };
  const headerSat = input.saturation !== undefined && input.saturation !== null && input.saturation > 0 ? input.saturation : null;
  const satLevel = headerSat === null ? null : NONLINEAR_FRACTION * headerSat;
  const satTest = { level: [satLevel, satLevel, satLevel] as [number | null, number | null, number | null], fwhm };
  // Peaks of the flat-topped (saturated) stars: where clipping happens (linearityTest).
  const clipped: [number, number, number][] = [];
  const atMax: [number, number, number][] = [];
  const measured: PccStar[] = [];
  const meas: Measurement[] = [];
  let matched = 0;
  const candidates = inField.slice(0, MAX_MEASURED);
  for (let k = 0; k < candidates.length; k++) {
    if (k % 256 === 0) throwIfAborted(input.signal);
    const st = candidates[k]!;
    const px = st.x + offset[0];
    const py = st.y + offset[1];
    // A catalogue neighbour less than 2.5 mag fainter inside the sky annulus spoils the photometry.
    const blended = inField.some((o) => o !== st && o.s.mag < st.s.mag + 2.5 && (o.x - st.x) ** 2 + (o.y - st.y) ** 2 < radii.outer * radii.outer);
    const pk = findPeak(planes, px, py, search, window, lumNoise);
    if (!pk || pk.significance < 5) {
      rejected.not_found++;
      continue;
    }
    if ((pk.x - px) ** 2 + (pk.y - py) ** 2 > (search + 1) ** 2) {
      rejected.moved++;
      continue;
    }
    matched++;
    if (blended) {
      rejected.blended++;
      continue;
    }
    const m = aperture(planes, pk.x, pk.y, radii, stats, MIN_SNR, satTest);
    if (!isMeasurement(m)) {
      rejected[m.reject]++;
      if (m.by === 'flat_top' && m.peak) clipped.push(m.peak);
      if (m.by === 'data_max' && m.peak) atMax.push(m.peak);
      continue;
    }
    meas.push(m);
    const teff = starTeff(st.s.bv, st.s.teff);
    const e = blackbodyRgb(teff);
    measured.push({
      ra: st.s.ra,
      dec: st.s.dec,
      mag: st.s.mag,
      bv: st.s.bv,
      teff: round(teff, 5),
      x: round(pk.x, 6),
      y: round(pk.y, 6),
      flux: m.flux,
      image_rg: m.flux[0] / m.flux[1],
      image_bg: m.flux[2] / m.flux[1],
      catalog_rg: e[0] / e[1] / (white.rgb[0] / white.rgb[1]),
      catalog_bg: e[2] / e[1] / (white.rgb[2] / white.rgb[1]),
      used: true,
    });
  }
  // Flattened cores and stars near the clip level are non-linear (photometry.ts linearityTest).
  const lin = linearityTest(meas, clipped, atMax);
  const linear = measured.filter((_, i) => {
    const hot = lin.flags[i]!;
    if (hot) {
      rejected.nonlinear++;
      measured[i]!.used = false;
      measured[i]!.excluded = 'nonlinear';
    }
    return !hot;
  });
  const saturation: SaturationInfo = {
    header_level: headerSat,
    flat_tops: clipped.length,
    at_image_max: atMax.length,
    flattened_cores: lin.flattened,
    typical_peak_share: lin.typical_peak_share === null ? null : round(lin.typical_peak_share, 4),
    clip_level: lin.clip_level.map((v) => (v === null ? null : round(v))) as SaturationInfo['clip_level'],
    nonlinear_fraction: NONLINEAR_FRACTION,
  };
  Object.assign(diag, { stars_matched: matched, stars_measured: linear.length, rejected, saturation });
  // Ratios need positive G flux; non-positive ratios are unusable.
  const good = linear.filter((s) => s.flux[1] > 0 && s.image_rg > 0 && s.image_bg > 0);
  const starsForDiag = () => measured.map((s) => ({ ...s, flux: s.flux.map((f) => round(f)), image_rg: round(s.image_rg), image_bg: round(s.image_bg), catalog_rg: round(s.catalog_rg), catalog_bg: round(s.catalog_bg) }));
  if (good.length < opt.min_stars) {
    const why = Object.entries(rejected).filter(([, n]) => n > 0).map(([k, n]) => `${n} ${k}`).join(', ');
    throw new PccError('PCC_TOO_FEW_STARS', `${good.length} usable stars (of ${inField.length} catalogue stars on the image, ${matched} found${why ? `; refused: ${why}` : ''}), need ≥ ${opt.min_stars}`, { ...diag, stars_used: good.length, stars: starsForDiag() });
  }

  const fit = fitColours(good.map((s) => s.catalog_rg), good.map((s) => s.catalog_bg), good.map((s) => s.image_rg), good.map((s) => s.image_bg));
  good.forEach((s, i) => {
    s.used = fit.used[i]!;
    if (!s.used) s.excluded = 'outlier';
  });
  for (const s of linear) {
    if (!good.includes(s)) {
      s.used = false;
      s.excluded = 'bad_ratio';
    }
  }
  const used = fit.used.filter(Boolean).length;
  const fitDiag = {
    stars_used: used,
    factors: fit.factors.map((v) => round(v, 8)),
    residual_rms: round(fit.residual_rms),
    determinant: round(fit.determinant),
    condition_number: round(fit.condition_number),
    lines: { rg: roundLine(fit.rg), bg: roundLine(fit.bg) },
  };
  Object.assign(diag, fitDiag);
  const fail = (code: 'PCC_TOO_FEW_STARS' | 'PCC_BAD_RESIDUAL' | 'PCC_ILL_CONDITIONED' | 'PCC_COMPRESSED_COLOURS' | 'PCC_INVERTED_COLOURS', msg: string) => new PccError(code, msg, { ...diag, stars: starsForDiag() });
  if (used < opt.min_stars) throw fail('PCC_TOO_FEW_STARS', `${used} stars left after the outlier clip, need ≥ ${opt.min_stars}`);
  // A camera sees star colours spread less than, but in the order of, the catalogue (log–log
  // slopes ≈ 0.6–0.9); a slope far below that means the measured colours do not follow the
  // catalogue (clipped cores, blends, wrong matches) and the factors would be arbitrary.
  const slopes = `R/G slope ${fit.rg.slope.toFixed(3)}, B/G slope ${fit.bg.slope.toFixed(3)}`;
  if (!(fit.rg.slope > 0) || !(fit.bg.slope > 0)) throw fail('PCC_INVERTED_COLOURS', `image colours run against the catalogue's (${slopes}); check the star matches and saturation in pcc_diagnostics.json`);
  if (fit.rg.slope < opt.min_slope || fit.bg.slope < opt.min_slope) throw fail('PCC_COMPRESSED_COLOURS', `image colours are compressed against the catalogue's (${slopes}, pcc.min_slope ${opt.min_slope}); saturated or blended stars, or a catalogue in another photometric system`);
  if (!(fit.determinant > 0) || !(fit.condition_number <= opt.max_condition_number)) {
    throw fail('PCC_ILL_CONDITIONED', `factors ${fit.factors.map((v) => v.toFixed(4)).join(', ')}: determinant ${fit.determinant.toPrecision(4)}, condition number ${fit.condition_number.toPrecision(4)} (max ${opt.max_condition_number})`);
  }
  if (!(fit.residual_rms <= opt.max_residual_rms)) throw fail('PCC_BAD_RESIDUAL', `robust residual ${fit.residual_rms.toPrecision(4)} exceeds max_residual_rms ${opt.max_residual_rms}`);
  throwIfAborted(input.signal);

  const k = fit.factors;
  const sky = stats.map((s) => s.sky) as [number, number, number];
  const { out, matrix, neutral, level } = applyFactors(input.data, n, k, sky, opt.background_neutralization, input.signal);

  const result: PccResult = {
    success: true,
    method: 'photometric',
    used_source: input.source,
    stars_in_field: inField.length,
    stars_matched: matched,
    stars_used: used,
    factors: k,
    matrix,
    apply_mode: 'diagonal',
    residual_rms: fit.residual_rms,
    determinant: fit.determinant,
    condition_number: fit.condition_number,
    lines: { rg: fit.rg, bg: fit.bg },
    white_reference: white,
    fwhm_px: fwhm,
    fwhm_source: fwhmSource,
    radii_px: radii,
    saturation,
    rejected,
    wcs_offset_px: offset,
    background_neutralization: { applied: neutral, input_background: sky, output_background: neutral ? level : NaN },
    stars: measured,
  };
  return { result, data: out };
}

/**
 * Diagonal factors applied as out_c = k_c·(in_c − sky_c) + k_G·sky_G when neutralising, so the
 * sky is neutral (grey) at the scaled level of G and star colours (fluxes above the sky) carry
 * the factors; plain out_c = k_c·in_c otherwise.
 */
export function applyFactors(data: Float32Array, n: number, k: [number, number, number], sky: [number, number, number], neutralize: boolean, signal?: AbortSignal) {
  const neutral = neutralize && sky.every(Number.isFinite);
  const level = k[1] * sky[1];
  const matrix: [[number, number, number], [number, number, number], [number, number, number]] = [
    [k[0], 0, 0],
    [0, k[1], 0],
    [0, 0, k[2]],
  ];
  const out = neutral ? applyMatrix(data, n, matrix, { background: sky, target: [level, level, level], signal }) : applyMatrix(data, n, matrix, { signal });
  return { out, matrix, neutral, level };
}

function roundLine(l: { intercept: number; slope: number; at_white: number; residual_rms: number; slope_fixed: boolean }) {
  return { intercept: round(l.intercept), slope: round(l.slope), at_white: round(l.at_white), residual_rms: round(l.residual_rms), slope_fixed: l.slope_fixed };
}
