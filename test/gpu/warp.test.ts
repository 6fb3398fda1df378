import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { displacement, lanczos3Weights, lanczos3WeightsLut, samplePosition, sourceRowsFor, warpBilinear, warpLanczos3, type Affine, type WarpKernel, type WarpParams } from '../../src/cpu/warp.js';
import { lanczosShape, warpBilinearGpu, warpBilinearResident, warpLanczos3Gpu, warpLanczos3Resident } from '../../src/gpu/kernels/warp.js';
import { compareArrays, gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';
import { full, shift, similarity, starField } from '../helpers/warp-fields.js';

// ---------------------------------------------------------------------------------------------
// Test data and helpers

function maxAbs(a: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) if (Number.isFinite(a[i]!)) m = Math.max(m, Math.abs(a[i]!));
  return m;
}

function countNaN(a: ArrayLike<number>): number {
  let n = 0;
  for (let i = 0; i < a.length; i++) if (Number.isNaN(a[i]!)) n++;
  return n;
}

/** Direct Lanczos-3 kernel sinc(d)·sinc(d/3), written independently of the identities under test. */
function lanczosDirect(d: number): number {
  if (d === 0) return 1;
  if (Math.abs(d) >= 3) return 0;
  const p = Math.PI * d;
  return (Math.sin(p) / p) * (Math.sin(p / 3) / (p / 3));
}

function directWeights(t: number): number[] {
  const w = [-2, -1, 0, 1, 2, 3].map((k) => lanczosDirect(t - k));
  const s = w.reduce((a, b) => a + b, 0);
  return w.map((v) => v / s);
}

// ---------------------------------------------------------------------------------------------
// CPU reference against hand-computed values

test('CPU bilinear: hand-computed sample of a 2×2 image, closed domain, NaN outside', () => {
  const src = new Float32Array([1, 2, 3, 4]);
  const one = (sx: number, sy: number) => warpBilinear(src, { affine: shift(sx, sy), width: 1, y0: 0, rows: 1, srcWidth: 2, srcHeight: 2, srcY0: 0, srcRows: 2 })[0]!;
  // (0.25, 0.5): 0.5·(0.75·1 + 0.25·2) + 0.5·(0.75·3 + 0.25·4) = 0.5·1.25 + 0.5·3.25 = 2.25
  assert.is(one(0.25, 0.5), 2.25);
  assert.is(one(0, 0), 1);
  assert.is(one(1, 1), 4); // the far corner is inside (closed interval) and exact
  assert.is(one(1, 0.5), 3);
  assert.ok(Number.isNaN(one(-0.001, 0.5)), 'left of the first column');
  assert.ok(Number.isNaN(one(1.001, 0.5)), 'right of the last column');
  assert.ok(Number.isNaN(one(0.5, 1.001)), 'below the last row');
});

test('CPU bilinear: a NaN tap is dropped and the rest renormalised when their weight is >= 0.5', () => {
  const src = new Float32Array([NaN, 2, 3, 4]);
  const one = (sx: number, sy: number, minWeight?: number) =>
    warpBilinear(src, { affine: shift(sx, sy), width: 1, y0: 0, rows: 1, srcWidth: 2, srcHeight: 2, srcY0: 0, srcRows: 2, minWeight })[0]!;
  // At (0.5, 0.5) every tap weighs 0.25: the other three average to 3.
  assert.is(one(0.5, 0.5), 3);
  // At (0.25, 0.25) the NaN tap weighs 0.5625, the rest 0.4375 < 0.5: no value.
  assert.ok(Number.isNaN(one(0.25, 0.25)));
  // (0.75·0.25·2 + 0.25·0.75·3 + 0.25·0.25·4) / 0.4375 = 2.7142857…, accepted with minWeight 0.4.
  assert.ok(Math.abs(one(0.25, 0.25, 0.4) - (0.375 + 0.5625 + 0.25) / 0.4375) < 1e-6);
  // A zero-weight NaN tap does not matter.
  assert.is(one(1, 1), 4);
});

test('CPU Lanczos-3 weights: equal the direct sinc formula, sum to 1, delta at integers', () => {
  const w = new Float64Array(6);
  for (const t of [1e-3, 0.1, 0.25, 0.5, 0.7, 0.9, 0.999]) {
    lanczos3Weights(t, w);
    const want = directWeights(t);
    let sum = 0;
    for (let k = 0; k < 6; k++) {
      assert.ok(Math.abs(w[k]! - want[k]!) < 1e-12, `t=${t} k=${k}: ${w[k]} vs ${want[k]}`);
      sum += w[k]!;
    }
    assert.ok(Math.abs(sum - 1) < 1e-12);
  }
  // Published Lanczos-3 values at half a pixel (before normalisation): L(0.5) = 0.6079, L(1.5) = −0.1351, L(2.5) = 0.0243.
  assert.ok(Math.abs(lanczosDirect(0.5) - 0.6079) < 1e-4 && Math.abs(lanczosDirect(1.5) + 0.1351) < 1e-4 && Math.abs(lanczosDirect(2.5) - 0.0243) < 1e-4);
  lanczos3Weights(0, w);
  assert.equal(Array.from(w), [0, 0, 1, 0, 0, 0]);
  // The table the reference uses is within its stated bound of the exact weights.
  let worst = 0;
  for (let i = 0; i < 5000; i++) {
    const t = (i + 0.5) / 5000;
    lanczos3Weights(t, w);
    const exact = Array.from(w);
    lanczos3WeightsLut(t, w);
    for (let k = 0; k < 6; k++) worst = Math.max(worst, Math.abs(w[k]! - exact[k]!));
  }
  assert.ok(worst <= 4.2e-7, `table error ${worst}`);
});

test('CPU Lanczos-3: constants exactly; a linear ramp up to the kernel’s own first-moment error', () => {
  const W = 32;
  const H = 16;
  const flat = new Float32Array(W * H).fill(1234.5);
  const ramp = new Float32Array(W * H);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) ramp[y * W + x] = 100 + 10 * x;
  for (const t of [0, 0.25, 0.5, 0.8]) {
    const params = full(W, H, shift(t, 0), { clamp: 'off' });
    const f = warpLanczos3(flat, params);
    const r = warpLanczos3(ramp, params);
    // Normalised Lanczos-3 reproduces x + t + e(t), e(t) = Σ w_k·k − t (0 at t = 0 and 0.5 by
    // symmetry, |e| <= 0.02 px elsewhere: windowing the sinc costs exact linear reproduction).
    const e = directWeights(t).reduce((a, w, k) => a + w * (k - 2), 0) - t;
    assert.ok(Math.abs(e) < 0.021);
    for (let y = 0; y < H; y++) {
      for (let x = 3; x < W - 4; x++) {
        assert.ok(Math.abs(f[y * W + x]! - 1234.5) < 1e-3, `flat t=${t} (${x},${y}): ${f[y * W + x]}`);
        // Tolerance: table weights (Σ|error| 1.2e-6 × 6 taps × ~400 ADU span) plus f32 storage.
        const want = 100 + 10 * (x + t + e);
        assert.ok(Math.abs(r[y * W + x]! - want) < 2e-3, `ramp t=${t} (${x},${y}): ${r[y * W + x]} vs ${want}`);
      }
    }
  }
});

test('CPU Lanczos-3: star flux is conserved under a sub-pixel shift; deringing modes behave as documented', () => {
  const W = 48;
  const H = 48;
  for (const sigma of [1.3, 2.0]) {
    const src = new Float32Array(W * H);
    let total = 0;
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const v = 4000 * Math.exp(-((x - 23.4) ** 2 + (y - 24.1) ** 2) / (2 * sigma * sigma));
        src[y * W + x] = 500 + v;
        total += v;
      }
    }
    for (const [sx, sy] of [[0.5, 0.5], [0.37, -0.61], [-0.25, 0.25]] as const) {
      for (const clamp of ['off', 'undershoot'] as const) {
        const out = warpLanczos3(src, full(W, H, shift(sx, sy), { clamp }));
        let flux = 0;
        for (let y = 8; y < H - 8; y++) for (let x = 8; x < W - 8; x++) flux += out[y * W + x]! - 500;
        assert.ok(Math.abs(flux / total - 1) < 1e-3, `σ=${sigma} shift (${sx},${sy}) ${clamp}: flux ratio ${flux / total}`);
      }
    }
    if (sigma === 1.3) {
      // 'range' clips a peak that legitimately rises above its 2×2 neighbours: a star centred
      // between pixels, sampled at its centre by a half-pixel shift, loses ~0.6% of its flux.
      const between = new Float32Array(W * H);
      let t2 = 0;
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          const v = 4000 * Math.exp(-((x - 23.5) ** 2 + (y - 24.5) ** 2) / (2 * sigma * sigma));
          between[y * W + x] = 500 + v;
          t2 += v;
        }
      }
      const flux = (clamp: 'undershoot' | 'range') => {
        const out = warpLanczos3(between, full(W, H, shift(0.5, 0.5), { clamp }));
        let f = 0;
        for (let y = 8; y < H - 8; y++) for (let x = 8; x < W - 8; x++) f += out[y * W + x]! - 500;
        return f / t2;
      };
      assert.ok(Math.abs(flux('undershoot') - 1) < 1e-3, `undershoot flux ratio ${flux('undershoot')}`);
      assert.ok(flux('range') < 0.997, `range clamp flux ratio ${flux('range')}`);
    }
  }
  // A hot pixel on a flat sky: plain Lanczos rings below the sky, 'undershoot' does not.
  const hot = new Float32Array(W * H).fill(100);
  hot[20 * W + 20] = 10000;
  const ringing = warpLanczos3(hot, full(W, H, shift(0.5, 0.3), { clamp: 'off' }));
  const dering = warpLanczos3(hot, full(W, H, shift(0.5, 0.3), { clamp: 'undershoot' }));
  const range = warpLanczos3(hot, full(W, H, shift(0.5, 0.3), { clamp: 'range' }));
  const minOf = (a: Float32Array) => a.reduce((m, v) => (Number.isFinite(v) ? Math.min(m, v) : m), Infinity);
  assert.ok(minOf(ringing) < 0, `plain Lanczos undershoots the sky: min ${minOf(ringing)}`);
  assert.is(minOf(dering), 100);
  assert.is(minOf(range), 100);
  assert.ok(maxAbs(range) <= 10000);
});

test('CPU Lanczos-3: no data outside [−0.5, W−0.5); edge taps renormalised; NaN taps dropped', () => {
  const W = 9;
  const H = 5;
  const src = new Float32Array(W * H);
  for (let i = 0; i < src.length; i++) src[i] = 50 + i;
  const at = (img: Float32Array, sx: number, sy: number) =>
    warpLanczos3(img, { affine: shift(sx, sy), width: 1, y0: 0, rows: 1, srcWidth: W, srcHeight: H, srcY0: 0, srcRows: H, clamp: 'off' })[0]!;
  assert.ok(Number.isFinite(at(src, -0.5, 2)), 'sx = −0.5 is inside the first pixel');
  assert.ok(Number.isNaN(at(src, -0.5001, 2)));
  assert.ok(Number.isFinite(at(src, W - 0.5001, 2)));
  assert.ok(Number.isNaN(at(src, W - 0.5, 2)), 'sx = W − 0.5 belongs to no pixel');
  assert.ok(Number.isNaN(at(src, 3, -0.6)));
  // At the first column with an integer position the value is exact (delta weights).
  assert.is(at(src, 0, 0), 50);
  // Near the edge the x weights are renormalised over the in-image taps (hand computation).
  const t = 0.3;
  const w = directWeights(t);
  const inside = [0, 0, w[2]!, w[3]!, w[4]!, w[5]!]; // taps at −2 and −1 are outside
  const s = inside.reduce((a, b) => a + b, 0);
  const want = inside.reduce((a, wk, k) => a + (wk / s) * src[2 * W + (k - 2)]!, 0);
  assert.ok(Math.abs(at(src, t, 2) - want) < 1e-3, `${at(src, t, 2)} vs ${want}`);
  // A NaN at the sampled pixel itself: identity gives NaN there (all weight missing), a
  // half-pixel position next to it renormalises over the remaining taps.
  const holed = src.slice();
  holed[2 * W + 4] = NaN;
  assert.ok(Number.isNaN(at(holed, 4, 2)));
  assert.is(at(holed, 5, 2), src[2 * W + 5]);
  assert.ok(Number.isFinite(at(holed, 4.5, 2.5)));
});

test('CPU sample position: exact for dyadic shifts, within the stated bound of the f64 map elsewhere', () => {
  const d = displacement(shift(0.25, -0.375));
  assert.equal(samplePosition(d, 10, 20, false), { ix: 10, tx: 0.25, iy: 19, ty: 0.625 });
  // −0.3 → floor −1, fraction 0.7 kept to 24 bits (truncated).
  const p = samplePosition(displacement(shift(-0.3, 0)), 0, 0, false);
  assert.is(p.ix, -1);
  assert.ok(Math.abs(p.tx - 0.7) <= 2 ** -24);
  // Snapping: within 2^-20 of an integer the Lanczos position is that integer.
  assert.equal(samplePosition(displacement(shift(2.9999999, 1e-7)), 0, 0, true), { ix: 3, tx: 0, iy: 0, ty: 0 });
  // Any rotation: |error| <= 2^-33·(x + y + 1) + 2^-24 px against the exact f64 map.
  for (const deg of [0.5, 37, 90, 179.9]) {
    const A = similarity(8192, 8192, deg, 1.0003, 3.7, -2.2);
    const disp = displacement(A);
    for (const [x, y] of [[0, 0], [4095, 2047], [8191, 8191], [65535, 65535]] as const) {
      const s = samplePosition(disp, x, y, false);
      const bound = 2 ** -33 * (x + y + 1) + 2 ** -24 + 1e-9;
      assert.ok(Math.abs(s.ix + s.tx - (A[0] * x + A[1] * y + A[2])) <= bound, `${deg}° (${x},${y}) x`);
      assert.ok(Math.abs(s.iy + s.ty - (A[3] * x + A[4] * y + A[5])) <= bound, `${deg}° (${x},${y}) y`);
    }
  }
  assert.throws(() => displacement([5, 0, 0, 0, 1, 0]), /outside the supported range/);
});

test('CPU sourceRowsFor covers every row any tap reads, clamped to the image', () => {
  assert.equal(sourceRowsFor(shift(0, 0), 10, 5, 64, 100, 'lanczos3'), { y0: 8, rows: 10 }); // 10−2 … 14+3
  assert.equal(sourceRowsFor(shift(0, 0), 10, 5, 64, 100, 'bilinear'), { y0: 9, rows: 7 }); // 10−1 … 14+1
  assert.equal(sourceRowsFor(shift(0, 0), 0, 5, 64, 100, 'lanczos3'), { y0: 0, rows: 8 }); // clamped at the top
  assert.equal(sourceRowsFor(shift(0.3, 2.9999999), 10, 5, 64, 100, 'lanczos3'), { y0: 11, rows: 10 }); // snaps to 3: 13−2 … 17+3
  assert.equal(sourceRowsFor(shift(0, 500), 0, 5, 64, 100, 'lanczos3').rows, 0);
  const W = 300;
  const H = 200;
  const A = similarity(W, H, 3, 1.01, 5.5, -9.25);
  for (const kernel of ['bilinear', 'lanczos3'] as const) {
    const { y0, rows } = sourceRowsFor(A, 40, 30, W, H, kernel);
    const [before, after] = kernel === 'lanczos3' ? [2, 3] : [0, 1];
    for (let y = 40; y < 70; y++) {
      for (let x = 0; x < W; x++) {
        const sy = A[3] * x + A[4] * y + A[5];
        const lo = Math.max(0, Math.floor(sy) - before);
        const hi = Math.min(H - 1, Math.floor(sy) + after);
        if (lo > hi) continue;
        assert.ok(lo >= y0 && hi < y0 + rows, `${kernel} (${x},${y}) reads ${lo}..${hi}, band ${y0}+${rows}`);
      }
    }
  }
});

test('CPU reference refuses a source band that does not cover sourceRowsFor()', () => {
  const src = new Float32Array(64 * 10);
  const params: WarpParams = { affine: shift(0, 0), width: 64, y0: 20, rows: 10, srcWidth: 64, srcHeight: 100, srcY0: 20, srcRows: 10 };
  assert.throws(() => warpLanczos3(src, params), /need source rows 18\.\.33/);
  assert.throws(() => warpBilinear(src, params), /need source rows 19\.\.31/);
});

test('CPU band processing equals whole-image processing', () => {
  const W = 97;
  const H = 83;
  const src = starField(W, H, 5);
  const A = similarity(W, H, 0.5, 1.001, 2.3, -1.7);
  for (const kernel of ['bilinear', 'lanczos3'] as const) {
    const run = kernel === 'bilinear' ? warpBilinear : warpLanczos3;
    const whole = run(src, full(W, H, A));
    const y0 = 37;
    const rows = 21;
    const need = sourceRowsFor(A, y0, rows, W, H, kernel);
    const band = src.subarray(need.y0 * W, (need.y0 + need.rows) * W);
    const part = run(band, { affine: A, width: W, y0, rows, srcWidth: W, srcHeight: H, srcY0: need.y0, srcRows: need.rows });
    const d = compareArrays(part, whole.subarray(y0 * W, (y0 + rows) * W));
    assert.is(d.nanMismatches, 0);
    assert.is(d.maxAbs, 0, kernel);
  }
});

// ---------------------------------------------------------------------------------------------
// GPU against the reference

/*
 * Tolerances (GPU vs TypeScript reference), relative to the largest |source value| P:
 * - bilinear: both compute the same f32 displacement and weights (fma emulated exactly); only
 *   the accumulation differs (f32 vs f64, and the renormalising division): a few f32 ulps of P.
 *   Bound 1e-6 · P (measured 3e-7 · P).
 * - Lanczos-3: same displacement, but the WGSL evaluates the weights in f32 with the device's
 *   sin/cos and the reference interpolates a table of exact weights (Σ|weight error| <= 1.2e-6);
 *   each side's weight error times the taps (|taps| <= P) gives <= ~2.5e-6 · P. Bound 3e-6 · P
 *   (0.036 ADU on 12000-ADU hot pixels; measured 3.5e-7 · P). The doc's 1.4 ADU at star edges came
 *   from f32 *absolute* coordinates; both sides here share the f32 displacement.
 * NaN positions must agree exactly.
 */
const TOL = { bilinear: 1e-6, lanczos3: 3e-6 } as const;

/**
 * The kernel paths under test: Lanczos in its automatic shape (groups of 8 where valid), in
 * groups of at most 4, and forced to one pixel per invocation.
 */
type Path = 'bilinear' | 'lanczos3' | 'lanczos3-group4' | 'lanczos3-single';
const PATHS: Path[] = ['bilinear', 'lanczos3', 'lanczos3-group4', 'lanczos3-single'];
const kernelOf = (path: Path): WarpKernel => (path === 'bilinear' ? 'bilinear' : 'lanczos3');

function gpuRun(path: Path, src: Float32Array, params: WarpParams): Promise<Float32Array> {
  const ctx = gpu.ctx!;
  if (path === 'bilinear') return warpBilinearGpu(ctx, src, params);
  // 'lanczos3' is the 2-D kernel in its best shape (the separable path: warp-separable.test.ts).
  return warpLanczos3Gpu(ctx, src, params, { lanczosShape: path === 'lanczos3-single' ? 'single' : path === 'lanczos3-group4' ? 'group4' : '2d' });
}

function cpuRun(kernel: WarpKernel, src: Float32Array, params: WarpParams): Float32Array {
  return kernel === 'bilinear' ? warpBilinear(src, params) : warpLanczos3(src, params);
}

async function agree(path: Path, src: Float32Array, params: WarpParams, label: string): Promise<{ got: Float32Array; want: Float32Array }> {
  const kernel = kernelOf(path);
  const got = await gpuRun(path, src, params);
  const want = cpuRun(kernel, src, params);
  const d = compareArrays(got, want);
  const bound = TOL[kernel] * maxAbs(src);
  assert.is(d.nanMismatches, 0, `${path} ${label}: NaN positions differ`);
  assert.ok(d.maxAbs <= bound, `${path} ${label}: max |diff| ${d.maxAbs} > ${bound} at ${d.worstIndex} (gpu ${got[d.worstIndex]}, cpu ${want[d.worstIndex]})`);
  return { got, want };
}

test('Lanczos shape: grouped for near-identity and mirrored-x transforms, one pixel otherwise', () => {
  const p = (affine: Affine) => full(4096, 2048, affine);
  assert.equal(lanczosShape(p(similarity(4096, 2048, 0.5, 1.001, 12.3, -7.7))), { group: 8, flip: false });
  assert.equal(lanczosShape(p(similarity(4096, 2048, 0.5, 1.001, 12.3, -7.7)), 4), { group: 4, flip: false });
  assert.equal(lanczosShape(p(similarity(4096, 2048, 180.3, 1, 3, 4))), { group: 8, flip: true });
  // 7·sin 5° = 0.61 < 1 (groups of 8); 7·sin 15° = 1.81, 3·sin 15° = 0.78 (groups of 4).
  assert.equal(lanczosShape(p(similarity(4096, 2048, 5, 1, 0, 0))), { group: 8, flip: false });
  assert.equal(lanczosShape(p(similarity(4096, 2048, 15, 1, 0, 0))), { group: 4, flip: false });
  assert.equal(lanczosShape(p(similarity(4096, 2048, 180 + 15, 1, 0, 0))), { group: 4, flip: true });
  assert.equal(lanczosShape(p(similarity(4096, 2048, 0, 1.1, 0, 0))), { group: 8, flip: false });
  assert.equal(lanczosShape(p(similarity(4096, 2048, 0, 1.2, 0, 0))), { group: 4, flip: false });
  assert.equal(lanczosShape(p(similarity(4096, 2048, 90, 1, 0, 0))), { group: 1, flip: false });
  assert.equal(lanczosShape(p(similarity(4096, 2048, 25, 1, 0, 0))), { group: 1, flip: false });
  assert.equal(lanczosShape(p(similarity(4096, 2048, 0, 1.4, 0, 0))), { group: 1, flip: false });
});

for (const path of PATHS) {
  const kernel = kernelOf(path);
  const id = `warp_${kernel}` as const;

  gpuTest(`GPU ${path}: identity and integer shifts reproduce the source exactly`, async () => {
    const ctx = gpu.ctx!;
    const before = ctx.dispatches.get(id) ?? 0;
    const W = 261;
    const H = 77;
    const src = starField(W, H, 11);
    src[40 * W + 100] = NaN;
    const same = await gpuRun(path, src, full(W, H, shift(0, 0)));
    const d = compareArrays(same, src);
    assert.is(d.maxAbs, 0);
    assert.is(d.nanMismatches, 0);
    for (const [sx, sy] of [[3, -2], [-7, 5]] as const) {
      const got = await gpuRun(path, src, full(W, H, shift(sx, sy)));
      for (let y = 0; y < H; y++) {
        for (let x = 0; x < W; x++) {
          const u = x + sx;
          const v = y + sy;
          const want = u >= 0 && u < W && v >= 0 && v < H ? src[v * W + u]! : NaN;
          const g = got[y * W + x]!;
          if (!(Object.is(g, want) || (Number.isNaN(g) && Number.isNaN(want)))) assert.unreachable(`shift (${sx},${sy}) at (${x},${y}): ${g} vs ${want}`);
        }
      }
    }
    assert.ok((ctx.dispatches.get(id) ?? 0) >= before + 3, 'the WGSL kernel ran');
  });

  gpuTest(`GPU ${path}: sub-pixel shift + 0.5° rotation + scale 1.001 agrees with the reference`, async () => {
    const ctx = gpu.ctx!;
    const before = ctx.dispatches.get(id) ?? 0;
    for (const [W, H] of [[512, 300], [257, 131], [1, 9], [5, 3], [1023, 17], [6, 64]] as const) {
      const src = starField(W, H, W * 7 + H);
      const A = similarity(W, H, 0.5, 1.001, 12.3 * (W / 512), -7.7 * (H / 300));
      const { got } = await agree(path, src, full(W, H, A), `${W}x${H}`);
      if (W > 64) {
        // The shift leaves an uncovered margin: NaN there, values elsewhere.
        assert.ok(countNaN(got) > 0 && countNaN(got) < got.length / 4, `NaN count ${countNaN(got)}`);
      }
    }
    assert.ok((ctx.dispatches.get(id) ?? 0) >= before + 6, 'the WGSL kernel ran');
  });

  gpuTest(`GPU ${path}: large rotations, a meridian flip and scales agree with the reference`, async () => {
    const W = 203;
    const H = 141;
    const src = starField(W, H, 8);
    src[70 * W + 101] = NaN;
    for (const [deg, scale] of [[180.4, 1], [90.3, 1.002], [-30, 1], [12, 0.8], [-3, 1.25], [179.2, 0.97]] as const) {
      await agree(path, src, full(W, H, similarity(W, H, deg, scale, 0.3, -0.45)), `rotation ${deg}° scale ${scale}`);
    }
  });

  gpuTest(`GPU ${path}: NaN in the source and clamp modes agree with the reference`, async () => {
    const W = 203;
    const H = 64;
    const src = starField(W, H, 3);
    const rnd = seededRandom(77);
    for (let i = 0; i < 120; i++) src[Math.floor(rnd() * src.length)] = NaN;
    for (let x = 50; x < 60; x++) src[30 * W + x] = NaN; // a short dead row segment
    src[10 * W + 10] = Infinity;
    src[0] = NaN; // the corner pixel: edge taps read it (clamped) with weight 0
    const A = similarity(W, H, -0.7, 0.999, 0.41, 0.26);
    const modes = kernel === 'lanczos3' ? (['off', 'undershoot', 'range'] as const) : (['undershoot'] as const);
    for (const clamp of modes) {
      const { got } = await agree(path, src, full(W, H, A, { clamp }), `clamp ${clamp}`);
      // Renormalisation keeps the NaN area near the input's (about one output pixel per NaN
      // pixel) instead of 2×2 or 6×6 holes; the rest is the uncovered margin.
      assert.ok(countNaN(got) < 131 * 2 + 2 * (W + H), `NaN count ${countNaN(got)}`);
    }
    await agree(path, src, full(W, H, A, { minWeight: 0.9 }), 'minWeight 0.9');
  });

  gpuTest(`GPU ${path}: an output band at y0 > 0 from a source band equals whole-image processing`, async () => {
    const W = 300;
    const H = 220;
    const src = starField(W, H, 21);
    const A = similarity(W, H, 0.5, 1.001, 1.7, -2.2);
    const whole = await gpuRun(path, src, full(W, H, A));
    for (const [y0, rows] of [[0, 60], [60, 57], [117, 103]] as const) {
      const need = sourceRowsFor(A, y0, rows, W, H, kernel);
      const band = src.slice(need.y0 * W, (need.y0 + need.rows) * W);
      const params: WarpParams = { affine: A, width: W, y0, rows, srcWidth: W, srcHeight: H, srcY0: need.y0, srcRows: need.rows };
      const part = await gpuRun(path, band, params);
      const d = compareArrays(part, whole.subarray(y0 * W, (y0 + rows) * W));
      assert.is(d.nanMismatches, 0);
      assert.is(d.maxAbs, 0, `band ${y0}+${rows}`);
      await agree(path, band, params, `band ${y0}+${rows}`);
    }
  });
}

// The shapes share positions (exact fixed point), weights and summation order per pixel; the
// driver's compiler may still contract or schedule the f32 arithmetic differently per shape
// (llvmpipe: 1 ulp seen), so the bound is f32 rounding: 1e-6 · P, not 0.
gpuTest('GPU Lanczos: groups of 8 agree with groups of 4 to f32 rounding (same positions, weights, summation order)', async () => {
  const W = 517;
  const H = 149;
  const src = starField(W, H, 31);
  const rnd = seededRandom(5);
  for (let i = 0; i < 40; i++) src[Math.floor(rnd() * src.length)] = NaN;
  for (const [deg, scale] of [[0.5, 1.001], [-4, 0.99], [180.3, 1], [0, 1.1]] as const) {
    const params = full(W, H, similarity(W, H, deg, scale, 3.7, -2.2));
    assert.is(lanczosShape(params).group, 8, `${deg}° ${scale}`);
    const g8 = await warpLanczos3Gpu(gpu.ctx!, src, params, { lanczosShape: '2d' });
    const g4 = await warpLanczos3Gpu(gpu.ctx!, src, params, { lanczosShape: 'group4' });
    const d = compareArrays(g8, g4);
    assert.is(d.nanMismatches, 0, `${deg}° ${scale}`);
    assert.ok(d.maxAbs <= 1e-6 * maxAbs(src), `${deg}° ${scale}: max |diff| ${d.maxAbs}`);
  }
});

gpuTest('GPU Lanczos: warping into a range of a larger buffer (a frame slot) writes exactly that range', async () => {
  const ctx = gpu.ctx!;
  const W = 64;
  const H = 40;
  const src = starField(W, H, 17);
  const params = full(W, H, similarity(W, H, 0.4, 1.001, 1.3, -0.8));
  const want = await warpLanczos3Gpu(ctx, src, params);
  const plane = W * H;
  const input = ctx.upload(src);
  const slots = ctx.upload(new Float32Array(3 * plane).fill(-1));
  try {
    const encoder = ctx.device.createCommandEncoder();
    await warpLanczos3Resident(ctx, input, { buffer: slots, offset: plane * 4, size: plane * 4 }, params, encoder);
    ctx.submit(encoder);
    const got = await ctx.readFloat32(slots, 3 * plane);
    assert.ok(got.subarray(0, plane).every((v) => v === -1) && got.subarray(2 * plane).every((v) => v === -1), 'outside the range untouched');
    const d = compareArrays(got.subarray(plane, 2 * plane), want);
    assert.is(d.nanMismatches, 0);
    assert.is(d.maxAbs, 0);
  } finally {
    ctx.pool.release(input);
    ctx.pool.release(slots);
  }
});

gpuTest('GPU warp, host to host `into`: the rows land in the caller\'s array (a view of it, no fresh output array), the same values, the rest untouched', async () => {
  // STACKING with the stack on the host warps every frame of every band this way, into the
  // frame's slot of its shared host band.
  const ctx = gpu.ctx!;
  const W = 64;
  const H = 40;
  const src = starField(W, H, 23);
  const plane = W * H;
  const params = full(W, H, similarity(W, H, -0.7, 0.999, -2.1, 1.4));
  for (const kernel of ['lanczos3', 'bilinear'] as const) {
    const warp = (into?: Float32Array) => (kernel === 'lanczos3' ? warpLanczos3Gpu(ctx, src, params, into ? { into } : undefined) : warpBilinearGpu(ctx, src, params, into ? { into } : undefined));
    const want = await warp();
    const slots = new Float32Array(new SharedArrayBuffer(3 * plane * 4)).fill(-1);
    const into = slots.subarray(plane, 2 * plane);
    const got = await warp(into);
    assert.ok(got.buffer === slots.buffer && got.byteOffset === into.byteOffset && got.length === plane, `${kernel}: a view of the caller's array`);
    const d = compareArrays(got, want);
    assert.is(d.nanMismatches, 0, kernel);
    assert.is(d.maxAbs, 0, kernel);
    assert.ok(slots.subarray(0, plane).every((v) => v === -1) && slots.subarray(2 * plane).every((v) => v === -1), `${kernel}: outside the slot untouched`);
    let error: Error | undefined;
    await warp(new Float32Array(plane - 1)).catch((e: Error) => (error = e));
    assert.match(error?.message ?? '', /output array holds/);
  }
});

gpuTest('GPU warp: a source band that misses needed rows is refused', async () => {
  const ctx = gpu.ctx!;
  const W = 64;
  const src = ctx.storage(W * 10 * 4);
  const out = ctx.storage(W * 10 * 4);
  try {
    const params: WarpParams = { affine: shift(0, 0), width: W, y0: 20, rows: 10, srcWidth: W, srcHeight: 100, srcY0: 20, srcRows: 10 };
    let error: Error | undefined;
    await warpBilinearResident(ctx, src, out, params).catch((e: Error) => (error = e));
    assert.match(error?.message ?? '', /need source rows/);
  } finally {
    ctx.pool.release(src);
    ctx.pool.release(out);
  }
});

test.run();
