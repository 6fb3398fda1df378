// The host pre-mask over column windows (src/cpu/premask.ts ownedX0/ownedCols and nanIndexOf's
// col0/width; STACKING's DeviceStore masks many frames' bands that way): windows of a seeded band
// with GROW halo columns, each flagged and applied on its own, must NaN exactly the samples, list
// exactly the band indices and add exactly the tallies of one call over the whole band.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gatherWindow } from '../../src/cpu/gather-window.js';
import { GROW, premaskApply, premaskFlag, type PremaskArgs } from '../../src/cpu/premask.js';
import { seededRandom } from '../helpers/tmp.js';

const W = 97;
const R = 9;
const N = 11;

function seeded(seed: number) {
  const rnd = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const band = new Float32Array(N * R * W);
  for (let f = 0; f < N; f++) {
    for (let y = 0; y < R; y++) {
      for (let x = 0; x < W; x++) {
        let v = 1000 + 0.3 * x + 8 * gauss();
        // A star in every frame, trails and hot pixels in some (strong seeds grow across windows).
        v += 2500 * Math.exp(-((x - 40) ** 2 + (y - 4) ** 2) / 3);
        if (f === 3 && Math.abs(y - (x * 0.09 + 1)) < 0.6) v += 900;
        if (rnd() < 0.004) v += 4000;
        if (rnd() < 0.002) v = NaN;
        band[(f * R + y) * W + x] = v;
      }
    }
  }
  const median = new Float32Array(R * W);
  const col = new Float64Array(N);
  for (let i = 0; i < R * W; i++) {
    for (let f = 0; f < N; f++) col[f] = band[f * R * W + i]!;
    const s = Array.from(col).filter((v) => v === v).sort((a, b) => a - b);
    median[i] = s.length ? s[s.length >> 1]! : NaN;
  }
  return { band, median };
}

function args(band: Float32Array, median: Float32Array, width: number, extra: Partial<PremaskArgs>): PremaskArgs {
  return {
    band,
    median,
    mask: new Uint8Array(N * R * width),
    width,
    rows: R,
    frames: N,
    scale: new Array(N).fill(1),
    offset: new Array(N).fill(0),
    sigma: new Array(N).fill(8),
    kLow: 3,
    kHigh: 3,
    level: 1000,
    minFraction: 0.3,
    ownedY0: 2,
    ownedRows: 5,
    rejected: new Uint32Array(2 * N),
    counts: new BigUint64Array(2),
    nanIndex: new Uint32Array(N * R * W),
    nanCount: new Uint32Array(1),
    ...extra,
  };
}

for (const [cols, seed] of [[20, 1], [33, 2], [97, 3], [1, 4]] as const) {
  test(`column windows of ${cols} owned columns mask, list and tally exactly what the whole band does (seed ${seed})`, () => {
    const { band, median } = seeded(seed);
    const whole = args(band.slice(), median, W, {});
    premaskFlag(whole, 0, N);
    premaskApply(whole, 0, R);
    assert.ok(whole.nanCount![0]! > 20, `${whole.nanCount![0]} masked`);
    const rejected = new Uint32Array(2 * N);
    const counts = new BigUint64Array(2);
    const listed: number[] = [];
    const masked = band.slice();
    for (let a = 0; a < W; a += cols) {
      const b = Math.min(W, a + cols);
      const x0 = Math.max(0, a - GROW);
      const cw = Math.min(W, b + GROW) - x0;
      const spec = { frames: N, slotRows: R, width: W, y0: 0, rows: R, x0, cols: cw };
      const win = gatherWindow(band, spec, new Float32Array(N * R * cw));
      const med = gatherWindow(median, { ...spec, frames: 1 }, new Float32Array(R * cw));
      const nanIndex = new Uint32Array(N * R * cw);
      const nanCount = new Uint32Array(1);
      const w = args(win, med, cw, { ownedX0: a - x0, ownedCols: b - a, rejected, counts, nanIndex, nanCount, nanIndexOf: { plane: R * W, row0: 0, col0: x0, width: W } });
      premaskFlag(w, 0, N);
      premaskApply(w, 0, 4);
      premaskApply(w, 4, R);
      for (const i of nanIndex.subarray(0, nanCount[0])) {
        listed.push(i);
        masked[i] = NaN;
      }
    }
    assert.equal(listed.slice().sort((p, q) => p - q), Array.from(whole.nanIndex!.subarray(0, whole.nanCount![0])).sort((p, q) => p - q));
    assert.equal(Array.from(rejected), Array.from(whole.rejected));
    assert.equal(Array.from(counts), Array.from(whole.counts));
    // The listed indices are the samples the whole-band call set to NaN.
    for (let i = 0; i < band.length; i++) assert.is(Number.isNaN(masked[i]!), Number.isNaN(whole.band[i]!), `sample ${i}`);
  });
}

test.run();
