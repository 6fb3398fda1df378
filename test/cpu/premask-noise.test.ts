// The stacking pre-mask with the noise-model seed bound (src/cpu/premask.ts NoiseModelSeeds):
// - its screened seeds equal a brute-force evaluation of the rule (every sample, no screen):
//   seed when v' − M > κ_high·τ_f or M − v' > κ_low·τ_f, strong beyond twice that,
//   τ_f² = σ_f² + K_f·S + (α_f·S)², S = max(M − B, 0);
// - on a star whose frames differ by seeing, a sharp frame's higher core is no seed (the old
//   κσ + α|M − L| bound seeds it), while a trail on the sky still is, with its growth.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { premaskFlag, premaskScreen, SEED_HIGH, SEED_LOW, STRONG_HIGH, STRONG_LOW, type PremaskArgs } from '../../src/cpu/premask.js';
import { stack } from '../../src/cpu/stack.js';
import { seededRandom } from '../helpers/tmp.js';

const W = 41;
const R = 23;
const N = 9;

function band(seed: number): { data: Float32Array; sigma: number[]; bg: Float32Array } {
  const rnd = seededRandom(seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const sigma = Array.from({ length: N }, () => 8 + 4 * rnd());
  const bg = new Float32Array(W * R);
  for (let y = 0; y < R; y++) for (let x = 0; x < W; x++) bg[y * W + x] = 1000 + 2 * x - y;
  const data = new Float32Array(N * W * R);
  for (let f = 0; f < N; f++) {
    // FWHM from 2 (frame 0, sharp) to 4 px; a star at (20, 11) of flux 40000.
    const fwhm = 2 + (2 * f) / (N - 1);
    const s2 = (fwhm / 2.3548) ** 2;
    for (let y = 0; y < R; y++) {
      for (let x = 0; x < W; x++) {
        const d2 = (x - 20) ** 2 + (y - 11) ** 2;
        const star = (40000 / (2 * Math.PI * s2)) * Math.exp(-d2 / (2 * s2));
        data[f * W * R + y * W + x] = bg[y * W + x]! + star + sigma[f]! * gauss() + (rnd() < 0.003 ? 400 * rnd() : 0);
      }
    }
  }
  // A trail in frame 4 along row 4, 80 above the sky.
  for (let x = 3; x < W - 3; x++) data[4 * W * R + 4 * W + x]! += 80;
  return { data, sigma, bg };
}

function args(data: Float32Array, sigma: number[], bg: Float32Array, noise: boolean): PremaskArgs {
  const median = stack(data, { width: W, rows: R, frames: N, method: 'median', low: 3, high: 3, maxIters: 1, minFraction: 0.4 }).mean;
  return {
    band: data,
    median,
    mask: new Uint8Array(N * W * R),
    width: W,
    rows: R,
    frames: N,
    scale: new Array(N).fill(1),
    offset: new Array(N).fill(0),
    sigma,
    kLow: 3,
    kHigh: 3,
    level: 1000,
    minFraction: 0.4,
    ownedY0: 0,
    ownedRows: R,
    rejected: new Uint32Array(2 * N),
    counts: new BigUint64Array(2),
    noiseModel: noise ? { background: bg, poisson: Array.from({ length: N }, (_, f) => 0.1 * f), seeing: Array.from({ length: N }, (_, f) => (f === 0 ? 1.5 : 1)) } : null,
  };
}

test('noise-model seeds: the screened rule equals a brute-force evaluation of every sample', () => {
  for (const seed of [1, 2, 3]) {
    const { data, sigma, bg } = band(seed);
    const a = args(data, sigma, bg, true);
    premaskFlag(a, 0, N);
    let seeds = 0;
    for (let f = 0; f < N; f++) {
      for (let i = 0; i < W * R; i++) {
        const m = a.median[i]!;
        const S = Math.max(m - bg[i]!, 0);
        const tau = Math.sqrt(sigma[f]! ** 2 + a.noiseModel!.poisson[f]! * S + (a.noiseModel!.seeing[f]! * S) ** 2);
        const d = Math.fround(data[f * W * R + i]!) - m;
        const want = d > 3 * tau ? (d > 6 * tau ? STRONG_HIGH : SEED_HIGH) : -d > 3 * tau ? (-d > 6 * tau ? STRONG_LOW : SEED_LOW) : 0;
        const got = a.mask[f * W * R + i]!;
        // Grown cells (3, 4) sit where the rule found no seed.
        if (want !== 0) seeds++;
        assert.ok(want === got || (want === 0 && (got === 3 || got === 4)), `seed ${seed} frame ${f} pixel ${i}: mask ${got}, rule ${want}`);
      }
    }
    assert.ok(seeds > 30, `${seeds} seeds (the trail at least)`);
  }
});

test('noise-model seeds: a screen made once from every frame (premaskScreen) flags as each call\'s own', () => {
  for (const seed of [1, 2]) {
    const { data, sigma, bg } = band(seed);
    const own = args(data, sigma, bg, true);
    premaskFlag(own, 0, 4);
    premaskFlag(own, 4, N);
    const once = { ...args(data, sigma, bg, true), screen: new Float32Array(W * R), signal: new Float32Array(W * R) };
    premaskScreen(once, 0, 7);
    premaskScreen(once, 7, R);
    premaskFlag(once, 0, 4);
    premaskFlag(once, 4, N);
    assert.equal(Array.from(once.mask), Array.from(own.mask), `seed ${seed}`);
    assert.ok(own.mask.some((m) => m !== 0), 'some seeds');
    // A screen without its signal is not used (the call makes its own): a zero screen would let
    // every sample through to the exact rule with S = 0 read from it.
    // (Another band flagged first leaves its own S in the per-thread scratch.)
    const other = band(seed + 10);
    premaskFlag(args(other.data, other.sigma, other.bg.map((b) => b - 3000), true), 0, N);
    const noSignal = { ...args(data, sigma, bg, true), screen: new Float32Array(W * R) };
    premaskFlag(noSignal, 0, N);
    assert.equal(Array.from(noSignal.mask), Array.from(own.mask), `seed ${seed}: screen without signal`);
  }
});

test('noise-model seeds: the sharp frame keeps its star core, the trail is seeded and grown', () => {
  const { data, sigma, bg } = band(7);
  const nm = args(data.slice(), sigma, bg, true);
  premaskFlag(nm, 0, N);
  const old = args(data.slice(), sigma, bg, false);
  premaskFlag(old, 0, N);
  const core = 11 * W + 20;
  assert.is(nm.mask[core]!, 0, 'the noise model leaves the sharp frame 0 core alone');
  assert.ok(old.mask[core]! !== 0, 'the κσ + α|M − L| rule seeds the sharp core (what the noise model fixes)');
  // The trail: seeded along its row (away from the star), grown by GROW rows.
  let seeded = 0;
  let grown = 0;
  for (let x = 5; x < 15; x++) {
    if (nm.mask[4 * W * R + 4 * W + x] === STRONG_HIGH || nm.mask[4 * W * R + 4 * W + x] === SEED_HIGH) seeded++;
    if (nm.mask[4 * W * R + 6 * W + x] === 3) grown++;
  }
  assert.ok(seeded >= 9, `${seeded} of 10 trail pixels seeded`);
  assert.ok(grown >= 9, `${grown} of 10 pixels two rows off the trail grown`);
});

test.run();
