// imageMedians is imageStats' median without the deviation passes: the same values, bit for bit.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { imageMedians, imageMediansPooled, imageStats, medianRowsPass, type RowPool, type StatsParams } from '../../src/cpu/stats.js';
import { WorkerPool } from '../../src/cpu/worker-pool.js';
import { seededRandom } from '../helpers/tmp.js';

test('imageMedians equals imageStats(...).median (whole, bayer, odd sizes, NaN/Inf, empty groups)', () => {
  const rnd = seededRandom(21);
  for (const [w, h] of [
    [1, 1],
    [2, 1],
    [7, 5],
    [64, 48],
    [301, 17],
  ] as const) {
    const data = new Float32Array(w * h);
    for (let i = 0; i < data.length; i++) data[i] = (rnd() - 0.3) * 2000;
    if (data.length > 8) {
      data[1] = NaN;
      data[4] = Infinity;
      data[data.length - 1] = -Infinity;
    }
    for (const mode of ['whole', 'bayer'] as const) {
      for (const origin of [{}, { x0: 1, y0: 1 }]) {
        const p: StatsParams = { width: w, height: h, mode, ...origin };
        const want = imageStats(data, p).map((s) => s.median);
        const got = imageMedians(data, p);
        assert.is(got.length, want.length);
        got.forEach((m, g) => assert.ok(Object.is(m, want[g]), `${w}x${h} ${mode} ${JSON.stringify(origin)} group ${g}: ${m} vs ${want[g]}`));
      }
    }
  }
  assert.ok(Number.isNaN(imageMedians(new Float32Array([NaN, NaN]), { width: 2, height: 1, mode: 'whole' })[0]));
});

test('imageMediansPooled (worker pool, and an inline pool with odd splits) equals imageMedians', async () => {
  const rnd = seededRandom(22);
  const pool = new WorkerPool(2);
  // Runs the kernel in place over uneven chunks: the split must not change the result.
  const inline: RowPool = {
    async run(_k, args, start, end) {
      for (let a = start, step = 1; a < end; a += step, step += 2) medianRowsPass(args as Parameters<typeof medianRowsPass>[0], a, Math.min(end, a + step));
    },
  };
  try {
    for (const [w, h] of [
      [1, 1],
      [5, 3],
      [128, 97],
      [640, 480],
    ] as const) {
      const data = new Float32Array(new SharedArrayBuffer(w * h * 4));
      for (let i = 0; i < data.length; i++) data[i] = 800 + 50 * (rnd() + rnd() - 1) + (rnd() < 0.01 ? 20000 : 0);
      if (data.length > 3) data[2] = NaN;
      for (const mode of ['whole', 'bayer'] as const) {
        const p: StatsParams = { width: w, height: h, mode, x0: 1, y0: 0 };
        const want = imageMedians(data, p);
        for (const [label, runner] of [
          ['workers', pool],
          ['inline', inline],
        ] as const) {
          const got = await imageMediansPooled(runner, data, p);
          got.forEach((m, g) => assert.ok(Object.is(m, want[g]), `${label} ${w}x${h} ${mode} group ${g}: ${m} vs ${want[g]}`));
        }
      }
    }
  } finally {
    await pool.close();
  }
});

test.run();
