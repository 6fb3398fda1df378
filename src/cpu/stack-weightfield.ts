// TypeScript reference for shaders/stack/stack_weightfield.wgsl: the stack of stack.ts with a
// weight per frame AND pixel, read from a smooth field instead of one weight per frame.
//
// The field (docs/tiled-workflow.md "The weight field"): the image is covered by a grid of tiles
// (per axis: origins, all of one size T; tiles are every pair of an x and a y origin). Each tile
// t has a per-frame weight table[f][t] (already divided by the tile's sum over frames, so the
// tile's weights sum to 1). Every tile carries the separable window
//   h(i) = 0.5 · (1 − cos(2π(i + ½)/T)),  i = 0 … T − 1 inside the tile, 0 outside,
// which is strictly positive inside, so every pixel of a covered image has Σ_t h_t > 0. With
// ĥ_t = h_t / Σ_t h_t (separable, because the grid is a product of its axes), a frame's weight
// at pixel p is  ω_f(p) = Σ_t ĥ_t(p) · table[f][t].
// Then, with clipping off and every sample valid, the weighted mean Σ_f ω_f I_f / Σ_f ω_f is
// exactly the overlap-add of the per-tile weighted means Σ_t ĥ_t M_t (ola-exact.ts checks it),
// but it is computed in one pass over the frames, with per-pixel rejection over ALL frames. A
// frame without data at p (NaN) drops out of both sums, so partly covered edges are not
// darkened. Weights enter the method code of stack.ts unchanged (weighted centre, weighted
// sigma, weighted mean of the survivors); median ignores weights as there.
// Axis tables: for each position along an axis, AXIS_SLOTS (tile index, normalised window
// weight) pairs; index −1 marks an unused slot. Built once per image (axisWindows).

import { pixelStacker, type StackParams, type StackResult } from './stack.js';

/** Most tiles covering one position along an axis (two regular tiles and the flush edge tile, plus one spare). */
export const AXIS_SLOTS = 4;

export interface AxisWindows {
  /** positions × AXIS_SLOTS tile indices (−1: unused). */
  tile: Int32Array;
  /** positions × AXIS_SLOTS window weights, normalised to sum 1 per position. */
  weight: Float32Array;
}

/** The window of a tile of size T at offset i inside it (strictly positive for 0 ≤ i < T). */
export function tileWindow(i: number, T: number): number {
  return 0.5 * (1 - Math.cos((2 * Math.PI * (i + 0.5)) / T));
}

/** The normalised windows along one axis of n positions, for tiles of size T at `origins`. */
export function axisWindows(origins: readonly number[], T: number, n: number): AxisWindows {
  const tile = new Int32Array(n * AXIS_SLOTS).fill(-1);
  const weight = new Float32Array(n * AXIS_SLOTS);
  const h = new Float64Array(AXIS_SLOTS);
  for (let x = 0; x < n; x++) {
    let k = 0;
    let sum = 0;
    for (let t = 0; t < origins.length; t++) {
      const i = x - origins[t]!;
      if (i < 0 || i >= T) continue;
      if (k === AXIS_SLOTS) throw new RangeError(`more than ${AXIS_SLOTS} tiles cover position ${x}`);
      tile[x * AXIS_SLOTS + k] = t;
      h[k] = tileWindow(i, T);
      sum += h[k]!;
      k++;
    }
    if (k === 0) throw new RangeError(`no tile covers position ${x}`);
    for (let j = 0; j < k; j++) weight[x * AXIS_SLOTS + j] = h[j]! / sum;
  }
  return { tile, weight };
}

/** A weight field over the rows of one band (rows relative to the band's first row). */
export interface WeightFieldRows {
  /** Tiles along x and y. */
  tilesX: number;
  tilesY: number;
  /** frames × tilesY × tilesX normalised weights (each tile's column over frames sums to 1). */
  table: Float32Array;
  /** Column windows (width × AXIS_SLOTS). */
  cols: AxisWindows;
  /** Row windows of the band's rows (rows × AXIS_SLOTS). */
  rows: AxisWindows;
}

/**
 * Frame weights of every pixel of one row into `out` (width × frames, pixel-major): first the
 * row's blend of the tile rows (frames × tilesX), then per pixel the blend of its columns.
 */
export function rowWeights(field: WeightFieldRows, frames: number, width: number, r: number, rowBlend: Float64Array, out: Float64Array): void {
  const { tilesX, tilesY, table, cols, rows } = field;
  rowBlend.fill(0);
  for (let j = 0; j < AXIS_SLOTS; j++) {
    const ty = rows.tile[r * AXIS_SLOTS + j]!;
    if (ty < 0) continue;
    const a = rows.weight[r * AXIS_SLOTS + j]!;
    for (let f = 0; f < frames; f++) {
      const src = (f * tilesY + ty) * tilesX;
      const dst = f * tilesX;
      for (let tx = 0; tx < tilesX; tx++) rowBlend[dst + tx]! += a * table[src + tx]!;
    }
  }
  for (let x = 0; x < width; x++) {
    const o = x * frames;
    for (let f = 0; f < frames; f++) out[o + f] = 0;
    for (let i = 0; i < AXIS_SLOTS; i++) {
      const tx = cols.tile[x * AXIS_SLOTS + i]!;
      if (tx < 0) continue;
      const b = cols.weight[x * AXIS_SLOTS + i]!;
      for (let f = 0; f < frames; f++) out[o + f]! += b * rowBlend[f * tilesX + tx]!;
    }
  }
}

/** Stacks `frames` (frame-major, f32, as stack.ts) with per-pixel weights from `field`; `p.weight` is not used. */
export function stackWeightfield(frames: Float32Array, p: StackParams, field: WeightFieldRows): StackResult {
  const { width, rows, frames: n } = p;
  if (field.table.length !== n * field.tilesX * field.tilesY) throw new RangeError(`stack_weightfield: table holds ${field.table.length} weights, need ${n} × ${field.tilesY} × ${field.tilesX}`);
  if (field.cols.tile.length < width * AXIS_SLOTS || field.rows.tile.length < rows * AXIS_SLOTS) throw new RangeError('stack_weightfield: axis tables shorter than the band');
  if (frames.length < n * rows * width) throw new RangeError(`stack_weightfield: input holds ${frames.length} samples, need ${n} x ${rows} x ${width}`);
  const s = pixelStacker({ ...p, weight: undefined });
  const plane = width * rows;
  const rowBlend = new Float64Array(n * field.tilesX);
  const w = new Float64Array(width * n);
  // One row's normalised samples, pixel-major (filled frame by frame: sequential reads).
  const samples = new Float32Array(width * n);
  const { tile, weight, scale, offset } = s;
  for (let r = 0; r < rows; r++) {
    rowWeights(field, n, width, r, rowBlend, w);
    for (let f = 0; f < n; f++) {
      const sc = scale[f]!;
      const of = offset[f]!;
      const from = f * plane + r * width;
      for (let x = 0; x < width; x++) samples[x * n + f] = frames[from + x]! * sc + of; // rounded to f32 by the store
    }
    for (let x = 0; x < width; x++) {
      const o = x * n;
      for (let f = 0; f < n; f++) {
        tile[f] = samples[o + f]!;
        weight[f] = w[o + f]!;
      }
      s.pixel(r * width + x);
    }
  }
  return s.result();
}
