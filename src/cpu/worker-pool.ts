// Persistent pool of worker_threads for row-parallel TypeScript kernels (docs/ARCHITECTURE.md "GPU strategy": the TS path
// runs in workers on SharedArrayBuffers; 2 workers give ~1.9x on this 2-core machine).
// A task names a kernel as (module URL, export name); the worker imports that module once and
// calls `fn(args, start, end)` for half-open ranges of work items (rows, elements). Typed
// arrays inside `args` must be views of SharedArrayBuffers: structured clone then shares the
// memory, so the kernel writes straight into the caller's output (a plain ArrayBuffer would be
// copied and the result lost, hence the check).
// Invariants: workers are ref'ed only while they run a chunk, so an idle pool never keeps the
// process alive, while a pending `run()` does; `close()` terminates every worker; a worker that
// dies fails its pending run and is replaced on next use.
// Memory: every message gives the worker new SharedArrayBuffer objects for the caller's buffers,
// and a SharedArrayBuffer's memory lives until every thread that saw it has collected it. A
// worker allocates almost nothing itself, so its GC would almost never run and it would keep
// every per-frame buffer of a run alive (measured: +12 MiB per calibrated 2048×1536 light).
// The worker therefore collects once the buffers it received since its last collection add up
// to GC_AFTER_BYTES (counted per message, so reused buffers count again: a bound, not a leak),
// except buffers a run declares `reused` (allocated once per phase: counting them forced a full
// collection every message or two in STACKING); their owner calls collect() when it drops them.
// The same file is the worker's entry module (it checks workerData), so no second script exists.

import { isMainThread, parentPort, workerData, type Worker } from 'node:worker_threads';
import { startWorker } from './worker-start.js';
import { exposeGc } from './worker-gc.js';

/** Shared-buffer bytes a worker receives between two collections of its heap. */
export const GC_AFTER_BYTES = 64 * 1024 * 1024;

/** A row kernel a worker can run: `module` is the kernel module's `import.meta.url`. */
export interface PoolKernel {
  module: string;
  name: string;
}

/** What a pooled kernel function looks like: process items [start, end) of `args`. */
export type RangeKernel<A> = (args: A, start: number, end: number) => void;

export interface RunOptions {
  /** Chunk starts (except the first) are multiples of this (e.g. 2 to keep Bayer row pairs). Default 1. */
  align?: number;
  /** Chunks per worker; more than 1 balances load when other processes share the cores. Default 4. */
  chunksPerWorker?: number;
  /** Smallest chunk worth a message round trip. Default 1. */
  minChunk?: number;
  /**
   * The shared buffers in `args` are allocated once and reused across many runs (STACKING's band
   * slots, mask and scratch): they do not count toward the worker's GC_AFTER_BYTES, so reusing
   * them does not force a full collection every few messages. The owner calls collect() once it
   * drops them (the Raw Stack does after every phase). Default false.
   */
  reused?: boolean;
}

interface Job {
  kernel: PoolKernel;
  args: unknown;
  reused: boolean;
  chunks: [number, number][];
  next: number;
  outstanding: number;
  failed: boolean;
  resolve: () => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  job: Job | null;
}

const WORKER_FLAG = 'skystackWorkerPool';

/** Splits [start, end) into at most `parts` chunks whose inner boundaries are multiples of `align`. */
export function splitRange(start: number, end: number, parts: number, align = 1, minChunk = 1): [number, number][] {
  const total = end - start;
  if (total <= 0) return [];
  const n = Math.max(1, Math.min(parts, Math.floor(total / Math.max(1, minChunk)) || 1));
  const out: [number, number][] = [];
  let a = start;
  for (let i = 1; i <= n && a < end; i++) {
    let b = i === n ? end : start + Math.round((total * i) / n);
    if (b < end) b -= b % align;
    if (b <= a) continue;
    out.push([a, b]);
    a = b;
  }
  return out;
}

/** True when `view` lives in shared memory, so a worker can write into it. */
export function isShared(view: ArrayBufferView): boolean {
  return view.buffer instanceof SharedArrayBuffer;
}

/** A Float32Array of `length` in shared memory. */
export function sharedFloat32(length: number): Float32Array {
  return new Float32Array(new SharedArrayBuffer(length * 4));
}

/** `a` itself when shared, else a shared copy (one memcpy). */
export function toShared(a: Float32Array): Float32Array {
  if (isShared(a)) return a;
  const s = sharedFloat32(a.length);
  s.set(a);
  return s;
}

function checkShared(value: unknown, path: string): void {
  if (ArrayBuffer.isView(value)) {
    if (!isShared(value)) throw new Error(`worker pool: ${path} is not backed by a SharedArrayBuffer; a worker's writes to it would be lost`);
    return;
  }
  if (value && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) checkShared(v, `${path}.${k}`);
  }
}

export class WorkerPool {
  private readonly slots: Slot[] = [];
  private readonly queue: Job[] = [];
  private closed = false;

  constructor(readonly size: number) {
    if (!Number.isInteger(size) || size < 1) throw new Error(`worker pool: size ${size} must be a positive integer`);
  }

  /** Runs `kernel(args, a, b)` over [start, end) split into chunks across the workers. */
  run<A>(kernel: PoolKernel, args: A, start: number, end: number, options: RunOptions = {}): Promise<void> {
    if (this.closed) return Promise.reject(new Error('worker pool is closed'));
    try {
      checkShared(args, 'args');
    } catch (e) {
      return Promise.reject(e as Error);
    }
    const chunks = splitRange(start, end, this.size * (options.chunksPerWorker ?? 4), options.align ?? 1, options.minChunk ?? 1);
    if (chunks.length === 0) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      this.queue.push({ kernel, args, reused: options.reused === true, chunks, next: 0, outstanding: 0, failed: false, resolve, reject });
      this.pump();
    });
  }

  /**
   * Every worker runs a full collection before its next chunk (no reply: the worker handles its
   * messages in order), releasing the shared buffers of earlier `reused` runs that the caller has
   * dropped.
   */
  collect(): void {
    for (const slot of this.slots) slot.worker.postMessage({ collect: true });
  }

  /** Terminates every worker; later runs are refused. */
  async close(): Promise<void> {
    this.closed = true;
    const slots = this.slots.splice(0);
    for (const job of this.queue.splice(0)) this.fail(job, new Error('worker pool closed'));
    await Promise.all(slots.map((s) => s.worker.terminate()));
  }

  private spawn(): Slot {
    const worker = startWorker(new URL(import.meta.url), { workerData: { [WORKER_FLAG]: true } });
    const slot: Slot = { worker, job: null };
    worker.on('message', (msg: { error?: string }) => {
      const job = slot.job;
      slot.job = null;
      worker.unref();
      if (job) {
        job.outstanding--;
        if (msg.error !== undefined) this.fail(job, new Error(`worker kernel ${job.kernel.name}: ${msg.error}`));
        else if (job.outstanding === 0 && job.next >= job.chunks.length && !job.failed) {
          this.queue.splice(this.queue.indexOf(job), 1);
          job.resolve();
        }
      }
      this.pump();
    });
    const die = (e: Error) => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      if (slot.job) this.fail(slot.job, e);
      slot.job = null;
      this.pump();
    };
    worker.on('error', die);
    worker.on('exit', (code) => {
      if (!this.closed) die(new Error(`worker exited with code ${code}`));
    });
    // After the listeners: adding a 'message' listener refs the worker's port again.
    worker.unref();
    this.slots.push(slot);
    return slot;
  }

  private fail(job: Job, e: Error): void {
    if (job.failed) return;
    job.failed = true;
    const i = this.queue.indexOf(job);
    if (i >= 0) this.queue.splice(i, 1);
    job.reject(e);
  }

  /** Hands the next chunk of the oldest job to every idle worker. */
  private pump(): void {
    if (this.closed) return;
    while (this.slots.length < this.size && this.queue.length > 0) this.spawn();
    for (const slot of this.slots) {
      if (slot.job) continue;
      const job = this.queue.find((j) => j.next < j.chunks.length);
      if (!job) return;
      const [a, b] = job.chunks[job.next++]!;
      job.outstanding++;
      slot.job = job;
      slot.worker.ref();
      try {
        slot.worker.postMessage({ module: job.kernel.module, name: job.kernel.name, args: job.args, start: a, end: b, reused: job.reused });
      } catch (e) {
        // args that cannot be cloned (functions, ...): fail this run, keep the worker.
        slot.job = null;
        slot.worker.unref();
        job.outstanding--;
        this.fail(job, e as Error);
      }
    }
  }
}

const pools = new Map<number, WorkerPool>();

/** The process-wide pool of `size` workers (created on first use, closed by closeSharedPools). */
export function sharedPool(size: number): WorkerPool {
  let p = pools.get(size);
  if (!p) pools.set(size, (p = new WorkerPool(size)));
  return p;
}

/** collect() on every shared pool (between pipeline phases). */
export function collectSharedPools(): void {
  for (const p of pools.values()) p.collect();
}

export async function closeSharedPools(): Promise<void> {
  const all = [...pools.values()];
  pools.clear();
  await Promise.all(all.map((p) => p.close()));
}

// ---- worker side -------------------------------------------------------------------------

/** Bytes of the distinct shared buffers viewed anywhere in `value`. */
function sharedBytes(value: unknown, seen: Set<SharedArrayBuffer>): number {
  if (ArrayBuffer.isView(value)) {
    const b = value.buffer;
    if (!(b instanceof SharedArrayBuffer) || seen.has(b)) return 0;
    seen.add(b);
    return b.byteLength;
  }
  let n = 0;
  if (value && typeof value === 'object') for (const v of Object.values(value)) n += sharedBytes(v, seen);
  return n;
}

if (!isMainThread && parentPort && (workerData as Record<string, unknown> | null)?.[WORKER_FLAG]) {
  const port = parentPort;
  const modules = new Map<string, Promise<Record<string, unknown>>>();
  const gc = exposeGc();
  let received = 0;
  port.on('message', async (msg: { module: string; name: string; args: unknown; start: number; end: number; reused?: boolean } | { collect: true }) => {
    if ('collect' in msg) {
      gc?.();
      received = 0;
      return;
    }
    if (!msg.reused) received += sharedBytes(msg.args, new Set());
    try {
      let mod = modules.get(msg.module);
      if (!mod) modules.set(msg.module, (mod = import(msg.module) as Promise<Record<string, unknown>>));
      const fn = (await mod)[msg.name];
      if (typeof fn !== 'function') throw new Error(`${msg.module} has no exported function ${msg.name}`);
      (fn as RangeKernel<unknown>)(msg.args, msg.start, msg.end);
      if (gc && received >= GC_AFTER_BYTES) {
        // This message's buffers are still referenced here; they go at the next collection.
        (msg as { args: unknown }).args = null;
        gc(); // the default full collection: minor and { type: 'major' } both left the buffers alive (measured)
        received = 0;
      }
      port.postMessage({});
    } catch (e) {
      port.postMessage({ error: (e as Error).stack ?? String(e) });
    }
  });
}
