// FRAME_FILTERING: the seed's quality filter plus the transparency rule (docs/ARCHITECTURE.md "Raw Stack decisions") (frame-filter.ts
// holds the rules, thresholds and override semantics), then the stacking weights and the quality
// artifacts.
// - quality_filter.mode `off`: the phase ends `skipped` (reason quality_mode_off) from prepare(),
//   which still sets the weights (weights.ts) and writes frame_quality.csv / rejected_frames.txt
//   showing the earlier phases' exclusions. Manual overrides are not applied in `off` (nothing is
//   filtered; a warning says so when overrides are configured).
// - otherwise filterFrames over every input frame: frames already excluded take part as frames
//   without data (so overrides naming them are resolved and reported, never re-included) and the
//   relative rules' medians come from the frames that pass the absolute rules. Manual overrides
//   (by 0-based index or file name) win both ways: an overridden frame gets frame.manual
//   (true = kept by override, false = excluded by override). Every failed rule of an excluded
//   frame lands in frame.exclusions (primary first) with its detail; a kept-by-override frame
//   keeps no exclusion (its overridden rules are in its `frame` event). Filter warnings (≥ 50 %
//   rejected, overrides matching no frame, too few frames for the relative rules) are `warning`
//   events. No frame left → error `no_frames` (after writing the artifacts, so the user sees why).
// - When the absolute rules would exclude more than half of a group's frames (frame-filter.ts
//   relative_fallback), relative rules decide: warning `quality_rules_relative`, and the summary's
//   `relative_fallback` holds what the absolute rules would have done and the limits used.
// Run queue: the filter runs once per filter group (relative rules within one filter); an
// override can name `<filter>/<file>`; weights are normalised per group.
// Writes: frame.status/exclusions/manual/weight, frame_quality.csv, rejected_frames.txt,
// state.summaries.FRAME_FILTERING.

import { filterFrames, type FilterFrame, type FilterResult } from '../../../algorithms/frame-filter.js';
import { failed, ok, skipped } from '../../phase.js';
import type { RawStackPhase } from '../reasons.js';
import { filterGroups } from '../queue.js';
import { qualityArtifactPaths, writeQualityArtifacts } from '../quality-artifacts.js';
import { exclude, type FrameExclusionCode } from '../state.js';
import { computeWeights } from '../weights.js';

const r4 = (v: number) => (Number.isFinite(v) ? Number(v.toFixed(4)) : null);

function warningCode(text: string): string {
  if (text.startsWith('manual override')) return 'manual_override_unmatched';
  if (/frames excluded$/.test(text)) return 'many_frames_excluded';
  return 'quality_filter';
}

export const frameFilteringPhase: RawStackPhase = {
  name: 'FRAME_FILTERING',
  optional: false,
  async prepare(ctx) {
    const { state } = ctx;
    if (state.config.quality_filter.mode !== 'off') return;
    const weights = computeWeights(state);
    await writeQualityArtifacts(state, 'FRAME_FILTERING');
    const overrides = Object.keys(state.config.quality_filter.manual_overrides).length;
    if (overrides > 0) ctx.warn('manual_overrides_ignored', `quality_filter.mode is off: the ${overrides} manual override(s) are not applied`);
    const included = state.frames.filter((f) => f.status === 'included').length;
    const details = { rejection_mode: 'off', n_total: state.frames.length, n_accepted: included, n_rejected: state.frames.length - included, csv_path: qualityArtifactPaths(state.folder.layout).csv, rejected_path: qualityArtifactPaths(state.folder.layout).rejected, weights };
    state.summaries.FRAME_FILTERING = details;
    return skipped('quality_mode_off', 'quality_filter.mode is off: no quality filtering', details);
  },
  async run(ctx) {
    const { state } = ctx;
    const q = state.config.quality_filter;
    const filterConfig = {
      mode: q.mode,
      min_stars: q.min_stars,
      min_correlation: q.min_correlation,
      max_fwhm_sigma: q.max_fwhm_sigma,
      max_eccentricity: q.max_eccentricity,
      min_relative_transparency: q.min_relative_transparency,
      relative_fallback: q.relative_fallback,
      manual_overrides: q.manual_overrides,
    };
    let rejectedHere = 0;
    const counts: Record<string, number> = {};
    const groups = filterGroups(state);
    const perFilter: Record<string, FilterResult['limits']> = {};
    const unmatched = new Map<string, number>();
    const systematic: Record<string, NonNullable<FilterResult['systematic']>> = {};
    let result: FilterResult | null = null;
    // Run queue: the relative rules (FWHM, transparency) compare frames of one filter only.
    for (const group of groups) {
      const input: FilterFrame[] = group.frames.map((f) => ({
        index: f.index,
        // `<filter>/<file>` in a queue run, so an override can name one filter's file.
        file: group.filter !== null ? `${group.filter}/${f.name}` : f.name,
        // Frames excluded before (unreadable, no stars, not registered) are frames without data.
        metrics: f.status === 'included' && f.metrics ? f.metrics : null,
        registered: f.registration?.ok ?? false,
      }));
      result = filterFrames(input, filterConfig);
      if (group.filter !== null) perFilter[group.filter] = result.limits;
      result.frames.forEach((d, p) => {
        const f = group.frames[p]!;
        const wasIncluded = f.status === 'included';
        if (d.manual !== null && wasIncluded) f.manual = d.manual === 'include';
        if (wasIncluded && d.status === 'excluded') {
          d.reasons.forEach((reason, k) => {
            const code: FrameExclusionCode = reason; // the filter's codes are a subset (type-checked)
            exclude(f, code, d.details[k] ?? code);
          });
          rejectedHere++;
          counts[d.reasons[0]!] = (counts[d.reasons[0]!] ?? 0) + 1;
        }
        if (wasIncluded) {
          const extra = d.manual === 'include' && d.reasons.length > 0 ? { overridden: d.reasons.map((c, k) => `${c}: ${d.details[k]}`) } : {};
          ctx.frame(f.index, f.name, f.status === 'included' ? 'ok' : 'excluded', f.status === 'excluded' ? f.exclusions[0]?.code : d.manual === 'include' ? 'manual_include' : undefined, Object.keys(extra).length ? extra : undefined);
        } else if (d.manual === 'include') {
          ctx.warn('manual_include_without_data', `manual override cannot include ${f.name}: ${f.exclusions[0]?.code ?? 'excluded'} (${f.exclusions[0]?.detail ?? ''})`);
        }
      });
      if (result.systematic) {
        const sys = result.systematic;
        const rules = Object.entries(sys.by_rule).map(([r, n]) => `${r} ${n}`).join(', ');
        const text = `the absolute rules would exclude ${sys.would_exclude} of ${sys.measured} frames (${rules}): a systematic cause, not bad frames; rules relative to the sequence median decided instead (eccentricity > ${r4(sys.limits.eccentricity_limit)}, stars < ${r4(sys.limits.star_count_limit)}${sys.limits.correlation_limit !== null ? `, correlation < ${r4(sys.limits.correlation_limit)}` : ''})`;
        ctx.warn('quality_rules_relative', group.filter !== null ? `${group.filter}: ${text}` : text);
        systematic[group.filter ?? ''] = sys;
      }
      for (const w of result.warnings) {
        // An override naming another filter's frame matches none here: warn only if no group matched it.
        if (warningCode(w) === 'manual_override_unmatched') unmatched.set(w, (unmatched.get(w) ?? 0) + 1);
        else ctx.warn(warningCode(w), group.filter !== null ? `${group.filter}: ${w}` : w);
      }
    }
    for (const [w, n] of unmatched) if (n === groups.length) ctx.warn('manual_override_unmatched', w);
    const l = result?.limits;
    const weights = computeWeights(state);
    await writeQualityArtifacts(state, 'FRAME_FILTERING');
    const accepted = state.frames.filter((f) => f.status === 'included').length;
    const details = {
      rejection_mode: q.mode,
      n_total: state.frames.length,
      n_accepted: accepted,
      n_rejected: state.frames.length - accepted,
      n_rejected_by_filter: rejectedHere,
      rejected_by_reason: counts,
      manual_overrides: state.frames.filter((f) => f.manual !== null).length,
      // Absolute rules replaced by relative ones (per filter group; '' in a single-folder run).
      relative_fallback: Object.keys(systematic).length > 0 ? systematic : null,
      csv_path: qualityArtifactPaths(state.folder.layout).csv,
      rejected_path: qualityArtifactPaths(state.folder.layout).rejected,
      limits: {
        k: l?.k ?? null,
        min_stars: q.min_stars,
        min_correlation: q.min_correlation,
        max_eccentricity: q.max_eccentricity,
        max_fwhm_sigma: q.max_fwhm_sigma,
        min_relative_transparency: q.min_relative_transparency,
        fwhm_median: r4(l?.fwhm_median ?? NaN),
        fwhm_sigma: r4(l?.fwhm_sigma ?? NaN),
        fwhm_limit: r4(l?.fwhm_limit ?? NaN),
        star_count_median: r4(l?.star_count_median ?? NaN),
        star_count_limit: r4(l?.star_count_limit ?? NaN),
        flux_median: r4(l?.flux_median ?? NaN),
        flux_limit: r4(l?.flux_limit ?? NaN),
      },
      ...(state.queue ? { per_filter: Object.fromEntries(Object.entries(perFilter).map(([f, x]) => [f, { fwhm_limit: r4(x.fwhm_limit), star_count_limit: r4(x.star_count_limit), flux_limit: r4(x.flux_limit), n_accepted: state.frames.filter((fr) => fr.filter === f && fr.status === 'included').length }])) } : {}),
      weights,
    };
    state.summaries.FRAME_FILTERING = details;
    if (accepted === 0) return failed('no_frames', `no frame left to stack: all ${state.frames.length} frames excluded`, details);
    return ok(details);
  },
};
