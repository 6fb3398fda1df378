// Local normalization's deferred fits on one worker thread (local-norm.ts, LnSetupInput.deferFits):
// the setup pass hands the worker the reference's planes and prepared star masks once, then every
// frame's premeasured planes, and the worker fits them in frame order (fitFrame, the same code
// the main thread runs, so the models and tables are bit-identical) while the band loop warps the
// frames already fitted. The band loop waits for frame i's result before it first stores frame i.
// Why one thread: the fits' cost is mostly V8 warming up their code (a run's first dozen fits run
// 2–8× slower than warm ones), which every thread that runs them pays again (two pool workers
// cost ~+10 % STACKING CPU); one worker pays it once, as the main thread did, and takes the fits
// off the main thread, whose time between the device's warps is the band loop's critical path.
// Failure: a worker that cannot start or dies rejects its pending fits; the caller fits those
// frames on the main thread (LnFitWorker.broken). The worker is ref'ed only while fits are
// outstanding (an idle one never keeps the process alive) and terminated by close().
// The same file is the worker's entry module (it checks workerData), as src/cpu/worker-pool.ts.

import { isMainThread, parentPort, workerData, type Worker } from 'node:worker_threads';
import { startWorker } from '../../../cpu/worker-start.js';
import '../../../cpu/worker-gc.js'; // V8 flags for workers, set on the main thread before any worker starts
import type { BinnedPlane } from '../../../algorithms/binned-plane.js';
import type { LnFitOptions, PreparedReference } from '../../../algorithms/local-normalization.js';
import { fitFrame, type FitGeometry, type FrameFit } from './ln-fit.js';

const WORKER_FLAG = 'skystackLnFitWorker';

/** Tests only: a worker started while this is set exits after that many fits (the fallback path). */
export const lnFitWorkerTesting: { exitAfterFits: number | null } = { exitAfterFits: null };

interface InitMessage {
  type: 'init';
  geometry: FitGeometry;
  ref: BinnedPlane[];
  prepared: PreparedReference[];
  options: LnFitOptions;
}

interface FitMessage {
  type: 'fit';
  id: number;
  /** The frame's raw binned planes per channel, or null: the reference itself. */
  planes: BinnedPlane[] | null;
  toFrame: number[];
  scale: number[];
  offset: number[];
}

type Reply = { id: number; fit: FrameFit } | { id: number; error: string };

/** The main thread's side: one worker, fits answered in the order they were asked. */
export class LnFitWorker {
  private readonly worker: Worker;
  private readonly waiting = new Map<number, { resolve: (f: FrameFit) => void; reject: (e: Error) => void }>();
  private nextId = 0;
  private failure: Error | null = null;

  constructor(init: Omit<InitMessage, 'type'>) {
    this.worker = startWorker(new URL(import.meta.url), { workerData: { [WORKER_FLAG]: true, exitAfterFits: lnFitWorkerTesting.exitAfterFits } });
    this.worker.unref();
    this.worker.on('message', (m: Reply) => {
      const w = this.waiting.get(m.id);
      if (!w) return;
      this.waiting.delete(m.id);
      if (this.waiting.size === 0) this.worker.unref();
      if ('error' in m) w.reject(new Error(m.error));
      else w.resolve(m.fit);
    });
    const fail = (e: Error) => {
      this.failure ??= e;
      for (const w of this.waiting.values()) w.reject(e);
      this.waiting.clear();
    };
    this.worker.on('error', fail);
    this.worker.on('exit', (code) => fail(new Error(`local-normalization fit worker exited with code ${code}`)));
    // The message graph keeps prepared[c].ref === ref[c] on the other side (structured clone).
    this.worker.postMessage({ type: 'init', ...init } satisfies InitMessage);
  }

  /** Set once the worker has failed: later fits reject at once. */
  get broken(): Error | null {
    return this.failure;
  }

  /** Queues one frame's fit; resolves with its models and coefficient rows. */
  fit(job: Omit<FitMessage, 'type' | 'id'>): Promise<FrameFit> {
    if (this.failure) return Promise.reject(this.failure);
    const id = this.nextId++;
    return new Promise<FrameFit>((resolve, reject) => {
      this.waiting.set(id, { resolve, reject });
      this.worker.ref(); // (a fit awaited keeps the process alive; an idle worker does not)
      this.worker.postMessage({ type: 'fit', id, ...job } satisfies FitMessage);
    });
  }

  /** Stops the worker; pending fits reject. */
  async close(): Promise<void> {
    this.failure ??= new Error('local-normalization fit worker closed');
    await this.worker.terminate();
  }
}

if (!isMainThread && (workerData as Record<string, unknown> | null)?.[WORKER_FLAG] === true) {
  let init: InitMessage | null = null;
  let fits = 0;
  const exitAfter = (workerData as { exitAfterFits: number | null }).exitAfterFits;
  parentPort!.on('message', (m: InitMessage | FitMessage) => {
    if (m.type === 'init') {
      init = m;
      return;
    }
    if (exitAfter !== null && fits++ >= exitAfter) process.exit(3);
    try {
      if (!init) throw new Error('fit before init');
      const fit = fitFrame(init.geometry, init.ref, init.prepared, init.options, m.planes, m);
      parentPort!.postMessage({ id: m.id, fit } satisfies Reply);
    } catch (e) {
      parentPort!.postMessage({ id: m.id, error: e instanceof Error ? e.message : String(e) } satisfies Reply);
    }
  });
}
