// combineFrames (stages/calibration/masters.ts): the master, its rejected fraction and the flat levels
// do not depend on how the image is banded (one band: levels from the decoded frames; several:
// from the files), on the device band's spare slots, or (within f32 rounding) on the device.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { writeFits } from '../../src/fits/index.js';
import { combineFrames, type CombineOptions } from '../../src/pipeline/stages/calibration/masters.js';
import { compareArrays, gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

const W = 64;
const H = 48;
const N = 12;

/** 12 flats at different levels, one hot pixel per frame (rejected at kappa 3 with 12 samples). */
async function flats(dir: string): Promise<string[]> {
  const rnd = seededRandom(5);
  const files: string[] = [];
  for (let f = 0; f < N; f++) {
    const level = 20000 + 1500 * f;
    const data = new Uint16Array(W * H);
    for (let i = 0; i < data.length; i++) data[i] = Math.round(level * (0.9 + 0.1 * ((i % W) / W)) + 60 * (rnd() + rnd() + rnd() - 1.5));
    data[(f * 131) % data.length] = 65000;
    const file = join(dir, `flat_${f}.fits`);
    await writeFits(file, { width: W, height: H, data });
    files.push(file);
  }
  return files;
}

function offset(): Float32Array {
  const a = new Float32Array(W * H);
  for (let i = 0; i < a.length; i++) a[i] = 1000 + (i % 7) * 0.25;
  return a;
}

function options(over: Partial<CombineOptions>): CombineOptions {
  return { width: W, height: H, kappa: 3, budgetBytes: 64 << 20, gpu: null, workers: 2, checkCancelled: () => undefined, subtract: offset(), normalizeLevels: true, ...over };
}

// One band of 12 frames: 12 x 4 + 12 bytes per pixel; 20 rows need 20 x 64 x 60 = 76800 bytes.
const SMALL = 20 * W * 60;

test('TypeScript path: one band and several bands give the same master, rejections and levels', async () => {
  await withTempDir('cal-combine', async (dir) => {
    const files = await flats(dir);
    const one = await combineFrames(files, options({}));
    const many = await combineFrames(files, options({ budgetBytes: SMALL }));
    assert.is(one.bands, 1);
    assert.ok(many.bands > 1, `${many.bands} bands`);
    assert.equal(many.levels, one.levels);
    assert.equal(Array.from(many.data), Array.from(one.data));
    assert.is(many.rejectedFraction, one.rejectedFraction);
    // One hot pixel per frame at least is rejected; no more than a few per mille.
    assert.ok(one.rejectedFraction >= N / (N * W * H) && one.rejectedFraction < 0.005, `rejected ${one.rejectedFraction}`);
    assert.is(one.device, 'cpu');
  });
});

gpuTest('device path: spare slots and banding change nothing; matches TypeScript within f32 rounding', async () => {
  await withTempDir('cal-combine', async (dir) => {
    const files = await flats(dir);
    const cpu = await combineFrames(files, options({}));
    const dev = await combineFrames(files, options({ gpu: gpu.ctx }));
    const slots = await combineFrames(files, options({ gpu: gpu.ctx, deviceSlots: N + 4 }));
    const banded = await combineFrames(files, options({ gpu: gpu.ctx, budgetBytes: SMALL }));
    assert.is(dev.device, 'gpu');
    assert.ok(banded.bands > 1);
    assert.equal(Array.from(slots.data), Array.from(dev.data));
    assert.equal(Array.from(banded.data), Array.from(dev.data));
    assert.is(slots.rejectedFraction, dev.rejectedFraction);
    assert.is(banded.rejectedFraction, dev.rejectedFraction);
    assert.equal(dev.levels, cpu.levels);
    const d = compareArrays(dev.data, cpu.data);
    assert.is(d.nanMismatches, 0);
    assert.ok(d.maxRel < 1e-6, `device vs TypeScript: max relative ${d.maxRel}`);
    assert.ok(Math.abs(dev.rejectedFraction - cpu.rejectedFraction) <= 2 / (N * W * H), `rejected ${dev.rejectedFraction} vs ${cpu.rejectedFraction}`);
  });
});

test.run();
