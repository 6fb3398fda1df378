// collectorWhenGrown (src/cpu/worker-gc.ts): the between-phases collection runs only after the
// heap and array buffers grew by the threshold since the last one, and then really collects.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { collectorWhenGrown, exposeGc, type Collect } from '../../src/cpu/worker-gc.js';

const MiB = 1024 * 1024;

/** A 64 MiB buffer nothing references once this returns, and a WeakRef that says when it died. */
function deadBuffer(): WeakRef<Uint8Array> {
  const dead = new Uint8Array(64 * MiB).fill(1);
  assert.is(dead[123], 1);
  return new WeakRef(dead);
}

test('no growth: no collection; a dead 64 MiB buffer: one collection that frees it, then none', async () => {
  const gc = exposeGc();
  assert.ok(gc, 'the collector is exposed on the main thread');
  let calls = 0;
  const counted: Collect = (o) => {
    calls++;
    gc!(o);
  };
  // The counters are the whole process's (one process runs every test file): let the sweep of
  // earlier files' buffers finish before the baseline; the 64 MiB keeps a margin for the rest.
  gc!();
  await new Promise((r) => setTimeout(r, 50));
  gc!();
  const collect = collectorWhenGrown(counted, 8 * MiB);
  assert.is(collect(), false);
  assert.is(calls, 0);
  const ref = deadBuffer();
  // A WeakRef (created, or deref'd) keeps its target alive until the current job ends: let it end.
  await new Promise((r) => setImmediate(r));
  assert.is(collect(), true);
  assert.is(calls, 1);
  assert.ok(ref.deref() === undefined, 'the collection freed the dead buffer');
  // (Not asserted on process.memoryUsage().arrayBuffers: that count is the whole process's, with
  // earlier test files' buffers swept by V8 in the background meanwhile, and flaked in the suite.)
  // The baseline moved to what the collection left: nothing grew since.
  assert.is(collect(), false);
  assert.is(calls, 1);
});

test('a live buffer above the threshold is collected around once, not after every phase', async () => {
  // As above: earlier files' buffers swept in the background would lower the process-wide
  // counters under the baseline; settle them first, and grow by 64 MiB against an 8 MiB threshold.
  const gc = exposeGc();
  gc!();
  await new Promise((r) => setTimeout(r, 50));
  gc!();
  let calls = 0;
  const collect = collectorWhenGrown(() => calls++, 8 * MiB);
  const live = new Float32Array(16 * MiB);
  assert.is(collect(), true);
  assert.is(collect(), false);
  assert.is(live.length, 16 * MiB);
  assert.is(calls, 1);
});

test('without a collector it never collects', () => {
  const collect = collectorWhenGrown(null, 0);
  const big = new Uint8Array(16 * MiB);
  assert.is(collect(), false);
  assert.is(big.length, 16 * MiB);
});

test.run();
