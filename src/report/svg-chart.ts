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

/** Scatter of (x, y) points with the y = x line (PCC: catalogue vs measured star colour). */
export function scatterChart(chart: { title: string; xLabel: string; yLabel: string; points: { x: number; y: number }[]; width?: number; height?: number }): string {
  const width = chart.width ?? 360;
  const height = chart.height ?? 300;
  const left = 48;
  const right = 12;
  const top = 24;
  const bottom = 32;
  const pts = chart.points.filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y));
  const all = pts.flatMap((p) => [p.x, p.y]);
  let lo = all.length ? Math.min(...all) : 0;
  let hi = all.length ? Math.max(...all) : 1;
  if (hi === lo) {
    lo -= 0.5;
    hi += 0.5;
  }
  const x = (v: number) => left + ((v - lo) / (hi - lo)) * (width - left - right);
  const y = (v: number) => top + (1 - (v - lo) / (hi - lo)) * (height - top - bottom);
  const parts = [`<text x="${left}" y="15" class="chart-title">${escapeHtml(chart.title)}</text>`];
  for (const t of niceTicks(lo, hi)) {
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}" class="grid"/>`);
    parts.push(`<text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" class="tick" text-anchor="end">${fmt(t)}</text>`);
  }
  parts.push(`<line x1="${x(lo).toFixed(1)}" y1="${y(lo).toFixed(1)}" x2="${x(hi).toFixed(1)}" y2="${y(hi).toFixed(1)}" class="series"/>`);
  for (const p of pts) parts.push(`<circle cx="${x(p.x).toFixed(1)}" cy="${y(p.y).toFixed(1)}" r="2.5" class="dot"/>`);
  parts.push(`<text x="${(left + width - right) / 2}" y="${height - 8}" class="tick" text-anchor="middle">${escapeHtml(chart.xLabel)} vs ${escapeHtml(chart.yLabel)}</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(chart.title)}">${parts.join('')}</svg>`;
}
