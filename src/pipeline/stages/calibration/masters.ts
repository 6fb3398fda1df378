// Calibration masters for CALIBRATION: where each stage's frames come from, and how a master
// is formed, loaded, offset-corrected, normalised and written.
//
// Sources (per stage bias / dark / flat / darkflat): `calibration.<x>_use_master` (or a master
// path with no folder) → that single FITS file; else the folder (`bias_dir`, `darks_dir`,
// `flats_dir`, `darkflats_dir`) with files chosen by `calibration.pattern`; `use_<x> = false`
// switches a configured stage off. A configured folder that is missing or holds no readable
// matching frame, a master file that cannot be read, and any frame or master whose size differs
// from the lights are CalibrationErrors naming the config key and path.
//
// Combining (docs/ARCHITECTURE.md "Raw Stack decisions"): a sigma-clipped mean (kappa `calibration.master_rejection_sigma`,
// at most 5 iterations, never below half the samples) per pixel over all frames of the set,
// with the stack kernel (WGSL when the device policy allows, else TypeScript). The frames are
// streamed in bands of rows (planBands under the memory budget): each band reads the same rows
// of every file, so a master of 50 × 24 MP frames never holds more than one band of each.
// Flats are offset-corrected per pixel (dark flat master, else bias master) before combining and
// scaled to a common level (their median over a few row strips), so sky or panel flats of
// different brightness combine and clip correctly.
// Invariants: masters are full-frame Float32Arrays in shared memory (the worker pool and the
// device upload read them without copies); the lights' size is the only size accepted.

import { join } from 'node:path';
import { medianInPlace } from '../../../algorithms/robust-stats.js';
import type { RawStackConfig } from '../../../config/rawstack.js';
import { stack, type StackParams } from '../../../cpu/stack.js';
import { imageMedians, imageMediansPooled } from '../../../cpu/stats.js';
import { isShared, sharedFloat32, sharedPool } from '../../../cpu/worker-pool.js';
import { FitsHeader, FitsReader, isFitsError, readFitsImage, writeFits } from '../../../fits/index.js';
import { planBands } from '../../../gpu/band-planner.js';
import type { GpuContext } from '../../../gpu/context.js';
import { GpuError } from '../../../gpu/errors.js';
import { maxStackFrames } from '../../../gpu/kernels/stack.js';
import { stackContextFor } from '../../device-policy.js';
import { DeviceBandStack, hasNaN, levelStrips, readBandInto, stripLevel } from './bands.js';
import { ReaderCache } from '../stacking/readers.js';
import { folderPatternHint } from '../scan/fits-names.js';
import { scanFolder, ScanError, type FrameInfo } from '../scan/scan.js';
import { forEachLimit } from '../../concurrency.js';

export type CalibrationStage = 'bias' | 'dark' | 'flat' | 'darkflat';
export const CALIBRATION_STAGES: readonly CalibrationStage[] = ['bias', 'dark', 'flat', 'darkflat'];

/** A failure the user must fix in the configuration or the calibration files. */
export class CalibrationError extends Error {
  override readonly name = 'CalibrationError';
}

export interface StageSource {
  stage: CalibrationStage;
  /** folder / master: used; disabled: configured but use_<x> = false; none: nothing configured. */
  kind: 'folder' | 'master' | 'none' | 'disabled';
  /** The config key naming the source, for messages (e.g. "darks_dir", "calibration.flat_master"). */
  key: string | null;
  path: string | null;
}

const KEYS = {
  bias: { dir: 'bias_dir', use: 'use_bias', useMaster: 'bias_use_master', master: 'bias_master' },
  dark: { dir: 'darks_dir', use: 'use_dark', useMaster: 'dark_use_master', master: 'dark_master' },
  flat: { dir: 'flats_dir', use: 'use_flat', useMaster: 'flat_use_master', master: 'flat_master' },
  darkflat: { dir: 'darkflats_dir', use: 'use_darkflat', useMaster: 'darkflat_use_master', master: 'darkflat_master' },
} as const;

/** The configuration keys that name calibration sources (Raw Stack's names; another pipeline maps its own onto them). */
export type CalibrationSourceConfig = Pick<RawStackConfig, 'bias_dir' | 'darks_dir' | 'flats_dir' | 'darkflats_dir' | 'calibration'>;

/** Where each stage's data comes from; throws CalibrationError for a master flag without a path. */
export function resolveStageSources(config: CalibrationSourceConfig): Record<CalibrationStage, StageSource> {
  const cal = config.calibration;
  const out = {} as Record<CalibrationStage, StageSource>;
  for (const stage of CALIBRATION_STAGES) {
    const k = KEYS[stage];
    const dir = config[k.dir].trim();
    const master = cal[k.master].trim();
    const useMaster = cal[k.useMaster];
    if (dir === '' && master === '' && !useMaster) {
      out[stage] = { stage, kind: 'none', key: null, path: null };
      continue;
    }
    const viaMaster = useMaster || dir === '';
    const key = viaMaster ? `calibration.${k.master}` : k.dir;
    const path = viaMaster ? master : dir;
    if (!cal[k.use]) {
      out[stage] = { stage, kind: 'disabled', key, path: path || null };
      continue;
    }
    if (viaMaster && master === '') throw new CalibrationError(`calibration.${k.useMaster} is true but calibration.${k.master} is empty: give the master ${stage} file`);
    out[stage] = { stage, kind: viaMaster ? 'master' : 'folder', key, path };
  }
  return out;
}

/** The readable frames of a calibration folder, checked against the lights' size. */
export async function listCalibrationFrames(
  source: StageSource,
  pattern: string,
  size: { width: number; height: number },
  options: { concurrency: number; signal: AbortSignal; warn: (code: string, message: string) => void },
): Promise<FrameInfo[]> {
  const dir = source.path!;
  let scanned;
  try {
    scanned = await scanFolder(dir, { pattern, maxFrames: 0, checksums: false, concurrency: options.concurrency, signal: options.signal });
  } catch (e) {
    if (e instanceof ScanError) {
      const why = e.code === 'PATH_NOT_FOUND' ? 'folder does not exist' : e.code === 'NOT_A_DIRECTORY' ? 'is not a folder' : e.message;
      throw new CalibrationError(`${source.key} "${dir}": ${why}`);
    }
    throw e;
  }
  const good: FrameInfo[] = [];
  for (const f of scanned) {
    if (!f.ok) {
      options.warn('calibration_frame_unreadable', `${source.stage} frame ${f.file} is left out: ${f.message}`);
      continue;
    }
    good.push(f);
  }
  if (good.length === 0) {
    // FITS files the pattern misses (.fz, .fits.gz, ...): say which, and the pattern that takes them.
    const hint = scanned.length === 0 ? await folderPatternHint(dir, pattern) : null;
    const what =
      scanned.length === 0
        ? `holds no file matching "${pattern}"${hint ? `, but ${hint.found.map((f) => `${f.count} × ${f.extension}`).join(', ')} (calibration.pattern "${hint.suggested_pattern}" takes them)` : ''}`
        : `holds no readable FITS image matching "${pattern}" (${scanned.length} unreadable)`;
    throw new CalibrationError(`${source.key} "${dir}" ${what}`);
  }
  for (const f of good) {
    if (f.width !== size.width || f.height !== size.height || f.planes !== 1) {
      throw new CalibrationError(`${source.stage} frame ${f.file} is ${f.width}x${f.height}x${f.planes}, the lights are ${size.width}x${size.height}x1`);
    }
  }
  return good;
}

export interface CombineOptions {
  width: number;
  height: number;
  /** Clipping kappa (low and high). */
  kappa: number;
  /** Host bytes one band of all frames (plus its outputs) may use. */
  budgetBytes: number;
  /** Device for the stack kernel, or null for TypeScript. */
  gpu: GpuContext | null;
  /** Concurrent file reads. */
  workers: number;
  /**
   * Device path: size the band buffer for this many frames (at least the set's) when that costs
   * no extra band, so the masters of one phase (8 bias, 6 darks, 8 flats) reuse one pooled
   * allocation instead of creating (and holding) one per frame count. Default: the set's count.
   */
  deviceSlots?: number;
  /** Host buffers reused from the previous combination (one per phase); default: fresh ones. */
  scratch?: CombineScratch;
  /** Per-pixel offset subtracted from every frame before combining (flats). */
  subtract?: Float32Array | null;
  /** Scale every frame to the set's median level before combining (flats). */
  normalizeLevels?: boolean;
  checkCancelled: () => void;
  /** Called after each band with the files read so far (files × bands in all). */
  onProgress?: (reads: number, total: number) => void;
}

export interface CombineResult {
  /** The master, full frame, shared memory. */
  data: Float32Array;
  frames: number;
  /** Rejected samples / all valid samples. */
  rejectedFraction: number;
  rowsPerBand: number;
  bands: number;
  /** Per-frame level before scaling (normalizeLevels only). */
  levels: number[] | null;
  device: 'gpu' | 'cpu';
}

/**
 * Host buffers of combineFrames that the next master reuses (raw file bytes and decoded bands
 * per reader, or the TypeScript path's band of all frames): the masters of a phase allocate
 * (and page in) them once instead of once each. Drop it when the masters are done.
 */
export class CombineScratch {
  readonly raws: { bytes: Uint8Array }[] = [];
  private readonly bands: Float32Array[] = [];

  /** Float buffer `slot` of at least `length` samples (its first `length` are returned). */
  floats(slot: number, length: number): Float32Array {
    let a = this.bands[slot];
    if (!a || a.length < length) this.bands[slot] = a = new Float32Array(length);
    return a.subarray(0, length);
  }
}

/** Sigma-clipping iterations and survivor floor of masters (kappa is 3 by default). */
export const MASTER_MAX_ITERS = 5;
export const MASTER_MIN_FRACTION = 0.5;

/** Robust level of a frame (minus `subtract`) from the level strips (levelStrips) read from the file. */
async function frameLevel(file: string, width: number, height: number, subtract: Float32Array | null | undefined): Promise<number> {
  const strips = levelStrips(height);
  const values = new Float32Array(strips.length * 2 * width);
  let k = 0;
  const reader = await FitsReader.open(file);
  try {
    for (const { y0, rows } of strips) {
      const band = (await reader.readRows(y0, rows, { planes: [0] })).data;
      for (let i = 0; i < band.length; i++) {
        const v = band[i]! - (subtract ? subtract[y0 * width + i]! : 0);
        if (Number.isFinite(v)) values[k++] = v;
      }
    }
  } finally {
    await reader.close();
  }
  return medianInPlace(values.subarray(0, k));
}

function combinePlan(o: CombineOptions, frames: number, maxBindingBytes: number) {
  return planBands({
    width: o.width,
    height: o.height,
    frames,
    bytesPerPixel: 4,
    // mean + count outputs, plus one band of one file being decoded.
    outputBytesPerPixel: 12,
    haloRows: 0,
    budgetBytes: o.budgetBytes,
    maxBindingBytes,
    minRows: Math.min(o.height, 16),
    rowAlign: 2,
  });
}

/**
 * Sigma-clipped mean of `files` (all of the lights' size), streamed in bands of rows. Each file's
 * band is decoded once into its final place (offset subtracted in the same pass): on the device
 * path into a per-reader scratch that is written into the frame's slot of the device band, on
 * the TypeScript path straight into the host band. With one band, flat levels come from the
 * decoded frames instead of a second read of every file.
 */
export async function combineFrames(files: readonly string[], o: CombineOptions): Promise<CombineResult> {
  const n = files.length;
  const { width, height } = o;
  if (n === 0) throw new CalibrationError('no frames to combine');
  let gpu = o.gpu && stackContextFor(o.gpu, n) ? o.gpu : null;
  // The device band is one storage binding: the plan keeps it under the adapter's limit. A set
  // too large for even a minimal band there stacks in TypeScript.
  let plan: ReturnType<typeof planBands> | null = null;
  let slots = n;
  if (gpu) {
    const binding = gpu.limits.maxStorageBufferBindingSize;
    try {
      plan = combinePlan(o, n, binding);
      // More slots than frames only when the plan stays the same (no extra band, same rows).
      const wanted = Math.min(o.deviceSlots ?? n, maxStackFrames(gpu.limits));
      if (wanted > n) {
        const wide = combinePlan(o, wanted, binding);
        if (wide.bands.length === plan.bands.length && wide.rowsPerBand === plan.rowsPerBand) slots = wanted;
      }
    } catch (e) {
      if (!(e instanceof GpuError && (e.code === 'BINDING_TOO_LARGE' || e.code === 'BUDGET_TOO_SMALL'))) throw e;
      // The wide plan failing keeps the plan; the set's own failing moves to TypeScript (binding)
      // or fails below exactly as the TypeScript plan does (budget).
      if (plan === null) gpu = null;
    }
  }
  plan ??= combinePlan(o, n, Number.MAX_SAFE_INTEGER);
  const single = plan.bands.length === 1;
  let levels: number[] | null = null;
  const normalize = o.normalizeLevels === true && n > 1;
  if (normalize) {
    levels = new Array<number>(n).fill(NaN);
    // Several bands: the levels must be known before the first band is stacked, so every file's
    // strips are read first. One band: they come from the decoded frames (below).
    if (!single) {
      await forEachLimit(files, o.workers, async (file, i) => {
        o.checkCancelled();
        levels![i] = await frameLevel(file, width, height, o.subtract);
      });
    }
  }
  const subtractHasNaN = o.subtract ? hasNaN(o.subtract) : false;
  const master = sharedFloat32(width * height);
  // Readers stay open across bands (an LRU of them): a header is parsed once per file, and a
  // gzip-compressed file's inflate stream moves on from band to band instead of restarting.
  const readers = new ReaderCache();
  const lanes = Math.max(1, Math.min(Math.floor(o.workers) || 1, n));
  const held = o.scratch ?? new CombineScratch();
  const raws = Array.from({ length: lanes }, (_, i) => (held.raws[i] ??= { bytes: new Uint8Array(0) }));
  const device = gpu ? new DeviceBandStack(gpu, slots, plan.rowsPerBand * width, n) : null;
  const scratch = device ? Array.from({ length: lanes }, (_, i) => held.floats(i, plan.rowsPerBand * width)) : [];
  const buf = device ? null : held.floats(lanes, n * plan.rowsPerBand * width);
  let scale: number[] | undefined;
  let rejected = 0;
  let nan = 0;
  let reads = 0;
  const total = n * plan.bands.length;
  try {
    for (const band of plan.bands) {
      o.checkCancelled();
      const pixels = band.rows * width;
      const free = Array.from({ length: lanes }, (_, i) => i);
      await forEachLimit(files, lanes, async (file, f) => {
        o.checkCancelled();
        const lane = free.pop()!;
        try {
          const out = device ? scratch[lane]! : buf!;
          const at = device ? 0 : f * pixels;
          nan += await readers.use(file, (reader) => readBandInto(reader, band.y0, band.rows, out, at, o.subtract, raws[lane]!, subtractHasNaN));
          if (normalize && single) levels![f] = stripLevel(out, at, width, height);
          device?.upload(f, out, pixels);
        } finally {
          free.push(lane);
        }
      });
      if (levels && !scale) {
        levels.forEach((l, i) => {
          if (!(l > 0)) throw new CalibrationError(`flat ${files[i]} has no signal above its offset (level ${l.toFixed(1)} ADU)`);
        });
        const ref = [...levels].sort((a, b) => a - b)[n >> 1]!;
        scale = levels.map((l) => ref / l);
      }
      const params: StackParams = {
        width,
        rows: band.rows,
        frames: n,
        method: n >= 3 ? 'sigma' : 'none',
        low: o.kappa,
        high: o.kappa,
        maxIters: MASTER_MAX_ITERS,
        minFraction: MASTER_MIN_FRACTION,
        ...(scale ? { scale } : {}),
      };
      if (device) {
        await device.stack(params, master, band.y0 * width);
      } else {
        const result = stack(buf!.subarray(0, n * pixels), params);
        master.set(result.mean, band.y0 * width);
        for (let f = 0; f < n; f++) rejected += result.rejectedLow[f]! + result.rejectedHigh[f]!;
      }
      reads += n;
      o.onProgress?.(reads, total);
    }
    if (device) for (const t of await device.tallies()) rejected += t;
  } finally {
    device?.release();
    await readers.closeAll();
  }
  // Every non-NaN sample is either a survivor or rejected (the stack kernels' contract).
  const valid = n * width * height - nan;
  return { data: master, frames: n, rejectedFraction: valid > 0 ? rejected / valid : 0, rowsPerBand: plan.rowsPerBand, bands: plan.bands.length, levels, device: gpu ? 'gpu' : 'cpu' };
}

/** A master FITS file given by the user, checked against the lights' size. */
export async function loadMasterFile(source: StageSource, size: { width: number; height: number }): Promise<{ data: Float32Array; header: FitsHeader }> {
  let image;
  try {
    image = await readFitsImage(source.path!);
  } catch (e) {
    if (isFitsError(e)) throw new CalibrationError(`${source.key} "${source.path}": ${e.message}`);
    throw e;
  }
  if (image.width !== size.width || image.height !== size.height || image.planes !== 1) {
    throw new CalibrationError(`${source.key} "${source.path}" is ${image.width}x${image.height}x${image.planes}, the lights are ${size.width}x${size.height}x1`);
  }
  const data = sharedFloat32(image.data.length);
  data.set(image.data);
  return { data, header: image.header };
}

/** Whether a master file says it is already offset (bias) corrected: our BIASCORR = T, or CALSTAT containing B (MaxIm DL). */
export function headerSaysBiasCorrected(header: FitsHeader): boolean {
  if (header.getBoolean('BIASCORR') === true || header.getBoolean('DARKFCOR') === true) return true;
  return /B/i.test(header.getString('CALSTAT') ?? '');
}

export function subtractInPlace(a: Float32Array, b: Float32Array): void {
  for (let i = 0; i < a.length; i++) a[i]! -= b[i]!;
}

/**
 * Divides a flat by its median: per Bayer phase (the 4 CFA sites separately, so the flat keeps
 * no colour of its own and lights keep their colour balance) for OSC, one median for mono.
 * `medians`: precomputed (flatMedians, on the worker pool), else counted here. Returns the medians
 * (phase order (y & 1) * 2 + (x & 1) for OSC).
 */
export function normalizeFlat(flat: Float32Array, width: number, height: number, cfa: boolean, key: string, medians = imageMedians(flat, { width, height, mode: cfa ? 'bayer' : 'whole' })): number[] {
  medians.forEach((m, p) => {
    if (!(m > 0) || !Number.isFinite(m)) throw new CalibrationError(`${key}: the flat's median${cfa ? ` at Bayer site ${p}` : ''} is ${m}, not a positive level (offset not removed, or not a flat)`);
  });
  if (!cfa) {
    const inv = 1 / medians[0]!;
    for (let i = 0; i < flat.length; i++) flat[i]! *= inv;
    return medians;
  }
  const inv = medians.map((m) => 1 / m);
  for (let y = 0; y < height; y++) {
    const row = y * width;
    const e = inv[(y & 1) << 1]!;
    const o = inv[((y & 1) << 1) | 1]!;
    for (let x = 0; x < width; x += 2) flat[row + x]! *= e;
    for (let x = 1; x < width; x += 2) flat[row + x]! *= o;
  }
  return medians;
}

/** The medians normalizeFlat divides by, counted on the worker pool (identical values). */
export function flatMedians(flat: Float32Array, width: number, height: number, cfa: boolean, workers: number): Promise<number[]> {
  const params = { width, height, mode: cfa ? ('bayer' as const) : ('whole' as const) };
  return isShared(flat) ? imageMediansPooled(sharedPool(workers), flat, params) : Promise.resolve(imageMedians(flat, params));
}

export interface MasterHeaderInfo {
  imageType: string;
  frames: number;
  exptime: number | null;
  temperature: number | null;
  kappa: number;
  source: string;
  cards?: [string, boolean | number | string][];
  history?: string[];
}

/** Header of a written master: the first frame's cards (instrument, CFA keys) plus provenance. */
export function masterHeader(first: FitsHeader | null, info: MasterHeaderInfo): FitsHeader {
  const h = first ? first.clone() : new FitsHeader();
  for (const k of ['DATE-OBS', 'DATE-BEG', 'DATE-END', 'OBJECT', 'RA', 'DEC']) h.delete(k);
  h.set('IMAGETYP', info.imageType);
  h.set('NCOMBINE', info.frames, { comment: 'frames combined' });
  if (info.exptime !== null) h.set('EXPTIME', info.exptime, { real: true, comment: '[s] median exposure of the frames' });
  if (info.temperature !== null) h.set('CCD-TEMP', Number(info.temperature.toFixed(2)), { real: true, comment: '[C] mean sensor temperature' });
  for (const [k, v] of info.cards ?? []) h.set(k, v);
  h.addHistory(`skystack CALIBRATION: sigma-clipped mean (kappa ${info.kappa}) of ${info.frames} frame(s) from ${info.source}`);
  for (const line of info.history ?? []) h.addHistory(line);
  return h;
}

/** Header of the first file of a set (for the master's instrument cards). */
export async function firstHeader(file: string): Promise<FitsHeader | null> {
  try {
    const r = await FitsReader.open(file);
    await r.close();
    return r.header;
  } catch {
    return null;
  }
}

export async function writeMaster(dir: string, name: string, width: number, height: number, data: Float32Array, header: FitsHeader): Promise<string> {
  const file = join(dir, name);
  await writeFits(file, { width, height, data }, { header });
  return file;
}
