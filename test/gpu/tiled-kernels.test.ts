// The tiled workflow's WGSL kernels against their TypeScript references on seeded data:
// stats/tile_metrics (counts exact; means, sky and the histogram quantile E to 1e-4 relative:
// same bins by construction, f32 vs f64 only in the sums and the interpolation; NaN skipped,
// step 2 on a mosaic) and stack/stack_weightfield (none: 1e-5 relative; sigma and winsor: the same result
// except where f32 and f64 put a sample on different sides of a bound, on under 1 % of pixels;
// tallies close). Skipped with the reason printed where no adapter exists.

import * as assert from 'uvu/assert';
import { test } from 'uvu';
import { axisWindows, stackWeightfield } from '../../src/cpu/stack-weightfield.js';
import { TILE_METRICS_FIELDS, tileMetrics } from '../../src/cpu/tile-metrics.js';
import { GpuError } from '../../src/gpu/errors.js';
import { stackWeightfieldGpu } from '../../src/gpu/kernels/stack-weightfield.js';
import { tileMetricsGpu } from '../../src/gpu/kernels/tile-metrics.js';
import { stackFieldGpu, stackFieldRows, weightField } from '../../src/pipeline/stages/stacking/weightfield.js';
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

test.run();
