import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { calibrate, calibrateRange } from '../../src/cpu/calibrate.js';
import { sharedFloat32, splitRange, WorkerPool } from '../../src/cpu/worker-pool.js';

const CALIBRATE = { module: new URL('../../src/cpu/calibrate.js', import.meta.url).href, name: 'calibrateRange' };

test('splitRange covers the range once, in order, with aligned inner boundaries', () => {
  assert.equal(splitRange(0, 10, 3), [[0, 3], [3, 7], [7, 10]]);
  assert.equal(splitRange(5, 6, 4), [[5, 6]]);
  assert.equal(splitRange(3, 3, 4), []);
  for (const [s, e, parts, align, min] of [[0, 1000, 8, 16, 1], [7, 999, 5, 2, 100], [0, 17, 64, 1, 1]] as const) {
    const chunks = splitRange(s, e, parts, align, min);
    assert.is(chunks[0]![0], s);
    assert.is(chunks[chunks.length - 1]![1], e);
    assert.ok(chunks.length <= parts);
    for (let i = 1; i < chunks.length; i++) {
      assert.is(chunks[i]![0], chunks[i - 1]![1]);
      assert.is(chunks[i]![0] % align, 0);
    }
  }
});

test('WorkerPool runs a kernel over shared memory and reports kernel errors', async () => {
  assert.is(typeof calibrateRange, 'function');
  const pool = new WorkerPool(2);
  try {
    const light = sharedFloat32(10_000);
    for (let i = 0; i < light.length; i++) light[i] = i;
    const out = sharedFloat32(10_000);
    await pool.run(CALIBRATE, { count: 10_000, darkScale: 1, flatFloor: 0.05, pedestal: 3, light, out }, 0, 10_000, { minChunk: 100 });
    assert.equal(Array.from(out), Array.from(calibrate(light, {}, { pedestal: 3 })));
    // A plain ArrayBuffer would be copied into the worker and the output lost: refused.
    await pool.run(CALIBRATE, { light, out: new Float32Array(4) }, 0, 4).then(
      () => assert.unreachable('unshared output accepted'),
      (e: Error) => assert.match(e.message, /SharedArrayBuffer/),
    );
    // A kernel that throws (no light) fails the run; the pool keeps working afterwards.
    await pool.run(CALIBRATE, { out }, 0, 10).then(
      () => assert.unreachable('kernel error swallowed'),
      (e: Error) => assert.match(e.message, /calibrateRange/),
    );
    await pool.run({ ...CALIBRATE, name: 'nope' }, { out }, 0, 10).then(
      () => assert.unreachable('missing export accepted'),
      (e: Error) => assert.match(e.message, /no exported function nope/),
    );
    await pool.run(CALIBRATE, { out, f: () => 1 }, 0, 10).then(
      () => assert.unreachable('uncloneable args accepted'),
      (e: Error) => assert.match(e.message, /clone/),
    );
    out.fill(0);
    await pool.run(CALIBRATE, { count: 10_000, darkScale: 1, flatFloor: 0.05, pedestal: 0, light, out }, 0, 10_000);
    assert.is(out[9999], 9999);
  } finally {
    await pool.close();
  }
  await pool.run(CALIBRATE, {}, 0, 1).then(
    () => assert.unreachable('closed pool ran'),
    (e: Error) => assert.match(e.message, /closed/),
  );
});

test('an idle pool does not keep the process alive, a pending run does', () => {
  const url = new URL('../../src/cpu/debayer.js', import.meta.url).href;
  const script = `
    const { debayerBilinearParallel } = await import(${JSON.stringify(url)});
    const input = new Float32Array(64 * 64).fill(1);
    // Not awaited at top level: the pending run alone must keep the process alive until it ends.
    debayerBilinearParallel(input, { width: 64, height: 64, pattern: 'RGGB' }).then((p) => console.log('done', p.g[100]));
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  assert.is(r.signal, null, 'the process exited by itself (a timeout kills it)');
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout.trim(), 'done 1');
});

test.run();
