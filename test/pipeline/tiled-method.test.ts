// The tiled workflow's method on synthetic data: the weight-field stack equals a literal
// overlap-add of per-tile G·L-weighted means with clipping off (1e-5 relative), does not depend on
// how a band is split into row ranges, shows no step at tile boundaries when the weights jump
// from tile to tile, keeps NaN as no-data without darkening partly covered pixels, keeps global
// per-pixel rejection; the tile grid follows the reference rule; the structure measure E/σ² does
// not reward noise, and a hot pixel or short trail no longer lifts a frame's E or L while seeing
// still ranks the frames; a frame without a star measurement in a STAR tile gets the lowest weight; a
// tile with too few stars borrows the nearest ones within a tile size (poolStars).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { olaExact } from '../../src/cpu/ola-exact.js';
import { AXIS_SLOTS, axisWindows, stackWeightfield, type WeightFieldRows } from '../../src/cpu/stack-weightfield.js';
import { STRUCTURE_QUANTILE, tileMetrics } from '../../src/cpu/tile-metrics.js';
import { stackFieldRows, weightField } from '../../src/pipeline/stages/stacking/weightfield.js';
import { tileCount, tileGrid, type TileGrid } from '../../src/pipeline/tiled/tile-grid.js';
import { clusterFrames, clusterTable } from '../../src/pipeline/tiled/clustering.js';
import { ARTEFACT_FACTOR, globalWeights, LOCAL_ARTEFACT_FACTOR, localWeights, tileTable, type TileMeasure } from '../../src/pipeline/tiled/weights.js';
import { seamScore } from '../../src/pipeline/tiled/validation.js';
import { poolStars } from '../../src/pipeline/tiled/phases/local-metrics.js';
import { fwhmVsGlobal } from '../../src/pipeline/tiled/report-section.js';

/** Deterministic uniform [0, 1) (mulberry32). */
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

const TILE = { size_factor: 10, min_size: 16, max_divisor: 2, overlap_fraction: 0.25 };

function fieldOf(g: TileGrid, table: Float32Array, W: number, H: number): WeightFieldRows {
  return { tilesX: g.originsX.length, tilesY: g.originsY.length, table, cols: axisWindows(g.originsX, g.sizeX, W), rows: axisWindows(g.originsY, g.sizeY, H) };
}

function randomWeights(r: () => number, n: number, tiles: number): { raw: Float64Array; table: Float32Array } {
  const g = Array.from({ length: n }, () => 0.3 + r());
  const l = new Float64Array(n * tiles).map(() => Math.exp(3 * (r() - 0.5)));
  const raw = new Float64Array(n * tiles);
  for (let f = 0; f < n; f++) for (let t = 0; t < tiles; t++) raw[f * tiles + t] = g[f]! * l[f * tiles + t]!;
  return { raw, table: tileTable(g, l, tiles).table };
}

test('tile grid: the reference rule (F = 3 px: T = 96, overlap 24) and every position covered by at most AXIS_SLOTS tiles', () => {
  const g = tileGrid(2000, 1500, 3, { size_factor: 32, min_size: 64, max_divisor: 6, overlap_fraction: 0.25 });
  assert.equal([g.tileSize, g.overlapPx, g.stride], [96, 24, 72]);
  assert.is(g.originsX[g.originsX.length - 1]! + g.sizeX, 2000, 'a tile flush with the right edge');
  assert.is(g.originsY[g.originsY.length - 1]! + g.sizeY, 1500);
  // Small images: the upper limit min(W, H)/max_divisor never undercuts min_size; unmeasured seeing is 3 px.
  const s = tileGrid(256, 192, null, { size_factor: 32, min_size: 64, max_divisor: 6, overlap_fraction: 0.25 });
  assert.equal([s.tileSize, s.seeingMeasured, s.originsX, s.originsY], [64, false, [0, 48, 96, 144, 192], [0, 48, 96, 128]]);
  axisWindows(g.originsX, g.sizeX, 2000); // throws if a position had no tile or too many
  const one = tileGrid(50, 40, 3, { size_factor: 32, min_size: 64, max_divisor: 6, overlap_fraction: 0.25 });
  assert.equal([one.originsX, one.originsY, one.sizeX, one.sizeY], [[0], [0], 50, 40]);
});

test('weight-field stack equals the literal overlap-add of per-tile weighted means (clipping off) to 1e-5 relative', () => {
  const r = rng(7);
  const W = 101;
  const H = 77;
  const n = 6;
  const g = tileGrid(W, H, 3, TILE);
  const tiles = tileCount(g);
  assert.ok(tiles >= 6, `${tiles} tiles`);
  const frames = new Float32Array(n * W * H).map(() => 100 + 20 * gauss(r));
  const { raw, table } = randomWeights(r, n, tiles);
  const ref = olaExact(frames, n, W, H, { originsX: g.originsX, originsY: g.originsY, sizeX: g.sizeX, sizeY: g.sizeY }, raw);
  const res = stackWeightfield(frames, { width: W, rows: H, frames: n, method: 'none', low: 3, high: 3, maxIters: 3, minFraction: 0.4 }, fieldOf(g, table, W, H));
  let worst = 0;
  for (let i = 0; i < W * H; i++) worst = Math.max(worst, Math.abs(res.mean[i]! - ref[i]!) / Math.abs(ref[i]!));
  assert.ok(worst < 1e-5, `max relative difference ${worst}`);
  // A uniform table is the plain mean.
  const uniform = new Float32Array(n * tiles).fill(1 / n);
  const u = stackWeightfield(frames, { width: W, rows: H, frames: n, method: 'none', low: 3, high: 3, maxIters: 3, minFraction: 0.4 }, fieldOf(g, uniform, W, H));
  let mean = 0;
  for (let f = 0; f < n; f++) mean += frames[f * W * H + 1234]!;
  assert.ok(Math.abs(u.mean[1234]! - mean / n) < 1e-4);
});

test('the engine row kernel: any split of a band into row ranges gives the same image and tallies', () => {
  const r = rng(11);
  const W = 64;
  const H = 48;
  const n = 9;
  const g = tileGrid(W, H, 2, TILE);
  const tiles = tileCount(g);
  const { table } = randomWeights(r, n, tiles);
  const field = weightField(table, g.originsX, g.originsY, g.sizeX, g.sizeY, W, H);
  // Rows 10..40 of the image as a band, with outliers for the rejection.
  const rows = 30;
  const band = new Float32Array(n * rows * W).map(() => 50 + 5 * gauss(r));
  for (let k = 0; k < 40; k++) band[Math.floor(r() * band.length)] = 500;
  const run = (splits: number[]) => {
    const mean = new Float32Array(rows * W);
    const rejected = new Uint32Array(2 * n);
    const counts = new BigUint64Array(2);
    const args = { band, width: W, rows, frames: n, method: 'sigma' as const, low: 3, high: 3, maxIters: 3, minFraction: 0.4, scale: new Array(n).fill(1), offset: new Array(n).fill(0), weight: new Array(n).fill(1), mean, rejected, counts, field, imageY0: 10 };
    for (let i = 0; i + 1 < splits.length; i++) stackFieldRows(args, splits[i]!, splits[i + 1]!);
    return { mean, rejected, counts };
  };
  const whole = run([0, rows]);
  const split = run([0, 7, 8, 21, rows]);
  assert.equal(Array.from(split.mean), Array.from(whole.mean));
  assert.equal(Array.from(split.rejected), Array.from(whole.rejected));
  assert.ok(whole.rejected.reduce((a, b) => a + b, 0) >= 30, 'the outliers are rejected per pixel');
});

test('seams: weights jumping from tile to tile give a smooth result, no step at tile boundaries', () => {
  const W = 160;
  const H = 120;
  const n = 4;
  const g = tileGrid(W, H, 4, { size_factor: 10, min_size: 32, max_divisor: 2, overlap_fraction: 0.25 });
  const tiles = tileCount(g);
  // Frame f is the constant 100 + 10 f; tile t trusts frame t mod 4 almost alone (a checkerboard of weights).
  const frames = new Float32Array(n * W * H);
  for (let f = 0; f < n; f++) frames.fill(100 + 10 * f, f * W * H, (f + 1) * W * H);
  const table = new Float32Array(n * tiles);
  for (let t = 0; t < tiles; t++) for (let f = 0; f < n; f++) table[f * tiles + t] = f === t % n ? 0.97 : 0.01;
  const res = stackWeightfield(frames, { width: W, rows: H, frames: n, method: 'none', low: 3, high: 3, maxIters: 3, minFraction: 0.4 }, fieldOf(g, table, W, H));
  // No discontinuity: at every tile boundary line (a tile's first column, the one after its last)
  // the step between neighbours is no larger than the steps just beside it (the window enters
  // and leaves at ~0), and the largest step anywhere is a fraction of the hard-assignment step
  // (30): the tiles cross-fade over their overlap.
  const stepX = (x: number, y: number) => Math.abs(res.mean[y * W + x]! - res.mean[y * W + x - 1]!);
  let worst = 0;
  for (let y = 0; y < H; y++) for (let x = 1; x < W; x++) worst = Math.max(worst, stepX(x, y));
  assert.ok(worst < 30 / 4, `largest step ${worst}`);
  const boundaries = [...new Set(g.originsX.flatMap((o) => [o, o + g.sizeX]))].filter((x) => x >= 4 && x < W - 4);
  assert.ok(boundaries.length >= 3);
  for (const x of boundaries) {
    for (let y = 0; y < H; y += 7) {
      const beside = Math.max(stepX(x - 2, y), stepX(x - 1, y), stepX(x + 1, y), stepX(x + 2, y));
      assert.ok(stepX(x, y) <= beside * 1.05 + 1e-4, `step ${stepX(x, y)} at boundary x = ${x} vs ${beside} beside`);
    }
  }
  // A wider overlap cross-fades over more pixels: smaller steps.
  const g2 = tileGrid(W, H, 4, { size_factor: 10, min_size: 32, max_divisor: 2, overlap_fraction: 0.5 });
  const t2 = new Float32Array(n * tileCount(g2));
  for (let t = 0; t < tileCount(g2); t++) for (let f = 0; f < n; f++) t2[f * tileCount(g2) + t] = f === t % n ? 0.97 : 0.01;
  const res2 = stackWeightfield(frames, { width: W, rows: H, frames: n, method: 'none', low: 3, high: 3, maxIters: 3, minFraction: 0.4 }, fieldOf(g2, t2, W, H));
  let worst2 = 0;
  for (let y = 0; y < H; y++) for (let x = 1; x < W; x++) worst2 = Math.max(worst2, Math.abs(res2.mean[y * W + x]! - res2.mean[y * W + x - 1]!));
  assert.ok(worst2 < worst, `overlap 0.5: ${worst2}, 0.25: ${worst}`);
  // On a noisy image the seam score at the boundaries stays near 1.
  const r = rng(3);
  const noisy = new Float32Array(n * W * H).map((_, i) => frames[i]! + 5 * gauss(r));
  const nres = stackWeightfield(noisy, { width: W, rows: H, frames: n, method: 'sigma', low: 3, high: 3, maxIters: 3, minFraction: 0.4 }, fieldOf(g, table, W, H));
  const seam = seamScore(nres.mean, W, H, g);
  assert.ok(seam.lines > 4 && seam.pooled < 1.1, JSON.stringify(seam));
});

test('no-data: NaN samples drop out without darkening partly covered pixels; no frame at all stays NaN', () => {
  const W = 60;
  const H = 40;
  const n = 5;
  const g = tileGrid(W, H, 2, TILE);
  const tiles = tileCount(g);
  const r = rng(5);
  const { table } = randomWeights(r, n, tiles);
  const frames = new Float32Array(n * W * H).fill(42);
  // Frame 0 lacks the left 10 columns (dithered off), every frame lacks column 59.
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < 10; x++) frames[y * W + x] = NaN;
    for (let f = 0; f < n; f++) frames[f * W * H + y * W + 59] = NaN;
  }
  for (const method of ['none', 'sigma', 'winsor'] as const) {
    const res = stackWeightfield(frames, { width: W, rows: H, frames: n, method, low: 3, high: 3, maxIters: 3, minFraction: 0.4 }, fieldOf(g, table, W, H));
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < 59; x++) assert.ok(Math.abs(res.mean[y * W + x]! - 42) < 1e-4, `${method} (${x}, ${y}) = ${res.mean[y * W + x]}`);
      assert.ok(Number.isNaN(res.mean[y * W + 59]!), 'uncovered: NaN, not 0');
      assert.is(res.count[y * W + 59], 0);
    }
    assert.is(res.count[5 * W + 3], n - 1);
  }
});

test('structure measure: E/σ² of white noise is the 90th percentile of 1.5·z₁² + 0.5·z₂² (≈ 4.74) whatever σ (noise is not rewarded), rises with structure; the sky leaves stars out', () => {
  const r = rng(9);
  const W = 96;
  const H = 64;
  const rects = new Int32Array([0, 0, 48, 64, 48, 0, 48, 64]);
  const ratios: number[] = [];
  for (const sigma of [2, 10]) {
    const plane = new Float32Array(W * H).map(() => 100 + sigma * gauss(r));
    const m = tileMetrics(plane, { width: W, height: H, step: 1, rects, bgCut: 100 + 3 * sigma, unit: sigma * sigma });
    ratios.push(m[2]! / (sigma * sigma), m[7]! / (sigma * sigma));
    assert.ok(Math.abs(m[1]! - 100) < 1, 'mean is the background');
  }
  // e/σ² of white noise is 1.5·z₁² + 0.5·z₂² (the two differences share I(p)): 90th percentile
  // 4.74 (Monte Carlo, 4·10⁶ draws); a 48×64 rectangle's sample quantile scatters by ~0.15.
  assert.is(STRUCTURE_QUANTILE, 0.9);
  for (const q of ratios) assert.ok(Math.abs(q - 4.74) < 0.6, `E/σ² = ${q}`);
  // Structure over the left rectangle (a field of blurred knots) raises its E/σ².
  const plane = new Float32Array(W * H).map(() => 100 + 2 * gauss(r));
  addScene(plane, W, H, nebula(rng(3), 48, 64, 40), 3, 0);
  const m = tileMetrics(plane, { width: W, height: H, step: 1, rects, bgCut: 106, unit: 4 });
  assert.ok(m[2]! / 4 > 3 * (m[7]! / 4), `structure ${m[2]! / 4} vs noise ${m[7]! / 4}`);
  // A star: the sky below the cut ignores it; the plain mean does not.
  const star = new Float32Array(W * H).map(() => 100 + 2 * gauss(r));
  for (let y = 0; y < H; y++) for (let x = 0; x < 48; x++) star[y * W + x]! += 400 * Math.exp(-((x - 24) ** 2 + (y - 32) ** 2) / 4);
  const ms = tileMetrics(star, { width: W, height: H, step: 1, rects, bgCut: 106, unit: 4 });
  assert.ok(Math.abs(ms[4]! - 100) < 0.2 && ms[1]! > ms[4]! + 1, `sky ${ms[4]}, mean ${ms[1]}`);
});

/** Knots (x, y, flux, intrinsic σ): nebulosity or a dense faint field, as seen through the seeing. */
function nebula(r: () => number, w: number, h: number, n: number): [number, number, number, number][] {
  return Array.from({ length: n }, () => [r() * w, r() * h, 3000 + 6000 * r(), 1 + 2 * r()]);
}

/** Adds the knots blurred by a Gaussian seeing of `fwhm` to `plane` (columns from x0). */
function addScene(plane: Float32Array, W: number, H: number, knots: [number, number, number, number][], fwhm: number, x0: number): void {
  const sg = fwhm / 2.3548;
  for (const [cx, cy, f, w] of knots) {
    const s2 = sg * sg + w * w;
    for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) plane[y * W + x]! += (f / (2 * Math.PI * s2)) * Math.exp(-((x - x0 - cx) ** 2 + (y - cy) ** 2) / (2 * s2));
  }
}

/** The old measure, the mean of e over the rectangle (what a single outlier could dominate). */
function meanEnergy(p: Float32Array, W: number, H: number): number {
  let e = 0;
  for (let y = 0; y < H - 1; y++)
    for (let x = 0; x < W - 1; x++) {
      const v = p[y * W + x]!;
      e += 0.5 * ((p[y * W + x + 1]! - v) ** 2 + (p[(y + 1) * W + x]! - v) ** 2);
    }
  return e / ((W - 1) * (H - 1));
}

test('structure measure is robust: hot pixels no longer give a frame a higher E or L than its clean copy, a streak or trail moves E by its pixel share, not its brightness; seeing still ranks the frames', () => {
  const W = 64;
  const H = 64;
  const sigma = 5;
  const knots = nebula(rng(7), W, H, 60);
  const frame = (fwhm: number, seed: number, artefact?: (p: Float32Array) => void) => {
    const r = rng(seed);
    const p = new Float32Array(W * H).map(() => 100 + sigma * gauss(r));
    addScene(p, W, H, knots, fwhm, 0);
    artefact?.(p);
    return p;
  };
  const hot = (p: Float32Array) => {
    p[30 * W + 30]! += 5000;
    p[41 * W + 12]! += 3000;
  };
  // A line `len` px long, 3 px across, `peak` at its core, from (x0, y0) with slope 0.3.
  const line = (x0: number, y0: number, len: number, peak: number) => (p: Float32Array) => {
    for (let x = x0; x < x0 + len; x++) for (let dy = -1; dy <= 1; dy++) p[(Math.round(y0 + 0.3 * (x - x0)) + dy) * W + x]! += peak * Math.exp(-(dy * dy) / 1.5);
  };
  const rects = new Int32Array([0, 0, W, H]);
  const E = (p: Float32Array) => tileMetrics(p, { width: W, height: H, step: 1, rects, bgCut: 1e9, unit: sigma * sigma })[2]! / (sigma * sigma);
  const meanE = (p: Float32Array) => meanEnergy(p, W, H) / (sigma * sigma);
  // 8 frames of one seeing (different noise); frame 6 = frame 0 with two hot pixels, frame 7 =
  // frame 0 with a cosmic-ray streak (7 px, 0.5 % of the tile).
  const frames = [1, 2, 3, 4, 5, 6].map((seed) => frame(3, seed));
  frames.push(frame(3, 1, hot), frame(3, 1, line(40, 10, 7, 500)));
  const e = frames.map(E);
  const mean = frames.map(meanE);
  // The mean let them dominate (the streak stays under the artefact rule's 3× the median) ...
  assert.ok(mean[6]! > 2 * mean[0]! && mean[7]! > 1.3 * mean[0]! && mean[7]! < ARTEFACT_FACTOR * mean[0]!, `mean E/σ²: clean ${mean[0]}, hot ${mean[6]}, streak ${mean[7]}`);
  // ... the quantile moves by the ranks they take: two hot pixels (0.05 % of the tile) under 1 %;
  // the streak's 21 px (0.5 %) move the 90th percentile to the clean frame's ~90.5th, on this
  // tile's steep tail (d ln E/dq ≈ 8) a few per cent, whatever the streak's brightness.
  assert.ok(Math.abs(e[6]! / e[0]! - 1) < 0.01, `E/σ² with hot pixels: ${e[6]} vs its clean copy ${e[0]}`);
  assert.ok(e[7]! / e[0]! < 1.06, `E/σ² with the streak: ${e[7]} vs its clean copy ${e[0]}`);
  const settings = { star_min_count: 10, star: { fwhm: 0.6, roundness: 0.2, contrast: 0.2 }, structure: { metric_weight: 0.7, background_weight: 0.3 }, clamp: [-3, 3] as [number, number] };
  const measure = (structure: number): TileMeasure => ({ stars: 0, fwhm: NaN, roundness: NaN, contrast: NaN, structure, background: 0 });
  const lNew = Array.from(localWeights(e.map((x) => [measure(x)]), 1, settings, new Array(8).fill(sigma)).l);
  const lOld = Array.from(localWeights(mean.map((x) => [measure(x)]), 1, settings, new Array(8).fill(sigma)).l);
  assert.ok(lOld[7]! > 2 * lOld[0]!, `with the mean the streak frame weighed more: ${lOld[7]} vs ${lOld[0]}`);
  assert.ok(lNew[6]! <= 1.03 * lNew[0]!, `L with hot pixels: ${lNew[6]} vs its clean copy ${lNew[0]}`);
  assert.ok(lNew[7]! <= 1.2 * lNew[0]!, `L with the streak: ${lNew[7]} vs its clean copy ${lNew[0]}`);
  // A 20-px trail (1.5 % of the tile) moves E by its share of the ranks once it is brighter than
  // the 90th percentile: the same at 160σ or 1600σ; the mean grows with its brightness squared
  // (the artefact rule, 3× the frames' median, catches such a frame).
  const bright = frame(3, 1, line(30, 20, 20, 800));
  const brighter = frame(3, 1, line(30, 20, 20, 8000));
  assert.ok(Math.abs(E(brighter) / E(bright) - 1) < 0.01 && E(bright) < 1.25 * e[0]!, `E/σ²: trail 160σ ${E(bright)}, 1600σ ${E(brighter)}, clean ${e[0]}`);
  assert.ok(meanE(brighter) > 10 * meanE(bright) && meanE(bright) > ARTEFACT_FACTOR * mean[0]!, `mean E/σ²: trail 160σ ${meanE(bright)}, 1600σ ${meanE(brighter)}`);
  // Seeing still ranks: the same field sharper (FWHM 2.5 vs 3 vs 3.6) has the higher E and L.
  const seeing = [2.5, 3, 3.6].map((f) => frame(f, 11));
  const es = seeing.map(E);
  assert.ok(es[0]! > 1.15 * es[1]! && es[1]! > 1.15 * es[2]!, `E/σ² by seeing: ${es.join(', ')}`);
  const ls = Array.from(localWeights(es.map((x) => [measure(x)]), 1, settings, [sigma, sigma, sigma]).l);
  assert.ok(ls[0]! > ls[1]! && ls[1]! > ls[2]!, `L by seeing: ${ls.join(', ')}`);
});

test('star pooling: a tile with enough stars keeps its own; a sparse tile takes the k nearest within one tile size, none beyond', () => {
  const g = tileGrid(256, 128, 2, { size_factor: 32, min_size: 64, max_divisor: 2, overlap_fraction: 0 });
  assert.equal([g.originsX, g.originsY, g.sizeX], [[0, 64, 128, 192], [0, 64], 64]);
  const star = (x: number, y: number, fwhm: number) => ({ x, y, fwhm, round: 1, contrast: 10 });
  // Tile 0 (0..64 × 0..64): five stars of FWHM 2. Tile 1: one star of FWHM 9 at its centre. Far right: nothing.
  const stars = [...[5, 10, 15, 20, 50].map((x) => star(x, 30, 2)), star(96, 32, 9), star(100, 80, 5)];
  const p = poolStars(stars, g, 3);
  assert.equal(p[0]!.fwhm, [2, 2, 2, 2, 2], 'enough stars: its own only');
  // Tile 1 (centre 96, 32): its own (0 px), then (50, 30) at 46 px and (100, 80) at 48 px; (20, 30) at 76 px is too far.
  assert.equal(p[1]!.fwhm, [9, 2, 5]);
  // Tile 3 (centre 224, 32) has no star within 64 px: nothing borrowed, so no measurement (the lowest L).
  assert.equal(p[3]!.fwhm, []);
  // k = 0 never borrows.
  assert.equal(poolStars(stars, g, 0)[1]!.fwhm, [9]);
  // Random fields against the rule applied to every star (the bucketing only narrows the search).
  const r = rng(21);
  const big = tileGrid(900, 500, 3, { size_factor: 32, min_size: 64, max_divisor: 6, overlap_fraction: 0.25 });
  const many = Array.from({ length: 300 }, (_, i) => star(r() * 900, r() * 500, 1 + i / 100));
  const got = poolStars(many, big, 6);
  const nx = big.originsX.length;
  got.forEach((b, t) => {
    const ox = big.originsX[t % nx]!;
    const oy = big.originsY[Math.floor(t / nx)]!;
    let want = many.filter((st) => st.x >= ox && st.x < ox + big.sizeX && st.y >= oy && st.y < oy + big.sizeY);
    if (want.length < 6) want = many.filter((st) => Math.hypot(st.x - ox - big.sizeX / 2, st.y - oy - big.sizeY / 2) <= big.sizeX).sort((a, c) => Math.hypot(a.x - ox - big.sizeX / 2, a.y - oy - big.sizeY / 2) - Math.hypot(c.x - ox - big.sizeX / 2, c.y - oy - big.sizeY / 2)).slice(0, 6);
    assert.equal([...b.fwhm].sort(), want.map((st) => st.fwhm).sort(), `tile ${t}`);
  });
});

test('report: the FWHM expected against a global-weighted stack is 1 where the table is G, below 1 where it favours the sharp frames, null without a measurement', () => {
  // 2 frames (indices 3, 7), 3 tiles. G: 1 and 3. FWHM: tile 0: 2 and 4; tile 1: 2 and 4; tile 2: unmeasured.
  const g = new Map([
    [3, 1],
    [7, 3],
  ]);
  const measures = [[{ fwhm: 2 }, { fwhm: 2 }, { fwhm: NaN }], [{ fwhm: 4 }, { fwhm: 4 }, { fwhm: NaN }]];
  // Table (frame-major): tile 0 as G (0.25/0.75), tile 1 all on the sharp frame 3, tile 2 anything.
  const table = new Float32Array([0.25, 1, 0.5, 0.75, 0, 0.5]);
  const r = fwhmVsGlobal(table, [3, 7], measures, [3, 7], g, 3);
  assert.ok(Math.abs(r[0]! - 1) < 1e-6, `as G: ${r[0]}`);
  // G-weighted FWHM: (1·2 + 3·4)/4 = 3.5; the table's: 2 → 2/3.5.
  assert.ok(Math.abs(r[1]! - 2 / 3.5) < 1e-4, `sharp frame only: ${r[1]}`);
  assert.is(r[2], null);
  // Frames in another order in the measures than in the table give the same.
  assert.equal(fwhmVsGlobal(table, [3, 7], [measures[1]!, measures[0]!], [7, 3], g, 3), r);
});

test('local weights: a frame without stars measured in a STAR tile gets the lowest weight there; sharper frames get more', () => {
  const measure = (stars: number, fwhm: number): TileMeasure => ({ stars, fwhm, roundness: 0.9, contrast: 50, structure: 3, background: 0 });
  // 6 frames, 1 tile: fwhm 2.5 (sharp) … 4.0; frame 5 has no star there (a cloud).
  const m = [[measure(12, 2.5)], [measure(12, 3)], [measure(12, 3.5)], [measure(12, 4)], [measure(12, 3)], [measure(0, NaN)]];
  const lw = localWeights(m, 1, { star_min_count: 10, star: { fwhm: 0.6, roundness: 0.2, contrast: 0.2 }, structure: { metric_weight: 0.7, background_weight: 0.3 }, clamp: [-3, 3] }, new Array(6).fill(5));
  assert.equal(lw.types, ['STAR']);
  const l = Array.from(lw.l);
  assert.ok(Math.abs(l[5]! - Math.exp(-3)) < 1e-12, 'no measurement: the clamp low end');
  assert.ok(l[5]! <= Math.min(...l));
  assert.ok(l[0]! > l[1]! && l[1]! > l[2]! && l[2]! > l[3]!, l.join(', '));
});

test('local weights, FWHM penalty a: L ∝ (relative FWHM)^−a in a STAR tile whatever the spread, and equal L (W = G) where every frame has the same relative FWHM', () => {
  const measure = (fwhm: number): TileMeasure => ({ stars: 12, fwhm, roundness: 0.9, contrast: 50, structure: 3, background: 0 });
  const settings = (a: number) => ({ star_min_count: 10, star: { fwhm: 0.6, roundness: 0.2, contrast: 0.2 }, fwhmPenalty: a, structure: { metric_weight: 0.7, background_weight: 0.3 }, clamp: [-3, 3] as [number, number] });
  // 6 frames, 2 tiles: in tile 0 frames 3–5 are 1.2× or 1.5× softer than themselves; tile 1 the same 1.1 for all (flat seeing).
  for (const soft of [1.2, 1.5]) {
    const m = [1, 1, 1, soft, soft, soft].map((f) => [measure(f), measure(1.1)]);
    for (const a of [2, 3]) {
      const l = Array.from(localWeights(m, 2, settings(a), new Array(6).fill(5)).l);
      // The ratio of a soft frame's L to a sharp one's is soft^−a.
      assert.ok(Math.abs(l[3 * 2]! / l[0]! - soft ** -a) < 1e-9, `a ${a}, soft ${soft}: ${l[6]! / l[0]!}`);
      for (let f = 0; f < 6; f++) assert.ok(Math.abs(l[f * 2 + 1]! - 1) < 1e-12, `flat tile, frame ${f}: ${l[f * 2 + 1]}`);
    }
  }
  // A deadband d: |ln F| ≤ d (against the tile's median) counts as 0, beyond it less d.
  {
    const m = [1, 1, 1.02, 1.02, 1.3, 1.3].map((f) => [measure(f)]);
    const l = Array.from(localWeights(m, 1, { ...settings(4), fwhmDeadband: 0.03 }, new Array(6).fill(5)).l);
    // Median 1.02: frames at 1 (ln −0.0198) and 1.02 take L 1; at 1.3, exp(−4·(ln(1.3/1.02) − 0.03)).
    for (const f of [0, 1, 2, 3]) assert.ok(Math.abs(l[f]! - 1) < 1e-12, `inside the deadband, frame ${f}: ${l[f]}`);
    assert.ok(Math.abs(l[4]! - Math.exp(-4 * (Math.log(1.3 / 1.02) - 0.03))) < 1e-12, `beyond it: ${l[4]}`);
  }
  // The z-score law (floor 0.10, fwhm_map local's) gives a 1.5× and a 1.8× soft half the same ratio: its scale is the spread.
  const zLaw = (soft: number) => {
    const l = localWeights([1, 1, 1, soft, soft, soft].map((f) => [measure(f)]), 1, { ...settings(0), fwhmFloor: 0.1 }, new Array(6).fill(5)).l;
    return l[3]! / l[0]!;
  };
  assert.ok(Math.abs(zLaw(1.5) - zLaw(1.8)) < 1e-9, `z-score law: ${zLaw(1.5)} vs ${zLaw(1.8)}`);
  assert.ok(zLaw(1.8) > 1.8 ** -2, `z-score law at 1.8×: ${zLaw(1.8)}, milder than a = 2`);
});

test('local weights: in a STRUCTURE tile more detail weighs more, but an artefact (a trail: E/σ² far above the frames) gets the lowest weight, not the highest', () => {
  const measure = (structure: number): TileMeasure => ({ stars: 0, fwhm: NaN, roundness: NaN, contrast: NaN, structure, background: 0 });
  // 6 frames, 1 tile: E/σ² 2.0 … 2.6 (seeing), frame 5 crossed by a satellite trail (60×).
  const m = [[measure(2.0)], [measure(2.2)], [measure(2.4)], [measure(2.6)], [measure(2.2)], [measure(130)]];
  const lw = localWeights(m, 1, { star_min_count: 10, star: { fwhm: 0.6, roundness: 0.2, contrast: 0.2 }, structure: { metric_weight: 0.7, background_weight: 0.3 }, clamp: [-3, 3] }, new Array(6).fill(5));
  assert.equal(lw.types, ['STRUCTURE']);
  const l = Array.from(lw.l);
  assert.ok(l[3]! > l[2]! && l[2]! > l[1]! && l[1]! > l[0]!, l.join(', '));
  assert.ok(Math.abs(l[5]! - Math.exp(-3)) < 1e-12, `the trail frame: the clamp low end, got ${l[5]}`);
});

test('global weights: seeing counts (larger FWHM, lower G); equal frames get G = 1; a missing FWHM takes the low end', () => {
  const s = { weights: { background: 0.2, noise: 0.2, transparency: 0.2, fwhm: 0.4 }, clamp: [-3, 3] as [number, number], weight_exponent_scale: 1 };
  const frames = [2.5, 3, 3.5, 4, 4.5].map((fwhm) => ({ background: 100, noise: 5, transparency: 1000, fwhm }));
  const g = globalWeights(frames, s).g;
  for (let i = 1; i < g.length; i++) assert.ok(g[i]! < g[i - 1]!, g.join(', '));
  const same = globalWeights(new Array(5).fill({ background: 100, noise: 5, transparency: 1000, fwhm: 3 }), s).g;
  assert.equal(same, [1, 1, 1, 1, 1]);
  // Tiny differences (0.5 %) stay tiny: the z-score's floor keeps measurement noise from counting as quality.
  const close = globalWeights([3, 3.01, 2.99, 3.015, 2.985].map((fwhm) => ({ background: 100, noise: 5, transparency: 1000, fwhm })), s).g;
  assert.ok(Math.max(...close) / Math.min(...close) < 1.1, close.join(', '));
  const missing = globalWeights([...frames.slice(0, 4), { background: 100, noise: 5, transparency: 1000, fwhm: NaN }], s);
  assert.ok(missing.g[4]! < missing.g[3]!, 'no FWHM: not rewarded');
  assert.is(AXIS_SLOTS, 4);
});

test('clustering: deterministic k-means separates two frame states; the blended table keeps every tile column summing to 1', () => {
  const n = 12;
  const tiles = 3;
  // Six good frames (G ≈ 1.5, low noise) and six poor ones (G ≈ 0.5, more noise).
  const g = Array.from({ length: n }, (_, f) => (f % 2 ? 0.5 + 0.01 * f : 1.5 + 0.01 * f));
  const l = new Float64Array(n * tiles).fill(1);
  const input = { g, table: tileTable(g, l, tiles).table, tiles, l, background: new Array(n).fill(100), noise: g.map((x) => (x > 1 ? 5 : 8)) };
  const a = clusterFrames(input, [2, 4]);
  const b = clusterFrames(input, [2, 4]);
  assert.equal(a.labels, b.labels, 'deterministic');
  assert.equal([a.k, a.method], [2, 'kmeans']);
  for (let f = 2; f < n; f++) assert.is(a.labels[f] === a.labels[0], f % 2 === 0, `frame ${f}`);
  const t = clusterTable(input, a, 'tile_weighted');
  for (let tile = 0; tile < tiles; tile++) {
    let sum = 0;
    for (let f = 0; f < n; f++) sum += t.table[f * tiles + tile]!;
    assert.ok(Math.abs(sum - 1) < 1e-6, `tile ${tile}: ${sum}`);
  }
  // The better cluster weighs more: w_k = exp(median clip(ln G)).
  const good = a.labels[0]!;
  assert.ok(t.clusterWeights[good]! > t.clusterWeights[1 - good]!);
});

test('local weights: a trail that lifts one tile of one frame to ~2x the tile median is an artefact; a frame sharper all over keeps its weight', () => {
  // 10 frames x 6 STRUCTURE tiles, E/sigma^2 about 5 with a little scatter (seeded by index).
  const settings = { star_min_count: 10, star: { fwhm: 0.6, roundness: 0.2, contrast: 0.2 }, structure: { metric_weight: 0.7, background_weight: 0.3 }, clamp: [-3, 3] as [number, number] };
  const measure = (structure: number): TileMeasure => ({ stars: 0, fwhm: NaN, roundness: NaN, contrast: NaN, structure, background: 0 });
  const tiles = 6;
  const base = (f: number, t: number) => 5 * (1 + 0.03 * Math.sin(7 * f + 3 * t));
  const e = Array.from({ length: 10 }, (_, f) => Array.from({ length: tiles }, (_, t) => base(f, t)));
  e[5]![2] = 2 * base(5, 2); // the satellite frame's trail crosses tile 2: below ARTEFACT_FACTOR x the median
  for (let t = 0; t < tiles; t++) e[8]![t] = 1.8 * base(8, t); // frame 8 is sharper everywhere
  assert.ok(2 < ARTEFACT_FACTOR && 2 > LOCAL_ARTEFACT_FACTOR, 'the case lies between the two rules');
  const w = localWeights(e.map((row) => row.map(measure)), tiles, settings, new Array(10).fill(1));
  const l = (f: number, t: number) => w.l[f * tiles + t]!;
  const others = Array.from({ length: 10 }, (_, f) => l(f, 2)).filter((_, f) => f !== 5);
  assert.ok(l(5, 2) <= Math.min(...others), `trail frame L ${l(5, 2)} vs others min ${Math.min(...others)}`);
  assert.ok(l(5, 2) < 0.1, `the trail counts as no usable measurement: ${l(5, 2)}`);
  // The frame that is sharper in every tile is not an artefact: the highest L in each tile.
  for (let t = 0; t < tiles; t++) assert.ok(l(8, t) >= Math.max(...Array.from({ length: 10 }, (_, f) => l(f, t))), `tile ${t}: frame 8 L ${l(8, t)}`);
});

test.run();
