// Wrapper for STACKING's outlier pre-mask on the device: shaders/premask/premask_flag.wgsl and
// premask_apply.wgsl, encoded as one chain on a band that already sits on the device (median
// from the stack kernel's median pass → flag (seeds and growth bits) → apply/compact), so the
// band never leaves the device between warp and stack (docs/ARCHITECTURE.md "GPU strategy"). Contract and TypeScript
// reference: src/cpu/premask.ts (the two give identical masks, tallies and
// compacted bands; test/gpu/premask.test.ts).
// Invariants: dispatches never read or write outside the bound ranges (every index is checked in
// WGSL); tallies are only added to; the mask buffer needs premaskMaskBytes() bytes.

import type { BindingResource, GpuContext } from '../context.js';
import { packUniform } from '../dispatch.js';
import { GpuError } from '../errors.js';

const WG = 64;

export interface PremaskGpuParams {
  width: number;
  /** Work rows of the band held in `band` (frame stride). */
  rows: number;
  frames: number;
  /** Owned rows [ownedY0, ownedY0 + ownedRows) of the work band, written compacted to `out`. */
  ownedY0: number;
  ownedRows: number;
  level: number;
  alpha: number;
  minFraction: number;
  /** Per frame: scale, offset, hi = k_high·σ, lo = k_low·σ (4 floats; hi = lo = Infinity skips a frame). Unused with `noise`. */
  frame: Float32Array;
  /**
   * Noise-model seed bounds (rejection.bounds noise_model) instead of hi/lo + α·|M − L|:
   * `table` from packPremaskNoiseFrames, `sky` the sky B under each work-band pixel (rows ×
   * width f32, NaN → S = 0), κ above and below the median.
   */
  noise?: { table: Float32Array; sky: BindingResource; kHigh: number; kLow: number } | null;
}

/**
 * The noise-model pre-mask's frame table (two vec4f per frame): scale, offset, σ² (−1: the frame
 * has no noise estimate and is never flagged), 0; K, α², 0, 0 (premask_flag.wgsl, NOISE = 1).
 */
export function packPremaskNoiseFrames(scale: ArrayLike<number>, offset: ArrayLike<number>, sigma: ArrayLike<number>, poisson: ArrayLike<number>, seeing: ArrayLike<number>): Float32Array {
  const n = scale.length;
  const out = new Float32Array(8 * n);
  for (let f = 0; f < n; f++) {
    const s = sigma[f]!;
    out.set([scale[f]!, offset[f]!, s > 0 && Number.isFinite(s) ? s * s : -1, 0, poisson[f]!, seeing[f]! * seeing[f]!, 0, 0], 8 * f);
  }
  return out;
}

/** Bytes of the mask buffer: one byte per sample, rows padded to whole 4-byte words. */
export function premaskMaskBytes(width: number, rows: number, frames: number): number {
  return frames * rows * Math.ceil(width / 4) * 4;
}

/**
 * Encodes flag → apply into `encoder`: `band` (frames × rows × width f32) and `median`
 * (rows × width) are read; `mask` is scratch; `out` receives frames × ownedRows × width f32 with
 * masked samples NaN; `tallies` (2·frames u32: low, then high) is added to.
 */
export async function premaskResident(
  ctx: GpuContext,
  band: BindingResource,
  median: BindingResource,
  mask: GPUBuffer,
  out: BindingResource,
  tallies: GPUBuffer,
  p: PremaskGpuParams,
  encoder: GPUCommandEncoder,
): Promise<void> {
  const words = Math.ceil(p.width / 4);
  const nm = p.noise ?? null;
  const table = nm ? nm.table : p.frame;
  const per = nm ? 8 : 4;
  if (table.length < per * p.frames) throw new GpuError('BAD_ARGUMENT', `premask: ${table.length / per} frame parameter sets for ${p.frames} frames`);
  if (nm && !(nm.kHigh > 0 && nm.kLow > 0 && Number.isFinite(nm.kHigh) && Number.isFinite(nm.kLow))) throw new GpuError('BAD_ARGUMENT', 'premask: noise-model kHigh and kLow must be finite and > 0');
  if (mask.size < premaskMaskBytes(p.width, p.rows, p.frames)) throw new GpuError('BAD_ARGUMENT', `premask: mask buffer of ${mask.size} B, need ${premaskMaskBytes(p.width, p.rows, p.frames)}`);
  if (p.ownedY0 + p.ownedRows > p.rows) throw new GpuError('BAD_ARGUMENT', `premask: owned rows ${p.ownedY0}..${p.ownedY0 + p.ownedRows} outside the ${p.rows} work rows`);
  const max = ctx.limits.maxComputeWorkgroupsPerDimension;
  if (p.rows > max) throw new GpuError('BAD_ARGUMENT', `premask: ${p.rows} rows exceed ${max} workgroups per dimension`);
  const [flag, apply] = await Promise.all([ctx.pipeline('premask_flag', { WG, NOISE: nm ? 1 : 0 }), ctx.pipeline('premask_apply', { WG })]);
  const uniform = ctx.uniform(
    packUniform([
      ['u32', p.width],
      ['u32', p.rows],
      ['u32', p.frames],
      ['u32', words],
      ['f32', p.level],
      ['f32', p.alpha],
      ['u32', p.ownedY0],
      ['u32', p.ownedRows],
      ['f32', p.minFraction],
      ['f32', nm ? nm.kHigh : 0],
      ['f32', nm ? nm.kLow : 0],
      ['u32', 0],
    ]),
  );
  const frame = ctx.upload(table.subarray(0, per * p.frames), GPUBufferUsage.STORAGE, 'premask frames');
  ctx.retire(uniform);
  ctx.retire(frame);
  const wx = Math.ceil(words / WG);
  // Without the noise model binding 5 is unread: the median stands in.
  ctx.dispatch('premask_flag', flag, ctx.bindGroup(flag, [uniform, band, median, frame, mask, nm ? nm.sky : median]), [wx, p.rows, 1], encoder);
  if (p.ownedRows > 0) ctx.dispatch('premask_apply', apply, ctx.bindGroup(apply, [uniform, band, mask, out, tallies]), [Math.ceil(p.width / WG), p.ownedRows, 1], encoder);
}

const SCATTER_WG = 256;

/**
 * Encodes NaN stores into `dst` at the u32 indices `from .. count` of `indices` (the host
 * pre-mask's masked samples; shaders/premask/scatter_nan.wgsl). `dstValues`: f32 values of `dst`
 * from value `dstOffset` on, the window bound (every index must be below dstValues; the caller's
 * list comes from a band of that size).
 */
export async function scatterNanResident(ctx: GpuContext, indices: GPUBuffer, count: number, dst: GPUBuffer, dstValues: number, encoder: GPUCommandEncoder, from = 0, dstOffset = 0): Promise<void> {
  if (count <= from) return;
  if (indices.size < 4 * count) throw new GpuError('BAD_ARGUMENT', `scatter_nan: index buffer of ${indices.size} B for ${count} indices`);
  if (dst.size < 4 * (dstOffset + dstValues)) throw new GpuError('BAD_ARGUMENT', `scatter_nan: target of ${dst.size} B, ${dstValues} values from ${dstOffset} expected`);
  const kernel = await ctx.pipeline('scatter_nan', { WG: SCATTER_WG });
  const perDispatch = ctx.limits.maxComputeWorkgroupsPerDimension * SCATTER_WG;
  for (let first = from; first < count; first += perDispatch) {
    const uniform = ctx.uniform(
      packUniform([
        ['u32', count],
        ['u32', first],
      ]),
    );
    ctx.retire(uniform);
    const groups = Math.ceil(Math.min(perDispatch, count - first) / SCATTER_WG);
    ctx.dispatch('scatter_nan', kernel, ctx.bindGroup(kernel, [uniform, { buffer: indices, offset: 0, size: 4 * count }, { buffer: dst, offset: 4 * dstOffset, size: 4 * dstValues }]), [groups, 1, 1], encoder);
  }
}

/**
 * Uploads the first `count` indices of `host` into `indices` and encodes their NaN stores into
 * the `dstValues` f32 values of `dst`. A target larger than one storage binding (a band of many
 * frames: the stack kernels bind it as frame ranges, src-ranges.ts) is cut into aligned windows
 * of at most `maxBindingBytes`; the indices go up ordered by window and rebased to it, and one
 * scatter per window stores them. The host list is left as it was.
 */
export async function scatterNanListed(ctx: GpuContext, host: Uint32Array, count: number, indices: GPUBuffer, dst: GPUBuffer, dstValues: number, encoder: GPUCommandEncoder, maxBindingBytes = ctx.limits.maxStorageBufferBindingSize): Promise<void> {
  if (count === 0) return;
  if (4 * dstValues <= maxBindingBytes) {
    ctx.write(indices, host.subarray(0, count));
    await scatterNanResident(ctx, indices, count, dst, dstValues, encoder);
    return;
  }
  const alignElems = Math.max(1, ctx.limits.minStorageBufferOffsetAlignment / 4);
  const span = Math.floor(maxBindingBytes / 4 / alignElems) * alignElems;
  const windows = Math.ceil(dstValues / span);
  const start = new Uint32Array(windows + 1);
  for (let i = 0; i < count; i++) start[Math.floor(host[i]! / span) + 1]!++;
  for (let k = 0; k < windows; k++) start[k + 1]! += start[k]!;
  const next = start.slice(0, windows);
  const ordered = new Uint32Array(count);
  for (let i = 0; i < count; i++) {
    const v = host[i]!;
    const k = Math.floor(v / span);
    ordered[next[k]!++] = v - k * span;
  }
  ctx.write(indices, ordered);
  for (let k = 0; k < windows; k++) {
    await scatterNanResident(ctx, indices, start[k + 1]!, dst, Math.min(span, dstValues - k * span), encoder, start[k]!, k * span);
  }
}
