// FRAME_FILTERING rules: the seed's quality filter table plus the transparency rule (docs/ARCHITECTURE.md "Raw Stack decisions").
//
// Modes: `auto` (FWHM factor k = max_fwhm_sigma, default 2.0), `strict` (k = 1.5), `relaxed`
// (k = 3.0), `off` (no quality rules: only frames without data — unreadable or not registered —
// are excluded). Rules, evaluated for every measured frame in this order (a frame lists every
// rule it fails; the first is its primary reason):
//   unreadable           no metrics (the frame could not be read or measured);
//   registration_failed  registration found no transform;
//   no_stars_measured    metrics without a star shape (no star, or FWHM/eccentricity not
//                        measurable): nothing says the frame is good, so it is never kept
//                        automatically (a manual include still can);
//   low_correlation      registration_cc < min_correlation (0.75; skipped while cc is unknown);
//   too_few_stars        star_count < min_stars (30);
//   eccentricity         eccentricity > max_eccentricity (0.65) — trailed frames;
//   fwhm_outlier         fwhm > median + k·σ, median and σ over the frames that pass the rules
//                        above; σ = 1.4826·MAD (Gaussian-consistent), floored at 5 % of the median so
//                        a very uniform sequence does not turn seeing jitter into outliers;
//   low_transparency     (auto and strict only) star_count or median_star_flux below
//                        min_relative_transparency (0.6) × its median over the same frames — clouds
//                        and haze. (Bad seeing and trailing also cost stars, so such frames may list
//                        it as a secondary reason.)
// The FWHM and transparency rules need at least 3 frames to form a median; with fewer they are
// skipped (and say so in `warnings`).
// Systematic cause (relative_fallback, default on): when the three absolute rules (correlation,
// stars, eccentricity) would exclude more than half of the measured frames, the cause is the
// session (a short focal length's few stars, a mount that trails every frame, an optics tilt),
// not the frames, and dropping most frames would keep the worst as readily as the best. Those
// rules are then judged relative to the sequence instead (`systematic` says which would have
// excluded how many; the phase warns `quality_rules_relative`), the limits scaled like the FWHM
// rule's (k = the mode's factor, σ = 1.4826·MAD with a floor):
//   low_correlation  registration_cc < median − k·max(σ, 0.02);
//   too_few_stars    star_count < min_relative_transparency × median;
//   eccentricity     eccentricity > median + k·max(σ, 0.05).
// With fewer than 3 measured frames there is no median and the absolute rules stay.
// Manual overrides (quality_filter.manual_overrides, keyed by frame index or file name, value
// `true`/`false` or `{include, index?, filename?}`) win in both directions: `include` keeps a frame
// whatever the quality rules say (its failed rules stay listed), `exclude` drops it with reason
// `manual`. A frame without data (unreadable, registration_failed) cannot be included.
// Invariants: pure function; every exclusion carries a code and a human detail
// ("fwhm 4.81 > limit 3.90 (median 2.70 + 2.0 × σ 0.60)"); failures are data, never exceptions.

import { MAD_TO_SIGMA } from './robust-stats.js';

export type QualityFilterMode = 'auto' | 'strict' | 'relaxed' | 'off';
export const QUALITY_FILTER_MODES: readonly QualityFilterMode[] = ['auto', 'strict', 'relaxed', 'off'];

export type ManualOverrideValue = boolean | { include: boolean; index?: number; filename?: string };
export type ManualOverrides = Record<string, ManualOverrideValue>;

export interface QualityFilterConfig {
  mode: QualityFilterMode;
  min_stars: number;
  min_correlation: number;
  max_fwhm_sigma: number;
  max_eccentricity: number;
  min_relative_transparency: number;
  /** Switch the absolute rules to sequence-relative ones when they would exclude more than half of the frames. */
  relative_fallback: boolean;
  manual_overrides?: ManualOverrides;
}

export const QUALITY_FILTER_DEFAULTS: Readonly<QualityFilterConfig> = {
  mode: 'auto',
  min_stars: 30,
  min_correlation: 0.75,
  max_fwhm_sigma: 2.0,
  max_eccentricity: 0.65,
  min_relative_transparency: 0.6,
  relative_fallback: true,
};

/** Floors of the robust σ of the relative eccentricity and correlation rules. */
export const ECC_SIGMA_FLOOR = 0.05;
export const CC_SIGMA_FLOOR = 0.02;

/** Relative floor of the robust FWHM σ. */
export const FWHM_SIGMA_FLOOR = 0.05;

export type ExclusionCode = 'unreadable' | 'registration_failed' | 'no_stars_measured' | 'low_correlation' | 'too_few_stars' | 'eccentricity' | 'fwhm_outlier' | 'low_transparency' | 'manual';

export interface FilterMetrics {
  star_count: number;
  fwhm: number;
  eccentricity: number;
  median_star_flux: number;
  registration_cc: number | null;
}

export interface FilterFrame {
  index: number;
  file: string;
  /** null: the frame could not be read or measured. */
  metrics: FilterMetrics | null;
  /** false: registration found no transform. Default true (not registered yet counts as fine). */
  registered?: boolean;
}

export interface FrameDecision {
  index: number;
  file: string;
  status: 'included' | 'excluded';
  /** Rules the frame fails, primary first ('manual' last when a manual exclude applies). */
  reasons: ExclusionCode[];
  /** One human-readable line per reason, same order. */
  details: string[];
  /** The manual override applied to this frame, if any. */
  manual: 'include' | 'exclude' | null;
}

export interface FilterLimits {
  /** FWHM factor of the mode (null in `off`). */
  k: number | null;
  fwhm_median: number;
  fwhm_sigma: number;
  fwhm_limit: number;
  star_count_median: number;
  star_count_limit: number;
  flux_median: number;
  flux_limit: number;
}

export interface FilterResult {
  mode: QualityFilterMode;
  frames: FrameDecision[];
  limits: FilterLimits;
  n_total: number;
  n_included: number;
  n_excluded: number;
  /** Excluded frames per primary reason. */
  counts: Partial<Record<ExclusionCode, number>>;
  warnings: string[];
  /** Set when no frame is left to stack. */
  error: { code: 'no_frames_left'; detail: string } | null;
  /**
   * Set when the absolute rules would have excluded more than half of the measured frames and
   * relative rules decided instead: how many each absolute rule would have excluded, and the
   * relative limits used.
   */
  systematic: {
    would_exclude: number;
    measured: number;
    by_rule: Partial<Record<'low_correlation' | 'too_few_stars' | 'eccentricity', number>>;
    limits: { eccentricity_median: number; eccentricity_limit: number; star_count_median: number; star_count_limit: number; correlation_median: number | null; correlation_limit: number | null };
  } | null;
}

const f2 = (v: number) => v.toFixed(2);

function median(values: number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const n = v.length;
  if (n === 0) return NaN;
  return n % 2 ? v[n >> 1]! : (v[n / 2 - 1]! + v[n / 2]!) / 2;
}

/** The absolute rules a frame fails (seed table: correlation, stars, eccentricity), with details. */
function absoluteFailures(m: FilterMetrics, c: QualityFilterConfig): { code: 'low_correlation' | 'too_few_stars' | 'eccentricity'; detail: string }[] {
  const out: { code: 'low_correlation' | 'too_few_stars' | 'eccentricity'; detail: string }[] = [];
  if (m.registration_cc !== null && Number.isFinite(m.registration_cc) && m.registration_cc < c.min_correlation) {
    out.push({ code: 'low_correlation', detail: `correlation ${f2(m.registration_cc)} < min ${f2(c.min_correlation)}` });
  }
  if (!(m.star_count >= c.min_stars)) out.push({ code: 'too_few_stars', detail: `stars ${m.star_count} < min ${c.min_stars}` });
  if (Number.isFinite(m.eccentricity) && m.eccentricity > c.max_eccentricity) {
    out.push({ code: 'eccentricity', detail: `eccentricity ${f2(m.eccentricity)} > max ${f2(c.max_eccentricity)}` });
  }
  return out;
}

/** Median and robust σ (1.4826·MAD, at least `floor`) of the finite values. */
function robustSpread(values: number[], floor: number): { median: number; sigma: number } {
  const v = values.filter((x) => Number.isFinite(x));
  const med = median(v);
  const mad = median(v.map((x) => Math.abs(x - med)));
  return { median: med, sigma: Math.max(MAD_TO_SIGMA * mad, floor) };
}

/** FWHM factor of a mode (null: no filtering). */
export function fwhmFactor(config: Pick<QualityFilterConfig, 'mode' | 'max_fwhm_sigma'>): number | null {
  switch (config.mode) {
    case 'auto':
      return config.max_fwhm_sigma;
    case 'strict':
      return 1.5;
    case 'relaxed':
      return 3.0;
    case 'off':
      return null;
  }
}

const baseName = (file: string) => file.split(/[\\/]/).pop() ?? file;

/** Resolves manual overrides to frame positions: later entries win; unmatched keys are reported. */
function resolveOverrides(frames: readonly FilterFrame[], overrides: ManualOverrides | undefined, warnings: string[]): Map<number, boolean> {
  const out = new Map<number, boolean>();
  if (!overrides) return out;
  for (const [key, value] of Object.entries(overrides)) {
    const include = typeof value === 'boolean' ? value : value.include;
    let matches: number[] = [];
    const byIndex = (i: number) => frames.flatMap((f, p) => (f.index === i ? [p] : []));
    const byName = (name: string) => frames.flatMap((f, p) => (f.file === name || baseName(f.file) === baseName(name) ? [p] : []));
    if (typeof value === 'object' && typeof value.index === 'number') matches = byIndex(value.index);
    else if (typeof value === 'object' && typeof value.filename === 'string') matches = byName(value.filename);
    else {
      matches = byName(key);
      if (matches.length === 0 && /^\d+$/.test(key)) matches = byIndex(Number(key));
    }
    if (matches.length === 0) warnings.push(`manual override '${key}' matches no frame`);
    for (const p of matches) out.set(p, include);
  }
  return out;
}

/** Applies the quality filter to a sequence's frames. */
export function filterFrames(frames: readonly FilterFrame[], config: Partial<QualityFilterConfig> = {}): FilterResult {
  const c: QualityFilterConfig = { ...QUALITY_FILTER_DEFAULTS, ...config };
  const k = fwhmFactor(c);
  const warnings: string[] = [];
  const reasons: ExclusionCode[][] = frames.map(() => []);
  const details: string[][] = frames.map(() => []);
  const add = (p: number, code: ExclusionCode, detail: string) => {
    reasons[p]!.push(code);
    details[p]!.push(detail);
  };

  // Frames without data.
  frames.forEach((f, p) => {
    if (!f.metrics) add(p, 'unreadable', 'frame could not be read or measured');
    else if (f.registered === false) add(p, 'registration_failed', 'registration found no transform');
  });

  const limits: FilterLimits = { k, fwhm_median: NaN, fwhm_sigma: NaN, fwhm_limit: NaN, star_count_median: NaN, star_count_limit: NaN, flux_median: NaN, flux_limit: NaN };
  let systematic: FilterResult['systematic'] = null;
  if (k !== null) {
    // Frames without a measured star shape.
    frames.forEach((f, p) => {
      const m = f.metrics;
      if (!m || reasons[p]!.length > 0) return;
      if (!(m.star_count > 0) || !Number.isFinite(m.fwhm) || !Number.isFinite(m.eccentricity)) {
        add(p, 'no_stars_measured', m.star_count > 0 ? `FWHM and eccentricity could not be measured on its ${m.star_count} stars` : 'no star measured');
      }
    });
    // Absolute rules, first as a trial: a systematic cause switches them to relative ones.
    const measured = frames.flatMap((f, p) => (f.metrics && reasons[p]!.length === 0 ? [p] : []));
    const absolute = measured.map((p) => absoluteFailures(frames[p]!.metrics!, c));
    const failing = absolute.filter((r) => r.length > 0).length;
    if (c.relative_fallback && measured.length >= 3 && failing * 2 > measured.length) {
      const ms = measured.map((p) => frames[p]!.metrics!);
      const ecc = robustSpread(ms.map((m) => m.eccentricity), ECC_SIGMA_FLOOR);
      const eccLimit = ecc.median + k * ecc.sigma;
      const countMed = median(ms.map((m) => m.star_count));
      const countLimit = c.min_relative_transparency * countMed;
      const ccs = ms.map((m) => m.registration_cc).filter((v): v is number => v !== null && Number.isFinite(v));
      const cc = ccs.length >= 3 ? robustSpread(ccs, CC_SIGMA_FLOOR) : null;
      const ccLimit = cc ? cc.median - k * cc.sigma : null;
      const byRule: Partial<Record<'low_correlation' | 'too_few_stars' | 'eccentricity', number>> = {};
      for (const r of absolute) for (const x of r) byRule[x.code] = (byRule[x.code] ?? 0) + 1;
      systematic = {
        would_exclude: failing,
        measured: measured.length,
        by_rule: byRule,
        limits: { eccentricity_median: ecc.median, eccentricity_limit: eccLimit, star_count_median: countMed, star_count_limit: countLimit, correlation_median: cc?.median ?? null, correlation_limit: ccLimit },
      };
      for (const p of measured) {
        const m = frames[p]!.metrics!;
        if (ccLimit !== null && m.registration_cc !== null && Number.isFinite(m.registration_cc) && m.registration_cc < ccLimit) {
          add(p, 'low_correlation', `correlation ${f2(m.registration_cc)} < limit ${f2(ccLimit)} (median ${f2(cc!.median)} − ${f2(k)} × σ ${f2(cc!.sigma)}; relative: the absolute rules would exclude ${failing} of ${measured.length} frames)`);
        }
        if (countMed > 0 && m.star_count < countLimit) {
          add(p, 'too_few_stars', `stars ${m.star_count} < ${f2(c.min_relative_transparency)} × median ${f2(countMed)} = ${f2(countLimit)} (relative: the absolute rules would exclude ${failing} of ${measured.length} frames)`);
        }
        if (m.eccentricity > eccLimit) {
          add(p, 'eccentricity', `eccentricity ${f2(m.eccentricity)} > limit ${f2(eccLimit)} (median ${f2(ecc.median)} + ${f2(k)} × σ ${f2(ecc.sigma)}; relative: the absolute rules would exclude ${failing} of ${measured.length} frames)`);
        }
      }
    } else {
      measured.forEach((p, q) => {
        for (const x of absolute[q]!) add(p, x.code, x.detail);
      });
    }
    // Relative rules over the frames that pass the absolute ones.
    const clean = frames.flatMap((f, p) => (f.metrics && reasons[p]!.length === 0 ? [f.metrics] : []));
    if (clean.length >= 3) {
      const fw = clean.map((m) => m.fwhm).filter((v) => Number.isFinite(v));
      const med = median(fw);
      const mad = median(fw.map((v) => Math.abs(v - med)));
      const sigma = Math.max(MAD_TO_SIGMA * mad, FWHM_SIGMA_FLOOR * med);
      const limit = med + k * sigma;
      Object.assign(limits, { fwhm_median: med, fwhm_sigma: sigma, fwhm_limit: limit });
      const transparency = c.mode === 'auto' || c.mode === 'strict';
      const countMed = median(clean.map((m) => m.star_count));
      const fluxMed = median(clean.map((m) => m.median_star_flux));
      const fr = c.min_relative_transparency;
      if (transparency) Object.assign(limits, { star_count_median: countMed, star_count_limit: fr * countMed, flux_median: fluxMed, flux_limit: fr * fluxMed });
      frames.forEach((f, p) => {
        const m = f.metrics;
        if (!m || f.registered === false) return;
        if (Number.isFinite(m.fwhm) && Number.isFinite(limit) && m.fwhm > limit) {
          add(p, 'fwhm_outlier', `fwhm ${f2(m.fwhm)} > limit ${f2(limit)} (median ${f2(med)} + ${f2(k)} × σ ${f2(sigma)})`);
        }
        if (!transparency) return;
        const lowCount = countMed > 0 && m.star_count < fr * countMed;
        const lowFlux = fluxMed > 0 && Number.isFinite(m.median_star_flux) && m.median_star_flux < fr * fluxMed;
        const parts: string[] = [];
        if (lowCount) parts.push(`stars ${m.star_count} < ${f2(fr)} × median ${f2(countMed)} = ${f2(fr * countMed)}`);
        if (lowFlux) parts.push(`star flux ${f2(m.median_star_flux)} < ${f2(fr)} × median ${f2(fluxMed)} = ${f2(fr * fluxMed)}`);
        if (parts.length > 0) add(p, 'low_transparency', parts.join('; '));
      });
    } else if (frames.length > 0) {
      warnings.push(`fwhm and transparency rules skipped: ${clean.length} frame(s) pass the absolute rules, 3 are needed for a median`);
    }
  }

  // Manual overrides win both ways (frames without data stay out).
  const manual = resolveOverrides(frames, c.manual_overrides, warnings);
  const decisions: FrameDecision[] = frames.map((f, p) => {
    const r = reasons[p]!;
    const d = details[p]!;
    const m = manual.get(p);
    const noData = r[0] === 'unreadable' || r[0] === 'registration_failed';
    let status: FrameDecision['status'] = r.length === 0 ? 'included' : 'excluded';
    if (m === true) {
      if (noData) d[0] = `${d[0]} (manual include not possible without data)`;
      else status = 'included';
    } else if (m === false) {
      r.push('manual');
      d.push('excluded by manual override');
      status = 'excluded';
    }
    return { index: f.index, file: f.file, status, reasons: r, details: d, manual: m === undefined ? null : m ? 'include' : 'exclude' };
  });

  const nIncluded = decisions.filter((d) => d.status === 'included').length;
  const counts: Partial<Record<ExclusionCode, number>> = {};
  for (const d of decisions) {
    if (d.status !== 'excluded') continue;
    const primary = d.reasons[0]!;
    counts[primary] = (counts[primary] ?? 0) + 1;
  }
  const nExcluded = decisions.length - nIncluded;
  if (decisions.length > 0 && nExcluded * 2 >= decisions.length) warnings.push(`${nExcluded} of ${decisions.length} frames excluded`);
  return {
    mode: c.mode,
    systematic,
    frames: decisions,
    limits,
    n_total: decisions.length,
    n_included: nIncluded,
    n_excluded: nExcluded,
    counts,
    warnings,
    error: nIncluded === 0 ? { code: 'no_frames_left', detail: decisions.length === 0 ? 'no frames' : `all ${decisions.length} frames excluded` } : null,
  };
}
