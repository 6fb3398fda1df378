// Which path runs each kernel (DESIGN §4): on a hardware GPU every kernel runs in WGSL; on a
// software adapter (llvmpipe) only the compute-heavy ones do (stack, Lanczos warp), because
// the gather- and memory-bound ones (debayer, bilinear warp, calibrate, statistics) are faster
// in TypeScript with worker threads there unless the data already sits on the device
// (numbers in reference/webgpu-cpu.md and bench/RESULTS.md); without an adapter, TypeScript.
// The asinh stretch kernel alone is ~20x TypeScript on llvmpipe, but the whole HMS phase was
// slower there (3.1 s vs 2.0 s at 2048x1536: transfers and statistics dominate), so it stays on
// the TypeScript path until the phase keeps its data on the device.

import type { GpuContext } from '../gpu/context.js';

export type KernelFamily = 'stack' | 'warp_lanczos3' | 'warp_bilinear' | 'debayer' | 'calibrate' | 'stats' | 'stretch' | 'decode';

const SOFTWARE_GPU_KERNELS: ReadonlySet<KernelFamily> = new Set(['stack', 'warp_lanczos3']);

/** The context to run `kernel` on, or null for the TypeScript path. */
export function gpuFor(gpu: GpuContext | null, kernel: KernelFamily): GpuContext | null {
  if (!gpu) return null;
  if (gpu.info.kind === 'gpu') return gpu;
  return SOFTWARE_GPU_KERNELS.has(kernel) ? gpu : null;
}
