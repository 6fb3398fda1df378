// The stacking engine's inputs (engine.ts): one record per stacked frame (where its pixels come
// from, how they are warped, normalised and weighted) and the band plan that fits them into the
// memory budget. A pipeline builds the frame records from its own state (Raw Stack:
// rawstack/stacking-setup.ts) and may extend them; the engine reads only these fields.
// Band plan: bands of output rows across ALL stacked frames (exact global rejection), sized so
// that the frames' band slices plus every per-band and per-frame scratch buffer fit the memory
// budget (memory model in planStackBands).

import type { Affine } from '../../../algorithms/affine.js';
import { redSite, type CfaPattern } from '../../../cpu/debayer.js';
import { KERNEL_SUPPORT, sourceRowsFor, type WarpKernel } from '../../../cpu/warp.js';
import { planBands, type BandPlan } from '../../../gpu/band-planner.js';
import { GpuError } from '../../../gpu/errors.js';
import type { ChannelStats } from './normalization.js';

const MiB = 1024 * 1024;

export interface StackFrame {
  /** Position among the stacked frames (the frame's slot in a band). */
  slot: number;
  /** File the pixels come from (calibrated frame or light). */
  source: string;
  /** Reference pixel → frame pixel, row-major [a00, a01, a02, a10, a11, a12] (the warp's matrix). */
  toFrame: number[];
  /** Effective CFA pattern of stored pixel (0, 0); null for mono. */
  pattern: CfaPattern | null;
  stats: ChannelStats[];
  scale: number[];
  offset: number[];
  weight: number;
  /** Pixel noise per 2×2 phase for per-frame cosmetic correction (null when it is off). */
  noise: number[] | null;
  exposure: number | null;
  dateObs: string | null;
  /**
   * Electrons per ADU from the frame's header (EGAIN; not GAIN, the camera setting), for the
   * noise-model rejection's shot-noise term; null or absent when the header has none.
   */
  gain?: number | null;
}

/**
 * A full-resolution reference → frame matrix in superpixel coordinates: cell (u, v) covers
 * pixels 2u, 2u + 1 (centre 2u + 0.5), so p = 2q + 0.5 on both sides and
 * A_cell = [M | (M·(0.5, 0.5) + t − (0.5, 0.5)) / 2] for A = [M | t].
 */
export function toCells(m: Affine): Affine {
  const [[a, b, c], [d, e, f]] = m;
  return [
    [a, b, (0.5 * (a + b) + c - 0.5) / 2],
    [d, e, (0.5 * (d + e) + f - 0.5) / 2],
  ];
}

/** Rows the cosmetic correction reads around a corrected row (7×7 isolation window). */
export const COSMETIC_REACH = 3;
/** Rows of context bilinear debayering reads each side. */
export const DEBAYER_HALO = 1;

/**
 * A frame's raw pixel noise per stack channel from its per-phase noise: mono the plane's, OSC
 * R and B their sites', G the mean of the two green sites'. NaN when not measured.
 */
export function channelNoise(f: StackFrame, channels: number): number[] {
  const n = f.noise;
  if (!n) return new Array(channels).fill(NaN);
  if (channels === 1 || !f.pattern) return [n[0]!];
  const { rx, ry } = redSite(f.pattern);
  const at = (x: number, y: number) => n[((y & 1) << 1) | (x & 1)]!;
  return [at(rx, ry), 0.5 * (at(1 - rx, ry) + at(rx, 1 - ry)), at(1 - rx, 1 - ry)];
}

/**
 * Frame rows read beyond the rows the source planes come from: bilinear debayer halo (OSC) and
 * cosmetic reach; superpixel cells need no neighbours, and its halo stays even (whole cells).
 */
export function readHalo(osc: boolean, cosmetic: boolean, superpixel: boolean): number {
  if (osc && superpixel) return cosmetic ? COSMETIC_REACH + 1 : 0;
  return (osc ? DEBAYER_HALO : 0) + (cosmetic ? COSMETIC_REACH : 0);
}

const mib = (b: number) => `${(b / MiB).toFixed(1)} MiB`;

export interface StackPlanInput {
  /** Output size (= the warp's source planes' size). */
  width: number;
  height: number;
  /** The frames' size and full-resolution rows per source row (2 for superpixel). */
  frameWidth: number;
  frameHeight: number;
  binning: 1 | 2;
  frames: StackFrame[];
  channels: number;
  kernel: WarpKernel;
  /** Frames whose source bands are read ahead (runtime_limits.parallel_workers). */
  prefetch: number;
  /**
   * Host source sets (slots.ts hostSourceSets; default 1): with 2, a frame's read rows and
   * debayered planes are held while the next frame's are made.
   */
  hostSourceSets?: number;
  readHalo: number;
  /** Halo rows of every band (the pre-mask's growth reach), 0 without it. */
  haloRows: number;
  /** Host bytes per frame and pixel besides the slots (the pre-mask's host copy and mask byte). */
  extraBytesPerFramePixel: number;
  /** Bytes per band pixel besides the frames' (the host pre-mask's index lists; default 0). */
  extraBytesPerPixel?: number;
  budgetBytes: number;
  /** Largest storage binding when the stack runs on the device (each channel has its own buffer), else null. */
  maxBindingBytes: number | null;
  /**
   * Storage bindings the stack kernels may bind a channel's slots as (frame ranges,
   * gpu/kernels/src-ranges.ts), 1 where a kernel binds the whole band (device pre-mask, LN
   * applied after a bilinear device warp); default 1. The slots stay one buffer, so
   * maxBufferBytes bounds them too.
   */
  bindingRanges?: number;
  maxBufferBytes?: number;
  /** The binding offset alignment in bytes (a window may start that much before its first frame). */
  bindingAlign?: number;
  /**
   * Bytes of the frames' band slices aimed at (stackWorkingSet), the budget staying the
   * bound; absent: bands fill the budget.
   */
  workingSetBytes?: number;
}

/**
 * The frames' band slices (as planned: slots and pre-mask bytes) a device stack aims at, whatever
 * the frame count: bands of many frames get thinner instead of filling the budget, down to
 * STACK_WORKING_SET_MIN_ROWS (1000 frames of 2048 px: ~164 MB of slots there, against ~60 MB
 * for 30 frames, so the stack's memory is not yet flat in the frame count: bench/RESULTS.md,
 * "mem22c"). 128 MiB is the working set llvmpipe's
 * 128 MiB binding imposed on the runs bench/RESULTS.md recorded before it became a target (30 ×
 * 2048 px: 238-row bands, 30 × 1024 px: 481, 120 × 1024 px: 117), so on that adapter those plans
 * stay as measured. Not applied to a TypeScript stack (HostStore), which still fills the budget:
 * there 4 bands instead of 1 at 30 × 2048 px took 2.2x the CPU (RESULTS.md "memory flat in frame
 * count"), a per-band cost not yet found.
 */
export const STACK_WORKING_SET_BYTES = 128 * MiB;
/** Frame width up to which the working set is STACK_WORKING_SET_BYTES; wider frames scale it (stackWorkingSet). */
export const STACK_WORKING_SET_WIDTH = 2048;
/**
 * The working set a device stack of frames `width` px wide aims at: STACK_WORKING_SET_BYTES up to
 * STACK_WORKING_SET_WIDTH, in proportion to the width beyond. So a band holds as many rows as one
 * of 2048-px frames of the same frame count: the fixed rows every frame-band reads, uploads and
 * warps (kernel support, read halo, the pre-mask's growth, the row drift) stay the same share of
 * the band instead of growing with the width. Frames that wide already need a few hundred MB in
 * the phases before STACKING (16 OSC frames of 6248 px: 18 bands of 236 rows instead of 57 of 74,
 * STACKING's peak 1.0 GB against CALIBRATION's 1.2 GB, bench/RESULTS.md "band22"); the budget
 * and the binding stay the bounds, and frame counts at widths ≤ 2048 px plan as before.
 */
export const stackWorkingSet = (width: number): number => Math.round(STACK_WORKING_SET_BYTES * Math.max(1, width / STACK_WORKING_SET_WIDTH));
/**
 * Smallest band of a device stack when the working set is the limit (the band planner's own
 * floor is 32 rows): beyond ~200 frames of 2048 px, ~400 of 1024 px. At 1000 × 2048 px the
 * 32-row floor held 1000 × 36 rows × 2048 px × 4 B = 295 MB of slots; 16 rows hold 164 MB, for
 * more of the rows each frame-band warps and reads beyond its own (growth halo, kernel support).
 */
export const STACK_WORKING_SET_MIN_ROWS = 16;
/**
 * Smallest band when a device binding is the limit: the slots of a channel are one binding, so
 * many frames of a wide image get thin bands on the device rather than a TypeScript stack
 * (1000 × 1024 px on llvmpipe's 128 MiB binding: 28 rows instead of the host fallback).
 */
export const STACK_BINDING_MIN_ROWS = 16;

/**
 * The one-binding size that stands for R frame-range windows of `maxBinding` bytes: windows hold
 * whole frames (ceil(N / R) each) and may start up to align - 4 bytes early, so slices of s bytes
 * fit when ceil(N / R) * s + align <= maxBinding, which R (B - a) N / (N + R) >= N s guarantees
 * (ceil(N / R) <= (N + R) / R); and the one buffer holding them all must fit maxBuffer.
 */
export function rangesBindingBytes(maxBinding: number, frames: number, ranges: number, maxBuffer = Number.MAX_SAFE_INTEGER, align = 256): number {
  if (ranges <= 1) return maxBinding;
  return Math.min(maxBuffer, Math.floor((ranges * (maxBinding - align) * frames) / (frames + ranges)));
}

export interface StackPlan extends BandPlan {
  /** Bytes reserved besides bytesPerBand (which already holds the per-row scratch): the source rows' drift part and small fixed buffers. */
  scratchBytes: number;
  /** Largest work band: owned rows plus halo. */
  maxWorkRows: number;
  /** Most source rows any frame needs for any band (buffer sizes). */
  maxSourceRows: number;
  /** Most rows read for any frame and band (source rows plus read halo). */
  maxReadRows: number;
  memoryBudgetBytes: number;
}

/**
 * Memory model (bytes; W = width, N = frames, C = channels, P = prefetch):
 *   per band row:        N·(4C + X)·W   every frame's warped slice of the band (the planner's
 *                                       input, halo rows included), X = the pre-mask's host copy
 *                                       of one channel and its mask byte (5, or 0 when off)
 *                      + (24 + 4C)·W    mean, count, median and warp output buffers, their
 *                                       read-back staging, host result rows
 *                      + Y·W            Y = extraBytesPerPixel (the host pre-mask's index lists)
 *   per source row:      (P + H)·4·B·Wf  P reads in flight and the cosmetic copy (B frame rows of
 *                                       Wf pixels per source row: B = 2 for superpixel, else 1),
 *                                       H = hostSourceSets: a held frame's read besides
 *                      + (H + 1)C·4·W   the source planes on the host (H sets) and on the device
 * where a band of R rows needs at most S·R + E source rows (S = largest |a11|, E = the drift of
 * a row across the width, |a10|·(W − 1), plus kernel support, read halo and alignment). The E part
 * is reserved up front, the S part per owned row. This bounds host and device use together (the
 * device pool gets the same budget), so one budget value covers both.
 */
export function planStackBands(input: StackPlanInput): StackPlan {
  const { width: W, height: H, frames, channels: C, kernel } = input;
  const N = frames.length;
  const support = KERNEL_SUPPORT[kernel];
  let S = 1;
  let drift = 0;
  for (const f of frames) {
    S = Math.max(S, Math.abs(f.toFrame[4]!));
    drift = Math.max(drift, Math.abs(f.toFrame[3]!) * (W - 1));
  }
  const E = Math.ceil(drift) + support.before + support.after + 2 + 2 * input.readHalo + 2 + Math.ceil(2 * input.haloRows * S);
  const sets = input.hostSourceSets ?? 1;
  const perSourceRow = (input.prefetch + sets) * 4 * input.binning * input.frameWidth + (sets + 1) * C * 4 * W;
  const fixed = E * perSourceRow + 2 * N * C * 4 + 64 * 1024;
  const budget = input.budgetBytes - fixed;
  const bytesPerPixel = 4 * C + input.extraBytesPerFramePixel;
  const outputBytesPerPixel = 24 + 4 * C + (input.extraBytesPerPixel ?? 0) + Math.ceil((S * perSourceRow) / W);
  let plan: BandPlan;
  try {
    plan = planBands({
      width: W,
      height: H,
      frames: N,
      bytesPerPixel,
      outputBytesPerPixel,
      haloRows: input.haloRows,
      budgetBytes: Math.max(budget, 0),
      // Each channel's slots are one binding, 4 B per frame pixel; the pre-mask's bytes are
      // host memory or buffers of their own (device pre-mask: its compacted owned rows and mask,
      // each no larger than the slots).
      maxBindingBytes: input.maxBindingBytes === null ? Number.MAX_SAFE_INTEGER : rangesBindingBytes(input.maxBindingBytes, N, input.bindingRanges ?? 1, input.maxBufferBytes, input.bindingAlign ?? 256),
      bindingBytesPerPixel: 4,
      bindingMinRows: STACK_BINDING_MIN_ROWS,
      targetBytes: input.workingSetBytes,
      targetMinRows: STACK_WORKING_SET_MIN_ROWS,
    });
  } catch (e) {
    if (!(e instanceof GpuError) || e.code !== 'BUDGET_TOO_SMALL') throw e;
    // The planner saw the budget less the fixed reserve; say what the whole run needs.
    const minRows = Math.min(H, 32);
    const need = fixed + Math.min(H, minRows + 2 * input.haloRows) * N * W * bytesPerPixel + minRows * W * outputBytesPerPixel;
    throw new GpuError(
      'BUDGET_TOO_SMALL',
      `memory budget ${mib(input.budgetBytes)} cannot hold a ${minRows}-row band of ${N} frames x ${W} px x ${C} channel(s) with its scratch (needs ${mib(need)}); raise runtime_limits.memory_budget to at least ${Math.ceil(need / MiB)} MiB`,
    );
  }
  // Exact source-row needs for buffer sizes.
  let maxSourceRows = 0;
  for (const f of frames) {
    for (const b of plan.bands) maxSourceRows = Math.max(maxSourceRows, sourceRowsFor(f.toFrame, b.readY0, b.readRows, W, H, kernel).rows);
  }
  return {
    ...plan,
    maxWorkRows: Math.max(...plan.bands.map((b) => b.readRows)),
    scratchBytes: fixed,
    maxSourceRows,
    maxReadRows: Math.min(input.frameHeight, maxSourceRows * input.binning + 2 * input.readHalo + 2),
    memoryBudgetBytes: input.budgetBytes,
  };
}
