// Per-frame pixel work of the Raw Stack phases, as self-contained tasks that run either on the
// main thread or in a worker thread (stages/frames/workers.ts): each task reads ONE frame from disk,
// works on it and returns a small result (metrics, a trimmed star list, a correlation), so no
// more than one frame per running task is ever in memory.
//   measure  read plane 0 → detectStars (on the raw mosaic with `cfa` for OSC) → frameMetrics;
//            returns the brightest `maxStars` stars as packed (x, y, flux) triplets
//            (stages/frames/analysis.ts measurePlane).
//   analyze  read plane 0 → channel statistics and measure in one read (stages/frames/analysis.ts
//            analyzePlane): CFA_CHANNEL_PREP when CALIBRATION did not already measure the frame.
//   calibrate CALIBRATION's light: calibrate, write, analyze (stages/calibration/light-task.ts).
//   cc       read plane 0 band by band into its proxy (ccProxyOfFile) → registrationCc against the reference proxy (shared
//            memory, built once per run by the caller) under the frame's registration matrix.
//            With `lnBin`, the same bands also feed local normalization's binners (PlaneBinner):
//            the frame's binned planes come back with the correlation, so STACKING's LN setup
//            need not read the frame again (stages/stacking/local-norm.ts).
//   register registerStars(reference stars, frame stars) on packed star lists (no pixels):
//            REGISTRATION's matching, CPU-bound, so it runs on the workers too.
//   tiles    read plane 0 → optional cosmetic pass (stages/stacking/cosmetic.ts) → the
//            tile_metrics sums of the given rectangles (cpu/tile-metrics.ts): the tiled
//            workflow's LOCAL_METRICS. With `lnBin`, the raw plane (before the cosmetic pass,
//            as STACKING's LN setup reads it) also gives the frame's LN binned planes, as `cc`.
// Invariants: a bad frame is a typed result ({ok: false, code, detail}), never an exception;
// exceptions mean bugs. Results are structured-clone friendly (typed arrays, plain objects).

import { isMainThread } from 'node:worker_threads';
import { CcProxyBuilder, registrationCc, type CcProxy, type CcScratch } from '../../../algorithms/registration-cc.js';
import type { Affine } from '../../../algorithms/affine.js';
import { PlaneBinner, type BinnedPlane } from '../../../algorithms/binned-plane.js';
import type { StarPoint } from '../../../algorithms/match.js';
import { registerStars, type RegistrationResult } from '../../../algorithms/registration.js';
import { tileMetrics, type TileMetricsParams } from '../../../cpu/tile-metrics.js';
import { FitsReader, isFitsError, type RowScratch } from '../../../fits/index.js';
import { cosmeticCorrect } from '../stacking/cosmetic.js';
import { calibrateLight, calibrateLightTransferables, type CalibrateLightResult, type CalibrateLightTask } from '../calibration/light-task.js';
import {
  analyzePlane,
  measurePlane,
  premeasuredTransferables,
  STAR_SHAPE_FIELDS,
  type AnalysisSpec,
  type MeasureResult,
  type MeasureSpec,
  type Plane,
  type Premeasured,
} from './analysis.js';

export type { ChannelsTaskResult, MeasureFailure, MeasureOk, MeasureResult, Plane } from './analysis.js';

export interface MeasureTask extends MeasureSpec {
  kind: 'measure';
  file: string;
}

export interface AnalyzeTask {
  kind: 'analyze';
  file: string;
  spec: AnalysisSpec;
}

export type AnalyzeTaskResult =
  | { kind: 'analyze'; ok: true; premeasured: Premeasured }
  | { kind: 'analyze'; ok: false; code: 'unreadable'; detail: string; fitsCode: string; ms: { read: number } };

export interface CcTask {
  kind: 'cc';
  file: string;
  /** Frame pixel → reference pixel. */
  matrix: Affine;
  /** Proxy binning; even for mosaics so every proxy pixel mixes whole Bayer cells. */
  bin: number;
  reference: CcProxy;
  /** Also bin the frame for local normalization (see LnBinSpec). */
  lnBin?: LnBinSpec;
}

/**
 * Local normalization's binning of a frame: block factor, and per channel the CFA sites
 * averaged (null: mono, one plane of every pixel). Same meaning as PlaneBinner's options.
 */
export interface LnBinSpec {
  factor: number;
  sites: number[][] | null;
}

export type CcTaskResult =
  | { kind: 'cc'; ok: true; cc: number; overlap: number; ms: { read: number; cc: number }; lnPlanes?: BinnedPlane[] }
  | { kind: 'cc'; ok: false; code: 'unreadable' | 'cc_failed'; detail: string; fitsCode?: string; ms: { read: number; cc: number } };

export interface RegisterTask {
  kind: 'register';
  /** Packed (x, y, flux) star lists (packStars), full-resolution pixels, brightest first. */
  reference: Float64Array;
  stars: Float64Array;
}

export interface RegisterTaskResult {
  kind: 'register';
  result: RegistrationResult;
  ms: number;
}

export interface TileMetricsTask extends TileMetricsParams {
  kind: 'tiles';
  file: string;
  /** Hot and cold pixels replaced first (k σ, σ the frame's noise), or none. */
  cosmetic: { sigma: number; noise: number } | null;
  /** Also bin the frame for local normalization (see LnBinSpec). */
  lnBin?: LnBinSpec;
}

export type TileMetricsTaskResult =
  | { kind: 'tiles'; ok: true; metrics: Float64Array; ms: { read: number; measure: number }; lnPlanes?: BinnedPlane[] }
  | { kind: 'tiles'; ok: false; code: 'unreadable'; detail: string; fitsCode: string };

export type FrameTask = MeasureTask | CcTask | RegisterTask | AnalyzeTask | CalibrateLightTask | TileMetricsTask;
export type FrameTaskResult = MeasureResult | CcTaskResult | RegisterTaskResult | AnalyzeTaskResult | CalibrateLightResult | TileMetricsTaskResult;

/** (x, y, flux) triplets of a star list, for tasks and results (exact: f64). */
export function packStars(stars: readonly StarPoint[]): Float64Array {
  const out = new Float64Array(3 * stars.length);
  stars.forEach((s, i) => out.set([s.x, s.y, s.flux], 3 * i));
  return out;
}

/** Star lists from packed triplets; with `shapes` (analysis.ts) each star also carries its fwhm, eccentricity and peak. */
export function unpackStars(packed: Float64Array, shapes?: Float64Array): StarPoint[] {
  const out: StarPoint[] = new Array(packed.length / 3);
  for (let i = 0; i < out.length; i++) {
    out[i] = { x: packed[3 * i]!, y: packed[3 * i + 1]!, flux: packed[3 * i + 2]! };
    if (shapes && shapes.length >= STAR_SHAPE_FIELDS * (i + 1)) {
      out[i]!.fwhm = shapes[STAR_SHAPE_FIELDS * i]!;
      out[i]!.eccentricity = shapes[STAR_SHAPE_FIELDS * i + 1]!;
      out[i]!.peak = shapes[STAR_SHAPE_FIELDS * i + 2]!;
    }
  }
  return out;
}

function registerFrame(task: RegisterTask): RegisterTaskResult {
  const t0 = performance.now();
  const result = registerStars(unpackStars(task.reference), unpackStars(task.stars));
  return { kind: 'register', result, ms: performance.now() - t0 };
}

/** Plane 0 of a frame as float32 (lights here are mono or raw CFA: one plane). */
export async function readPlane(file: string): Promise<Plane> {
  const reader = await FitsReader.open(file);
  try {
    const band = await reader.readRows(0, reader.height, { planes: [0] });
    return { data: band.data, width: reader.width, height: reader.height, header: reader.header };
  } finally {
    await reader.close();
  }
}

/** Buffers of ccProxyAndBins reused from frame to frame: the proxy's (CcScratch), the read band and its raw bytes. */
export interface CcTaskScratch extends CcScratch {
  band: Float32Array | null;
  /** The reader's raw-byte buffer (grown by readRowsInto). */
  rows: RowScratch | null;
}

/**
 * A frame worker's correlation buffers, reused by its next `cc` task (tasks run one at a time
 * per worker, and the frame's proxy is dropped once correlated): ~2 proxy planes and a band less
 * per frame (~8 MiB at 2048 px), which otherwise waited as garbage for V8's external-memory limit
 * (measured: 25–65 MiB of dead buffers per QUALITY_ANALYSIS worker). None on the main thread,
 * which keeps nothing between phases.
 */
const workerCcScratch: CcTaskScratch | null = isMainThread ? null : { proxy: null, blur: null, band: null, rows: null };

/** Full-resolution rows read at a time while building a correlation proxy from a file. */
const CC_READ_ROWS = 128;

/**
 * The correlation proxy of a frame's plane 0, read band by band (CC_READ_ROWS rows: ~1 MiB at
 * 2048 px instead of the whole frame in memory; the same proxy as makeCcProxy on the plane).
 * QUALITY_ANALYSIS builds the reference's with this too. Throws FitsError when the file fails.
 */
export async function ccProxyOfFile(file: string, bin: number): Promise<CcProxy> {
  return (await ccProxyAndBins(file, bin)).proxy;
}

/** Local normalization's binners of a width × height plane: one per channel (CFA sites), or one. */
function lnBinners(width: number, height: number, spec: LnBinSpec): PlaneBinner[] {
  return spec.sites ? spec.sites.map((sites) => new PlaneBinner(width, height, spec.factor, { sites })) : [new PlaneBinner(width, height, spec.factor)];
}

/**
 * ccProxyOfFile, and with `lnBin` the frame's LN binned planes from the same bands (rows the
 * proxy leaves out are read too: the binners need every row). Bands come in ascending order, so
 * the planes are bit-identical to binning the whole plane (PlaneBinner sums row by row).
 */
export async function ccProxyAndBins(file: string, bin: number, lnBin?: LnBinSpec, reuse?: CcTaskScratch): Promise<{ proxy: CcProxy; lnPlanes: BinnedPlane[] | null }> {
  const reader = await FitsReader.open(file);
  try {
    const builder = new CcProxyBuilder(reader.width, reader.height, { bin }, reuse);
    const binners = lnBin ? lnBinners(reader.width, reader.height, lnBin) : [];
    const step = Math.max(bin, CC_READ_ROWS - (CC_READ_ROWS % bin));
    const end = binners.length ? reader.height : builder.rowsUsed;
    // One band buffer for the whole frame: a fresh array per band was ~1 MiB of garbage each,
    // which outlived the worker's minor collections (their wrappers get promoted mid-task) and
    // held ~60 MiB per frame worker at QUALITY_ANALYSIS's peak.
    const bandLength = Math.min(step, reader.height) * reader.width;
    if (reuse && (!reuse.band || reuse.band.length < bandLength)) reuse.band = new Float32Array(bandLength);
    const band = reuse ? reuse.band!.subarray(0, bandLength) : new Float32Array(bandLength);
    const scratch: RowScratch = reuse?.rows ?? { bytes: new Uint8Array(0) };
    if (reuse) reuse.rows = scratch;
    for (let y0 = 0; y0 < end; y0 += step) {
      const rows = Math.min(step, reader.height - y0);
      const data = band.subarray(0, rows * reader.width);
      await reader.readRowsInto(y0, rows, data, { scratch });
      if (y0 < builder.rowsUsed) builder.addRows(y0, data);
      for (const b of binners) b.addRows(data, y0, rows);
    }
    return { proxy: builder.finish(), lnPlanes: binners.length ? binners.map((b) => b.result()) : null };
  } finally {
    await reader.close();
  }
}

async function readOrFail(file: string): Promise<Plane | { error: string; code: string }> {
  try {
    return await readPlane(file);
  } catch (e) {
    if (isFitsError(e)) return { error: e.message, code: e.code };
    throw e;
  }
}

export async function measureFrame(task: MeasureTask): Promise<MeasureResult> {
  const t0 = performance.now();
  const plane = await readOrFail(task.file);
  const readMs = performance.now() - t0;
  if ('error' in plane) return { kind: 'measure', ok: false, code: 'unreadable', detail: plane.error, fitsCode: plane.code, metrics: null, cosmetic: null, ms: { read: readMs, detect: 0 } };
  return measurePlane(plane, task, readMs);
}

async function analyzeFrame(task: AnalyzeTask): Promise<AnalyzeTaskResult> {
  const t0 = performance.now();
  const plane = await readOrFail(task.file);
  const readMs = performance.now() - t0;
  if ('error' in plane) return { kind: 'analyze', ok: false, code: 'unreadable', detail: plane.error, fitsCode: plane.code, ms: { read: readMs } };
  return { kind: 'analyze', ok: true, premeasured: analyzePlane(plane, task.file, task.spec, readMs) };
}

export async function correlateFrame(task: CcTask): Promise<CcTaskResult> {
  const t0 = performance.now();
  let proxy: CcProxy;
  let lnPlanes: BinnedPlane[] | null;
  try {
    ({ proxy, lnPlanes } = await ccProxyAndBins(task.file, task.bin, task.lnBin, workerCcScratch ?? undefined));
  } catch (e) {
    if (!isFitsError(e)) throw e;
    return { kind: 'cc', ok: false, code: 'unreadable', detail: e.message, fitsCode: e.code, ms: { read: performance.now() - t0, cc: 0 } };
  }
  // Reading and binning are one band loop now: `read` is the proxy's, `cc` the correlation's.
  const t1 = performance.now();
  const r = registrationCc(task.reference, proxy, task.matrix);
  const ms = { read: t1 - t0, cc: performance.now() - t1 };
  if (!r.ok) return { kind: 'cc', ok: false, code: 'cc_failed', detail: `${r.code}: ${r.detail}`, ms };
  return { kind: 'cc', ok: true, cc: r.cc, overlap: r.overlap, ms, ...(lnPlanes ? { lnPlanes } : {}) };
}

export async function runFrameTask(task: FrameTask): Promise<FrameTaskResult> {
  switch (task.kind) {
    case 'register':
      return registerFrame(task);
    case 'measure':
      return measureFrame(task);
    case 'analyze':
      return analyzeFrame(task);
    case 'calibrate':
      return calibrateLight(task);
    case 'cc':
      return correlateFrame(task);
    case 'tiles':
      return tileMetricsFrame(task);
  }
}

/** A plane's cosmetic-corrected copy (tile measurements: one hot pixel's gradient energy matches a star's). */
export function cosmeticPlane(plane: Plane, step: 1 | 2, c: { sigma: number; noise: number }): Float32Array {
  const n = c.noise;
  return cosmeticCorrect(plane.data, { width: plane.width, height: plane.height, readY0: 0, y0: 0, y1: plane.height, step, sigma: c.sigma, noise: [n, n, n, n] }).data;
}

/** The tile sums of a (cosmetic-corrected) plane: cpu/tile-metrics.ts, or the caller's kernel (LOCAL_METRICS's device path). */
export type TileMeasureFn = (data: Float32Array, p: TileMetricsParams) => Float64Array | Promise<Float64Array>;

/**
 * A `tiles` task: read, LN planes of the raw plane when asked (the whole plane binned at once:
 * bit-identical to the setup pass's band by band binning, PlaneBinner sums row by row), cosmetic
 * pass, tile sums. The workers measure with `tileMetrics`; LOCAL_METRICS's device path passes its
 * kernel, so both paths read and correct a frame the same way.
 */
export async function tileMetricsFrame(task: TileMetricsTask, measure: TileMeasureFn = tileMetrics): Promise<TileMetricsTaskResult> {
  const t0 = performance.now();
  const plane = await readOrFail(task.file);
  if ('error' in plane) return { kind: 'tiles', ok: false, code: 'unreadable', detail: plane.error, fitsCode: plane.code };
  const t1 = performance.now();
  let lnPlanes: BinnedPlane[] | undefined;
  if (task.lnBin) {
    const binners = lnBinners(plane.width, plane.height, task.lnBin);
    for (const b of binners) b.addRows(plane.data, 0, plane.height);
    lnPlanes = binners.map((b) => b.result());
  }
  const data = task.cosmetic ? cosmeticPlane(plane, task.step, task.cosmetic) : plane.data;
  const metrics = await measure(data, { width: plane.width, height: plane.height, step: task.step, rects: task.rects, bgCut: task.bgCut, unit: task.unit, quantile: task.quantile });
  return { kind: 'tiles', ok: true, metrics, ms: { read: t1 - t0, measure: performance.now() - t1 }, ...(lnPlanes ? { lnPlanes } : {}) };
}

/** Transferable buffers of a result (moved, not copied, back from a worker). */
export function transferables(result: FrameTaskResult): ArrayBuffer[] {
  if (result.kind === 'measure') return result.ok && result.stars.buffer instanceof ArrayBuffer ? [result.stars.buffer, ...(result.shapes.buffer instanceof ArrayBuffer ? [result.shapes.buffer] : [])] : [];
  if (result.kind === 'analyze') return result.ok ? premeasuredTransferables(result.premeasured) : [];
  if (result.kind === 'calibrate') return calibrateLightTransferables(result);
  if (result.kind === 'tiles') return result.ok ? [result.metrics.buffer, ...(result.lnPlanes ?? []).map((p) => p.data.buffer)].filter((b): b is ArrayBuffer => b instanceof ArrayBuffer) : [];
  if (result.kind === 'cc' && result.ok && result.lnPlanes) return result.lnPlanes.map((p) => p.data.buffer).filter((b): b is ArrayBuffer => b instanceof ArrayBuffer);
  return [];
}
