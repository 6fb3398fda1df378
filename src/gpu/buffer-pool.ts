// GPU buffer pool with byte accounting. Buffers are reused by (usage, size) so a band loop
// allocates once and then recycles; the byte counts feed the memory budget, and a pool limit
// turns an over-budget plan into a typed error instead of a driver out-of-memory.
// Invariant: allocatedBytes = inUseBytes + free bytes; every acquire is paired with a release.
// Buffers are zero when created (WebGPU's rule). On Dawn's OpenGL ES backend (Mesa llvmpipe,
// device memory = process memory) a buffer is zeroed lazily at its first use, and a first use
// that covers only part of it (a frame's slice of a band's slots) makes Dawn fill the whole
// buffer from a zero vector of the buffer's size: a transient as large as the buffer (a 300 MiB
// buffer: peak RSS +300 MiB, measured). There the pool creates buffers mapped at creation, which
// that backend zeroes in place (it maps the buffer's own storage); other backends would stage
// such a mapping in a host buffer of the same size, so they keep the lazy zeroing.

import { GpuError } from './errors.js';

/** Buffer sizes are rounded to this so bands of equal shape share buffers. */
export const BUFFER_ALIGN = 256;

export interface PoolStats {
  allocatedBytes: number;
  inUseBytes: number;
  peakBytes: number;
  buffersCreated: number;
  reuses: number;
}

export class BufferPool {
  private readonly free = new Map<string, GPUBuffer[]>();
  private readonly sizes = new WeakMap<GPUBuffer, { key: string; size: number }>();
  readonly stats: PoolStats = { allocatedBytes: 0, inUseBytes: 0, peakBytes: 0, buffersCreated: 0, reuses: 0 };

  constructor(
    private readonly device: GPUDevice,
    /** Upper bound on bytes held by this pool (free and in use). */
    public limitBytes = Number.POSITIVE_INFINITY,
    /** Zero new buffers through a mapping at creation (Dawn's OpenGL ES backend; head comment). */
    private readonly zeroMapped = false,
  ) {}

  static roundSize(bytes: number): number {
    return Math.max(BUFFER_ALIGN, Math.ceil(bytes / BUFFER_ALIGN) * BUFFER_ALIGN);
  }

  acquire(bytes: number, usage: GPUBufferUsageFlags, label = 'pooled'): GPUBuffer {
    const size = BufferPool.roundSize(bytes);
    const key = `${usage}:${size}`;
    const reusable = this.free.get(key)?.pop();
    if (reusable) {
      this.stats.reuses++;
      this.stats.inUseBytes += size;
      return reusable;
    }
    if (this.stats.allocatedBytes + size > this.limitBytes) this.trim();
    if (this.stats.allocatedBytes + size > this.limitBytes) {
      throw new GpuError(
        'POOL_EXHAUSTED',
        `buffer of ${size} bytes would take the pool to ${this.stats.allocatedBytes + size} bytes, over its ${this.limitBytes}-byte limit`,
      );
    }
    const buffer = this.device.createBuffer({ size, usage, label, mappedAtCreation: this.zeroMapped });
    if (this.zeroMapped) buffer.unmap();
    this.sizes.set(buffer, { key, size });
    this.stats.allocatedBytes += size;
    this.stats.inUseBytes += size;
    this.stats.buffersCreated++;
    this.stats.peakBytes = Math.max(this.stats.peakBytes, this.stats.allocatedBytes);
    return buffer;
  }

  release(buffer: GPUBuffer): void {
    const entry = this.sizes.get(buffer);
    if (!entry) throw new GpuError('BAD_ARGUMENT', `buffer "${buffer.label}" does not belong to this pool`);
    this.stats.inUseBytes -= entry.size;
    let list = this.free.get(entry.key);
    if (!list) this.free.set(entry.key, (list = []));
    list.push(buffer);
  }

  /** Destroys every free buffer (keeps the ones in use). */
  trim(): void {
    for (const list of this.free.values()) {
      for (const b of list) {
        this.stats.allocatedBytes -= this.sizes.get(b)?.size ?? 0;
        b.destroy();
      }
    }
    this.free.clear();
  }
}
