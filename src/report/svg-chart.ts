// Small self-contained SVG charts for the HTML report: phase duration bars and the PCC star
// colour scatter (the per-frame plots are src/ui/frame-plot*.ts, shared with the web UI). No
// scripts, no external assets, so the report opens anywhere (and from a copied run folder).

import { escapeHtml } from './escape.js';

function niceTicks(min: number, max: number, count = 4): number[] {
  if (!(max > min)) return [min];
  const raw = (max - min) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let t = Math.ceil(min / step) * step; t <= max + 1e-9 * step; t += step) ticks.push(Number(t.toPrecision(12)));
  return ticks;
}

const fmt = (v: number) => (Math.abs(v) >= 1000 || v === Math.round(v) ? String(Math.round(v)) : v.toPrecision(3));

export interface BarItem {
  label: string;
  value: number;
  /** CSS class of the bar (e.g. the phase status). */
  cls?: string;
}

/** Horizontal bars, one row per item (phase durations): label left, value right of the bar. */
export function barChart(chart: { title: string; unit?: string; items: BarItem[]; format?: (v: number) => string; width?: number }): string {
  const width = chart.width ?? 640;
  const row = 16;
  const left = 150;
  const right = 70;
  const top = 24;
  const height = top + Math.max(1, chart.items.length) * row + 8;
  const max = Math.max(0, ...chart.items.map((i) => (Number.isFinite(i.value) ? i.value : 0)));
  const f = chart.format ?? fmt;
  const parts = [`<text x="8" y="15" class="chart-title">${escapeHtml(chart.title)}${chart.unit ? ` (${escapeHtml(chart.unit)})` : ''}</text>`];
  chart.items.forEach((it, i) => {
    const y = top + i * row;
    const v = Number.isFinite(it.value) && it.value > 0 ? it.value : 0;
    const w = max > 0 ? (v / max) * (width - left - right) : 0;
    parts.push(`<text x="${left - 6}" y="${y + 11}" class="tick" text-anchor="end">${escapeHtml(it.label)}</text>`);
    parts.push(`<rect x="${left}" y="${y + 2}" width="${Math.max(w, 1).toFixed(1)}" height="${row - 5}" class="bar ${escapeHtml(it.cls ?? '')}"><title>${escapeHtml(it.label)}: ${escapeHtml(f(it.value))}</title></rect>`);
    parts.push(`<text x="${(left + Math.max(w, 1) + 4).toFixed(1)}" y="${y + 11}" class="tick">${escapeHtml(f(it.value))}</text>`);
  });
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(chart.title)}" class="bars">${parts.join('')}</svg>`;
}

export interface ScatterLine {
  /** y = intercept + slope·x over the plotted range. */
  slope: number;
  intercept?: number;
  label: string;
  /** CSS class: `fit` (solid) or `reference` (dashed). */
  cls: 'fit' | 'reference';
}

/**
 * Scatter of (x, y) points with a title, an optional subtitle line (what the lines and rings
 * mean), labelled axes and straight lines (PCC: catalogue vs image colour with the fitted relation
 * and y = x; each line's label is its tooltip). Points with `muted` (e.g. left out of a fit) are
 * drawn as rings. Both axes share one range so slopes read true.
 */
export function scatterChart(chart: { title: string; subtitle?: string; xLabel: string; yLabel: string; points: { x: number; y: number; muted?: boolean }[]; lines?: ScatterLine[]; width?: number; height?: number }): string {
  const width = chart.width ?? 380;
  const height = chart.height ?? 320;
  const left = 58;
  const right = 12;
  const top = chart.subtitle ? 38 : 24;
  const bottom = 44;
  const pts = chart.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  const all = pts.flatMap((p) => [p.x, p.y]);
  let lo = all.length ? Math.min(...all) : 0;
  let hi = all.length ? Math.max(...all) : 1;
  if (hi === lo) {
    lo -= 0.5;
    hi += 0.5;
  }
  const pad = 0.04 * (hi - lo);
  lo -= pad;
  hi += pad;
  const x = (v: number) => left + ((v - lo) / (hi - lo)) * (width - left - right);
  const y = (v: number) => top + (1 - (v - lo) / (hi - lo)) * (height - top - bottom);
  const parts = [`<text x="8" y="15" class="chart-title">${escapeHtml(chart.title)}</text>`];
  if (chart.subtitle) parts.push(`<text x="8" y="30" class="tick">${escapeHtml(chart.subtitle)}</text>`);
  for (const t of niceTicks(lo, hi)) {
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}" class="grid"/>`);
    parts.push(`<text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" class="tick" text-anchor="end">${fmt(t)}</text>`);
    parts.push(`<text x="${x(t).toFixed(1)}" y="${height - bottom + 14}" class="tick" text-anchor="middle">${fmt(t)}</text>`);
  }
  // Lines clipped to the square plot range (y within [lo, hi]).
  for (const l of chart.lines ?? []) {
    const b = l.intercept ?? 0;
    const seg: [number, number][] = [];
    for (const xv of [lo, hi]) seg.push([xv, b + l.slope * xv]);
    if (l.slope !== 0) for (const yv of [lo, hi]) seg.push([(yv - b) / l.slope, yv]);
    const inside = seg.filter(([a, c]) => a >= lo - 1e-9 && a <= hi + 1e-9 && c >= lo - 1e-9 && c <= hi + 1e-9).sort((p, q) => p[0] - q[0]);
    if (inside.length < 2) continue;
    const [p0, p1] = [inside[0]!, inside[inside.length - 1]!];
    parts.push(`<line x1="${x(p0[0]).toFixed(1)}" y1="${y(p0[1]).toFixed(1)}" x2="${x(p1[0]).toFixed(1)}" y2="${y(p1[1]).toFixed(1)}" class="line-${l.cls}"><title>${escapeHtml(l.label)}</title></line>`);
  }
  for (const p of pts) parts.push(`<circle cx="${x(p.x).toFixed(1)}" cy="${y(p.y).toFixed(1)}" r="2.5" class="${p.muted ? 'dot excluded' : 'dot'}"/>`);
  parts.push(`<text x="${(left + width - right) / 2}" y="${height - 8}" class="axis-label" text-anchor="middle">${escapeHtml(chart.xLabel)}</text>`);
  const cy = (top + height - bottom) / 2;
  parts.push(`<text x="14" y="${cy}" class="axis-label" text-anchor="middle" transform="rotate(-90 14 ${cy})">${escapeHtml(chart.yLabel)}</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(chart.subtitle ? `${chart.title}: ${chart.subtitle}` : chart.title)}">${parts.join('')}</svg>`;
}
