// Affine transforms: exact recovery by the least-squares fits on noise-free points (affine,
// similarity, mirrored similarity), weights, degenerate input, inverse/compose identities,
// the mapping-error measure and the decomposition used in reports.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import {
  applyAffine,
  composeAffine,
  decomposeAffine,
  determinant,
  fitAffine,
  fitSimilarity,
  identity,
  invertAffine,
  makePointPairs,
  mappingRms,
  rmsResidual,
  spreadRatio,
  type Affine,
  type PointPairs,
} from '../../src/algorithms/affine.js';
import { seededRandom } from '../helpers/tmp.js';
import { similarityAbout } from './star-lists.js';

const W = 2048;
const H = 1536;

function close(a: Affine, b: Affine, tol: number, what: string): void {
  for (let r = 0; r < 2; r++) {
    for (let c = 0; c < 3; c++) {
      const d = Math.abs(a[r]![c]! - b[r]![c]!);
      assert.ok(d <= tol, `${what}: element [${r}][${c}] ${a[r]![c]} vs ${b[r]![c]} (|Δ| ${d.toExponential(2)} > ${tol})`);
    }
  }
}

/** n random frame points (over a W×H frame) and their images under m. */
function pairsFor(m: Affine, n: number, seed: number): PointPairs {
  const random = seededRandom(seed);
  const p = makePointPairs(n);
  for (let i = 0; i < n; i++) {
    const x = random() * (W - 1);
    const y = random() * (H - 1);
    const [u, v] = applyAffine(m, x, y);
    p.x[i] = x;
    p.y[i] = y;
    p.u[i] = u;
    p.v[i] = v;
  }
  return p;
}

const general: Affine = [
  [0.99931, -0.03512, 41.27],
  [0.0349, 1.00183, -17.6],
];

test('affine fit recovers a known transform exactly from noise-free points', () => {
  const p = pairsFor(general, 50, 1);
  const m = fitAffine(p)!;
  close(m, general, 1e-9, 'affine');
  assert.ok(rmsResidual(m, p) < 1e-9);
  // Three points determine it; a subset (index list) works the same way.
  close(fitAffine(p, [3, 17, 41])!, general, 1e-8, 'three-point subset');
  // Large offsets (coordinates far from the origin) do not hurt: the fit is centred.
  const shifted: Affine = [
    [1.0002, 0.0001, 15000.5],
    [-0.0001, 0.9999, -9000.25],
  ];
  close(fitAffine(pairsFor(shifted, 20, 2))!, shifted, 1e-8, 'far offsets');
});

test('similarity fit: rotation about the centre, uniform scale, shift — plain and mirrored', () => {
  for (const [deg, s, mirrored] of [
    [0.3, 1, false],
    [2, 1.02, false],
    [90, 1, false],
    [180, 0.99, false],
    [-137.5, 1.01, false],
    [30, 1, true],
    [180, 1, true],
  ] as const) {
    const m = similarityAbout(deg, s, mirrored, (W - 1) / 2, (H - 1) / 2, 12.5, -7.25);
    const p = pairsFor(m, 12, 3);
    const fit = fitSimilarity(p, mirrored)!;
    close(fit, m, 1e-9, `similarity ${deg}° × ${s}${mirrored ? ' mirrored' : ''}`);
    assert.is(determinant(fit) < 0, mirrored);
    const parts = decomposeAffine(fit);
    assert.ok(Math.abs(parts.scale - s) < 1e-12, `scale ${parts.scale}`);
    assert.ok(Math.abs(parts.shear) < 1e-9, `shear ${parts.shear}`);
    assert.is(parts.flip, mirrored);
    // Two points suffice for a similarity.
    close(fitSimilarity(p, mirrored, [0, 5])!, m, 1e-8, 'two-point similarity');
  }
  // A similarity fitted to a general affine is the best rotation+scale, not exact.
  const p = pairsFor(general, 30, 4);
  assert.ok(rmsResidual(fitSimilarity(p)!, p) > 0.1);
});

test('weights: a heavily weighted point set wins over a down-weighted outlier', () => {
  const p = pairsFor(general, 20, 5);
  p.u[0] = p.u[0]! + 50; // one gross outlier
  const uniform = fitAffine(p)!;
  p.w[0] = 1e-12;
  const weighted = fitAffine(p)!;
  assert.ok(mappingRms(uniform, general, W, H) > 1);
  assert.ok(mappingRms(weighted, general, W, H) < 1e-6);
  // Zero total weight is no fit.
  p.w.fill(0);
  assert.is(fitAffine(p), null);
  assert.is(fitSimilarity(p), null);
});

test('degenerate configurations return null, not a wild matrix', () => {
  const line = makePointPairs(10);
  for (let i = 0; i < 10; i++) {
    line.x[i] = 10 + 100 * i;
    line.y[i] = 5 + 50 * i;
    line.u[i] = line.x[i]! + 3;
    line.v[i] = line.y[i]! - 2;
  }
  assert.is(fitAffine(line), null, 'collinear points do not determine an affine');
  assert.ok(spreadRatio(line) < 1e-12);
  assert.ok(fitSimilarity(line) !== null, 'but they determine a similarity');
  assert.is(fitAffine(line, [0, 1]), null, 'two points are too few for an affine');
  const one = makePointPairs(1);
  assert.is(fitSimilarity(one), null, 'one point is too few for a similarity');
  assert.is(invertAffine([[1, 2, 0], [2, 4, 0]]), null, 'singular matrix has no inverse');
});

test('inverse and composition identities', () => {
  const a = general;
  const b = similarityAbout(179.7, 1.001, false, 1000, 700, -3, 4);
  const ia = invertAffine(a)!;
  close(composeAffine(a, ia), identity(), 1e-12, 'a ∘ a⁻¹');
  close(composeAffine(ia, a), identity(), 1e-12, 'a⁻¹ ∘ a');
  // (a ∘ b)⁻¹ = b⁻¹ ∘ a⁻¹, and composition applies the inner transform first.
  close(invertAffine(composeAffine(a, b))!, composeAffine(invertAffine(b)!, ia), 1e-9, '(ab)⁻¹');
  const [bx, by] = applyAffine(b, 123.4, 567.8);
  const [cx, cy] = applyAffine(a, bx, by);
  const [dx, dy] = applyAffine(composeAffine(a, b), 123.4, 567.8);
  assert.ok(Math.abs(cx - dx) < 1e-9 && Math.abs(cy - dy) < 1e-9);
});

test('mappingRms: zero for equal transforms, the shift for a pure shift, grows toward the corners for a rotation', () => {
  assert.is(mappingRms(general, general, W, H), 0);
  const shift: Affine = [
    [1, 0, 0.03],
    [0, 1, -0.04],
  ];
  assert.ok(Math.abs(mappingRms(identity(), shift, W, H) - 0.05) < 1e-12);
  // A rotation by ε about the centre moves a point at radius r by r·ε: RMS = ε·√((W² + H²)/12).
  const eps = 1e-5;
  const rot = similarityAbout((eps * 180) / Math.PI, 1, false, (W - 1) / 2, (H - 1) / 2);
  const expected = eps * Math.sqrt((W * W + H * H) / 12);
  assert.ok(Math.abs(mappingRms(identity(), rot, W, H, 64) - expected) / expected < 1e-3);
});

test('decomposition: rotation, axis scales, shear and flip of a general affine', () => {
  // Build R(θ)·[[sx, k·sy], [0, sy]] and read it back.
  const theta = (37 * Math.PI) / 180;
  const [sx, sy, k] = [1.01, 0.98, 0.02];
  const c = Math.cos(theta);
  const s = Math.sin(theta);
  const m: Affine = [
    [c * sx, c * k * sy - s * sy, 5],
    [s * sx, s * k * sy + c * sy, 6],
  ];
  const parts = decomposeAffine(m);
  assert.ok(Math.abs(parts.rotation_deg - 37) < 1e-9);
  assert.ok(Math.abs(parts.scale_x - sx) < 1e-12 && Math.abs(parts.scale_y - sy) < 1e-12);
  assert.ok(Math.abs(parts.shear - k) < 1e-12);
  assert.is(parts.flip, false);
  assert.equal([parts.tx, parts.ty], [5, 6]);
  const flipped = decomposeAffine(similarityAbout(-90, 1, true, 0, 0));
  assert.is(flipped.flip, true);
  assert.ok(Math.abs(flipped.rotation_deg + 90) < 1e-9);
  assert.ok(Math.abs(decomposeAffine(similarityAbout(180, 1, false, 0, 0)).rotation_deg - 180) < 1e-9);
});

test.run();
