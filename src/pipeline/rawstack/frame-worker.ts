// Worker-thread entry of FrameWorkers (frame-workers.ts): runs one frame task per message and
// posts {result} (star lists transferred, not copied) or {error} with the stack of a bug.
// Holds nothing between tasks and collects its heap after each one (worker-gc.ts), so a worker's
// memory is one frame's at most (without the collection, dead frames piled up to ~100 MiB per
// worker on 2048×1536 frames).

import { parentPort } from 'node:worker_threads';
import { exposeGc } from '../../cpu/worker-gc.js';
import { runFrameTask, transferables, type FrameTask } from './frame-tasks.js';

const port = parentPort;
if (port) {
  const gc = exposeGc();
  port.on('message', async (msg: { task: FrameTask }) => {
    try {
      const result = await runFrameTask(msg.task);
      port.postMessage({ result }, transferables(result));
    } catch (e) {
      port.postMessage({ error: (e as Error)?.stack ?? String(e) });
    }
    gc?.();
  });
}
