// GpuContext: one acquired device with its pipeline cache, buffer pool and transfer helpers.
// Kernel wrappers receive a context and own only their bind groups and dispatch math.
// Invariants: pipelines are created once per (device, kernel, override constants); staging
// buffers come from the pool; after device loss every call fails with DEVICE_LOST.

import { acquireDevice, type AcquireOptions, type DeviceInfo, type DevicePreference } from './device.js';
import { BufferPool } from './buffer-pool.js';
import { GpuError } from './errors.js';
import { releaseBindings } from './kernels/release-bindings.js';
import { KERNELS, type KernelId } from './registry.js';
import { loadShader } from './shaders.js';
import type { PassTimer } from './timer.js';

export type Overrides = Record<string, number>;

/** Chunk size for uploads from shared memory (a multiple of 16, so vec4 offsets stay aligned). */
const BOUNCE_BYTES = 4 << 20;

export interface KernelPipeline {
  pipeline: GPUComputePipeline;
  layout: GPUBindGroupLayout;
}

/** A rewrite of a kernel's WGSL source (template expansion), cached under `key`. */
export interface ShaderVariant {
  key: string;
  transform: (source: string) => string;
  /** Bindings the rewrite adds after the registry's (e.g. a stack kernel's further source windows). */
  extraBindings?: GPUBufferBindingType[];
}

export type BindingResource = GPUBuffer | { buffer: GPUBuffer; offset?: number; size?: number };

function isBufferBinding(r: BindingResource): r is { buffer: GPUBuffer; offset?: number; size?: number } {
  return typeof (r as { buffer?: unknown }).buffer === 'object';
}

/** Largest readback staged at once (readManyInto splits larger reads; a multiple of 4). */
export const READBACK_CHUNK_BYTES = 16 * 1024 * 1024;

export class GpuContext {
  readonly pool: BufferPool;
  private readonly pipelines = new Map<string, Promise<KernelPipeline>>();
  private readonly modules = new Map<string, GPUShaderModule>();
  private lostReason: string | null = null;
  private destroyed = false;
  /** Validation errors Dawn reported outside an error scope (should stay empty). */
  readonly uncapturedErrors: string[] = [];
  /** Dispatch count per kernel id: lets tests assert that the GPU path really ran. */
  readonly dispatches = new Map<KernelId, number>();
  /** Pooled buffers that commands not yet submitted still use; released at the next submit. */
  private retiring: GPUBuffer[] = [];
  private bounce: Uint8Array | undefined;
  /** Opt-in pass timing (benchmarks only): while set, dispatch() has every pass write timestamps. */
  timer: PassTimer | null = null;

  constructor(
    /** Held so the Dawn instance outlives the device (events stop when it is collected). */
    readonly instance: GPU,
    readonly device: GPUDevice,
    readonly info: DeviceInfo,
    poolLimitBytes = Number.POSITIVE_INFINITY,
  ) {
    this.pool = new BufferPool(device, poolLimitBytes, info.backend === 'opengles');
    device.lost.then((lost) => {
      if (!this.destroyed) this.lostReason = `${lost.reason}: ${lost.message}`;
    });
    device.addEventListener('uncapturederror', (ev) => {
      this.uncapturedErrors.push((ev as GPUUncapturedErrorEvent).error.message);
    });
  }

  /** Acquires a device per preference; `null` context means "use the TypeScript kernels". */
  static async create(preference?: DevicePreference, poolLimitBytes?: number, options?: AcquireOptions): Promise<{ ctx: GpuContext | null; info: DeviceInfo }> {
    const { acquired, info } = await acquireDevice(preference, options);
    return { ctx: acquired ? new GpuContext(acquired.instance, acquired.device, acquired.info, poolLimitBytes) : null, info };
  }

  get limits(): GPUSupportedLimits {
    return this.device.limits;
  }

  private check(): void {
    if (this.destroyed) throw new GpuError('DEVICE_LOST', 'GPU context was destroyed');
    if (this.lostReason) throw new GpuError('DEVICE_LOST', `GPU device lost (${this.lostReason})`);
  }

  private module(path: string): GPUShaderModule {
    let m = this.modules.get(path);
    if (!m) {
      m = this.device.createShaderModule({ code: loadShader(path), label: path });
      this.modules.set(path, m);
    }
    return m;
  }

  /**
   * The compute pipeline for a kernel with the given override constants (cached). A `variant`
   * rewrites the kernel's WGSL before compiling (templated kernels such as stack); its key
   * names the rewrite for the cache and for compile-error messages.
   */
  pipeline(id: KernelId, overrides: Overrides = {}, variant?: ShaderVariant): Promise<KernelPipeline> {
    this.check();
    const key = `${id}|${variant?.key ?? ''}|${Object.keys(overrides)
      .sort()
      .map((k) => `${k}=${overrides[k]}`)
      .join(',')}`;
    let p = this.pipelines.get(key);
    if (!p) {
      p = this.createPipeline(id, overrides, variant);
      this.pipelines.set(key, p);
      p.catch(() => this.pipelines.delete(key));
    }
    return p;
  }

  private async createPipeline(id: KernelId, overrides: Overrides, variant: ShaderVariant | undefined): Promise<KernelPipeline> {
    const spec = KERNELS[id];
    const layout = this.device.createBindGroupLayout({
      label: id,
      entries: [...spec.bindings, ...(variant?.extraBindings ?? [])].map((type, binding) => ({ binding, visibility: GPUShaderStage.COMPUTE, buffer: { type } })),
    });
    const module = variant
      ? this.device.createShaderModule({ code: variant.transform(loadShader(spec.shader)), label: `${spec.shader} [${variant.key}]` })
      : this.module(spec.shader);
    try {
      const pipeline = await this.device.createComputePipelineAsync({
        label: id,
        layout: this.device.createPipelineLayout({ bindGroupLayouts: [layout] }),
        compute: { module, entryPoint: 'main', constants: overrides },
      });
      return { pipeline, layout };
    } catch (e) {
      const info = await module.getCompilationInfo();
      const where = variant ? `${spec.shader} [${variant.key}]` : spec.shader;
      const messages = info.messages.map((m) => `${where}:${m.lineNum}:${m.linePos} ${m.type}: ${m.message}`).join('; ');
      throw new GpuError('SHADER_INVALID', `${id}: ${(e as Error).message}${messages ? ` (${messages})` : ''}`);
    }
  }

  bindGroup(kernel: KernelPipeline, resources: BindingResource[]): GPUBindGroup {
    return this.device.createBindGroup({
      layout: kernel.layout,
      entries: resources.map((r, binding) => ({ binding, resource: isBufferBinding(r) ? r : { buffer: r } })),
    });
  }

  /** Encodes one compute pass into `encoder` (or a new one that is submitted at once). */
  dispatch(id: KernelId, kernel: KernelPipeline, group: GPUBindGroup, workgroups: [number, number?, number?], encoder?: GPUCommandEncoder): void {
    this.check();
    const [x, y = 1, z = 1] = workgroups;
    const max = this.limits.maxComputeWorkgroupsPerDimension;
    if (x > max || y > max || z > max) throw new GpuError('BAD_ARGUMENT', `${id}: dispatch ${x}x${y}x${z} exceeds ${max} workgroups per dimension`);
    const own = encoder ?? this.device.createCommandEncoder({ label: id });
    const timestampWrites = this.timer?.writes(id);
    const pass = own.beginComputePass(timestampWrites ? { label: id, timestampWrites } : { label: id });
    pass.setPipeline(kernel.pipeline);
    pass.setBindGroup(0, group);
    pass.dispatchWorkgroups(x, y, z);
    pass.end();
    this.dispatches.set(id, (this.dispatches.get(id) ?? 0) + 1);
    if (!encoder) this.submit(own);
  }

  /**
   * Returns a pooled buffer once the commands recorded so far are submitted. Queue writes are
   * ordered with submits, so a buffer released after its submit can be rewritten safely.
   */
  retire(buffer: GPUBuffer): void {
    this.retiring.push(buffer);
  }

  submit(encoder: GPUCommandEncoder): void {
    this.check();
    this.device.queue.submit([encoder.finish()]);
    const done = this.retiring;
    this.retiring = [];
    for (const b of done) this.pool.release(b);
  }

  /** A pooled storage buffer filled with `data` (queue.writeBuffer is the fastest upload path). */
  upload(data: ArrayBufferView, usage: GPUBufferUsageFlags = GPUBufferUsage.STORAGE, label = 'upload'): GPUBuffer {
    this.check();
    const buffer = this.pool.acquire(data.byteLength, usage | GPUBufferUsage.COPY_DST | GPUBufferUsage.COPY_SRC, label);
    this.write(buffer, data);
    return buffer;
  }

  /**
   * Writes `data` into `buffer` at `offset` bytes (sizes padded to 4 bytes as WebGPU requires).
   * Views of a SharedArrayBuffer (the CPU worker path keeps frames there) go through a small
   * reusable bounce array: Dawn's writeBuffer refuses shared memory ("Invalid argument").
   */
  write(buffer: GPUBuffer, data: ArrayBufferView, offset = 0): void {
    const bytes = new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
    if (typeof SharedArrayBuffer !== 'undefined' && data.buffer instanceof SharedArrayBuffer) {
      this.bounce ??= new Uint8Array(BOUNCE_BYTES);
      for (let done = 0; done < bytes.byteLength; done += BOUNCE_BYTES) {
        const part = bytes.subarray(done, done + BOUNCE_BYTES);
        this.bounce.set(part);
        // writeBuffer copies before it returns, so the bounce array can be refilled at once.
        this.writeBytes(buffer, this.bounce.subarray(0, part.byteLength), offset + done);
      }
      return;
    }
    this.writeBytes(buffer, bytes, offset);
  }

  private writeBytes(buffer: GPUBuffer, bytes: Uint8Array, offset: number): void {
    const aligned = bytes.byteLength & ~3;
    if (aligned > 0) this.device.queue.writeBuffer(buffer, offset, bytes, 0, aligned);
    if (aligned < bytes.byteLength) {
      const tail = new Uint8Array(4);
      tail.set(bytes.subarray(aligned));
      this.device.queue.writeBuffer(buffer, offset + aligned, tail);
    }
  }

  /** A pooled uniform buffer holding `data` (hand it to retire() once its dispatch is recorded). */
  uniform(data: ArrayBufferView): GPUBuffer {
    return this.upload(data, GPUBufferUsage.UNIFORM, 'params');
  }

  /** A pooled storage buffer for kernel output. */
  storage(bytes: number, label = 'storage'): GPUBuffer {
    this.check();
    return this.pool.acquire(bytes, GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST, label);
  }

  /** Copies `byteLength` bytes of `buffer` back to the host. */
  async readback(buffer: GPUBuffer, byteLength: number, offset = 0): Promise<ArrayBuffer> {
    this.check();
    const size = Math.ceil(byteLength / 4) * 4;
    const staging = this.pool.acquire(size, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'readback');
    try {
      const encoder = this.device.createCommandEncoder({ label: 'readback' });
      encoder.copyBufferToBuffer(buffer, offset, staging, 0, size);
      this.submit(encoder);
      await staging.mapAsync(GPUMapMode.READ, 0, size);
      this.check();
      const copy = staging.getMappedRange(0, size).slice(0, byteLength);
      staging.unmap();
      return copy;
    } finally {
      this.pool.release(staging);
    }
  }

  async readFloat32(buffer: GPUBuffer, count: number, offset = 0): Promise<Float32Array> {
    const out = new Float32Array(count);
    await this.readInto(buffer, out, offset);
    return out;
  }

  /**
   * Copies `target.byteLength` bytes of `buffer` (from `offset`) straight from the mapped
   * staging range into `target`, without an intermediate copy: readbacks of large planes cost
   * as much as the kernels on llvmpipe, so the second copy matters. `target` may be shared memory.
   */
  async readInto(buffer: GPUBuffer, target: ArrayBufferView, offset = 0): Promise<void> {
    await this.readManyInto([{ buffer, target, offset }]);
  }

  /**
   * Several readbacks in one submit and one wait (e.g. the R, G, B planes of a band). A read
   * larger than READBACK_CHUNK_BYTES goes through one staging buffer of that size, chunk after
   * chunk: a staging buffer as large as a band of every frame's slots would double the band's
   * memory (on a software adapter device memory is host memory) and, sized per band, be
   * re-created for every band shape.
   */
  async readManyInto(reads: { buffer: GPUBuffer; target: ArrayBufferView; offset?: number }[]): Promise<void> {
    const small = reads.filter((r) => r.target.byteLength <= READBACK_CHUNK_BYTES);
    if (small.length > 0) await this.readBatch(small);
    for (const r of reads) {
      if (r.target.byteLength <= READBACK_CHUNK_BYTES) continue;
      const bytes = new Uint8Array(r.target.buffer, r.target.byteOffset, r.target.byteLength);
      for (let done = 0; done < bytes.byteLength; done += READBACK_CHUNK_BYTES) {
        await this.readBatch([{ buffer: r.buffer, target: bytes.subarray(done, done + READBACK_CHUNK_BYTES), offset: (r.offset ?? 0) + done }]);
      }
    }
  }

  /**
   * Reads byte ranges of `buffer` (`regions`, in order, offsets and sizes multiples of 4) packed
   * one after another into `target`, e.g. the same rows of every frame's slot. Goes through one
   * staging buffer of `stagingBytes` (capped at READBACK_CHUNK_BYTES; default the regions'
   * total), one submit and one map per staging buffer's worth: a caller that reads ranges of
   * varying size passes a constant here so the pool keeps reusing one buffer.
   */
  async readRegionsInto(buffer: GPUBuffer, regions: { offset: number; bytes: number }[], target: ArrayBufferView, stagingBytes?: number): Promise<void> {
    const total = regions.reduce((n, r) => n + r.bytes, 0);
    if (total > target.byteLength) throw new GpuError('BAD_ARGUMENT', `readRegionsInto: ${total} bytes of regions exceed the target's ${target.byteLength}`);
    if (regions.some((r) => r.offset % 4 !== 0 || r.bytes % 4 !== 0)) throw new GpuError('BAD_ARGUMENT', 'readRegionsInto: region offsets and sizes must be multiples of 4');
    const out = new Uint8Array(target.buffer, target.byteOffset, total);
    const chunk = Math.max(4, Math.min(READBACK_CHUNK_BYTES, Math.ceil((stagingBytes ?? total) / 4) * 4));
    let done = 0;
    let next = 0;
    let within = 0;
    while (done < total) {
      this.check();
      const size = Math.min(chunk, total - done);
      const staging = this.pool.acquire(chunk, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'readback');
      try {
        const encoder = this.device.createCommandEncoder({ label: 'readback regions' });
        for (let filled = 0; filled < size; ) {
          const r = regions[next]!;
          const n = Math.min(r.bytes - within, size - filled);
          if (n > 0) encoder.copyBufferToBuffer(buffer, r.offset + within, staging, filled, n);
          filled += n;
          within += n;
          if (within === r.bytes) (next++, (within = 0));
        }
        this.submit(encoder);
        await staging.mapAsync(GPUMapMode.READ, 0, size);
        this.check();
        out.set(new Uint8Array(staging.getMappedRange(0, size)), done);
        staging.unmap();
      } finally {
        if (staging.mapState === 'mapped') staging.unmap();
        this.pool.release(staging);
      }
      done += size;
    }
  }

  private async readBatch(reads: { buffer: GPUBuffer; target: ArrayBufferView; offset?: number }[]): Promise<void> {
    this.check();
    const encoder = this.device.createCommandEncoder({ label: 'readback' });
    const staged = reads.map((r) => {
      const size = Math.ceil(r.target.byteLength / 4) * 4;
      const staging = this.pool.acquire(size, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'readback');
      encoder.copyBufferToBuffer(r.buffer, r.offset ?? 0, staging, 0, size);
      return { ...r, staging, size };
    });
    try {
      this.submit(encoder);
      await Promise.all(staged.map((s) => s.staging.mapAsync(GPUMapMode.READ, 0, s.size)));
      this.check();
      for (const s of staged) {
        const src = new Uint8Array(s.staging.getMappedRange(0, s.size), 0, s.target.byteLength);
        new Uint8Array(s.target.buffer, s.target.byteOffset, s.target.byteLength).set(src);
        s.staging.unmap();
      }
    } finally {
      for (const s of staged) {
        if (s.staging.mapState === 'mapped') s.staging.unmap();
        this.pool.release(s.staging);
      }
    }
  }

  /**
   * Destroys the pool's free buffers and makes sure their memory is returned now. On Dawn's
   * OpenGL ES backend (Mesa llvmpipe: device memory is process memory) a destroyed buffer stays
   * allocated while it is still bound at one of the GL context's binding points, i.e. until some
   * later dispatch rebinds that point (measured: the masters' 120 MiB band held from CALIBRATION
   * into STACKING); there one dispatch rebinds every point to a small buffer. A lost or destroyed
   * device has nothing to return: only the pool is emptied.
   */
  async trim(): Promise<void> {
    this.pool.trim();
    if (this.info.backend !== 'opengles' || this.destroyed || this.lostReason) return;
    await releaseBindings(this);
  }

  /** Resolves when everything submitted so far has finished on the device. */
  async done(): Promise<void> {
    this.check();
    await this.device.queue.onSubmittedWorkDone();
    this.check();
  }

  destroy(): void {
    if (this.destroyed) return;
    this.destroyed = true;
    this.pool.trim();
    this.device.destroy();
  }
}

let shared: Promise<{ ctx: GpuContext | null; info: DeviceInfo }> | undefined;

/**
 * The process-wide context (one device per process: docs/ARCHITECTURE.md "Processes"), acquired on first use
 * with SKYSTACK_DEVICE's preference.
 */
export function sharedGpu(): Promise<{ ctx: GpuContext | null; info: DeviceInfo }> {
  shared ??= GpuContext.create();
  return shared;
}
