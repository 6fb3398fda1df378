// shaders/stack/reject_noise.wgsl against its TypeScript reference src/cpu/reject-noise.ts on
// seeded bands with what the kernel must survive: sky with a gradient and σ-10 noise, stars
// whose peaks vary by frame (seeing), trails, high and low outliers, 5 % scattered NaN,
// NaN-heavy and all-NaN pixels, a zero-weight frame, a frame without a noise estimate,
// per-frame scale/offset/σ/K/α, per-pixel start centre (the median, NaN in places) and
// background (NaN in places), rows inside larger frame slots; sigma and winsor; N 1…70.
// Agreement: counts equal and means within 1e-5 relative, except at rejection borderlines
// (f32 device vs f64 reference): a pixel that differs must be reproduced by the reference with
// the κs moved by 1e-5 or 1e-4 relative, and such pixels stay below 1 in 1000. Device tallies
// are exact (their total equals the device's own per-pixel rejections) and per frame equal the
// reference's up to one per borderline pixel. The GPU path must really run. Both shapes of the
// template: samples in registers (N <= REJECT_RESIDENT_MAX_FRAMES) and re-read per pass (above); the
// frame table from the uniform, and from storage where it is too large for the uniform.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rejectNoiseModel, type NoiseRejectParams, type NoiseRejectPixels } from '../../src/cpu/reject-noise.js';
import { stack, type StackResult } from '../../src/cpu/stack.js';
import { expandRejectNoiseTemplate, REJECT_RESIDENT_MAX_FRAMES, rejectNoiseGpu, rejectResident, rejectTableInUniform } from '../../src/gpu/kernels/reject-noise.js';
import type { DeviceInfo } from '../../src/gpu/device.js';
import { splitSrc } from '../../src/gpu/kernels/src-ranges.js';
import { loadShader } from '../../src/gpu/shaders.js';
import { gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

interface Case {
  n: number;
  width: number;
  rows: number;
  srcRows: number;
  srcRow0: number;
  note: string;
}

function dataset(c: Case, seed: number): { frames: Float32Array; p: NoiseRejectParams; px: NoiseRejectPixels } {
  const rnd = seededRandom(seed);
  const g = () => (rnd() + rnd() + rnd() + rnd() - 2) * Math.sqrt(3);
  const { width: W, rows: R, n } = c;
  const frames = new Float32Array(n * c.srcRows * W);
  const peak = Array.from({ length: n }, () => 0.6 + 1.2 * rnd());
  for (let f = 0; f < n; f++) {
    for (let r = 0; r < c.srcRows; r++) {
      for (let x = 0; x < W; x++) {
        const y = r - c.srcRow0;
        let v = 1000 + 0.3 * x + 0.2 * y + 10 * g();
        v += 2500 * peak[f]! * Math.exp(-((x - W / 3) ** 2 + (y - R / 2) ** 2) / (3 * peak[f]!));
        if (f === 1 && Math.abs(y - 0.3 * x) < 1.5) v += 120; // a trail
        const u = rnd();
        if (u < 0.02) v += 200 + 3000 * rnd();
        else if (u < 0.03) v -= 100 + 400 * rnd();
        const i = r * W + x;
        if (rnd() < 0.05 || (i % 7 === 3 && rnd() < 0.7) || i % 13 === 5) v = NaN;
        frames[(f * c.srcRows + r) * W + x] = v;
      }
    }
  }
  const plane = W * R;
  // The start centre: the median of the band's rows (NaN in every 11th pixel: mean start).
  const compact = new Float32Array(n * plane);
  for (let f = 0; f < n; f++) compact.set(frames.subarray((f * c.srcRows + c.srcRow0) * W, (f * c.srcRows + c.srcRow0 + R) * W), f * plane);
  const centre = stack(compact, { width: W, rows: R, frames: n, method: 'median', low: 3, high: 3, maxIters: 1, minFraction: 0 }).mean;
  for (let i = 0; i < plane; i += 11) centre[i] = NaN;
  const background = Float32Array.from({ length: plane }, (_, i) => (i % 17 === 2 ? NaN : 1000 + 0.3 * (i % W)));
  const p: NoiseRejectParams = {
    width: W,
    rows: R,
    frames: n,
    method: 'sigma',
    low: 3,
    high: 2.5,
    maxIters: 3,
    minFraction: 0.4,
    scale: Array.from({ length: n }, (_, f) => 1 + 0.02 * (f % 5)),
    offset: Array.from({ length: n }, (_, f) => -3 * f),
    weight: Array.from({ length: n }, (_, f) => (f === 2 && n > 3 ? 0 : 1 / (1 + 0.1 * f))),
    noise: Array.from({ length: n }, (_, f) => (f === 3 && n > 4 ? 0 : 10 * (1 + 0.02 * (f % 5)))),
    poisson: Array.from({ length: n }, (_, f) => 0.25 + 0.01 * f),
    seeing: Array.from({ length: n }, () => 0.3 + 0.5 * rnd()),
    srcRows: c.srcRows,
    srcRow0: c.srcRow0,
  };
  return { frames, p, px: { centre, background } };
}

const REL_TOL = 1e-5;
const close = (a: number, b: number) => (Number.isNaN(a) || Number.isNaN(b) ? Number.isNaN(a) === Number.isNaN(b) : Math.abs(a - b) <= REL_TOL * Math.max(1, Math.abs(b)));

/** The reference at one pixel with the κs (and winsor k) moved by e in the directions (a, b). */
function isBorderline(frames: Float32Array, p: NoiseRejectParams, px: NoiseRejectPixels, i: number, count: number, mean: number): boolean {
  const x = i % p.width;
  const r = (i - x) / p.width;
  const srcRows = p.srcRows ?? p.rows;
  const one = new Float32Array(p.frames);
  for (let f = 0; f < p.frames; f++) one[f] = frames[(f * srcRows + (p.srcRow0 ?? 0) + r) * p.width + x]!;
  const pix = { centre: px.centre ? Float32Array.of(px.centre[i]!) : null, background: Float32Array.of(px.background[i]!) };
  for (const e of [1e-5, 1e-4]) {
    for (const [a, b] of [[1, 1], [1, -1], [-1, 1], [-1, -1]] as const) {
      const q = { ...p, width: 1, rows: 1, srcRows: 1, srcRow0: 0, low: p.low * (1 + a * e), high: p.high * (1 + b * e), winsorK: (p.winsorK ?? 1.5) * (1 + a * e) };
      const res = rejectNoiseModel(one, q, pix);
      if (res.count[0] === count && close(mean, res.mean[0]!)) return true;
    }
  }
  return false;
}

function compare(label: string, frames: Float32Array, p: NoiseRejectParams, px: NoiseRejectPixels, got: StackResult, want: StackResult): number {
  const plane = p.width * p.rows;
  let borderline = 0;
  for (let i = 0; i < plane; i++) {
    if (got.count[i] === want.count[i] && close(got.mean[i]!, want.mean[i]!)) continue;
    assert.ok(isBorderline(frames, p, px, i, got.count[i]!, got.mean[i]!), `${label}: pixel ${i} device ${got.mean[i]} (${got.count[i]}) vs reference ${want.mean[i]} (${want.count[i]}), not a borderline`);
    borderline++;
  }
  assert.ok(borderline <= Math.max(1, plane / 1000), `${label}: ${borderline} borderline pixels of ${plane}`);
  if (borderline > 0) console.log(`  [reject_noise] ${label}: ${borderline} borderline pixel(s) of ${plane}`);
  // Device tallies: exact against the device's own counts, per frame within the borderlines.
  const srcRows = p.srcRows ?? p.rows;
  let valid = 0;
  for (let f = 0; f < p.frames; f++) for (let r = 0; r < p.rows; r++) for (let x = 0; x < p.width; x++) if (!Number.isNaN(frames[(f * srcRows + (p.srcRow0 ?? 0) + r) * p.width + x]!)) valid++;
  const kept = Array.from(got.count).reduce((a, b) => a + b, 0);
  const total = [...got.rejectedLow, ...got.rejectedHigh].reduce((a, b) => a + b, 0);
  assert.is(total, valid - kept, `${label}: device tallies vs device counts`);
  for (let f = 0; f < p.frames; f++) {
    assert.ok(Math.abs(got.rejectedLow[f]! - want.rejectedLow[f]!) <= borderline, `${label}: frame ${f} low ${got.rejectedLow[f]} vs ${want.rejectedLow[f]}`);
    assert.ok(Math.abs(got.rejectedHigh[f]! - want.rejectedHigh[f]!) <= borderline, `${label}: frame ${f} high ${got.rejectedHigh[f]} vs ${want.rejectedHigh[f]}`);
  }
  return borderline;
}

const CASES: Case[] = [
  { n: 1, width: 41, rows: 7, srcRows: 7, srcRow0: 0, note: 'N=1' },
  { n: 5, width: 37, rows: 11, srcRows: 15, srcRow0: 2, note: 'N=5 in larger slots' },
  { n: 16, width: 132, rows: 21, srcRows: 21, srcRow0: 0, note: 'N=16' },
  { n: 33, width: 45, rows: 13, srcRows: 17, srcRow0: 4, note: 'N=33 in larger slots' },
  { n: 70, width: 68, rows: 5, srcRows: 5, srcRow0: 0, note: 'N=70' },
  // width % 4 = 0 takes the vector-load variant (132 and 68 above too); here with a row offset.
  { n: 9, width: 64, rows: 9, srcRows: 12, srcRow0: 3, note: 'N=9, vector loads, in larger slots' },
  // Over REJECT_RESIDENT_MAX_FRAMES: the frame loops stay rolled and each pass re-reads the band.
  { n: REJECT_RESIDENT_MAX_FRAMES + 2, width: 13, rows: 3, srcRows: 4, srcRow0: 1, note: `N=${REJECT_RESIDENT_MAX_FRAMES + 2}, streaming (samples re-read)` },
];

// Both shapes on every adapter: `auto` compiles the resident one on hardware GPUs only (rejectResident).
for (const [method, shape] of [['sigma', 'resident'], ['winsor', 'resident'], ['sigma', 'streaming'], ['winsor', 'streaming']] as const) {
  gpuTest(`GPU reject_noise ${method} (${shape} shape where N allows) equals the reference (borderlines counted), tallies exact`, async () => {
    const ctx = gpu.ctx!;
    const before = ctx.dispatches.get('reject_noise') ?? 0;
    let rejected = 0;
    for (const c of CASES) {
      const { frames, p, px } = dataset(c, 100 * c.n + c.width);
      const params = { ...p, method };
      const want = rejectNoiseModel(frames, params, px);
      const got = await rejectNoiseGpu(ctx, frames, params, px, shape);
      compare(`${method} ${shape} ${c.note}`, frames, params, px, got, want);
      rejected += [...want.rejectedLow, ...want.rejectedHigh].reduce((a, b) => a + b, 0);
    }
    assert.ok(rejected > 100, `the data exercises rejection (${rejected} samples rejected)`);
    assert.ok((ctx.dispatches.get('reject_noise') ?? 0) >= before + CASES.length, 'the WGSL kernel ran');
    assert.equal(ctx.uncapturedErrors, []);
  });
}

// A band larger than one binding is bound as frame ranges (src-ranges.ts), forced here with a
// small binding size: every case gives the one-binding result bit for bit, so the reference's.
const RANGE_CASES: Case[] = [
  { n: 33, width: 45, rows: 13, srcRows: 17, srcRow0: 4, note: 'N=33 in larger slots, 3 ranges' },
  { n: 40, width: 64, rows: 9, srcRows: 12, srcRow0: 3, note: 'N=40, vector loads, in larger slots, 3 ranges' },
  { n: REJECT_RESIDENT_MAX_FRAMES + 2, width: 13, rows: 3, srcRows: 4, srcRow0: 1, note: `N=${REJECT_RESIDENT_MAX_FRAMES + 2}, streaming, 3 ranges` },
];
for (const [method, shape] of [['sigma', 'resident'], ['winsor', 'resident'], ['sigma', 'streaming'], ['winsor', 'streaming']] as const) {
  gpuTest(`GPU reject_noise ${method} (${shape}) over several frame ranges (bindings) equals the one-binding run and the reference`, async () => {
    const ctx = gpu.ctx!;
    const align = ctx.limits.minStorageBufferOffsetAlignment;
    for (const c of RANGE_CASES) {
      const { frames, p, px } = dataset(c, 100 * c.n + c.width);
      const params = { ...p, method };
      const frameBytes = c.srcRows * c.width * 4;
      const maxBindingBytes = Math.ceil(c.n / 3) * frameBytes + align;
      assert.is(splitSrc({ buffer: {} as GPUBuffer, offset: 0, size: c.n * frameBytes }, c.n, c.srcRows * c.width, maxBindingBytes, align, 8).count, 3, `${c.note}: windows`);
      const one = await rejectNoiseGpu(ctx, frames, params, px, shape);
      const got = await rejectNoiseGpu(ctx, frames, params, px, shape, maxBindingBytes);
      assert.ok(got.mean.every((v, i) => Object.is(v, one.mean[i])), `${c.note}: means differ from the one-binding run`);
      assert.equal(Array.from(got.count), Array.from(one.count), `${c.note}: counts`);
      assert.equal([...got.rejectedLow, ...got.rejectedHigh], [...one.rejectedLow, ...one.rejectedHigh], `${c.note}: tallies`);
      compare(`${method} ${shape} ${c.note}`, frames, params, px, got, rejectNoiseModel(frames, params, px));
    }
    assert.equal(ctx.uncapturedErrors, []);
  });
}

test('reject_noise template: resident shapes unroll every frame loop, streaming ones keep them rolled', () => {
  const source = loadShader('stack/reject_noise.wgsl');
  const resident = expandRejectNoiseTemplate(source, 3, true);
  assert.not.match(resident, /\/\/ @unroll\s*$/m);
  assert.match(resident, /const N: u32 = 3u;/);
  assert.match(resident, /v\[2u\] = x;/);
  assert.match(resident, /let raw = src\[i >> 2u\];/);
  const streaming = expandRejectNoiseTemplate(source, REJECT_RESIDENT_MAX_FRAMES + 1, false);
  assert.match(streaming, /const RESIDENT: bool = false;/);
  assert.match(streaming, /const NV: u32 = 1u;/);
  assert.equal((streaming.match(/\/\/ @unroll\s*$/gm) ?? []).length, 4);
  assert.match(streaming, /const TABLE_U: bool = true;/);
  assert.match(expandRejectNoiseTemplate(source, 3000, false, false), /const TABLE_U: bool = false;\s/);
  assert.throws(() => expandRejectNoiseTemplate(source, 3, false, false), /uniform/);
  // Forced streaming below the bound (what `auto` compiles on a software adapter).
  assert.match(expandRejectNoiseTemplate(source, 3, true, true, false), /const RESIDENT: bool = false;/);
  assert.throws(() => expandRejectNoiseTemplate(source, REJECT_RESIDENT_MAX_FRAMES + 1, false, true, true), /reasonable time/);
});

test('reject_noise shape: auto is resident on a hardware GPU up to the bound, streaming on a software adapter', () => {
  const on = (kind: 'gpu' | 'software') => ({ info: { kind } as DeviceInfo });
  assert.ok(rejectResident(on('gpu'), 29));
  assert.not.ok(rejectResident(on('gpu'), REJECT_RESIDENT_MAX_FRAMES + 1));
  assert.not.ok(rejectResident(on('software'), 29));
  assert.ok(rejectResident(on('software'), 29, 'resident'));
  assert.not.ok(rejectResident(on('gpu'), 29, 'streaming'));
});

gpuTest('GPU reject_noise with a frame table too large for the uniform (read from storage) equals the reference', async () => {
  const ctx = gpu.ctx!;
  const n = Math.floor((ctx.limits.maxUniformBufferBindingSize - 48) / 32) + 1;
  if (n > 5000) {
    console.log(`  skipped: the uniform binding takes ${ctx.limits.maxUniformBufferBindingSize} B, the table would need over 5000 frames`);
    return;
  }
  assert.not.ok(rejectTableInUniform(n, ctx.limits));
  const c: Case = { n, width: 6, rows: 2, srcRows: 2, srcRow0: 0, note: `N=${n}, table in storage` };
  const { frames, p, px } = dataset(c, 7);
  const want = rejectNoiseModel(frames, p, px);
  const got = await rejectNoiseGpu(ctx, frames, p, px);
  compare(`sigma ${c.note}`, frames, p, px, got, want);
  assert.equal(ctx.uncapturedErrors, []);
});

test.run();
