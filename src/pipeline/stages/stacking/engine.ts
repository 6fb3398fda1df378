// STACKING's band loop: for each band of output rows, every included frame's source rows are
// read, optionally cosmetic-corrected, debayered (OSC) and warped into the frame's slot of the
// band; then each channel's slots are (optionally pre-masked, cpu/premask.ts) stacked per
// pixel across ALL frames (exact global rejection) and the band's rows of the output are filled.
// A band's "work rows" are its owned rows plus the planner's halo rows (the pre-mask's growth
// reach); slots hold work rows, the final stack only the owned ones.
//
// What runs where (device-policy.ts decides, stackingPlacement; the engine takes its contexts as given):
// - reading and per-frame cosmetic correction: host (TypeScript), reads prefetched
//   `parallel_workers` frames ahead so file I/O overlaps the compute of the current frame;
// - debayer: bilinear on the device when gpuFor('debayer') (hardware GPU), else TypeScript
//   (worker pool); superpixel cells always on the host;
// - warp: device when gpuFor('warp_<kernel>'), else TypeScript rows on the worker pool;
// - stack and the pre-mask's median pass: device when gpuFor('stack') and the frame count fits
//   one dispatch, else TypeScript rows on the worker pool;
// - pre-mask flag/apply: WGSL on a hardware GPU, TypeScript (worker pool) otherwise.
// DeviceStore keeps a band's slots in device buffers: source planes go up once per frame,
// (debayer →) warp → copy into the slot → (median → pre-mask →) stack is a chain of device work,
// and only the band's mean and count come back. On a software adapter the pre-mask's flag/apply
// run in TypeScript instead (faster there, measured): a channel's slots come to the host, and
// only the masked samples' indices go back (NaN'd by a scatter kernel), the stack then reading
// the owned rows of the slots in place. The next band's first reads start while a band is
// pre-masked and stacked. HostStore keeps the slots in shared host memory.
// Worker-pool runs over the band's slots, mask and tallies are `reused` (allocated once per
// phase, so they do not force the workers' full collections; the run collects after the phase).
//
// Invariants: each output pixel depends only on samples within the warp's and the pre-mask's
// reach, all inside the band's work rows, so any band plan gives the same image; tallies count
// owned rows only, so they are exact across bands; every device buffer is released by dispose()
// (called from the phase's finalize, also after an error or a cancel); memory stays within the
// band plan (planStackBands).

import { debayerBilinear, resolveDebayer, type DebayerPlanes } from '../../../cpu/debayer.js';
import type { StackMethod } from '../../../cpu/stack.js';
import { sourceRowsFor, type WarpKernel, type WarpParams } from '../../../cpu/warp.js';
import { isShared, sharedFloat32, sharedPool, type PoolKernel, type WorkerPool } from '../../../cpu/worker-pool.js';
import { READBACK_CHUNK_BYTES, type GpuContext } from '../../../gpu/context.js';
import { debayerBilinearResident } from '../../../gpu/kernels/debayer.js';
import { stackResident, type SrcLayout } from '../../../gpu/kernels/stack.js';
import { warpBilinearGpu, warpBilinearResident, warpLanczos3Gpu, warpLanczos3Resident } from '../../../gpu/kernels/warp.js';
import { premaskMaskBytes, premaskResident, scatterNanResident } from '../../../gpu/kernels/premask.js';
import type { Band } from '../../../gpu/band-planner.js';
import { cosmeticCorrect } from './cosmetic.js';
import { stackRows, superpixelRows, warpRows, type StackRowsArgs, type SuperpixelArgs, type WarpRowsArgs } from './row-kernels.js';
import { phaseChannels } from '../frames/channel-stats.js';
import { ALPHA as PREMASK_ALPHA, compactOwned, GROW as PREMASK_GROW, premaskApply, premaskFlag, type PremaskArgs } from '../../../cpu/premask.js';
import type { ReaderCache } from './readers.js';
import type { StackFrame } from './plan.js';

export type KernelPath = 'gpu' | 'software-gpu' | 'typescript' | 'typescript-workers';

export interface EngineOptions {
  /** Output size, which is also the size of the warp's source planes. */
  width: number;
  height: number;
  /** The frames' size, and frame rows per source-plane row (2: superpixel cells, else 1). */
  frameWidth: number;
  frameHeight: number;
  binning: 1 | 2;
  channels: 1 | 3;
  frames: StackFrame[];
  /** Largest work band (owned rows plus halo) and largest owned row count of the plan. */
  maxWorkRows: number;
  maxOwnedRows: number;
  maxSourceRows: number;
  maxReadRows: number;
  kernel: WarpKernel;
  readHalo: number;
  rejection: { method: StackMethod; low: number; high: number; maxIters: number; minFraction: number };
  /**
   * Pre-mask parameters (null: off). `sigma[slot][channel]` is the normalised frame noise.
   * `onDevice`: run it as WGSL on the device (a hardware GPU); false runs it in TypeScript, with
   * one round trip of a channel's slots when the stack runs on the device (on llvmpipe the
   * branchy WGSL is ~7× slower than that round trip plus the TypeScript, measured).
   */
  premask: { sigma: number[][]; level: number[]; onDevice: boolean; indexCapacity?: number | null; chunkRows?: number | null } | null;
  perFrameCosmetic: { sigma: number } | null;
  workers: number;
  /** Contexts per kernel (null = TypeScript). */
  gpu: { debayer: GpuContext | null; warp: GpuContext | null; stack: GpuContext | null };
  readers: ReaderCache;
}

export interface Timings {
  read_wait: number;
  cosmetic: number;
  debayer: number;
  warp: number;
  /** Pre-mask total, and its parts: the median pass, the device round trip of the slots, the host mask. */
  premask: number;
  premask_median: number;
  premask_transfer: number;
  premask_mask: number;
  stack: number;
}

export interface EngineTotals {
  /** Per channel: rejected low per frame slot, then rejected high per frame slot (2N each); pre-masked samples included. */
  rejected: Uint32Array[];
  /** Per channel: pre-masked samples (low/high alike). */
  premasked: number[];
  /** Per channel: output pixels without a surviving sample. */
  empty: number[];
  /** Per channel: frame samples that carried data (not NaN) on the owned rows. */
  validSamples: number[];
  corrected: { hot: number; cold: number };
}

/** A frame's source planes on the host covering the warp's source rows. */
interface Source {
  srcY0: number;
  srcRows: number;
  planes: Float32Array[];
}

/** A raw read of a frame's rows for one band (prefetchable). */
interface RawRead {
  readY0: number;
  data: Float32Array;
  srcY0: number;
  srcRows: number;
  /** The recycled row buffer the read went into (`data` is a view of it, or a fresh array). */
  buffer: Float32Array;
}

/** Rows a band's slots hold (owned + halo) and, inside them, the owned ones. */
interface Work {
  y0: number;
  rows: number;
  ownedY0: number;
  ownedRows: number;
}

const KERNELS_URL = new URL('./row-kernels.js', import.meta.url).href;
const PREMASK_URL = new URL('../../../cpu/premask.js', import.meta.url).href;
const WARP_ROWS: PoolKernel = { module: KERNELS_URL, name: 'warpRows' };
const STACK_ROWS: PoolKernel = { module: KERNELS_URL, name: 'stackRows' };
const PREMASK_FLAG: PoolKernel = { module: PREMASK_URL, name: 'premaskFlag' };
const PREMASK_APPLY: PoolKernel = { module: PREMASK_URL, name: 'premaskApply' };
const SUPERPIXEL_ROWS: PoolKernel = { module: KERNELS_URL, name: 'superpixelRows' };
const DEBAYER_ROWS: PoolKernel = { module: new URL('../../../cpu/debayer.js', import.meta.url).href, name: 'debayerBilinearRows' };

function pathOf(ctx: GpuContext | null, workers: number): KernelPath {
  if (ctx) return ctx.info.kind === 'gpu' ? 'gpu' : 'software-gpu';
  return workers > 1 ? 'typescript-workers' : 'typescript';
}

const workOf = (band: Band): Work => ({ y0: band.readY0, rows: band.readRows, ownedY0: band.y0 - band.readY0, ownedRows: band.rows });

export class BandEngine {
  readonly timings: Timings = { read_wait: 0, cosmetic: 0, debayer: 0, warp: 0, premask: 0, premask_median: 0, premask_transfer: 0, premask_mask: 0, stack: 0 };
  readonly totals: EngineTotals;
  private readonly pool: WorkerPool | null;
  private readonly store: SlotStore;
  private readonly pending = new Set<Promise<unknown>>();
  /**
   * Row buffers for reads, recycled once a frame's putFrame has consumed its read (every store
   * copies or uses the rows before putFrame resolves): at most the reads in flight plus one
   * exist, instead of a fresh array per frame and band left to the garbage collector.
   */
  private readonly rowBuffers: Float32Array[] = [];
  /** Reads started during the previous band for the band named (see runBand's `next`). */
  private early: { band: Band; reads: Map<number, Promise<RawRead | null>> } | null = null;

  constructor(private readonly o: EngineOptions) {
    const C = o.channels;
    this.pool = o.workers > 1 ? sharedPool(o.workers) : null;
    this.totals = {
      rejected: Array.from({ length: C }, () => new Uint32Array(2 * o.frames.length)),
      premasked: new Array(C).fill(0),
      empty: new Array(C).fill(0),
      validSamples: new Array(C).fill(0),
      corrected: { hot: 0, cold: 0 },
    };
    this.store = o.gpu.stack ? new DeviceStore(o, o.gpu.stack, this.pool) : new HostStore(o, this.pool);
  }

  /** Which path ran each kernel (diagnostics). */
  paths(): Record<string, KernelPath | 'off'> {
    const o = this.o;
    const host: KernelPath = this.pool ? 'typescript-workers' : 'typescript';
    return {
      read: 'typescript',
      per_frame_cosmetic: o.perFrameCosmetic ? 'typescript' : 'off',
      debayer: o.channels === 1 ? 'off' : o.binning === 2 ? (this.pool ? 'typescript-workers' : 'typescript') : pathOf(o.gpu.debayer, o.workers),
      warp: pathOf(o.gpu.warp, o.workers),
      premask: o.premask ? (o.premask.onDevice ? pathOf(o.gpu.stack, o.workers) : host) : 'off',
      stack: pathOf(o.gpu.stack, o.workers),
    };
  }

  /**
   * The source-plane rows the work band's warp needs, and the frame rows to read for them
   * (binning frame rows per plane row, plus the read halo).
   */
  private readRange(f: StackFrame, w: Work): { srcY0: number; srcRows: number; readY0: number; readRows: number } {
    const { width: W, height: H, kernel, readHalo, binning: B } = this.o;
    const need = sourceRowsFor(f.toFrame, w.y0, w.rows, W, H, kernel);
    if (need.rows === 0) return { srcY0: need.y0, srcRows: 0, readY0: 0, readRows: 0 };
    let readY0 = Math.max(0, need.y0 * B - readHalo);
    if (this.o.channels === 3) readY0 &= ~1; // whole Bayer row pairs
    const readEnd = Math.min(this.o.frameHeight, (need.y0 + need.rows) * B + readHalo);
    return { srcY0: need.y0, srcRows: need.rows, readY0, readRows: readEnd - readY0 };
  }

  private startRead(f: StackFrame, w: Work): Promise<RawRead | null> {
    const r = this.readRange(f, w);
    if (r.srcRows === 0) return Promise.resolve(null);
    const target = this.rowBuffers.pop() ?? new Float32Array(this.o.maxReadRows * this.o.frameWidth);
    const p = this.o.readers.readRowsInto(f.source, r.readY0, r.readRows, target).then(
      (data) => ({ readY0: r.readY0, data, srcY0: r.srcY0, srcRows: r.srcRows, buffer: target }),
      (e: unknown) => {
        this.rowBuffers.push(target);
        throw e;
      },
    );
    this.pending.add(p);
    const forget = () => this.pending.delete(p);
    p.then(forget, forget);
    return p;
  }

  /**
   * Stacks one band. `between` runs before each frame (cancellation checks, progress). `next`:
   * the band that follows, whose first reads start while this band is stacked. Returns the
   * band's mean rows per channel (owned rows × width each).
   */
  async runBand(band: Band, between: (slot: number) => void, next: Band | null = null): Promise<Float32Array[]> {
    const o = this.o;
    const N = o.frames.length;
    const w = workOf(band);
    const ahead = Math.max(1, o.workers);
    // Reads the previous band started for this one (its first `ahead` frames), else none.
    const early = this.early?.band === band ? this.early.reads : null;
    this.early = null;
    const reads = early ?? new Map<number, Promise<RawRead | null>>();
    const prefetch = (upTo: number) => {
      for (let i = 0; i <= upTo && i < N; i++) if (!reads.has(i)) reads.set(i, this.startRead(o.frames[i]!, w));
    };
    for (let i = 0; i < N; i++) {
      between(i);
      prefetch(i + ahead - 1);
      const f = o.frames[i]!;
      const tRead = performance.now();
      const raw = await reads.get(i)!;
      reads.delete(i);
      this.timings.read_wait += performance.now() - tRead;
      prefetch(i + ahead);
      if (!raw) {
        await this.store.putEmpty(f, w);
        continue;
      }
      let data = raw.data;
      if (o.perFrameCosmetic && f.noise) {
        const t = performance.now();
        // Frame rows the source planes come from (with the bilinear debayer's halo row).
        const dh = o.channels === 3 && o.binning === 1 ? 1 : 0;
        const fixed = cosmeticCorrect(data, {
          width: o.frameWidth,
          height: o.frameHeight,
          readY0: raw.readY0,
          y0: raw.srcY0 * o.binning - dh,
          y1: (raw.srcY0 + raw.srcRows) * o.binning + dh,
          step: o.channels === 3 ? 2 : 1,
          sigma: o.perFrameCosmetic.sigma,
          noise: f.noise,
        });
        data = fixed.data;
        // A per-band tally: source rows of neighbouring bands overlap, so a pixel may count twice.
        this.totals.corrected.hot += fixed.hot;
        this.totals.corrected.cold += fixed.cold;
        this.timings.cosmetic += performance.now() - t;
      }
      await this.store.putFrame(f, w, raw, data, this.timings);
      this.rowBuffers.push(raw.buffer);
    }
    if (next) {
      // The next band's first reads overlap this band's pre-mask and stack (at most `ahead`
      // reads in flight, as within a band), so its frame loop does not start by waiting on I/O.
      const nw = workOf(next);
      const nextReads = new Map<number, Promise<RawRead | null>>();
      for (let i = 0; i < Math.min(ahead, N); i++) nextReads.set(i, this.startRead(o.frames[i]!, nw));
      this.early = { band: next, reads: nextReads };
    }
    const out: Float32Array[] = [];
    for (let c = 0; c < o.channels; c++) {
      between(N); // a cancel also takes effect between the channels' stacks
      out.push(await this.store.stackChannel(c, w, this.totals, this.timings));
    }
    return out;
  }

  /** Collects the totals the store accumulated (call after the last band). */
  async finish(): Promise<void> {
    await this.store.finish(this.totals);
  }

  async dispose(): Promise<void> {
    await Promise.allSettled([...this.pending]);
    this.store.dispose();
  }
}

/** Where a band's frame slots live and how they are stacked. */
interface SlotStore {
  putEmpty(f: StackFrame, w: Work): Promise<void>;
  putFrame(f: StackFrame, w: Work, raw: RawRead, mosaic: Float32Array, timings: Timings): Promise<void>;
  stackChannel(c: number, w: Work, totals: EngineTotals, timings: Timings): Promise<Float32Array>;
  finish(totals: EngineTotals): Promise<void>;
  dispose(): void;
}

/**
 * Host buffers a frame's source goes through, allocated once (frames are processed one at a
 * time, and every consumer has copied or used them before the next frame starts): the read rows
 * (shared, so workers can read them) and the debayered planes.
 */
class HostScratch {
  readonly mosaic: Float32Array;
  readonly planes: Float32Array[];

  constructor(o: EngineOptions, shared: boolean) {
    const alloc = (n: number) => (shared ? sharedFloat32(n) : new Float32Array(n));
    this.mosaic = shared ? alloc(o.maxReadRows * o.frameWidth) : new Float32Array(0);
    this.planes = o.channels === 3 ? Array.from({ length: 3 }, () => alloc(o.maxSourceRows * o.width)) : [];
  }
}

/**
 * Debayers (OSC) or slices (mono) the warp's source rows on the host. `workersRead`: pool
 * workers will read the mono slice (a host warp); a device upload reads it on this thread, so
 * it needs no shared copy (for a 2048-wide mono band that copy, plus the bounce copy that
 * shared memory costs at upload, was ~0.4 GB of memcpy per 30 frames on the main thread).
 */
async function hostSource(o: EngineOptions, f: StackFrame, raw: RawRead, data: Float32Array, timings: Timings, pool: WorkerPool | null, scratch: HostScratch, workersRead = true): Promise<Source> {
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

function warpParams(o: EngineOptions, f: StackFrame, w: Work, src: { srcY0: number; srcRows: number }): WarpParams {
  return { affine: f.toFrame, width: o.width, y0: w.y0, rows: w.rows, srcWidth: o.width, srcHeight: o.height, srcY0: src.srcY0, srcRows: src.srcRows };
}

/** Warps host source planes on the host (worker rows or inline) into host slot arrays. */
async function warpOnHost(o: EngineOptions, f: StackFrame, w: Work, src: Source, bands: Float32Array[], slot: number, pool: WorkerPool | null): Promise<void> {
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

/** Owned rows per chunk of the host pre-mask beside a device stack (PREMASK_CHUNK_BYTES). */
export const premaskChunkRows = (frames: number, width: number): number => Math.max(8, Math.floor(PREMASK_CHUNK_BYTES / (4 * frames * width)) - 2 * PREMASK_GROW);

/** Slot indices the host pre-mask may hand to the device per band and channel (see DeviceStore). */
export const nanIndexCapacity = (frames: number, ownedRows: number, width: number): number => Math.max(1024, Math.ceil((frames * ownedRows * width) / 32));

const sharedU32 = (n: number, shared: boolean) => (shared ? new Uint32Array(new SharedArrayBuffer(4 * n)) : new Uint32Array(n));
const sharedU64 = (n: number, shared: boolean) => (shared ? new BigUint64Array(new SharedArrayBuffer(8 * n)) : new BigUint64Array(n));
const sharedU8 = (n: number, shared: boolean) => (shared ? new Uint8Array(new SharedArrayBuffer(n)) : new Uint8Array(n));

/**
 * Host part of the pre-mask for one channel's work band (`band`, frames × work rows × width,
 * host memory): seeds and growth per frame, the keep rule and NaN per owned pixel, then the
 * owned rows compacted to the front. Returns the compact view (frames × owned rows × width).
 * With `nan`, the masked samples' band indices go there (PremaskArgs.nanIndex) and the band is
 * returned uncompacted (work rows).
 */
async function premaskHost(
  o: EngineOptions,
  c: number,
  w: Work,
  band: Float32Array,
  median: Float32Array,
  mask: Uint8Array,
  rejected: Uint32Array,
  counts: BigUint64Array,
  pool: WorkerPool | null,
  nan: { index: Uint32Array; count: Uint32Array; of?: { plane: number; row0: number } } | null = null,
): Promise<Float32Array> {
  const N = o.frames.length;
  const pm = o.premask!;
  mask.fill(0, 0, N * w.rows * o.width);
  const args: PremaskArgs = {
    band: band.subarray(0, N * w.rows * o.width),
    median: median.subarray(0, w.rows * o.width),
    mask: mask.subarray(0, N * w.rows * o.width),
    width: o.width,
    rows: w.rows,
    frames: N,
    scale: o.frames.map((f) => f.scale[c]!),
    offset: o.frames.map((f) => f.offset[c]!),
    sigma: o.frames.map((f) => pm.sigma[f.slot]![c]!),
    kLow: o.rejection.low,
    kHigh: o.rejection.high,
    level: pm.level[c]!,
    minFraction: o.rejection.minFraction,
    ownedY0: w.ownedY0,
    ownedRows: w.ownedRows,
    rejected,
    counts,
    // Only counts[1] (masked) is used: the valid count comes from the stack's tallies.
    countValid: false,
    ...(nan ? { nanIndex: nan.index, nanCount: nan.count } : {}),
    ...(nan?.of ? { nanIndexOf: nan.of } : {}),
  };
  if (pool) {
    await pool.run(PREMASK_FLAG, args, 0, N, { chunksPerWorker: 2, reused: true });
    await pool.run(PREMASK_APPLY, args, w.ownedY0, w.ownedY0 + w.ownedRows, { minChunk: 8, reused: true });
  } else {
    premaskFlag(args, 0, N);
    premaskApply(args, w.ownedY0, w.ownedY0 + w.ownedRows);
  }
  // With an index list the caller stacks the work band in place (no compaction needed).
  return nan ? args.band : compactOwned(band, o.width, w.rows, N, w.ownedY0, w.ownedRows);
}

function stackArgs(o: EngineOptions, c: number, band: Float32Array, rows: number, method: StackMethod, mean: Float32Array, rejected: Uint32Array, counts: BigUint64Array): StackRowsArgs {
  return {
    band,
    width: o.width,
    rows,
    frames: o.frames.length,
    ...o.rejection,
    method,
    scale: o.frames.map((f) => f.scale[c]!),
    offset: o.frames.map((f) => f.offset[c]!),
    weight: o.frames.map((f) => f.weight),
    mean,
    rejected,
    counts,
  };
}

class HostStore implements SlotStore {
  private readonly bands: Float32Array[];
  private readonly mean: Float32Array;
  private readonly median: Float32Array | null;
  private readonly mask: Uint8Array | null;
  /** Per channel: kernel tallies (2N), pre-mask tallies (2N). */
  private readonly rejected: Uint32Array[];
  private readonly premaskRejected: Uint32Array[];
  /** Per channel: [survivors, empty]; pre-mask [valid, masked]. */
  private readonly counts: BigUint64Array[];
  private readonly premaskCounts: BigUint64Array[];
  private readonly scratch: BigUint64Array;
  private readonly scratchRejected: Uint32Array;
  private readonly source: HostScratch;

  constructor(
    private readonly o: EngineOptions,
    private readonly pool: WorkerPool | null,
  ) {
    const C = o.channels;
    const N = o.frames.length;
    const sh = pool !== null;
    this.source = new HostScratch(o, sh);
    const alloc = (n: number) => (sh ? sharedFloat32(n) : new Float32Array(n));
    this.bands = Array.from({ length: C }, () => alloc(N * o.maxWorkRows * o.width));
    this.mean = alloc(o.maxWorkRows * o.width);
    this.median = o.premask ? alloc(o.maxWorkRows * o.width) : null;
    this.mask = o.premask ? sharedU8(N * o.maxWorkRows * o.width, sh) : null;
    this.rejected = Array.from({ length: C }, () => sharedU32(2 * N, sh));
    this.premaskRejected = Array.from({ length: C }, () => sharedU32(2 * N, sh));
    this.counts = Array.from({ length: C }, () => sharedU64(2, sh));
    this.premaskCounts = Array.from({ length: C }, () => sharedU64(2, sh));
    this.scratch = sharedU64(2, sh);
    this.scratchRejected = sharedU32(2 * N, sh);
  }

  async putEmpty(f: StackFrame, w: Work): Promise<void> {
    const plane = w.rows * this.o.width;
    for (const b of this.bands) b.fill(NaN, f.slot * plane, (f.slot + 1) * plane);
  }

  async putFrame(f: StackFrame, w: Work, raw: RawRead, data: Float32Array, timings: Timings): Promise<void> {
    const o = this.o;
    const src = await hostSource(o, f, raw, data, timings, this.pool, this.source, !o.gpu.warp);
    const t = performance.now();
    if (o.gpu.warp) {
      // The stack runs on the host (too many frames for one dispatch), the warp on the device.
      const plane = w.rows * o.width;
      for (let c = 0; c < o.channels; c++) {
        const p = warpParams(o, f, w, src);
        const out = o.kernel === 'lanczos3' ? await warpLanczos3Gpu(o.gpu.warp, src.planes[c]!, p) : await warpBilinearGpu(o.gpu.warp, src.planes[c]!, p);
        this.bands[c]!.set(out, f.slot * plane);
      }
    } else {
      await warpOnHost(o, f, w, src, this.bands, f.slot, this.pool);
    }
    timings.warp += performance.now() - t;
  }

  private async runStack(args: StackRowsArgs): Promise<void> {
    if (this.pool) await this.pool.run(STACK_ROWS, args, 0, args.rows, { minChunk: 4, reused: true });
    else stackRows(args, 0, args.rows);
  }

  async stackChannel(c: number, w: Work, _totals: EngineTotals, timings: Timings): Promise<Float32Array> {
    const o = this.o;
    const N = o.frames.length;
    let band = this.bands[c]!.subarray(0, N * w.rows * o.width);
    if (o.premask) {
      const t = performance.now();
      await this.runStack(stackArgs(o, c, band, w.rows, 'median', this.median!, this.scratchRejected, this.scratch));
      const t1 = performance.now();
      band = await premaskHost(o, c, w, band, this.median!, this.mask!, this.premaskRejected[c]!, this.premaskCounts[c]!, this.pool);
      const t2 = performance.now();
      timings.premask_median += t1 - t;
      timings.premask_mask += t2 - t1;
      timings.premask += t2 - t;
    }
    const t = performance.now();
    const mean = this.mean.subarray(0, w.ownedRows * o.width);
    await this.runStack(stackArgs(o, c, band, w.ownedRows, o.rejection.method, mean, this.rejected[c]!, this.counts[c]!));
    timings.stack += performance.now() - t;
    return mean.slice();
  }

  async finish(totals: EngineTotals): Promise<void> {
    const N = this.o.frames.length;
    for (let c = 0; c < this.o.channels; c++) {
      const k = this.rejected[c]!;
      const p = this.premaskRejected[c]!;
      let kernelRejected = 0;
      for (let i = 0; i < 2 * N; i++) {
        totals.rejected[c]![i] = k[i]! + p[i]!;
        kernelRejected += k[i]!;
      }
      const masked = Number(this.premaskCounts[c]![1]!);
      totals.premasked[c] = masked;
      totals.empty[c] = Number(this.counts[c]![1]!);
      totals.validSamples[c] = Number(this.counts[c]![0]!) + kernelRejected + masked;
    }
  }

  dispose(): void {}
}

class DeviceStore implements SlotStore {
  private readonly slots: GPUBuffer[];
  private readonly sources: GPUBuffer[];
  private readonly mosaic: GPUBuffer | null;
  private readonly debayered: GPUBuffer[];
  private readonly warpOut: GPUBuffer;
  private readonly mean: GPUBuffer;
  private readonly count: GPUBuffer;
  /** Per channel: the stack kernel's tallies (2N), then one scratch set for the median pass. */
  private readonly rejected: GPUBuffer[];
  /** Device pre-mask: mask bytes, the compacted owned rows of one channel, per-channel tallies (2N). */
  private readonly mask: GPUBuffer | null;
  private readonly compact: GPUBuffer | null;
  private readonly premaskTallies: GPUBuffer[];
  /**
   * Host pre-mask: a chunk of one channel's slots (chunkRows owned rows and the growth halo of
   * every frame) and its mask, the channel's median; per-channel tallies and counts. The band
   * is masked chunk by chunk, so the host never holds a copy of the whole band beside the
   * device's (on a software adapter both are host memory: the copy was ~60 MB at 30 frames ×
   * 2048 px × 250 rows), except after an index-list overflow (fullBand, allocated on demand).
   */
  private readonly hostBand: Float32Array | null;
  private readonly hostMask: Uint8Array | null;
  private readonly chunkRows: number;
  private fullBand: { band: Float32Array; mask: Uint8Array } | null = null;
  private readonly hostMedian: Float32Array | null;
  private readonly hostPremaskRejected: Uint32Array[];
  private readonly hostPremaskCounts: BigUint64Array[];
  /**
   * Host pre-mask with the stack on the device: the masked samples' slot indices (host, filled by
   * the workers, and device copy) so only those are NaN'd on the device and the stack reads the
   * slots in place; capacity 1/32 of a band's owned samples (typically ~0.5 % are masked), more
   * and the whole band is uploaded instead.
   */
  private readonly nanIndex: Uint32Array | null;
  private readonly nanCount: Uint32Array | null;
  private readonly nanIndexBuffer: GPUBuffer | null;
  private readonly nan: Float32Array;
  private readonly held: GPUBuffer[] = [];
  private readonly survivors: number[];
  /** Host side: a frame's warped planes when the warp runs on the host. */
  private readonly hostWarp: Float32Array | null;
  private readonly source: HostScratch;
  private readonly hostMean: Float32Array;
  private readonly hostCount: Uint32Array;

  constructor(
    private readonly o: EngineOptions,
    private readonly ctx: GpuContext,
    private readonly pool: WorkerPool | null,
  ) {
    const W = o.width;
    const N = o.frames.length;
    const C = o.channels;
    const sh = pool !== null;
    this.source = new HostScratch(o, sh);
    this.hostMean = new Float32Array(o.maxWorkRows * W);
    this.hostCount = new Uint32Array(o.maxWorkRows * W);
    const take = (bytes: number, label: string) => {
      const b = ctx.storage(Math.max(bytes, 4), label);
      this.held.push(b);
      return b;
    };
    const zeroed = (n: number, label: string) => {
      const b = take(4 * n, label);
      ctx.write(b, new Uint32Array(n));
      return b;
    };
    this.slots = Array.from({ length: C }, (_, c) => take(N * o.maxWorkRows * W * 4, `stack slots ${c}`));
    this.mean = take(o.maxWorkRows * W * 4, 'stack mean');
    this.count = take(o.maxWorkRows * W * 4, 'stack count');
    this.rejected = Array.from({ length: C + 1 }, (_, c) => zeroed(2 * N, `stack rejected ${c}`));
    const onDevice = o.premask?.onDevice === true;
    const onHost = o.premask !== null && !onDevice;
    this.mask = onDevice ? take(premaskMaskBytes(W, o.maxWorkRows, N), 'premask mask') : null;
    this.compact = onDevice ? take(N * o.maxOwnedRows * W * 4, 'premask compact') : null;
    this.premaskTallies = onDevice ? Array.from({ length: C }, (_, c) => zeroed(2 * N, `premask tallies ${c}`)) : [];
    const f32 = (n: number) => (sh ? sharedFloat32(n) : new Float32Array(n));
    this.chunkRows = Math.min(o.maxOwnedRows, o.premask?.chunkRows ?? premaskChunkRows(N, W));
    const chunkWorkRows = Math.min(o.maxWorkRows, this.chunkRows + 2 * PREMASK_GROW);
    this.hostBand = onHost ? f32(N * chunkWorkRows * W) : null;
    this.hostMask = onHost ? sharedU8(N * chunkWorkRows * W, sh) : null;
    this.hostMedian = onHost ? f32(o.maxWorkRows * W) : null;
    this.hostPremaskRejected = Array.from({ length: C }, () => sharedU32(2 * N, sh));
    this.hostPremaskCounts = Array.from({ length: C }, () => sharedU64(2, sh));
    const nanCapacity = onHost ? (o.premask?.indexCapacity ?? nanIndexCapacity(N, o.maxOwnedRows, W)) : 0;
    this.nanIndex = onHost ? sharedU32(nanCapacity, sh) : null;
    this.nanCount = onHost ? sharedU32(1, sh) : null;
    this.nanIndexBuffer = onHost ? take(4 * nanCapacity, 'premask nan indices') : null;
    this.survivors = new Array(C).fill(0);
    this.nan = new Float32Array(o.maxWorkRows * W).fill(NaN);
    if (o.gpu.warp) {
      this.warpOut = take(o.maxWorkRows * W * 4, 'warp out');
      const deviceDebayer = o.gpu.debayer !== null && C === 3;
      this.mosaic = deviceDebayer ? take(o.maxReadRows * W * 4, 'mosaic band') : null;
      this.debayered = deviceDebayer ? Array.from({ length: 3 }, (_, c) => take(o.maxSourceRows * W * 4, `debayered ${c}`)) : [];
      this.sources = deviceDebayer ? [] : Array.from({ length: C }, (_, c) => take(o.maxSourceRows * W * 4, `source plane ${c}`));
      this.hostWarp = null;
    } else {
      this.warpOut = take(4, 'unused');
      this.mosaic = null;
      this.debayered = [];
      this.sources = [];
      this.hostWarp = sh ? sharedFloat32(C * o.maxWorkRows * W) : new Float32Array(C * o.maxWorkRows * W);
    }
  }

  async putEmpty(f: StackFrame, w: Work): Promise<void> {
    const plane = w.rows * this.o.width;
    for (const s of this.slots) this.ctx.write(s, this.nan.subarray(0, plane), f.slot * plane * 4);
  }

  async putFrame(f: StackFrame, w: Work, raw: RawRead, data: Float32Array, timings: Timings): Promise<void> {
    const o = this.o;
    const ctx = this.ctx;
    const W = o.width;
    const plane = w.rows * W;
    if (!o.gpu.warp) {
      // Warp on the host (e.g. bilinear on a software adapter), upload the warped slot.
      const src = await hostSource(o, f, raw, data, timings, this.pool, this.source);
      const t = performance.now();
      const views = Array.from({ length: o.channels }, (_, c) => this.hostWarp!.subarray(c * plane, (c + 1) * plane));
      await warpOnHost(o, f, w, src, views, 0, this.pool);
      for (let c = 0; c < o.channels; c++) ctx.write(this.slots[c]!, views[c]!, f.slot * plane * 4);
      timings.warp += performance.now() - t;
      return;
    }
    const encoder = ctx.device.createCommandEncoder({ label: 'stacking frame' });
    let planes: GPUBuffer[];
    if (this.mosaic) {
      const t = performance.now();
      ctx.write(this.mosaic, data);
      await debayerBilinearResident(
        ctx,
        this.mosaic,
        { r: this.debayered[0]!, g: this.debayered[1]!, b: this.debayered[2]! },
        { width: W, height: o.height, pattern: f.pattern!, y0: raw.srcY0, rows: raw.srcRows, readY0: raw.readY0, readRows: data.length / W },
        encoder,
      );
      timings.debayer += performance.now() - t;
      planes = this.debayered;
    } else {
      const src = await hostSource(o, f, raw, data, timings, this.pool, this.source, false);
      for (let c = 0; c < o.channels; c++) ctx.write(this.sources[c]!, src.planes[c]!);
      planes = this.sources;
    }
    const t = performance.now();
    const params = warpParams(o, f, w, raw);
    // Straight into the frame's slot where its offset meets the binding alignment (e.g. any
    // width that is a multiple of 64), else through warpOut and a copy.
    const offset = f.slot * plane * 4;
    const direct = offset % ctx.limits.minStorageBufferOffsetAlignment === 0;
    for (let c = 0; c < o.channels; c++) {
      const out = direct ? { buffer: this.slots[c]!, offset, size: plane * 4 } : this.warpOut;
      if (o.kernel === 'lanczos3') await warpLanczos3Resident(ctx, planes[c]!, out, params, encoder);
      else await warpBilinearResident(ctx, planes[c]!, out, params, encoder);
      if (!direct) encoder.copyBufferToBuffer(this.warpOut, 0, this.slots[c]!, offset, plane * 4);
    }
    ctx.submit(encoder);
    timings.warp += performance.now() - t;
  }

  /**
   * Host pre-mask of channel `c`'s work band (`src`, its slots on the device), chunk by chunk:
   * each chunk's owned rows with GROW halo rows (all a pixel's mask depends on: seeds are per
   * sample, growth reaches GROW px) of every frame come back, are flagged and applied, and the
   * masked samples' indices (in the work band's layout) join nanIndex; the device band is left
   * untouched until every chunk is read. When the indices overflow nanIndex, the tallies are
   * restored and the whole band is masked on the host at once (fullBand, uploaded by the
   * caller). Returns the ms spent reading back.
   */
  private async premaskChunks(c: number, w: Work, src: GPUBuffer, median: Float32Array): Promise<number> {
    const o = this.o;
    const N = o.frames.length;
    const W = o.width;
    const rejected = this.hostPremaskRejected[c]!;
    const counts = this.hostPremaskCounts[c]!;
    const savedRejected = rejected.slice();
    const savedCounts = counts.slice();
    const nan = { index: this.nanIndex!, count: this.nanCount!, of: { plane: w.rows * W, row0: 0 } };
    this.nanCount![0] = 0;
    let transfer = 0;
    const end = w.ownedY0 + w.ownedRows;
    const chunks = Math.ceil(w.ownedRows / this.chunkRows);
    const step = Math.ceil(w.ownedRows / chunks);
    for (let a = w.ownedY0; a < end && this.nanCount![0]! <= this.nanIndex!.length; a += step) {
      const b = Math.min(end, a + step);
      const r0 = Math.max(0, a - PREMASK_GROW);
      const rows = Math.min(w.rows, b + PREMASK_GROW) - r0;
      const band = this.hostBand!.subarray(0, N * rows * W);
      const t = performance.now();
      await this.ctx.readRegionsInto(
        src,
        o.frames.map((_, f) => ({ offset: (f * w.rows + r0) * W * 4, bytes: rows * W * 4 })),
        band,
        this.hostBand!.byteLength,
      );
      transfer += performance.now() - t;
      nan.of.row0 = r0;
      const chunk: Work = { y0: w.y0 + r0, rows, ownedY0: a - r0, ownedRows: b - a };
      await premaskHost(o, c, chunk, band, median.subarray(r0 * W, (r0 + rows) * W), this.hostMask!, rejected, counts, this.pool, nan);
    }
    if (this.nanCount![0]! <= this.nanIndex!.length) return transfer;
    // Overflow: the device band is still unmasked; mask all of it on the host.
    rejected.set(savedRejected);
    counts.set(savedCounts);
    const sh = this.pool !== null;
    this.fullBand ??= { band: sh ? sharedFloat32(N * o.maxWorkRows * W) : new Float32Array(N * o.maxWorkRows * W), mask: sharedU8(N * o.maxWorkRows * W, sh) };
    const band = this.fullBand.band.subarray(0, N * w.rows * W);
    const t = performance.now();
    await this.ctx.readInto(src, band);
    transfer += performance.now() - t;
    this.nanCount![0] = 0;
    await premaskHost(o, c, w, band, median, this.fullBand.mask, rejected, counts, this.pool, { index: this.nanIndex!, count: this.nanCount! });
    // Keep nanCount over capacity so the caller uploads the band even if this pass listed fewer.
    this.nanCount![0] = Math.max(this.nanCount![0]!, this.nanIndex!.length + 1);
    return transfer;
  }

  /** Encodes a stack dispatch of `rows` rows from `src` (frames × rows × width) into mean/count. */
  private async stack(c: number, src: GPUBuffer, rows: number, method: StackMethod, rejected: GPUBuffer, encoder: GPUCommandEncoder, layout: SrcLayout = { rows, row0: 0 }): Promise<void> {
    const o = this.o;
    const N = o.frames.length;
    const plane = rows * o.width;
    await stackResident(
      this.ctx,
      { buffer: src, offset: 0, size: N * layout.rows * o.width * 4 },
      { buffer: this.mean, offset: 0, size: plane * 4 },
      { buffer: this.count, offset: 0, size: plane * 4 },
      rejected,
      {
        width: o.width,
        rows,
        frames: N,
        ...o.rejection,
        method,
        scale: o.frames.map((f) => f.scale[c]!),
        offset: o.frames.map((f) => f.offset[c]!),
        weight: o.frames.map((f) => f.weight),
      },
      encoder,
      { layout },
    );
  }

  async stackChannel(c: number, w: Work, totals: EngineTotals, timings: Timings): Promise<Float32Array> {
    const o = this.o;
    const ctx = this.ctx;
    const N = o.frames.length;
    const W = o.width;
    const plane = w.ownedRows * W;
    // One chain on the device: [median pass → pre-mask (flag, grow, apply into the compact
    // buffer)] → stack → mean and count back to the host. (Two submits only to time the parts;
    // the data stays on the device.)
    let encoder = ctx.device.createCommandEncoder({ label: 'stacking pre-mask' });
    let src = this.slots[c]!;
    // Rows of `src` per frame and the first owned one: the slots' work rows, or the compact
    // buffer's owned rows (device pre-mask).
    let layout: SrcLayout = { rows: w.rows, row0: w.ownedY0 };
    if (o.premask?.onDevice) {
      const pm = o.premask;
      const t0 = performance.now();
      await this.stack(c, src, w.rows, 'median', this.rejected[o.channels]!, encoder);
      const frame = new Float32Array(4 * N);
      o.frames.forEach((f, i) => {
        const sigma = pm.sigma[f.slot]![c]!;
        const ok = sigma > 0;
        frame.set([f.scale[c]!, f.offset[c]!, ok ? o.rejection.high * sigma : Infinity, ok ? o.rejection.low * sigma : Infinity], 4 * i);
      });
      await premaskResident(
        ctx,
        { buffer: src, offset: 0, size: N * w.rows * W * 4 },
        { buffer: this.mean, offset: 0, size: w.rows * W * 4 },
        this.mask!,
        { buffer: this.compact!, offset: 0, size: N * plane * 4 },
        this.premaskTallies[c]!,
        { width: W, rows: w.rows, frames: N, ownedY0: w.ownedY0, ownedRows: w.ownedRows, level: pm.level[c]!, alpha: PREMASK_ALPHA, minFraction: o.rejection.minFraction, frame },
        encoder,
      );
      src = this.compact!;
      layout = { rows: w.ownedRows, row0: 0 };
      ctx.submit(encoder);
      await ctx.done();
      timings.premask += performance.now() - t0;
      encoder = ctx.device.createCommandEncoder({ label: 'stacking band' });
    } else if (o.premask) {
      // Median pass on the device, then the channel's slots come to the host for the mask; the
      // masked samples (their slot indices) go back and are NaN'd on the device, and the stack
      // reads the owned rows of the slots in place (no compaction, no re-upload of the band).
      const t0 = performance.now();
      await this.stack(c, src, w.rows, 'median', this.rejected[o.channels]!, encoder);
      ctx.submit(encoder);
      await ctx.done();
      const t1 = performance.now();
      const median = this.hostMedian!.subarray(0, w.rows * W);
      await ctx.readInto(this.mean, median);
      const t2 = performance.now();
      const transfer = await this.premaskChunks(c, w, src, median);
      const t3 = performance.now();
      encoder = ctx.device.createCommandEncoder({ label: 'stacking band' });
      const masked = this.nanCount![0]!;
      if (masked <= this.nanIndex!.length) {
        ctx.write(this.nanIndexBuffer!, this.nanIndex!.subarray(0, masked));
        await scatterNanResident(ctx, this.nanIndexBuffer!, masked, src, N * w.rows * W, encoder);
      } else {
        ctx.write(src, this.fullBand!.band.subarray(0, N * w.rows * W)); // too many to list: the whole (pre-masked) work band
      }
      const t4s = performance.now();
      timings.premask_median += t1 - t0;
      timings.premask_transfer += t2 - t1 + transfer + (t4s - t3);
      timings.premask_mask += t3 - t2 - transfer;
      timings.premask += t4s - t0;
    }
    const t = performance.now();
    await this.stack(c, src, w.ownedRows, o.rejection.method, this.rejected[c]!, encoder, layout);
    ctx.submit(encoder);
    const mean = this.hostMean.subarray(0, plane);
    const count = this.hostCount.subarray(0, plane);
    await ctx.readManyInto([
      { buffer: this.mean, target: mean },
      { buffer: this.count, target: count },
    ]);
    let empty = 0;
    let survivors = 0;
    for (let i = 0; i < plane; i++) {
      const k = count[i]!;
      if (k === 0) empty++;
      survivors += k;
    }
    totals.empty[c]! += empty;
    this.survivors[c]! += survivors;
    timings.stack += performance.now() - t;
    return mean.slice();
  }

  async finish(totals: EngineTotals): Promise<void> {
    const N = this.o.frames.length;
    for (let c = 0; c < this.o.channels; c++) {
      const k = new Uint32Array(await this.ctx.readback(this.rejected[c]!, 2 * N * 4));
      const p = this.o.premask?.onDevice ? new Uint32Array(await this.ctx.readback(this.premaskTallies[c]!, 2 * N * 4)) : this.hostPremaskRejected[c]!;
      let kernelRejected = 0;
      let masked = 0;
      for (let i = 0; i < 2 * N; i++) {
        totals.rejected[c]![i] = k[i]! + p[i]!;
        kernelRejected += k[i]!;
        masked += p[i]!;
      }
      totals.premasked[c] = masked;
      totals.validSamples[c] = this.survivors[c]! + kernelRejected + masked;
    }
  }

  dispose(): void {
    for (const b of this.held.splice(0)) this.ctx.pool.release(b);
  }
}
