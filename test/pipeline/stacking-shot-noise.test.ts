// The noise-model rejection's shot-noise term: EGAIN from a header (not GAIN, the camera's
// setting) and K_f = scale_f / gain per channel (stages/stacking/shot-noise.ts); the bound
// widens by it as the reference (reject-noise.ts) says. A generated set's EGAIN reaching the
// stack's diagnostics is checked in stacking-mono.test.ts.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FitsHeader } from '../../src/fits/index.js';
import { egainOf } from '../../src/pipeline/rawstack/stacking-setup.js';
import { shotNoiseK, shotNoiseSource } from '../../src/pipeline/stages/stacking/shot-noise.js';
import { expectedSpread, noiseFrameParams, rejectNoiseModel } from '../../src/cpu/reject-noise.js';

const header = (entries: [string, number][]) => {
  const h = new FitsHeader();
  for (const [k, v] of entries) h.set(k, v);
  return h;
};

test('egainOf takes EGAIN (e-/ADU), never GAIN, and refuses unusable values', () => {
  assert.is(egainOf(header([['GAIN', 100], ['EGAIN', 0.25]])), 0.25);
  assert.is(egainOf(header([['GAIN', 100]])), null);
  assert.is(egainOf(header([['EGAIN', 0]])), null);
  assert.is(egainOf(header([['EGAIN', -1.5]])), null);
  assert.is(egainOf(undefined), null);
});

test('K_f = scale / gain per channel; 0 without a gain; the record names the source', () => {
  assert.equal(shotNoiseK({ scale: [2, 1, 0.5], gain: 0.5 }), [4, 2, 1]);
  assert.equal(shotNoiseK({ scale: [1.2], gain: null }), [0]);
  assert.equal(shotNoiseK({ scale: [1.2] }), [0]);
  assert.equal(shotNoiseSource([{ gain: 1.5 }, { gain: null }, { gain: 0.8 }, { gain: 1.5 }]), { source: 'EGAIN', frames_with_gain: 3, gains: [0.8, 1.5] });
  assert.equal(shotNoiseSource([{ gain: null }, {}]), { source: 'none', frames_with_gain: 0, gains: [] });
});

test('the bound uses K: a star sample within shot noise of the centre is kept with the gain, rejected without', () => {
  // 8 frames, one pixel on a star: centre 1000 ADU above a sky of 0, sky noise 5, no seeing
  // term (α = 0). Frame 7 sits 100 ADU (= 3.2 σ_shot at gain 1: √1000 ≈ 31.6) above the others.
  const n = 8;
  const band = new Float32Array(n).fill(1000);
  band[7] = 1100;
  const base = { width: 1, rows: 1, frames: n, method: 'sigma' as const, low: 3, high: 5, maxIters: 3, minFraction: 0.4, scale: new Array(n).fill(1), offset: new Array(n).fill(0), weight: new Array(n).fill(1), noise: new Array(n).fill(5), seeing: new Array(n).fill(0) };
  const px = { centre: Float32Array.of(1000), background: Float32Array.of(0) };
  const kOf = (gain: number | null) => Array.from({ length: n }, () => shotNoiseK({ scale: [1], gain })[0]!);
  const without = rejectNoiseModel(band, { ...base, poisson: kOf(null) }, px);
  const withGain = rejectNoiseModel(band, { ...base, poisson: kOf(1) }, px);
  assert.is(without.count[0], n - 1, 'without shot noise τ = σ = 5: 100 ADU is 20 σ');
  assert.is(without.rejectedHigh[7], 1);
  assert.is(withGain.count[0], n, 'with K = 1: τ = √(25 + 1000) ≈ 32, 100 ADU < 5 τ');
  const p = noiseFrameParams({ ...base, poisson: kOf(1) });
  assert.ok(Math.abs(expectedSpread(p, 7, 1000, 0) - Math.sqrt(25 + 1000)) < 1e-3);
});

test.run();
