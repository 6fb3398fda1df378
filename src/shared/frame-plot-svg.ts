// A frame plot's chart model (frame-plot.ts) drawn as a small SVG node tree: title, y axis with
// its label, x axis with frame numbers and the order's label, a "no value" lane for excluded
// frames without a value, the reference's dashed line, series lines, markers, legend. The UI
// turns the tree into elements (frame-plots-view.ts), the report into markup (svgMarkup).
// Invariants:
// - Data reaches the tree only as attribute values and text nodes; svgMarkup escapes both.
// - Every point is a <g class="pt"> with data-frame=<frame index> (the UI opens that frame on a
//   click), data-series, data-reason when excluded, and a <title> tooltip.
// - Styles are presentation attributes, so the chart looks the same without a stylesheet.

import { AMBER, type ChartModel, type LegendItem, type MarkerShape } from './frame-plot.js';

export interface SvgNode {
  tag: string;
  attrs: Record<string, string | number>;
  children: (SvgNode | string)[];
}

const el = (tag: string, attrs: Record<string, string | number> = {}, ...children: (SvgNode | string)[]): SvgNode => ({ tag, attrs, children });

const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;').replace(/'/g, '&#39;');

/** Markup of a node tree (the report); attribute values and text are escaped. */
export function svgMarkup(node: SvgNode | string): string {
  if (typeof node === 'string') return esc(node);
  const attrs = Object.entries(node.attrs)
    .map(([k, v]) => ` ${k}="${esc(String(v))}"`)
    .join('');
  const root = node.tag === 'svg' && !('xmlns' in node.attrs) ? ' xmlns="http://www.w3.org/2000/svg"' : '';
  return node.children.length ? `<${node.tag}${root}${attrs}>${node.children.map(svgMarkup).join('')}</${node.tag}>` : `<${node.tag}${root}${attrs}/>`;
}

const r1 = (v: number) => Number(v.toFixed(1));

/** A marker of `shape` centred at (x, y), size ~ 9 px. */
function marker(shape: MarkerShape | 'ring', x: number, y: number, color: string): SvgNode {
  const s = 4.5;
  switch (shape) {
    case 'dot':
      return el('circle', { cx: r1(x), cy: r1(y), r: 3.8, fill: color });
    case 'ring':
      return el('circle', { cx: r1(x), cy: r1(y), r: 7.5, fill: 'none', stroke: color, 'stroke-width': 2.5 });
    case 'cross':
      return el('path', { d: `M${r1(x - s)},${r1(y - s)}L${r1(x + s)},${r1(y + s)}M${r1(x - s)},${r1(y + s)}L${r1(x + s)},${r1(y - s)}`, stroke: color, 'stroke-width': 2.4, fill: 'none' });
    case 'plus':
      return el('path', { d: `M${r1(x - s - 0.8)},${r1(y)}H${r1(x + s + 0.8)}M${r1(x)},${r1(y - s - 0.8)}V${r1(y + s + 0.8)}`, stroke: color, 'stroke-width': 2.4, fill: 'none' });
    case 'triangle':
      return el('path', { d: `M${r1(x)},${r1(y - s - 0.5)}L${r1(x + s)},${r1(y + s - 0.5)}L${r1(x - s)},${r1(y + s - 0.5)}Z`, fill: '#fff', stroke: color, 'stroke-width': 2 });
    case 'triangle_down':
      return el('path', { d: `M${r1(x)},${r1(y + s + 0.5)}L${r1(x + s)},${r1(y - s + 0.5)}L${r1(x - s)},${r1(y - s + 0.5)}Z`, fill: '#fff', stroke: color, 'stroke-width': 2 });
    case 'square':
      return el('rect', { x: r1(x - s + 0.7), y: r1(y - s + 0.7), width: r1(2 * s - 1.4), height: r1(2 * s - 1.4), fill: '#fff', stroke: color, 'stroke-width': 2 });
    case 'diamond':
      return el('path', { d: `M${r1(x)},${r1(y - s - 0.6)}L${r1(x + s + 0.6)},${r1(y)}L${r1(x)},${r1(y + s + 0.6)}L${r1(x - s - 0.6)},${r1(y)}Z`, fill: '#fff', stroke: color, 'stroke-width': 2 });
  }
}

/** Tick text with the decimals of the step (no 0.30000000000000004). */
function tickText(v: number, step: number): string {
  const frac = String(Number(step.toPrecision(12))).split('.')[1] ?? '';
  const decimals = /e/i.test(frac) ? 6 : Math.min(6, frac.length);
  return (Math.abs(v) < 1e-12 ? 0 : v).toFixed(decimals);
}

/** A value for a tooltip: integers as they are, else 4 significant digits. */
export function valueText(v: number): string {
  return Number.isInteger(v) ? String(v) : String(Number(v.toPrecision(4)));
}

const FONT = 'system-ui, -apple-system, Segoe UI, Roboto, DejaVu Sans, sans-serif';
/** Rough text width at `size` px (legend layout; overestimates a little on purpose). */
const textWidth = (s: string, size: number) => s.length * size * 0.58;

export interface ChartSvgOptions {
  width?: number;
  /** Height of the plot area (axes excluded). */
  plotHeight?: number;
}

/** The chart as an SVG tree: title, y axis with label, x axis with frame numbers and label, legend under it. */
export function chartSvg(chart: ChartModel, options: ChartSvgOptions = {}): SvgNode {
  const width = options.width ?? 560;
  const plotH = options.plotHeight ?? 170;
  const left = 66;
  const right = 14;
  const top = 34;
  const plotW = width - left - right;
  const bottom = top + plotH;
  // Legend rows below the x label: items laid out left to right, wrapped at the width.
  const legendRows: { item: LegendItem; x: number }[][] = [[]];
  let lx = left;
  for (const item of chart.legend) {
    const w = 22 + textWidth(item.label, 12) + 14;
    if (lx + w > width - right && legendRows[legendRows.length - 1]!.length) {
      legendRows.push([]);
      lx = left;
    }
    legendRows[legendRows.length - 1]!.push({ item, x: lx });
    lx += w;
  }
  // Excluded frames without a value sit in a lane under the x axis, apart from real values.
  const lane = bottom + 12;
  const hasLane = chart.points.some((p) => p.value === null);
  const tickY = bottom + (hasLane ? 34 : 18);
  const legendTop = tickY + 38;
  const height = legendTop + legendRows.length * 20 + 4;
  const x = (pos: number) => left + ((pos + 0.5) / Math.max(1, chart.n)) * plotW;
  const y = (v: number) => top + (1 - (v - chart.yMin) / (chart.yMax - chart.yMin || 1)) * plotH;
  const title = chart.spec.title;
  const parts: SvgNode[] = [];
  parts.push(el('title', {}, title));
  parts.push(el('rect', { x: 0, y: 0, width, height, fill: '#fff' }));
  parts.push(el('text', { x: 10, y: 21, 'font-size': 15, 'font-weight': 600, fill: '#1d2330', class: 'chart-title' }, title));
  const step = chart.yTicks.length > 1 ? chart.yTicks[1]! - chart.yTicks[0]! : 0;
  for (const t of chart.yTicks) {
    const ty = r1(y(t));
    parts.push(el('line', { x1: left, x2: width - right, y1: ty, y2: ty, stroke: '#e6e9ee', 'stroke-width': 1 }));
    parts.push(el('text', { x: left - 7, y: r1(ty + 4), 'font-size': 12, 'text-anchor': 'end', fill: '#4a5361' }, tickText(t, step)));
  }
  parts.push(el('path', { d: `M${left},${top}V${bottom}H${width - right}`, stroke: '#8a93a0', 'stroke-width': 1, fill: 'none', class: 'axes' }));
  parts.push(el('text', { x: 14, y: r1(top + plotH / 2), 'font-size': 12.5, 'text-anchor': 'middle', fill: '#1d2330', transform: `rotate(-90 14 ${r1(top + plotH / 2)})`, class: 'axis-label y-label' }, chart.spec.yLabel));
  for (const t of chart.xTicks) {
    const tx = r1(x(t.pos));
    parts.push(el('line', { x1: tx, x2: tx, y1: bottom, y2: bottom + 5, stroke: '#8a93a0', 'stroke-width': 1 }));
    parts.push(el('text', { x: tx, y: tickY, 'font-size': 12, 'text-anchor': 'middle', fill: '#4a5361' }, t.label));
  }
  if (hasLane) parts.push(el('text', { x: left - 7, y: lane + 4, 'font-size': 11, 'text-anchor': 'end', fill: '#8a3b3b', class: 'lane-label' }, 'no value'));
  if (chart.points.every((p) => p.value === null)) parts.push(el('text', { x: r1(left + plotW / 2), y: r1(top + plotH / 2), 'font-size': 13, 'text-anchor': 'middle', fill: '#8a93a0', class: 'chart-empty' }, 'no values'));
  parts.push(el('text', { x: r1(left + plotW / 2), y: tickY + 20, 'font-size': 12.5, 'text-anchor': 'middle', fill: '#1d2330', class: 'axis-label x-label' }, chart.xLabel));
  if (chart.referencePos !== null) {
    const rx = r1(x(chart.referencePos));
    parts.push(el('line', { x1: rx, x2: rx, y1: top, y2: bottom, stroke: AMBER, 'stroke-width': 1.5, 'stroke-dasharray': '4 3', class: 'reference-line' }));
  }
  for (const line of chart.lines) {
    if (line.pos.length < 2) continue;
    const d = line.pos.map((p, i) => `${i ? 'L' : 'M'}${r1(x(p))},${r1(y(line.values[i]!))}`).join('');
    parts.push(el('path', { d, stroke: line.color, 'stroke-width': 1.6, fill: 'none', 'stroke-opacity': 0.75, class: 'series' }));
  }
  const fmtValue = (v: number | null) => (v === null ? 'no value' : `${valueText(v)}${chart.spec.unit ? ` ${chart.spec.unit}` : ''}`);
  for (const p of chart.points) {
    const px = x(p.pos);
    const py = p.value === null ? lane : y(p.value);
    const s = chart.spec.series[p.series]!;
    const tip = [`frame ${p.index}: ${p.file}`, p.date_obs ? `DATE-OBS ${p.date_obs}` : null, `${s.label}: ${fmtValue(p.value)}`, p.excluded ? `excluded: ${p.reason}` : 'included', p.reference ? 'reference frame' : null].filter(Boolean).join('\n');
    const g = el('g', { class: `pt${p.excluded ? ' excluded' : ''}${p.reference ? ' reference' : ''}`, 'data-frame': p.index, 'data-series': s.key, ...(p.excluded ? { 'data-reason': p.reason ?? '' } : {}) }, el('title', {}, tip));
    // A transparent disc under the marker: a click target larger than the marker itself.
    g.children.push(el('circle', { cx: r1(px), cy: r1(py), r: 8, fill: '#fff', 'fill-opacity': 0 }));
    if (p.reference) g.children.push(marker('ring', px, py, AMBER));
    g.children.push(marker(p.marker, px, py, p.color));
    parts.push(g);
  }
  const legend = el('g', { class: 'legend' });
  legendRows.forEach((row, ri) => {
    const ly = legendTop + ri * 20;
    for (const { item, x: ix } of row) {
      legend.children.push(marker(item.marker, ix + 8, ly, item.color));
      legend.children.push(el('text', { x: ix + 22, y: ly + 4, 'font-size': 12, fill: '#1d2330' }, item.label));
    }
  });
  return el('svg', { width, height, viewBox: `0 0 ${width} ${height}`, role: 'img', 'aria-label': `${title}: ${chart.spec.yLabel} against ${chart.xLabel}`, 'font-family': FONT, class: 'frame-chart', 'data-chart': chart.spec.id }, ...parts, legend);
}
