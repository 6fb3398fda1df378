import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAD_TO_SIGMA, planeStats, type PlaneStats } from '../../src/algorithms/robust-stats.js';
import { imageStats, tileStats, type StatsParams, type TileStats } from '../../src/cpu/stats.js';
import { imageStatsGpu, imageStatsResident, tileStatsGpu } from '../../src/gpu/kernels/stats.js';
import { gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

const U = 2 ** -24;

/** Spacing of f32 values at |v| (one unit in the last place). */
function ulp32(v: number): number {
  const a = Math.abs(v);
  if (a < 2 ** -126) return 2 ** -149;
  return 2 ** (Math.floor(Math.log2(a)) - 23);
}

/** Gaussian-ish sky: 1000 + gradient + noise (Irwin–Hall), some NaN/±Inf, a few hot pixels. */
function sky(width: number, height: number, seed: number, opts: { holes?: boolean; negative?: boolean } = {}): Float32Array {
  const rnd = seededRandom(seed);
  const a = new Float32Array(width * height);
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      let v = 1000 + 0.05 * x - 0.03 * y + 25 * (rnd() + rnd() + rnd() - 1.5);
      if (opts.negative) v -= 1100;
      if (rnd() < 0.001) v += 30000;
      a[y * width + x] = v;
    }
  }
  if (opts.holes) {
    for (let i = 0; i < a.length; i += 97) a[i] = NaN;
    if (a.length > 10) {
      a[3] = Infinity;
      a[a.length - 1] = -Infinity;
    }
  }
  return a;
}

/** Samples of one Bayer phase (or all), as planeStats input. */
function phaseSamples(data: Float32Array, p: StatsParams, phase: number | null): Float32Array {
  const out: number[] = [];
  for (let y = 0; y < p.height; y++) {
    for (let x = 0; x < p.width; x++) {
      const ph = (((y + (p.y0 ?? 0)) & 1) << 1) | ((x + (p.x0 ?? 0)) & 1);
      if (phase === null || ph === phase) out.push(data[y * p.width + x]!);
    }
  }
  return Float32Array.from(out);
}

/**
 * The histogram contract against the exact selection reference: count, min, max, median
 * identical; mean to f64 summation order (1e-12 relative); sigma identical for odd counts and
 * otherwise within 1.4826 · (ulp(median) / 2 + 2 ulp(MAD)), because the deviations are taken
 * from the f32-rounded median (moving each by ≤ ulp(median)/2) and rounded once to f32.
 */
function assertMatchesExact(got: PlaneStats, exact: PlaneStats, label: string): void {
  assert.is(got.count, exact.count, `${label}: count`);
  if (exact.count === 0) {
    assert.ok(Number.isNaN(got.median) && Number.isNaN(got.sigma) && Number.isNaN(got.mean), `${label}: empty gives NaN`);
    return;
  }
  assert.ok(got.min === exact.min && got.max === exact.max, `${label}: min/max ${got.min}/${got.max} vs ${exact.min}/${exact.max}`);
  assert.is(got.median, exact.median, `${label}: median`);
  assert.ok(Math.abs(got.mean - exact.mean) <= 1e-12 * Math.abs(exact.mean) + 1e-300, `${label}: mean ${got.mean} vs ${exact.mean}`);
  const mad = exact.sigma / MAD_TO_SIGMA;
  const tol = exact.count % 2 === 1 ? 0 : MAD_TO_SIGMA * (ulp32(exact.median) / 2 + 2 * ulp32(mad));
  assert.ok(Math.abs(got.sigma - exact.sigma) <= tol, `${label}: sigma ${got.sigma} vs ${exact.sigma} (tol ${tol})`);
}

/**
 * GPU against the TypeScript reference of the same contract: everything but the mean is an
 * exact order statistic, so identical. The GPU mean folds f32 partial sums in f64; per
 * shaders/stats/minmax.wgsl the error is ≤ (BLOCK + B + 2 + log2 WG) · 2^-24 · mean|x| with
 * BLOCK = 16, WG = 256 and, at these sizes (≤ 1.5 Mpx, ≥ 64 workgroups), B ≤ 2 blocks: 28 ulp.
 * 48 are allowed (the TypeScript mean itself is f64, exact to ~1e-16).
 */
function assertSameContract(got: PlaneStats, want: PlaneStats, meanAbs: number, label: string, meanTerms = 48): void {
  assert.is(got.count, want.count, `${label}: count`);
  if (want.count === 0) {
    assert.ok(Number.isNaN(got.median) && Number.isNaN(got.sigma), `${label}: empty gives NaN`);
    return;
  }
  assert.equal([got.min, got.max, got.median, got.sigma], [want.min, want.max, want.median, want.sigma], label);
  assert.ok(Math.abs(got.mean - want.mean) <= meanTerms * U * meanAbs, `${label}: mean ${got.mean} vs ${want.mean}`);
}

function meanAbs(data: Float32Array): number {
  let s = 0;
  let n = 0;
  for (const v of data) {
    if (Number.isFinite(v)) {
      s += Math.abs(v);
      n++;
    }
  }
  return n ? s / n : 0;
}

// ---------- CPU reference against hand-computed values ----------

test('CPU stats: hand-computed small set with NaN and ±Inf', () => {
  const data = Float32Array.from([3, NaN, 1, Infinity, 2, -Infinity, 10]);
  const [s] = imageStats(data, { width: 7, height: 1, mode: 'whole' });
  // finite {3, 1, 2, 10}: mean 4, median (2 + 3) / 2, deviations {0.5, 1.5, 0.5, 7.5} → MAD (0.5 + 1.5) / 2 = 1.
  assert.equal({ ...s! }, { count: 4, min: 1, max: 10, mean: 4, median: 2.5, sigma: MAD_TO_SIGMA });
  const [empty] = imageStats(Float32Array.from([NaN, Infinity]), { width: 2, height: 1, mode: 'whole' });
  assert.is(empty!.count, 0);
  assert.ok(Number.isNaN(empty!.median) && Number.isNaN(empty!.sigma) && Number.isNaN(empty!.min));
});

test('CPU stats: a known distribution (shuffled 1..n) gives its textbook median and MAD', () => {
  for (const n of [1001, 1000]) {
    const rnd = seededRandom(n);
    const values = Array.from({ length: n }, (_, i) => i + 1);
    for (let i = n - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [values[i], values[j]] = [values[j]!, values[i]!];
    }
    const [width, height] = n === 1001 ? [7, 143] : [40, 25];
    const [s] = imageStats(Float32Array.from(values), { width, height, mode: 'whole' });
    // 1..1001: median 501, |x - 501| = 0, 1, 1, 2, 2, ... → MAD 250, mean 501.
    // 1..1000: median 500.5, |x - 500.5| = 0.5, 0.5, 1.5, ... → middles 249.5 and 250.5 → MAD 250.
    assert.equal({ ...s! }, { count: n, min: 1, max: n, mean: (n + 1) / 2, median: (n + 1) / 2, sigma: MAD_TO_SIGMA * 250 });
  }
});

test('CPU stats: Bayer phases of a mosaic with distinct channel levels return those levels', () => {
  const width = 64;
  const height = 48;
  const levels = [100, 200, 300, 400]; // phase (y&1)*2 + (x&1)
  // Each phase gets level ± 1 in equal numbers: middles level - 1 and level + 1, all deviations 1.
  const data = new Float32Array(width * height);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[y * width + x] = levels[((y & 1) << 1) | (x & 1)]! + (((x >> 1) + (y >> 1)) % 2 ? -1 : 1);
  const s = imageStats(data, { width, height, mode: 'bayer' });
  assert.equal(
    s.map((p) => [p.count, p.median, p.min >= p.median - 1, p.max <= p.median + 1, p.sigma]),
    levels.map((l) => [(width * height) / 4, l, true, true, MAD_TO_SIGMA]),
  );
  // A band starting on an odd row/column sees the phases swapped: (x0, y0) = (1, 1) maps phase 0 to 3.
  const shifted = imageStats(data, { width, height, mode: 'bayer', x0: 1, y0: 1 });
  assert.equal(shifted.map((p) => p.median), [400, 300, 200, 100]);
});

test('CPU stats: per-tile medians of a gradient image sit at the tile centres', () => {
  const width = 100;
  const height = 70;
  const tile = 32;
  const data = new Float32Array(width * height);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[y * width + x] = x + 3 * y;
  const t = tileStats(data, { width, height, tile });
  assert.equal([t.tilesX, t.tilesY], [4, 3]);
  for (let ty = 0; ty < t.tilesY; ty++) {
    for (let tx = 0; tx < t.tilesX; tx++) {
      const x0 = tx * tile;
      const y0 = ty * tile;
      const w = Math.min(tile, width - x0);
      const h = Math.min(tile, height - y0);
      // x + 3y over a w x h block is symmetric about its centre, so the median is the centre value.
      const i = ty * t.tilesX + tx;
      assert.is(t.median[i], x0 + (w - 1) / 2 + 3 * (y0 + (h - 1) / 2), `tile ${tx},${ty}`);
      assert.is(t.count[i], w * h);
      assert.is(t.min[i], x0 + 3 * y0);
    }
  }
});

test('CPU stats agree with the exact selection reference (planeStats), whole and per phase', () => {
  for (const [w, h, seed] of [
    [1, 1, 1],
    [3, 5, 2],
    [257, 129, 3],
    [640, 480, 4],
  ] as const) {
    const data = sky(w, h, seed, { holes: true, negative: seed === 3 });
    const whole: StatsParams = { width: w, height: h, mode: 'whole' };
    assertMatchesExact(imageStats(data, whole)[0]!, planeStats(data), `${w}x${h} whole`);
    const bayer: StatsParams = { width: w, height: h, mode: 'bayer', x0: seed & 1, y0: 0 };
    imageStats(data, bayer).forEach((s, p) => assertMatchesExact(s, planeStats(phaseSamples(data, bayer, p)), `${w}x${h} phase ${p}`));
  }
});

test('CPU tile stats equal the whole-image contract on each tile', () => {
  const width = 203;
  const height = 77;
  const tile = 64;
  const data = sky(width, height, 7, { holes: true });
  const t = tileStats(data, { width, height, tile });
  for (let ty = 0; ty < t.tilesY; ty++) {
    for (let tx = 0; tx < t.tilesX; tx++) {
      const x0 = tx * tile;
      const y0 = ty * tile;
      const w = Math.min(tile, width - x0);
      const h = Math.min(tile, height - y0);
      const sub = new Float32Array(w * h);
      for (let y = 0; y < h; y++) sub.set(data.subarray((y0 + y) * width + x0, (y0 + y) * width + x0 + w), y * w);
      const i = ty * t.tilesX + tx;
      const got: PlaneStats = { count: t.count[i]!, min: t.min[i]!, max: t.max[i]!, mean: t.mean[i]!, median: t.median[i]!, sigma: t.sigma[i]! };
      const [want] = imageStats(sub, { width: w, height: h, mode: 'whole' });
      assert.equal(got, want, `tile ${tx},${ty}`);
    }
  }
});

// ---------- GPU against the TypeScript reference ----------

const cases: [number, number, string][] = [
  [1, 1, 'single sample'],
  [3, 5, 'count % 4 = 3'],
  [7, 3, 'odd width'],
  [257, 129, 'not a multiple of the workgroup'],
  [1001, 777, 'larger, count % 4 = 1'],
];

gpuTest('GPU whole-image and Bayer stats equal the TypeScript reference (NaN, ±Inf, borders, odd sizes)', async () => {
  const ctx = gpu.ctx!;
  const before = (ctx.dispatches.get('stats_minmax') ?? 0) + (ctx.dispatches.get('stats_histogram') ?? 0);
  for (const [w, h, label] of cases) {
    const data = sky(w, h, w * 7 + h, { holes: w > 2, negative: w === 257 });
    for (const params of [
      { width: w, height: h, mode: 'whole' },
      { width: w, height: h, mode: 'bayer', x0: 1, y0: 0 },
      { width: w, height: h, mode: 'bayer', y0: 1 },
    ] as StatsParams[]) {
      const got = await imageStatsGpu(ctx, data, params);
      const want = imageStats(data, params);
      const scale = meanAbs(data);
      got.forEach((g, i) => assertSameContract(g, want[i]!, scale, `${label} ${w}x${h} ${params.mode} ${i}`));
    }
  }
  const after = (ctx.dispatches.get('stats_minmax') ?? 0) + (ctx.dispatches.get('stats_histogram') ?? 0);
  assert.ok(after >= before + cases.length * 3 * 2, 'the WGSL kernels ran');
});

gpuTest('GPU stats: degenerate data (constant, all-NaN, integer-valued with ties, ±0, subnormals)', async () => {
  const ctx = gpu.ctx!;
  const w = 33;
  const h = 9;
  const rnd = seededRandom(5);
  const sets: [string, Float32Array][] = [
    ['constant', new Float32Array(w * h).fill(7.5)],
    ['all NaN', new Float32Array(w * h).fill(NaN)],
    ['ties', Float32Array.from({ length: w * h }, () => Math.floor(rnd() * 6))],
    ['signed zeros and subnormals', Float32Array.from({ length: w * h }, (_, i) => [0, -0, 1e-40, -1e-40, 1e-45, 3][i % 6]!)],
    ['one finite sample', Float32Array.from({ length: w * h }, (_, i) => (i === 100 ? -3.25 : NaN))],
  ];
  for (const [label, data] of sets) {
    for (const mode of ['whole', 'bayer'] as const) {
      const params: StatsParams = { width: w, height: h, mode };
      const got = await imageStatsGpu(ctx, data, params);
      const want = imageStats(data, params);
      got.forEach((g, i) => assertSameContract(g, want[i]!, meanAbs(data), `${label} ${mode} ${i}`));
      if (mode === 'whole') assertMatchesExact(got[0]!, planeStats(data), `${label} vs planeStats`);
    }
  }
});

gpuTest('GPU stats over several row segments equal one pass over the whole image', async () => {
  const ctx = gpu.ctx!;
  const w = 301;
  const h = 90;
  const data = sky(w, h, 11, { holes: true });
  const cut = 37; // odd: the second segment starts on an odd row
  const a = ctx.upload(data.subarray(0, cut * w));
  const b = ctx.upload(data.subarray(cut * w));
  try {
    for (const mode of ['whole', 'bayer'] as const) {
      const params: StatsParams = { width: w, height: h, mode };
      // The caller's encoder (here empty) is submitted by the call, with the first pass appended.
      const encoder = ctx.device.createCommandEncoder();
      const got = await imageStatsResident(ctx, [{ buffer: a, y0: 0, rows: cut }, { buffer: b, y0: cut, rows: h - cut }], params, encoder);
      const want = imageStats(data, params);
      got.forEach((g, i) => assertSameContract(g, want[i]!, meanAbs(data), `segments ${mode} ${i}`));
    }
  } finally {
    ctx.pool.release(a);
    ctx.pool.release(b);
  }
});

gpuTest('GPU whole-image stats match planeStats at 1.5 Mpx', async () => {
  const ctx = gpu.ctx!;
  const w = 1500;
  const h = 1001;
  const data = sky(w, h, 21, { holes: true });
  const [got] = await imageStatsGpu(ctx, data, { width: w, height: h, mode: 'whole' });
  const exact = planeStats(data);
  // The mean is compared with the exact f64 mean using the kernel's stated bound.
  assert.ok(Math.abs(got!.mean - exact.mean) <= 48 * U * meanAbs(data), `mean ${got!.mean} vs ${exact.mean}`);
  assertMatchesExact({ ...got!, mean: exact.mean }, exact, '1.5 Mpx');
});

function tileAt(t: TileStats, i: number): PlaneStats {
  return { count: t.count[i]!, min: t.min[i]!, max: t.max[i]!, mean: t.mean[i]!, median: t.median[i]!, sigma: t.sigma[i]! };
}

gpuTest('GPU tile stats equal the TypeScript reference (edge tiles, NaN, empty tiles)', async () => {
  const ctx = gpu.ctx!;
  const before = ctx.dispatches.get('stats_tiles') ?? 0;
  for (const [w, h, tile] of [
    [203, 77, 64],
    [130, 130, 16],
    [5, 3, 4],
    [300, 200, 128],
  ] as const) {
    const data = sky(w, h, w + tile, { holes: true });
    // An all-NaN first tile row segment makes tile (0, 0) empty when it fits in the image.
    for (let y = 0; y < Math.min(tile, h); y++) for (let x = 0; x < Math.min(tile, w); x++) if (w > tile) data[y * w + x] = NaN;
    const want = tileStats(data, { width: w, height: h, tile });
    // Both workgroup shapes (the software adapter's and the hardware GPU's) on every case.
    for (const tuning of [
      { wg: 64, bins: 256 },
      { wg: 256, bins: 2048 },
    ]) {
      const got = await tileStatsGpu(ctx, data, { width: w, height: h, tile }, tuning);
      assert.equal([got.tilesX, got.tilesY], [want.tilesX, want.tilesY]);
      for (let i = 0; i < got.tilesX * got.tilesY; i++) {
        // Tile sums: f32 per vec4 lane over ≤ ceil(T² / 4 WG) + 1 terms, 4 lanes, a log2(WG) tree.
        const terms = Math.ceil((tile * (tile + 8)) / (4 * tuning.wg)) + 2 + Math.log2(tuning.wg);
        assertSameContract(tileAt(got, i), tileAt(want, i), meanAbs(data), `${w}x${h}/${tile} ${tuning.wg}/${tuning.bins} tile ${i}`, terms);
      }
    }
  }
  assert.ok((ctx.dispatches.get('stats_tiles') ?? 0) >= before + 8, 'the WGSL kernel ran');
});

gpuTest('GPU per-tile medians of a gradient image sit at the tile centres', async () => {
  const ctx = gpu.ctx!;
  const width = 250;
  const height = 130;
  const tile = 64;
  const data = new Float32Array(width * height);
  for (let y = 0; y < height; y++) for (let x = 0; x < width; x++) data[y * width + x] = 2 * x - 5 * y;
  const t = await tileStatsGpu(ctx, data, { width, height, tile });
  for (let ty = 0; ty < t.tilesY; ty++) {
    for (let tx = 0; tx < t.tilesX; tx++) {
      const w = Math.min(tile, width - tx * tile);
      const h = Math.min(tile, height - ty * tile);
      assert.is(t.median[ty * t.tilesX + tx], 2 * (tx * tile + (w - 1) / 2) - 5 * (ty * tile + (h - 1) / 2));
    }
  }
});

test.run();
