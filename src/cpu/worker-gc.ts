// The V8 collector for worker threads (and the main thread between pipeline phases), without a
// command-line flag (Node refuses V8 flags in a Worker's execArgv): --expose-gc is set at run
// time and `gc` taken from a fresh context.
// Why workers need it: a worker that receives or builds whole frames allocates little on its own
// JS heap, so its collector runs rarely while the frames' buffers (external memory, or shared
// memory the main thread also saw) stay alive until it does: each worker would carry several
// dead frames. Workers call the collector after a frame's work, bounding them to one frame.

import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import { isMainThread } from 'node:worker_threads';

// V8 flags are process-wide and changing them while other threads run V8 is not safe (Node
// warns of crashes; a job child once died with SIGABRT in REGISTRATION while its frame workers
// were starting). So only the main thread sets the flag, once, when this module is first loaded,
// which is before it starts any worker (both worker hosts import this module); a worker only
// takes `gc` from a fresh context, which the already-set flag provides.
// --no-concurrent-recompilation, set here for the same reason (before any worker exists), reaches
// only isolates created afterwards, i.e. the workers: their optimising compiles then run on their
// own thread instead of a background job. A background compile job that is still running when
// its worker is torn down aborts the whole process in Node 20 (node_platform.cc ForIsolate
// assertion from IncrementalMarkingJob::ScheduleTask, seen in a test run), and on this 2-core
// machine the background job competes for the same cores anyway.
if (isMainThread) {
  try {
    setFlagsFromString('--expose-gc');
    setFlagsFromString('--no-concurrent-recompilation');
  } catch {
    // exposeGc() then returns null and collections are skipped
  }
}

export type Collect = (options?: { type: 'minor' | 'major' }) => void;

/**
 * This thread's collector, or null where the runtime refuses to expose it. Without options it
 * is V8's forced full collection, the only kind that released received SharedArrayBuffers in the
 * worker pool (minor and `{ type: 'major' }` left them alive, measured); it is expensive for a
 * thread with much compiled code (after every frame task it doubled the frame workers' CPU time),
 * so frame workers run the cheap minor one and the pool the full one only every GC_AFTER_BYTES.
 */
export function exposeGc(): Collect | null {
  try {
    const gc = runInNewContext('gc') as unknown;
    return typeof gc === 'function' ? (gc as Collect) : null;
  } catch {
    return null;
  }
}

/** JS heap in use plus array buffers: what a full collection could give back. */
const collectable = (): number => {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
};

/**
 * `collect` (a full collection) only when the JS heap and the array buffers grew by at least
 * `minGrowthBytes` since the last collection made through the returned function; true when it
 * collected. Between pipeline phases: after a phase that allocated little (a skipped phase, one
 * that took premeasured records) a forced full collection found nothing and cost the main thread
 * 13–27 ms (13 phases: ~0.25 s of a 30-frame run, measured), while one after a phase that leaves
 * dead frames is what keeps the next phase's peak free of them.
 */
export function collectorWhenGrown(collect: Collect | null, minGrowthBytes: number): () => boolean {
  let after = collectable();
  return () => {
    if (!collect || collectable() - after < minGrowthBytes) return false;
    collect();
    after = collectable();
    return true;
  };
}
