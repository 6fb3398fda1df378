// collectorWhenGrown (src/cpu/worker-gc.ts): the between-phases collection runs only after the
// heap and array buffers grew by the threshold since the last one, and then really collects.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { collectorWhenGrown, exposeGc, type Collect } from '../../src/cpu/worker-gc.js';

const MiB = 1024 * 1024;

test('no growth: no collection; a dead 32 MiB buffer: one collection that frees it, then none', () => {
  const gc = exposeGc();
  assert.ok(gc, 'the collector is exposed on the main thread');
  let calls = 0;
  const counted: Collect = (o) => {
    calls++;
    gc!(o);
  };
  gc!();
  const collect = collectorWhenGrown(counted, 8 * MiB);
  assert.is(collect(), false);
  assert.is(calls, 0);
  let dead: Uint8Array | null = new Uint8Array(32 * MiB).fill(1);
  assert.is(dead[123], 1);
  dead = null;
  const before = process.memoryUsage().arrayBuffers;
  assert.is(collect(), true);
  assert.is(calls, 1);
  assert.ok(process.memoryUsage().arrayBuffers < before - 16 * MiB, 'the dead buffer was released');
  // The baseline moved to what the collection left: nothing grew since.
  assert.is(collect(), false);
  assert.is(calls, 1);
});

test('a live buffer above the threshold is collected around once, not after every phase', () => {
  let calls = 0;
  const collect = collectorWhenGrown(() => calls++, 8 * MiB);
  const live = new Float32Array(4 * MiB);
  assert.is(collect(), true);
  assert.is(collect(), false);
  assert.is(live.length, 4 * MiB);
  assert.is(calls, 1);
});

test('without a collector it never collects', () => {
  const collect = collectorWhenGrown(null, 0);
  const big = new Uint8Array(16 * MiB);
  assert.is(collect(), false);
  assert.is(big.length, 16 * MiB);
});

test.run();
