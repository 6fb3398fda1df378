// HyperMetric Stretch decisions (the predecessor's, a port of VeraLux HMS): everything that is
// solved on statistics rather than applied per pixel. The per-pixel curves live in
// src/cpu/stretch.ts (TS reference) and src/gpu/kernels/stretch.ts (WGSL); the statistics here
// run on a strided sample of the image (≤ SAMPLE_MAX pixels) pushed through the same TS curve,
// so the solved numbers describe exactly what the kernel then produces.
//
//   input scale    max finite value in (1.1, 1e5) → ÷65535; ≥ 1e5 → ÷(2³²−1); then clamp [0, 1]
//   profile        sensor_profile matched lower-case with non-alphanumerics removed against the
//                  display names and short keys; `auto` → fallback_profile; not found →
//                  fallback_profile; that not found either → rec709 (source "fallback")
//   anchor         adaptive: 65 536-bin histogram of the unanchored luminance, moving average 50,
//                  peak searched from bin 100 (from 0 when the first 100 smoothed bins are all
//                  non-zero), anchor = last bin before the peak below 6 % of it (÷65 536),
//                  fallback the 0.5th percentile; statistical: min_c p0.5(c) − 0.00025 (≥ 0)
//   logD           fixed: clamp(fixed_log_d, 0, 7); auto: bisection on [0, 7] (40 steps, tol 1e-4)
//                  so that f(median anchored luminance) = target, target clamped to [0.05, 0.5]
//   star pressure  sp = clamp(0.7·(clamp(p99.99/p99.9, 1, 5) − 1)/4 + 0.3·clamp(200·frac>p99.9, 0, 1));
//                  sp > 0.6 multiplies the target by (1 − 0.15 sp) each round
//   ready_to_use   ≤ 15 rounds lowering the target by 0.015 (not below 0.05) until the stretched
//                  luminance floor max(min, median − 2.7 std) ≤ 0.001; then output scaling
//                  (floor = the lowest channel's max(min, median − 2.7 std), so no channel's sky
//                  is clipped, where the predecessor used the luminance; pedestal 0.001, ceiling = max over channels of the
//                  highlight_ceiling_percentile percentile, scale = (0.98 − pedestal)/(ceil − floor),
//                  also ≤ (1 − pedestal)/(max − floor) when the brightest pixel is not isolated), an
//                  MTF to luminance median = target_bg (m solved by bisection on the sample so the
//                  median lands on it, starting from m = c(t−1)/(c(2t−1) − t)), soft clip above 0.98
//   scientific     one solve, no output scaling; linear_expansion > 0.001 blends each channel with
//                  its [p0.001, p99.999] luminance-percentile normalisation

import { selectQuantile } from '../bge/model.js';
import { asinhCurve, asinhCurveValue, hmsPixelParams, mtf, REC709, stretchAsinh, type AsinhParams, type HmsPixelSettings } from '../../../cpu/stretch.js';

export const SAMPLE_MAX = 2_000_000;
/** Statistics after the stretch (medians, percentiles) use a smaller sample: 200k is ample. */
export const STATS_SAMPLE_MAX = 200_000;
export const SOFT_CLIP_KNEE = 0.98;
export const SOFT_CLIP_ROLLOFF = 2;

export interface SensorProfile {
  key: string;
  name: string;
  weights: readonly [number, number, number];
  aliases?: string[];
}

/** The predecessor's profiles (display names as it showed them; short keys accepted too). */
export const SENSOR_PROFILE_TABLE: readonly SensorProfile[] = [
  { key: 'rec709', name: 'Rec.709 (Recommended)', weights: REC709 },
  { key: 'imx571', name: 'Sony IMX571 (ASI2600/QHY268)', weights: [0.2944, 0.5021, 0.2035] },
  { key: 'imx455', name: 'Sony IMX455 (ASI6200/QHY600)', weights: [0.2987, 0.5001, 0.2013] },
  { key: 'imx410', name: 'Sony IMX410 (ASI2400)', weights: [0.3015, 0.505, 0.1935] },
  { key: 'imx269', name: 'Sony IMX269 (Altair 26C)', weights: [0.304, 0.501, 0.195] },
  { key: 'imx294', name: 'Sony IMX294 (ASI294)', weights: [0.3068, 0.5008, 0.1925] },
  { key: 'imx533', name: 'Sony IMX533 (ASI533)', weights: [0.291, 0.5072, 0.2018] },
  { key: 'imx676', name: 'Sony IMX676 (ASI676)', weights: [0.288, 0.51, 0.202] },
  { key: 'imx585', name: 'Sony IMX585 (ASI585)', weights: [0.3431, 0.4822, 0.1747] },
  { key: 'imx662', name: 'Sony IMX662 (ASI662)', weights: [0.343, 0.4821, 0.1749] },
  { key: 'imx678', name: 'Sony IMX678 (ASI678)', weights: [0.3426, 0.4825, 0.175] },
  { key: 'imx415', name: 'Sony IMX415 (DWARF II)', weights: [0.2703, 0.5405, 0.1892] },
  { key: 'imx462', name: 'Sony IMX462 (ASI462)', weights: [0.3333, 0.4866, 0.1801] },
  { key: 'imx715', name: 'Sony IMX715 (ASI715)', weights: [0.341, 0.484, 0.175] },
  { key: 'imx482', name: 'Sony IMX482 (ASI482)', weights: [0.315, 0.495, 0.19] },
  { key: 'imx183', name: 'Sony IMX183 (ASI183)', weights: [0.2967, 0.4983, 0.205] },
  { key: 'imx178', name: 'Sony IMX178 (ASI178)', weights: [0.2346, 0.5206, 0.2448] },
  { key: 'imx224', name: 'Sony IMX224 (ASI224)', weights: [0.3402, 0.4765, 0.1833] },
  { key: 'canon_modern', name: 'Canon (modern)', weights: [0.26, 0.52, 0.22] },
  { key: 'canon_legacy', name: 'Canon (legacy)', weights: [0.245, 0.535, 0.22] },
  { key: 'nikon_modern', name: 'Nikon (modern)', weights: [0.265, 0.51, 0.225] },
  { key: 'nikon_legacy', name: 'Nikon (legacy)', weights: [0.25, 0.53, 0.22] },
  { key: 'fujifilm_xtrans5', name: 'Fujifilm X-Trans 5 HR', weights: [0.28, 0.51, 0.21] },
  { key: 'mn34230', name: 'Panasonic MN34230', weights: [0.265, 0.525, 0.21] },
  { key: 'seestar_s50', name: 'ZWO Seestar S50', weights: [0.3333, 0.4866, 0.1801] },
  { key: 'seestar_s30', name: 'ZWO Seestar S30', weights: [0.2928, 0.5053, 0.2019] },
  { key: 'hoo', name: 'Narrowband HOO', weights: [0.5, 0.25, 0.25] },
  { key: 'sho', name: 'Narrowband SHO', weights: [0.3333, 0.34, 0.3267] },
];

const norm = (s: string) => s.toLowerCase().replace(/[^a-z0-9]/g, '');

export function findProfile(name: string): SensorProfile | undefined {
  const k = norm(name);
  if (k === '') return undefined;
  return SENSOR_PROFILE_TABLE.find((p) => norm(p.name) === k || norm(p.key) === k || (p.aliases ?? []).some((a) => norm(a) === k));
}

export type ProfileSource = 'sensor_profile' | 'auto_fallback_profile' | 'fallback_profile' | 'fallback';

export function resolveProfile(sensor: string, fallback: string): { profile: SensorProfile; source: ProfileSource; requested: string } {
  const rec = SENSOR_PROFILE_TABLE[0]!;
  if (norm(sensor) === 'auto') {
    const f = findProfile(fallback);
    return f ? { profile: f, source: 'auto_fallback_profile', requested: sensor } : { profile: rec, source: 'fallback', requested: sensor };
  }
  const p = findProfile(sensor);
  if (p) return { profile: p, source: 'sensor_profile', requested: sensor };
  const f = findProfile(fallback);
  return f ? { profile: f, source: 'fallback_profile', requested: sensor } : { profile: rec, source: 'fallback', requested: sensor };
}

/** Divisor that brings the stack to [0, 1] (predecessor's input scaling rule). */
export function inputDivisor(maxValue: number): number {
  if (!(maxValue > 1.1)) return 1;
  return maxValue < 1e5 ? 65535 : 2 ** 32 - 1;
}

export function sortedQuantile(v: Float64Array | Float32Array, q: number): number {
  const n = v.length;
  if (n === 0) return NaN;
  const pos = Math.min(n - 1, Math.max(0, q * (n - 1)));
  const i = Math.floor(pos);
  return i + 1 < n ? v[i]! + (v[i + 1]! - v[i]!) * (pos - i) : v[i]!;
}

function meanStd(v: ArrayLike<number>): { mean: number; std: number } {
  let s = 0;
  for (let i = 0; i < v.length; i++) s += v[i]!;
  const mean = s / Math.max(1, v.length);
  let q = 0;
  for (let i = 0; i < v.length; i++) q += (v[i]! - mean) ** 2;
  return { mean, std: Math.sqrt(q / Math.max(1, v.length - 1)) };
}

/** Strided sample of the three planes (indices every `stride`). */
export function samplePlanes(planes: Float32Array[], max: number): Float32Array[] {
  const n = planes[0]!.length;
  const stride = Math.max(1, Math.ceil(n / max));
  const m = Math.ceil(n / stride);
  return planes.map((p) => {
    const s = new Float32Array(m);
    for (let i = 0, k = 0; i < n; i += stride) s[k++] = p[i]!;
    return s;
  });
}

export function luminance(planes: Float32Array[], w: readonly [number, number, number], anchor = 0): Float64Array {
  const n = planes[0]!.length;
  const out = new Float64Array(n);
  const [r, g, b] = planes as [Float32Array, Float32Array, Float32Array];
  for (let i = 0; i < n; i++) {
    out[i] = anchor === 0 ? w[0] * r[i]! + w[1] * g[i]! + w[2] * b[i]! : w[0] * Math.max(r[i]! - anchor, 0) + w[1] * Math.max(g[i]! - anchor, 0) + w[2] * Math.max(b[i]! - anchor, 0);
  }
  return out;
}

export interface AnchorResult {
  anchor: number;
  method: 'adaptive_histogram' | 'adaptive_fallback_p0.5' | 'statistical';
  peak?: number;
}

export function adaptiveAnchor(lum: Float64Array): AnchorResult {
  const bins = 65536;
  const hist = new Float64Array(bins);
  for (let i = 0; i < lum.length; i++) {
    const v = lum[i]!;
    const k = Math.min(bins - 1, Math.max(0, Math.floor(v * bins)));
    hist[k] = hist[k]! + 1;
  }
  // Moving average of width 50 (centred; running sum).
  const smooth = new Float64Array(bins);
  const half = 25;
  let run = 0;
  for (let i = 0; i < Math.min(bins, half); i++) run += hist[i]!;
  for (let i = 0; i < bins; i++) {
    if (i + half < bins) run += hist[i + half]!;
    if (i - half - 1 >= 0) run -= hist[i - half - 1]!;
    smooth[i] = run / 50;
  }
  let start = 100;
  let allNonZero = true;
  for (let i = 0; i < 100; i++) if (!(smooth[i]! > 0)) allNonZero = false;
  if (allNonZero) start = 0;
  let peak = start;
  for (let i = start; i < bins; i++) if (smooth[i]! > smooth[peak]!) peak = i;
  const limit = 0.06 * smooth[peak]!;
  for (let i = peak - 1; i >= 0; i--) {
    if (smooth[i]! < limit) return { anchor: i / bins, method: 'adaptive_histogram', peak: peak / bins };
  }
  const sorted = Float64Array.from(lum).sort();
  return { anchor: Math.max(0, sortedQuantile(sorted, 0.005)), method: 'adaptive_fallback_p0.5', peak: peak / bins };
}

export function statisticalAnchor(planes: Float32Array[]): AnchorResult {
  const lows = planes.map((p) => sortedQuantile(Float32Array.from(p).sort(), 0.005));
  return { anchor: Math.max(0, Math.min(...lows) - 0.00025), method: 'statistical' };
}

/** f(v) of the HMS curve for a logD (white at anchored luminance 1, as hmsPixelParams sets). */
export function curveAt(logD: number, protectB: number, v: number): number {
  return asinhCurveValue(asinhCurve({ anchor: 0, weights: REC709, logD, protectB, white: 1, convergencePower: 1, colorGrip: 1 }), v);
}

/** logD in [0, 7] with f(median) = target (bisection, 40 steps, tolerance 1e-4). */
export function solveLogD(median: number, target: number, protectB: number): { logD: number; reached: boolean } {
  let lo = 0;
  let hi = 7;
  if (curveAt(hi, protectB, median) < target) return { logD: hi, reached: false };
  if (curveAt(lo, protectB, median) > target) return { logD: lo, reached: false };
  for (let i = 0; i < 40; i++) {
    const mid = (lo + hi) / 2;
    const f = curveAt(mid, protectB, median);
    if (Math.abs(f - target) < 1e-4) return { logD: mid, reached: true };
    if (f < target) lo = mid;
    else hi = mid;
  }
  return { logD: (lo + hi) / 2, reached: true };
}

export function starPressure(anchoredLumSorted: Float64Array): number {
  const n = anchoredLumSorted.length;
  if (n < 100) return 0;
  const p999 = sortedQuantile(anchoredLumSorted, 0.999);
  const p9999 = sortedQuantile(anchoredLumSorted, 0.9999);
  const ratio = p999 > 0 ? p9999 / p999 : 1;
  const pTerm = (Math.min(5, Math.max(1, ratio)) - 1) / 4;
  let above = 0;
  for (let i = 0; i < n; i++) if (anchoredLumSorted[i]! > p999) above++;
  const fTerm = Math.min(1, Math.max(0, (200 * above) / n));
  return Math.min(1, Math.max(0, 0.7 * pTerm + 0.3 * fTerm));
}

/** max(min, median − 2.7 std) of values (the predecessor's "floor"). */
export function floorOf(values: Float64Array): number {
  const sorted = Float64Array.from(values).sort();
  const { std } = meanStd(sorted);
  return Math.max(sorted[0] ?? 0, sortedQuantile(sorted, 0.5) - 2.7 * std);
}

export interface LogDSolution {
  logD: number;
  mode: 'auto' | 'fixed';
  target_requested: number;
  target_used: number;
  rounds: number;
  star_pressure: number;
  reached: boolean;
  stretched_floor: number | null;
}

/** The log-D decision (fixed or auto with the ready_to_use target rounds). */
export function decideLogD(cfg: { mode: string; log_d_mode: string; fixed_log_d: number; target_bg: number; protect_b: number }, anchoredLum: Float64Array): LogDSolution {
  const requested = cfg.target_bg;
  if (cfg.log_d_mode === 'fixed') {
    return { logD: Math.min(7, Math.max(0, cfg.fixed_log_d)), mode: 'fixed', target_requested: requested, target_used: requested, rounds: 0, star_pressure: 0, reached: true, stretched_floor: null };
  }
  const sorted = Float64Array.from(anchoredLum).sort();
  const med = sortedQuantile(sorted, 0.5);
  const sp = starPressure(sorted);
  let target = Math.min(0.5, Math.max(0.05, requested));
  const rounds = cfg.mode === 'ready_to_use' ? 15 : 1;
  let sol = { logD: 0, reached: false };
  let floor: number | null = null;
  let r = 0;
  let minL = Infinity;
  for (let i = 0; i < anchoredLum.length; i++) if (anchoredLum[i]! < minL) minL = anchoredLum[i]!;
  for (r = 1; r <= rounds; r++) {
    if (sp > 0.6) target = Math.max(0.05, target * (1 - 0.15 * sp));
    sol = solveLogD(med, target, cfg.protect_b);
    if (cfg.mode !== 'ready_to_use') break;
    // Floor of the stretched sample: f is monotone, so its min and median are f(min) and f(median).
    const curve = asinhCurve({ anchor: 0, weights: REC709, logD: sol.logD, protectB: cfg.protect_b, white: 1, convergencePower: 1, colorGrip: 1 });
    const f = (v: number) => Math.min(1, Math.max(0, asinhCurveValue(curve, v)));
    let sum = 0;
    let sum2 = 0;
    for (let i = 0; i < anchoredLum.length; i++) {
      const v = f(anchoredLum[i]!);
      sum += v;
      sum2 += v * v;
    }
    const count = anchoredLum.length;
    const mean = sum / count;
    const std = Math.sqrt(Math.max(0, (sum2 - count * mean * mean) / Math.max(1, count - 1)));
    floor = Math.max(f(minL), f(med) - 2.7 * std);
    if (floor <= 0.001) break;
    if (target - 0.015 < 0.05) break;
    target -= 0.015;
  }
  return { logD: sol.logD, mode: 'auto', target_requested: requested, target_used: target, rounds: Math.min(r, rounds), star_pressure: sp, reached: sol.reached, stretched_floor: floor };
}

export function pixelSettings(cfg: { mode: string; protect_b: number; convergence_power: number; fixed_color_strategy: number; color_grip: number; shadow_convergence: number }, weights: readonly [number, number, number], anchor: number, logD: number): AsinhParams {
  const s: HmsPixelSettings = {
    mode: cfg.mode === 'scientific' ? 'scientific' : 'ready_to_use',
    weights,
    anchor,
    logD,
    protect_b: cfg.protect_b,
    convergence_power: cfg.convergence_power,
    color_strategy: cfg.fixed_color_strategy,
    color_grip: cfg.color_grip,
    shadow_convergence: cfg.shadow_convergence,
  };
  return hmsPixelParams(s);
}

export interface OutputScaling {
  floor: number;
  pedestal: number;
  ceiling: number;
  max: number;
  scale: number;
  brightest_isolated: boolean;
  /** The affine map as MTF clip points: t = (v − c0)/(c1 − c0) = (v − floor)·scale + pedestal. */
  c0: number;
  c1: number;
}

/**
 * ready_to_use output scaling from the stretched sample (planes) and the full stretched planes'
 * maximum position (`brightest` = its value and whether a neighbour reaches 20 % of it).
 */
export function outputScaling(stretched: Float32Array[], _weights: readonly [number, number, number], ceilingPercentile: number, brightest: { value: number; isolated: boolean }): OutputScaling {
  // The predecessor took the floor on the luminance; with a coloured background that lies above
  // the weaker channels' sky and clips them to black, so the lowest channel floor is used.
  const floor = Math.min(...stretched.map((p) => floorOf(Float64Array.from(p))));
  const pedestal = 0.001;
  const q = ceilingPercentile / 100;
  const ceiling = Math.max(...stretched.map((p) => sortedQuantile(Float32Array.from(p).sort(), q)));
  let scale = ceiling > floor ? (0.98 - pedestal) / (ceiling - floor) : 1;
  if (!brightest.isolated && brightest.value > floor) scale = Math.min(scale, (1 - pedestal) / (brightest.value - floor));
  if (!(scale > 0) || !Number.isFinite(scale)) scale = 1;
  const c0 = floor - pedestal / scale;
  return { floor, pedestal, ceiling, max: brightest.value, scale, brightest_isolated: brightest.isolated, c0, c1: c0 + 1 / scale };
}

/** Luminance median of the sample after t = clamp((v − c0)/(c1 − c0)) and MTF(m). */
function medianAfterMtf(sample: Float32Array[], weights: readonly [number, number, number], c0: number, c1: number, m: number): number {
  const n = sample[0]!.length;
  const lum = new Float64Array(n);
  const inv = 1 / (c1 - c0);
  for (let i = 0; i < n; i++) {
    let s = 0;
    for (let c = 0; c < 3; c++) s += weights[c]! * mtf(m, (sample[c]![i]! - c0) * inv);
    lum[i] = s;
  }
  return selectQuantile(lum, n, 0.5);
}

/** Midtones balance m so the luminance median lands on `target` (closed form, then bisection). */
export function solveMtf(sample: Float32Array[], weights: readonly [number, number, number], c0: number, c1: number, target: number): { m: number; median_before: number; median_after: number } {
  const before = medianAfterMtf(sample, weights, c0, c1, 0.5);
  const c = Math.min(0.999, Math.max(1e-6, before));
  const t = Math.min(0.999, Math.max(1e-3, target));
  let m = (c * (t - 1)) / (c * (2 * t - 1) - t);
  if (!(m > 0 && m < 1)) m = 0.5;
  // MTF output rises as m falls: bisection on (0, 1) from the closed-form start's bracket.
  let lo = 1e-6;
  let hi = 1 - 1e-6;
  let after = medianAfterMtf(sample, weights, c0, c1, m);
  for (let i = 0; i < 40 && Math.abs(after - target) > 2e-4; i++) {
    if (after > target) lo = m;
    else hi = m;
    m = (lo + hi) / 2;
    after = medianAfterMtf(sample, weights, c0, c1, m);
  }
  return { m, median_before: before, median_after: after };
}

/** Soft clip above the knee: monotone, fixes 0.98 and 1, compresses the top (rolloff 2). */
export function softClip(v: number): number {
  if (!(v > SOFT_CLIP_KNEE)) return v;
  const span = 1 - SOFT_CLIP_KNEE;
  const x = Math.min(1, (v - SOFT_CLIP_KNEE) / span);
  return SOFT_CLIP_KNEE + (span * (1 - Math.exp(-SOFT_CLIP_ROLLOFF * x))) / (1 - Math.exp(-SOFT_CLIP_ROLLOFF));
}

/** Stretches a sample with the TS reference (the statistics' view of the kernel's output). */
export function stretchSample(sample: Float32Array[], p: AsinhParams): Float32Array[] {
  return stretchAsinh(sample[0]!, sample[1]!, sample[2]!, p);
}
