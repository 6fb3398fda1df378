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
  /** Per frame: scale, offset, hi = k_high·σ, lo = k_low·σ (4 floats; hi = lo = Infinity skips a frame). */
  frame: Float32Array;
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
  if (p.frame.length < 4 * p.frames) throw new GpuError('BAD_ARGUMENT', `premask: ${p.frame.length / 4} frame parameter sets for ${p.frames} frames`);
  if (mask.size < premaskMaskBytes(p.width, p.rows, p.frames)) throw new GpuError('BAD_ARGUMENT', `premask: mask buffer of ${mask.size} B, need ${premaskMaskBytes(p.width, p.rows, p.frames)}`);
  if (p.ownedY0 + p.ownedRows > p.rows) throw new GpuError('BAD_ARGUMENT', `premask: owned rows ${p.ownedY0}..${p.ownedY0 + p.ownedRows} outside the ${p.rows} work rows`);
  const max = ctx.limits.maxComputeWorkgroupsPerDimension;
  if (p.rows > max) throw new GpuError('BAD_ARGUMENT', `premask: ${p.rows} rows exceed ${max} workgroups per dimension`);
  const [flag, apply] = await Promise.all([ctx.pipeline('premask_flag', { WG }), ctx.pipeline('premask_apply', { WG })]);
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
      ['u32', 0],
      ['u32', 0],
      ['u32', 0],
    ]),
  );
  const frame = ctx.upload(p.frame.subarray(0, 4 * p.frames), GPUBufferUsage.STORAGE, 'premask frames');
  ctx.retire(uniform);
  ctx.retire(frame);
  const wx = Math.ceil(words / WG);
  ctx.dispatch('premask_flag', flag, ctx.bindGroup(flag, [uniform, band, median, frame, mask]), [wx, p.rows, 1], encoder);
  if (p.ownedRows > 0) ctx.dispatch('premask_apply', apply, ctx.bindGroup(apply, [uniform, band, mask, out, tallies]), [Math.ceil(p.width / WG), p.ownedRows, 1], encoder);
}

const SCATTER_WG = 256;

/**
 * Encodes NaN stores into `dst` at the first `count` u32 indices of `indices` (the host
 * pre-mask's masked samples; shaders/premask/scatter_nan.wgsl). `dstValues`: f32 values `dst`
 * holds (every index must be below it; the caller's list comes from a band of that size).
 */
export async function scatterNanResident(ctx: GpuContext, indices: GPUBuffer, count: number, dst: GPUBuffer, dstValues: number, encoder: GPUCommandEncoder): Promise<void> {
  if (count === 0) return;
  if (indices.size < 4 * count) throw new GpuError('BAD_ARGUMENT', `scatter_nan: index buffer of ${indices.size} B for ${count} indices`);
  if (dst.size < 4 * dstValues) throw new GpuError('BAD_ARGUMENT', `scatter_nan: target of ${dst.size} B, ${dstValues} values expected`);
  const kernel = await ctx.pipeline('scatter_nan', { WG: SCATTER_WG });
  const perDispatch = ctx.limits.maxComputeWorkgroupsPerDimension * SCATTER_WG;
  for (let first = 0; first < count; first += perDispatch) {
    const uniform = ctx.uniform(
      packUniform([
        ['u32', count],
        ['u32', first],
      ]),
    );
    ctx.retire(uniform);
    const groups = Math.ceil(Math.min(perDispatch, count - first) / SCATTER_WG);
    ctx.dispatch('scatter_nan', kernel, ctx.bindGroup(kernel, [uniform, { buffer: indices, offset: 0, size: 4 * count }, { buffer: dst, offset: 0, size: 4 * dstValues }]), [groups, 1, 1], encoder);
  }
}
