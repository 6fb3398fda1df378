// The frame's seeing surface (src/pipeline/tiled/fwhm-surface.ts): recovers a known tilt and
// curvature from noisy star FWHMs, ignores gross outliers (blends, hot spots), falls back to a
// plane or a constant with few stars, clamps evaluation to what the stars support; the local
// variant (surface + a shrunk, distance-weighted median of residuals) follows a soft patch the surface misses; as the
// tile seeing for L it scatters far less from frame to frame than a tile's star median.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { evalFwhmSurface, fitFwhmSurface, localFwhm, PLANE_MIN, QUADRATIC_MIN } from '../../src/pipeline/tiled/fwhm-surface.js';

function rng(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const gauss = (r: () => number) => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());

const W = 800;
const H = 600;
/** A tilted field: 2.4 px on the left edge, 3.0 px on the right (±12 %), 5 % noise per star. */
const tilt = (x: number) => 2.4 + 0.6 * (x / W);

function stars(n: number, truth: (x: number, y: number) => number, seed: number, noise = 0.05) {
  const r = rng(seed);
  return Array.from({ length: n }, () => {
    const x = r() * W;
    const y = r() * H;
    return { x, y, fwhm: truth(x, y) * (1 + noise * gauss(r)) };
  });
}

test('fitFwhmSurface: recovers a known tilt from 300 noisy stars (1.5 % inside, 3 % in the corners)', () => {
  // 4 % per star over 300 stars: the quadratic's standard error is ~0.5 % at the centre (its
  // constant term trades off against u² and v²) and ~1 % in a corner.
  const s = fitFwhmSurface(stars(300, tilt, 3, 0.04), W, H);
  assert.is(s.model, 'quadratic');
  for (const [x, y, tol] of [[400, 300, 0.015], [200, 450, 0.015], [600, 150, 0.015], [40, 30, 0.03], [760, 570, 0.03], [760, 30, 0.03], [40, 570, 0.03]] as const) {
    const rel = evalFwhmSurface(s, x, y) / tilt(x) - 1;
    assert.ok(Math.abs(rel) < tol, `at (${x}, ${y}): ${rel}`);
  }
  // The plane's slope in normalised units: 0.3 px per half-width.
  const p = fitFwhmSurface(stars(300, tilt, 3, 0.04), W, H, 'plane');
  assert.is(p.model, 'plane');
  assert.ok(Math.abs(p.coefficients[1]! - 0.3) < 0.03, `slope ${p.coefficients[1]}`);
  assert.ok(Math.abs(p.coefficients[2]!) < 0.03, `y slope ${p.coefficients[2]}`);
});

test('fitFwhmSurface: a quarter of gross outliers (blends at 2–3×) do not move the surface', () => {
  const clean = stars(160, tilt, 7);
  const r = rng(11);
  const dirty = clean.map((s, i) => (i % 4 === 0 ? { ...s, fwhm: s.fwhm * (2 + r()) } : s));
  const a = fitFwhmSurface(clean, W, H);
  const b = fitFwhmSurface(dirty, W, H);
  assert.ok(b.inliers <= 160 - 35, `outliers rejected: ${b.inliers} inliers`);
  for (const [x, y] of [[100, 300], [400, 300], [700, 300]] as const) {
    const rel = evalFwhmSurface(b, x, y) / tilt(x) - 1;
    assert.ok(Math.abs(rel) < 0.025, `with outliers at x=${x}: ${rel}`);
    assert.ok(Math.abs(evalFwhmSurface(b, x, y) / evalFwhmSurface(a, x, y) - 1) < 0.02);
  }
  // Without the robust weights (a plain mean), the outliers would lift the map by ~ +30 %.
  const mean = dirty.reduce((s, d) => s + d.fwhm, 0) / dirty.length;
  assert.ok(mean / 2.7 > 1.2, `the outliers matter: mean ${mean}`);
});

test('fitFwhmSurface: the model follows the star count; no stars: NaN', () => {
  assert.is(fitFwhmSurface(stars(QUADRATIC_MIN, tilt, 1), W, H).model, 'quadratic');
  assert.is(fitFwhmSurface(stars(QUADRATIC_MIN - 1, tilt, 1), W, H).model, 'plane');
  const c = fitFwhmSurface(stars(PLANE_MIN - 1, tilt, 1), W, H);
  assert.is(c.model, 'constant');
  assert.is(evalFwhmSurface(c, 0, 0), evalFwhmSurface(c, W, H));
  const none = fitFwhmSurface([], W, H);
  assert.is(none.model, 'none');
  assert.ok(Number.isNaN(evalFwhmSurface(none, 10, 10)));
  // Collinear stars cannot pin a plane: the constant, not a wild slope.
  const line = Array.from({ length: 40 }, (_, i) => ({ x: 20 * i, y: 300, fwhm: 2.5 + 0.01 * (i % 3) }));
  const l = fitFwhmSurface(line, W, H);
  assert.ok(Math.abs(evalFwhmSurface(l, 400, 0) - 2.51) < 0.05, `collinear: ${l.model} ${evalFwhmSurface(l, 400, 0)}`);
});

test('evalFwhmSurface: clamped to the range the stars support (no extrapolated runaway)', () => {
  // Stars only in the left half, steep curvature: the right edge stays within the fitted range.
  const bowl = (x: number, y: number) => 2.5 + 2 * ((x - 200) / 400) ** 2 + 0 * y;
  const left = stars(120, bowl, 5, 0.02).filter((s) => s.x < 400);
  const s = fitFwhmSurface(left, W, H);
  const far = evalFwhmSurface(s, W, H / 2);
  assert.ok(far <= s.range[1] + 1e-12 && far >= s.range[0] - 1e-12);
  assert.ok(far < 3.2, `clamped: ${far} (the quadratic there: ${bowl(W, 0)})`);
});

test('the surface at a tile scatters ≤ 1/2 of the tile median over the same frames (the point of the map)', () => {
  // 30 frames of the same tilted field; a 100 px tile at the right edge holds ~6 stars.
  const surf: number[] = [];
  const tile: number[] = [];
  for (let f = 0; f < 30; f++) {
    const st = stars(150, tilt, 100 + f, 0.08);
    surf.push(evalFwhmSurface(fitFwhmSurface(st, W, H), 750, 300));
    const inTile = st.filter((s) => s.x >= 700 && s.y >= 250 && s.y < 350 + 50).map((s) => s.fwhm).sort((a, b) => a - b);
    tile.push(inTile[inTile.length >> 1]!);
  }
  const sd = (v: number[]) => {
    const m = v.reduce((a, b) => a + b, 0) / v.length;
    return Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / (v.length - 1)) / m;
  };
  assert.ok(sd(surf) < 0.5 * sd(tile), `relative scatter: surface ${sd(surf)}, tile median ${sd(tile)}`);
  // 8 % per star: ~1.5–2.5 % at the edge for the surface, ~4 % for a median of ~8 stars.
  assert.ok(sd(surf) < 0.03, `surface scatter ${sd(surf)}`);
});

test('localFwhm: follows a soft patch (σ 12 % of the width) that the quadratic surface flattens', () => {
  // Flat 2.5 px with a patch of ×1.8 at (300, 300), σ = 96 px; 300 stars, 5 % noise.
  const patch = (x: number, y: number) => 2.5 * (1 + 0.8 * Math.exp(-((x - 300) ** 2 + (y - 300) ** 2) / (2 * 96 * 96)));
  const st = stars(300, patch, 21);
  const s = fitFwhmSurface(st, W, H);
  const truth = patch(300, 300);
  const surf = evalFwhmSurface(s, 300, 300);
  const loc = localFwhm(s, st, 300, 300, 80);
  assert.ok(Math.abs(loc / truth - 1) < 0.5 * Math.abs(surf / truth - 1), `at the patch: truth ${truth}, surface ${surf}, local ${loc}`);
  assert.ok(loc > 1.45 * patch(700, 100), `the patch stands out: ${loc}`);
  // Far from the patch both stay near the flat seeing.
  assert.ok(Math.abs(localFwhm(s, st, 700, 100, 80) / patch(700, 100) - 1) < 0.06);
});

test('localFwhm: on a tilted field with no patch it stays within 3 % of the truth (the residual term is shrunk, not noise)', () => {
  const st = stars(150, tilt, 4);
  const s = fitFwhmSurface(st, W, H);
  for (const [x, y] of [[100, 100], [400, 300], [700, 500], [700, 100]] as const) {
    const rel = localFwhm(s, st, x, y, 80) / tilt(x) - 1;
    assert.ok(Math.abs(rel) < 0.03, `at (${x}, ${y}): ${rel}`);
  }
});

test.run();
