// Small self-contained SVG charts for the HTML report: one series per frame index, included
// frames as filled dots joined by a line, excluded frames as red rings. No scripts, no
// external assets, so the report opens anywhere (and from a copied run folder).

import { escapeHtml } from './escape.js';

export interface SeriesChart {
  title: string;
  unit?: string;
  values: (number | null)[];
  excluded: boolean[];
  width?: number;
  height?: number;
}

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

export function seriesChart(chart: SeriesChart): string {
  const width = chart.width ?? 640;
  const height = chart.height ?? 180;
  const left = 56;
  const right = 12;
  const top = 24;
  const bottom = 28;
  const finite = chart.values.filter((v): v is number => v !== null && Number.isFinite(v));
  const title = `<text x="${left}" y="15" class="chart-title">${escapeHtml(chart.title)}${chart.unit ? ` (${escapeHtml(chart.unit)})` : ''}</text>`;
  if (finite.length === 0) {
    return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" role="img" aria-label="${escapeHtml(chart.title)}">${title}<text x="${left}" y="${height / 2}" class="chart-empty">no data</text></svg>`;
  }
  let lo = Math.min(...finite);
  let hi = Math.max(...finite);
  if (hi === lo) {
    const pad = Math.abs(hi) * 0.05 || 1;
    lo -= pad;
    hi += pad;
  }
  const n = chart.values.length;
  const x = (i: number) => left + (n <= 1 ? (width - left - right) / 2 : (i / (n - 1)) * (width - left - right));
  const y = (v: number) => top + (1 - (v - lo) / (hi - lo)) * (height - top - bottom);
  const parts: string[] = [title];
  for (const t of niceTicks(lo, hi)) {
    parts.push(`<line x1="${left}" x2="${width - right}" y1="${y(t).toFixed(1)}" y2="${y(t).toFixed(1)}" class="grid"/>`);
    parts.push(`<text x="${left - 6}" y="${(y(t) + 4).toFixed(1)}" class="tick" text-anchor="end">${fmt(t)}</text>`);
  }
  const path: string[] = [];
  chart.values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v) || chart.excluded[i]) return;
    path.push(`${path.length === 0 ? 'M' : 'L'}${x(i).toFixed(1)},${y(v).toFixed(1)}`);
  });
  if (path.length > 1) parts.push(`<path d="${path.join(' ')}" class="series"/>`);
  chart.values.forEach((v, i) => {
    if (v === null || !Number.isFinite(v)) return;
    const cls = chart.excluded[i] ? 'dot excluded' : 'dot';
    parts.push(`<circle cx="${x(i).toFixed(1)}" cy="${y(v).toFixed(1)}" r="3.2" class="${cls}"><title>frame ${i}: ${fmt(v)}${chart.excluded[i] ? ' (excluded)' : ''}</title></circle>`);
  });
  parts.push(`<text x="${(left + width - right) / 2}" y="${height - 6}" class="tick" text-anchor="middle">frame index (0–${n - 1})</text>`);
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" role="img" aria-label="${escapeHtml(chart.title)}">${parts.join('')}</svg>`;
}
