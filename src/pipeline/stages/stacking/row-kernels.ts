// Row-range kernels of STACKING's TypeScript path, run on the worker pool (src/cpu/worker-pool.ts)
// or inline when runtime_limits.parallel_workers is 1. Both split a band by output rows; each
// range is computed by the same reference kernels (src/cpu/warp.ts, src/cpu/stack.ts) as a
// whole band would be, so the result does not depend on the split:
// - warpRows: warps rows [start, end) of the band for every channel of one frame into that
//   frame's slot of the band arrays (the source band covers the whole band's needs, hence any
//   sub-range's); with `ln`, each warped row is locally normalised (a·v + b, src/cpu/ln-apply.ts)
//   before it is stored, so local normalization costs no pass of its own over the band;
// - stackRows: copies rows [start, end) of every frame's slot into frame-major tiles (whole rows,
//   or column blocks when frames × width is large; at most STACK_TILE_SAMPLES samples, so the
//   scratch does not grow with the frame count), stacks them and writes the mean rows; per-frame
//   rejected-sample counts are added atomically into the shared tallies (low, then high).
// - rejectRows: the noise-model rejection (src/cpu/reject-noise.ts) of owned rows [start, end),
//   read in place from the band's layout, with the per-pixel centre and sky rows; tallies as
//   stackRows.
// All typed arrays in the arguments must be SharedArrayBuffer views when a pool runs them.

import type { GridGeometry } from '../../../algorithms/local-normalization.js';
import { lnApply } from '../../../cpu/ln-apply.js';
import { rejectNoiseModel, type NoiseRejectMethod } from '../../../cpu/reject-noise.js';
import { stack, type StackParams, type StackResult } from '../../../cpu/stack.js';
import type { PoolKernel } from '../../../cpu/worker-pool.js';
import { warp, type WarpKernel } from '../../../cpu/warp.js';

export interface WarpRowsArgs {
  kernel: WarpKernel;
  /** Reference → frame matrix, row-major 2×3. */
  affine: number[];
  width: number;
  height: number;
  /** First output row of the band (full image) and its row count. */
  bandY0: number;
  bandRows: number;
  /** Source planes (one per channel), each srcRows × width from full-image row srcY0. */
  sources: Float32Array[];
  srcY0: number;
  srcRows: number;
  /** Band arrays (one per channel, frames × bandRows × width) and this frame's slot. */
  bands: Float32Array[];
  slot: number;
  /** Local normalization of this frame: the grid and, per channel, its nodes' (a, b) (packLnCoefficients' layout). */
  ln?: { grid: GridGeometry; coefficients: Float32Array[] } | null;
}

export function warpRows(a: WarpRowsArgs, start: number, end: number): void {
  if (end <= start) return;
  const plane = a.bandRows * a.width;
  for (let c = 0; c < a.sources.length; c++) {
    const out = warp(a.kernel, a.sources[c]!, {
      affine: a.affine,
      width: a.width,
      y0: a.bandY0 + start,
      rows: end - start,
      srcWidth: a.width,
      srcHeight: a.height,
      srcY0: a.srcY0,
      srcRows: a.srcRows,
    });
    if (a.ln) lnApply(out, { width: a.width, rows: end - start, frames: 1, y0: a.bandY0 + start, grid: a.ln.grid, coefficients: a.ln.coefficients[c]! });
    a.bands[c]!.set(out, a.slot * plane + start * a.width);
  }
}

/** The stack's parameters (cpu/stack.ts) with every frame's normalisation and weight given, the band and the tallies. */
export interface StackRowsArgs extends Omit<StackParams, 'scale' | 'offset' | 'weight' | 'winsorK'> {
  /** Frames × rows × width, one channel. */
  band: Float32Array;
  scale: number[];
  offset: number[];
  weight: number[];
  /** rows × width output (weighted mean of the survivors). */
  mean: Float32Array;
  /** 2·frames counters: rejected low per frame, then rejected high per frame (added to). */
  rejected: Uint32Array;
  /** [surviving samples, pixels without a survivor] (added to). */
  counts: BigUint64Array;
}

/** Most samples in one stack tile (4 MiB of f32): bounds the scratch whatever the frame count. */
export const STACK_TILE_SAMPLES = 1 << 20;

export function stackRows(a: StackRowsArgs, start: number, end: number): void {
  if (end <= start) return;
  const { width: W, frames: N } = a;
  const plane = a.rows * W;
  // Tiles of whole rows when N·W is small, else of column blocks within a row, so a tile never
  // exceeds STACK_TILE_SAMPLES even for thousands of frames.
  const cols = Math.max(1, Math.min(W, Math.floor(STACK_TILE_SAMPLES / N)));
  const rowsPerTile = cols < W ? 1 : Math.max(1, Math.floor(STACK_TILE_SAMPLES / (N * W)));
  const tile = new Float32Array(N * Math.min(rowsPerTile, end - start) * cols);
  let empty = 0;
  let survivors = 0;
  const low = new Uint32Array(N);
  const high = new Uint32Array(N);
  for (let r0 = start; r0 < end; r0 += rowsPerTile) {
    const rows = Math.min(rowsPerTile, end - r0);
    for (let x0 = 0; x0 < W; x0 += cols) {
      const cw = Math.min(cols, W - x0);
      const n = rows * cw;
      for (let f = 0; f < N; f++) {
        for (let r = 0; r < rows; r++) {
          const from = f * plane + (r0 + r) * W + x0;
          tile.set(a.band.subarray(from, from + cw), f * n + r * cw);
        }
      }
      const res = stack(tile.subarray(0, N * n), {
        width: cw,
        rows,
        frames: N,
        method: a.method,
        low: a.low,
        high: a.high,
        maxIters: a.maxIters,
        minFraction: a.minFraction,
        scale: a.scale,
        offset: a.offset,
        weight: a.weight,
      });
      for (let r = 0; r < rows; r++) a.mean.set(res.mean.subarray(r * cw, (r + 1) * cw), (r0 + r) * W + x0);
      for (let f = 0; f < N; f++) {
        low[f]! += res.rejectedLow[f]!;
        high[f]! += res.rejectedHigh[f]!;
      }
      for (let i = 0; i < n; i++) {
        const k = res.count[i]!;
        survivors += k;
        if (k === 0) empty++;
      }
    }
  }
  const shared = a.rejected.buffer instanceof SharedArrayBuffer;
  for (let f = 0; f < N; f++) {
    const lo = low[f]!;
    const hi = high[f]!;
    if (shared) {
      if (lo) Atomics.add(a.rejected, f, lo);
      if (hi) Atomics.add(a.rejected, N + f, hi);
    } else {
      a.rejected[f]! += lo;
      a.rejected[N + f]! += hi;
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

/** Adds a stack result's tallies into the shared (or plain) counters. */
export function addTallies(res: Pick<StackResult, 'rejectedLow' | 'rejectedHigh' | 'count'>, n: number, rejected: Uint32Array, counts: BigUint64Array): void {
  const N = res.rejectedLow.length;
  const shared = rejected.buffer instanceof SharedArrayBuffer;
  for (let f = 0; f < N; f++) {
    const lo = res.rejectedLow[f]!;
    const hi = res.rejectedHigh[f]!;
    if (shared) {
      if (lo) Atomics.add(rejected, f, lo);
      if (hi) Atomics.add(rejected, N + f, hi);
    } else {
      rejected[f]! += lo;
      rejected[N + f]! += hi;
    }
  }
  let survivors = 0;
  let empty = 0;
  for (let i = 0; i < n; i++) {
    const k = res.count[i]!;
    survivors += k;
    if (k === 0) empty++;
  }
  if (counts.buffer instanceof SharedArrayBuffer) {
    Atomics.add(counts, 0, BigInt(survivors));
    Atomics.add(counts, 1, BigInt(empty));
  } else {
    counts[0]! += BigInt(survivors);
    counts[1]! += BigInt(empty);
  }
}

export interface RejectRowsArgs extends StackRowsArgs {
  method: NoiseRejectMethod;
  /** Rows per frame in `band` and the band row of output row 0. */
  srcRows: number;
  srcRow0: number;
  /** Per frame: normalised sky noise σ_f, shot-noise coefficient K_f, seeing tolerance α_f. */
  noise: number[];
  poisson: number[];
  seeing: number[];
  /** Start centre (the median pass) rows × width from row centreRow0, or null (weighted mean). */
  centre: Float32Array | null;
  centreRow0: number;
  /** Sky under each output pixel, rows × width (normalised units). */
  background: Float32Array;
}

export function rejectRows(a: RejectRowsArgs, start: number, end: number): void {
  if (end <= start) return;
  const W = a.width;
  const res = rejectNoiseModel(
    a.band,
    {
      width: W,
      rows: end - start,
      frames: a.frames,
      method: a.method,
      low: a.low,
      high: a.high,
      maxIters: a.maxIters,
      minFraction: a.minFraction,
      scale: a.scale,
      offset: a.offset,
      weight: a.weight,
      noise: a.noise,
      poisson: a.poisson,
      seeing: a.seeing,
      srcRows: a.srcRows,
      srcRow0: a.srcRow0 + start,
    },
    {
      centre: a.centre ? a.centre.subarray((a.centreRow0 + start) * W, (a.centreRow0 + end) * W) : null,
      background: a.background.subarray(start * W, end * W),
    },
  );
  a.mean.set(res.mean, start * W);
  addTallies(res, (end - start) * W, a.rejected, a.counts);
}

export interface SuperpixelArgs {
  /** Frame rows from full-image row readY0, frameWidth pixels each (a raw Bayer mosaic). */
  input: Float32Array;
  frameWidth: number;
  readY0: number;
  /** Colour of the 2×2 phases (y & 1) * 2 + (x & 1) of the frame: 0 R, 1 G, 2 B (phaseChannels of the effective pattern). */
  phases: number[];
  /** Cells per row (⌊frameWidth / 2⌋) and the first cell row of the planes. */
  width: number;
  srcY0: number;
  r: Float32Array;
  g: Float32Array;
  b: Float32Array;
}

/**
 * Superpixel debayering of cell rows [start, end) (relative to srcY0): each 2×2 Bayer cell
 * (2u, 2v) … (2u + 1, 2v + 1) becomes one RGB pixel: R and B as measured, G the mean of the two
 * greens (the finite one when the other is NaN). No interpolation: every output value is a
 * measurement, at half the resolution, centred on the cell (frame pixel 2u + 0.5, 2v + 0.5).
 */
export function superpixelRows(a: SuperpixelArgs, start: number, end: number): void {
  const { input, frameWidth: Wf, width: W } = a;
  // Offsets of each colour's sites inside a cell: (y & 1) * Wf + (x & 1).
  const at: number[][] = [[], [], []];
  for (let p = 0; p < 4; p++) at[a.phases[p]!]!.push((p >> 1) * Wf + (p & 1));
  const [ro] = at[0]!;
  const [g0, g1] = at[1]!;
  const [bo] = at[2]!;
  for (let i = start; i < end; i++) {
    const row = (2 * (a.srcY0 + i) - a.readY0) * Wf;
    const o = i * W;
    for (let u = 0; u < W; u++) {
      const c = row + 2 * u;
      a.r[o + u] = input[c + ro!]!;
      a.b[o + u] = input[c + bo!]!;
      const x = input[c + g0!]!;
      const y = input[c + g1!]!;
      a.g[o + u] = x === x ? (y === y ? 0.5 * (x + y) : x) : y;
    }
  }
}

/** These kernels as worker-pool handles (the module is this file, so the path is checked by the compiler). */
export const WARP_ROWS: PoolKernel = { module: import.meta.url, name: 'warpRows' satisfies keyof typeof import('./row-kernels.js') };
export const STACK_ROWS: PoolKernel = { module: import.meta.url, name: 'stackRows' satisfies keyof typeof import('./row-kernels.js') };
export const REJECT_ROWS: PoolKernel = { module: import.meta.url, name: 'rejectRows' satisfies keyof typeof import('./row-kernels.js') };
export const SUPERPIXEL_ROWS: PoolKernel = { module: import.meta.url, name: 'superpixelRows' satisfies keyof typeof import('./row-kernels.js') };
