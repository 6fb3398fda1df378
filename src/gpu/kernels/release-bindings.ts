// Wrapper for shaders/device/release_bindings.wgsl: one dispatch that binds a small region of one
// buffer at every storage binding point (and a uniform at binding 0), so a driver that keeps
// destroyed buffers alive while they stay bound (Dawn's OpenGL ES backend on Mesa llvmpipe,
// where device memory is process memory) frees them now. GpuContext.trim runs it after
// destroying the pool's free buffers. Contract and TypeScript reference: releaseBindingsMarks
// (test/gpu/release-bindings.test.ts).
// Invariants: the slot count is the device's maxStorageBuffersPerShaderStage, so every binding
// point any kernel can use is rebound (Dawn numbers a pipeline's storage buffers from 0); each
// slot is its own aligned region of one buffer, so no two writable bindings overlap.

import type { GpuContext } from '../context.js';
import { packUniform } from '../dispatch.js';
import { GpuError } from '../errors.js';

/** Slots beyond this are not rebound (no adapter skystack knows reports more per stage). */
const MAX_SLOTS = 64;

/** The kernel's storage bindings on a device with these limits. */
export function releaseBindingSlots(limits: Pick<GPUSupportedLimits, 'maxStorageBuffersPerShaderStage'>): number {
  return Math.max(1, Math.min(MAX_SLOTS, limits.maxStorageBuffersPerShaderStage));
}

/** The TypeScript reference: the word the kernel stores in slot k (index k − 1) for `marker`. */
export function releaseBindingsMarks(marker: number, slots: number): Uint32Array {
  return Uint32Array.from({ length: slots }, (_, i) => (marker + i + 1) >>> 0);
}

/** The kernel's source for `slots` storage bindings (its `//@SLOTS` and `//@MARKS` lines expanded). */
export function expandReleaseBindings(source: string, slots: number): string {
  if (!/^\/\/@SLOTS$/m.test(source) || !/^\s*\/\/@MARKS$/m.test(source)) throw new GpuError('SHADER_INVALID', 'device/release_bindings.wgsl: the //@SLOTS or //@MARKS line is missing');
  const more = Array.from({ length: slots - 1 }, (_, i) => i + 2);
  return source
    .replace(/^\/\/@SLOTS$/m, more.map((k) => `@group(0) @binding(${k}) var<storage, read_write> slot_${k}: array<u32>;`).join('\n'))
    .replace(/^(\s*)\/\/@MARKS$/m, (_, indent: string) => more.map((k) => `${indent}slot_${k}[0] = params.marker + ${k}u;`).join('\n'));
}

/**
 * Submits the dispatch. `readMarks`: read the stored words back (slot k's at index k − 1) before
 * the buffer returns to the pool, for tests; otherwise nothing is waited for.
 */
export async function releaseBindings(ctx: GpuContext, options: { marker?: number; readMarks?: boolean } = {}): Promise<Uint32Array | null> {
  const slots = releaseBindingSlots(ctx.limits);
  const marker = options.marker ?? 0;
  const kernel = await ctx.pipeline('release_bindings', {}, { key: `slots${slots}`, transform: (source) => expandReleaseBindings(source, slots), extraBindings: Array<GPUBufferBindingType>(slots - 1).fill('storage') });
  const stride = Math.max(4, ctx.limits.minStorageBufferOffsetAlignment);
  const target = ctx.storage(slots * stride, 'release bindings');
  const uniform = ctx.uniform(packUniform([['u32', marker]]));
  ctx.retire(uniform);
  try {
    const group = ctx.bindGroup(kernel, [uniform, ...Array.from({ length: slots }, (_, k) => ({ buffer: target, offset: k * stride, size: 4 }))]);
    ctx.dispatch('release_bindings', kernel, group, [1]);
    if (!options.readMarks) return null;
    const words = new Uint32Array(await ctx.readback(target, slots * stride));
    return Uint32Array.from({ length: slots }, (_, k) => words[(k * stride) / 4]!);
  } finally {
    ctx.pool.release(target);
  }
}
