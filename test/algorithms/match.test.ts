// Triangle-similarity matching: triangle invariants and orientation, and candidate pairs on
// truth-derived star lists for any rotation (0.3°, 2°, 90°, 180°), mirror images, a 2 % scale
// change, heavy dropouts and spurious stars; typed failures.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { applyAffine, type Affine } from '../../src/algorithms/affine.js';
import { matchStars, brightestFirst, type MatchPairs, type StarPoint } from '../../src/algorithms/match.js';
import { buildTriangles, indexTriangles } from '../../src/algorithms/triangles.js';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { withTempDir } from '../helpers/tmp.js';
import { similarityAbout, trueMatrix, truthStarList } from './star-lists.js';

let truth: Truth;

test.before(async () => {
  // Only truth.json matters here (positions and fluxes), so no noise, sky or calibration.
  truth = await withTempDir('match', (out) =>
    generateDataset({ out, kind: 'mono', frames: 6, width: 1024, height: 768, seed: 21, calibration: false, noise: false, sky: false, optics: false, badFrames: 'none', maxRotationDeg: 2, meridianFlip: 3 }),
  );
});

/** Share of candidate pairs that are true correspondences (within 1 px under the true matrix). */
function correctShare(ref: StarPoint[], frame: StarPoint[], m: MatchPairs, truthMatrix: Affine): number {
  let good = 0;
  for (let k = 0; k < m.count; k++) {
    const f = frame[m.frame[k]!]!;
    const r = ref[m.ref[k]!]!;
    const [u, v] = applyAffine(truthMatrix, f.x, f.y);
    if (Math.hypot(u - r.x, v - r.y) < 1) good++;
  }
  return good / m.count;
}

test('triangle invariants: side ratios, canonical vertices, orientation flips under a mirror', () => {
  // A 3-4-5 right triangle: a = 5 (BC), b = 4 (CA), c = 3 (AB).
  const xs = [0, 3, 0];
  const ys = [0, 0, 4];
  const t = buildTriangles(xs, ys, 3, { minSide: 1 });
  assert.is(t.count, 1);
  assert.ok(Math.abs(t.ba[0]! - 0.8) < 1e-12 && Math.abs(t.ca[0]! - 0.6) < 1e-12);
  assert.equal([t.A[0], t.B[0], t.C[0]], [0, 1, 2], 'A opposite the hypotenuse, B opposite the 4, C opposite the 3');
  assert.is(t.a[0], 5);
  // The same triangle rotated by 90°, scaled ×2 and mirrored (x → −x): same ratios, opposite
  // orientation, longest side doubled.
  const m = buildTriangles([0, 0, 8], [0, 6, 0], 3, { minSide: 1 });
  assert.ok(Math.abs(m.ba[0]! - 0.8) < 1e-12 && Math.abs(m.ca[0]! - 0.6) < 1e-12);
  assert.is(m.orient[0], -t.orient[0]!);
  assert.is(m.a[0], 10);
  // Too-short sides and flat triangles are skipped.
  assert.is(buildTriangles(xs, ys, 3, { minSide: 3.5 }).count, 0);
  assert.is(buildTriangles([0, 50, 100], [0, 0.5, 0], 3).count, 0);
  // C(n, 3) triangles of points in general position; the grid index lists each once.
  const n = 12;
  const g = buildTriangles(
    Array.from({ length: n }, (_, i) => 100 * Math.cos(i * 2.1) + 7 * i),
    Array.from({ length: n }, (_, i) => 100 * Math.sin(i * 2.1) - 5 * i),
    n,
  );
  // (Some of them are too flat or have a side under 4 px and are skipped.)
  assert.ok(g.count > 150 && g.count <= 220, `${g.count} triangles`);
  const index = indexTriangles(g, 0.01);
  assert.equal(Array.from(index.items).sort((p, q) => p - q), Array.from({ length: g.count }, (_, i) => i));
});

test('brightestFirst: by flux, index tie-break, non-finite positions skipped', () => {
  const stars: StarPoint[] = [
    { x: 1, y: 1, flux: 5 },
    { x: NaN, y: 1, flux: 100 },
    { x: 2, y: 2, flux: 9 },
    { x: 3, y: 3, flux: 5 },
    { x: 4, y: 4, flux: NaN },
  ];
  assert.equal(Array.from(brightestFirst(stars)), [2, 0, 3, 4]);
});

const cx = 1023 / 2;
const cy = 767 / 2;

test('candidate pairs for any rotation, mirror and scale, with 50 % dropouts and 20 % spurious stars', () => {
  const cases: { name: string; frame: number; extra?: Affine; mirrored: boolean }[] = [
    { name: 'frame 1 (small rotation)', frame: 1, mirrored: false },
    { name: 'frame 2', frame: 2, mirrored: false },
    { name: 'meridian flip (frame 3)', frame: 3, mirrored: false },
    { name: '90°', frame: 1, extra: similarityAbout(90, 1, false, cx, cy), mirrored: false },
    { name: '−135° and scale 1.02', frame: 2, extra: similarityAbout(-135, 1.02, false, cx, cy, 5, -8), mirrored: false },
    { name: 'mirror', frame: 4, extra: similarityAbout(0, 1, true, cx, cy), mirrored: true },
    { name: 'mirror and 60°', frame: 5, extra: similarityAbout(60, 0.985, true, cx, cy), mirrored: true },
  ];
  const ref = truthStarList(truth, 0, { seed: 100, dropout: 0.5, spurious: 0.2 });
  for (const c of cases) {
    const frame = truthStarList(truth, c.frame, { seed: 200 + c.frame, dropout: 0.5, spurious: 0.2, ...(c.extra ? { extra: c.extra } : {}) });
    const m = matchStars(ref, frame);
    assert.ok(m.ok, `${c.name}: ${m.ok ? '' : m.detail}`);
    if (!m.ok) continue;
    const truthM = trueMatrix(truth, c.frame, 0, c.extra);
    const det = truthM[0][0] * truthM[1][1] - truthM[0][1] * truthM[1][0];
    const rot = (Math.atan2(truthM[1][0], truthM[0][0]) * 180) / Math.PI;
    assert.is(m.mirrored, c.mirrored, `${c.name}: mirrored`);
    assert.ok(Math.abs(((m.rotation_deg - rot + 540) % 360) - 180) < 0.2, `${c.name}: rotation ${m.rotation_deg} vs ${rot}`);
    assert.ok(Math.abs(m.scale - Math.sqrt(Math.abs(det))) < 0.003, `${c.name}: scale ${m.scale}`);
    assert.ok(m.count >= 8, `${c.name}: ${m.count} pairs`);
    const share = correctShare(ref, frame, m, truthM);
    assert.ok(share >= 0.9, `${c.name}: ${(100 * share).toFixed(0)} % of ${m.count} pairs correct`);
  }
});

test('input order does not matter: the same pairs from a reversed list', () => {
  const ref = truthStarList(truth, 0, { seed: 5, dropout: 0.3 });
  const frame = truthStarList(truth, 3, { seed: 6, dropout: 0.3 });
  const a = matchStars(ref, frame);
  const reversed = [...frame].reverse();
  const b = matchStars(ref, reversed);
  assert.ok(a.ok && b.ok);
  if (!a.ok || !b.ok) return;
  const n = frame.length;
  assert.equal(
    Array.from(b.frame).map((i) => n - 1 - i),
    Array.from(a.frame),
  );
  assert.equal(Array.from(b.ref), Array.from(a.ref));
});

test('typed failures: too few stars for triangles, no similar triangles', () => {
  const two: StarPoint[] = [
    { x: 0, y: 0, flux: 1 },
    { x: 10, y: 0, flux: 1 },
  ];
  const r = matchStars(two, two);
  assert.is(r.ok, false);
  if (!r.ok) assert.is(r.code, 'too_few_stars');
  // Nearly equilateral triangles against long thin ones: no ratios agree.
  const eq: StarPoint[] = [
    { x: 0, y: 0, flux: 3 },
    { x: 100, y: 0, flux: 2 },
    { x: 50, y: 86.6, flux: 1 },
  ];
  const thin: StarPoint[] = [
    { x: 0, y: 0, flux: 3 },
    { x: 100, y: 0, flux: 2 },
    { x: 30, y: 10, flux: 1 },
  ];
  const s = matchStars(eq, thin);
  assert.is(s.ok, false);
  if (!s.ok) assert.is(s.code, 'no_match');
});

test.run();
