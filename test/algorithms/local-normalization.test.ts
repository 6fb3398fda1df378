// Local normalization (src/algorithms/local-normalization.ts, binned-plane.ts, the apply
// reference src/cpu/ln-apply.ts) on seeded synthetic frames (sky-like star fields about twice
// the fixture generator's default density, Gaussian noise σ = 10):
// - a frame whose sky has another level, a gradient turned by ~90° and a glow, whose
//   transmission has a tilt, with 1.5× wider stars, a trail and NaN borders is matched to the
//   reference: a·frameSky + b − refSky has an rms below 0.07σ and nowhere reaches 0.4σ (the
//   skies differ by 18σ beyond their offset before), the scale tilt is recovered within 0.01
//   from the stars' relative photometry;
// - stars do not bias the background (seeing 3 vs 5 px: b's mean error below 0.025σ);
// - the reference itself gets a = 1 and only its node noise as b; an all-NaN frame gives the
//   identity with a reason code;
// - binning (mono and CFA sites, band by band = whole, NaN rules), the binned warp, the grid
//   interpolation rule and composeGlobal.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { binPlane, PlaneBinner, warpBinned } from '../../src/algorithms/binned-plane.js';
import { compactModel, composeGlobal, fitLocalNormalization, fitReferenceBackground, gridValueAt, lnBinFactor, lnGrid, type LnModel } from '../../src/algorithms/local-normalization.js';
import { lnApply, lnColumnTable, lnPiece, packLnCoefficients } from '../../src/cpu/ln-apply.js';
import { renderScene, skyLikeStars } from '../helpers/synthetic-sky.js';

const W = 768;
const H = 576;
const SIGMA = 10;
// About twice the generator's default star density (2900 stars/deg² at 1.46″/px).
const stars = skyLikeStars(250, W, H, 2e3, 1e6, 7);
const u = (x: number) => (x - (W - 1) / 2) / (W / 2);
const v = (y: number) => (y - (H - 1) / 2) / (H / 2);
const refSky = (x: number, y: number) => 1000 + 60 * u(x) + 25 * v(y) + 20 * u(x) * u(x);
// The frame's sky: another level, a gradient turned by ~90°, and a glow off the lower left corner.
const frameSky = (x: number, y: number) => 850 - 20 * u(x) + 70 * v(y) + 120 * Math.exp(-((x + 150) ** 2 + (y - 680) ** 2) / (2 * 380 ** 2));
const TILT_X = 0.05;
const TILT_Y = -0.03;
const G = 0.8;

/** Applies a model to one full plane (the kernel reference with one frame). */
function applied(frame: Float32Array, model: LnModel): Float32Array {
  const out = frame.slice();
  const { grid, coefficients } = packLnCoefficients([model]);
  lnApply(out, { width: W, rows: H, frames: 1, y0: 0, grid, coefficients });
  return out;
}

test('LN matches a frame with another gradient, glow, scale tilt, softer PSF, trail and NaN borders', () => {
  const ref = renderScene({ width: W, height: H, stars, fwhm: () => 3, background: refSky, noise: SIGMA, seed: 1 });
  const frame = renderScene({
    width: W,
    height: H,
    stars,
    fwhm: () => 4.5,
    background: frameSky,
    // Transmission such that reference/frame star flux = (1 + TILT_X·u + TILT_Y·v) / G exactly.
    transmission: (x, y) => G / (1 + TILT_X * u(x) + TILT_Y * v(y)),
    noise: SIGMA,
    seed: 2,
  });
  // A satellite trail (20σ, FWHM 3 px) and warped-in NaN borders.
  for (let x = 0; x < W; x++) {
    const yc = 60 + 0.5 * x;
    for (let y = Math.max(0, Math.floor(yc - 6)); y <= Math.min(H - 1, Math.ceil(yc + 6)); y++) frame[y * W + x] = frame[y * W + x]! + 200 * Math.exp(-((y - yc) ** 2) / (2 * 1.27 ** 2));
  }
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) if (x < 23 || y < 11) frame[y * W + x] = NaN;

  const D = lnBinFactor(W, H);
  assert.is(D, 3);
  const model = fitLocalNormalization(binPlane(ref, W, H, D), binPlane(frame, W, H, D), { scale: 'plane' });
  assert.ok(model.fit.ok);
  // Relative photometry of ~30 isolated stars: the tilt within 0.01 (1 % of the flux at the edges).
  assert.ok(model.fit.scale_stars >= 25, `${model.fit.scale_stars} stars in the scale fit`);
  assert.ok(Math.abs(model.fit.tilt_x - TILT_X) < 0.01, `tilt_x ${model.fit.tilt_x}`);
  assert.ok(Math.abs(model.fit.tilt_y - TILT_Y) < 0.01, `tilt_y ${model.fit.tilt_y}`);
  // The 12 px aperture loses ~2 % more of the softer frame's flux: informative ratio within 4 %.
  assert.ok(Math.abs(model.fit.flux_ratio! * G - 1) < 0.04, `flux ratio ${model.fit.flux_ratio} vs ${1 / G}`);
  assert.ok(model.a.every(Number.isFinite) && model.b.every(Number.isFinite));

  // Sky after LN: a·frameSky + b ≈ refSky, checked on the noise-free, star-free skies (the
  // stars' own light differs by design: the frame's are softer and fainter).
  const out = applied(frame, model);
  const skyIn = renderScene({ width: W, height: H, stars: [], fwhm: () => 3, background: frameSky, noise: 0, seed: 0 });
  const skyOut = applied(skyIn, model);
  let worstBefore = 0;
  let worstAfter = 0;
  let sum2 = 0;
  let n = 0;
  const offset0 = frameSky(W / 2, H / 2) - refSky(W / 2, H / 2);
  for (let y = 11; y < H; y++) {
    for (let x = 23; x < W; x++) {
      const want = refSky(x, y);
      worstBefore = Math.max(worstBefore, Math.abs(skyIn[y * W + x]! - offset0 - want));
      const d = skyOut[y * W + x]! - want;
      worstAfter = Math.max(worstAfter, Math.abs(d));
      sum2 += d * d;
      n++;
    }
  }
  const rms = Math.sqrt(sum2 / n);
  assert.ok(worstBefore > 5 * SIGMA, `backgrounds differ by up to ${worstBefore.toFixed(1)} ADU beyond their offset`);
  // The frame's node medians carry ~0.05σ of noise (~100 sky pixels of the binned σ/3 per
  // cell, fewer where stars or the trail's mask take most of a cell); the target is smooth.
  assert.ok(rms < 0.07 * SIGMA, `sky residual rms after LN ${rms.toFixed(3)} ADU`);
  assert.ok(worstAfter < 0.4 * SIGMA, `worst sky residual after LN ${worstAfter.toFixed(3)} ADU`);
  // The compact record (stacking_diagnostics.json) survives JSON and evaluates within 1e-5.
  const record = JSON.parse(JSON.stringify(compactModel(model))) as LnModel;
  for (const [x, y] of [[0, 0], [W - 1, H - 1], [300.5, 200.25]] as const) {
    assert.ok(Math.abs(gridValueAt(record.grid, record.b, x, y) - gridValueAt(model.grid, model.b, x, y)) < 1e-5 * Math.max(1, Math.abs(gridValueAt(model.grid, model.b, x, y))));
  }
  assert.equal(record.fit.ok, true);
  // NaN stays NaN, and everything else is finite.
  for (let i = 0; i < W * H; i++) assert.is(Number.isNaN(out[i]!), Number.isNaN(frame[i]!));
  console.log(`  LN: sky residual rms ${rms.toFixed(3)}, worst ${worstAfter.toFixed(3)} ADU (σ ${SIGMA}; ${worstBefore.toFixed(1)} before), tilt (${model.fit.tilt_x.toFixed(4)}, ${model.fit.tilt_y.toFixed(4)}) from ${model.fit.scale_stars} stars, flux ratio ${model.fit.flux_ratio!.toFixed(4)}, ${model.fit.cells_measured}/${model.fit.cells} cells`);
});

test('LN: stars do not bias the background (1.7× the generator\'s star density, seeing 3 vs 5 px)', () => {
  const field = skyLikeStars(250, W, H, 2e3, 1e6, 11);
  const ref = renderScene({ width: W, height: H, stars: field, fwhm: () => 3, background: () => 500, noise: SIGMA, seed: 3 });
  const frame = renderScene({ width: W, height: H, stars: field, fwhm: () => 5, background: () => 520, noise: SIGMA, seed: 4 });
  const model = fitLocalNormalization(binPlane(ref, W, H, 4), binPlane(frame, W, H, 4), { cells: 12, scale: 'none' });
  assert.ok(model.a.every((a) => a === 1));
  // b should be −20 everywhere: the wings a softer PSF spreads must not leak into it. Each
  // frame node's median carries ~0.05σ of noise (the target is a smooth fit of the reference's);
  // the mean over the 108 nodes shows a bias.
  const err = model.b.map((b) => b + 20);
  const mean = err.reduce((a, b) => a + b, 0) / err.length;
  const rms = Math.sqrt(err.reduce((a, b) => a + b * b, 0) / err.length);
  assert.ok(Math.abs(mean) < 0.025 * SIGMA, `mean node offset error ${mean.toFixed(3)} ADU`);
  assert.ok(rms < 0.07 * SIGMA, `rms node offset error ${rms.toFixed(3)} ADU`);
  assert.ok(model.fit.masked_fraction > 0.3, `masked ${model.fit.masked_fraction}`);
  // The reference's own background surface is its sky level.
  const bg = fitReferenceBackground(binPlane(ref, W, H, 4), { cells: 12 });
  assert.ok(bg.values.every((b) => Math.abs(b - 500) < 0.06 * SIGMA), `reference background ${Math.min(...bg.values)}..${Math.max(...bg.values)}`);
});

test('LN: the reference itself gets a = 1 and only its node noise as b; no data gives the identity with a reason', () => {
  const ref = renderScene({ width: W, height: H, stars, fwhm: () => 3, background: refSky, noise: SIGMA, seed: 5 });
  const bref = binPlane(ref, W, H, 2);
  const same = fitLocalNormalization(bref, bref, { cells: 8 });
  // A coarse grid's cells hold more usable pixels than are sampled from them: the fit must still
  // count them as measured (it once compared the minimum with the sample count and fell back to
  // the identity for every frame at 8 cells).
  assert.is(same.fit.ok, true, JSON.stringify(same.fit));
  // Identical images: every star ratio is 1 (no tilt); b = smooth target − the node medians, i.e.
  // the nodes' own noise: a median of 96 samples of the 2×2-binned sky (σ/2) scatters by
  // 1.25·(σ/2)/√96 ≈ 0.064σ.
  assert.ok(same.a.every((a) => Math.abs(a - 1) < 1e-12), 'a = 1');
  const rmsB = Math.sqrt(same.b.reduce((s, b) => s + b * b, 0) / same.b.length);
  assert.ok(rmsB > 0 && rmsB < 0.15 * SIGMA && Math.max(...same.b.map(Math.abs)) < 0.5 * SIGMA, `b rms ${rmsB.toFixed(3)}, worst ${Math.max(...same.b.map(Math.abs)).toFixed(3)} ADU`);
  const none = fitLocalNormalization(bref, binPlane(new Float32Array(W * H).fill(NaN), W, H, 2), { cells: 8 });
  assert.is(none.fit.ok, false);
  assert.is(none.fit.reason, 'no_background');
  assert.ok(none.a.every((a) => a === 1) && none.b.every((b) => b === 0));
  const mismatch = fitLocalNormalization(bref, binPlane(ref, W, H, 4), { cells: 8 });
  assert.is(mismatch.fit.reason, 'size_mismatch');
  assert.throws(() => fitLocalNormalization(bref, bref, { cells: 0 }), /cells/);
});

test('binning: block means, NaN rule, CFA sites, band by band equals whole', () => {
  const w = 7;
  const h = 5;
  const img = Float32Array.from({ length: w * h }, (_, i) => i);
  const b = binPlane(img, w, h, 2);
  assert.is(b.width, 4);
  assert.is(b.height, 3);
  // Block (0, 0): pixels 0, 1, 7, 8.
  assert.is(b.data[0], 4);
  // Edge block (3, 0): pixels 6, 13 (2 of the 4 a block holds: enough, half).
  assert.is(b.data[3], 9.5);
  // Corner block (3, 2): pixel 34 alone: fewer than half → NaN.
  assert.ok(Number.isNaN(b.data[11]!));
  // CFA site 3 (odd x, odd y) of each 2×2 block.
  const c = binPlane(img, w, h, 2, { sites: [3], minValid: 1 });
  assert.is(c.data[0], 8);
  assert.is(c.data[1], 10);
  assert.throws(() => binPlane(img, w, h, 3, { sites: [0] }), /even/);
  // Band by band (any order) gives the same as whole.
  const big = Float32Array.from({ length: 64 * 48 }, (_, i) => Math.sin(i) * 100 + (i % 17 === 0 ? NaN : 0));
  const whole = binPlane(big, 64, 48, 4);
  const binner = new PlaneBinner(64, 48, 4);
  for (const [y0, rows] of [[30, 18], [0, 13], [13, 17]] as const) binner.addRows(big.subarray(y0 * 64, (y0 + rows) * 64), y0, rows);
  assert.equal(Array.from(binner.result().data), Array.from(whole.data));
});

test('warpBinned follows the affine; grid interpolation rule; composeGlobal', () => {
  // A plane of value x + 2y (full-resolution coordinates), shifted by (+8, −4) px.
  const plane = Float32Array.from({ length: 128 * 96 }, (_, i) => (i % 128) + 2 * Math.floor(i / 128));
  const b = binPlane(plane, 128, 96, 4);
  const warped = warpBinned(b, [[1, 0, 8], [0, 1, -4]], 128, 96);
  // Binned pixel (5, 6): centre (21.5, 25.5) → frame (29.5, 21.5): value 29.5 + 43 = 72.5.
  assert.ok(Math.abs(warped.data[6 * 32 + 5]! - 72.5) < 1e-4, `warped ${warped.data[6 * 32 + 5]}`);
  // Beyond the frame: NaN.
  assert.ok(Number.isNaN(warped.data[6 * 32 + 31]!));
  const g = lnGrid(b, 4);
  assert.equal([g.nx, g.ny], [4, 3]);
  // A plane is reproduced exactly by the rule, extrapolation included.
  const values: number[] = [];
  for (let j = 0; j < g.ny; j++) for (let i = 0; i < g.nx; i++) values.push(3 + 0.5 * (g.x0 + i * g.dx) - 0.25 * (g.y0 + j * g.dy));
  for (const [x, y] of [[0, 0], [127, 95], [63.5, 40], [10, 90]] as const) assert.ok(Math.abs(gridValueAt(g, values, x, y) - (3 + 0.5 * x - 0.25 * y)) < 1e-9);
  const m: LnModel = { version: 1, grid: g, interpolation: 'bilinear, outer cells extended linearly to the image edge', a: values.map(() => 1.1), b: values.map(() => 5), fit: fitLocalNormalization(b, b, { cells: 4 }).fit };
  const c = composeGlobal(m, 2, 3);
  // 1.1·(2v + 3) + 5 = 2.2v + 8.3.
  assert.ok(Math.abs(c.a[0]! - 2.2) < 1e-12 && Math.abs(c.b[0]! - 8.3) < 1e-12);
});


test('column lines (lnColumnTable, the separable warp\'s layout) give lnApply\'s bilinear value on every row of any band, the same entries whatever band lists them', () => {
  let seed = 3;
  const rnd = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0), seed / 4294967296);
  // Grids: node rows inside the image with both clamps reachable, two node rows, one node row.
  for (const g of [
    { width: 97, height: 120, nx: 5, ny: 4, x0: 9.5, y0: 14.5, dx: 19.4, dy: 30 },
    { width: 97, height: 120, nx: 3, ny: 2, x0: 10, y0: 40, dx: 40, dy: 35 },
    { width: 97, height: 120, nx: 4, ny: 1, x0: 12, y0: 60, dx: 24, dy: 120 },
  ]) {
    const coefficients = new Float32Array(g.nx * g.ny * 2).map((_, k) => (k % 2 === 0 ? 0.9 + 0.2 * rnd() : -60 + 120 * rnd()));
    const want = new Float32Array(g.width * g.height).fill(1);
    const wantB = new Float32Array(g.width * g.height).fill(0);
    lnApply(want, { width: g.width, rows: g.height, frames: 1, y0: 0, grid: g, coefficients });
    lnApply(wantB, { width: g.width, rows: g.height, frames: 1, y0: 0, grid: g, coefficients });
    const entries = new Map<string, number[]>();
    for (const [y0, rows] of [[0, 120], [0, 17], [13, 40], [50, 70], [119, 1]] as const) {
      const t = lnColumnTable(g, coefficients, y0, rows);
      for (let y = y0; y < y0 + rows; y++) {
        const p = lnPiece(g, y);
        assert.ok(p >= t.firstPiece && p < t.firstPiece + t.pieces, `row ${y}: piece ${p} listed`);
        const k = p - t.firstPiece;
        const u = (y - Math.fround(g.y0)) / Math.fround(g.dy);
        for (let x = 0; x < g.width; x++) {
          const e = t.table.subarray((k * g.width + x) * 4, (k * g.width + x) * 4 + 4);
          const a = e[0]! + (u - p) * e[2]!;
          const b = e[1]! + (u - p) * e[3]!;
          // lnApply on v = 1 gives a + b, on v = 0 gives b.
          assert.ok(Math.abs(b - wantB[y * g.width + x]!) <= 1e-4 && Math.abs(a + b - want[y * g.width + x]!) <= 1e-4, `grid ${g.nx}×${g.ny}, band ${y0}+${rows}, (${x}, ${y}): ${a}, ${b} vs ${want[y * g.width + x]! - wantB[y * g.width + x]!}, ${wantB[y * g.width + x]}`);
          const key = `${g.ny}:${p}:${x}`;
          const seen = entries.get(key);
          if (seen) assert.equal(Array.from(e), seen, 'an entry does not depend on the band');
          else entries.set(key, Array.from(e));
        }
      }
    }
  }
});

test.run();
