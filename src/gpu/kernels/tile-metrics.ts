// Wrapper for shaders/stats/tile_metrics.wgsl: the per-rectangle structure sums of a plane with
// the contract of src/cpu/tile-metrics.ts (its histogram shape HIST as the override constants). The plane is uploaded whole (one storage binding: a
// plane larger than the device's binding limit is an error, and the caller measures it in
// TypeScript); one workgroup per rectangle.

import { HIST, STRUCTURE_QUANTILE, TILE_METRICS_FIELDS, type TileMetricsParams } from '../../cpu/tile-metrics.js';
import type { GpuContext } from '../context.js';
import { packUniform } from '../dispatch.js';
import { GpuError } from '../errors.js';

const WG = 64;

export async function tileMetricsGpu(ctx: GpuContext, plane: Float32Array, p: TileMetricsParams): Promise<Float64Array> {
  const n = p.rects.length / 4;
  if (plane.length < p.width * p.height) throw new GpuError('BAD_ARGUMENT', `tile_metrics: ${plane.length} samples < ${p.width}x${p.height}`);
  const q = p.quantile ?? STRUCTURE_QUANTILE;
  if (!(q > 0 && q < 1)) throw new GpuError('BAD_ARGUMENT', `tile_metrics: quantile ${q} outside (0, 1)`);
  if (n === 0) return new Float64Array(0);
  if (plane.byteLength > ctx.limits.maxStorageBufferBindingSize) throw new GpuError('BINDING_TOO_LARGE', `tile_metrics: a ${p.width}x${p.height} plane exceeds one storage binding`);
  const kernel = await ctx.pipeline('tile_metrics', { WG, BINS: HIST.BINS, SUB_LOG2: HIST.SUB_LOG2, LOG2_MIN: HIST.LOG2_MIN });
  const src = ctx.upload(plane.subarray(0, p.width * p.height), undefined, 'tile-metrics-plane');
  const rects = ctx.upload(p.rects, undefined, 'tile-metrics-rects');
  const out = ctx.storage(n * TILE_METRICS_FIELDS * 4, 'tile-metrics-out');
  try {
    const unit = p.unit !== undefined && Number.isFinite(p.unit) && p.unit > 0 ? p.unit : 1;
    const uniform = ctx.uniform(packUniform([['u32', p.width], ['u32', p.step], ['u32', n], ['f32', p.bgCut], ['f32', 1 / unit], ['f32', q]]));
    ctx.retire(uniform);
    ctx.dispatch('tile_metrics', kernel, ctx.bindGroup(kernel, [uniform, src, rects, out]), [n, 1]);
    return Float64Array.from(await ctx.readFloat32(out, n * TILE_METRICS_FIELDS));
  } finally {
    ctx.pool.release(src);
    ctx.pool.release(rects);
    ctx.pool.release(out);
  }
}
