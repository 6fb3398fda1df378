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
// Combining (DESIGN §8): a sigma-clipped mean (kappa `calibration.master_rejection_sigma`,
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
import { medianInPlace } from '../../algorithms/robust-stats.js';
import type { RawStackConfig } from '../../config/rawstack.js';
import { stack, type StackParams } from '../../cpu/stack.js';
import { imageStats } from '../../cpu/stats.js';
import { sharedFloat32 } from '../../cpu/worker-pool.js';
import { FitsHeader, FitsReader, isFitsError, readFitsImage, writeFits } from '../../fits/index.js';
import { planBands } from '../../gpu/band-planner.js';
import type { GpuContext } from '../../gpu/context.js';
import { maxStackFrames, stackGpu } from '../../gpu/kernels/stack.js';
import { scanFolder, ScanError, type FrameInfo } from '../scan.js';
import { forEachLimit } from '../concurrency.js';

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

/** Where each stage's data comes from; throws CalibrationError for a master flag without a path. */
export function resolveStageSources(config: RawStackConfig): Record<CalibrationStage, StageSource> {
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
    const what = scanned.length === 0 ? `holds no file matching "${pattern}"` : `holds no readable FITS image matching "${pattern}" (${scanned.length} unreadable)`;
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

/** Sigma-clipping iterations and survivor floor of masters (DESIGN §8 fixes kappa = 3 by default). */
export const MASTER_MAX_ITERS = 5;
export const MASTER_MIN_FRACTION = 0.5;

async function readBand(file: string, y0: number, rows: number): Promise<Float32Array> {
  const reader = await FitsReader.open(file);
  try {
    return (await reader.readRows(y0, rows, { planes: [0] })).data;
  } finally {
    await reader.close();
  }
}

/** Robust level of a frame (minus `subtract`) from 8 strips of 2 rows spread over the image. */
async function frameLevel(file: string, width: number, height: number, subtract: Float32Array | null | undefined): Promise<number> {
  const strips = Math.min(8, Math.max(1, height >> 1));
  const values = new Float32Array(strips * 2 * width);
  let k = 0;
  const reader = await FitsReader.open(file);
  try {
    for (let s = 0; s < strips; s++) {
      const y0 = Math.min(height - 2, Math.floor(((s + 0.5) * height) / strips) & ~1);
      const rows = Math.min(2, height - Math.max(0, y0));
      const band = (await reader.readRows(Math.max(0, y0), rows, { planes: [0] })).data;
      for (let i = 0; i < band.length; i++) {
        const v = band[i]! - (subtract ? subtract[Math.max(0, y0) * width + i]! : 0);
        if (Number.isFinite(v)) values[k++] = v;
      }
    }
  } finally {
    await reader.close();
  }
  return medianInPlace(values.subarray(0, k));
}

/** Sigma-clipped mean of `files` (all of the lights' size), streamed in bands of rows. */
export async function combineFrames(files: readonly string[], o: CombineOptions): Promise<CombineResult> {
  const n = files.length;
  const { width, height } = o;
  if (n === 0) throw new CalibrationError('no frames to combine');
  let levels: number[] | null = null;
  let scale: number[] | undefined;
  if (o.normalizeLevels && n > 1) {
    levels = new Array<number>(n).fill(NaN);
    await forEachLimit(files, o.workers, async (file, i) => {
      o.checkCancelled();
      levels![i] = await frameLevel(file, width, height, o.subtract);
    });
    levels.forEach((l, i) => {
      if (!(l > 0)) throw new CalibrationError(`flat ${files[i]} has no signal above its offset (level ${l.toFixed(1)} ADU)`);
    });
    const ref = [...levels].sort((a, b) => a - b)[n >> 1]!;
    scale = levels.map((l) => ref / l);
  }
  const plan = planBands({
    width,
    height,
    frames: n,
    bytesPerPixel: 4,
    // mean + count outputs, plus one band of one file being decoded.
    outputBytesPerPixel: 12,
    haloRows: 0,
    budgetBytes: o.budgetBytes,
    maxBindingBytes: Number.MAX_SAFE_INTEGER,
    minRows: Math.min(height, 16),
    rowAlign: 2,
  });
  const gpu = o.gpu && n <= maxStackFrames(o.gpu.limits) ? o.gpu : null;
  const master = sharedFloat32(width * height);
  const buf = new Float32Array(n * plan.rowsPerBand * width);
  let rejected = 0;
  let valid = 0;
  let reads = 0;
  const total = n * plan.bands.length;
  for (const band of plan.bands) {
    o.checkCancelled();
    const pixels = band.rows * width;
    await forEachLimit(files, o.workers, async (file, f) => {
      o.checkCancelled();
      const rows = await readBand(file, band.y0, band.rows);
      const at = f * pixels;
      buf.set(rows, at);
      if (o.subtract) {
        const off = band.y0 * width;
        for (let i = 0; i < pixels; i++) buf[at + i]! -= o.subtract[off + i]!;
      }
    });
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
    const input = buf.subarray(0, n * pixels);
    const result = gpu ? await stackGpu(gpu, input, params) : stack(input, params);
    master.set(result.mean, band.y0 * width);
    for (let f = 0; f < n; f++) rejected += result.rejectedLow[f]! + result.rejectedHigh[f]!;
    for (let i = 0; i < pixels; i++) valid += result.count[i]!;
    reads += n;
    o.onProgress?.(reads, total);
  }
  valid += rejected;
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
 * Returns the medians (phase order (y & 1) * 2 + (x & 1) for OSC).
 */
export function normalizeFlat(flat: Float32Array, width: number, height: number, cfa: boolean, key: string): number[] {
  const medians = imageStats(flat, { width, height, mode: cfa ? 'bayer' : 'whole' }).map((s) => s.median);
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
