// Which path runs each kernel: the one place that decides (docs/ARCHITECTURE.md "GPU strategy").
// - Per kernel family (gpuFor): on a hardware GPU every kernel runs in WGSL; on a software
//   adapter (llvmpipe) only the compute-heavy ones do (stack, Lanczos warp), because the
//   gather- and memory-bound ones (debayer, bilinear warp, calibrate, statistics) are faster in
//   TypeScript with worker threads there unless the data already sits on the device (numbers in
//   bench/RESULTS.md); without an adapter, TypeScript. The asinh stretch kernel alone is ~20x
//   TypeScript on llvmpipe, but the whole HMS phase was slower there (3.1 s vs 2.0 s at
//   2048x1536: transfers and statistics dominate), so it stays on the TypeScript path until the
//   phase keeps its data on the device.
// - The tiled workflow's kernels (tile_metrics, stack_weightfield) run in WGSL on a hardware GPU
//   only: on llvmpipe tile_metrics is a memory-bound reduction like the statistics (unmeasured),
//   and stack_weightfield, which recomputes its weights in every rejection pass, took 3-4x the
//   TypeScript workers' time in a tiled STACKING (bench/RESULTS.md, 2026-11-29).
// - The stack kernel takes at most maxStackFrames frames in one dispatch: more frames stack in
//   TypeScript (stackContextFor).
// - STACKING's band chain (stackingPlacement): debayering on the device only feeds a device warp
//   (the chain never bounces debayered planes through the host), and superpixel cells are formed
//   on the host (a copy, no kernel worth a dispatch); the outlier pre-mask runs in WGSL only on a
//   hardware GPU with a device stack (on llvmpipe the branchy WGSL is ~7x slower than bringing a
//   channel's slots to the host, measured), with either seed bound (samples' spread, or the
//   noise model's of rejection.bounds noise_model: premask_flag.wgsl's NOISE override).

import type { WarpKernel } from '../cpu/warp.js';
import type { GpuContext } from '../gpu/context.js';
import { maxStackFrames } from '../gpu/kernels/stack.js';

export type KernelFamily = 'stack' | 'warp_lanczos3' | 'warp_bilinear' | 'debayer' | 'calibrate' | 'stats' | 'stretch' | 'decode' | 'tile_metrics' | 'stack_weightfield';

const SOFTWARE_GPU_KERNELS: ReadonlySet<KernelFamily> = new Set(['stack', 'warp_lanczos3']);

/** The context to run `kernel` on, or null for the TypeScript path. */
export function gpuFor(gpu: GpuContext | null, kernel: KernelFamily): GpuContext | null {
  if (!gpu) return null;
  if (gpu.info.kind === 'gpu') return gpu;
  return SOFTWARE_GPU_KERNELS.has(kernel) ? gpu : null;
}

/** The context to stack `frames` frames on (the stack family's, when one dispatch takes them all), else null. */
export function stackContextFor(gpu: GpuContext | null, frames: number): GpuContext | null {
  const ctx = gpuFor(gpu, 'stack');
  return ctx && frames <= maxStackFrames(ctx.limits) ? ctx : null;
}

/** Where STACKING's band chain runs (null: TypeScript), and why the stack left the device, if it did. */
export interface StackingPlacement {
  debayer: GpuContext | null;
  warp: GpuContext | null;
  stack: GpuContext | null;
  premaskOnDevice: boolean;
  /** Set when the stack kernel could have run on the device but does not. */
  stackOnHost: string | null;
}

export function stackingPlacement(gpu: GpuContext | null, o: { frames: number; osc: boolean; superpixel: boolean; kernel: WarpKernel; premaskOnDevice?: boolean | null; noiseModel?: boolean }): StackingPlacement {
  const wanted = gpuFor(gpu, 'stack');
  const stack = stackContextFor(gpu, o.frames);
  const warp = gpuFor(gpu, o.kernel === 'lanczos3' ? 'warp_lanczos3' : 'warp_bilinear');
  const debayer = o.osc && !o.superpixel && warp ? gpuFor(gpu, 'debayer') : null;
  const premaskOnDevice = stack !== null && (o.premaskOnDevice ?? stack.info.kind === 'gpu');
  const stackOnHost = wanted && !stack ? `${o.frames} frames exceed what one stack dispatch takes (${maxStackFrames(wanted.limits)}); stacking in TypeScript` : null;
  return { debayer, warp, stack, premaskOnDevice, stackOnHost };
}

/** The placement with the stack (and so the pre-mask) in TypeScript, e.g. when the band plan cannot fit a device binding. */
export function withStackOnHost(p: StackingPlacement, why: string): StackingPlacement {
  return { ...p, stack: null, premaskOnDevice: false, stackOnHost: why };
}
