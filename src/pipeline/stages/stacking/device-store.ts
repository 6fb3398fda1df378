// The stacking engine's slots in device buffers: a frame's source planes go up once, (debayer →)
// warp → slot → (median → pre-mask →) stack is a chain of device work, and only the band's
// mean and count come back (engine.ts head comment). On a software adapter the pre-mask's
// flag/apply run on the host in row chunks, and only the masked samples' indices go back.
// Local normalization: a host warp applies it as it writes each slot row, the device Lanczos
// warp as it stores each sample (the coefficient tables go up once); after a device bilinear
// warp one ln_apply dispatch per channel normalises the band's slots in place. Sigma and winsor with the noise model end in reject_noise
// instead of the stack kernel, started from the median pass (copied to `centre` on the device)
// with the reference's sky of the owned rows (`background`, written per band and channel).
// The host pre-mask's median: the device's bisection while the stack kernel holds a pixel's
// samples in registers (frames <= RESIDENT_MAX_FRAMES), else the host's selection on the rows
// each chunk brings back anyway (hostMedian below): the same exact median, but beyond that
// frame count the kernel re-reads every sample from memory in each of its 32 steps.

import type { StackMethod } from '../../../cpu/stack.js';
import { sharedFloat32, type WorkerPool } from '../../../cpu/worker-pool.js';
import type { GpuContext } from '../../../gpu/context.js';
import { debayerBilinearResident } from '../../../gpu/kernels/debayer.js';
import { lnApplyResident } from '../../../gpu/kernels/ln-apply.js';
import { packRejectFrames, rejectNoiseResident } from '../../../gpu/kernels/reject-noise.js';
import { packPremaskNoiseFrames, premaskMaskBytes, premaskResident, scatterNanListed } from '../../../gpu/kernels/premask.js';
import { gatherWindow } from '../../../cpu/gather-window.js';
import { gatherWindowResident } from '../../../gpu/kernels/gather-window.js';
import { RESIDENT_MAX_FRAMES, stackResident, type SrcLayout } from '../../../gpu/kernels/stack.js';
import { lnTableBytes, warpBilinearResident, warpLanczos3Resident, type WarpLn } from '../../../gpu/kernels/warp.js';
import { ALPHA as PREMASK_ALPHA, GROW as PREMASK_GROW } from '../../../cpu/premask.js';
import type { EngineOptions, EngineTotals, Timings } from './engine.js';
import type { StackFrame } from './plan.js';
import { STACK_ROWS, stackRows } from './row-kernels.js';
import { HostScratch, hostSource, hostSourceSets, ScreenScratch, stackArgs, nanIndexCapacity, frameNorm, noiseParams, noiseRejects, premaskChunking, premaskHost, PREMASK_WINDOW_HALO, sharedU32, skyRows, stackParams, sharedU64, sharedU8, warpOnHost, warpParams, type PremaskChunks, type RawRead, type SlotStore, type Source, type Work } from './slots.js';

/** Owned columns per window: windows of at most `cols` columns, equal but for the last, whole vec4s. */
const windowStep = (width: number, cols: number): number => Math.ceil(Math.ceil(width / Math.ceil(width / cols)) / 4) * 4;

export class DeviceStore implements SlotStore {
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
  /** Owned rows per row chunk, or (null) column windows of `windowCols` owned columns (premaskChunking). */
  private readonly chunkRows: number | null;
  private readonly windowCols: number;
  /** Column windows: the packed window on the device, and its median and sky rows on the host. */
  private readonly windowBuffer: GPUBuffer | null;
  private readonly windowMedian: Float32Array | null;
  private readonly windowSky: Float32Array | null;
  private fullBand: { band: Float32Array; mask: Uint8Array } | null = null;
  private readonly hostMedianRows: Float32Array | null;
  private readonly screen: ScreenScratch;
  private readonly hostPremaskRejected: Uint32Array[];
  /**
   * Host pre-mask of more frames than the stack kernel holds in registers: the median is taken
   * on the host, row by row as the chunks come back (1000 frames of 1024 px on llvmpipe: the
   * device's median pass was ~45 % of STACKING's band loop, bench/RESULTS.md "band22"); the
   * tallies of that median stack (unused) go to medianRejected/medianCounts.
   */
  private readonly hostMedian: boolean;
  private readonly medianRejected: Uint32Array;
  private readonly medianCounts: BigUint64Array;
  /** ms the host median took (premask_median). */
  private medianMs = 0;
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
  /** The second host source set (hostSourceSets): frames prepared ahead alternate between the two. */
  private readonly sourceAhead: HostScratch | null;
  private aheadNext = 0;
  private readonly hostMean: Float32Array;
  private readonly hostCount: Uint32Array;
  /** Per channel: the local-normalization coefficient table (device warp only; else the host warp applies it). */
  private readonly lnTables: GPUBuffer[];
  /** Per channel: the buffer the Lanczos warp writes the current frame's local-normalization table into (WarpLn). */
  private readonly lnWarpTables: GPUBuffer[];
  /** Noise model: per channel the reject_noise frame table; the centre and sky of the owned rows; host sky rows. */
  private readonly rejectFrames: GPUBuffer[];
  private readonly centre: GPUBuffer | null;
  private readonly background: GPUBuffer | null;
  private readonly sky: Float32Array | null;
  /** Device pre-mask with the noise model: the sky under each work-band pixel. */
  private readonly premaskSky: GPUBuffer | null;

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
    const sets = hostSourceSets({ channels: C, workers: pool ? pool.size : 1, deviceStack: true, deviceWarp: o.gpu.warp !== null, deviceDebayer: o.gpu.debayer !== null });
    this.sourceAhead = sets === 2 ? new HostScratch(o, sh) : null;
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
    const chunking = premaskChunking(N, W, o.maxWorkRows, o.maxOwnedRows, o.premask?.chunkRows, o.premask?.chunkCols);
    this.chunkRows = chunking.rows;
    this.windowCols = chunking.cols ?? W;
    // Samples per frame of a chunk: its rows of every column, or every work row of a window's columns.
    const chunkPlane = chunking.rows !== null ? Math.min(o.maxWorkRows, chunking.rows + 2 * PREMASK_GROW) * W : o.maxWorkRows * Math.min(W, windowStep(W, chunking.cols) + 2 * PREMASK_WINDOW_HALO);
    this.hostBand = onHost ? f32(N * chunkPlane) : null;
    this.hostMask = onHost ? sharedU8(N * chunkPlane, sh) : null;
    const windows = onHost && chunking.rows === null;
    this.windowBuffer = windows ? take(4 * N * chunkPlane, 'premask window') : null;
    this.windowMedian = windows ? f32(chunkPlane) : null;
    this.windowSky = windows && o.noiseModel !== null ? f32(chunkPlane) : null;
    this.hostMedianRows = onHost ? f32(o.maxWorkRows * W) : null;
    this.screen = new ScreenScratch(sh);
    this.hostMedian = onHost && N > (o.premask?.hostMedianFrames ?? RESIDENT_MAX_FRAMES);
    this.medianRejected = sharedU32(this.hostMedian ? 2 * N : 0, sh);
    this.medianCounts = sharedU64(this.hostMedian ? 2 : 0, sh);
    this.hostPremaskRejected = Array.from({ length: C }, () => sharedU32(2 * N, sh));
    this.hostPremaskCounts = Array.from({ length: C }, () => sharedU64(2, sh));
    const nanCapacity = onHost ? (o.premask?.indexCapacity ?? nanIndexCapacity(N, o.maxOwnedRows, W)) : 0;
    this.nanIndex = onHost ? sharedU32(nanCapacity, sh) : null;
    this.nanCount = onHost ? sharedU32(1, sh) : null;
    this.nanIndexBuffer = onHost ? take(4 * nanCapacity, 'premask nan indices') : null;
    this.survivors = new Array(C).fill(0);
    this.nan = new Float32Array(o.maxWorkRows * W).fill(NaN);
    const upload = (data: Float32Array, label: string) => {
      const b = take(data.byteLength, label);
      ctx.write(b, data);
      return b;
    };
    // Local normalization after a device warp: per channel the whole coefficient table (bilinear:
    // a pass of its own), or a buffer the Lanczos warp rewrites with the frame's table for its
    // kernel (fused into its store: rows for the 2-D kernel, column lines for the separable pass).
    const lnDevice = o.ln !== null && o.gpu.warp !== null;
    this.lnTables = lnDevice && o.kernel !== 'lanczos3' ? o.ln!.coefficients.map((t, c) => upload(t, `ln coefficients ${c}`)) : [];
    this.lnWarpTables = lnDevice && o.kernel === 'lanczos3' ? Array.from({ length: C }, (_, c) => take(lnTableBytes(o.ln!.grid, o.maxWorkRows, o.width), `ln table ${c}`)) : [];
    const nm = o.noiseModel !== null;
    this.rejectFrames = nm ? Array.from({ length: C }, (_, c) => upload(packRejectFrames({ ...stackParams(o, c, 1, 'sigma'), method: 'sigma', ...noiseParams(o, c) }), `reject frames ${c}`)) : [];
    this.centre = nm ? take(o.maxOwnedRows * W * 4, 'reject centre') : null;
    this.background = nm ? take(o.maxOwnedRows * W * 4, 'reject background') : null;
    this.sky = nm ? (sh ? sharedFloat32(o.maxWorkRows * W) : new Float32Array(o.maxWorkRows * W)) : null;
    this.premaskSky = nm && onDevice ? take(o.maxWorkRows * W * 4, 'premask sky') : null;
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

  /**
   * Frame f's host debayer (or superpixel cells) started on the worker pool into the next of the
   * two host source sets, for a putFrame that follows the previous frame's (whose warp then runs
   * on the device beside it); null where there is one set (hostSourceSets).
   */
  prepare(f: StackFrame, _w: Work, raw: RawRead, data: Float32Array): Promise<Source> | null {
    if (!this.sourceAhead) return null;
    const set = this.aheadNext === 0 ? this.source : this.sourceAhead;
    this.aheadNext ^= 1;
    // Its time is what putFrame waits for it (timings.debayer there), not its span beside the warp.
    return hostSource(this.o, f, raw, data, { debayer: 0 } as Timings, this.pool, set, false);
  }

  async putFrame(f: StackFrame, w: Work, raw: RawRead, data: Float32Array, timings: Timings, ready: Promise<Source> | null = null): Promise<void> {
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
      let src: Source;
      if (ready) {
        const t = performance.now();
        src = await ready;
        timings.debayer += performance.now() - t;
      } else src = await hostSource(o, f, raw, data, timings, this.pool, this.source, false);
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
      // Lanczos stores a·v + b straight away (local normalization fused into the warp), reading
      // the frame's model laid out for its kernel (a small table per frame and channel, written
      // by the warp into the channel's buffer).
      let ln: WarpLn | null = null;
      if (this.lnWarpTables.length > 0) {
        const n = 2 * o.ln!.nodes;
        ln = { table: this.lnWarpTables[c]!, grid: o.ln!.grid, coefficients: o.ln!.coefficients[c]!.subarray(f.slot * n, (f.slot + 1) * n) };
      }
      if (o.kernel === 'lanczos3') await warpLanczos3Resident(ctx, planes[c]!, out, params, encoder, { ln });
      else await warpBilinearResident(ctx, planes[c]!, out, params, encoder);
      if (!direct) encoder.copyBufferToBuffer(this.warpOut, 0, this.slots[c]!, offset, plane * 4);
    }
    ctx.submit(encoder);
    timings.warp += performance.now() - t;
  }

  /**
   * The host median (hostMedian) of channel `c` on rows [from, rows) of `band` (frames × rows ×
   * width, host memory) into `out` (rows × width): the stack's median on the worker pool, as
   * HostStore takes it.
   */
  private async medianRows(c: number, band: Float32Array, rows: number, out: Float32Array, from: number, width = this.o.width): Promise<void> {
    if (from >= rows) return;
    const t = performance.now();
    const args = { ...stackArgs(this.o, c, band, rows, 'median', out, this.medianRejected, this.medianCounts), width };
    if (this.pool) await this.pool.run(STACK_ROWS, args, from, rows, { minChunk: 4, reused: true });
    else stackRows(args, from, rows);
    this.medianMs += performance.now() - t;
  }

  /**
   * Host pre-mask of channel `c`'s work band (`src`, its slots on the device), chunk by chunk
   * (premaskChunking): each row chunk's owned rows with GROW halo rows, or each column window's
   * owned columns with GROW halo columns over every work row (all a pixel's mask depends on:
   * seeds are per sample, growth reaches GROW px), of every frame come back, are flagged and
   * applied, and the masked samples' indices (in the work band's layout) join nanIndex; the
   * device band is left untouched until every chunk is read. When the indices overflow
   * nanIndex, the tallies are restored and the whole band is masked on the host at once
   * (fullBand, uploaded by the caller). Returns the ms spent reading back.
   */
  private async premaskChunks(c: number, w: Work, src: GPUBuffer, median: Float32Array): Promise<number> {
    const rejected = this.hostPremaskRejected[c]!;
    const counts = this.hostPremaskCounts[c]!;
    const savedRejected = rejected.slice();
    const savedCounts = counts.slice();
    this.nanCount![0] = 0;
    const chunked = this.chunkRows !== null ? await this.premaskRowChunks(c, w, src, median, this.chunkRows) : await this.premaskWindows(c, w, src, median);
    if (this.nanCount![0]! <= this.nanIndex!.length) return chunked.transfer;
    // Overflow: the device band is still unmasked; mask all of it on the host.
    rejected.set(savedRejected);
    counts.set(savedCounts);
    const o = this.o;
    const N = o.frames.length;
    const W = o.width;
    const sh = this.pool !== null;
    this.fullBand ??= { band: sh ? sharedFloat32(N * o.maxWorkRows * W) : new Float32Array(N * o.maxWorkRows * W), mask: sharedU8(N * o.maxWorkRows * W, sh) };
    const band = this.fullBand.band.subarray(0, N * w.rows * W);
    const t = performance.now();
    await this.ctx.readInto(src, band);
    const transfer = chunked.transfer + performance.now() - t;
    this.nanCount![0] = 0;
    // The chunks above took the median of the work rows they covered from the same (still
    // unmasked) samples: only rows they did not reach are left.
    if (this.hostMedian && chunked.medianEnd < w.rows) await this.medianRows(c, band, w.rows, median, chunked.medianEnd);
    await premaskHost(o, c, w, band, median, this.fullBand.mask, rejected, counts, this.pool, { index: this.nanIndex!, count: this.nanCount! }, this.sky, this.screen);
    // Keep nanCount over capacity so the caller uploads the band even if this pass listed fewer.
    this.nanCount![0] = Math.max(this.nanCount![0]!, this.nanIndex!.length + 1);
    return transfer;
  }

  /** premaskChunks in row chunks of `chunkRows` owned rows; medianEnd: work rows whose host median is done. */
  private async premaskRowChunks(c: number, w: Work, src: GPUBuffer, median: Float32Array, chunkRows: number): Promise<{ transfer: number; medianEnd: number }> {
    const o = this.o;
    const N = o.frames.length;
    const W = o.width;
    const nan = { index: this.nanIndex!, count: this.nanCount!, of: { plane: w.rows * W, row0: 0 } };
    let transfer = 0;
    // Host median: work rows below `medianEnd` are done (chunks overlap by the growth halo).
    let medianEnd = 0;
    const end = w.ownedY0 + w.ownedRows;
    const chunks = Math.ceil(w.ownedRows / chunkRows);
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
      if (this.hostMedian) {
        await this.medianRows(c, band, rows, median.subarray(r0 * W, (r0 + rows) * W), Math.max(0, medianEnd - r0));
        medianEnd = r0 + rows;
      }
      await premaskHost(o, c, chunk, band, median.subarray(r0 * W, (r0 + rows) * W), this.hostMask!, this.hostPremaskRejected[c]!, this.hostPremaskCounts[c]!, this.pool, nan, this.sky, this.screen);
    }
    return { transfer, medianEnd };
  }

  /**
   * premaskChunks in column windows of `windowCols` owned columns (whole vec4s) and
   * PREMASK_WINDOW_HALO halo columns over all work rows, packed on
   * the device (gather_window) and read back whole. The host median of a window's columns goes
   * to `median` (the noise model's centre reads its owned rows): every work row is done once
   * all windows ran.
   */
  private async premaskWindows(c: number, w: Work, src: GPUBuffer, median: Float32Array): Promise<{ transfer: number; medianEnd: number }> {
    const o = this.o;
    const ctx = this.ctx;
    const N = o.frames.length;
    const W = o.width;
    const R = w.rows;
    const nan = { index: this.nanIndex!, count: this.nanCount!, of: { plane: R * W, row0: 0, col0: 0, width: W } };
    const sky = o.noiseModel && this.sky ? skyRows(o.noiseModel, c, w.y0, R, this.sky) : null;
    let transfer = 0;
    let done = 0;
    // One plane of the band's rows (median, sky): windows of it as of the slots.
    const rowsOf = { frames: 1, slotRows: R, width: W, y0: 0, rows: R };
    const step = windowStep(W, this.windowCols);
    for (let a = 0; a < W && this.nanCount![0]! <= this.nanIndex!.length; a += step) {
      const b = Math.min(W, a + step);
      const x0 = Math.max(0, a - PREMASK_WINDOW_HALO);
      const cols = Math.min(W, b + PREMASK_WINDOW_HALO) - x0;
      const band = this.hostBand!.subarray(0, N * R * cols);
      const t = performance.now();
      const encoder = ctx.device.createCommandEncoder({ label: 'premask window' });
      await gatherWindowResident(ctx, src, { frames: N, slotRows: R, width: W, y0: 0, rows: R, x0, cols }, this.windowBuffer!, encoder, o.maxBindingBytes);
      ctx.submit(encoder);
      await ctx.readInto(this.windowBuffer!, band);
      transfer += performance.now() - t;
      const med = this.windowMedian!.subarray(0, R * cols);
      if (this.hostMedian) {
        await this.medianRows(c, band, R, med, 0, cols);
        for (let r = 0; r < R; r++) median.set(med.subarray(r * cols + a - x0, r * cols + b - x0), r * W + a);
      } else {
        gatherWindow(median, { ...rowsOf, x0, cols }, med);
      }
      const skyWindow = sky ? gatherWindow(sky, { ...rowsOf, x0, cols }, this.windowSky!.subarray(0, R * cols)) : null;
      nan.of.col0 = x0;
      await premaskHost(o, c, w, band, med, this.hostMask!, this.hostPremaskRejected[c]!, this.hostPremaskCounts[c]!, this.pool, nan, this.sky, this.screen, { width: cols, ownedX0: a - x0, ownedCols: b - a, sky: skyWindow });
      done = b;
    }
    // An overflow stops the windows early: the host median is then whole only if they all ran.
    return { transfer, medianEnd: done === W ? R : 0 };
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
      stackParams(o, c, rows, method),
      encoder,
      { layout, maxBindingBytes: o.maxBindingBytes },
    );
  }

  /**
   * Encodes the noise-model rejection of channel `c`'s owned rows from `src` into mean/count:
   * the centre is the median pass's owned rows (still in `mean`: the pre-mask only read it; the
   * host's rows with hostMedian), or
   * NaN without a pre-mask (the weighted mean then starts); the sky rows go up first.
   */
  private async reject(c: number, w: Work, src: GPUBuffer, layout: SrcLayout, encoder: GPUCommandEncoder): Promise<void> {
    const o = this.o;
    const ctx = this.ctx;
    const W = o.width;
    const N = o.frames.length;
    const plane = w.ownedRows * W;
    ctx.write(this.background!, skyRows(o.noiseModel!, c, w.y0 + w.ownedY0, w.ownedRows, this.sky!));
    if (this.hostMedian) ctx.write(this.centre!, this.hostMedianRows!.subarray(w.ownedY0 * W, w.ownedY0 * W + plane));
    else if (o.premask) encoder.copyBufferToBuffer(this.mean, w.ownedY0 * W * 4, this.centre!, 0, plane * 4);
    else ctx.write(this.centre!, this.nan.subarray(0, plane));
    const p = { ...stackParams(o, c, w.ownedRows, 'sigma'), method: o.rejection.method as 'sigma' | 'winsor', ...noiseParams(o, c), srcRows: layout.rows, srcRow0: layout.row0 };
    await rejectNoiseResident(
      ctx,
      { buffer: src, offset: 0, size: N * layout.rows * W * 4 },
      this.rejectFrames[c]!,
      { buffer: this.centre!, offset: 0, size: plane * 4 },
      { buffer: this.background!, offset: 0, size: plane * 4 },
      { buffer: this.mean, offset: 0, size: plane * 4 },
      { buffer: this.count, offset: 0, size: plane * 4 },
      this.rejected[c]!,
      p,
      encoder,
      'auto',
      o.maxBindingBytes,
    );
  }

  /**
   * Device pre-mask of channel `c`: the median pass, then flag, grow and apply into the compact
   * buffer, all on the device (encoded into `encoder`, submitted here to time the part). The
   * stack then reads the compact buffer's owned rows.
   */
  private async premaskOnDevice(c: number, w: Work, encoder: GPUCommandEncoder, timings: Timings): Promise<{ src: GPUBuffer; layout: SrcLayout }> {
    const o = this.o;
    const ctx = this.ctx;
    const pm = o.premask!;
    const N = o.frames.length;
    const W = o.width;
    const src = this.slots[c]!;
    const t0 = performance.now();
    await this.stack(c, src, w.rows, 'median', this.rejected[o.channels]!, encoder);
    const frame = new Float32Array(4 * N);
    o.frames.forEach((f, i) => {
      const sigma = pm.sigma[f.slot]![c]!;
      const ok = sigma > 0;
      const [sc, of] = frameNorm(o, f, c);
      frame.set([sc, of, ok ? o.rejection.high * sigma : Infinity, ok ? o.rejection.low * sigma : Infinity], 4 * i);
    });
    // With the noise model the seeds are judged by the stack's bound around the median (as the
    // host pre-mask's NoiseModelSeeds): the sky of the work band goes up first.
    const nm = o.noiseModel;
    let noise: Parameters<typeof premaskResident>[6]['noise'] = null;
    if (nm) {
      ctx.write(this.premaskSky!, skyRows(nm, c, w.y0, w.rows, this.sky!));
      const norm = o.frames.map((f) => frameNorm(o, f, c));
      const table = packPremaskNoiseFrames(
        norm.map((x) => x[0]),
        norm.map((x) => x[1]),
        o.frames.map((f) => pm.sigma[f.slot]![c]!),
        o.frames.map((f) => nm.poisson[f.slot]![c]!),
        o.frames.map((f) => nm.seeing[f.slot]!),
      );
      noise = { table, sky: { buffer: this.premaskSky!, offset: 0, size: w.rows * W * 4 }, kHigh: o.rejection.high, kLow: o.rejection.low };
    }
    await premaskResident(
      ctx,
      { buffer: src, offset: 0, size: N * w.rows * W * 4 },
      { buffer: this.mean, offset: 0, size: w.rows * W * 4 },
      this.mask!,
      { buffer: this.compact!, offset: 0, size: N * w.ownedRows * W * 4 },
      this.premaskTallies[c]!,
      { width: W, rows: w.rows, frames: N, ownedY0: w.ownedY0, ownedRows: w.ownedRows, level: pm.level[c]!, alpha: PREMASK_ALPHA, minFraction: o.rejection.minFraction, frame, noise },
      encoder,
    );
    ctx.submit(encoder);
    await ctx.done();
    timings.premask += performance.now() - t0;
    return { src: this.compact!, layout: { rows: w.ownedRows, row0: 0 } };
  }

  /**
   * Host pre-mask of channel `c` beside the device stack: the median pass on the device (or on
   * the host, chunk by chunk: hostMedian), then the channel's slots come to the host for the
   * mask (premaskChunks); the masked samples (their slot
   * indices) go back and are NaN'd on the device into `next` (no compaction, no re-upload of the
   * band), or the whole band when they are too many to list.
   */
  private async premaskOnHost(c: number, w: Work, encoder: GPUCommandEncoder, next: () => GPUCommandEncoder, timings: Timings): Promise<GPUCommandEncoder> {
    const o = this.o;
    const ctx = this.ctx;
    const N = o.frames.length;
    const src = this.slots[c]!;
    const t0 = performance.now();
    const median0 = this.medianMs;
    const median = this.hostMedianRows!.subarray(0, w.rows * o.width);
    if (!this.hostMedian) {
      await this.stack(c, src, w.rows, 'median', this.rejected[o.channels]!, encoder);
      ctx.submit(encoder);
      await ctx.done();
    }
    const t1 = performance.now();
    if (!this.hostMedian) await ctx.readInto(this.mean, median);
    const t2 = performance.now();
    const transfer = await this.premaskChunks(c, w, src, median);
    const t3 = performance.now();
    const band = next();
    const masked = this.nanCount![0]!;
    if (masked <= this.nanIndex!.length) {
      await scatterNanListed(ctx, this.nanIndex!, masked, this.nanIndexBuffer!, src, N * w.rows * o.width, band, o.maxBindingBytes);
    } else {
      ctx.write(src, this.fullBand!.band.subarray(0, N * w.rows * o.width)); // too many to list: the whole (pre-masked) work band
    }
    const t4 = performance.now();
    const hostMedian = this.medianMs - median0;
    timings.premask_median += t1 - t0 + hostMedian;
    timings.premask_transfer += t2 - t1 + transfer + (t4 - t3);
    timings.premask_mask += t3 - t2 - transfer - hostMedian;
    timings.premask += t4 - t0;
    return band;
  }

  async stackChannel(c: number, w: Work, totals: EngineTotals, timings: Timings): Promise<Float32Array> {
    const o = this.o;
    const ctx = this.ctx;
    const plane = w.ownedRows * o.width;
    // One chain on the device: [median pass → pre-mask] → stack → mean and count back to the
    // host. (Separate submits only to time the parts; the data stays on the device.)
    const band = () => ctx.device.createCommandEncoder({ label: 'stacking band' });
    let encoder = ctx.device.createCommandEncoder({ label: 'stacking pre-mask' });
    // Rows of `src` per frame and the first owned one: the slots' work rows, or the compact
    // buffer's owned rows (device pre-mask).
    let src = this.slots[c]!;
    let layout: SrcLayout = { rows: w.rows, row0: w.ownedY0 };
    if (this.lnTables.length > 0) {
      // Local normalization after a device bilinear warp: one in-place pass over the channel's
      // slots (the Lanczos warp applies it as it stores each sample).
      const t0 = performance.now();
      const N = o.frames.length;
      await lnApplyResident(ctx, { buffer: src, offset: 0, size: N * w.rows * o.width * 4 }, this.lnTables[c]!, { width: o.width, rows: w.rows, frames: N, y0: w.y0, srcRows: w.rows, srcRow0: 0, grid: o.ln!.grid }, encoder);
      ctx.submit(encoder);
      await ctx.done();
      encoder = band();
      timings.ln += performance.now() - t0;
    }
    if (o.premask?.onDevice) {
      ({ src, layout } = await this.premaskOnDevice(c, w, encoder, timings));
      encoder = band();
    } else if (o.premask) {
      encoder = await this.premaskOnHost(c, w, encoder, band, timings);
    }
    const t = performance.now();
    if (noiseRejects(o, o.rejection.method)) await this.reject(c, w, src, layout, encoder);
    else await this.stack(c, src, w.ownedRows, o.rejection.method, this.rejected[c]!, encoder, layout);
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

  premaskChunkShape(): PremaskChunks | null {
    if (!this.hostBand) return null;
    return this.chunkRows !== null ? { rows: this.chunkRows } : { cols: this.windowCols };
  }

  dispose(): void {
    for (const b of this.held.splice(0)) this.ctx.pool.release(b);
  }
}
