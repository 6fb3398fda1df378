// The band loop reads each frame's rows once per band (engine.ts runBand's prefetch): a consumed
// read leaves the read map, and a prefetch that scanned from frame 0 for absent entries started
// every consumed frame's read again; those duplicate reads were never consumed and each held a
// frame slice until the band ended (~0.8 GB per band at 1000 frames of 1024 px).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { BandEngine, type EngineOptions } from '../../src/pipeline/stages/stacking/engine.js';
import type { StackFrame } from '../../src/pipeline/stages/stacking/plan.js';
import type { ReaderCache } from '../../src/pipeline/stages/stacking/readers.js';

test('band loop: every frame is read once per band, whatever the frame count and prefetch', async () => {
  const W = 16;
  const H = 8;
  for (const [frames, workers] of [[7, 1], [40, 2], [40, 3]] as const) {
    const reads = new Map<string, number>();
    const readers = {
      readRowsInto: async (file: string, _y0: number, rows: number, target: Float32Array) => {
        reads.set(file, (reads.get(file) ?? 0) + 1);
        const out = target.subarray(0, rows * W);
        out.fill(1);
        return out;
      },
    } as unknown as ReaderCache;
    const list: StackFrame[] = Array.from({ length: frames }, (_, i) => ({ slot: i, source: `f${i}`, toFrame: [1, 0, 0, 0, 1, 0], pattern: null, stats: [], scale: [1], offset: [0], weight: 1, noise: null, exposure: null, dateObs: null }));
    const o: EngineOptions = {
      width: W, height: H, frameWidth: W, frameHeight: H, binning: 1, channels: 1, frames: list,
      maxWorkRows: H, maxOwnedRows: H, maxSourceRows: H, maxReadRows: H, kernel: 'bilinear', readHalo: 0,
      rejection: { method: 'none', low: 3, high: 3, maxIters: 1, minFraction: 0 },
      premask: null, perFrameCosmetic: null, ln: null, noiseModel: null, workers: 1,
      gpu: { debayer: null, warp: null, stack: null }, readers,
    };
    // workers sets the prefetch depth (runBand's `ahead`); the engine itself runs inline (no pool).
    const engine = new BandEngine({ ...o, workers: 1 });
    (engine as unknown as { o: EngineOptions }).o.workers = workers;
    const bands = [{ y0: 0, rows: 4, readY0: 0, readRows: 4 }, { y0: 4, rows: 4, readY0: 4, readRows: 4 }];
    for (let b = 0; b < bands.length; b++) {
      const rows = await engine.runBand(bands[b]!, () => undefined, bands[b + 1] ?? null);
      assert.ok(rows[0]!.every((v) => v === 1), 'the mean of ones');
      // The next band's first `workers` reads start while this band is stacked.
      const want = (i: number) => b + 1 + (b + 1 < bands.length && i < workers ? 1 : 0);
      for (let i = 0; i < frames; i++) assert.is(reads.get(`f${i}`), want(i), `${frames} frames, prefetch ${workers}: frame ${i} read ${reads.get(`f${i}`)} times after band ${b + 1}`);
    }
    await engine.dispose();
  }
});

test.run();
