// Per-frame plots shared by the web UI (drawn as DOM nodes, frame-plots-view.ts) and the HTML
// report (serialised to markup, src/report/render.ts): the acquisition order of the frames, a
// chart model per metric, and the chart as a small SVG node tree. DOM-free and Node-free, so both
// builds compile it (the server imports it like ui/csv.ts).
// Invariants:
// - Acquisition order: frames with a DATE-OBS in time order (ties: frame index), then frames
//   without one in index order; `order` says which of the two the x axis shows.
// - Every frame has one x slot in every chart (the axes of all charts line up); a frame without
//   a value has no point, except an excluded frame, whose marker sits in a "no value" lane under
//   the x axis so its reason is still shown.
// - Excluded frames get a red marker whose shape names their reason (one shape per reason over
//   the whole frame set, so every chart's legend agrees); the reference frame gets a ring and a
//   dashed vertical line.
// - Data reaches the tree only as attribute values and text nodes; svgMarkup escapes both.
// - Every point carries data-frame=<frame index> (the UI opens that frame on a click) and a
//   <title> tooltip.

export type FrameMetricKey = 'star_count' | 'fwhm' | 'background' | 'eccentricity' | 'weight' | 'dx_px' | 'dy_px' | 'rotation_deg';

export interface PlotFrame {
  index: number;
  file: string;
  excluded: boolean;
  /** Primary exclusion code (null when included). */
  reason: string | null;
  /** DATE-OBS as ISO text (no zone = UTC), null when unknown. */
  date_obs: string | null;
  values: Partial<Record<FrameMetricKey, number | null>>;
}

export type FrameOrder = 'date_obs' | 'index' | 'mixed';

export interface ChartSeries {
  key: FrameMetricKey;
  label: string;
  color: string;
}

export interface ChartSpec {
  id: string;
  title: string;
  /** Axis label, with the unit. */
  yLabel: string;
  /** Unit shown after values in tooltips ('' for none). */
  unit: string;
  series: ChartSeries[];
}

const BLUE = '#2f6fdb';
const GREEN = '#15965a';
const RED = '#d03b3b';
const AMBER = '#d98e04';

/** The quality plots of the frame table and the report. */
export const FRAME_CHARTS: readonly ChartSpec[] = [
  { id: 'fwhm', title: 'FWHM per frame', yLabel: 'FWHM (px)', unit: 'px', series: [{ key: 'fwhm', label: 'FWHM', color: BLUE }] },
  { id: 'star_count', title: 'Stars detected per frame', yLabel: 'stars', unit: '', series: [{ key: 'star_count', label: 'stars', color: BLUE }] },
  { id: 'background', title: 'Background per frame', yLabel: 'background (ADU)', unit: 'ADU', series: [{ key: 'background', label: 'background', color: BLUE }] },
  { id: 'eccentricity', title: 'Eccentricity per frame', yLabel: 'eccentricity', unit: '', series: [{ key: 'eccentricity', label: 'eccentricity', color: BLUE }] },
  { id: 'weight', title: 'Stacking weight per frame', yLabel: 'weight (mean 1)', unit: '', series: [{ key: 'weight', label: 'weight', color: BLUE }] },
];

/** The registration plots of the report (dx_px, dy_px, rotation_deg: registrationShift in src/report/registration-shift.ts). */
export const REGISTRATION_CHARTS: readonly ChartSpec[] = [
  {
    id: 'shift',
    title: 'Registration shift of the frame centre',
    yLabel: 'shift (px)',
    unit: 'px',
    series: [
      { key: 'dx_px', label: 'dx (columns)', color: BLUE },
      { key: 'dy_px', label: 'dy (rows)', color: GREEN },
    ],
  },
  { id: 'rotation', title: 'Registration rotation', yLabel: 'rotation (degrees)', unit: '°', series: [{ key: 'rotation_deg', label: 'rotation', color: BLUE }] },
];

/** DATE-OBS text as epoch ms; a time without a zone is UTC (FITS), unlike Date.parse's local time. */
export function parseObsTime(text: string | null | undefined): number {
  if (!text) return NaN;
  const t = text.trim();
  const zoned = /(Z|[+-]\d\d:?\d\d)$/i.test(t) || !/T\d/.test(t) ? t : `${t}Z`;
  return Date.parse(zoned);
}

export function acquisitionOrder<T extends { index: number; date_obs: string | null }>(frames: readonly T[]): { frames: T[]; order: FrameOrder } {
  const timed = frames.map((f) => ({ f, t: parseObsTime(f.date_obs) }));
  const known = timed.filter((x) => Number.isFinite(x.t)).sort((a, b) => a.t - b.t || a.f.index - b.f.index);
  const unknown = timed.filter((x) => !Number.isFinite(x.t)).sort((a, b) => a.f.index - b.f.index);
  const order: FrameOrder = known.length === 0 ? 'index' : unknown.length === 0 ? 'date_obs' : 'mixed';
  return { frames: [...known, ...unknown].map((x) => x.f), order };
}

export type MarkerShape = 'dot' | 'cross' | 'triangle' | 'square' | 'diamond' | 'plus' | 'triangle_down';
const REASON_SHAPES: MarkerShape[] = ['cross', 'triangle', 'square', 'diamond', 'plus', 'triangle_down'];

/** One shape per exclusion reason, by the reasons' sorted names (cycling past six reasons). */
export function reasonMarkers(frames: readonly PlotFrame[]): Map<string, MarkerShape> {
  const reasons = [...new Set(frames.filter((f) => f.excluded).map((f) => f.reason ?? 'excluded'))].sort();
  return new Map(reasons.map((r, i) => [r, REASON_SHAPES[i % REASON_SHAPES.length]!]));
}

export interface ChartPoint {
  /** Slot on the x axis (0-based position in acquisition order). */
  pos: number;
  index: number;
  file: string;
  date_obs: string | null;
  series: number;
  /** The plotted value; null draws an excluded frame's marker on the x axis. */
  value: number | null;
  excluded: boolean;
  reason: string | null;
  reference: boolean;
  marker: MarkerShape;
  color: string;
}

export interface LegendItem {
  label: string;
  marker: MarkerShape | 'ring';
  color: string;
}

export interface ChartModel {
  spec: ChartSpec;
  order: FrameOrder;
  /** Frames (x slots). */
  n: number;
  points: ChartPoint[];
  /** Lines through the included points of each series, in x order. */
  lines: { color: string; pos: number[]; values: number[] }[];
  yMin: number;
  yMax: number;
  yTicks: number[];
  xTicks: { pos: number; label: string }[];
  xLabel: string;
  /** x slot of the reference frame (null when it is not among the frames). */
  referencePos: number | null;
  legend: LegendItem[];
}

/** Tick values at a 1-2-2.5-5 step covering [min, max]. */
export function niceTicks(min: number, max: number, count = 5): number[] {
  if (!(max > min)) return [min];
  const raw = (max - min) / count;
  const mag = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * mag).find((s) => s >= raw) ?? raw;
  const ticks: number[] = [];
  for (let t = Math.ceil(min / step - 1e-9) * step; t <= max + 1e-9 * step; t += step) ticks.push(Number(t.toPrecision(12)));
  return ticks;
}

/** About `max` evenly spaced slots at a 1-2-5 step, starting at 0. */
function xTickSlots(n: number, max = 10): number[] {
  if (n <= 0) return [];
  const raw = n / max;
  const steps = [1, 2, 5, 10, 20, 25, 50, 100, 200, 250, 500, 1000, 2000, 5000, 10000];
  const step = steps.find((s) => s >= raw) ?? Math.ceil(raw);
  const out: number[] = [];
  for (let p = 0; p < n; p += step) out.push(p);
  return out;
}

const X_LABELS: Record<FrameOrder, string> = {
  date_obs: 'frame number, in acquisition order (DATE-OBS)',
  mixed: 'frame number, in acquisition order (DATE-OBS; frames without it last)',
  index: 'frame number (file order; no DATE-OBS)',
};

/**
 * The chart of one spec over frames already in acquisition order (framePlots does the ordering).
 * `markers` comes from reasonMarkers over the same frames.
 */
export function chartModel(frames: readonly PlotFrame[], order: FrameOrder, spec: ChartSpec, referenceIndex: number | null, markers: Map<string, MarkerShape>): ChartModel {
  const points: ChartPoint[] = [];
  const lines: ChartModel['lines'] = [];
  const finite: number[] = [];
  spec.series.forEach((s, si) => {
    const line = { color: s.color, pos: [] as number[], values: [] as number[] };
    frames.forEach((f, pos) => {
      const raw = f.values[s.key];
      const value = typeof raw === 'number' && Number.isFinite(raw) ? raw : null;
      if (value === null && !f.excluded) return;
      if (value !== null) finite.push(value);
      if (value !== null && !f.excluded) {
        line.pos.push(pos);
        line.values.push(value);
      }
      const reason = f.excluded ? (f.reason ?? 'excluded') : null;
      points.push({ pos, index: f.index, file: f.file, date_obs: f.date_obs, series: si, value, excluded: f.excluded, reason, reference: f.index === referenceIndex, marker: reason !== null ? (markers.get(reason) ?? 'cross') : 'dot', color: reason !== null ? RED : s.color });
    });
    lines.push(line);
  });
  const min = finite.length ? Math.min(...finite) : 0;
  let lo = min;
  let hi = finite.length ? Math.max(...finite) : 1;
  if (hi === lo) {
    const pad = Math.abs(hi) * 0.05 || 1;
    lo -= pad;
    hi += pad;
  } else {
    const pad = (hi - lo) * 0.06;
    lo -= pad;
    hi += pad;
  }
  // Counts, FWHM, weights...: an axis of non-negative values does not reach below 0.
  if (min >= 0 && lo < 0) lo = 0;
  // The axis ends on ticks, so the outermost points sit inside labelled range.
  const ticks = niceTicks(lo, hi);
  const step = ticks.length > 1 ? ticks[1]! - ticks[0]! : 0;
  if (step > 0) {
    if (ticks[0]! > lo + 1e-9 * step) ticks.unshift(Number((ticks[0]! - step).toPrecision(12)));
    if (ticks[ticks.length - 1]! < hi - 1e-9 * step) ticks.push(Number((ticks[ticks.length - 1]! + step).toPrecision(12)));
    lo = ticks[0]!;
    hi = ticks[ticks.length - 1]!;
  }
  const refPos = referenceIndex === null ? -1 : frames.findIndex((f) => f.index === referenceIndex);
  const legend: LegendItem[] = spec.series.length > 1 ? spec.series.map((s) => ({ label: s.label, marker: 'dot', color: s.color })) : [{ label: 'included', marker: 'dot', color: spec.series[0]?.color ?? BLUE }];
  if (refPos >= 0) legend.push({ label: `reference (frame ${referenceIndex})`, marker: 'ring', color: AMBER });
  for (const [reason, marker] of markers) legend.push({ label: `excluded: ${reason}`, marker, color: RED });
  return {
    spec,
    order,
    n: frames.length,
    points,
    lines,
    yMin: lo,
    yMax: hi,
    yTicks: ticks,
    xTicks: xTickSlots(frames.length).map((pos) => ({ pos, label: String(frames[pos]!.index) })),
    xLabel: X_LABELS[order],
    referencePos: refPos >= 0 ? refPos : null,
    legend,
  };
}

/** Orders the frames and builds one chart per spec. */
export function framePlots(frames: readonly PlotFrame[], referenceIndex: number | null, specs: readonly ChartSpec[]): { order: FrameOrder; frames: PlotFrame[]; charts: ChartModel[] } {
  const { frames: ordered, order } = acquisitionOrder(frames);
  const markers = reasonMarkers(ordered);
  return { order, frames: ordered, charts: specs.map((s) => chartModel(ordered, order, s, referenceIndex, markers)) };
}

// ---- SVG ---------------------------------------------------------------------------------------

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
