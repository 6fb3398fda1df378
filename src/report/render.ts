// Renders the report model as Markdown (a short readable summary) and as one self-contained
// HTML page (phase table + duration bars, summaries, postprocess sections, output previews,
// per-frame quality table when report.detailed, inline SVG charts). Every value printed into
// HTML is escaped; links are relative to the artifacts folder (the reports' own) so a copied run folder keeps
// working; previews are embedded as data: URIs (PNG bytes passed in by the caller, so the
// model and the JSON report stay small).

import { escapeHtml as h } from './escape.js';
import type { ReportLocalNormalization, ReportModel, ReportPostprocessSection } from './model.js';
import { FRAME_PLOTS_STYLE, framePlotsHtml } from './frame-plots-html.js';
import { barChart, scatterChart } from './svg-chart.js';
import { TILED_STYLE, tiledHtml } from './tiled-html.js';
import { fromArtifacts, layoutOf } from '../shared/run-layout.js';

/** The report's title by pipeline kind. */
const reportTitle = (m: ReportModel): string => (m.kind === 'tiled' ? 'Tiled workflow report' : 'Raw Stack report');

/** The HTML report's file name (the layout of the run's kind, shared/run-layout.ts). */
const htmlName = (m: ReportModel): string => layoutOf(m.kind).report.html.split('/').pop()!;

const num = (v: number | null | undefined, digits = 2) => (v === null || v === undefined || !Number.isFinite(v) ? '–' : Number.isInteger(v) ? String(v) : v.toFixed(digits));
const secs = (ms: number | undefined) => (ms === undefined ? '–' : ms < 1000 ? `${ms} ms` : `${(ms / 1000).toFixed(1)} s`);

const RATIO_NAMES = { rg: 'R/G', bg: 'B/G' } as const;

const TITLES: Record<ReportPostprocessSection['phase'], string> = {
  ASTROMETRY: 'Astrometry (plate solve)',
  BGE: 'Background extraction (BGE)',
  PCC: 'Photometric colour calibration (PCC)',
  HYPERMETRIC_STRETCH: 'HyperMetric Stretch',
};

/** A section value as text: numbers to 4 significant digits, arrays comma-joined. */
function valueText(v: ReportPostprocessSection['values'][string]): string {
  const one = (x: unknown) => (typeof x === 'number' ? (Number.isInteger(x) ? String(x) : Number.isFinite(x) ? String(Number(x.toPrecision(4))) : '–') : x === null ? '–' : String(x));
  return Array.isArray(v) ? v.map(one).join(', ') : one(v);
}

const maxOf = (v: (number | undefined)[]) => {
  const f = v.filter((x): x is number => typeof x === 'number');
  return f.length ? Math.max(...f) : undefined;
};

const outcomeText = (s: ReportPostprocessSection) => [s.status, [s.reason, s.message].filter(Boolean).join(': ')].filter(Boolean).join(' · ');

export function renderMarkdown(m: ReportModel): string {
  const lines: string[] = [];
  lines.push(`# ${reportTitle(m)}: ${m.run_id}`);
  lines.push('');
  lines.push(`Status: **${m.status}** · generated ${m.generated_at} by ${m.generator.name} ${m.generator.version} · device: ${m.device.kind}${m.device.adapter ? ` (${m.device.adapter})` : ''}`);
  if (m.device.fallback_reason) lines.push(`Device note: ${m.device.fallback_reason}`);
  lines.push('');
  lines.push('## Phases');
  lines.push('');
  const totalMs = phaseTotal(m);
  lines.push('| phase | status | reason | duration | share | peak RSS |');
  lines.push('|---|---|---|---|---|---|');
  for (const p of m.phases) lines.push(`| ${p.phase} | ${p.status} | ${[p.reason, p.message].filter(Boolean).join(': ') || ''} | ${secs(p.duration_ms)} | ${share(p.duration_ms, totalMs)} | ${mib(p.peak_rss_mib)} |`);
  lines.push('');
  if (m.queue?.length) {
    lines.push('## Run queue');
    lines.push('');
    lines.push('| # | filter | label | input folder | pattern | active | status | found | usable | stacked | stack time | output |');
    lines.push('|---|---|---|---|---|---|---|---|---|---|---|---|');
    for (const e of m.queue) lines.push(`| ${e.index} | ${e.filter} | ${e.label ?? ''} | \`${e.input_dir}\` | \`${e.pattern}\` | ${e.active ? 'yes' : 'no'} | ${e.status}${e.message ? `: ${e.message}` : ''} | ${e.frames_found} | ${e.frames_usable} | ${e.frames_used} | ${e.stack_ms === null ? '–' : secs(e.stack_ms)} | ${e.output ? `\`${e.output}\`` : '–'} |`);
    lines.push('');
  }
  lines.push('## Input');
  lines.push('');
  const i = m.input;
  lines.push(`${i.frames_total} frames from ${m.queue?.length ? `the run queue (${m.queue.filter((e) => e.active).length} active of ${m.queue.length} entries)` : `\`${i.lights_dir}\` (pattern \`${i.pattern}\`)`}, ${i.color_mode ?? 'unknown'}${i.bayer_pattern ? ` ${i.bayer_pattern}` : ''}, ${i.width ?? '?'}×${i.height ?? '?'} px.`);
  if (m.reference) lines.push(`Reference frame: #${m.reference.index} ${m.reference.file ?? ''} (${m.reference.strategy}).`);
  if (i.calibration_note) lines.push(i.calibration_note);
  lines.push('');
  lines.push('## Quality');
  lines.push('');
  const q = m.quality;
  lines.push(`Mode \`${q.mode}\`: ${q.included} of ${q.frames_total} frames included, ${q.excluded} excluded${q.manual_overrides ? `, ${q.manual_overrides} manual overrides` : ''}.`);
  const reasons = Object.entries(q.reasons);
  if (reasons.length) lines.push(`Exclusion reasons: ${reasons.map(([r, n]) => `${r} ${n}`).join(', ')}.`);
  const excluded = m.frames.filter((f) => f.status === 'excluded');
  if (excluded.length) {
    lines.push('');
    lines.push('| # | file | reason | detail |');
    lines.push('|---|---|---|---|');
    for (const f of excluded) lines.push(`| ${f.index} | ${f.file} | ${f.reason ?? ''} | ${f.detail ?? ''} |`);
  }
  if (m.detailed && m.frames.length) {
    lines.push('');
    lines.push(`Per-frame detail: ${m.frames.filter((f) => f.status === 'included').length} included frames, mean FWHM ${num(mean(m.frames.filter((f) => f.status === 'included').map((f) => f.fwhm)))} px (see the HTML/JSON report for the table).`);
    if (m.artifacts.some((a) => a.type === 'report_html')) lines.push(`Frame plots (FWHM, stars, background, eccentricity, weight, registration shift and rotation per frame, in acquisition order): [${htmlName(m)}](${htmlName(m)}#frame-plots).`);
  }
  if (m.stacking) {
    lines.push('');
    lines.push('## Stacking');
    lines.push('');
    for (const [k, v] of Object.entries(m.stacking)) if (typeof v !== 'object' || v === null) lines.push(`- ${k}: ${valueText(v as string | number | boolean | null)}`);
    const lnLine = (ln: ReportLocalNormalization, filter: string | null) => {
      const ranges = ln.frames.flatMap((f) => f.channels.map((c) => c.offset_range)).sort((a, b) => a - b);
      const failed = ln.frames.filter((f) => f.channels.some((c) => !c.ok)).length;
      lines.push(`- local normalization${filter ? ` (${filter})` : ''}: ${ln.frames.length} frames on a ${ln.nx}×${ln.ny} grid, background shape differences (offset range) median ${num(ranges[ranges.length >> 1]!, 1)}, max ${num(ranges[ranges.length - 1]!, 1)}${failed ? `, ${failed} frames not fitted (left as they were)` : ''} (per-frame table and surfaces in the HTML report)`);
    };
    const ln = m.local_normalization;
    if (ln && ln.frames.length) lnLine(ln, null);
    for (const q of m.local_normalization_per_filter ?? []) lnLine(q.ln, q.filter);
  }
  for (const sec of m.postprocess_results) {
    lines.push('');
    lines.push(`## ${TITLES[sec.phase]}`);
    lines.push('');
    lines.push(`Status: ${outcomeText(sec)}`);
    for (const [k, v] of Object.entries(sec.values)) lines.push(`- ${k}: ${valueText(v)}`);
    for (const [key, r] of Object.entries(sec.colour_relations ?? {})) lines.push(`- ${RATIO_NAMES[key as 'rg' | 'bg']} image vs catalogue colour: slope ${r.slope.toFixed(3)}${r.slope_fixed ? ' (fixed: catalogue colours too alike)' : ''}, scatter ${r.scatter.toFixed(3)} mag, ${r.points.filter((p) => p.used).length} of ${r.points.length} stars used`);
  }
  if (m.previews.length) {
    lines.push('');
    lines.push('## Previews');
    lines.push('');
    for (const p of m.previews) lines.push(`- ${p.output}: ![${p.output}](${fromArtifacts(layoutOf(m.kind), p.path)}) (${p.width}×${p.height}, 1/${p.factor} of ${p.source_width}×${p.source_height}, stretch ${p.stretch})`);
  }
  if (m.warnings.length) {
    lines.push('');
    lines.push('## Warnings');
    lines.push('');
    for (const w of m.warnings) lines.push(`- \`${w.code}\`: ${w.message}`);
  }
  lines.push('');
  lines.push('## Artifacts');
  lines.push('');
  for (const a of m.artifacts) lines.push(`- ${a.type} (${a.phase}): \`${a.path}\``);
  lines.push('');
  return lines.join('\n');
}

/** Sum of the phase durations (the run's wall time up to REPORT). */
function phaseTotal(m: ReportModel): number {
  return m.phases.reduce((a, p) => a + (p.duration_ms ?? 0), 0);
}
const share = (ms: number | undefined, total: number) => (ms === undefined || !(total > 0) ? '–' : `${((100 * ms) / total).toFixed(1)} %`);
const mib = (v: number | undefined) => (v === undefined ? '–' : `${v.toFixed(0)} MiB`);

function queueHtml(m: ReportModel): string {
  if (!m.queue?.length) return '';
  const rows = m.queue
    .map(
      (e) =>
        `<tr class="${e.active ? '' : 'inactive'}"><td class="n">${e.index}</td><td><b>${h(e.filter)}</b></td><td>${h(e.label ?? '')}</td><td><code>${h(e.input_dir)}</code></td><td><code>${h(e.pattern)}</code></td>` +
        `<td>${e.active ? 'yes' : 'no'}</td><td>${h(e.status)}${e.message ? `<br><small>${h(e.message)}</small>` : ''}</td><td class="n">${e.frames_found}</td><td class="n">${e.frames_usable}</td><td class="n">${e.frames_used}</td>` +
        `<td class="n">${e.stack_ms === null ? '–' : secs(e.stack_ms)}</td><td>${e.output ? `<a href="../../${h(e.output)}">${h(e.output)}</a>` : '–'}</td></tr>`,
    )
    .join('\n');
  return `<h2>Run queue</h2>
<table class="queue"><tr><th>#</th><th>filter</th><th>label</th><th>input folder</th><th>pattern</th><th>active</th><th>status</th><th>found</th><th>usable</th><th>stacked</th><th>stack time</th><th>output</th></tr>
${rows}
</table>`;
}

function mean(v: (number | null)[]): number | null {
  const f = v.filter((x): x is number => x !== null && Number.isFinite(x));
  return f.length ? f.reduce((a, b) => a + b, 0) / f.length : null;
}

function sectionHtml(sec: ReportPostprocessSection): string {
  const rows = Object.entries(sec.values)
    .map(([k, v]) => `<tr><th>${h(k)}</th><td>${h(valueText(v))}</td></tr>`)
    .join('');
  const plot = Object.entries(sec.colour_relations ?? {})
    .map(([key, r]) => {
      const name = RATIO_NAMES[key as 'rg' | 'bg'];
      const used = r.points.filter((p) => p.used).length;
      return scatterChart({
        title: `PCC ${name}: image vs catalogue colour`,
        subtitle: `fit slope ${r.slope.toFixed(2)} (solid)${r.slope_fixed ? ' fixed' : ''}, y = x dashed, scatter ${r.scatter.toFixed(3)} mag; ${used} of ${r.points.length} stars used, rings left out`,
        xLabel: `catalogue −2.5·log10(${name}) [mag], white reference = 0`,
        yLabel: `image −2.5·log10(${name}) after PCC [mag]`,
        points: r.points.map((p) => ({ x: p.x, y: p.y, muted: !p.used })),
        width: 470,
        height: 370,
        lines: [
          { slope: r.slope, cls: 'fit', label: `fit, slope ${r.slope.toFixed(2)}` },
          { slope: 1, cls: 'reference', label: 'y = x' },
        ],
      });
    })
    .join('');
  return `<section class="pp" id="pp-${h(sec.phase)}"><h2>${h(TITLES[sec.phase])} <span class="chip ${h(sec.status)}">${h(sec.status)}</span></h2>` +
    `${sec.reason || sec.message ? `<p>${h([sec.reason, sec.message].filter(Boolean).join(': '))}</p>` : ''}${rows ? `<table>${rows}</table>` : ''}${plot ? `<div class="charts">${plot}</div>` : ''}</section>`;
}

const STYLE = `
body{font:14px/1.45 system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1100px;padding:0 16px;color:#1d2330;background:#fafbfc}
h1{font-size:22px;margin:0 0 4px}h2{font-size:17px;margin:28px 0 8px;border-bottom:1px solid #dde1e6;padding-bottom:4px}
.meta{color:#5b6575}table{border-collapse:collapse;width:100%;font-variant-numeric:tabular-nums}
th,td{border-bottom:1px solid #e3e6ea;padding:4px 8px;text-align:left;vertical-align:top}th{background:#eef1f5;font-weight:600}
td.n,th.n{text-align:right;white-space:nowrap}.chip{display:inline-block;border-radius:10px;padding:0 8px;font-size:12px;font-weight:600}
.ok{background:#dff3e4;color:#17603a}.skipped{background:#eceff3;color:#4a5361}.error{background:#fbe2e2;color:#9b1c1c}.not_started{background:#f4f4f4;color:#888}
.cancelled{background:#fff1d6;color:#8a5a00}.running{background:#e1ecfb;color:#1c4f9b}
tr.excluded td{color:#9b1c1c}tr.inactive td{color:#8a93a0}.charts{display:grid;grid-template-columns:repeat(auto-fit,minmax(320px,1fr));gap:12px}
svg{background:#fff;border:1px solid #e3e6ea;border-radius:6px;max-width:100%;height:auto}
.chart-title{font-size:12px;font-weight:600;fill:#1d2330}.tick{font-size:10px;fill:#6b7482}.grid{stroke:#eef0f3}
.series{fill:none;stroke:#2f6fdb;stroke-width:1.5}.line-fit{stroke:#d07a1f;stroke-width:1.5}.line-reference{stroke:#8a93a0;stroke-width:1;stroke-dasharray:4 3}.axis-label{font-size:11px;fill:#3a4250}.dot{fill:#2f6fdb}.dot.excluded{fill:#fff;stroke:#d03b3b;stroke-width:2}.chart-empty{font-size:12px;fill:#999}
code{background:#eef1f5;padding:0 4px;border-radius:3px}
.bar{fill:#2f6fdb}.bar.skipped{fill:#b8c0cc}.bar.error{fill:#d03b3b}.previews{display:grid;grid-template-columns:repeat(auto-fit,minmax(360px,1fr));gap:12px}
figure{margin:0}figure img{max-width:100%;height:auto;border:1px solid #e3e6ea;border-radius:6px;background:#000}figcaption{font-size:12px;color:#5b6575}`;

/**
 * A node field as a tiny heat map (one rect per node; blue below the field's mean, red above,
 * full colour at ±`span`), for the local-normalization table.
 */
function surfaceThumb(values: number[], nx: number, ny: number, span: number): string {
  const cell = 4;
  const mean = values.reduce((a, v) => a + v, 0) / Math.max(1, values.length);
  const rects = values
    .map((v, k) => {
      const t = span > 0 ? Math.max(-1, Math.min(1, (v - mean) / span)) : 0;
      const c = Math.round(255 * (1 - Math.abs(t)));
      const fill = t >= 0 ? `rgb(255,${c},${c})` : `rgb(${c},${c},255)`;
      return `<rect x="${(k % nx) * cell}" y="${Math.floor(k / nx) * cell}" width="${cell}" height="${cell}" fill="${fill}"/>`;
    })
    .join('');
  return `<svg class="ln-thumb" width="${nx * cell}" height="${ny * cell}" viewBox="0 0 ${nx * cell} ${ny * cell}">${rects}</svg>`;
}

/** STACKING's per-frame local normalization: fit figures and the background correction surface b. */
function localNormalizationHtml(ln: ReportLocalNormalization | null, filter: string | null = null): string {
  if (!ln || ln.frames.length === 0) return '';
  // One colour scale for every thumbnail: the largest deviation from a frame's own mean.
  let span = 0;
  for (const f of ln.frames) {
    for (const c of f.channels) {
      const mean = c.b.reduce((a, v) => a + v, 0) / Math.max(1, c.b.length);
      for (const v of c.b) span = Math.max(span, Math.abs(v - mean));
    }
  }
  const names = ln.frames[0]!.channels.map((c) => c.name);
  const head = `<tr><th>#</th><th>file</th>${names.map((n) => `<th>${h(n)}: offset range</th><th>cells measured</th><th>masked</th><th>surface b</th>`).join('')}</tr>`;
  const rows = ln.frames
    .map(
      (f) =>
        `<tr><td class="n">${f.index}</td><td>${h(f.file)}</td>${f.channels
          .map((c) => `<td class="n">${c.ok ? num(c.offset_range, 1) : 'not fitted'}</td><td class="n">${c.cells_measured} / ${c.cells}</td><td class="n">${num(100 * c.masked_fraction, 0)} %</td><td>${c.b.length ? surfaceThumb(c.b, ln.nx, ln.ny, span) : ''}</td>`)
          .join('')}</tr>`,
    )
    .join('\n');
  return `<h3 id="local-normalization${filter ? `-${h(filter)}` : ''}">Local normalization${filter ? ` — ${h(filter)} stack` : ''}</h3>
<p>Each frame's sky was matched to the reference's across the field before rejection: frame' = frame + b(x, y) on a ${ln.nx}×${ln.ny} grid (on top of the global normalization). The offset range is how much the frame's background shape differed from the reference's; the surface shows b (blue: lowered, red: raised; one scale of ±${num(span, 1)} for all frames).</p>
<table class="ln">${head}
${rows}</table>`;
}

/** previewData: base64 PNG per preview path (the artifacts folder's preview_<output>.png). */
export function renderHtml(m: ReportModel, options: { previewData?: Record<string, string> } = {}): string {
  const layout = layoutOf(m.kind);
  const chip = (s: string) => `<span class="chip ${h(s)}">${h(s)}</span>`;
  const q = m.quality;
  const i = m.input;
  const rows = m.frames
    .map(
      (f) =>
        `<tr class="${f.status}"><td class="n">${f.index}</td><td>${h(f.file)}</td><td>${chip(f.status)}</td><td>${h(f.reason ?? '')}${f.detail ? `<br><small>${h(f.detail)}</small>` : ''}</td>` +
        `<td class="n">${num(f.star_count, 0)}</td><td class="n">${num(f.fwhm)}</td><td class="n">${num(f.eccentricity)}</td><td class="n">${num(f.background, 1)}</td><td class="n">${num(f.noise, 2)}</td>` +
        `<td class="n">${num(f.registration_cc, 3)}</td><td class="n">${num(f.quality_score, 3)}</td><td class="n">${num(f.weight, 3)}</td></tr>`,
    )
    .join('\n');
  const stacking = m.stacking
    ? `<h2>Stacking</h2><table>${Object.entries(m.stacking)
        .filter(([, v]) => typeof v !== 'object' || v === null)
        .map(([k, v]) => `<tr><th>${h(k)}</th><td>${h(valueText(v as string | number | boolean | null))}</td></tr>`)
        .join('')}</table>`
    : '';
  // A run queue's stacks (one per filter) each have their own table.
  const stackingLn = localNormalizationHtml(m.local_normalization ?? null) + (m.local_normalization_per_filter ?? []).map((q) => localNormalizationHtml(q.ln, q.filter)).join('\n');
  // The tiled section draws its grid over the first preview (the stack).
  const firstPreview = m.previews[0] ? options.previewData?.[m.previews[0].path] : undefined;
  const tiledSection = tiledHtml(m.tiled ?? null, firstPreview);
  const durations = m.phases.filter((p) => p.duration_ms !== undefined);
  const totalMs = phaseTotal(m);
  const phaseChart = durations.length
    ? barChart({ title: 'Phase durations', items: durations.map((p) => ({ label: p.phase, value: p.duration_ms!, cls: p.status })), format: (v) => secs(v) })
    : '';
  const postprocess = m.postprocess_results.map(sectionHtml).join('\n');
  const figures = m.previews
    .filter((p) => options.previewData?.[p.path])
    .map((p) => {
      const rel = fromArtifacts(layout, p.path);
      return `<figure><a href="${h(rel)}"><img alt="${h(p.output)}" width="${p.width}" height="${p.height}" src="data:image/png;base64,${h(options.previewData![p.path]!)}"></a>` +
        `<figcaption>${h(p.output)} · ${p.source_width}×${p.source_height} px, shown 1/${p.factor} · ${p.stretch === 'auto' ? 'auto stretch (unlinked STF)' : 'as stretched'}</figcaption></figure>`;
    });
  const previews = figures.length ? `<h2>Previews</h2><div class="previews">${figures.join('\n')}</div>` : '';
  const exclusions = m.frames
    .filter((f) => f.status === 'excluded')
    .map((f) => `<li>#${f.index} ${h(f.file)}: <code>${h(f.reason ?? '')}</code>${f.detail ? ` ${h(f.detail)}` : ''}</li>`)
    .join('');
  const frameDetail = m.detailed
    ? `${framePlotsHtml(m)}
<h2>Frames</h2>
<table><tr><th>#</th><th>file</th><th>status</th><th>reason</th><th>stars</th><th>FWHM</th><th>ecc.</th><th>background</th><th>noise</th><th>reg. cc</th><th>score</th><th>weight</th></tr>
${rows}
</table>`
    : exclusions
      ? `<ul class="exclusions">${exclusions}</ul>`
      : '';
  const warnings = m.warnings.length ? `<h2>Warnings</h2><ul>${m.warnings.map((w) => `<li><code>${h(w.code)}</code> ${h(w.message)}</li>`).join('')}</ul>` : '';
  const artifacts = m.artifacts
    .map((a) => {
      const rel = fromArtifacts(layout, a.path);
      return `<li><a href="${h(rel)}">${h(a.path)}</a> <small>${h(a.type)} · ${h(a.phase)}</small></li>`;
    })
    .join('');
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width,initial-scale=1">
<title>${h(reportTitle(m))} ${h(m.run_id)}</title><style>${STYLE}${FRAME_PLOTS_STYLE}${TILED_STYLE}</style></head><body>
<h1>${h(reportTitle(m))} ${chip(m.status)}</h1>
<p class="meta">${h(m.run_id)} · generated ${h(m.generated_at)} by ${h(m.generator.name)} ${h(m.generator.version)} · device ${h(m.device.kind)}${m.device.adapter ? ` (${h(m.device.adapter)})` : ''}${m.device.fallback_reason ? ` · ${h(m.device.fallback_reason)}` : ''}</p>
<h2>Phases</h2>
<table class="phases"><tr><th>phase</th><th>status</th><th>reason</th><th>duration</th><th>share</th><th>peak RSS</th></tr>
${m.phases.map((p) => `<tr><td>${h(p.phase)}</td><td>${chip(p.status)}</td><td>${h([p.reason, p.message].filter(Boolean).join(': '))}</td><td class="n">${secs(p.duration_ms)}</td><td class="n">${share(p.duration_ms, totalMs)}</td><td class="n">${mib(p.peak_rss_mib)}</td></tr>`).join('\n')}
<tr><th>total</th><th></th><th></th><th class="n">${secs(totalMs)}</th><th></th><th class="n">${mib(maxOf(m.phases.map((p) => p.peak_rss_mib)))}</th></tr>
</table>
${phaseChart}
${queueHtml(m)}
<h2>Input</h2>
<p>${i.frames_total} frames from ${m.queue?.length ? `the run queue (${m.queue.filter((e) => e.active).length} active of ${m.queue.length} entries)` : `<code>${h(i.lights_dir)}</code> (pattern <code>${h(i.pattern)}</code>)`}, ${h(i.color_mode ?? 'unknown')}${i.bayer_pattern ? ` ${h(i.bayer_pattern)}` : ''}, ${i.width ?? '?'}×${i.height ?? '?'} px.${m.reference ? ` Reference frame #${m.reference.index} ${h(m.reference.file ?? '')} (${h(m.reference.strategy)}).` : ''}</p>${i.calibration_note ? `
<p>${h(i.calibration_note)}</p>` : ''}
<h2>Quality</h2>
<p>Mode <code>${h(q.mode)}</code>: <b>${q.included}</b> of ${q.frames_total} frames included, <b>${q.excluded}</b> excluded${q.manual_overrides ? `, ${q.manual_overrides} manual overrides` : ''}.${Object.keys(q.reasons).length ? ` Reasons: ${Object.entries(q.reasons).map(([r, n]) => `${h(r)} ${n}`).join(', ')}.` : ''}</p>
${frameDetail}
${stacking}
${stackingLn}
${tiledSection}
${postprocess}
${previews}
${warnings}
<h2>Artifacts</h2><ul>${artifacts}</ul>
</body></html>
`;
}
