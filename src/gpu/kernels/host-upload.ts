// Upload of host Float32Arrays that may live in shared memory, for the kernel wrappers' host
// forms. Dawn's queue.writeBuffer refuses views of a SharedArrayBuffer ("Invalid argument"),
// and the CPU worker path keeps frames in shared memory, so such data goes through a small
// reusable bounce array (4 MiB at a time) instead of one full-size copy.
// Belongs in GpuContext.upload/write once that accepts shared memory (noted for its owner).

import { isShared } from '../../cpu/worker-pool.js';
import type { GpuContext } from '../context.js';

const BOUNCE_FLOATS = 1 << 20;

/** A pooled storage buffer holding `data` (shared or not), as ctx.upload would return. */
export function uploadFloat32(ctx: GpuContext, data: Float32Array, label = 'upload'): GPUBuffer {
  if (!isShared(data)) return ctx.upload(data, GPUBufferUsage.STORAGE, label);
  const buffer = ctx.storage(data.byteLength, label);
  const bounce = new Float32Array(Math.min(data.length, BOUNCE_FLOATS));
  for (let i = 0; i < data.length; i += bounce.length) {
    const part = data.subarray(i, i + bounce.length);
    bounce.set(part);
    // writeBuffer copies before it returns, so the bounce array can be refilled at once.
    ctx.write(buffer, bounce.subarray(0, part.length), i * 4);
  }
  return buffer;
}
