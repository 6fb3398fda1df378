// Rejection that keeps signal (src/cpu/reject-noise.ts), the TypeScript reference:
// - hand cases: bounds from the noise model (σ, the shot-noise and seeing terms), iteration to
//   a fixed point, min_keep refusal, frames without a noise estimate, NaN, weights, winsor;
// - a star seen through 3 sharp frames among 37 soft ones (seeded noise): today's sigma clipping
//   removes the sharp cores (peak −9 %, FWHM up), the noise-model rejection keeps the stack
//   equal to the plain mean within noise, with per-frame seeing tolerances from the FWHM;
// - defects still go: a satellite trail among 5 frames (where sigma clipping cannot reject one
//   outlier: (N − 1)/√N < 3), cosmic rays on the sky and on a star core, hot pixels.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rejectNoiseModel, seeingTolerances, type NoiseRejectParams } from '../../src/cpu/reject-noise.js';
import { stack } from '../../src/cpu/stack.js';
import { gaussian, moffat } from '../helpers/synthetic-sky.js';
import { seededRandom } from '../helpers/tmp.js';

/** pixels[p][f] → frame-major band of one row. */
function band(pixels: number[][]): Float32Array {
  const w = pixels.length;
  const n = pixels[0]!.length;
  const out = new Float32Array(n * w);
  pixels.forEach((px, p) => px.forEach((v, f) => (out[f * w + p] = v)));
  return out;
}

function params(n: number, width: number, extra: Partial<NoiseRejectParams> = {}): NoiseRejectParams {
  return { width, rows: 1, frames: n, method: 'sigma', low: 3, high: 3, maxIters: 3, minFraction: 0, noise: new Array(n).fill(1), seeing: new Array(n).fill(0.5), ...extra };
}

const zeros = (n: number) => new Array<number>(n).fill(0);
const flat = (w: number, v: number) => new Float32Array(w).fill(v);

test('sky pixel: bounds are κσ of the frame noise, not of the samples; one outlier among 5 goes', () => {
  // Background 100, σ 1, α 0.5: from the mean 101 (S = 1, τ = 1.118) 105 is 3.6τ out → rejected,
  // although the samples' own σ (2.0) puts it at 2σ; then around 100 the rest stays.
  const r = rejectNoiseModel(band([[100, 100.5, 99.5, 100, 105]]), params(5, 1), { centre: null, background: flat(1, 100) });
  assert.is(r.count[0], 4);
  assert.is(r.mean[0], 100);
  assert.equal(Array.from(r.rejectedHigh), [0, 0, 0, 0, 1]);
  // Today's sigma clipping keeps it: one outlier among 5 is at most 1.79σ of the samples out.
  const today = stack(band([[100, 100.5, 99.5, 100, 105]]), { width: 1, rows: 1, frames: 5, method: 'sigma', low: 3, high: 3, maxIters: 3, minFraction: 0 });
  assert.is(today.count[0], 5);
  // Per-frame σ: frame 4 noisier (σ 2): 105 is 2σ out for it → kept.
  const noisy = rejectNoiseModel(band([[100, 100.5, 99.5, 100, 105]]), params(5, 1, { noise: [1, 1, 1, 1, 2] }), { centre: null, background: flat(1, 100) });
  assert.is(noisy.count[0], 5);
  // σ ≤ 0 or NaN: no noise estimate, the frame is never rejected.
  const unknown = rejectNoiseModel(band([[100, 100.5, 99.5, 100, 105]]), params(5, 1, { noise: [1, 1, 1, 1, 0] }), { centre: null, background: flat(1, 100) });
  assert.is(unknown.count[0], 5);
});

test('star pixel: the seeing term widens the bounds with the signal above the sky', () => {
  // Sky 100, σ 1; a star core at ~1100 in soft frames, 1700 in a sharp one (S ≈ 1000 at the centre).
  const vals = [1100, 1101, 1099, 1102, 1098, 1100, 1700];
  const centre = Float32Array.of(1100);
  // α = 0.5, κ = 3: τ ≈ 500, bound 1100 ± 1500: the sharp core stays.
  const keep = rejectNoiseModel(band([vals]), params(7, 1), { centre, background: flat(1, 100) });
  assert.is(keep.count[0], 7);
  assert.ok(Math.abs(keep.mean[0]! - 8300 / 7) < 1e-3);
  // α = 0.1: τ ≈ 100, bound 1100 + 300 → the sharp core is clipped (why α must cover seeing).
  const tight = rejectNoiseModel(band([vals]), params(7, 1, { seeing: new Array(7).fill(0.1) }), { centre, background: flat(1, 100) });
  assert.is(tight.count[0], 6);
  // Shot noise: K = 4 per unit signal, α = 0: τ = √(1 + 4000) ≈ 63, bound ± 190: 1700 goes, the others stay.
  const shot = rejectNoiseModel(band([vals]), params(7, 1, { seeing: zeros(7), poisson: new Array(7).fill(4) }), { centre, background: flat(1, 100) });
  assert.is(shot.count[0], 6);
  assert.equal(Array.from(shot.rejectedHigh), [0, 0, 0, 0, 0, 0, 1]);
  // Background NaN → S = 0: plain κσ (the star core's spread itself is then rejected).
  const noBg = rejectNoiseModel(band([vals]), params(7, 1), { centre, background: flat(1, NaN) });
  assert.ok(noBg.count[0]! < 7);
});

test('iteration, min_keep, NaN, weights, winsor', () => {
  // Centre from the mean (no median given): [10 ×8, 30, 1000] with σ 2: iteration 1 around the
  // mean 111 keeps nothing… refused (min_keep 1 needs a survivor with weight); so start from a median.
  const vals = [10, 10, 10, 10, 10, 10, 10, 10, 30, 1000];
  const fromMedian = rejectNoiseModel(band([vals]), params(10, 1, { noise: new Array(10).fill(2), seeing: zeros(10) }), { centre: Float32Array.of(10), background: flat(1, 10) });
  assert.is(fromMedian.count[0], 8);
  assert.is(fromMedian.mean[0], 10);
  assert.equal(Array.from(fromMedian.rejectedHigh), [0, 0, 0, 0, 0, 0, 0, 0, 1, 1]);
  const fromMean = rejectNoiseModel(band([vals]), params(10, 1, { noise: new Array(10).fill(2), seeing: zeros(10) }), { centre: null, background: flat(1, 10) });
  // Mean 111: [105, 117] keeps none → refused: the mean of all valid samples stands, nothing tallied.
  assert.is(fromMean.count[0], 10);
  assert.is(fromMean.mean[0], Math.fround(111));
  assert.equal(Array.from(fromMean.rejectedHigh), zeros(10));
  // min_fraction 0.9 (min_keep 9): rejecting both outliers is refused.
  const floor = rejectNoiseModel(band([vals]), params(10, 1, { noise: new Array(10).fill(2), seeing: zeros(10), minFraction: 0.9 }), { centre: Float32Array.of(10), background: flat(1, 10) });
  assert.is(floor.count[0], 10);
  // NaN samples are ignored; an all-NaN pixel gives NaN and count 0; weights weigh the mean.
  const r = rejectNoiseModel(
    band([
      [10, NaN, 12, 11],
      [NaN, NaN, NaN, NaN],
    ]),
    params(4, 2, { weight: [1, 1, 3, 0] }),
    { centre: null, background: flat(2, 0) },
  );
  assert.is(r.mean[0], Math.fround((10 + 36 + 0) / 4));
  assert.is(r.count[0], 3);
  assert.ok(Number.isNaN(r.mean[1]!));
  assert.is(r.count[1], 0);
  // Winsor: Huber centre with per-frame scale, then one rejection.
  const w = rejectNoiseModel(band([[100, 101, 99, 100, 100, 140]]), params(6, 1, { method: 'winsor', seeing: zeros(6), maxIters: 5 }), { centre: null, background: flat(1, 100) });
  assert.is(w.count[0], 5);
  assert.is(w.mean[0], 100);
  assert.equal(Array.from(w.rejectedHigh), [0, 0, 0, 0, 0, 1]);
  // Normalisation v·scale + offset comes first.
  const n = rejectNoiseModel(band([[50, 100, 100]]), params(3, 1, { scale: [2, 1, 1], offset: [0, 0, 0] }), { centre: null, background: flat(1, 100) });
  assert.is(n.mean[0], 100);
  assert.throws(() => rejectNoiseModel(band([[1, 2]]), params(2, 1, { noise: [1] }), { centre: null, background: flat(1, 0) }), /noise has 1 entries/);
  assert.throws(() => rejectNoiseModel(band([[1, 2]]), params(2, 1, { method: 'median' as 'sigma' }), { centre: null, background: flat(1, 0) }), /unknown method/);
});

test('seeingTolerances: at least the base; sharper than typical frames get room for their higher cores', () => {
  const a = seeingTolerances([5, 5, 5, 2.5, NaN], 3, 0.5);
  assert.equal(a.slice(0, 3), [0.5, 0.5, 0.5]);
  // (5 / 2.5)² − 1 = 3, × 1.2 / κ 3 = 1.2.
  assert.ok(Math.abs(a[3]! - 1.2) < 1e-12);
  assert.is(a[4], 0.5);
  // Default base 1: a 1.6× sharper frame ((1.6)² − 1 = 1.56 → 0.62) stays at the base.
  assert.equal(seeingTolerances([4, 4, 2.5], 3), [1, 1, 1]);
});

/** A 25×25 stamp of a star (flux F, FWHM f) on sky 1000 with σ-10 noise. */
function stamp(fwhm: number, rnd: () => number): Float32Array {
  const out = new Float32Array(25 * 25);
  for (let y = 0; y < 25; y++) for (let x = 0; x < 25; x++) out[y * 25 + x] = 1000 + 2e5 * moffat((x - 12) ** 2 + (y - 12) ** 2, fwhm) + 10 * rnd();
  return out;
}

function moments(img: Float32Array): { peak: number; fwhm: number; flux: number } {
  let s = 0;
  let sr2 = 0;
  for (let y = 0; y < 25; y++) {
    for (let x = 0; x < 25; x++) {
      const v = img[y * 25 + x]! - 1000;
      if (v <= 0) continue;
      s += v;
      sr2 += v * ((x - 12) ** 2 + (y - 12) ** 2);
    }
  }
  return { peak: img[12 * 25 + 12]! - 1000, fwhm: 2.3548 * Math.sqrt(sr2 / s / 2), flux: s };
}

test('3 sharp frames among 37 soft ones: sigma clipping eats the cores, the noise model keeps them', () => {
  const g = gaussian(seededRandom(5));
  const fwhm = Array.from({ length: 40 }, (_, f) => (f % 13 === 4 ? 2.5 : 5));
  const frames = new Float32Array(40 * 625);
  fwhm.forEach((f, i) => frames.set(stamp(f, g), i * 625));
  const base = { width: 25, rows: 25, frames: 40, low: 3, high: 3, maxIters: 3, minFraction: 0.4 };
  const none = stack(frames, { ...base, method: 'none' });
  const today = stack(frames, { ...base, method: 'sigma' });
  // The median of each pixel is the sigma start of the noise model.
  const median = stack(frames, { ...base, method: 'median' }).mean;
  const p: NoiseRejectParams = { ...base, method: 'sigma', noise: new Array(40).fill(10), seeing: seeingTolerances(fwhm, 3) };
  const ours = rejectNoiseModel(frames, p, { centre: median, background: new Float32Array(625).fill(1000) });
  const win = rejectNoiseModel(frames, { ...p, method: 'winsor' }, { centre: median, background: new Float32Array(625).fill(1000) });
  const [mNone, mToday, mOurs, mWin] = [none.mean, today.mean, ours.mean, win.mean].map(moments);
  console.log(`  peak / FWHM: none ${mNone!.peak.toFixed(0)} / ${mNone!.fwhm.toFixed(3)}, sigma today ${mToday!.peak.toFixed(0)} / ${mToday!.fwhm.toFixed(3)}, noise model ${mOurs!.peak.toFixed(0)} / ${mOurs!.fwhm.toFixed(3)}, winsor ${mWin!.peak.toFixed(0)} / ${mWin!.fwhm.toFixed(3)}`);
  assert.ok(mToday!.peak < 0.93 * mNone!.peak, 'today: the sharp cores are clipped');
  assert.ok(mToday!.fwhm > 1.02 * mNone!.fwhm, 'today: the stack gets softer');
  // Noise model: the stack equals the plain mean (nothing of the star is rejected).
  assert.ok(Math.abs(mOurs!.peak / mNone!.peak - 1) < 0.005, `peak ${mOurs!.peak} vs ${mNone!.peak}`);
  assert.ok(Math.abs(mOurs!.fwhm / mNone!.fwhm - 1) < 0.005);
  assert.ok(Math.abs(mWin!.peak / mNone!.peak - 1) < 0.005);
  // …and the sky still loses only the Gaussian tails (3σ: 0.27 % of the samples).
  const rejected = Array.from(ours.rejectedLow).reduce((a, b) => a + b, 0) + Array.from(ours.rejectedHigh).reduce((a, b) => a + b, 0);
  assert.ok(rejected < 0.006 * 40 * 625, `${rejected} samples rejected`);
  // With the base tolerance alone (no FWHM known) a factor-4 core is beyond reach: the
  // per-frame tolerances are what keeps it.
  const base5 = rejectNoiseModel(frames, { ...p, seeing: new Array(40).fill(0.5) }, { centre: median, background: new Float32Array(625).fill(1000) });
  assert.ok(moments(base5.mean).peak < 0.95 * mNone!.peak);
});

test('defects go: a trail among 5 frames, cosmic rays on the sky and on a core, hot pixels', () => {
  const g = gaussian(seededRandom(9));
  const W = 40;
  const N = 5;
  const frames = new Float32Array(N * W);
  for (let f = 0; f < N; f++) for (let x = 0; x < W; x++) frames[f * W + x] = 1000 + (x >= 20 && x < 25 ? 800 : 0) + 10 * g();
  // Frame 2: a trail across x 0..9 at 8σ; frame 3: a cosmic ray at x 15 (50σ) and on the core x 22 (+4000); frame 4: a hot pixel at x 30.
  for (let x = 0; x < 10; x++) frames[2 * W + x] = frames[2 * W + x]! + 80;
  frames[3 * W + 15] = frames[3 * W + 15]! + 500;
  frames[3 * W + 22] = frames[3 * W + 22]! + 4000;
  frames[4 * W + 30] = frames[4 * W + 30]! + 300;
  const median = stack(frames, { width: W, rows: 1, frames: N, method: 'median', low: 3, high: 3, maxIters: 1, minFraction: 0 }).mean;
  const r = rejectNoiseModel(frames, { width: W, rows: 1, frames: N, method: 'sigma', low: 3, high: 3, maxIters: 3, minFraction: 0.4, noise: new Array(N).fill(10) }, { centre: median, background: new Float32Array(W).fill(1000) });
  for (let x = 0; x < 10; x++) assert.is(r.count[x], 4, `trail pixel ${x}`);
  assert.is(r.count[15], 4);
  assert.is(r.count[22], 4, 'a cosmic ray 5× the core on a star goes');
  assert.is(r.count[30], 4);
  assert.is(r.rejectedHigh[2], 10);
  assert.ok(r.rejectedHigh[3]! >= 2 && r.rejectedHigh[4]! >= 1);
  // Today's sigma clipping cannot reject one outlier among 5 at κ 3.
  const today = stack(frames, { width: W, rows: 1, frames: N, method: 'sigma', low: 3, high: 3, maxIters: 3, minFraction: 0.4 });
  assert.is(today.count[5], 5);
});

test.run();
