// The noise-model rejection with the tiled workflow's per-pixel weight field
// (rejectNoiseModel's `field`, the weight-field stack's bounds in stages/stacking/weightfield.ts):
// a pixel's result equals the per-frame-weight rejection with that pixel's field weights
// (rowWeights), a uniform field gives the per-frame-weight stack, and a trail still goes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rejectNoiseModel, type NoiseRejectParams } from '../../src/cpu/reject-noise.js';
import { axisWindows, rowWeights, type WeightFieldRows } from '../../src/cpu/stack-weightfield.js';
import { rejectFieldRows, weightField } from '../../src/pipeline/stages/stacking/weightfield.js';
import { seededRandom } from '../helpers/tmp.js';

const W = 40;
const R = 12;
const N = 7;

function makeCase(seed: number) {
  const rnd = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const band = new Float32Array(N * R * W);
  for (let f = 0; f < N; f++) {
    for (let y = 0; y < R; y++) {
      for (let x = 0; x < W; x++) {
        // Sky 500, noise 6, a star at (20, 6) whose peak varies with seeing.
        const star = 2000 * (0.7 + 0.6 * rnd()) * Math.exp(-((x - 20) ** 2 + (y - 6) ** 2) / 3);
        band[(f * R + y) * W + x] = 500 + 6 * gauss() + star;
      }
    }
  }
  for (let x = 0; x < W; x++) band[(2 * R + 3) * W + x]! += 300; // a trail along row 3 of frame 2
  band[(4 * R + 9) * W + 11] = NaN;
  const centre = new Float32Array(R * W);
  for (let i = 0; i < R * W; i++) {
    const v = Array.from({ length: N }, (_, f) => band[f * R * W + i]!).filter((x) => x === x).sort((a, b) => a - b);
    centre[i] = v[v.length >> 1]!;
  }
  const background = new Float32Array(R * W).fill(500);
  const p: NoiseRejectParams = { width: W, rows: R, frames: N, method: 'sigma', low: 3, high: 3, maxIters: 3, minFraction: 0.4, noise: new Array(N).fill(6), poisson: new Array(N).fill(0.3), seeing: new Array(N).fill(1) };
  // A field of 3 × 2 tiles of 20 × 8 px, weights varying per tile and frame (each tile's column sums to 1).
  const tilesX = 3;
  const tilesY = 2;
  const table = new Float32Array(N * tilesY * tilesX);
  for (let t = 0; t < tilesX * tilesY; t++) {
    const w = Array.from({ length: N }, () => 0.2 + rnd());
    const s = w.reduce((a, b) => a + b, 0);
    for (let f = 0; f < N; f++) table[f * tilesX * tilesY + t] = w[f]! / s;
  }
  const field: WeightFieldRows = { tilesX, tilesY, table, cols: axisWindows([0, 10, 20], 20, W), rows: axisWindows([0, 4], 8, R) };
  return { band, centre, background, p, field };
}

test('each pixel equals the per-frame-weight rejection with its field weights', () => {
  const { band, centre, background, p, field } = makeCase(3);
  const got = rejectNoiseModel(band, p, { centre, background }, field);
  const rowBlend = new Float64Array(N * field.tilesX);
  const w = new Float64Array(W * N);
  const low = new Uint32Array(N);
  const high = new Uint32Array(N);
  for (let r = 0; r < R; r++) {
    rowWeights(field, N, W, r, rowBlend, w);
    for (let x = 0; x < W; x++) {
      const i = r * W + x;
      const one = new Float32Array(N);
      for (let f = 0; f < N; f++) one[f] = band[f * R * W + i]!;
      const want = rejectNoiseModel(one, { ...p, width: 1, rows: 1, weight: Array.from(w.subarray(x * N, x * N + N)) }, { centre: centre.subarray(i, i + 1), background: background.subarray(i, i + 1) });
      assert.is(got.count[i], want.count[0], `count at ${x},${r}`);
      // The per-frame path holds weights as f32 (the device's), the field's are f64: agree to f32 rounding.
      const a = got.mean[i]!;
      const b = want.mean[0]!;
      assert.ok(Math.abs(a - b) <= 1e-6 * Math.abs(b), `mean at ${x},${r}: ${a} vs ${b}`);
      for (let f = 0; f < N; f++) {
        low[f]! += want.rejectedLow[f]!;
        high[f]! += want.rejectedHigh[f]!;
      }
    }
  }
  assert.equal(Array.from(got.rejectedLow), Array.from(low));
  assert.equal(Array.from(got.rejectedHigh), Array.from(high));
  // The trail (frame 2, row 3) is rejected along the row; the star's sharp and soft frames are kept.
  assert.ok(got.rejectedHigh[2]! >= W - 2, `trail rejections ${got.rejectedHigh[2]}`);
  for (let y = 5; y <= 7; y++) for (let x = 19; x <= 21; x++) assert.is(got.count[y * W + x], N, `star pixel ${x},${y}`);
});

test('a uniform field gives the per-frame-weight result; the pool kernel writes the same rows in parts', () => {
  const { band, centre, background, p } = makeCase(5);
  const wf = [1, 2, 0.5, 1.5, 1, 0.8, 1.2];
  const s = wf.reduce((a, b) => a + b, 0);
  const table = new Float32Array(N * 2).map((_, k) => wf[Math.floor(k / 2)]! / s);
  const uniform: WeightFieldRows = { tilesX: 2, tilesY: 1, table, cols: axisWindows([0, 20], 20, W), rows: axisWindows([0], R, R) };
  const a = rejectNoiseModel(band, p, { centre, background }, uniform);
  const b = rejectNoiseModel(band, { ...p, weight: wf }, { centre, background });
  assert.equal(Array.from(a.count), Array.from(b.count));
  for (let i = 0; i < a.mean.length; i++) assert.ok(Math.abs(a.mean[i]! - b.mean[i]!) <= 1e-6 * Math.abs(b.mean[i]!), `pixel ${i}`);
  assert.equal(Array.from(a.rejectedHigh), Array.from(b.rejectedHigh));
  // rejectFieldRows over two parts of the band, from image row 0, equals one call.
  const field = weightField(table, [0, 20], [0], 20, R, W, R);
  const mean = new Float32Array(R * W);
  const rejected = new Uint32Array(2 * N);
  const counts = new BigUint64Array(2);
  const args = { band, width: W, rows: R, frames: N, method: 'sigma' as const, low: 3, high: 3, maxIters: 3, minFraction: 0.4, scale: new Array(N).fill(1), offset: new Array(N).fill(0), weight: new Array(N).fill(1), noise: p.noise as number[], poisson: p.poisson as number[], seeing: p.seeing as number[], srcRows: R, srcRow0: 0, centre, centreRow0: 0, background, mean, rejected, counts, field, imageY0: 0 };
  rejectFieldRows(args, 0, 5);
  rejectFieldRows(args, 5, R);
  for (let i = 0; i < mean.length; i++) assert.ok(Math.abs(mean[i]! - a.mean[i]!) <= 1e-6 * Math.abs(a.mean[i]!), `row part pixel ${i}`);
  assert.equal(Array.from(rejected.subarray(N)), Array.from(a.rejectedHigh));
});

test.run();
