// The server side of the image viewer: a small pool of worker threads (worker.ts) that do the
// pixel work, so the event loop only moves bytes; one pyramid build per image at a time (requests
// for an image being built wait for that build); raw tiles read straight from the cache.
// Sources are opened by the caller through run-files.ts (confined to the run folder, links
// refused, the descriptor checked); the workers read that same descriptor through
// /proc/self/fd/N where the system has it, so a link swapped in after the check is never read.

import { existsSync } from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import { availableParallelism } from 'node:os';
import { Worker } from 'node:worker_threads';
// Sets --no-concurrent-recompilation before any worker exists (see that module: a background
// compile job still running when a worker is torn down aborts Node 20).
import '../cpu/worker-gc.js';
import { ensureCacheDir } from './cache.js';
import type { ExportFormat, RenderOptions } from './export.js';
import { ViewerError, type ExportResult, type PixelResult, type WorkerReply, type WorkerRequest } from './protocol.js';
import type { PyramidMeta } from './pyramid.js';
import { readTileBytes } from './tiles.js';

const WORKER_URL = new URL('./worker.js', import.meta.url);

/** A source file the caller opened and confined. */
export interface OpenedSource {
  fh: FileHandle;
  real: string;
  size: number;
  mtime: Date;
}

export function sourcePath(src: OpenedSource): string {
  const viaFd = `/proc/self/fd/${src.fh.fd}`;
  return existsSync(viaFd) ? viaFd : src.real;
}

interface Slot {
  worker: Worker | null;
  busy: boolean;
}

interface Pending {
  req: WorkerRequest;
  resolve: (v: unknown) => void;
  reject: (e: unknown) => void;
}

export interface Prepared {
  meta: PyramidMeta;
  dir: string;
  cache: 'hit' | 'built';
  /** The worker thread that answered (never the main thread, 0). */
  thread: number;
}

export class ViewerService {
  private readonly slots: Slot[];
  private readonly queue: Pending[] = [];
  private readonly inFlight = new Map<number, { slot: Slot; p: Pending }>();
  private readonly building = new Map<string, Promise<Prepared>>();
  private nextId = 1;
  private closed = false;

  constructor(workers = Math.max(1, Math.min(2, availableParallelism()))) {
    this.slots = Array.from({ length: workers }, () => ({ worker: null, busy: false }));
  }

  private spawn(slot: Slot): Worker {
    const w = new Worker(WORKER_URL);
    w.unref();
    w.on('message', (msg: WorkerReply) => {
      const entry = this.inFlight.get(msg.id);
      if (!entry) return;
      this.inFlight.delete(msg.id);
      slot.busy = false;
      if (msg.ok) entry.p.resolve(msg.result);
      else entry.p.reject(new ViewerError(msg.error.code, msg.error.message, msg.error.fits_code));
      this.pump();
    });
    const fail = (why: string) => {
      slot.worker = null;
      slot.busy = false;
      for (const [id, entry] of this.inFlight) {
        if (entry.slot !== slot) continue;
        this.inFlight.delete(id);
        entry.p.reject(new ViewerError('WORKER_FAILED', why));
      }
      this.pump();
    };
    w.on('error', (e) => fail(`viewer worker failed: ${e.message}`));
    w.on('exit', (code) => {
      if (slot.worker === w) fail(`viewer worker exited (${code})`);
    });
    return w;
  }

  private pump(): void {
    if (this.closed) return;
    for (const slot of this.slots) {
      if (slot.busy || this.queue.length === 0) continue;
      const p = this.queue.shift()!;
      slot.worker ??= this.spawn(slot);
      slot.busy = true;
      const id = this.nextId++;
      this.inFlight.set(id, { slot, p });
      slot.worker.postMessage({ id, req: p.req });
    }
  }

  /** Runs one request on a worker (FIFO when all are busy). */
  run<T>(req: WorkerRequest): Promise<T> {
    if (this.closed) return Promise.reject(new ViewerError('WORKER_FAILED', 'the viewer is shut down'));
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ req, resolve: resolve as (v: unknown) => void, reject });
      this.pump();
    });
  }

  /** The image's pyramid: from the cache when it matches the source, else built (once at a time per image). */
  async prepare(runDir: string, rel: string, src: OpenedSource): Promise<Prepared> {
    const dir = await ensureCacheDir(runDir, rel);
    const key = `${dir}\n${src.size}\n${src.mtime.getTime()}`;
    let job = this.building.get(key);
    if (!job) {
      job = this.run<{ meta: PyramidMeta; cache: 'hit' | 'built'; thread: number }>({ op: 'prepare', source: sourcePath(src), dir, rel, size: src.size, mtimeMs: src.mtime.getTime() }).then((r) => ({ ...r, dir }));
      this.building.set(key, job);
      const forget = () => this.building.delete(key);
      job.then(forget, forget);
    }
    return job;
  }

  /** A raw tile's bytes (planar half floats) from the cache: I/O only, on the event loop. */
  tile(p: Prepared, level: number, tx: number, ty: number): Promise<Buffer> {
    return readTileBytes(p.dir, p.meta, level, tx, ty);
  }

  /** A tile of the run's HMS look (half floats in [0, 1]), computed on a worker. */
  async lookTile(p: Prepared, level: number, tx: number, ty: number, run: { diag: string | null; config: string | null }): Promise<{ bytes: Uint8Array; source: string }> {
    return this.run({ op: 'look', dir: p.dir, meta: p.meta, level, tx, ty, diag: run.diag, config: run.config });
  }

  pixel(src: OpenedSource, x: number, y: number): Promise<PixelResult> {
    return this.run({ op: 'pixel', source: sourcePath(src), x, y });
  }

  export(src: OpenedSource, format: ExportFormat, options: Omit<RenderOptions, 'hms'>, run: { diag: string | null; config: string | null }): Promise<ExportResult> {
    return this.run({ op: 'export', source: sourcePath(src), format, options, diag: run.diag, config: run.config });
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.reject(new ViewerError('WORKER_FAILED', 'the viewer is shut down'));
    for (const [id, entry] of this.inFlight) {
      this.inFlight.delete(id);
      entry.p.reject(new ViewerError('WORKER_FAILED', 'the viewer is shut down'));
    }
    await Promise.all(
      this.slots.map(async (s) => {
        const w = s.worker;
        s.worker = null;
        if (w) await w.terminate();
      }),
    );
  }
}
