// Runs frame tasks (stages/frames/tasks.ts) with at most `runtime_limits.parallel_workers` frames in
// flight: star detection and correlation proxies are CPU-bound whole-frame work, so with more
// than one worker they run in worker threads (one frame each at a time); with one they run on
// the main thread (no thread start-up cost, same results). `mapFrames` feeds the tasks, hands
// the results back in input order and stops at once on cancellation.
// Invariants: at most `size` tasks (hence frames in memory) at a time; close() terminates every
// worker (phases call it from finalize, so an error or a cancel leaves no thread behind); a task
// result is identical whichever thread computed it.

import type { Worker } from 'node:worker_threads';
import { startWorker } from '../../../cpu/worker-start.js';
import { CancelledError } from '../../phase.js';
import { runFrameTask, type FrameTask, type FrameTaskResult } from './tasks.js';
// Sets V8's --expose-gc on the main thread before any frame worker starts (see worker-gc.ts).
import '../../../cpu/worker-gc.js';

/**
 * Young-generation cap of a frame worker. Star detection allocates many short-lived objects, and
 * V8's default lets each worker's young generation grow to tens of MiB that stay resident: with
 * CALIBRATION measuring on two workers beside the masters, 8 MiB lowered the run's peak RSS by
 * ~80 MiB (30 × 2048×1536 bench: 766 → 682 MiB) at no measurable CPU cost (4 MiB: 672 MiB).
 */
export const FRAME_WORKER_YOUNG_GEN_MIB = 8;

interface Pending {
  task: FrameTask;
  resolve: (r: FrameTaskResult) => void;
  reject: (e: Error) => void;
}

interface Slot {
  worker: Worker;
  job: Pending | null;
}

export class FrameWorkers {
  private readonly slots: Slot[] = [];
  private readonly queue: Pending[] = [];
  private closed = false;

  /** `size` ≤ 1: tasks run on the main thread. */
  constructor(readonly size: number) {}

  get threaded(): boolean {
    return this.size > 1;
  }

  run(task: FrameTask): Promise<FrameTaskResult> {
    if (this.closed) return Promise.reject(new Error('frame workers are closed'));
    if (!this.threaded) return runFrameTask(task);
    return new Promise((resolve, reject) => {
      this.queue.push({ task, resolve, reject });
      this.pump();
    });
  }

  /**
   * Ends every worker. An idle one is asked to leave and exits on its own (its event loop ends);
   * a busy one (cancel, error) is terminated at once. Why not terminate them all: Node 20 aborts
   * the whole process when a worker isolate is torn down while one of its background jobs still
   * runs (node_platform.cc ForIsolate assertion, seen once in a test run, once in a job), and a
   * worker that finishes its event loop is not in the middle of anything; terminate() stays the
   * fallback after EXIT_GRACE_MS.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const p of this.queue.splice(0)) p.reject(new Error('frame workers closed'));
    const slots = this.slots.splice(0);
    for (const s of slots) s.job?.reject(new Error('frame workers closed'));
    await Promise.all(slots.map((s) => (s.job ? s.worker.terminate() : leave(s.worker))));
  }

  private spawn(): void {
    const worker = startWorker(new URL('./worker.js', import.meta.url), { resourceLimits: { maxYoungGenerationSizeMb: FRAME_WORKER_YOUNG_GEN_MIB } });
    const slot: Slot = { worker, job: null };
    worker.on('message', (msg: { result?: FrameTaskResult; error?: string }) => {
      const job = slot.job;
      slot.job = null;
      if (job) {
        if (msg.result) job.resolve(msg.result);
        else job.reject(new Error(`frame worker: ${msg.error ?? 'no result'}`));
      }
      this.pump();
    });
    const die = (e: Error) => {
      const i = this.slots.indexOf(slot);
      if (i >= 0) this.slots.splice(i, 1);
      slot.job?.reject(e);
      slot.job = null;
      this.pump();
    };
    worker.on('error', die);
    worker.on('exit', (code) => {
      if (!this.closed) die(new Error(`frame worker exited with code ${code}`));
    });
    this.slots.push(slot);
  }

  private pump(): void {
    if (this.closed) return;
    while (this.slots.length < this.size && this.slots.length < this.queue.length + this.slots.filter((s) => s.job).length) this.spawn();
    for (const slot of this.slots) {
      if (slot.job) continue;
      const next = this.queue.shift();
      if (!next) break;
      slot.job = next;
      slot.worker.postMessage({ task: next.task });
    }
    // Idle workers must not keep the process alive; busy ones must.
    for (const slot of this.slots) {
      if (slot.job) slot.worker.ref();
      else slot.worker.unref();
    }
  }
}

/** How long an idle worker asked to leave may take before it is terminated. */
const EXIT_GRACE_MS = 2000;

function leave(worker: Worker): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(() => void worker.terminate().then(() => resolve()), EXIT_GRACE_MS);
    worker.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    worker.postMessage({ leave: true });
  });
}

/**
 * Runs `start(item)` for every item with at most `concurrency` in flight, and `onResult` for
 * each result in input order (results that arrive early wait, they are small). Rejects with
 * CancelledError as soon as `signal` aborts; tasks still running are abandoned (the caller's
 * finalize closes the workers).
 */
export function mapFrames<T, R>(items: readonly T[], concurrency: number, signal: AbortSignal, start: (item: T, i: number) => Promise<R>, onResult: (item: T, result: R, i: number) => void): Promise<void> {
  const n = items.length;
  const limit = Math.max(1, Math.floor(concurrency));
  return new Promise<void>((resolve, reject) => {
    const results: (R | undefined)[] = new Array(n);
    const done: boolean[] = new Array(n).fill(false);
    let next = 0;
    let emitted = 0;
    let active = 0;
    let settled = false;
    const finish = (e?: unknown) => {
      if (settled) return;
      settled = true;
      signal.removeEventListener('abort', onAbort);
      if (e === undefined) resolve();
      else reject(e instanceof Error ? e : new Error(String(e)));
    };
    const onAbort = () => finish(new CancelledError());
    if (signal.aborted) return finish(new CancelledError());
    signal.addEventListener('abort', onAbort, { once: true });
    const launch = () => {
      while (!settled && active < limit && next < n) {
        if (signal.aborted) return finish(new CancelledError());
        const i = next++;
        active++;
        let promise: Promise<R>;
        try {
          promise = start(items[i]!, i);
        } catch (e) {
          return finish(e);
        }
        promise.then(
          (r) => {
            active--;
            if (settled) return;
            results[i] = r;
            done[i] = true;
            try {
              // A cancel raised by a result's handler (its event's listener) stops the emission at
              // once: results buffered behind a slow earlier frame are not reported after it.
              while (!settled && emitted < n && done[emitted]) {
                const value = results[emitted] as R;
                results[emitted] = undefined;
                onResult(items[emitted]!, value, emitted);
                emitted++;
              }
            } catch (e) {
              return finish(e);
            }
            if (emitted === n) finish();
            else launch();
          },
          (e) => {
            active--;
            finish(e);
          },
        );
      }
    };
    if (n === 0) return finish();
    launch();
  });
}
