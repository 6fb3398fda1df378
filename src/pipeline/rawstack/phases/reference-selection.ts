// REFERENCE_SELECTION (never skipped): measures every included frame and picks the frame the
// others are registered to.
// 1. Per frame (pixelSource: the calibrated file when CALIBRATION wrote one): the measurement
//    CALIBRATION or CFA_CHANNEL_PREP already made on the same pixels (premeasure.ts), else one
//    frame in memory per worker, `runtime_limits.parallel_workers` at a time: star detection (stars.ts;
//    OSC frames on the raw mosaic with `cfa`, saturation level from SATURATE/DATAMAX and e-/ADU
//    from EGAIN when the header has them) → frame.metrics (frame-metrics.ts) and frame.stars (the
//    brightest MAX_STORED_STARS, full-resolution frame pixels, brightest first: enough for
//    triangle matching (40–60 stars) and the all-star refinement, bounded memory per frame).
//    Without darks (premeasure.ts cosmeticWithoutDarks) detection runs after a cosmetic pass over
//    hot and cold pixels; the summary's `cosmetic` counts what it replaced per frame.
//    A frame that cannot be read is excluded `unreadable`, one without stars `no_stars`; if that
//    leaves none the phase ends in error `registration_error`.
// 2. scoreFrames over the measured sequence → quality_score (QUALITY_ANALYSIS re-scores over
//    the registered frames).
// 3. selectReference with `registration_reference` (best_quality | temporal_midpoint, DATE-OBS
//    from the scan). Beyond reference.ts: frames excluded by a manual override are not
//    candidates, and neither are frames with a satellite or aircraft trail (more streak points
//    refused by the detector than the sequence median + STREAK_MARGIN): the reference is what
//    every frame's registration_cc is measured against, and a trail in it lowers every frame's
//    correlation (by ~0.1 on the fixtures); nor frames the quality filter's pre-registration
//    rules would exclude (qualityRejected). Each falls back in turn if no frame is left.
// Run queue (queue.ts): scores are computed per filter group (an Ha frame is not worse than an
// L frame for having fewer stars), and the candidates are the frames of the reference filter (L,
// else the first active entry's): one common reference for every filter.
// Writes: frame.stars, frame.metrics (registration_cc null), frame exclusions,
// state.referenceIndex/referenceStrategy, state.summaries.REFERENCE_SELECTION.

import { scoreFrames } from '../../../algorithms/frame-metrics.js';
import { filterFrames } from '../../../algorithms/frame-filter.js';
import { selectReference, type ReferenceCandidate } from '../../../algorithms/reference.js';
import { failed, ok } from '../../phase.js';
import type { RawStackPhase } from '../reasons.js';
import { MAX_STORED_STARS } from '../../stages/frames/analysis.js';
import { type MeasureResult } from '../../stages/frames/tasks.js';
import { FrameWorkers, mapFrames } from '../../stages/frames/workers.js';
import { measureSpecOf, takeMeasure } from '../premeasure.js';
import { filterGroups, referenceFilter } from '../queue.js';
import { medianOf, metricsView } from '../quality-artifacts.js';
import { exclude, includedFrames, pixelSource, type FrameRecord, type RawStackState } from '../state.js';

export { MAX_STORED_STARS };
/** Streak points above the sequence median that mark a frame as trailed by a satellite or plane. */
export const STREAK_MARGIN = 5;

/** Indices of frames that a manual override excludes (resolved exactly as FRAME_FILTERING will). */
function manuallyExcluded(state: RawStackState, frames: readonly FrameRecord[]): Set<number> {
  const overrides = state.config.quality_filter.manual_overrides;
  if (Object.keys(overrides).length === 0) return new Set();
  // Mode `off` applies no quality rule: only the overrides decide.
  const r = filterFrames(
    frames.map((f) => ({ index: f.index, file: f.name, metrics: { star_count: 0, fwhm: NaN, eccentricity: NaN, median_star_flux: NaN, registration_cc: null } })),
    { mode: 'off', manual_overrides: overrides },
  );
  return new Set(r.frames.filter((d) => d.manual === 'exclude').map((d) => d.index));
}

/**
 * Frames the quality filter's pre-registration rules (star count, eccentricity, FWHM and
 * transparency outliers; `registration_cc` is not known yet) would exclude, per filter group.
 * Such a frame must not become the reference: the quality score rewards bright star fluxes, and
 * a badly focused frame whose bright stars saturate less can outscore the sharp ones.
 */
function qualityRejected(state: RawStackState, measured: readonly FrameRecord[]): Set<number> {
  const out = new Set<number>();
  for (const g of filterGroups(state, measured)) {
    const r = filterFrames(
      g.frames.map((f) => ({ index: f.index, file: f.name, metrics: { ...f.metrics!, registration_cc: null } })),
      { ...state.config.quality_filter, manual_overrides: {} },
    );
    for (const d of r.frames) if (d.reasons.length > 0) out.add(d.index);
  }
  return out;
}

export const referenceSelectionPhase: RawStackPhase = {
  name: 'REFERENCE_SELECTION',
  optional: false,
  async run(ctx) {
    const { state } = ctx;
    const frames = includedFrames(state);
    if (frames.length === 0) return failed('no_frames', 'no frame left to measure');
    const spec = measureSpecOf(state);
    let premeasured = 0;
    const workers = new FrameWorkers(Math.min(state.config.runtime_limits.parallel_workers, frames.length));
    const streaks = new Map<number, number>();
    const readMs: number[] = [];
    const detectMs: number[] = [];
    const cosmeticHot: number[] = [];
    const cosmeticCold: number[] = [];
    let done = 0;
    const t0 = performance.now();
    try {
      await mapFrames(
        frames,
        workers.size,
        ctx.signal,
        (f) => {
          const earlier = takeMeasure(f);
          if (earlier) {
            premeasured++;
            return Promise.resolve(earlier);
          }
          return workers.run({ kind: 'measure', file: pixelSource(f), ...spec }) as Promise<MeasureResult>;
        },
        (f, r) => {
          readMs.push(r.ms.read);
          detectMs.push(r.ms.detect);
          if (r.cosmetic) {
            cosmeticHot.push(r.cosmetic.hot);
            cosmeticCold.push(r.cosmetic.cold);
          }
          if (r.ok) {
            f.stars = { xyf: r.stars, shapes: r.shapes };
            f.metrics = r.metrics;
            streaks.set(f.index, r.streaks);
            ctx.frame(f.index, f.name, 'ok', undefined, { ...metricsView(r.metrics), streak_points: r.streaks });
          } else {
            f.stars = null;
            f.metrics = r.metrics ? { ...r.metrics, quality_score: 0 } : null;
            exclude(f, r.code, r.detail);
            ctx.frame(f.index, f.name, 'excluded', r.fitsCode ?? r.code, r.fitsCode ? { exclusion: r.code, detail: r.detail } : metricsView(f.metrics));
          }
          ctx.progress(++done, frames.length, 'stars');
        },
      );
    } finally {
      await workers.close();
    }
    const wallMs = performance.now() - t0;

    const measured = frames.filter((f) => f.status === 'included' && f.metrics && f.stars);
    const noStars = frames.filter((f) => f.exclusions.some((e) => e.code === 'no_stars')).length;
    const unreadable = frames.filter((f) => f.exclusions.some((e) => e.code === 'unreadable')).length;
    if (measured.length === 0) {
      return failed('registration_error', `no frame has detectable stars (${noStars} without stars, ${unreadable} unreadable of ${frames.length})`, { n_frames: frames.length, n_no_stars: noStars, n_unreadable: unreadable });
    }
    for (const g of filterGroups(state, measured)) {
      const scored = scoreFrames(g.frames.map((f) => f.metrics!));
      g.frames.forEach((f, i) => {
        f.metrics = scored[i]!;
      });
    }
    const refFilter = referenceFilter(state, measured);

    // Candidates: not manually excluded, and no trail through the frame when others are clean.
    const manual = manuallyExcluded(state, measured);
    const streakMedian = medianOf(measured.map((f) => streaks.get(f.index) ?? 0));
    const trailed = new Set(measured.filter((f) => (streaks.get(f.index) ?? 0) > streakMedian + STREAK_MARGIN).map((f) => f.index));
    const ofRefFilter = state.queue ? measured.filter((f) => f.filter === refFilter) : measured;
    const rejected = qualityRejected(state, measured);
    const pools = [
      ofRefFilter.filter((f) => !manual.has(f.index) && !trailed.has(f.index) && !rejected.has(f.index)),
      ofRefFilter.filter((f) => !manual.has(f.index) && !trailed.has(f.index)),
      ofRefFilter.filter((f) => !manual.has(f.index)),
      ofRefFilter,
      measured,
    ];
    const pool = pools.find((p) => p.length > 0)!;
    const inPool = new Set(pool.map((f) => f.index));
    const candidates: ReferenceCandidate[] = measured.map((f) => ({
      index: f.index,
      file: f.name,
      quality_score: f.metrics!.quality_score,
      star_count: f.metrics!.star_count,
      date_obs: f.info?.dateObs ?? null,
      usable: inPool.has(f.index),
    }));
    const mode = state.config.registration_reference;
    const choice = selectReference(candidates, mode, { minStars: state.config.quality_filter.min_stars });
    if (!choice.ok) return failed('registration_error', `no reference frame: ${choice.detail}`);
    const reference = state.frames[choice.index]!;
    state.referenceIndex = reference.index;
    state.referenceStrategy = choice.strategy;

    const perFrame = { read_ms: round1(medianOf(readMs)), detect_ms: round1(medianOf(detectMs)), wall_ms_per_frame: round1(wallMs / frames.length) };
    const details = {
      strategy: choice.strategy,
      requested_strategy: mode,
      fallback: choice.fallback,
      reference_index: reference.index,
      reference_file: reference.name,
      quality_score: choice.quality_score,
      detail: choice.detail,
      ...(state.queue ? { reference_filter: refFilter, filter: reference.filter } : {}),
      n_frames: frames.length,
      n_measured: measured.length,
      n_no_stars: noStars,
      n_unreadable: unreadable,
      not_candidates: { manual_exclude: [...manual].sort((a, b) => a - b), trailed: [...trailed].sort((a, b) => a - b), quality_rejected: [...rejected].sort((a, b) => a - b) },
      workers: workers.size,
      measured_earlier: premeasured,
      timing: perFrame,
      cosmetic: spec.cosmetic
        ? { reason: 'no_darks', sigma: spec.cosmetic.sigma, frames: cosmeticHot.length, hot_per_frame_median: medianOf(cosmeticHot), hot_per_frame_max: cosmeticHot.length ? Math.max(...cosmeticHot) : 0, cold_per_frame_median: medianOf(cosmeticCold) }
        : null,
    };
    state.summaries.REFERENCE_SELECTION = details;
    return ok(details);
  },
};

const round1 = (v: number) => (Number.isFinite(v) ? Math.round(v * 10) / 10 : null);
