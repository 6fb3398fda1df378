// Worker-thread entry of FrameWorkers (stages/frames/workers.ts): runs one frame task per message and
// posts {result} (star lists transferred, not copied) or {error} with the stack of a bug.
// Holds nothing between tasks and runs a minor collection after each one (worker-gc.ts), so the
// task's young garbage does not wait for the worker's next collection. {leave: true} closes the
// port, so the thread ends its event loop and exits by itself.

import { parentPort } from 'node:worker_threads';
import { exposeGc } from '../../../cpu/worker-gc.js';
import { runFrameTask, transferables, type FrameTask } from './tasks.js';

const port = parentPort;
if (port) {
  const gc = exposeGc();
  port.on('message', async (msg: { task: FrameTask } | { leave: true }) => {
    if ('leave' in msg) {
      // Closing the port ends the event loop: the thread exits by itself (FrameWorkers.close).
      port.close();
      return;
    }
    try {
      const result = await runFrameTask(msg.task);
      port.postMessage({ result }, transferables(result));
    } catch (e) {
      port.postMessage({ error: (e as Error)?.stack ?? String(e) });
    }
    gc?.({ type: 'minor' });
  });
}
