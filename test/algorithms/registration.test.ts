// Star registration on truth-derived star lists: accuracy against the true frame → reference
// mapping (RMS over the frame of the distance between true and estimated mapping) for frames
// rotated up to 2°, a meridian flip, 90°, a mirror image and a 2 % scale change; robustness to
// 50–60 % dropouts with 20 % spurious stars; the similarity fallback; RANSAC on its own;
// typed failures; determinism.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { applyAffine, decomposeAffine, makePointPairs, mappingRms, type Affine } from '../../src/algorithms/affine.js';
import { ransac } from '../../src/algorithms/ransac.js';
import type { StarPoint } from '../../src/algorithms/match.js';
import { registerStars, type RegistrationResult } from '../../src/algorithms/registration.js';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';
import { gaussian, similarityAbout, trueMatrix, truthStarList } from './star-lists.js';

const W = 1024;
const H = 768;
const cx = (W - 1) / 2;
const cy = (H - 1) / 2;
let truth: Truth;

test.before(async () => {
  // Positions and fluxes only: no noise, sky or calibration frames. 1.5× the default star
  // density gives ~580 stars in the frame (≥ 200 pairs even after dropouts in both lists).
  truth = await withTempDir('registration', (out) =>
    generateDataset({ out, kind: 'mono', frames: 6, width: W, height: H, seed: 21, calibration: false, noise: false, sky: false, optics: false, badFrames: 'none', maxRotationDeg: 2, meridianFlip: 3, starDensity: 4350 }),
  );
});

interface Case {
  name: string;
  frame: number;
  extra?: Affine;
  mirrored?: boolean;
}

const CASES: Case[] = [
  { name: 'frame 1', frame: 1 },
  { name: 'frame 2', frame: 2 },
  { name: 'meridian flip, frame 3', frame: 3 },
  { name: 'meridian flip, frame 4', frame: 4 },
  { name: 'meridian flip, frame 5', frame: 5 },
  { name: '90°', frame: 1, extra: similarityAbout(90, 1, false, cx, cy) },
  { name: 'scale 1.02', frame: 2, extra: similarityAbout(0, 1.02, false, cx, cy, 3.5, -2.25) },
  { name: 'mirror', frame: 1, extra: similarityAbout(0, 1, true, cx, cy), mirrored: true },
];

function run(c: Case, dropout: number, spurious: number, seed: number): { result: RegistrationResult; error: number } {
  const ref = truthStarList(truth, 0, { seed, dropout, spurious });
  const frame = truthStarList(truth, c.frame, { seed: seed + 1000 + c.frame, dropout, spurious, ...(c.extra ? { extra: c.extra } : {}) });
  const result = registerStars(ref, frame);
  const error = result.ok ? mappingRms(result.matrix, trueMatrix(truth, c.frame, 0, c.extra), W, H) : NaN;
  return { result, error };
}

function median(v: number[]): number {
  const s = [...v].sort((a, b) => a - b);
  return s[s.length >> 1]!;
}

test('accuracy with realistic centroid noise on 200+ stars: median ≤ 0.01 px, max ≤ 0.05 px', () => {
  // Centroid jitter 0.05 px for the faintest stars (SNR ~20), less for brighter ones; 30 %
  // of the stars missing from each list, 10 % spurious ones.
  const errors: number[] = [];
  for (const c of CASES) {
    const { result, error } = run(c, 0.3, 0.1, 11);
    assert.ok(result.ok, `${c.name}: ${result.ok ? '' : `${result.code} ${result.detail}`}`);
    if (!result.ok) continue;
    assert.ok(result.inliers >= 200, `${c.name}: ${result.inliers} inliers`);
    assert.is(result.model, 'affine');
    assert.is(result.mirrored, c.mirrored ?? false, `${c.name}: mirrored`);
    assert.ok(result.residual_rms_px < 0.2, `${c.name}: residual ${result.residual_rms_px}`);
    errors.push(error);
  }
  const med = median(errors);
  const max = Math.max(...errors);
  assert.ok(med <= 0.01, `median error ${med.toFixed(4)} px (${errors.map((e) => e.toFixed(4)).join(', ')})`);
  assert.ok(max <= 0.05, `max error ${max.toFixed(4)} px`);
});

test('robust to 50 % and 60 % dropouts with 20 % spurious stars, any rotation, mirror, scale', () => {
  const extraCases: Case[] = [
    ...CASES,
    { name: '180° on top of frame 2', frame: 2, extra: similarityAbout(180, 1, false, cx, cy) },
    { name: 'mirror and −70°, scale 0.98', frame: 4, extra: similarityAbout(-70, 0.98, true, cx, cy, 10, 4), mirrored: true },
  ];
  for (const dropout of [0.5, 0.6]) {
    for (const c of extraCases) {
      const { result, error } = run(c, dropout, 0.2, 31);
      assert.ok(result.ok, `${c.name}, ${dropout * 100} % dropouts: ${result.ok ? '' : `${result.code} ${result.detail}`}`);
      if (!result.ok) continue;
      assert.is(result.mirrored, c.mirrored ?? false, `${c.name}: mirrored`);
      assert.ok(error <= 0.05, `${c.name}, ${dropout * 100} % dropouts: error ${error.toFixed(4)} px`);
    }
  }
});

test('rotation and scale are reported in the registration convention (frame → reference)', () => {
  const c: Case = { name: '90° + scale', frame: 0, extra: similarityAbout(90, 1.02, false, cx, cy) };
  const { result } = run(c, 0.2, 0, 3);
  assert.ok(result.ok);
  if (!result.ok) return;
  // The frame is the reference turned by +90° and magnified: frame → reference undoes it.
  assert.ok(Math.abs(result.rotation_deg + 90) < 0.01, `rotation ${result.rotation_deg}`);
  assert.ok(Math.abs(result.scale - 1 / 1.02) < 1e-4, `scale ${result.scale}`);
});

/** A small synthetic field: n stars spread over W×H with distinct fluxes. */
function field(n: number, seed: number): StarPoint[] {
  const random = seededRandom(seed);
  return Array.from({ length: n }, (_, i) => ({ x: 20 + random() * (W - 40), y: 20 + random() * (H - 40), flux: 1000 * (n - i) * (1 + 0.1 * random()) }));
}

function mapped(stars: StarPoint[], m: Affine, jitter = 0, seed = 1): StarPoint[] {
  const random = seededRandom(seed);
  return stars.map((s) => ({ x: m[0][0] * s.x + m[0][1] * s.y + m[0][2] + jitter * gaussian(random), y: m[1][0] * s.x + m[1][1] * s.y + m[1][2] + jitter * gaussian(random), flux: s.flux }));
}

test('few matches: similarity fallback below 6 pairs, affine from 6 on', () => {
  const toFrame = similarityAbout(33, 1.01, false, cx, cy, 4, -6);
  const expected = decomposeAffine(toFrame);
  // 5 shared stars plus 2 unrelated ones in each list.
  const shared = field(5, 7);
  const ref = [...shared, ...field(2, 8)];
  const frame = [...mapped(shared, toFrame), ...mapped(field(2, 9), toFrame)];
  const r = registerStars(ref, frame);
  assert.ok(r.ok, r.ok ? '' : r.detail);
  if (!r.ok) return;
  assert.is(r.model, 'similarity');
  assert.is(r.inliers, 5);
  assert.ok(Math.abs(r.rotation_deg + expected.rotation_deg) < 1e-6, `rotation ${r.rotation_deg}`);
  assert.ok(Math.abs(r.scale * expected.scale - 1) < 1e-9, `scale ${r.scale}`);
  const six = field(6, 10);
  const r6 = registerStars(six, mapped(six, toFrame));
  assert.ok(r6.ok && r6.model === 'affine' && r6.inliers === 6);
  // model: 'similarity' forces it even with many stars.
  const many = field(60, 11);
  const rs = registerStars(many, mapped(many, toFrame, 0.05), { model: 'similarity' });
  assert.ok(rs.ok && rs.model === 'similarity');
  if (rs.ok) assert.ok(Math.abs(decomposeAffine(rs.matrix).shear) < 1e-12);
});

test('typed failures: too few stars, unrelated fields, collinear stars, residual too large', () => {
  const five = field(5, 1);
  const r1 = registerStars(five, five);
  assert.equal([r1.ok, r1.ok ? '' : r1.code], [false, 'too_few_stars']);
  // Two unrelated fields (different seeds) of the same density.
  for (const n of [40, 300]) {
    const r2 = registerStars(field(n, 2), field(n, 3));
    assert.equal([r2.ok, r2.ok ? '' : r2.code], [false, 'no_match'], `unrelated fields of ${n} stars`);
  }
  const line = Array.from({ length: 30 }, (_, i) => ({ x: 15 + 30 * i, y: 40 + 20 * i, flux: 100 + i }));
  const r3 = registerStars(line, mapped(line, [[1, 0, 2], [0, 1, 3]]));
  assert.equal([r3.ok, r3.ok ? '' : r3.code], [false, 'degenerate']);
  // Centroids good to 0.2 px cannot meet a 0.05 px residual limit.
  const stars = field(80, 4);
  const r4 = registerStars(stars, mapped(stars, similarityAbout(1, 1, false, cx, cy), 0.2, 5), { maxResidualPx: 0.05 });
  assert.equal([r4.ok, r4.ok ? '' : r4.code], [false, 'residual_too_large']);
  // Non-finite stars are ignored, not fatal.
  const withNaN = [...stars, { x: NaN, y: 5, flux: 1e9 }, { x: 5, y: Infinity, flux: 1 }];
  assert.ok(registerStars(withNaN, mapped(stars, similarityAbout(1, 1, false, cx, cy))).ok);
});

test('RANSAC: exact transform from candidate pairs half of which are wrong; seeded, so repeatable', () => {
  const truthM = similarityAbout(-178.3, 1.003, false, cx, cy, 6, -2);
  const random = seededRandom(41);
  const p = makePointPairs(40);
  for (let i = 0; i < 40; i++) {
    p.x[i] = random() * W;
    p.y[i] = random() * H;
    // Every other pair is a wrong correspondence (a random reference position).
    const [u, v] = i % 2 === 0 ? applyAffine(truthM, p.x[i]!, p.y[i]!) : [random() * W, random() * H];
    p.u[i] = u;
    p.v[i] = v;
  }
  const a = ransac(p, { model: 'affine', thresholdPx: 1, seed: 5 });
  assert.ok(a !== null);
  if (!a) return;
  assert.equal(Array.from(a.inliers), Array.from({ length: 20 }, (_, k) => 2 * k));
  assert.ok(mappingRms(a.matrix, truthM, W, H) < 1e-9);
  assert.equal(ransac(p, { model: 'affine', thresholdPx: 1, seed: 5 }), a);
  const s = ransac(p, { model: 'similarity', thresholdPx: 1, seed: 9 });
  assert.ok(s !== null && s.inliers.length === 20 && mappingRms(s.matrix, truthM, W, H) < 1e-9);
  // Fewer pairs than a minimal sample, or no consensus: null.
  const few = makePointPairs(2);
  assert.is(ransac(few, { model: 'affine' }), null);
  assert.is(ransac(p, { model: 'affine', thresholdPx: 1, minInliers: 25 }), null);
});

test('deterministic, and independent of the order of the input lists', () => {
  const ref = truthStarList(truth, 0, { seed: 71, dropout: 0.5, spurious: 0.2 });
  const frame = truthStarList(truth, 3, { seed: 72, dropout: 0.5, spurious: 0.2 });
  const a = registerStars(ref, frame);
  const b = registerStars(ref, frame);
  assert.equal(a, b);
  const sorted = [...frame].sort((p, q) => q.flux - p.flux);
  const c = registerStars([...ref].reverse(), sorted);
  assert.ok(a.ok && c.ok);
  if (a.ok && c.ok) {
    assert.ok(mappingRms(a.matrix, c.matrix, W, H) < 1e-9);
    assert.is(c.inliers, a.inliers);
  }
});

test.run();
