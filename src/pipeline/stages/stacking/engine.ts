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
//   (worker pool); superpixel cells always on the host. Beside a device warp the pool debayers
//   frame i + 1 while the device warps frame i (SlotStore.prepare; llvmpipe runs the warp inside
//   submit, so the pool and the device otherwise took turns);
// - warp: device when gpuFor('warp_<kernel>'), else TypeScript rows on the worker pool;
// - stack and the pre-mask's median pass: device when gpuFor('stack') and the frame count fits
//   one dispatch, else TypeScript rows on the worker pool;
// - pre-mask flag/apply: WGSL on a hardware GPU, TypeScript (worker pool) otherwise.
// DeviceStore (device-store.ts) keeps a band's slots in device buffers: source planes go up once per frame,
// (debayer →) warp → copy into the slot → (median → pre-mask →) stack is a chain of device work,
// and only the band's mean and count come back. On a software adapter the pre-mask's flag/apply
// run in TypeScript instead (faster there, measured): a channel's slots come to the host, and
// only the masked samples' indices go back (NaN'd by a scatter kernel), the stack then reading
// the owned rows of the slots in place. The next band's first reads start while a band is
// pre-masked and stacked. HostStore (host-store.ts) keeps the slots in shared host memory; what
// both share (the host debayer and warp, the host pre-mask) is slots.ts.
// Worker-pool runs over the band's slots, mask and tallies are `reused` (allocated once per
// phase, so they do not force the workers' full collections; the run collects after the phase).
//
// Invariants: each output pixel depends only on samples within the warp's and the pre-mask's
// reach, all inside the band's work rows, so any band plan gives the same image; tallies count
// owned rows only, so they are exact across bands; every device buffer is released by dispose()
// (called from the phase's finalize, also after an error or a cancel); memory stays within the
// band plan (planStackBands).

import type { GridSurface } from '../../../algorithms/local-normalization.js';
import type { StackMethod } from '../../../cpu/stack.js';
import { sourceRowsFor, type WarpKernel } from '../../../cpu/warp.js';
import { sharedFloat32, sharedPool, type WorkerPool } from '../../../cpu/worker-pool.js';
import type { GpuContext } from '../../../gpu/context.js';
import type { Band } from '../../../gpu/band-planner.js';
import { cosmeticCorrect } from './cosmetic.js';
import { DeviceStore } from './device-store.js';
import { HostStore } from './host-store.js';
import type { LnPending, LnTables } from './local-norm.js';
import type { ReaderCache } from './readers.js';
import type { StackFrame } from './plan.js';
import type { PremaskChunks, RawRead, SlotStore, Source, Work } from './slots.js';
import type { WeightField } from './weightfield.js';

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
  /**
   * The storage-binding size the device stack kernels' source windows must fit (default: the
   * adapter's; tests force several frame ranges with a smaller one, as the plan was made for).
   */
  maxBindingBytes?: number;
  kernel: WarpKernel;
  readHalo: number;
  rejection: { method: StackMethod; low: number; high: number; maxIters: number; minFraction: number };
  /**
   * Pre-mask parameters (null: off). `sigma[slot][channel]` is the normalised frame noise.
   * `onDevice`: run it as WGSL on the device (a hardware GPU); false runs it in TypeScript, with
   * one round trip of a channel's slots when the stack runs on the device (on llvmpipe the
   * branchy WGSL is ~7× slower than that round trip plus the TypeScript, measured).
   * `hostMedianFrames`: that host pre-mask takes its median on the host above this frame count
   * (default RESIDENT_MAX_FRAMES, device-store.ts hostMedian).
   */
  premask: { sigma: number[][]; level: number[]; onDevice: boolean; indexCapacity?: number | null; chunkRows?: number | null; chunkCols?: number | null; hostMedianFrames?: number | null } | null;
  perFrameCosmetic: { sigma: number } | null;
  /**
   * Local normalization (local-norm.ts; null: off): each slot sample is written as a·v + b with
   * the global normalization folded in, so the pre-mask and the stack then use scale 1, offset 0.
   */
  ln: LnTables | null;
  /**
   * Local normalization's fits still to run (LnPending): frame i's before the band loop first
   * stores it, so the fits overlap the device's warps of the frames before; null: all done.
   */
  lnPending?: LnPending | null;
  /** Noise-model bounds of sigma and winsor (null: rejection.bounds sample, the samples' own spread). */
  noiseModel: NoiseModel | null;
  workers: number;
  /** Contexts per kernel (null = TypeScript). */
  gpu: { debayer: GpuContext | null; warp: GpuContext | null; stack: GpuContext | null };
  readers: ReaderCache;
  /** Per-pixel frame weights (weightfield.ts) instead of StackFrame.weight; needs gpu.stack null. */
  weightField?: WeightField | null;
  /** Where the weight-field stack runs (null: TypeScript on the worker pool). */
  weightFieldGpu?: GpuContext | null;
}

/** The noise model of the rejection (src/cpu/reject-noise.ts), per stacked frame. */
export interface NoiseModel {
  /** Per slot, per channel: normalised sky noise σ_f (≤ 0 or NaN: never rejected). */
  sigma: number[][];
  /** Per slot, per channel: shot-noise variance per unit of normalised signal K_f. */
  poisson: number[][];
  /** Per slot: seeing tolerance α_f. */
  seeing: number[];
  /** Per channel: the reference's sky (normalised units) on a grid. */
  background: GridSurface[];
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
  /** Local normalization as a pass of its own (device warp); on the host it is inside warp. */
  ln: number;
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

function pathOf(ctx: GpuContext | null, workers: number): KernelPath {
  if (ctx) return ctx.info.kind === 'gpu' ? 'gpu' : 'software-gpu';
  return workers > 1 ? 'typescript-workers' : 'typescript';
}

const workOf = (band: Band): Work => ({ y0: band.readY0, rows: band.readRows, ownedY0: band.y0 - band.readY0, ownedRows: band.rows });

export class BandEngine {
  readonly timings: Timings = { read_wait: 0, cosmetic: 0, debayer: 0, warp: 0, premask: 0, premask_median: 0, premask_transfer: 0, premask_mask: 0, ln: 0, stack: 0 };
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
    if (o.weightField && o.gpu.stack) throw new Error('a weight field stacks on the host: gpu.stack must be null');
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
      local_normalization: o.ln ? (o.gpu.stack && o.gpu.warp ? pathOf(o.gpu.stack, o.workers) : o.gpu.warp ? 'typescript' : host) : 'off',
      // The weight-field stack (sample or noise-model bounds) runs on weightFieldGpu where set.
      stack: o.weightField ? pathOf(o.weightFieldGpu ?? null, o.workers) : pathOf(o.gpu.stack, o.workers),
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
    // Shared memory when a pool's workers will read the rows (debayer, host warp): no copy of
    // every read into a shared buffer on the main thread.
    const n = this.o.maxReadRows * this.o.frameWidth;
    const target = this.rowBuffers.pop() ?? (this.pool ? sharedFloat32(n) : new Float32Array(n));
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
    // Reads start in frame order, each once: a consumed read leaves the map, so scanning from
    // frame 0 for absent entries started every consumed frame's read again, and those duplicate
    // reads (one frame slice each, never consumed) stayed in the map until the band ended:
    // ~0.8 GB per band at 1000 frames of 1024 px, beside the budget, and twice the reads.
    let nextRead = 0;
    const prefetch = (upTo: number) => {
      for (; nextRead <= upTo && nextRead < N; nextRead++) if (!reads.has(nextRead)) reads.set(nextRead, this.startRead(o.frames[nextRead]!, w));
    };
    // A frame the store prepares ahead (SlotStore.prepare: its host debayer on the pool) is put
    // after the next frame's preparation has started, so the two overlap; its read's buffer is
    // recycled once it is put.
    let held: { f: StackFrame; raw: RawRead; data: Float32Array; ready: Promise<Source> } | null = null;
    const putHeld = async () => {
      if (!held) return;
      const h = held;
      held = null;
      await this.store.putFrame(h.f, w, h.raw, h.data, this.timings, h.ready);
      this.rowBuffers.push(h.raw.buffer);
    };
    for (let i = 0; i < N; i++) {
      between(i);
      prefetch(i + ahead - 1);
      if (o.lnPending) await o.lnPending.upTo(i);
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
      const ready = this.store.prepare?.(f, w, raw, data) ?? null;
      if (ready) {
        // Keep a failure of this preparation from going unhandled while the previous frame is put.
        ready.catch(() => undefined);
        await putHeld();
        held = { f, raw, data, ready };
        continue;
      }
      await this.store.putFrame(f, w, raw, data, this.timings);
      this.rowBuffers.push(raw.buffer);
    }
    await putHeld();
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

  /** The host pre-mask's chunk shape beside a device stack (diagnostics); null: none, or whole bands. */
  premaskChunkShape(): PremaskChunks | null {
    return this.store.premaskChunkShape?.() ?? null;
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
