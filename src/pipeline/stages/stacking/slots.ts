// What both slot stores of the stacking engine share (engine.ts): the store interface, the
// band-relative row ranges, and the host steps a frame's rows go through before they reach a
// slot (debayer or slice, warp on the host) and the host pre-mask of a channel's band.
// DeviceStore (device-store.ts) and HostStore (host-store.ts) implement SlotStore.

import { fillGridRows } from '../../../algorithms/local-normalization.js';
import { debayerBilinear, resolveDebayer, ROWS_KERNEL as DEBAYER_ROWS, type DebayerPlanes } from '../../../cpu/debayer.js';
import { compactOwned, GROW as PREMASK_GROW, PREMASK_APPLY, PREMASK_FLAG, PREMASK_SCREEN, premaskApply, premaskFlag, type PremaskArgs } from '../../../cpu/premask.js';
import type { StackMethod } from '../../../cpu/stack.js';
import type { WarpParams } from '../../../cpu/warp.js';
import { isShared, sharedFloat32, type WorkerPool } from '../../../cpu/worker-pool.js';
import { READBACK_CHUNK_BYTES } from '../../../gpu/context.js';
import { phaseChannels } from '../frames/channel-stats.js';
import type { EngineOptions, EngineTotals, NoiseModel, Timings } from './engine.js';
import type { StackFrame } from './plan.js';
import { superpixelRows, SUPERPIXEL_ROWS, warpRows, WARP_ROWS, type RejectRowsArgs, type StackRowsArgs, type SuperpixelArgs, type WarpRowsArgs } from './row-kernels.js';

/** A frame's source planes on the host covering the warp's source rows. */
export interface Source {
  srcY0: number;
  srcRows: number;
  planes: Float32Array[];
}

/** A raw read of a frame's rows for one band (prefetchable). */
export interface RawRead {
  readY0: number;
  data: Float32Array;
  srcY0: number;
  srcRows: number;
  /** The recycled row buffer the read went into (`data` is a view of it, or a fresh array). */
  buffer: Float32Array;
}

/** Rows a band's slots hold (owned + halo) and, inside them, the owned ones. */
export interface Work {
  y0: number;
  rows: number;
  ownedY0: number;
  ownedRows: number;
}

/** Where a band's frame slots live and how they are stacked. */
export interface SlotStore {
  putEmpty(f: StackFrame, w: Work): Promise<void>;
  /**
   * Starts frame f's host source ahead of its putFrame (which then takes `ready`), so it runs
   * beside the previous frame's putFrame; null (or absent): this store does not prepare ahead.
   * The rows `raw` and `mosaic` must stay untouched until that putFrame has resolved.
   */
  prepare?(f: StackFrame, w: Work, raw: RawRead, mosaic: Float32Array): Promise<Source> | null;
  putFrame(f: StackFrame, w: Work, raw: RawRead, mosaic: Float32Array, timings: Timings, ready?: Promise<Source> | null): Promise<void>;
  stackChannel(c: number, w: Work, totals: EngineTotals, timings: Timings): Promise<Float32Array>;
  finish(totals: EngineTotals): Promise<void>;
  dispose(): void;
  /** How a host pre-mask beside a device stack brings each band back (premaskChunking); absent or null: whole bands. */
  premaskChunkShape?(): PremaskChunks | null;
}

/** The host pre-mask's chunk shape as the diagnostics show it: owned rows per row chunk, or owned columns per column window. */
export type PremaskChunks = { rows: number } | { cols: number };

/**
 * Host buffers a frame's source goes through, allocated once (frames are processed one at a
 * time, and every consumer has copied or used them before the next frame starts): the read rows
 * (shared, so workers can read them) and the debayered planes.
 */
export class HostScratch {
  private mosaicRows: Float32Array | null = null;
  readonly planes: Float32Array[];

  constructor(
    private readonly o: EngineOptions,
    private readonly shared: boolean,
  ) {
    const alloc = (n: number) => (shared ? sharedFloat32(n) : new Float32Array(n));
    this.planes = o.channels === 3 ? Array.from({ length: 3 }, () => alloc(o.maxSourceRows * o.width)) : [];
  }

  /**
   * The shared copy of read rows that are not in shared memory themselves (allocated on first
   * use: the engine reads into shared row buffers when it has a worker pool, so usually never).
   */
  get mosaic(): Float32Array {
    this.mosaicRows ??= this.shared ? sharedFloat32(this.o.maxReadRows * this.o.frameWidth) : new Float32Array(0);
    return this.mosaicRows;
  }
}

/**
 * Host source sets a device store keeps: 2 where frame i + 1's host debayer (or superpixel
 * cells) runs on the worker pool while the device warps frame i (engine.ts: a device warp, a
 * host debayer, a pool), else 1. On a software adapter the warp runs inside submit on llvmpipe's
 * threads and the main thread waits there, so without the second set the pool and the device
 * took turns. The band plan counts the second set (plan.ts, hostSourceSets input).
 */
export function hostSourceSets(p: { channels: number; workers: number; deviceStack: boolean; deviceWarp: boolean; deviceDebayer: boolean }): 1 | 2 {
  return p.channels === 3 && p.workers > 1 && p.deviceStack && p.deviceWarp && !p.deviceDebayer ? 2 : 1;
}

/**
 * Debayers (OSC) or slices (mono) the warp's source rows on the host. `workersRead`: pool
 * workers will read the mono slice (a host warp); a device upload reads it on this thread, so
 * it needs no shared copy (for a 2048-wide mono band that copy, plus the bounce copy that
 * shared memory costs at upload, was ~0.4 GB of memcpy per 30 frames on the main thread).
 */
export async function hostSource(o: EngineOptions, f: StackFrame, raw: RawRead, data: Float32Array, timings: Timings, pool: WorkerPool | null, scratch: HostScratch, workersRead = true): Promise<Source> {
  const W = o.width;
  if (pool && !isShared(data) && (o.channels === 3 || workersRead)) {
    // Workers need shared memory: one copy into the reused buffer (not a fresh allocation per frame).
    const view = scratch.mosaic.subarray(0, data.length);
    view.set(data);
    data = view;
  }
  if (o.channels === 1) {
    const from = (raw.srcY0 - raw.readY0) * W;
    return { srcY0: raw.srcY0, srcRows: raw.srcRows, planes: [data.subarray(from, from + raw.srcRows * W)] };
  }
  const t = performance.now();
  const n = raw.srcRows * W;
  const out: DebayerPlanes = { r: scratch.planes[0]!.subarray(0, n), g: scratch.planes[1]!.subarray(0, n), b: scratch.planes[2]!.subarray(0, n) };
  if (o.binning === 2) {
    const args: SuperpixelArgs = { input: data, frameWidth: o.frameWidth, readY0: raw.readY0, phases: phaseChannels(f.pattern!), width: W, srcY0: raw.srcY0, ...out };
    if (pool) await pool.run(SUPERPIXEL_ROWS, args, 0, raw.srcRows, { chunksPerWorker: 1 });
    else superpixelRows(args, 0, raw.srcRows);
    timings.debayer += performance.now() - t;
    return { srcY0: raw.srcY0, srcRows: raw.srcRows, planes: [out.r, out.g, out.b] };
  }
  const params = { width: W, height: o.height, pattern: f.pattern!, y0: raw.srcY0, rows: raw.srcRows, readY0: raw.readY0 };
  let planes: DebayerPlanes;
  if (pool) {
    // One chunk per worker: a band's rows are too few to pay for finer scheduling (the
    // library's parallel form splits finer, for whole images).
    await pool.run(DEBAYER_ROWS, { ...resolveDebayer(params, data.length), input: data, ...out }, 0, raw.srcRows, { chunksPerWorker: 1, align: 2 });
    planes = out;
  } else planes = debayerBilinear(data, params, out);
  timings.debayer += performance.now() - t;
  return { srcY0: raw.srcY0, srcRows: raw.srcRows, planes: [planes.r, planes.g, planes.b] };
}

export function warpParams(o: EngineOptions, f: StackFrame, w: Work, src: { srcY0: number; srcRows: number }): WarpParams {
  return { affine: f.toFrame, width: o.width, y0: w.y0, rows: w.rows, srcWidth: o.width, srcHeight: o.height, srcY0: src.srcY0, srcRows: src.srcRows };
}

/** Channel c's normalisation of frame f's slot samples: local normalization holds it when on. */
export function frameNorm(o: EngineOptions, f: StackFrame, c: number): [number, number] {
  return o.ln ? [1, 0] : [f.scale[c]!, f.offset[c]!];
}

/** Frame f's local-normalization nodes per channel (small copies; in shared memory when a pool's workers read them). */
export function lnOf(o: EngineOptions, f: StackFrame, shared = false): WarpRowsArgs['ln'] {
  if (!o.ln) return null;
  const n = 2 * o.ln.nodes;
  return {
    grid: o.ln.grid,
    coefficients: o.ln.coefficients.map((t) => {
      const part = t.subarray(f.slot * n, (f.slot + 1) * n);
      if (!shared) return part.slice();
      const out = sharedFloat32(n);
      out.set(part);
      return out;
    }),
  };
}

/** The reference's sky of channel c on image rows [y0, y0 + rows) into `out` (rows × width). */
export function skyRows(nm: NoiseModel, c: number, y0: number, rows: number, out: Float32Array): Float32Array {
  const bg = nm.background[c]!;
  return fillGridRows(bg.grid, bg.values, y0, rows, out.subarray(0, rows * bg.grid.width));
}

/** Whether the final stack of `method` uses the noise-model rejection (reject_noise) instead of the stack kernel. */
export const noiseRejects = (o: EngineOptions, method: StackMethod): method is 'sigma' | 'winsor' => o.noiseModel !== null && (method === 'sigma' || method === 'winsor');

/** Warps host source planes on the host (worker rows or inline) into host slot arrays. */
export async function warpOnHost(o: EngineOptions, f: StackFrame, w: Work, src: Source, bands: Float32Array[], slot: number, pool: WorkerPool | null): Promise<void> {
  const args: WarpRowsArgs = {
    kernel: o.kernel,
    affine: f.toFrame,
    width: o.width,
    height: o.height,
    bandY0: w.y0,
    bandRows: w.rows,
    sources: src.planes,
    srcY0: src.srcY0,
    srcRows: src.srcRows,
    bands,
    slot,
    ln: lnOf(o, f, pool !== null),
  };
  if (pool) await pool.run(WARP_ROWS, args, 0, w.rows, { minChunk: 8 });
  else warpRows(args, 0, w.rows);
}

/**
 * Host bytes of one chunk of the host pre-mask beside a device stack (see DeviceStore): a
 * chunk's rows of every frame, with the growth halo. Half a readback chunk: measured on the
 * 30 × 2048 × 1536 bench, 8 MiB chunks peak ~17 MiB lower than 16 MiB ones at the same CPU
 * time (the 4 GROW halo rows per chunk are ~12 % more flag work on ~30 owned rows).
 */
export const PREMASK_CHUNK_BYTES = Math.min(8 << 20, READBACK_CHUNK_BYTES);

/** Fewest owned rows of a row chunk: below it the GROW halo rows would be most of a chunk's flag work. */
export const PREMASK_MIN_CHUNK_ROWS = 8;
/** Fewest owned columns of a column window (premaskChunking). */
export const PREMASK_MIN_WINDOW_COLS = 32;
/**
 * Halo columns each side of a column window: the growth reach GROW rounded up to whole vec4s, so
 * windows of a width that is a multiple of 4 start and end on vec4s (gather_window_vec4); more
 * halo than GROW changes no mask.
 */
export const PREMASK_WINDOW_HALO = Math.ceil(PREMASK_GROW / 4) * 4;

/** Owned rows per chunk of the host pre-mask beside a device stack (PREMASK_CHUNK_BYTES). */
export const premaskChunkRows = (frames: number, width: number): number => Math.max(PREMASK_MIN_CHUNK_ROWS, Math.floor(PREMASK_CHUNK_BYTES / (4 * frames * width)) - 2 * PREMASK_GROW);

/**
 * Row-chunk bytes beyond which the host pre-mask takes column windows (premaskChunking). A
 * window's gather costs ~5× a row chunk's readback per byte on llvmpipe (20 000 scattered
 * 400-byte rows against 1000 contiguous 100 KB slices: ~7 ms per 8 MiB window), which below
 * this size saves less memory than it costs (300 frames × 2048 px: +14 s CPU in STACKING for
 * −20 MiB, bench/RESULTS.md); above it the saving grows with the frame count.
 */
export const PREMASK_WINDOWS_ABOVE_BYTES = 32 << 20;

/**
 * How the host pre-mask beside a device stack brings a band back: row chunks (every column of
 * `rows` owned rows and the GROW halo rows; as many rows as fit PREMASK_CHUNK_BYTES, at least
 * PREMASK_MIN_CHUNK_ROWS) while such a chunk fits PREMASK_WINDOWS_ABOVE_BYTES, else column
 * windows of PREMASK_CHUNK_BYTES (every work row of `cols` owned columns and PREMASK_WINDOW_HALO
 * halo columns; shaders/stack/gather_window*.wgsl pack them on the device). Row chunks of many
 * frames outgrew the bytes: 1000 frames × 2048 px × 12 rows were 98 MB of host band and 25 MB
 * of mask bytes beside the slots, where a window of the same frames and rows is ~8 MB (and its
 * 8 halo columns ~8 % more flag work instead of the 4 halo rows' 50 %). `rows` / `cols` given:
 * that shape (tests).
 */
export function premaskChunking(frames: number, width: number, maxWorkRows: number, maxOwnedRows: number, rows?: number | null, cols?: number | null): { rows: number; cols: null } | { rows: null; cols: number } {
  if (cols) return { rows: null, cols: Math.min(width, cols) };
  if (rows) return { rows: Math.min(maxOwnedRows, rows), cols: null };
  const chunkRows = Math.min(maxOwnedRows, premaskChunkRows(frames, width));
  const fits = 4 * frames * width * Math.min(maxWorkRows, chunkRows + 2 * PREMASK_GROW) <= PREMASK_WINDOWS_ABOVE_BYTES;
  if (fits || chunkRows >= maxOwnedRows) return { rows: chunkRows, cols: null };
  const windowCols = Math.floor(PREMASK_CHUNK_BYTES / (4 * frames * maxWorkRows)) - 2 * PREMASK_WINDOW_HALO;
  return { rows: null, cols: Math.min(width, Math.max(PREMASK_MIN_WINDOW_COLS, windowCols)) };
}

/** Slot indices the host pre-mask may hand to the device per band and channel (see DeviceStore). */
export const nanIndexCapacity = (frames: number, ownedRows: number, width: number): number => Math.max(1024, Math.ceil((frames * ownedRows * width) / 32));

export const sharedU32 = (n: number, shared: boolean) => (shared ? new Uint32Array(new SharedArrayBuffer(4 * n)) : new Uint32Array(n));
export const sharedU64 = (n: number, shared: boolean) => (shared ? new BigUint64Array(new SharedArrayBuffer(8 * n)) : new BigUint64Array(n));
export const sharedU8 = (n: number, shared: boolean) => (shared ? new Uint8Array(new SharedArrayBuffer(n)) : new Uint8Array(n));

/**
 * The host pre-mask's per-pixel screen and signal (PremaskArgs.screen), made once per band or
 * chunk on the worker pool instead of by each flag call; grown on demand to the largest band
 * asked for (a chunk's rows, or a whole work band), kept by its store.
 */
export class ScreenScratch {
  private screen: Float32Array = new Float32Array(0);
  private signal: Float32Array = new Float32Array(0);

  constructor(private readonly shared: boolean) {}

  views(n: number, signal: boolean): { screen: Float32Array; signal?: Float32Array } {
    const alloc = (k: number) => (this.shared ? sharedFloat32(k) : new Float32Array(k));
    if (this.screen.length < n) this.screen = alloc(n);
    if (signal && this.signal.length < n) this.signal = alloc(n);
    return { screen: this.screen.subarray(0, n), ...(signal ? { signal: this.signal.subarray(0, n) } : {}) };
  }
}

/**
 * A column window of the work band (premaskHost's `band` then holds frames × rows × `width`):
 * the window's owned columns, with at least GROW halo columns each side except at the image's edges, and
 * the noise model's sky under the window's pixels (rows × width; null without the noise model).
 */
export interface PremaskWindow {
  width: number;
  ownedX0: number;
  ownedCols: number;
  sky: Float32Array | null;
}

/**
 * Host part of the pre-mask for one channel's work band (`band`, frames × work rows × width,
 * host memory): seeds and growth per frame, the keep rule and NaN per owned pixel, then the
 * owned rows compacted to the front. Returns the compact view (frames × owned rows × width).
 * With `nan`, the masked samples' band indices go there (PremaskArgs.nanIndex) and the band is
 * returned uncompacted (work rows). With `window`, `band` is a column window of the work band
 * (its owned columns are masked and tallied; the indices go to `nan.of`'s larger band).
 */
export async function premaskHost(
  o: EngineOptions,
  c: number,
  w: Work,
  band: Float32Array,
  median: Float32Array,
  mask: Uint8Array,
  rejected: Uint32Array,
  counts: BigUint64Array,
  pool: WorkerPool | null,
  nan: { index: Uint32Array; count: Uint32Array; of?: { plane: number; row0: number; col0?: number; width?: number } } | null = null,
  sky: Float32Array | null = null,
  screen: ScreenScratch | null = null,
  window: PremaskWindow | null = null,
): Promise<Float32Array> {
  const N = o.frames.length;
  const pm = o.premask!;
  const nm = o.noiseModel;
  const W = window ? window.width : o.width;
  mask.fill(0, 0, N * w.rows * W);
  const background = !nm || !sky ? null : window ? window.sky : skyRows(nm, c, w.y0, w.rows, sky);
  const noiseModel = nm && background ? { background, poisson: o.frames.map((f) => nm.poisson[f.slot]![c]!), seeing: o.frames.map((f) => nm.seeing[f.slot]!) } : null;
  // The noise model's screen comes with its signal S (premaskScreen fills both).
  const scr = pool && screen ? screen.views(w.rows * W, noiseModel !== null) : null;
  const args: PremaskArgs = {
    band: band.subarray(0, N * w.rows * W),
    median: median.subarray(0, w.rows * W),
    mask: mask.subarray(0, N * w.rows * W),
    width: W,
    rows: w.rows,
    frames: N,
    scale: o.frames.map((f) => frameNorm(o, f, c)[0]),
    offset: o.frames.map((f) => frameNorm(o, f, c)[1]),
    sigma: o.frames.map((f) => pm.sigma[f.slot]![c]!),
    noiseModel,
    kLow: o.rejection.low,
    kHigh: o.rejection.high,
    level: pm.level[c]!,
    minFraction: o.rejection.minFraction,
    ownedY0: w.ownedY0,
    ownedRows: w.ownedRows,
    ...(window ? { ownedX0: window.ownedX0, ownedCols: window.ownedCols } : {}),
    rejected,
    counts,
    // Only counts[1] (masked) is used: the valid count comes from the stack's tallies.
    countValid: false,
    ...(nan ? { nanIndex: nan.index, nanCount: nan.count } : {}),
    ...(nan?.of ? { nanIndexOf: nan.of } : {}),
    ...(scr ?? {}),
  };
  if (pool) {
    // The screen once over the band's rows, then the frames' flags read it (PremaskArgs.screen).
    if (scr) await pool.run(PREMASK_SCREEN, args, 0, w.rows, { minChunk: 8, reused: true });
    await pool.run(PREMASK_FLAG, args, 0, N, { chunksPerWorker: 2, reused: true });
    await pool.run(PREMASK_APPLY, args, w.ownedY0, w.ownedY0 + w.ownedRows, { minChunk: 8, reused: true });
  } else {
    premaskFlag(args, 0, N);
    premaskApply(args, w.ownedY0, w.ownedY0 + w.ownedRows);
  }
  // With an index list the caller stacks the work band in place (no compaction needed).
  if (window && !nan) throw new Error('premaskHost: a column window needs an index list');
  return nan ? args.band : compactOwned(band, o.width, w.rows, N, w.ownedY0, w.ownedRows);
}

/** The stack's parameters for channel `c` of a band of `rows` rows: the rejection, and each frame's normalisation and weight. */
export function stackParams(o: EngineOptions, c: number, rows: number, method: StackMethod) {
  return {
    width: o.width,
    rows,
    frames: o.frames.length,
    ...o.rejection,
    method,
    scale: o.frames.map((f) => frameNorm(o, f, c)[0]),
    offset: o.frames.map((f) => frameNorm(o, f, c)[1]),
    weight: o.frames.map((f) => f.weight),
  };
}

/** The noise model's per-frame inputs of channel c (rejectRows, reject_noise). */
export function noiseParams(o: EngineOptions, c: number): { noise: number[]; poisson: number[]; seeing: number[] } {
  const nm = o.noiseModel!;
  return { noise: o.frames.map((f) => nm.sigma[f.slot]![c]!), poisson: o.frames.map((f) => nm.poisson[f.slot]![c]!), seeing: o.frames.map((f) => nm.seeing[f.slot]!) };
}

/**
 * The noise-model rejection's arguments for channel c: `rows` output rows read from `band`
 * (srcRows rows per frame, output row 0 at srcRow0), the centre rows from centreRow0 of `centre`.
 */
export function rejectArgs(
  o: EngineOptions,
  c: number,
  band: Float32Array,
  rows: number,
  layout: { srcRows: number; srcRow0: number },
  centre: { data: Float32Array; row0: number } | null,
  background: Float32Array,
  mean: Float32Array,
  rejected: Uint32Array,
  counts: BigUint64Array,
): RejectRowsArgs {
  const method = o.rejection.method as 'sigma' | 'winsor';
  return { band, ...stackParams(o, c, rows, method), method, ...layout, ...noiseParams(o, c), centre: centre?.data ?? null, centreRow0: centre?.row0 ?? 0, background, mean, rejected, counts };
}

export function stackArgs(o: EngineOptions, c: number, band: Float32Array, rows: number, method: StackMethod, mean: Float32Array, rejected: Uint32Array, counts: BigUint64Array): StackRowsArgs {
  return { band, ...stackParams(o, c, rows, method), mean, rejected, counts };
}
