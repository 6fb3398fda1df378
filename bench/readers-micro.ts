// Micro-bench (not part of the suite): the cost of a band read of many calibrated frames with
// STACKING's reader LRU smaller than the frame count (every band re-opens every file: open,
// header parse, close) against one that keeps every file open.
//   node dist/bench/readers-micro.js DIR_OF_CALIBRATED_FRAMES [rows] [bands]
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import { ReaderCache } from '../src/pipeline/stages/stacking/readers.js';

const [dir, rowsArg, bandsArg] = process.argv.slice(2);
if (!dir) {
  console.error('usage: node readers-micro.js DIR [rows] [bands]');
  process.exit(2);
}
const files = readdirSync(dir).filter((n) => n.endsWith('.fit') || n.endsWith('.fits')).sort().map((n) => join(dir, n));
const rows = Number(rowsArg ?? 22);
const bands = Number(bandsArg ?? 3);
for (const capacity of [64, files.length + 1, 64, files.length + 1]) {
  const cache = new ReaderCache(capacity);
  const target = new Float32Array(rows * 8192);
  const t0 = performance.now();
  for (let b = 0; b < bands; b++) {
    const y0 = 100 + b * 200;
    for (const f of files) await cache.readRowsInto(f, y0, rows, target);
  }
  const ms = performance.now() - t0;
  (globalThis as { gc?: () => void }).gc?.();
  const heap = process.memoryUsage().heapUsed / 2 ** 20;
  await cache.closeAll();
  (globalThis as { gc?: () => void }).gc?.();
  console.log(`  heap with the readers open ${heap.toFixed(1)} MiB, after closing ${(process.memoryUsage().heapUsed / 2 ** 20).toFixed(1)} MiB`);
  console.log(`capacity ${capacity}: ${files.length} files x ${bands} bands of ${rows} rows: ${(ms / (files.length * bands)).toFixed(3)} ms per frame-band, ${cache.opens} opens`);
}
