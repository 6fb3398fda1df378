// TypeScript reference for shaders/calibrate/calibrate.wgsl: per-pixel calibration of a light
// frame (or band) with optional master bias, dark and normalised flat.
// Contract: out = ((light − bias) − darkScale·dark) / flat + pedestal. The reference computes
// in f64 and rounds once on store (Math.fround per step cost 1.7x here); the kernel computes in
// f32, so the two differ by a few f32 roundings (the tests bound it).
// - Masters are optional: no bias → 0, no dark → 0, no flat → 1. Given masters have the
//   light's length (the same band rows).
// - `flat` is already divided by its median (per CFA channel for OSC flats) by the caller;
//   a flat pixel ≤ flatFloor (or NaN) is dead and gives NaN.
// - NaN in the light, bias or dark propagates to NaN (plain arithmetic).
// - darkScale is 1 normally, the exposure ratio when the dark is scaled; pedestal (default 0)
//   is added last to keep calibrated values positive.
// calibrate and calibrateParallel run the same range function and are bit-identical.

import { sharedFloat32, sharedPool, toShared, type PoolKernel } from './worker-pool.js';

/**
 * Default dead-flat threshold: flats normalised to median 1 rarely fall below ~0.2 even in
 * vignetted corners or dust shadows, while dividing by < 5% response would amplify noise
 * (and hot/cold flat defects) more than 20x.
 */
export const DEFAULT_FLAT_FLOOR = 0.05;

export interface CalibrationMasters {
  bias?: Float32Array;
  dark?: Float32Array;
  /** Flat divided by its median. */
  flat?: Float32Array;
}

export interface CalibrateParams {
  /** Factor on the dark (exposure ratio when dark scaling applies). Default 1. */
  darkScale?: number;
  /** Flat values ≤ this are dead (output NaN). Default DEFAULT_FLAT_FLOOR. */
  flatFloor?: number;
  /** Added after calibration. Default 0. */
  pedestal?: number;
}

export interface ResolvedCalibrate {
  count: number;
  darkScale: number;
  flatFloor: number;
  pedestal: number;
}

export function resolveCalibrate(count: number, masters: CalibrationMasters, params: CalibrateParams): ResolvedCalibrate {
  for (const [name, m] of Object.entries(masters)) {
    if (m && m.length !== count) throw new Error(`calibrate: ${name} has ${m.length} pixels, the light ${count}`);
  }
  const r = { count, darkScale: params.darkScale ?? 1, flatFloor: params.flatFloor ?? DEFAULT_FLAT_FLOOR, pedestal: params.pedestal ?? 0 };
  for (const [k, v] of Object.entries(r)) if (!Number.isFinite(v)) throw new Error(`calibrate: ${k} = ${v} must be finite`);
  return r;
}

/** Arguments of the range kernel (typed arrays may be shared; see worker-pool.ts). */
export interface CalibrateRangeArgs extends ResolvedCalibrate, CalibrationMasters {
  light: Float32Array;
  out: Float32Array;
}

/** Calibrates pixels [start, end). Exported for the worker pool. */
export function calibrateRange(args: CalibrateRangeArgs, start: number, end: number): void {
  const { light, bias, dark, flat, out } = args;
  // The kernel gets the parameters as f32: a flat equal to the f32 floor must be dead on both.
  const darkScale = Math.fround(args.darkScale);
  const flatFloor = Math.fround(args.flatFloor);
  const pedestal = Math.fround(args.pedestal);
  if (bias && dark && flat) {
    fullRange(light, bias, dark, flat, out, darkScale, flatFloor, pedestal, start, end);
    return;
  }
  for (let i = start; i < end; i++) {
    let v = light[i]!;
    if (bias) v -= bias[i]!;
    if (dark) v -= darkScale * dark[i]!;
    if (flat) {
      const q = flat[i]!;
      v = q > flatFloor ? v / q : NaN;
    }
    out[i] = v + pedestal;
  }
}

/**
 * calibrateRange with all three masters (every light of a fully calibrated session): the same
 * operations in the same order without the per-pixel tests for absent masters, which cost ~15 %
 * of the loop (single-thread, 2048×1536: 17.5 → 14.9 ms).
 */
function fullRange(light: Float32Array, bias: Float32Array, dark: Float32Array, flat: Float32Array, out: Float32Array, darkScale: number, flatFloor: number, pedestal: number, start: number, end: number): void {
  for (let i = start; i < end; i++) {
    let v = light[i]!;
    v -= bias[i]!;
    v -= darkScale * dark[i]!;
    const q = flat[i]!;
    v = q > flatFloor ? v / q : NaN;
    out[i] = v + pedestal;
  }
}

/** Single-threaded reference. `out` may alias `light` (in-place calibration). */
export function calibrate(light: Float32Array, masters: CalibrationMasters = {}, params: CalibrateParams = {}, out?: Float32Array): Float32Array {
  const p = resolveCalibrate(light.length, masters, params);
  const o = out ?? new Float32Array(light.length);
  calibrateRange({ ...p, ...masters, light, out: o }, 0, light.length);
  return o;
}

const RANGE_KERNEL: PoolKernel = { module: import.meta.url, name: 'calibrateRange' };

/**
 * calibrate on the worker pool (default 2 workers). Non-shared inputs are copied to shared
 * memory once; the result (or `out`, which must be shared) is SharedArrayBuffer-backed.
 */
export async function calibrateParallel(light: Float32Array, masters: CalibrationMasters = {}, params: CalibrateParams = {}, options: { workers?: number } = {}, out?: Float32Array): Promise<Float32Array> {
  const p = resolveCalibrate(light.length, masters, params);
  const o = out ?? sharedFloat32(light.length);
  const shared: CalibrationMasters = {};
  if (masters.bias) shared.bias = toShared(masters.bias);
  if (masters.dark) shared.dark = toShared(masters.dark);
  if (masters.flat) shared.flat = toShared(masters.flat);
  // 64 KiB chunks at least: below that the message round trip costs more than the work.
  await sharedPool(options.workers ?? 2).run(RANGE_KERNEL, { ...p, ...shared, light: toShared(light), out: o }, 0, light.length, { minChunk: 16384, align: 16 });
  return o;
}
