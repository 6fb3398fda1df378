// The stacking engine's optional per-pixel weight field (the tiled workflow's local weights;
// cpu/stack-weightfield.ts has the maths): per stacked frame (slot order) a weight per tile of a
// grid, and the grid's normalised windows along both image axes. When EngineOptions.weightField
// is set, the final stack of every band and channel weights each frame per pixel from the field
// instead of by its StackFrame.weight; rejection stays per pixel over all frames, the pre-mask
// and its median pass are unchanged. The stack then runs in TypeScript on the worker pool (the
// WGSL kernel shaders/stack/stack_weightfield.wgsl has the same contract; see device-policy.ts).
// Rows [start, end) of a band are stacked by the same reference kernel as a whole band would be,
// so the result does not depend on the split.

import { AXIS_SLOTS, axisWindows, stackWeightfield, type AxisWindows } from '../../../cpu/stack-weightfield.js';
import type { PoolKernel } from '../../../cpu/worker-pool.js';
import type { StackRowsArgs } from './row-kernels.js';

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
export function stackFieldRows(a: StackFieldRowsArgs, start: number, end: number): void {
  if (end <= start) return;
  const { width: W, frames: N } = a;
  const plane = a.rows * W;
  const rows = end - start;
  const tile = new Float32Array(N * rows * W);
  for (let f = 0; f < N; f++) tile.set(a.band.subarray(f * plane + start * W, f * plane + end * W), f * rows * W);
  const y0 = a.imageY0 + start;
  const f = a.field;
  const res = stackWeightfield(
    tile,
    { width: W, rows, frames: N, method: a.method, low: a.low, high: a.high, maxIters: a.maxIters, minFraction: a.minFraction, scale: a.scale, offset: a.offset },
    { tilesX: f.tilesX, tilesY: f.tilesY, table: f.table, cols: f.cols, rows: { tile: f.rows.tile.subarray(y0 * AXIS_SLOTS, (y0 + rows) * AXIS_SLOTS), weight: f.rows.weight.subarray(y0 * AXIS_SLOTS, (y0 + rows) * AXIS_SLOTS) } },
  );
  a.mean.set(res.mean, start * W);
  let survivors = 0;
  let empty = 0;
  for (let i = 0; i < res.count.length; i++) {
    survivors += res.count[i]!;
    if (res.count[i] === 0) empty++;
  }
  const shared = a.rejected.buffer instanceof SharedArrayBuffer;
  for (let k = 0; k < N; k++) {
    const lo = res.rejectedLow[k]!;
    const hi = res.rejectedHigh[k]!;
    if (shared) {
      if (lo) Atomics.add(a.rejected, k, lo);
      if (hi) Atomics.add(a.rejected, N + k, hi);
    } else {
      a.rejected[k]! += lo;
      a.rejected[N + k]! += hi;
    }
  }
  if (a.counts.buffer instanceof SharedArrayBuffer) {
    Atomics.add(a.counts, 0, BigInt(survivors));
    Atomics.add(a.counts, 1, BigInt(empty));
  } else {
    a.counts[0]! += BigInt(survivors);
    a.counts[1]! += BigInt(empty);
  }
}

export const STACK_FIELD_ROWS: PoolKernel = { module: import.meta.url, name: 'stackFieldRows' satisfies keyof typeof import('./weightfield.js') };
