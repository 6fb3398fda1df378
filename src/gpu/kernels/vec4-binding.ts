// Bindings for kernels that read `array<vec4f>`: llvmpipe loads storage per SIMD lane, so
// 16-byte loads run several times faster than 4-byte ones. Such a kernel reads ceil(n / 4)
// vec4 and ignores the lanes past n, so its binding must reach the next 16-byte boundary.
// This widens a binding to that size when the buffer has room (pooled buffers are 256-byte
// aligned, so they always do) and refuses, with the reason, when it does not.
// (A candidate for src/gpu/dispatch.ts; kept here until the shared file adopts it.)

import type { BindingResource } from '../context.js';
import { GpuError } from '../errors.js';

/** A binding of `count` f32 samples starting at the resource's offset, widened to whole vec4. */
export function vec4Binding(resource: BindingResource, count: number, what: string): { buffer: GPUBuffer; offset: number; size: number } {
  const { buffer, offset = 0 } = 'buffer' in resource && typeof (resource as { buffer?: unknown }).buffer === 'object' ? (resource as { buffer: GPUBuffer; offset?: number }) : { buffer: resource as GPUBuffer };
  const size = Math.max(16, Math.ceil(count / 4) * 16);
  if (offset % 16 !== 0) throw new GpuError('BAD_ARGUMENT', `${what}: binding offset ${offset} is not a multiple of 16 bytes`);
  if (offset + size > buffer.size) {
    throw new GpuError('BAD_ARGUMENT', `${what}: ${count} samples at offset ${offset} need ${size} bytes (whole vec4) but the buffer holds ${buffer.size}; pad it to 16 bytes`);
  }
  return { buffer, offset, size };
}
