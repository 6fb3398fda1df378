// The separable Lanczos-3 path (shaders/warp/lanczos3_rows.wgsl + lanczos3_cols.wgsl) against its
// TypeScript reference (src/cpu/warp.ts warpLanczos3Separable), and the reference against the
// 2-D kernel's (warpLanczos3): same no-data rule, near-identical values, same star photometry.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { separableValid, warpLanczos3, warpLanczos3Separable, type Affine } from '../../src/cpu/warp.js';
import { warpLanczos3Gpu } from '../../src/gpu/kernels/warp.js';
import { compareArrays, gpu, gpuTest } from '../helpers/gpu.js';
import { full, similarity, starField } from '../helpers/warp-fields.js';

/** GPU against the separable reference: f32 trig weights and sums against f64 (3e-6 of the peak, as the 2-D kernel's test). */
const TOL = 3e-6;

const TRANSFORMS: [string, Affine][] = [
  ['sub-pixel shift', [1, 0, 0.37, 0, 1, -0.61]],
  ['0.3° and 1.0005', similarity(203, 157, 0.3, 1.0005, 3.37, -2.71)],
  ['−1°', similarity(203, 157, -1, 1, -5.2, 1.4)],
  ['2° and 0.999', similarity(203, 157, 2, 0.999, 0.5, 0.5)],
  ['integer shift', [1, 0, 3, 0, 1, -2]],
];

gpuTest('separable GPU path: matches its TypeScript reference (values, NaN positions) for near-identity transforms, whole image and bands', async () => {
  const W = 203;
  const H = 157;
  const src = starField(W, H, 7);
  // Lone NaN pixels and a NaN run (dropped taps, renormalised or NaN by min_weight).
  for (const i of [40 * W + 50, 90 * W + 120, 91 * W + 120, 92 * W + 120, 10 * W + 1]) src[i] = NaN;
  src[130 * W + 30] = Infinity;
  const ctx = gpu.ctx!;
  for (const [label, affine] of TRANSFORMS) {
    for (const [y0, rows] of [[0, H], [37, 23], [150, 7]] as const) {
      for (const clamp of ['undershoot', 'off'] as const) {
        const p = full(W, H, affine, { y0, rows, clamp });
        assert.ok(separableValid(p), label);
        const before = ctx.dispatches.get('warp_lanczos3_cols' as never) ?? 0;
        const got = await warpLanczos3Gpu(ctx, src, p, { lanczosShape: 'separable' });
        assert.ok((ctx.dispatches.get('warp_lanczos3_cols' as never) ?? 0) > before, 'the separable kernels ran');
        const want = warpLanczos3Separable(src, p);
        const d = compareArrays(got, want);
        assert.is(d.nanMismatches, 0, `${label} ${y0}+${rows} ${clamp}: NaN positions differ`);
        assert.ok(d.maxAbs <= TOL * 12000, `${label} ${y0}+${rows} ${clamp}: max |diff| ${d.maxAbs} at ${d.worstIndex} (gpu ${got[d.worstIndex]}, cpu ${want[d.worstIndex]})`);
      }
    }
  }
});

gpuTest('separable GPU path: identity and integer shifts reproduce the source exactly (NaN stays a single NaN pixel)', async () => {
  const W = 261;
  const H = 77;
  const src = starField(W, H, 11);
  src[40 * W + 100] = NaN;
  for (const [sx, sy] of [[0, 0], [3, -2], [-7, 5]] as const) {
    const got = await warpLanczos3Gpu(gpu.ctx!, src, full(W, H, [1, 0, sx, 0, 1, sy]), { lanczosShape: 'separable' });
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        const u = x + sx;
        const v = y + sy;
        const want = u >= 0 && u < W && v >= 0 && v < H ? src[v * W + u]! : NaN;
        if (!Object.is(got[y * W + x], want) && !(Number.isNaN(want) && Number.isNaN(got[y * W + x]!))) assert.unreachable(`shift (${sx}, ${sy}) at (${x}, ${y}): ${got[y * W + x]} != ${want}`);
      }
    }
  }
});

gpuTest('separable GPU path: an output band equals the same rows of the whole image exactly (groups aligned to image rows)', async () => {
  const W = 203;
  const H = 157;
  const src = starField(W, H, 13);
  const affine = similarity(W, H, 0.4, 1.0003, 1.37, -0.71);
  const whole = await warpLanczos3Gpu(gpu.ctx!, src, full(W, H, affine), { lanczosShape: 'separable' });
  for (const [y0, rows] of [[37, 23], [3, 1], [150, 7], [64, 64]] as const) {
    const p = full(W, H, affine, { y0, rows });
    const part = await warpLanczos3Gpu(gpu.ctx!, src, p, { lanczosShape: 'separable' });
    const d = compareArrays(part, whole.subarray(y0 * W, (y0 + rows) * W));
    assert.is(d.nanMismatches, 0);
    assert.is(d.maxAbs, 0, `band ${y0}+${rows}`);
  }
});

gpuTest('automatic choice: separable for near-identity transforms, the 2-D kernel for larger rotations, flips and range deringing', async () => {
  const ctx = gpu.ctx!;
  const W = 96;
  const H = 64;
  const src = starField(W, H, 5);
  const count = (): [number, number] => [ctx.dispatches.get('warp_lanczos3_cols' as never) ?? 0, ctx.dispatches.get('warp_lanczos3' as never) ?? 0];
  for (const [label, p, sep] of [
    ['0.5°', full(W, H, similarity(W, H, 0.5, 1, 0.3, 0.2)), true],
    ['5°', full(W, H, similarity(W, H, 5, 1, 0.3, 0.2)), false],
    ['flip', full(W, H, similarity(W, H, 180.2, 1, 0.3, 0.2)), false],
    ['0.5° range', full(W, H, similarity(W, H, 0.5, 1, 0.3, 0.2), { clamp: 'range' }), false],
  ] as const) {
    assert.is(separableValid(p), sep, label);
    const [c0, k0] = count();
    await warpLanczos3Gpu(ctx, src, p);
    const [c1, k1] = count();
    assert.is(c1 > c0, sep, `${label}: separable ran`);
    assert.is(k1 > k0, !sep, `${label}: 2-D kernel ran`);
  }
});

test('separable reference: identity and integer shifts reproduce the source exactly', () => {
  const W = 64;
  const H = 48;
  const src = starField(W, H, 3);
  src[20 * W + 20] = NaN;
  const same = warpLanczos3Separable(src, full(W, H, [1, 0, 0, 0, 1, 0]));
  assert.is(compareArrays(same, src).maxAbs, 0);
  assert.is(compareArrays(same, src).nanMismatches, 0);
});

test('separable reference: close to the 2-D kernel (same NaN positions, small RMS difference)', () => {
  const W = 203;
  const H = 157;
  const src = starField(W, H, 11);
  for (const [label, affine] of TRANSFORMS) {
    const p = full(W, H, affine);
    // (The analytic truth, flux, FWHM and noise comparisons are in bench/warp-accuracy.ts.)
    const a = warpLanczos3(src, p);
    const b = warpLanczos3Separable(src, p);
    const d = compareArrays(b, a);
    assert.is(d.nanMismatches, 0, label);
    let ss = 0;
    let n = 0;
    for (let i = 0; i < a.length; i++) if (Number.isFinite(a[i]!)) (ss += (a[i]! - b[i]!) ** 2), n++;
    const rms = Math.sqrt(ss / n);
    // Measured: 0 for shifts; 0.3°: max 22 ADU (next to the 12000-ADU hot pixel), RMS 0.23; 2°: 140 / 2.1.
    assert.ok(rms < 0.002 * 1000 + 1.2 * Math.abs(affine[1]) * 1000, `${label}: RMS ${rms}`);
  }
});

test.run();
