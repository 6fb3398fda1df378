// LN planes binned from QUALITY_ANALYSIS's correlation read (ccProxyAndBins) are the setup pass's
// own: bit-identical binned planes, and the same LN coefficients, models and reference sky from
// setupLocalNormalization with and without them (mono and OSC, shifted frames, superpixel), and
// with the fits deferred to the band loop (deferFits); a plane binned another way is not used
// (the frame is read).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { binPlane } from '../../src/algorithms/binned-plane.js';
import { makeCcProxy } from '../../src/algorithms/registration-cc.js';
import { writeFits } from '../../src/fits/index.js';
import { ccProxyAndBins, ccProxyOfFile } from '../../src/pipeline/stages/frames/tasks.js';
import { lnSetupBinning, setupLocalNormalization, type LnBinning, type LnSetup } from '../../src/pipeline/stages/stacking/local-norm.js';
import { lnFitWorkerTesting } from '../../src/pipeline/stages/stacking/ln-fit-worker.js';
import { ReaderCache } from '../../src/pipeline/stages/stacking/readers.js';
import { toCells, type StackFrame } from '../../src/pipeline/stages/stacking/plan.js';
import type { BinnedPlane } from '../../src/algorithms/binned-plane.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

const W = 700;
const H = 530; // odd sizes: edge blocks and rows the CC proxy leaves out

/** A sky with a per-frame gradient, a few stars and noise, seen shifted by (dx, dy). */
function frame(seed: number, dx: number, dy: number): Float32Array {
  const rnd = seededRandom(seed);
  const out = new Float32Array(W * H);
  const stars = Array.from({ length: 40 }, (_, i) => ({ x: ((i * 97) % W) + dx, y: ((i * 53) % H) + dy, f: 500 + 40 * i }));
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      let v = 1000 + seed * 20 + 0.3 * x * (seed % 3) - 0.2 * y + 30 * Math.sin((x + y * seed) / 300);
      for (const s of stars) {
        const r2 = (x - s.x) ** 2 + (y - s.y) ** 2;
        if (r2 < 50) v += s.f * Math.exp(-r2 / 4);
      }
      out[y * W + x] = v + 10 * (rnd() + rnd() + rnd() - 1.5);
    }
  }
  out[17 * W + 33] = NaN; // a masked pixel: NaN-aware blocks
  return out;
}

const shifts = [
  [0, 0],
  [3.4, -2.1],
  [-5, 4.2],
];

async function writeFrames(dir: string): Promise<string[]> {
  const files: string[] = [];
  for (let i = 0; i < shifts.length; i++) {
    const file = join(dir, `f${i}.fits`);
    await writeFits(file, { width: W, height: H, data: frame(i + 1, shifts[i]![0]!, shifts[i]![1]!) });
    files.push(file);
  }
  return files;
}

function stackFrames(files: string[], channels: 1 | 3, binning: 1 | 2): StackFrame[] {
  return files.map((source, slot) => {
    const [dx, dy] = shifts[slot]!;
    let m: [[number, number, number], [number, number, number]] = [
      [1, 0, dx!],
      [0, 1, dy!],
    ];
    if (binning === 2) m = toCells(m) as typeof m;
    return {
      slot,
      source,
      toFrame: m.flat(),
      pattern: channels === 3 ? 'GRBG' : null,
      stats: [],
      scale: Array.from({ length: channels }, (_, c) => 1 + 0.01 * slot + 0.001 * c),
      offset: Array.from({ length: channels }, (_, c) => -20 * slot + c),
      weight: 1,
      noise: null,
      exposure: null,
      dateObs: null,
    };
  });
}

async function setup(frames: StackFrame[], channels: 1 | 3, binning: 1 | 2, premeasured?: (f: StackFrame, s: LnBinning) => BinnedPlane[] | null, deferFits = false, fitWorker = true): Promise<LnSetup> {
  const readers = new ReaderCache(8);
  try {
    const ow = Math.floor(W / binning);
    const oh = Math.floor(H / binning);
    return await setupLocalNormalization({ width: ow, height: oh, frameWidth: W, frameHeight: H, binning, channels, frames, referenceSlot: 0, readers, fit: true, cells: 8, scale: 'none', deferFits, fitWorker, ...(premeasured ? { premeasured } : {}) });
  } finally {
    await readers.closeAll();
  }
}

function assertSame(a: LnSetup, b: LnSetup): void {
  assert.ok(a.tables && b.tables);
  assert.is(a.tables!.coefficients.length, b.tables!.coefficients.length);
  a.tables!.coefficients.forEach((t, c) => assert.equal(Array.from(t), Array.from(b.tables!.coefficients[c]!), `channel ${c} coefficients bit-identical`));
  assert.equal(JSON.stringify(a.models), JSON.stringify(b.models), 'compact models');
  assert.equal(JSON.stringify(a.background), JSON.stringify(b.background), 'reference sky');
  assert.is(a.binFactor, b.binFactor);
}

for (const [channels, binning] of [
  [1, 1],
  [3, 1],
  [3, 2],
] as const) {
  test(`premeasured planes (${channels === 1 ? 'mono' : binning === 2 ? 'OSC superpixel' : 'OSC'}): same binned planes and the same LN fit as the setup pass's own read`, async () => {
    await withTempDir('lnpre', async (dir) => {
      const files = await writeFrames(dir);
      const frames = stackFrames(files, channels, binning);
      const spec = lnSetupBinning(W, H, Math.floor(W / binning), Math.floor(H / binning), binning, channels === 3, frames[0]!.pattern);
      const held = new Map<string, BinnedPlane[]>();
      for (let i = 0; i < files.length; i++) {
        const r = await ccProxyAndBins(files[i]!, 2, spec);
        assert.equal(r.proxy, await ccProxyOfFile(files[i]!, 2), 'the correlation proxy is unchanged');
        const whole = frame(i + 1, shifts[i]![0]!, shifts[i]![1]!);
        // Bands read into one reused buffer: the proxy of the whole plane in memory, bit for bit.
        if (i === 0) assert.equal(Array.from(r.proxy.data), Array.from(makeCcProxy(whole, W, H, { bin: 2 }).data), 'banded proxy = whole-plane proxy');
        const own = spec.sites ? spec.sites.map((sites) => binPlane(whole, W, H, spec.factor, { sites })) : [binPlane(whole, W, H, spec.factor)];
        assert.is(r.lnPlanes!.length, channels);
        r.lnPlanes!.forEach((p, c) => assert.equal(Array.from(p.data), Array.from(own[c]!.data), `frame ${i} channel ${c} plane bit-identical`));
        held.set(files[i]!, r.lnPlanes!);
      }
      const read = await setup(frames, channels, binning);
      assert.is(read.premeasured, 0);
      const asked: LnBinning[] = [];
      const pre = await setup(frames, channels, binning, (f, s) => {
        asked.push(s);
        return held.get(f.source) ?? null;
      });
      assert.is(pre.premeasured, files.length, 'no frame read again');
      assert.equal(asked[0], spec, 'the setup asks for the binning lnSetupBinning gives');
      assertSame(pre, read);
      // The held planes are left as they were (normalised on copies): a second setup agrees.
      assertSame(await setup(frames, channels, binning, (f) => held.get(f.source) ?? null), read);
      // Fits deferred to the band loop: nothing fitted until asked, frame by frame, then the same tables and models.
      const deferred = await setup(frames, channels, binning, (f) => held.get(f.source) ?? null, true);
      assert.ok(deferred.pending, 'every frame premeasured: the fits wait');
      const planeBytes = [...held.values()].reduce((a, ps) => a + ps.reduce((b, p) => b + p.data.byteLength, 0), 0);
      assert.ok(deferred.pending!.bytes >= planeBytes, `held planes reserved (${deferred.pending!.bytes} of ${planeBytes} B)`);
      assert.is(deferred.premeasured, files.length);
      assert.ok(deferred.tables!.coefficients.every((t) => t.every((v) => v === 0)) && deferred.models!.every((m) => m === undefined), 'no fit yet');
      await deferred.pending!.upTo(1);
      assert.ok(deferred.models![1] && !deferred.models![2], 'frames 0 and 1 fitted, frame 2 not yet');
      await deferred.pending!.finish();
      await deferred.pending!.upTo(0); // (already fitted: no-op)
      assertSame(deferred, read);
      assert.is(deferred.pending!.onWorker, files.length, 'every frame fitted on the worker');
      // The same on this thread (no fit worker), and with a worker that dies after one fit
      // (the frames it left are fitted here).
      const here = await setup(frames, channels, binning, (f) => held.get(f.source) ?? null, true, false);
      await here.pending!.finish();
      assertSame(here, read);
      assert.is(here.pending!.onWorker, 0);
      lnFitWorkerTesting.exitAfterFits = 1;
      try {
        const dying = await setup(frames, channels, binning, (f) => held.get(f.source) ?? null, true);
        await dying.pending!.finish();
        assertSame(dying, read);
        assert.is(dying.pending!.onWorker, 1, 'one fit on the worker, the rest here');
      } finally {
        lnFitWorkerTesting.exitAfterFits = null;
      }
      // One frame to read: everything is fitted before the setup returns.
      const mixed = await setup(frames, channels, binning, (f) => (f.slot === 2 ? null : (held.get(f.source) ?? null)), true);
      assert.is(mixed.pending, null);
      assertSame(mixed, read);
    });
  });
}

test('premeasured planes binned with another factor are not used: the frame is read, same fit', async () => {
  await withTempDir('lnpre', async (dir) => {
    const files = await writeFrames(dir);
    const frames = stackFrames(files, 1, 1);
    const spec = lnSetupBinning(W, H, W, H, 1, false);
    const wrong = { factor: spec.factor * 2, sites: null };
    const held = new Map<string, BinnedPlane[]>();
    for (const f of files) held.set(f, (await ccProxyAndBins(f, 2, wrong)).lnPlanes!);
    const read = await setup(frames, 1, 1);
    const pre = await setup(frames, 1, 1, (f) => held.get(f.source) ?? null);
    assert.is(pre.premeasured, 0);
    assertSame(pre, read);
  });
});

test.run();
