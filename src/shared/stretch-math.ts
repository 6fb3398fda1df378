// Screen-stretch maths of the image viewer and of `skystack export` (one definition for the
// browser, the server and the CLI; DOM-free). docs/viewer.md states the model:
//
//   t   = clamp((v − black) / (white − black), 0, 1)              per channel, data units
//   g   = t                              (linear, auto)
//         asinh(β t) / asinh(β)          (asinh; β > 0, g(t) → t as β → 0)
//   out = MTF(mid, g)                    MTF(m, x) = (m − 1) x / ((2m − 1) x − m), MTF(½, x) = x
//   NaN and −Inf → 0 (black), +Inf → 1 (a value beyond the tiles' half-float range is bright).
//
// Defaults per mode, from robust channel statistics (median, MAD over finite samples):
//   auto    black = max(min, median − 2.8·1.4826·MAD), white = max, mid so the median lands on
//           0.25 — the auto-stretch of Siril and PixInsight's STF, and of the report's previews
//           (src/report/preview.ts, same constants). Linked: one set from the channel means of
//           median and black and the largest max, so colour balance is kept; unlinked: per channel.
//   linear  black = min, white = max, mid = ½ (linked: min and max over channels).
//   asinh   black and white as auto, β solved so the median lands on 0.25, mid = ½.
//   hms     the data are already stretched into [0, 1] (an HMS output, or the run's HMS look
//           computed by the server): black 0, white 1, mid ½ — shown as is.
// The MTF matches src/cpu/stretch.ts's mtf (tested against it).

export type StretchMode = 'auto' | 'linear' | 'asinh' | 'hms';
export const STRETCH_MODES: readonly StretchMode[] = ['auto', 'linear', 'asinh', 'hms'];

export interface ChannelStats {
  /** Finite samples counted for min and max. */
  count: number;
  min: number;
  max: number;
  median: number;
  /** Median absolute deviation from the median (unscaled). */
  mad: number;
}

export interface ChannelLevels {
  black: number;
  /** Midtones balance in (0, 1): the normalised level mapped to ½. */
  mid: number;
  white: number;
  /** asinh strength (asinh mode only; ignored otherwise). */
  beta: number;
}

export interface DisplayParams {
  mode: StretchMode;
  linked: boolean;
  /** One entry per displayed channel. */
  channels: ChannelLevels[];
}

export const TARGET_BG = 0.25;
export const SHADOWS_SIGMA = 2.8;
export const MAD_TO_SIGMA = 1.4826;
const MID_MIN = 1e-6;

/** Midtones transfer function (exact at 0, m and 1). */
export function mtf(m: number, x: number): number {
  if (!(x > 0)) return 0;
  if (x >= 1) return 1;
  return ((m - 1) * x) / ((2 * m - 1) * x - m);
}

/** The midtones balance m with MTF(m, x) = y (x, y in (0, 1)); ½ when undefined. */
export function midFor(x: number, y = TARGET_BG): number {
  if (!(x > 0 && x < 1) || !(y > 0 && y < 1)) return 0.5;
  const m = (x * (y - 1)) / (2 * x * y - x - y);
  return Math.min(1 - MID_MIN, Math.max(MID_MIN, m));
}

/** asinh base curve g(t) = asinh(βt) / asinh(β) (t itself for β ≤ 0). */
export function asinhCurve(beta: number, t: number): number {
  if (!(t > 0)) return 0;
  if (t >= 1) return 1;
  if (!(beta > 1e-9)) return t;
  return Math.asinh(beta * t) / Math.asinh(beta);
}

/** β with asinhCurve(β, x) = y (bisection in log β); tiny β (≈ linear) when x ≥ y. */
export function betaFor(x: number, y = TARGET_BG): number {
  if (!(x > 0 && x < 1) || x >= y) return 1e-6;
  let lo = -6;
  let hi = 9;
  for (let i = 0; i < 80; i++) {
    const mid = (lo + hi) / 2;
    if (asinhCurve(10 ** mid, x) < y) lo = mid;
    else hi = mid;
  }
  return 10 ** ((lo + hi) / 2);
}

/** The value shown for sample `v` (in [0, 1]). */
export function displayValue(v: number, c: ChannelLevels, mode: StretchMode): number {
  if (!(v - v === 0)) return v === Infinity ? 1 : 0;
  const span = c.white - c.black;
  const t = span > 0 ? (v - c.black) / span : v >= c.white ? 1 : 0;
  const g = mode === 'asinh' ? asinhCurve(c.beta, t) : t <= 0 ? 0 : t >= 1 ? 1 : t;
  return c.mid === 0.5 ? g : mtf(c.mid, g);
}

function combined(stats: ChannelStats[]): ChannelStats {
  const n = stats.length;
  const mean = (f: (s: ChannelStats) => number) => stats.reduce((a, s) => a + f(s), 0) / n;
  return { count: stats.reduce((a, s) => a + s.count, 0), min: Math.min(...stats.map((s) => s.min)), max: Math.max(...stats.map((s) => s.max)), median: mean((s) => s.median), mad: mean((s) => s.mad) };
}

function autoChannel(s: ChannelStats, shadowsFrom?: number): { black: number; white: number; x: number } {
  if (!(s.count > 0) || !Number.isFinite(s.min) || !Number.isFinite(s.max)) return { black: 0, white: 1, x: 0.5 };
  const black = Math.max(s.min, shadowsFrom ?? s.median - SHADOWS_SIGMA * MAD_TO_SIGMA * s.mad);
  const white = s.max > black ? s.max : black + 1;
  return { black, white, x: (s.median - black) / (white - black) };
}

/** Default levels of `mode` for channels with these statistics. */
export function defaultLevels(mode: StretchMode, stats: ChannelStats[], linked: boolean): ChannelLevels[] {
  if (stats.length === 0) return [];
  if (mode === 'hms') return stats.map(() => ({ black: 0, mid: 0.5, white: 1, beta: 0 }));
  if (mode === 'linear') {
    const one = (s: ChannelStats): ChannelLevels => (s.count > 0 && s.max > s.min ? { black: s.min, mid: 0.5, white: s.max, beta: 0 } : { black: s.count > 0 ? s.min : 0, mid: 0.5, white: s.count > 0 ? s.min + 1 : 1, beta: 0 });
    if (!linked) return stats.map(one);
    const c = one(combined(stats.filter((s) => s.count > 0).length ? stats.filter((s) => s.count > 0) : stats));
    return stats.map(() => ({ ...c }));
  }
  const per = (s: ChannelStats, shadows?: number): ChannelLevels => {
    const a = autoChannel(s, shadows);
    return mode === 'asinh' ? { black: a.black, white: a.white, mid: 0.5, beta: betaFor(a.x) } : { black: a.black, white: a.white, mid: midFor(a.x), beta: 0 };
  };
  if (!linked || stats.length === 1) return stats.map((s) => per(s));
  const valid = stats.filter((s) => s.count > 0);
  if (valid.length === 0) return stats.map((s) => per(s));
  // Linked: the channels' own shadow clips averaged, applied with the mean median and the top max.
  const shadows = valid.reduce((a, s) => a + Math.max(s.min, s.median - SHADOWS_SIGMA * MAD_TO_SIGMA * s.mad), 0) / valid.length;
  const c = per(combined(valid), shadows);
  return stats.map(() => ({ ...c }));
}

export function defaultParams(mode: StretchMode, stats: ChannelStats[], linked: boolean): DisplayParams {
  return { mode, linked, channels: defaultLevels(mode, stats, linked) };
}

/** Checks levels a user or a request sent; null when usable, else the reason. */
export function levelsProblem(c: ChannelLevels): string | null {
  if (![c.black, c.white, c.mid, c.beta].every(Number.isFinite)) return 'levels must be finite numbers';
  if (!(c.white > c.black)) return 'the white point must be above the black point';
  if (!(c.mid > 0 && c.mid < 1)) return 'the midtones balance must lie in (0, 1)';
  if (c.beta < 0) return 'the asinh strength must not be negative';
  return null;
}

/**
 * Display bytes for every half-float pattern of a tile channel: lut[h] = round(255 ·
 * displayValue(table[h] · scale)). Tiles are drawn through it, so a change of levels costs one
 * table, not a pass over the image.
 */
export function buildLut(c: ChannelLevels, mode: StretchMode, scale: number, table: Float32Array, out = new Uint8Array(65536)): Uint8Array {
  for (let h = 0; h < 65536; h++) out[h] = Math.round(255 * displayValue(table[h]! * scale, c, mode));
  return out;
}
