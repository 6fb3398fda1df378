// The tiled workflow's WGSL kernels against their TypeScript references on seeded data:
// stats/tile_metrics (counts exact; means, sky and the histogram quantile E to 1e-4 relative:
// same bins by construction, f32 vs f64 only in the sums and the interpolation; NaN skipped,
// step 2 on a mosaic) and stack/stack_weightfield (none: 1e-5 relative; sigma and winsor: the
// same result except where f32 and f64 put a sample on different sides of a bound, on under 1 % of pixels;
// tallies close; the noise-model bounds (methods 3 and 4) against rejectNoiseModel with a field:
// counts equal and means within 1e-5 relative except on under 1 % of pixels, where f32 and
// f64 put a sample on different sides of a bound, tallies within 1 % + 2, the device kernel
// really dispatched). Skipped with the reason printed where no adapter exists.

import * as assert from 'uvu/assert';
import { test } from 'uvu';
import { axisWindows, stackWeightfield } from '../../src/cpu/stack-weightfield.js';
import { TILE_METRICS_FIELDS, tileMetrics } from '../../src/cpu/tile-metrics.js';
import { GpuError } from '../../src/gpu/errors.js';
import { rejectWeightfieldGpu, stackWeightfieldGpu } from '../../src/gpu/kernels/stack-weightfield.js';
import { rejectNoiseModel, type NoiseRejectParams } from '../../src/cpu/reject-noise.js';
import { tileMetricsGpu } from '../../src/gpu/kernels/tile-metrics.js';
import { rejectFieldGpu, rejectFieldRows, stackFieldGpu, stackFieldRows, weightField } from '../../src/pipeline/stages/stacking/weightfield.js';
import { tileCount, tileGrid } from '../../src/pipeline/tiled/tile-grid.js';
import { tileTable } from '../../src/pipeline/tiled/weights.js';
import { gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

const gauss = (r: () => number) => Math.sqrt(-2 * Math.log(1 - r())) * Math.cos(2 * Math.PI * r());

gpuTest('tile_metrics: count, mean, sky and the histogram quantile E match the TypeScript reference (mono and step 2, NaN holes, quantiles 0.5 / 0.9)', async () => {
  const r = seededRandom(41);
  const W = 203;
  const H = 150;
  const sigma = 12;
  const plane = new Float32Array(W * H).map(() => 500 + sigma * gauss(r));
  for (let i = 0; i < plane.length; i += 53) plane[i] = NaN;
  for (let k = 0; k < 30; k++) {
    const cx = r() * W;
    const cy = r() * H;
    for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) plane[y * W + x]! += 800 * Math.exp(-((x - cx) ** 2 + (y - cy) ** 2) / 5);
  }
  // A hot pixel far above the histogram's range: the top bin holds it, E does not move.
  plane[40 * W + 60] = 1e9;
  const rects = new Int32Array([0, 0, 64, 64, 48, 30, 64, 64, 139, 86, 64, 64, 10, 10, 1, 1, 0, 0, W, H, 5, 5, 3, 3]);
  const ctx = gpu.ctx!;
  const before = ctx.dispatches.get('tile_metrics') ?? 0;
  let runs = 0;
  for (const step of [1, 2] as const) {
    for (const quantile of [0.5, 0.9]) {
      const p = { width: W, height: H, step, rects, bgCut: 530, unit: sigma * sigma, quantile };
      const want = tileMetrics(plane, p);
      const got = await tileMetricsGpu(ctx, plane, p);
      runs++;
      for (let i = 0; i < want.length; i++) {
        const a = got[i]!;
        const b = want[i]!;
        const what = `step ${step} q ${quantile} [${i}]`;
        if (Number.isNaN(b)) assert.ok(Number.isNaN(a), `${what}: NaN expected, got ${a}`);
        else if (i % TILE_METRICS_FIELDS === 0 || i % TILE_METRICS_FIELDS === 3) assert.is(a, b, `${what}: counts are exact`);
        else assert.ok(Math.abs(a - b) <= 1e-4 * Math.abs(b), `${what}: ${a} vs ${b}`);
      }
      assert.is(want[15], 0, 'a 1×1 rectangle has no pair');
      assert.ok(Number.isNaN(want[17]!), 'no pair: E is NaN');
      assert.ok(want[3]! > 0 && want[3]! < want[0]!, 'the sky count leaves the stars out');
    }
  }
  assert.is((ctx.dispatches.get('tile_metrics') ?? 0) - before, runs, 'the WGSL kernel ran');
  const bad = await tileMetricsGpu(ctx, plane, { width: W, height: H, step: 1, rects, bgCut: 530, quantile: 1 }).then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(bad instanceof GpuError && bad.code === 'BAD_ARGUMENT', 'a quantile outside (0, 1) is a BAD_ARGUMENT');
});

gpuTest('stack_weightfield: none / sigma / winsor match the TypeScript reference', async () => {
  const r = seededRandom(43);
  const W = 97;
  const H = 61;
  const n = 11;
  const g = tileGrid(W, H, 2, { size_factor: 10, min_size: 16, max_divisor: 2, overlap_fraction: 0.25 });
  const tiles = tileCount(g);
  const gw = Array.from({ length: n }, () => 0.3 + r());
  const l = new Float64Array(n * tiles).map(() => Math.exp(2 * (r() - 0.5)));
  const { table } = tileTable(gw, l, tiles);
  // A band of rows 20..60 of the image: the row windows are the band's.
  const y0 = 20;
  const rows = H - y0;
  const allRows = axisWindows(g.originsY, g.sizeY, H);
  const field = { tilesX: g.originsX.length, tilesY: g.originsY.length, table, cols: axisWindows(g.originsX, g.sizeX, W), rows: { tile: allRows.tile.subarray(y0 * 4), weight: allRows.weight.subarray(y0 * 4) } };
  const frames = new Float32Array(n * rows * W).map(() => 1000 + 30 * gauss(r));
  for (let k = 0; k < 300; k++) frames[Math.floor(r() * frames.length)] = 1000 + (r() < 0.5 ? -1 : 1) * 600;
  for (let i = 0; i < frames.length; i += 71) frames[i] = NaN;
  const scale = Array.from({ length: n }, () => 0.9 + 0.2 * r());
  const offset = Array.from({ length: n }, () => 20 * (r() - 0.5));
  for (const method of ['none', 'sigma', 'winsor'] as const) {
    const p = { width: W, rows, frames: n, method, low: 2.5, high: 2.5, maxIters: 3, minFraction: 0.4, scale, offset };
    const want = stackWeightfield(frames, p, field);
    const got = await stackWeightfieldGpu(gpu.ctx!, frames, p, field);
    let off = 0;
    let worst = 0;
    for (let i = 0; i < W * rows; i++) {
      const d = Math.abs(got.mean[i]! - want.mean[i]!) / Math.abs(want.mean[i]!);
      if (d > 1e-5 || got.count[i] !== want.count[i]) off++;
      else worst = Math.max(worst, d);
    }
    if (method === 'none') assert.is(off, 0, 'none: every pixel within 1e-5');
    else assert.ok(off <= 0.01 * W * rows, `${method}: ${off} pixels differ`);
    const tw = want.rejectedLow.reduce((a, b) => a + b, 0) + want.rejectedHigh.reduce((a, b) => a + b, 0);
    const tg = got.rejectedLow.reduce((a, b) => a + b, 0) + got.rejectedHigh.reduce((a, b) => a + b, 0);
    if (method !== 'none') assert.ok(tw > 200 && Math.abs(tg - tw) <= 0.01 * tw + 2, `${method}: tallies ${tg} vs ${tw}`);
  }
});

gpuTest("the engine's weight-field stack on the device equals its TypeScript rows (band inside the image)", async () => {
  const r = seededRandom(47);
  const W = 80;
  const H = 60;
  const n = 7;
  const g = tileGrid(W, H, 2, { size_factor: 10, min_size: 16, max_divisor: 2, overlap_fraction: 0.25 });
  const tiles = tileCount(g);
  const { table } = tileTable(Array.from({ length: n }, () => 0.5 + r()), new Float64Array(n * tiles).map(() => 0.2 + r()), tiles);
  const field = weightField(table, g.originsX, g.originsY, g.sizeX, g.sizeY, W, H);
  const rows = 25;
  const band = new Float32Array(n * rows * W).map(() => 300 + 9 * gauss(r));
  const run = async (device: boolean) => {
    const a = { band, width: W, rows, frames: n, method: 'none' as const, low: 3, high: 3, maxIters: 3, minFraction: 0.4, scale: new Array(n).fill(1), offset: new Array(n).fill(0), weight: new Array(n).fill(1), mean: new Float32Array(rows * W), rejected: new Uint32Array(2 * n), counts: new BigUint64Array(2), field, imageY0: 30 };
    if (device) await stackFieldGpu(gpu.ctx!, a);
    else stackFieldRows(a, 0, rows);
    return a;
  };
  const host = await run(false);
  const dev = await run(true);
  for (let i = 0; i < rows * W; i++) assert.ok(Math.abs(dev.mean[i]! - host.mean[i]!) <= 1e-5 * Math.abs(host.mean[i]!), `pixel ${i}`);
  assert.equal(Array.from(dev.counts), Array.from(host.counts));
});

// A band of n frames (rows inside larger slots) with sky, a gradient, σ-20 noise, stars whose
// peaks vary by frame (seeing), high and low outliers and NaN holes.
function noisyBand(r: () => number, n: number, W: number, srcRows: number) {
  const band = new Float32Array(n * srcRows * W);
  const peak = Array.from({ length: n }, () => 0.6 + 1.2 * r());
  const stars = Array.from({ length: 12 }, () => [r() * W, r() * srcRows] as const);
  for (let f = 0; f < n; f++) {
    for (let y = 0; y < srcRows; y++) {
      for (let x = 0; x < W; x++) {
        let v = 1000 + 0.4 * x + 20 * gauss(r);
        for (const [sx, sy] of stars) v += 1500 * peak[f]! * Math.exp(-((x - sx) ** 2 + (y - sy) ** 2) / (3 * peak[f]!));
        const u = r();
        if (u < 0.02) v += 300 + 2000 * r();
        else if (u < 0.03) v -= 150 + 300 * r();
        if (r() < 0.03) v = NaN;
        band[(f * srcRows + y) * W + x] = v;
      }
    }
  }
  return band;
}

gpuTest('stack_weightfield: the noise-model bounds (sigma, winsor) match rejectNoiseModel with the field', async () => {
  const ctx = gpu.ctx!;
  const r = seededRandom(53);
  const W = 91;
  const H = 70;
  const n = 13;
  const g = tileGrid(W, H, 2, { size_factor: 10, min_size: 16, max_divisor: 2, overlap_fraction: 0.25 });
  const tiles = tileCount(g);
  const { table } = tileTable(Array.from({ length: n }, () => 0.3 + r()), new Float64Array(n * tiles).map(() => Math.exp(2 * (r() - 0.5))), tiles);
  const y0 = 15;
  const rows = 41;
  const srcRows = rows + 6;
  const srcRow0 = 2;
  const allRows = axisWindows(g.originsY, g.sizeY, H);
  const field = { tilesX: g.originsX.length, tilesY: g.originsY.length, table, cols: axisWindows(g.originsX, g.sizeX, W), rows: { tile: allRows.tile.subarray(y0 * 4), weight: allRows.weight.subarray(y0 * 4) } };
  const band = noisyBand(r, n, W, srcRows);
  // The start centre (NaN in places: the weighted mean starts there) and the sky (NaN: S = 0).
  const centre = new Float32Array(rows * W);
  for (let i = 0; i < rows * W; i++) {
    const y = Math.floor(i / W) + srcRow0;
    const x = i % W;
    const s = [];
    for (let f = 0; f < n; f++) {
      const v = band[(f * srcRows + y) * W + x]!;
      if (v === v) s.push(v);
    }
    s.sort((a, b) => a - b);
    centre[i] = i % 13 === 4 || s.length === 0 ? NaN : s[s.length >> 1]!;
  }
  const background = Float32Array.from({ length: rows * W }, (_, i) => (i % 17 === 2 ? NaN : 1000 + 0.4 * (i % W)));
  let rejected = 0;
  for (const method of ['sigma', 'winsor'] as const) {
    const p: NoiseRejectParams = {
      width: W,
      rows,
      frames: n,
      method,
      low: 3,
      high: 2.5,
      maxIters: 3,
      minFraction: 0.4,
      scale: Array.from({ length: n }, (_, f) => 1 + 0.02 * (f % 4)),
      offset: Array.from({ length: n }, (_, f) => -2 * f),
      noise: Array.from({ length: n }, (_, f) => (f === 3 ? 0 : 20 * (1 + 0.03 * (f % 5)))),
      poisson: Array.from({ length: n }, (_, f) => 0.2 + 0.01 * f),
      seeing: Array.from({ length: n }, () => 0.3 + 0.4 * r()),
      srcRows,
      srcRow0,
    };
    const px = { centre, background };
    const want = rejectNoiseModel(band, p, px, field);
    const before = ctx.dispatches.get('stack_weightfield') ?? 0;
    const got = await rejectWeightfieldGpu(ctx, band, p, px, field);
    assert.is(ctx.dispatches.get('stack_weightfield'), before + 1, `${method}: the device kernel ran`);
    let off = 0;
    for (let i = 0; i < W * rows; i++) {
      const a = got.mean[i]!;
      const b = want.mean[i]!;
      if (Number.isNaN(b)) assert.ok(Number.isNaN(a), `${method} pixel ${i}: NaN expected`);
      else if (got.count[i] !== want.count[i] || !(Math.abs(a - b) <= 1e-5 * Math.abs(b))) off++;
    }
    assert.ok(off <= 0.01 * W * rows, `${method}: ${off} pixels differ`);
    const tw = want.rejectedLow.reduce((a, b) => a + b, 0) + want.rejectedHigh.reduce((a, b) => a + b, 0);
    const tg = got.rejectedLow.reduce((a, b) => a + b, 0) + got.rejectedHigh.reduce((a, b) => a + b, 0);
    assert.ok(Math.abs(tg - tw) <= 0.01 * tw + 2, `${method}: tallies ${tg} vs ${tw}`);
    assert.is(want.rejectedLow[3]! + want.rejectedHigh[3]!, 0, 'the frame without a noise estimate is never rejected');
    assert.is(got.rejectedLow[3]! + got.rejectedHigh[3]!, 0, 'nor on the device');
    rejected += tw;
  }
  assert.ok(rejected > 200, `the data exercises rejection (${rejected} samples)`);
  assert.equal(ctx.uncapturedErrors, []);
});

gpuTest("the engine's noise-model weight-field rejection on the device equals its TypeScript rows", async () => {
  const r = seededRandom(59);
  const W = 72;
  const H = 60;
  const n = 9;
  const g = tileGrid(W, H, 2, { size_factor: 10, min_size: 16, max_divisor: 2, overlap_fraction: 0.25 });
  const tiles = tileCount(g);
  const { table } = tileTable(Array.from({ length: n }, () => 0.5 + r()), new Float64Array(n * tiles).map(() => 0.2 + r()), tiles);
  const field = weightField(table, g.originsX, g.originsY, g.sizeX, g.sizeY, W, H);
  const rows = 22;
  const band = noisyBand(r, n, W, rows);
  const background = new Float32Array(rows * W).fill(1000);
  const run = async (device: boolean) => {
    const a = {
      band,
      width: W,
      rows,
      frames: n,
      method: 'sigma' as const,
      low: 3,
      high: 3,
      maxIters: 3,
      minFraction: 0.4,
      scale: new Array(n).fill(1),
      offset: new Array(n).fill(0),
      weight: new Array(n).fill(1),
      mean: new Float32Array(rows * W),
      rejected: new Uint32Array(2 * n),
      counts: new BigUint64Array(2),
      field,
      imageY0: 30,
      srcRows: rows,
      srcRow0: 0,
      noise: new Array(n).fill(20),
      poisson: new Array(n).fill(0.25),
      seeing: new Array(n).fill(0.5),
      centre: null,
      centreRow0: 0,
      background,
    };
    if (device) await rejectFieldGpu(gpu.ctx!, a);
    else rejectFieldRows(a, 0, rows);
    return a;
  };
  const host = await run(false);
  const dev = await run(true);
  let off = 0;
  for (let i = 0; i < rows * W; i++) if (!(Math.abs(dev.mean[i]! - host.mean[i]!) <= 1e-5 * Math.abs(host.mean[i]!))) off++;
  assert.ok(off <= 0.01 * rows * W, `${off} pixels differ`);
  const total = (t: Uint32Array) => t.reduce((a, b) => a + b, 0);
  assert.ok(total(host.rejected) > 20, `rejections happen (${total(host.rejected)})`);
  assert.ok(Math.abs(total(dev.rejected) - total(host.rejected)) <= 0.01 * total(host.rejected) + 2, `tallies ${total(dev.rejected)} vs ${total(host.rejected)}`);
});

test.run();
