// The stacking engine's optional per-pixel weight field (the tiled workflow's local weights;
// cpu/stack-weightfield.ts has the maths): per stacked frame (slot order) a weight per tile of a
// grid, and the grid's normalised windows along both image axes. When EngineOptions.weightField
// is set, the final stack of every band and channel weights each frame per pixel from the field
// instead of by its StackFrame.weight; rejection stays per pixel over all frames, the pre-mask
// and its median pass are unchanged. The slots stay on the host (HostStore); the weighted stack
// runs in TypeScript on the worker pool, or as shaders/stack/stack_weightfield.wgsl on the
// context EngineOptions.weightFieldGpu names (device-policy.ts: a hardware GPU). With the
// noise-model bounds (rejection.bounds noise_model, sigma or winsor) the weighted stack is
// rejectNoiseModel with the field's weights (rejectFieldRows), as Raw Stack's rejection is; on
// the same context it runs as stack_weightfield.wgsl's noise-model methods (rejectFieldGpu).
// Rows [start, end) of a band are stacked by the same reference kernel as a whole band would be,
// so the result does not depend on the split.

import type { StackParams, StackResult } from '../../../cpu/stack.js';
import { AXIS_SLOTS, axisWindows, stackWeightfield, type AxisWindows, type WeightFieldRows } from '../../../cpu/stack-weightfield.js';
import type { GpuContext } from '../../../gpu/context.js';
import { rejectWeightfieldGpu, stackWeightfieldGpu } from '../../../gpu/kernels/stack-weightfield.js';
import type { PoolKernel } from '../../../cpu/worker-pool.js';
import { rejectNoiseModel, type NoiseRejectParams, type NoiseRejectPixels } from '../../../cpu/reject-noise.js';
import { addTallies, type RejectRowsArgs, type StackRowsArgs } from './row-kernels.js';

export interface WeightField {
  tilesX: number;
  tilesY: number;
  /** slots × tilesY × tilesX weights, each tile's column over the slots summing to 1. */
  table: Float32Array;
  /** Windows along the output's columns and rows (whole image). */
  cols: AxisWindows;
  rows: AxisWindows;
}

/** A copy of a typed array in shared memory (the worker pool hands its arguments to workers as such). */
function shared<T extends Float32Array | Int32Array>(a: T): T {
  const out = new (a.constructor as new (b: SharedArrayBuffer) => T)(new SharedArrayBuffer(a.byteLength));
  out.set(a);
  return out;
}

const sharedAxis = (a: AxisWindows): AxisWindows => ({ tile: shared(a.tile), weight: shared(a.weight) });

/** A field over a width × height image for tiles of size (sizeX, sizeY) at the given origins (in shared memory). */
export function weightField(table: Float32Array, originsX: readonly number[], originsY: readonly number[], sizeX: number, sizeY: number, width: number, height: number): WeightField {
  return { tilesX: originsX.length, tilesY: originsY.length, table: shared(table), cols: sharedAxis(axisWindows(originsX, sizeX, width)), rows: sharedAxis(axisWindows(originsY, sizeY, height)) };
}

export interface StackFieldRowsArgs extends StackRowsArgs {
  field: WeightField;
  /** Image row of the band's first stacked row. */
  imageY0: number;
}

/** Stacks rows [start, end) of the band with the field's weights; tallies added like stackRows. */
/** The stack's parameters and the field's rows for rows [start, end) of the band. */
function partOf(a: StackFieldRowsArgs, start: number, end: number): { params: StackParams; field: WeightFieldRows } {
  const rows = end - start;
  const y0 = a.imageY0 + start;
  const f = a.field;
  return {
    params: { width: a.width, rows, frames: a.frames, method: a.method, low: a.low, high: a.high, maxIters: a.maxIters, minFraction: a.minFraction, scale: a.scale, offset: a.offset },
    field: { tilesX: f.tilesX, tilesY: f.tilesY, table: f.table, cols: f.cols, rows: { tile: f.rows.tile.subarray(y0 * AXIS_SLOTS, (y0 + rows) * AXIS_SLOTS), weight: f.rows.weight.subarray(y0 * AXIS_SLOTS, (y0 + rows) * AXIS_SLOTS) } },
  };
}

export function stackFieldRows(a: StackFieldRowsArgs, start: number, end: number): void {
  if (end <= start) return;
  const { width: W, frames: N } = a;
  const plane = a.rows * W;
  const rows = end - start;
  const tile = new Float32Array(N * rows * W);
  for (let f = 0; f < N; f++) tile.set(a.band.subarray(f * plane + start * W, f * plane + end * W), f * rows * W);
  const part = partOf(a, start, end);
  addResult(a, start, stackWeightfield(tile, part.params, part.field));
}

/** The whole band on the device (shaders/stack/stack_weightfield.wgsl); median ignores weights, so it stacks in TypeScript. */
export async function stackFieldGpu(ctx: GpuContext, a: StackFieldRowsArgs): Promise<void> {
  if (a.method === 'median') return stackFieldRows(a, 0, a.rows);
  const part = partOf(a, 0, a.rows);
  addResult(a, 0, await stackWeightfieldGpu(ctx, a.band.subarray(0, a.frames * a.rows * a.width), part.params, part.field));
}

/** Writes a part's mean rows from row `start` and adds its tallies. */
function addResult(a: StackFieldRowsArgs, start: number, res: StackResult): void {
  a.mean.set(res.mean, start * a.width);
  addTallies(res, res.count.length, a.rejected, a.counts);
}

export interface RejectFieldRowsArgs extends RejectRowsArgs {
  field: WeightField;
  /** Image row of the band's first output row. */
  imageY0: number;
}

/** The noise-model rejection's parameters, pixels and field rows for output rows [start, end). */
function rejectPartOf(a: RejectFieldRowsArgs, start: number, end: number): { params: NoiseRejectParams; pixels: NoiseRejectPixels; field: WeightFieldRows } {
  const W = a.width;
  const f = a.field;
  const y0 = a.imageY0 + start;
  const rows = end - start;
  return {
    params: { width: W, rows, frames: a.frames, method: a.method, low: a.low, high: a.high, maxIters: a.maxIters, minFraction: a.minFraction, scale: a.scale, offset: a.offset, noise: a.noise, poisson: a.poisson, seeing: a.seeing, srcRows: a.srcRows, srcRow0: a.srcRow0 + start },
    pixels: { centre: a.centre ? a.centre.subarray((a.centreRow0 + start) * W, (a.centreRow0 + end) * W) : null, background: a.background.subarray(start * W, end * W) },
    field: { tilesX: f.tilesX, tilesY: f.tilesY, table: f.table, cols: f.cols, rows: { tile: f.rows.tile.subarray(y0 * AXIS_SLOTS, (y0 + rows) * AXIS_SLOTS), weight: f.rows.weight.subarray(y0 * AXIS_SLOTS, (y0 + rows) * AXIS_SLOTS) } },
  };
}

/** The noise-model rejection of output rows [start, end) with the field's per-pixel weights; tallies added like rejectRows. */
export function rejectFieldRows(a: RejectFieldRowsArgs, start: number, end: number): void {
  if (end <= start) return;
  const part = rejectPartOf(a, start, end);
  const res = rejectNoiseModel(a.band, part.params, part.pixels, part.field);
  a.mean.set(res.mean, start * a.width);
  addTallies(res, (end - start) * a.width, a.rejected, a.counts);
}

/** The same for all output rows on the device (stack_weightfield.wgsl's noise-model methods). */
export async function rejectFieldGpu(ctx: GpuContext, a: RejectFieldRowsArgs): Promise<void> {
  if (a.rows <= 0) return;
  const part = rejectPartOf(a, 0, a.rows);
  const res = await rejectWeightfieldGpu(ctx, a.band, part.params, part.pixels, part.field);
  a.mean.set(res.mean, 0);
  addTallies(res, a.rows * a.width, a.rejected, a.counts);
}

export const REJECT_FIELD_ROWS: PoolKernel = { module: import.meta.url, name: 'rejectFieldRows' satisfies keyof typeof import('./weightfield.js') };

export const STACK_FIELD_ROWS: PoolKernel = { module: import.meta.url, name: 'stackFieldRows' satisfies keyof typeof import('./weightfield.js') };
