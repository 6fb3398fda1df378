// Per-frame plots shared by the web UI (frame-plots-view.ts) and the HTML report
// (src/report/frame-plots-html.ts): the acquisition order of the frames and a chart model per
// metric; frame-plot-svg.ts draws a model as an SVG node tree. DOM-free and Node-free, so both
// builds compile it (the server imports it like shared/csv.ts).
// Invariants:
// - Acquisition order: frames with a DATE-OBS in time order (ties: frame index), then frames
//   without one in index order; `order` says which of the two the x axis shows.
// - Every frame has one x slot in every chart (the axes of all charts line up); a frame without
//   a value has no point, except an excluded frame, whose marker sits in a "no value" lane under
//   the x axis so its reason is still shown.
// - Excluded frames get a red marker whose shape names their reason (one shape per reason over
//   the whole frame set, so every chart's legend agrees); the reference frame gets a ring and a
//   dashed vertical line.

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
/** The reference frame's ring and line. */
export const AMBER = '#d98e04';

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
