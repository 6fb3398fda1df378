// The stacking engine's slots in (shared) host memory: every stage of a band after the reads
// runs in TypeScript on the worker pool, except a device warp when the policy places one there
// (the stack then too large for one dispatch). Pre-mask, median pass and stack over the band's
// host slots; tallies in shared typed arrays the workers add to. Local normalization is applied
// as the warp writes each slot row (warpRows; after a device warp, to its output before the
// copy), and sigma/winsor with the noise model run rejectRows instead of the stack.

import { lnApply } from '../../../cpu/ln-apply.js';
import { sharedFloat32, type WorkerPool } from '../../../cpu/worker-pool.js';
import { warpBilinearGpu, warpLanczos3Gpu } from '../../../gpu/kernels/warp.js';
import type { EngineOptions, EngineTotals, Timings } from './engine.js';
import type { StackFrame } from './plan.js';
import { rejectRows, REJECT_ROWS, stackRows, STACK_ROWS, type RejectRowsArgs, type StackRowsArgs } from './row-kernels.js';
import { rejectFieldGpu, rejectFieldRows, REJECT_FIELD_ROWS, stackFieldGpu, stackFieldRows, STACK_FIELD_ROWS, type RejectFieldRowsArgs, type StackFieldRowsArgs, type WeightField } from './weightfield.js';
import { HostScratch, hostSource, ScreenScratch, lnOf, noiseRejects, premaskHost, rejectArgs, sharedU32, sharedU64, sharedU8, skyRows, stackArgs, warpOnHost, warpParams, type RawRead, type SlotStore, type Work } from './slots.js';

export class HostStore implements SlotStore {
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
  private readonly screen: ScreenScratch;
  /** The reference's sky under the band's work rows (noise model), shared with the workers. */
  private readonly sky: Float32Array | null;

  constructor(
    private readonly o: EngineOptions,
    private readonly pool: WorkerPool | null,
  ) {
    const C = o.channels;
    const N = o.frames.length;
    const sh = pool !== null;
    this.source = new HostScratch(o, sh);
    this.screen = new ScreenScratch(sh);
    const alloc = (n: number) => (sh ? sharedFloat32(n) : new Float32Array(n));
    this.bands = Array.from({ length: C }, () => alloc(N * o.maxWorkRows * o.width));
    this.mean = alloc(o.maxWorkRows * o.width);
    this.median = o.premask ? alloc(o.maxWorkRows * o.width) : null;
    this.mask = o.premask ? sharedU8(N * o.maxWorkRows * o.width, sh) : null;
    this.sky = o.noiseModel ? alloc(o.maxWorkRows * o.width) : null;
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
      // The stack runs on the host (too many frames for one dispatch, or a band too wide for a
      // device binding), the warp on the device, read back straight into the frame's slot
      // instead of a fresh output array per frame and band (garbage the size of a frame's slice).
      const plane = w.rows * o.width;
      const ln = lnOf(o, f);
      for (let c = 0; c < o.channels; c++) {
        const p = warpParams(o, f, w, src);
        const into = this.bands[c]!.subarray(f.slot * plane, (f.slot + 1) * plane);
        const out = o.kernel === 'lanczos3' ? await warpLanczos3Gpu(o.gpu.warp, src.planes[c]!, p, { into }) : await warpBilinearGpu(o.gpu.warp, src.planes[c]!, p, { into });
        if (ln) lnApply(out, { width: o.width, rows: w.rows, frames: 1, y0: w.y0, grid: ln.grid, coefficients: ln.coefficients[c]! });
      }
    } else {
      await warpOnHost(o, f, w, src, this.bands, f.slot, this.pool);
    }
    timings.warp += performance.now() - t;
  }

  private async runReject(args: RejectRowsArgs): Promise<void> {
    if (this.pool) await this.pool.run(REJECT_ROWS, args, 0, args.rows, { minChunk: 4, reused: true });
    else rejectRows(args, 0, args.rows);
  }

  private async runRejectField(args: RejectFieldRowsArgs): Promise<void> {
    if (this.o.weightFieldGpu) await rejectFieldGpu(this.o.weightFieldGpu, args);
    else if (this.pool) await this.pool.run(REJECT_FIELD_ROWS, args, 0, args.rows, { minChunk: 4, reused: true });
    else rejectFieldRows(args, 0, args.rows);
  }

  private async runStack(args: StackRowsArgs): Promise<void> {
    if (this.pool) await this.pool.run(STACK_ROWS, args, 0, args.rows, { minChunk: 4, reused: true });
    else stackRows(args, 0, args.rows);
  }

  /** The final stack with the weight field's per-pixel weights (owned rows from image row imageY0): WGSL when placed on a device, else TypeScript. */
  private async runFieldStack(args: StackRowsArgs, field: WeightField, imageY0: number): Promise<void> {
    const a: StackFieldRowsArgs = { ...args, field, imageY0 };
    if (this.o.weightFieldGpu) await stackFieldGpu(this.o.weightFieldGpu, a);
    else if (this.pool) await this.pool.run(STACK_FIELD_ROWS, a, 0, a.rows, { minChunk: 4, reused: true });
    else stackFieldRows(a, 0, a.rows);
  }

  async stackChannel(c: number, w: Work, _totals: EngineTotals, timings: Timings): Promise<Float32Array> {
    const o = this.o;
    const N = o.frames.length;
    let band = this.bands[c]!.subarray(0, N * w.rows * o.width);
    if (o.premask) {
      const t = performance.now();
      await this.runStack(stackArgs(o, c, band, w.rows, 'median', this.median!, this.scratchRejected, this.scratch));
      const t1 = performance.now();
      band = await premaskHost(o, c, w, band, this.median!, this.mask!, this.premaskRejected[c]!, this.premaskCounts[c]!, this.pool, null, this.sky, this.screen);
      const t2 = performance.now();
      timings.premask_median += t1 - t;
      timings.premask_mask += t2 - t1;
      timings.premask += t2 - t;
    }
    const t = performance.now();
    const mean = this.mean.subarray(0, w.ownedRows * o.width);
    if (noiseRejects(o, o.rejection.method)) {
      // The pre-mask compacted the band to its owned rows; without it the band is the owned rows.
      const sky = skyRows(o.noiseModel!, c, w.y0 + w.ownedY0, w.ownedRows, this.sky!);
      const centre = o.premask ? { data: this.median!, row0: w.ownedY0 } : null;
      const args = rejectArgs(o, c, band, w.ownedRows, { srcRows: w.ownedRows, srcRow0: 0 }, centre, sky, mean, this.rejected[c]!, this.counts[c]!);
      // The weight-field stack (tiled workflow): the same bounds with the field's weights.
      if (o.weightField) await this.runRejectField({ ...args, field: o.weightField, imageY0: w.y0 + w.ownedY0 });
      else await this.runReject(args);
    } else if (o.weightField) {
      // Sample bounds (or median / none): the weight-field stack's own kernel.
      await this.runFieldStack(stackArgs(o, c, band, w.ownedRows, o.rejection.method, mean, this.rejected[c]!, this.counts[c]!), o.weightField, w.y0 + w.ownedY0);
    } else await this.runStack(stackArgs(o, c, band, w.ownedRows, o.rejection.method, mean, this.rejected[c]!, this.counts[c]!));
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
