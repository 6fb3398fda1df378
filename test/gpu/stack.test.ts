// Tests of the stack kernel: the TypeScript reference against hand-computed cases (outlier
// rejection, iterations, min_fraction, winsor, median, zero weights, exact rejection tallies),
// then the WGSL kernel against the reference on seeded NaN-heavy data over every method, frame
// counts 1..300, both I/O paths, both shapes and multi-band runs. Disagreements are allowed
// only at rejection borderlines (f32 device vs f64 reference), verified and counted.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { minKeep, stack, STACK_METHODS, winsorCorrection, type StackMethod, type StackParams, type StackResult } from '../../src/cpu/stack.js';
import { expandStackTemplate, maxStackFrames, stackGpu, stackResident, type StackGpuOptions } from '../../src/gpu/kernels/stack.js';
import { splitSrc } from '../../src/gpu/kernels/src-ranges.js';
import { loadShader } from '../../src/gpu/shaders.js';
import { gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

// ---------------------------------------------------------------------------------------------
// CPU reference against hand-computed values

/** One row of pixels; pixels[p][f] is frame f of pixel p. Returns the frame-major input. */
function pixels(values: number[][]): Float32Array {
  const w = values.length;
  const n = values[0]!.length;
  const out = new Float32Array(n * w);
  values.forEach((px, p) => px.forEach((v, f) => (out[f * w + p] = v)));
  return out;
}

function params(n: number, width: number, extra: Partial<StackParams>): StackParams {
  return { width, rows: 1, frames: n, method: 'sigma', low: 3, high: 3, maxIters: 3, minFraction: 0, ...extra };
}

const run1 = (vals: number[], extra: Partial<StackParams>) => stack(pixels([vals]), params(vals.length, 1, extra));
const zeros = (n: number) => Array.from({ length: n }, () => 0);

test('reference none: normalisation v*scale+offset, weighted mean, NaN ignored, all-NaN gives NaN', () => {
  const r = stack(
    pixels([
      [10, 20, 40],
      [NaN, 4, NaN],
      [NaN, NaN, NaN],
    ]),
    params(3, 3, { method: 'none', scale: [1, 2, 0.5], offset: [0, -10, 5], weight: [1, 1, 2] }),
  );
  // Normalised [10, 30, 25] with weights [1, 1, 2]: (10 + 30 + 50) / 4.
  assert.is(r.mean[0], 22.5);
  assert.is(r.mean[1], -2);
  assert.ok(Number.isNaN(r.mean[2]!));
  assert.equal(Array.from(r.count), [3, 1, 0]);
  assert.equal(Array.from(r.rejectedLow), [0, 0, 0]);
  assert.equal(Array.from(r.rejectedHigh), [0, 0, 0]);
});

test('reference sigma: 5 values with one outlier (kappa 1.5) reject it; kappa 3 cannot with N = 5', () => {
  // mean 28, sigma 36.0 (population): 100 is 2.0 sigma out. Then [10, 11, 9, 10]: mean 10, sigma 0.71, all inside.
  const r = run1([10, 11, 9, 10, 100], { low: 1.5, high: 1.5 });
  assert.is(r.mean[0], 10);
  assert.is(r.count[0], 4);
  assert.equal(Array.from(r.rejectedHigh), [0, 0, 0, 0, 1]);
  assert.equal(Array.from(r.rejectedLow), zeros(5));
  // One outlier among N samples is at most (N-1)/sqrt(N) = 1.79 sigma out for N = 5.
  const k3 = run1([10, 11, 9, 10, 100], {});
  assert.is(k3.mean[0], 28);
  assert.is(k3.count[0], 5);
});

test('reference sigma iterates with cumulative bounds; max_iters limits it', () => {
  const vals = [10, 10, 10, 10, 10, 10, 10, 10, 10, 10, 20, 1000];
  // It 1: mean 93.3, sigma 273.4 -> 1000 out. It 2: mean 10.909, sigma 2.875 -> 20 out. It 3: sigma 0, no change.
  const r = run1(vals, {});
  assert.is(r.mean[0], 10);
  assert.is(r.count[0], 10);
  assert.equal(Array.from(r.rejectedHigh), [...zeros(10), 1, 1]);
  const one = run1(vals, { maxIters: 1 });
  assert.is(one.mean[0], Math.fround(120 / 11));
  assert.is(one.count[0], 11);
  assert.equal(Array.from(one.rejectedHigh), [...zeros(11), 1]);
});

test('reference sigma: min_fraction stops clipping; min_keep is ceil of the f32 product', () => {
  // [1..5]: mean 3, sigma 1.414; kappa 1 keeps [2, 3, 4]. Next: mean 3, sigma 0.816 would keep only 3.
  const half = run1([1, 2, 3, 4, 5], { low: 1, high: 1, minFraction: 0.5 }); // keep >= ceil(2.5) = 3
  assert.is(half.mean[0], 3);
  assert.is(half.count[0], 3);
  assert.equal(Array.from(half.rejectedLow), [1, 0, 0, 0, 0]);
  assert.equal(Array.from(half.rejectedHigh), [0, 0, 0, 0, 1]);
  const most = run1([1, 2, 3, 4, 5], { low: 1, high: 1, minFraction: 0.7 }); // keep >= ceil(3.5) = 4: first step refused
  assert.is(most.count[0], 5);
  assert.equal(Array.from(most.rejectedLow), zeros(5));
  assert.equal(Array.from(most.rejectedHigh), zeros(5));
  // f32(0.4) * 10 rounds to exactly 4 in f32 (the shader's arithmetic); in f64 it is 4.0000000596 -> 5.
  assert.is(minKeep(10, Math.fround(0.4)), 4);
  assert.is(minKeep(0, 0.5), 1);
});

test('reference winsor: winsorized centre/sigma reject an outlier plain sigma clipping keeps', () => {
  assert.ok(Math.abs(winsorCorrection(1.5) - 1.1334) < 2e-4, `winsor correction ${winsorCorrection(1.5)} (Siril uses 1.134)`);
  const vals = [10, 10, 10, 10, 10, 10, 10, 10, 10, 50];
  // mean 14, sigma 12: 50 is 3.0 sigma out, inside kappa 3.2.
  const sig = run1(vals, { low: 3.2, high: 3.2, maxIters: 1 });
  assert.is(sig.mean[0], 14);
  assert.is(sig.count[0], 10);
  // Winsorize at 14 +- 1.5*12 = [-4, 32]: mean 12.2, sigma 1.1334 * 6.6 = 7.48; 50 > 12.2 + 3.2 * 7.48 = 36.1.
  const win = run1(vals, { method: 'winsor', low: 3.2, high: 3.2, maxIters: 1 });
  assert.is(win.mean[0], 10);
  assert.is(win.count[0], 9);
  assert.equal(Array.from(win.rejectedHigh), [...zeros(9), 1]);
  assert.equal(Array.from(win.rejectedLow), zeros(10));
});

test('reference median: odd, even, NaN, all-NaN; weights unused', () => {
  const r = stack(
    pixels([
      [3, 1, NaN, 2],
      [4, 1, 3, 2],
      [NaN, NaN, NaN, NaN],
      [7, NaN, NaN, NaN],
    ]),
    params(4, 4, { method: 'median', weight: [0, 0, 0, 1] }),
  );
  assert.is(r.mean[0], 2);
  assert.is(r.mean[1], 2.5);
  assert.ok(Number.isNaN(r.mean[2]!));
  assert.is(r.mean[3], 7);
  assert.equal(Array.from(r.count), [3, 4, 0, 1]);
});

test('reference weights with zeros: zero-weight samples count but do not move the mean', () => {
  const r = stack(pixels([[100, 1, 3], [100, NaN, NaN]]), params(3, 2, { method: 'none', weight: [0, 1, 1] }));
  assert.is(r.mean[0], 2);
  assert.equal(Array.from(r.count), [3, 1]);
  // The only valid sample weighs nothing: no mean, but the sample is counted.
  assert.ok(Number.isNaN(r.mean[1]!));
  const s = stack(pixels([[100, 1, 3], [100, NaN, NaN]]), params(3, 2, { weight: [0, 1, 1] }));
  assert.is(s.mean[0], 2);
  assert.ok(Number.isNaN(s.mean[1]!));
});

test('reference rejected counts are exact: per-frame totals equal the per-pixel count of rejections', () => {
  const { frames, p } = dataset(23, 17, 9, 5);
  for (const method of ['sigma', 'winsor'] as const) {
    const r = stack(frames, { ...p, method });
    const rejected = [...r.rejectedLow, ...r.rejectedHigh].reduce((a, b) => a + b, 0);
    assert.ok(rejected > 0, `${method}: the data makes it reject`);
    assert.is(rejected, validCount(frames, p).reduce((a, v, i) => a + v - r.count[i]!, 0));
  }
});

test('template: unrolled expansion leaves no loop markers, and validation refuses bad parameters', () => {
  const src = loadShader('stack/stack.wgsl');
  const code = expandStackTemplate(src, 3, { resident: true, k: 4, rpi: 2 }, false);
  assert.not.match(code, /^\s*for \(.*\/\/ @unroll\s*$|^\s*\} \/\/ @end-unroll/m);
  assert.match(code, /v\[2u\] = load_norm\(2u\)/);
  assert.match(code, /const N: u32 = 3u;/);
  assert.match(code, /let r = VF\(src\[i\], src\[i \+ 1u\], src\[i \+ 2u\], src\[i \+ 3u\]\);/);
  const streaming = expandStackTemplate(src, 300, { resident: false, k: 4, rpi: 1 }, true);
  assert.match(streaming, /for \(var f = 0u; f < N; f\+\+\) \{ \/\/ @unroll/);
  assert.match(streaming, /const NV: u32 = 1u;/);
  assert.throws(() => stack(new Float32Array(4), params(2, 2, { weight: [1, -1] })), /negative/);
  assert.throws(() => stack(new Float32Array(3), params(2, 2, {})), /holds 3 samples/);
  assert.throws(() => stack(new Float32Array(4), params(2, 2, { minFraction: 1.5 })), /minFraction/);
});

// ---------------------------------------------------------------------------------------------
// GPU against the reference

/**
 * Seeded data with everything the kernel must survive: sky + gradient, sigma-10 noise, high and
 * low outliers, 5% scattered NaN, NaN-heavy pixels (every 7th: 70% NaN), all-NaN pixels (every
 * 13th), a pixel whose only valid sample has weight 0, a zero-weight frame, and per-frame
 * scale/offset.
 */
function dataset(width: number, rows: number, n: number, seed: number): { frames: Float32Array; p: StackParams } {
  const rnd = seededRandom(seed);
  const plane = width * rows;
  const frames = new Float32Array(n * plane);
  for (let f = 0; f < n; f++) {
    for (let i = 0; i < plane; i++) {
      let v = 1000 + 0.05 * (i % width) + 0.1 * Math.floor(i / width) + 10 * (rnd() + rnd() + rnd() + rnd() - 2) * Math.sqrt(3);
      const u = rnd();
      if (u < 0.03) v += 300 + 3000 * rnd();
      else if (u < 0.045) v -= 100 + 500 * rnd();
      if (rnd() < 0.05 || (i % 7 === 3 && rnd() < 0.7) || i % 13 === 5) v = NaN;
      if (i === 1 && n > 2) v = f === 1 ? 1234 : NaN;
      frames[f * plane + i] = v;
    }
  }
  const p: StackParams = {
    width,
    rows,
    frames: n,
    method: 'sigma',
    low: 3,
    high: 2.5,
    maxIters: 3,
    minFraction: 0.4,
    scale: Array.from({ length: n }, (_, f) => 1 + 0.02 * (f % 5)),
    offset: Array.from({ length: n }, (_, f) => -3 * f),
    weight: Array.from({ length: n }, (_, f) => (f === 1 && n > 2 ? 0 : 1 / (1 + 0.1 * f))),
  };
  return { frames, p };
}

function validCount(frames: Float32Array, p: StackParams): number[] {
  const plane = p.width * p.rows;
  const out = new Array<number>(plane).fill(0);
  for (let f = 0; f < p.frames; f++) for (let i = 0; i < plane; i++) if (!Number.isNaN(frames[f * plane + i]!)) out[i]!++;
  return out;
}

// Tolerance on the mean: 1e-5 relative. The device sums in f32 in frame order (error up to about
// N * 2^-24 = 4e-6 relative for N = 70), the reference in f64; llvmpipe also evaluates fma() of
// the normalisation as mul + add, so normalised samples may differ by 1 ulp. A bug (a wrong
// sample in or out) moves the mean by ~sigma/N = 0.1 or more, 10x above this tolerance.
const REL_TOL = 1e-5;

const close = (a: number, b: number) => (Number.isNaN(a) || Number.isNaN(b) ? Number.isNaN(a) === Number.isNaN(b) : Math.abs(a - b) <= REL_TOL * Math.max(1, Math.abs(b)));

/**
 * A pixel where device (f32) and reference (f64) disagree is accepted only as a rejection
 * borderline: some relative change of 1e-5 or 1e-4 of the kappas makes the reference reach the
 * device's survivor count and mean. f32 rounding moves the bounds by ~1e-7 of the sample
 * values, i.e. ~3e-6 of k*sigma for this data.
 */
function isBorderline(frames: Float32Array, p: StackParams, i: number, count: number, mean: number): boolean {
  const plane = p.width * p.rows;
  const px = new Float32Array(p.frames);
  for (let f = 0; f < p.frames; f++) px[f] = frames[f * plane + i]!;
  for (const e of [1e-5, 1e-4]) {
    for (const [a, b] of [[1, 1], [1, -1], [-1, 1], [-1, -1]] as const) {
      const r = stack(px, { ...p, width: 1, rows: 1, low: p.low * (1 + a * e), high: p.high * (1 + b * e) });
      if (r.count[0] === count && close(mean, r.mean[0]!)) return true;
    }
  }
  return false;
}

/** Compares device and reference; returns the number of borderline pixels (asserted rare). */
function compare(label: string, frames: Float32Array, p: StackParams, got: StackResult, want: StackResult): number {
  const plane = p.width * p.rows;
  let borderline = 0;
  for (let i = 0; i < plane; i++) {
    if (got.count[i] === want.count[i] && close(got.mean[i]!, want.mean[i]!)) continue;
    const where = `${label}: pixel ${i} device mean ${got.mean[i]} count ${got.count[i]}, reference ${want.mean[i]} count ${want.count[i]}`;
    assert.ok(p.method === 'sigma' || p.method === 'winsor', where);
    assert.ok(isBorderline(frames, p, i, got.count[i]!, got.mean[i]!), `${where} (not a rejection borderline)`);
    borderline++;
  }
  // At most 1 in 1000 pixels (and at least one allowed in small images); reported when seen.
  assert.ok(borderline <= Math.max(1, plane / 1000), `${label}: ${borderline} borderline pixels of ${plane}`);
  if (borderline > 0) console.log(`  [stack] ${label}: ${borderline} borderline pixel(s) of ${plane} (f32 vs f64 at a bound)`);
  // Device tallies are exact: their total equals the device's own per-pixel rejections...
  const valid = validCount(frames, p);
  const total = [...got.rejectedLow, ...got.rejectedHigh].reduce((a, b) => a + b, 0);
  assert.is(total, valid.reduce((a, v, i) => a + v - got.count[i]!, 0), `${label}: device tallies vs device counts`);
  // ...and per frame equal the reference's, up to one sample per borderline pixel.
  for (let f = 0; f < p.frames; f++) {
    assert.ok(Math.abs(got.rejectedLow[f]! - want.rejectedLow[f]!) <= borderline, `${label}: frame ${f} low ${got.rejectedLow[f]} vs ${want.rejectedLow[f]}`);
    assert.ok(Math.abs(got.rejectedHigh[f]! - want.rejectedHigh[f]!) <= borderline, `${label}: frame ${f} high ${got.rejectedHigh[f]} vs ${want.rejectedHigh[f]}`);
  }
  if (p.method === 'none' || p.method === 'median') assert.is(total, 0, `${label}: ${p.method} rejects nothing`);
  return borderline;
}

interface Case {
  n: number;
  width: number;
  rows: number;
  options?: StackGpuOptions;
  note: string;
}

// Widths: odd ones take the scalar I/O path, multiples of 4 the vector one; rows are odd, so
// the last invocation's second row (RPI = 2) lies outside the band.
const CASES: Case[] = [
  { n: 1, width: 41, rows: 7, note: 'N=1 scalar I/O' },
  { n: 2, width: 64, rows: 9, note: 'N=2 vector I/O' },
  { n: 5, width: 37, rows: 11, note: 'N=5 scalar I/O' },
  { n: 5, width: 38, rows: 5, options: { shape: { k: 2 } }, note: 'N=5 K=2 vector I/O' },
  { n: 16, width: 132, rows: 21, note: 'N=16 vector I/O' },
  { n: 16, width: 132, rows: 21, options: { shape: { resident: false, rpi: 1 } }, note: 'N=16 streaming shape' },
  { n: 16, width: 101, rows: 13, options: { bandRows: 4 }, note: 'N=16 scalar I/O, 4 bands of 4 rows' },
  { n: 33, width: 45, rows: 13, note: 'N=33 scalar I/O' },
  { n: 70, width: 68, rows: 5, options: { shape: { resident: false, rpi: 1 } }, note: 'N=70 streaming, vector I/O' },
];

for (const method of STACK_METHODS) {
  gpuTest(`GPU stack ${method} equals the reference: N in {1, 2, 5, 16, 33, 70}, NaN-heavy and all-NaN pixels, zero weights, borders`, async () => {
    const ctx = gpu.ctx!;
    const before = ctx.dispatches.get('stack') ?? 0;
    let borderline = 0;
    for (const c of CASES) {
      const { frames, p } = dataset(c.width, c.rows, c.n, 1000 * c.n + c.width);
      const params = { ...p, method: method as StackMethod };
      const got = await stackGpu(ctx, frames, params, c.options);
      borderline += compare(`${method} ${c.note}`, frames, params, got, stack(frames, params));
    }
    assert.ok((ctx.dispatches.get('stack') ?? 0) >= before + CASES.length, 'the WGSL kernel ran');
    assert.equal(ctx.uncapturedErrors, []);
    if (method === 'none' || method === 'median') assert.is(borderline, 0);
  });
}

gpuTest('GPU stack: rejected counts are exact per frame on data without borderline samples', async () => {
  // Integer samples and kappas that put no sample near a bound: device and reference must agree exactly.
  const width = 9;
  const n = 8;
  const base = [100, 101, 99, 100, 102, 98, 100, 101];
  const frames = new Float32Array(n * width);
  for (let x = 0; x < width; x++) for (let f = 0; f < n; f++) frames[f * width + x] = base[(f + x) % n]! + (f === x % n ? 50 : 0) - (f === (x + 3) % n && x % 2 ? 40 : 0);
  for (const method of ['sigma', 'winsor'] as const) {
    const p = params(n, width, { method, low: 2, high: 2, maxIters: 3, minFraction: 0.2 });
    const got = await stackGpu(gpu.ctx!, frames, p);
    const want = stack(frames, p);
    assert.equal(Array.from(got.count), Array.from(want.count), `${method} counts`);
    assert.equal(Array.from(got.rejectedLow), Array.from(want.rejectedLow), `${method} low`);
    assert.equal(Array.from(got.rejectedHigh), Array.from(want.rejectedHigh), `${method} high`);
    assert.ok(want.rejectedHigh.reduce((a, b) => a + b, 0) === width, `${method}: every +50 outlier rejected`);
  }
});

gpuTest('GPU stack: hand cases give the hand-computed results on the device', async () => {
  const ctx = gpu.ctx!;
  const r = await stackGpu(ctx, pixels([[10, 11, 9, 10, 100]]), params(5, 1, { low: 1.5, high: 1.5 }));
  assert.is(r.mean[0], 10);
  assert.is(r.count[0], 4);
  assert.equal(Array.from(r.rejectedHigh), [0, 0, 0, 0, 1]);
  const w = await stackGpu(ctx, pixels([[10, 10, 10, 10, 10, 10, 10, 10, 10, 50]]), params(10, 1, { method: 'winsor', low: 3.2, high: 3.2, maxIters: 1 }));
  assert.is(w.mean[0], 10);
  assert.is(w.count[0], 9);
  const m = await stackGpu(ctx, pixels([[3, 1, NaN, 2], [4, 1, 3, 2], [NaN, NaN, NaN, NaN]]), params(4, 3, { method: 'median' }));
  assert.is(m.mean[0], 2);
  assert.is(m.mean[1], 2.5);
  assert.ok(Number.isNaN(m.mean[2]!));
  assert.equal(Array.from(m.count), [3, 4, 0]);
});

gpuTest('GPU stack: rows inside larger frame slots (layout rows/row0) give the compact band\'s result, tallies included', async () => {
  const ctx = gpu.ctx!;
  const W = 37;
  const slotRows = 11;
  const row0 = 3;
  const rows = 6;
  const N = 9;
  const rnd = seededRandom(12);
  const slots = Float32Array.from({ length: N * slotRows * W }, () => (rnd() < 0.03 ? NaN : rnd() < 0.02 ? 5000 : 100 + 10 * rnd()));
  const compact = new Float32Array(N * rows * W);
  for (let f = 0; f < N; f++) compact.set(slots.subarray((f * slotRows + row0) * W, (f * slotRows + row0 + rows) * W), f * rows * W);
  const p: StackParams = { width: W, rows, frames: N, method: 'sigma', low: 2.5, high: 2.5, maxIters: 3, minFraction: 0.4, scale: Array.from({ length: N }, () => 0.9 + 0.2 * rnd()), offset: Array.from({ length: N }, () => rnd()), weight: Array.from({ length: N }, () => 0.5 + rnd()) };
  const want = await stackGpu(ctx, compact, p);
  const src = ctx.upload(slots);
  const mean = ctx.storage(rows * W * 4);
  const count = ctx.storage(rows * W * 4);
  const rejected = ctx.upload(new Uint32Array(2 * N));
  try {
    await stackResident(ctx, src, mean, count, rejected, p, undefined, { layout: { rows: slotRows, row0 } });
    const gotMean = await ctx.readFloat32(mean, rows * W);
    const gotCount = new Uint32Array(await ctx.readback(count, rows * W * 4));
    const gotRejected = new Uint32Array(await ctx.readback(rejected, 2 * N * 4));
    assert.ok(gotMean.every((v, i) => Object.is(v, want.mean[i])), 'means differ');
    assert.equal(Array.from(gotCount), Array.from(want.count));
    assert.equal(Array.from(gotRejected), [...want.rejectedLow, ...want.rejectedHigh]);
    let error: Error | undefined;
    await stackResident(ctx, src, mean, count, rejected, p, undefined, { layout: { rows: slotRows, row0: 6 } }).catch((e: Error) => (error = e));
    assert.match(error?.message ?? '', /outside the 11 rows per frame/);
  } finally {
    for (const b of [src, mean, count, rejected]) ctx.pool.release(b);
  }
});

/** A binding size that makes a band of n frames of frameBytes need `ranges` frame-range windows. */
function bindingFor(n: number, frameBytes: number, ranges: number, align: number): number {
  return Math.ceil(n / ranges) * frameBytes + align;
}

const sameResult = (label: string, got: StackResult, want: StackResult) => {
  assert.ok(got.mean.every((v, i) => Object.is(v, want.mean[i])), `${label}: means differ from the one-binding run`);
  assert.equal(Array.from(got.count), Array.from(want.count), `${label}: counts`);
  assert.equal([...got.rejectedLow, ...got.rejectedHigh], [...want.rejectedLow, ...want.rejectedHigh], `${label}: tallies`);
};

// A band larger than one binding is bound as frame ranges (src-ranges.ts): forced here with a
// small binding size, every method and shape gives the one-binding result bit for bit (same f32
// sums in frame order) and so the reference's.
const RANGE_CASES: Case[] = [
  { n: 33, width: 45, rows: 13, note: 'N=33 scalar I/O, 3 ranges' },
  { n: 40, width: 64, rows: 9, note: 'N=40 vector I/O, 3 ranges' },
  { n: 5, width: 38, rows: 5, options: { shape: { k: 2 } }, note: 'N=5 K=2 vector I/O, 3 ranges' },
  { n: 70, width: 68, rows: 5, options: { shape: { resident: false, rpi: 1 } }, note: 'N=70 streaming, 3 ranges' },
];
for (const method of STACK_METHODS) {
  gpuTest(`GPU stack ${method} over several frame ranges (bindings) equals the one-binding run and the reference`, async () => {
    const ctx = gpu.ctx!;
    const align = ctx.limits.minStorageBufferOffsetAlignment;
    for (const c of RANGE_CASES) {
      const { frames, p } = dataset(c.width, c.rows, c.n, 1000 * c.n + c.width);
      const params = { ...p, method: method as StackMethod };
      const frameBytes = c.rows * c.width * 4;
      const maxBindingBytes = bindingFor(c.n, frameBytes, 3, align);
      const split = splitSrc({ buffer: {} as GPUBuffer, offset: 0, size: c.n * frameBytes }, c.n, c.rows * c.width, maxBindingBytes, align, 8);
      assert.is(split.count, 3, `${c.note}: windows`);
      const one = await stackGpu(ctx, frames, params, c.options);
      const got = await stackGpu(ctx, frames, params, { ...c.options, maxBindingBytes });
      sameResult(`${method} ${c.note}`, got, one);
      compare(`${method} ${c.note}`, frames, params, got, stack(frames, params));
    }
    assert.equal(ctx.uncapturedErrors, []);
  });
}

gpuTest('GPU stack: frame ranges with rows inside larger frame slots (the engine\'s layout), windows not on frame boundaries', async () => {
  const ctx = gpu.ctx!;
  // 37 px x 11 rows = 1628 B per frame: window starts fall between alignment boundaries.
  const W = 37;
  const slotRows = 11;
  const row0 = 3;
  const rows = 6;
  const N = 23;
  const rnd = seededRandom(13);
  const slots = Float32Array.from({ length: N * slotRows * W }, () => (rnd() < 0.03 ? NaN : rnd() < 0.02 ? 5000 : 100 + 10 * rnd()));
  const p: StackParams = { width: W, rows, frames: N, method: 'sigma', low: 2.5, high: 2.5, maxIters: 3, minFraction: 0.4, scale: Array.from({ length: N }, () => 0.9 + 0.2 * rnd()), offset: Array.from({ length: N }, () => rnd()), weight: Array.from({ length: N }, () => 0.5 + rnd()) };
  const src = ctx.upload(slots);
  const mean = ctx.storage(rows * W * 4);
  const count = ctx.storage(rows * W * 4);
  const rejected = ctx.storage(2 * N * 4);
  const run = async (maxBindingBytes?: number): Promise<StackResult> => {
    ctx.write(rejected, new Uint32Array(2 * N));
    await stackResident(ctx, { buffer: src, offset: 0, size: N * slotRows * W * 4 }, mean, count, rejected, p, undefined, { layout: { rows: slotRows, row0 }, maxBindingBytes });
    const t = new Uint32Array(await ctx.readback(rejected, 2 * N * 4));
    return { mean: await ctx.readFloat32(mean, rows * W), count: new Uint32Array(await ctx.readback(count, rows * W * 4)), rejectedLow: t.slice(0, N), rejectedHigh: t.slice(N) };
  };
  try {
    const one = await run();
    for (const ranges of [2, 4, 7]) sameResult(`${ranges} ranges`, await run(bindingFor(N, slotRows * W * 4, ranges, ctx.limits.minStorageBufferOffsetAlignment)), one);
    let error: Error | undefined;
    await run(slotRows * W * 4).catch((e: Error) => (error = e));
    assert.match(error?.message ?? '', /storage bindings/);
  } finally {
    for (const b of [src, mean, count, rejected]) ctx.pool.release(b);
  }
});

gpuTest('GPU stack: the source as written compiles; the frame limit follows the uniform size', async () => {
  const ctx = gpu.ctx!;
  const module = ctx.device.createShaderModule({ code: loadShader('stack/stack.wgsl') });
  const info = await module.getCompilationInfo();
  assert.equal(info.messages.filter((m) => m.type === 'error').map((m) => m.message), []);
  // 48-byte header + 12 bytes per frame in 16-byte slots within 64 KiB.
  assert.is(maxStackFrames({ ...ctx.limits, maxUniformBufferBindingSize: 65536, maxComputeWorkgroupStorageSize: 32768 } as GPUSupportedLimits), 5457);
  // Large N takes the streaming shape and stays exact.
  const { frames, p } = dataset(6, 2, 300, 7);
  for (const method of ['sigma', 'median'] as const) compare(`${method} N=300`, frames, { ...p, method }, await stackGpu(ctx, frames, { ...p, method }), stack(frames, { ...p, method }));
});

test.run();
