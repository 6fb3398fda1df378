// Tiled background and noise model: a synthetic sky (gradient, curvature, noise, bright stars,
// hot pixels, a NaN border), a Bayer-like plane with per-site offsets, a generated light frame
// against its truth sky and noise, and the agreement of the three evaluators.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFitsImage } from '../../src/fits/index.js';
import { generateDataset } from '../../fixtures/generator/index.js';
import { backgroundAt, estimateBackground, noiseAt, renderBackground, rowEvaluator, rowSegments } from '../../src/algorithms/background.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';
import { vignetting } from './star-truth.js';

function gaussian(random: () => number): number {
  let u = 0;
  while (u === 0) u = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

const W = 512;
const H = 384;
const SIGMA = 10;
// A strong but realistic sky: 50 ADU (5σ) of slope across the plane and 2 ADU of curvature. (A
// slope of several % of σ per pixel would widen each tile's spread and the noise estimate with it.)
const sky = (x: number, y: number) => 1000 + 0.1 * x - 0.06 * y + 3e-5 * (x - 256) ** 2;

/** Sky + noise + 150 bright stars + 60 hot pixels; returns the plane and a star mask. */
function syntheticSky(seed: number, nanBorder = 0): { data: Float32Array; nearStar: Uint8Array } {
  const random = seededRandom(seed);
  const data = new Float32Array(W * H);
  const nearStar = new Uint8Array(W * H);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) data[y * W + x] = sky(x, y) + SIGMA * gaussian(random);
  for (let s = 0; s < 150; s++) {
    const cx = random() * W;
    const cy = random() * H;
    const amp = 200 + 5000 * random() ** 2;
    for (let y = Math.max(0, Math.floor(cy - 10)); y <= Math.min(H - 1, Math.ceil(cy + 10)); y++) {
      for (let x = Math.max(0, Math.floor(cx - 10)); x <= Math.min(W - 1, Math.ceil(cx + 10)); x++) {
        const r2 = (x - cx) ** 2 + (y - cy) ** 2;
        data[y * W + x] = data[y * W + x]! + amp * Math.exp(-r2 / (2 * 1.3 * 1.3));
        if (r2 < 64) nearStar[y * W + x] = 1;
      }
    }
  }
  for (let k = 0; k < 60; k++) {
    const i = Math.floor(random() * W * H);
    data[i] = data[i]! + 5000;
    nearStar[i] = 1;
  }
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) if (x < nanBorder || y < nanBorder) data[y * W + x] = NaN;
  }
  return { data, nearStar };
}

test('recovers a curved, sloped sky under stars and hot pixels, and the noise', () => {
  const { data, nearStar } = syntheticSky(1);
  const model = estimateBackground(data, W, H);
  assert.is(model.nx, 8);
  assert.is(model.ny, 6);
  const map = renderBackground(model);
  let worst = 0;
  let sum = 0;
  let n = 0;
  for (let i = 0; i < W * H; i++) {
    if (nearStar[i]) continue;
    const x = i % W;
    const y = (i - x) / W;
    const d = Math.abs(map[i]! - sky(x, y));
    worst = Math.max(worst, d);
    sum += d;
    n++;
  }
  // Per tile ~256 samples (σ/13 for the median), then a 3×3 median filter: ≪ σ everywhere.
  assert.ok(sum / n < 0.1 * SIGMA, `mean |error| ${sum / n}`);
  assert.ok(worst < 0.6 * SIGMA, `worst |error| ${worst}`);
  assert.ok(Math.abs(model.rms / SIGMA - 1) < 0.03, `global noise ${model.rms}`);
  // Local noise: each tile's MAD-σ comes from ~256 samples (±7 %), star wings below the clip add
  // a little; the filtered map stays within 8 % almost everywhere, 15 % everywhere.
  const noiseErrors: number[] = [];
  for (let y = 0; y < H; y += 7) for (let x = 0; x < W; x += 7) noiseErrors.push(Math.abs(noiseAt(model, x, y) / SIGMA - 1));
  noiseErrors.sort((a, b) => a - b);
  assert.ok(noiseErrors[Math.floor(0.9 * noiseErrors.length)]! < 0.08, `90 % of the noise map within 8 %: ${noiseErrors[Math.floor(0.9 * noiseErrors.length)]}`);
  assert.ok(noiseErrors[noiseErrors.length - 1]! < 0.15, `noise map within 15 %: ${noiseErrors[noiseErrors.length - 1]}`);
  assert.ok(Math.abs(model.median - sky(W / 2, H / 2)) < 30, `global level ${model.median}`);
  console.log(`  synthetic sky: mean |error| ${(sum / n).toFixed(3)}, worst ${worst.toFixed(3)} ADU (σ ${SIGMA}); noise ${model.rms.toFixed(3)}`);
});

test('first clip window from every other sample: the model matches the all-sample one closely', () => {
  const { data } = syntheticSky(3);
  const half = estimateBackground(data, W, H);
  const all = estimateBackground(data, W, H, { firstClip: 'all' });
  let worstLevel = 0;
  let worstNoise = 0;
  for (let k = 0; k < half.level.length; k++) {
    worstLevel = Math.max(worstLevel, Math.abs(half.level[k]! - all.level[k]!));
    worstNoise = Math.max(worstNoise, Math.abs(half.noise[k]! / all.noise[k]! - 1));
  }
  // The window's edges move by a fraction of σ, where few samples lie: the level by ≪ σ/13 (its
  // own sampling error), the noise by well under its ±7 % per-tile scatter.
  assert.ok(worstLevel < 0.03 * SIGMA, `level ${worstLevel}`);
  assert.ok(worstNoise < 0.02, `noise ${worstNoise}`);
  assert.ok(Math.abs(half.rms / all.rms - 1) < 0.005, `global noise ${half.rms} vs ${all.rms}`);
  assert.ok(Math.abs(half.median - all.median) < 0.01 * SIGMA, `global level ${half.median} vs ${all.median}`);
  console.log(`  half-sample first clip: level ≤ ${worstLevel.toFixed(4)} ADU, tile noise ≤ ${(100 * worstNoise).toFixed(2)} %, global noise ${(100 * (half.rms / all.rms - 1)).toFixed(3)} %`);
});

test('NaN regions are ignored and filled: the model stays finite and right', () => {
  const { data, nearStar } = syntheticSky(2, 100);
  const model = estimateBackground(data, W, H);
  const map = renderBackground(model);
  for (let i = 0; i < map.length; i++) assert.ok(Number.isFinite(map[i]!), 'finite everywhere');
  let worst = 0;
  // Beyond the tiles that the border cuts (their samples sit off their centres).
  for (let y = 128; y < H; y++) {
    for (let x = 128; x < W; x++) if (!nearStar[y * W + x]) worst = Math.max(worst, Math.abs(map[y * W + x]! - sky(x, y)));
  }
  assert.ok(worst < 0.8 * SIGMA, `worst error beyond the NaN border ${worst}`);
});

test('sub-sampling visits all four sites of a 2×2 mosaic equally', () => {
  const random = seededRandom(3);
  const data = new Float32Array(W * H);
  const offset = [0, 100, 100, 300];
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) data[y * W + x] = offset[((y & 1) << 1) | (x & 1)]! + 500 + 3 * gaussian(random);
  const model = estimateBackground(data, W, H, { clipRounds: 1 });
  // A 4-valued mixture: its median lies between the two middle sites (600 here).
  assert.ok(Math.abs(model.median - 600) < 2, `level ${model.median}`);
});

test('point, row and segment evaluators agree', () => {
  const { data } = syntheticSky(4);
  const model = estimateBackground(data, W, H);
  const rows = rowEvaluator(model);
  const { segments, fill } = rowSegments(model);
  const level = new Float32Array(W);
  const noise = new Float32Array(W);
  for (const y of [0, 17, 190, H - 1]) {
    rows(y, 'level', level);
    rows(y, 'noise', noise);
    fill(y);
    for (let s = 0; s < segments.count; s++) {
      for (let x = segments.start[s]!; x < segments.start[s + 1]!; x++) {
        const fromSeg = segments.level0[s]! + segments.levelSlope[s]! * (x - segments.start[s]!);
        const fromSegN = segments.noise0[s]! + segments.noiseSlope[s]! * (x - segments.start[s]!);
        assert.ok(Math.abs(fromSeg - backgroundAt(model, x, y)) < 1e-3, `segment level at ${x},${y}`);
        assert.ok(Math.abs(fromSegN - noiseAt(model, x, y)) < 1e-3, `segment noise at ${x},${y}`);
        assert.ok(Math.abs(level[x]! - backgroundAt(model, x, y)) < 1e-3, `row level at ${x},${y}`);
        assert.ok(Math.abs(noise[x]! - noiseAt(model, x, y)) < 1e-3, `row noise at ${x},${y}`);
      }
    }
  }
});

test('generated light frame: sky level and noise match the truth', async () => {
  await withTempDir('background', async (out) => {
    const truth = await generateDataset({ out, kind: 'mono', frames: 1, width: 768, height: 512, seed: 9, calibration: false });
    const frame = truth.frames[0]!;
    const image = await readFitsImage(`${out}/${frame.file}`);
    const model = estimateBackground(image.data, image.width, image.height);
    const s = truth.sensor;
    const cx = (image.width - 1) / 2;
    const cy = (image.height - 1) / 2;
    // Expected electrons at the centre: sky through the flat plus dark current.
    const skyE = frame.sky_e.l! * vignetting(truth, cx, cy) + s.dark_current_e_per_s * frame.exptime;
    const level = s.bias_adu + skyE / s.gain_e_per_adu;
    const sigma = Math.sqrt(skyE + s.read_noise_e ** 2) / s.gain_e_per_adu;
    const got = backgroundAt(model, cx, cy);
    const gotNoise = noiseAt(model, cx, cy);
    console.log(`  light frame centre: level ${got.toFixed(1)} (truth ${level.toFixed(1)}), noise ${gotNoise.toFixed(2)} (truth ${sigma.toFixed(2)})`);
    // Faint unresolved stars lift the sky a little; the bias column pattern adds ±1.2 ADU.
    assert.ok(Math.abs(got - level) < 0.1 * sigma, `level ${got} vs ${level}`);
    assert.ok(Math.abs(gotNoise / sigma - 1) < 0.05, `noise ${gotNoise} vs ${sigma}`);
  });
});

test.run();
