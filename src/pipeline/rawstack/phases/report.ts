// REPORT (always runs, also after errors and cancellation): gathers the run's state and events
// into the report model and writes preprocessing_report.{json,md,html} (as report.formats asks)
// and artifacts_manifest.json. It must not fail because an earlier phase left state half-filled.
// Also: one section per postprocess phase (report-extras.ts), preview_<output>.png of each image
// output (embedded in the HTML as data: URIs, registered as artifacts), and a scan of outputs/
// and artifacts/preprocess/ so the manifest lists every file the run wrote.
// Run queue runs also get artifacts/preprocess/run_queue.json (every entry, inactive ones too,
// with frames found / usable / stacked and its filter's stack) and a queue table in the reports.

import { artifactPath, outputPath } from '../../../shared/run-layout.js';
import { addArtifact } from '../../artifacts.js';
import { writeFileAtomic, writeJsonAtomic } from '../../atomic.js';
import type { EventLine, PhasePlanEntry } from '../../events.js';
import { planOf } from '../../../shared/run-progress.js';
import { ok } from '../../phase.js';
import type { RawStackPhase } from '../reasons.js';
import { inRunFolder } from '../../run-folder.js';
import type { ReportFrame, ReportLocalNormalization, ReportModel, ReportTiled, ReportPhase, ReportPostprocessSection, ReportPreview, ReportQueueEntry } from '../../../report/model.js';
import { registrationShift } from '../../../report/registration-shift.js';
import { renderHtml, renderMarkdown } from '../../../report/render.js';
import type { FrameRecord, RawStackState } from '../state.js';
import { stackFileName } from '../queue.js';
import { postprocessSections, scanArtifacts, writePreviews } from '../report-extras.js';
import { SKYSTACK_NAME, SKYSTACK_VERSION } from '../../../version.js';

/** One row per phase of the plan before the report itself, from the events so far. */
function phaseRows(lines: readonly EventLine[], plan: readonly PhasePlanEntry[], report: string): ReportPhase[] {
  const ends = new Map<string, Extract<EventLine, { type: 'phase_end' }>>();
  const started = new Set<string>();
  for (const l of lines) {
    if (l.type === 'phase_start') started.add(l.phase);
    if (l.type === 'phase_end') ends.set(l.phase, l);
  }
  return plan.filter((p) => p.name !== report).map(({ name: phase }) => {
    const end = ends.get(phase);
    if (!end) return { phase, status: started.has(phase) ? 'error' : 'not_started' };
    const row: ReportPhase = { phase, status: end.status, duration_ms: end.duration_ms };
    if (typeof end.peak_rss_mib === 'number') row.peak_rss_mib = end.peak_rss_mib;
    if (end.reason) row.reason = end.reason;
    if (typeof end.message === 'string') row.message = end.message;
    return row;
  });
}

/** A run queue's local normalization per filter stack (STACKING's per-filter summaries), or null. */
export function lnPerFilter(state: RawStackState): { filter: string; ln: ReportLocalNormalization }[] | null {
  const per = state.summaries.STACKING?.per_filter as Record<string, { local_normalization?: ReportLocalNormalization | null }> | undefined;
  if (!per) return null;
  const out = Object.entries(per).flatMap(([filter, s]) => (s.local_normalization && s.local_normalization.frames.length > 0 ? [{ filter, ln: s.local_normalization }] : []));
  return out.length > 0 ? out : null;
}

/** The run queue as the report shows it: per entry its frames found, usable and stacked, and its filter's stack. */
export function queueRows(state: RawStackState): ReportQueueEntry[] | null {
  if (!state.queue) return null;
  const stacked = state.summaries.STACKING !== undefined;
  const perFilter = (state.summaries.STACKING?.per_filter ?? {}) as Record<string, { duration_ms?: number }>;
  return state.queue.map((e) => {
    const output = outputPath(state.folder.layout, stackFileName(e.filter));
    const ms = e.active ? perFilter[e.filter]?.duration_ms : undefined;
    return {
      index: e.index,
      filter: e.filter,
      label: e.label,
      input_dir: e.input_dir,
      pattern: e.pattern,
      active: e.active,
      status: e.status,
      message: e.message,
      frames_found: e.frames_found,
      frames_usable: e.frames_usable,
      frames_used: stacked ? state.frames.filter((f) => f.entry === e.index && f.status === 'included').length : 0,
      output: e.active && state.artifacts.some((a) => a.path === output) ? output : null,
      stack_ms: typeof ms === 'number' ? ms : null,
    };
  });
}

/** The frame's registration for the frame plots, from the matrix registration.json holds. */
function shiftOf(f: FrameRecord, state: RawStackState): Pick<ReportFrame, 'dx_px' | 'dy_px' | 'rotation_deg'> {
  const m = f.registration?.ok ? f.registration.matrix : null;
  if (!m || state.width === null || state.height === null) return { dx_px: null, dy_px: null, rotation_deg: null };
  return registrationShift(m, state.width, state.height);
}

export function buildReportModel(
  state: RawStackState,
  status: ReportModel['status'],
  extras: { postprocess_results?: ReportPostprocessSection[]; previews?: ReportPreview[]; plan?: readonly PhasePlanEntry[]; report?: string } = {},
): ReportModel {
  const lines = state.events.lines;
  const detailed = state.config.report.detailed;
  // report.detailed false: the per-frame detail is left out; the excluded frames stay (the
  // exclusion list is part of the summary).
  const frames = state.frames.filter((f) => detailed || f.status === 'excluded').map((f) => ({
    index: f.index,
    file: f.name,
    status: f.status,
    reason: f.exclusions[0]?.code ?? null,
    detail: f.exclusions.map((e) => e.detail).join('; ') || null,
    star_count: f.metrics?.star_count ?? null,
    fwhm: f.metrics?.fwhm ?? null,
    eccentricity: f.metrics?.eccentricity ?? null,
    background: f.metrics?.background_median ?? null,
    noise: f.metrics?.background_rms ?? null,
    registration_cc: f.metrics?.registration_cc ?? null,
    quality_score: f.metrics?.quality_score ?? null,
    weight: f.weight,
    date_obs: f.info?.dateObs ?? null,
    ...shiftOf(f, state),
  }));
  const reasons: Record<string, number> = {};
  for (const f of state.frames) for (const e of f.exclusions.slice(0, 1)) reasons[e.code] = (reasons[e.code] ?? 0) + 1;
  const ref = state.referenceIndex !== null ? state.frames[state.referenceIndex] : undefined;
  const device: ReportModel['device'] = { kind: state.device.kind, adapter: state.device.adapter };
  if (state.device.fallbackReason) device.fallback_reason = state.device.fallbackReason;
  return {
    run_id: state.runId,
    status,
    kind: state.folder.kind,
    generated_at: new Date().toISOString(),
    generator: { name: SKYSTACK_NAME, version: SKYSTACK_VERSION },
    device,
    phases: phaseRows(lines, extras.plan ?? planOf(lines) ?? [], extras.report ?? 'REPORT'),
    queue: queueRows(state),
    input: {
      lights_dir: state.config.lights_dir,
      pattern: state.config.pattern,
      frames_total: state.frames.length,
      color_mode: state.colorMode,
      bayer_pattern: state.bayer,
      width: state.width,
      height: state.height,
      calibration_note: calibrationNote(state),
    },
    reference: ref ? { strategy: state.referenceStrategy ?? state.config.registration_reference, index: ref.index, file: ref.name } : null,
    quality: {
      mode: state.config.quality_filter.mode,
      frames_total: state.frames.length,
      included: state.frames.filter((f) => f.status === 'included').length,
      excluded: state.frames.filter((f) => f.status === 'excluded').length,
      manual_overrides: state.frames.filter((f) => f.manual !== null).length,
      reasons,
    },
    stacking: state.summaries.STACKING ?? null,
    local_normalization: (state.summaries.STACKING?.local_normalization as ReportLocalNormalization | undefined) ?? null,
    local_normalization_per_filter: lnPerFilter(state),
    // A pipeline that weights per tile leaves its section here (the tiled REPORT phase).
    tiled: (state.summaries.TILES as ReportTiled | undefined) ?? null,
    postprocess: { ...state.config.postprocess },
    postprocess_results: extras.postprocess_results ?? [],
    previews: extras.previews ?? [],
    detailed,
    frames,
    warnings: lines.filter((l): l is Extract<EventLine, { type: 'warning' }> => l.type === 'warning').map((w) => ({ code: w.code, message: w.message })),
    artifacts: state.artifacts,
    effective_config: state.config as unknown as Record<string, unknown>,
  };
}

/** The report's line on the cosmetic pass that stands in for darks (REFERENCE_SELECTION's summary), or null. */
function calibrationNote(state: RawStackState): string | null {
  const c = state.summaries.REFERENCE_SELECTION?.cosmetic as { sigma: number; frames: number; hot_per_frame_median: number | null; cold_per_frame_median: number | null } | null | undefined;
  if (!c) return null;
  const n = (v: number | null) => (typeof v === 'number' && Number.isFinite(v) ? String(Math.round(v)) : '?');
  return `No darks applied: hot and cold pixels of each light were replaced by a cosmetic pass (k = ${c.sigma} σ; median ${n(c.hot_per_frame_median)} hot, ${n(c.cold_per_frame_median)} cold pixels per frame over ${c.frames} frames) before star detection and stacking (calibration.cosmetic_without_darks).`;
}

export const reportPhase: RawStackPhase = {
  name: 'REPORT',
  optional: false,
  async run(ctx) {
    const { state } = ctx;
    const layout = state.folder.layout;
    const at = (rel: string) => inRunFolder(state.folder, rel);
    const formats = new Set(state.config.report.formats);
    // The run's final status is known only after REPORT; report what is known now.
    const optional = new Set(ctx.plan.filter((p) => p.optional).map((p) => p.name));
    const failedCore = [...ctx.outcomes.entries()].some(([name, o]) => o.status === 'error' && !optional.has(name));
    const cancelled = [...ctx.outcomes.values()].some((o) => o.status === 'error' && o.reason === 'cancelled');
    const status = cancelled ? 'cancelled' : failedCore ? 'error' : 'ok';
    if (formats.has('json')) addArtifact(state, 'report_json', 'REPORT', layout.report.json);
    if (formats.has('markdown')) addArtifact(state, 'report_markdown', 'REPORT', layout.report.markdown);
    if (formats.has('html')) addArtifact(state, 'report_html', 'REPORT', layout.report.html);
    addArtifact(state, 'manifest', 'REPORT', layout.manifest);
    // Run queue: every entry, inactive ones included, with what became of it.
    const queue = queueRows(state);
    if (queue) {
      await writeJsonAtomic(at(artifactPath(layout, 'run_queue.json')), { run_id: state.runId, entries: queue });
      addArtifact(state, 'run_queue', 'REPORT', artifactPath(layout, 'run_queue.json'));
    }
    const { previews, data } = await writePreviews(state, (msg) => ctx.warn('report_preview', msg));
    for (const p of previews) addArtifact(state, 'preview', 'REPORT', p.path);
    const rows = phaseRows(state.events.lines, ctx.plan, ctx.phase);
    const postprocess_results = await postprocessSections(state, rows);
    // Last: whatever a phase wrote but did not register (the report files themselves are
    // registered above, before they exist).
    await scanArtifacts(state, (type, phase, path) => addArtifact(state, type, phase, path));
    const model = buildReportModel(state, status, { postprocess_results, previews, plan: ctx.plan, report: ctx.phase });
    if (formats.has('json')) await writeJsonAtomic(at(layout.report.json), model);
    if (formats.has('markdown')) await writeFileAtomic(at(layout.report.markdown), renderMarkdown(model));
    if (formats.has('html')) await writeFileAtomic(at(layout.report.html), renderHtml(model, { previewData: data }));
    await writeJsonAtomic(at(layout.manifest), { run_id: state.runId, artifacts: state.artifacts });
    return ok({ formats: [...formats], report_json: formats.has('json') ? layout.report.json : null, report_html: formats.has('html') ? layout.report.html : null });
  },
};
