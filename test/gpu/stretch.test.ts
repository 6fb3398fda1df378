import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { asinhCurve, asinhCurveValue, hmsPixelParams, mtf, REC709, stretchAsinh, stretchMtf, type AsinhParams, type MtfParams } from '../../src/cpu/stretch.js';
import { stretchAsinhGpu, stretchMtfGpu } from '../../src/gpu/kernels/stretch.js';
import { compareArrays, gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

const U = 2 ** -24;

/** Linear-ish astro data in [-0.05, 1.15] (cubed uniform: mostly dark), with NaN and ±Inf. */
function plane(n: number, seed: number): Float32Array {
  const rnd = seededRandom(seed);
  const a = Float32Array.from({ length: n }, () => rnd() ** 3 * 1.2 - 0.05);
  if (n > 20) {
    a[5] = NaN;
    a[6] = Infinity;
    a[n - 1] = -Infinity;
  }
  return a;
}

// ---------- CPU reference against hand-computed values ----------

test('MTF: fixed points MTF(m, 0) = 0, MTF(m, m) = 1/2, MTF(m, 1) = 1, m = 1/2 is the identity', () => {
  for (const m of [0.001, 0.1, 0.25, 0.5, 0.8, 0.999]) {
    assert.is(mtf(m, 0), 0);
    assert.is(mtf(m, 1), 1);
    // f64 cancellation in m - 1 costs up to ~2^-53 / (1 - m) relative.
    assert.ok(Math.abs(mtf(m, m) - 0.5) < 1e-12, `MTF(${m}, ${m}) = ${mtf(m, m)}`);
    for (let t = 0.05; t < 1; t += 0.1) assert.ok(mtf(m, t) < mtf(m, t + 0.05), 'monotone');
  }
  for (const t of [0.1, 0.37, 0.9]) assert.ok(Math.abs(mtf(0.5, t) - t) < 1e-15);
  // (m - 1) t / ((2m - 1) t - m) at m = 0.25, t = 0.5: (-0.375) / (-0.5) = 0.75.
  assert.is(mtf(0.25, 0.5), 0.75);
});

test('MTF plane: clipping first, then the curve; NaN/Inf give NaN', () => {
  const p: MtfParams = { c0: 0.25, m: 0.25, c1: 0.75 };
  const out = stretchMtf(Float32Array.from([0, 0.25, 0.375, 0.5, 0.75, 2, NaN, Infinity]), p);
  // t = (x - 0.25) / 0.5: 0 → clipped 0, 0.375 → t = 0.25 = m → 1/2, 0.5 → t = 0.5 → 0.75.
  assert.equal(Array.from(out).slice(0, 6), [0, 0, 0.5, 0.75, 1, 1]);
  assert.ok(Number.isNaN(out[6]!) && Number.isNaN(out[7]!));
  assert.throws(() => stretchMtf(out, { c0: 1, m: 0.5, c1: 1 }), /c0 < c1/);
  assert.throws(() => stretchMtf(out, { c0: 0, m: 1, c1: 1 }), /m must be/);
});

const hms: AsinhParams = { anchor: 0, weights: REC709, logD: 2, protectB: 6, convergencePower: 3.5, colorGrip: 1 };

test('asinh curve: f(0) = 0, f(white) = 1, monotone, and equal to the direct asinh formula', () => {
  for (const [logD, b, anchor, white] of [
    [0, 6, 0, 1],
    [2, 6, 0.1, 1],
    [4, 0.1, 0.02, 0.8],
    [7, 0, 0, 1],
  ] as const) {
    const c = asinhCurve({ ...hms, logD, protectB: b, anchor, white });
    assert.is(asinhCurveValue(c, 0), 0);
    assert.ok(Math.abs(asinhCurveValue(c, c.vw) - 1) < 1e-14, `f(vw) = ${asinhCurveValue(c, c.vw)}`);
    let prev = -1;
    for (let v = 0; v <= c.vw * 1.2; v += c.vw / 200) {
      const f = asinhCurveValue(c, v);
      assert.ok(f > prev, `monotone at ${v}`);
      prev = f;
      const direct = (Math.asinh(c.d * v + c.b) - Math.asinh(c.b)) / (Math.asinh(c.d * c.vw + c.b) - Math.asinh(c.b));
      assert.ok(Math.abs(f - direct) < 1e-12, `stable form vs asinh at v=${v}: ${f} vs ${direct}`);
    }
  }
});

test('asinh stretch: grey maps anchor → 0 and white → 1; colour preserved, converging to neutral', () => {
  const anchor = 0.1;
  const p: AsinhParams = { ...hms, anchor, white: 1 };
  const grey = Float32Array.from([0, anchor, 0.3, 1, 1.5]);
  const [r, g, b] = stretchAsinh(grey, grey, grey, p);
  assert.equal(Array.from(r), Array.from(g));
  assert.equal(Array.from(g), Array.from(b));
  assert.is(r[0], 0);
  assert.is(r[1], 0);
  assert.is(r[3], 1);
  assert.is(r[4], 1);
  assert.ok(r[2]! > 0.3, 'a stretch lifts midtones');
  // Colour-preserving with k → 0 (dim pixel): channel ratios survive: out_c / out_G = a_c / a_G.
  const dim = stretchAsinh(Float32Array.from([0.1 + 0.002]), Float32Array.from([0.1 + 0.001]), Float32Array.from([0.1 + 0.0005]), p);
  const ratio = dim[0][0]! / dim[1][0]!;
  assert.ok(Math.abs(ratio - 2) < 1e-3, `R/G ratio ${ratio}`);
  // A bright reddish pixel, by hand: a = (0.5, 0.3, 0.2), L = Σ w a, Ls = f(L), k = Ls^3.5,
  // out_c = Ls (a_c / L (1 - k) + k): the B/R ratio moves from 0.4 towards 1, more so for a
  // smaller convergence power.
  const c0 = asinhCurve(p);
  const a = [0.6, 0.4, 0.3].map((x) => Math.fround(x) - Math.fround(anchor));
  const lum = a.reduce((s, v, i) => s + Math.fround(REC709[i]!) * v, 0);
  const ls = asinhCurveValue(c0, lum);
  const k = ls ** 3.5;
  const star = stretchAsinh(Float32Array.from([0.6]), Float32Array.from([0.4]), Float32Array.from([0.3]), p);
  a.forEach((v, i) => assert.ok(Math.abs(star[i]![0]! - Math.min(1, ls * ((v / lum) * (1 - k) + k))) < 1e-7, `channel ${i}`));
  const ratio35 = star[2][0]! / star[0][0]!;
  const soft = stretchAsinh(Float32Array.from([0.6]), Float32Array.from([0.4]), Float32Array.from([0.3]), { ...p, convergencePower: 1 });
  assert.ok(ratio35 > a[2]! / a[0]! && soft[2][0]! / soft[0][0]! > ratio35, 'converges towards neutral');
  // colorGrip 0 is the plain per-channel stretch: out_c = f(a_c).
  const c = asinhCurve(p);
  const per = stretchAsinh(Float32Array.from([0.4]), Float32Array.from([0.2]), Float32Array.from([0.15]), { ...p, colorGrip: 0 });
  assert.is(per[0][0], Math.fround(asinhCurveValue(c, Math.fround(0.4) - Math.fround(anchor))));
  // NaN in one channel blanks the pixel; a pedestal lifts the floor.
  const holes = stretchAsinh(Float32Array.from([NaN, 0]), Float32Array.from([0.5, 0]), Float32Array.from([0.5, 0]), { ...p, pedestal: 0.005 });
  assert.ok(Number.isNaN(holes[0][0]!) && Number.isNaN(holes[1][0]!) && Number.isNaN(holes[2][0]!));
  assert.is(holes[0][1], Math.fround(0.005));
});

test('HMS settings map to the per-pixel parameters as the predecessor did', () => {
  const base = { weights: REC709, anchor: 0.02, logD: 2.5, protect_b: 6, convergence_power: 3.5, color_grip: 0.4, shadow_convergence: 2 } as const;
  const warm = hmsPixelParams({ ...base, mode: 'ready_to_use', color_strategy: 0.5 });
  assert.equal([warm.colorGrip, warm.shadowConvergence, warm.white, warm.pedestal], [0.7, 0, 1.02, 0.005]);
  const cool = hmsPixelParams({ ...base, mode: 'ready_to_use', color_strategy: -0.5 });
  assert.equal([cool.colorGrip, cool.shadowConvergence], [1, 1.5]);
  const sci = hmsPixelParams({ ...base, mode: 'scientific', color_strategy: 0 });
  assert.equal([sci.colorGrip, sci.shadowConvergence], [0.4, 2]);
  // white = 1 + anchor: the curve is normalised at anchored luminance 1, f(x) = (asinh(D x + b) - asinh(b)) / (asinh(D + b) - asinh(b)).
  const c = asinhCurve(warm);
  const x = 0.3;
  const direct = (Math.asinh(c.d * x + c.b) - Math.asinh(c.b)) / (Math.asinh(c.d + c.b) - Math.asinh(c.b));
  assert.ok(Math.abs(asinhCurveValue(c, x) - direct) < 1e-6, `${asinhCurveValue(c, x)} vs ${direct}`);
});

// ---------- GPU against the TypeScript reference ----------

gpuTest('GPU stretch_mtf equals the reference within (4 + 2m/(1-m)) ulp of 1 (odd sizes, NaN/Inf)', async () => {
  const ctx = gpu.ctx!;
  const before = ctx.dispatches.get('stretch_mtf') ?? 0;
  const sizes = [1, 3, 65, 4 * 64 * 3 + 1, 200_003];
  const params: MtfParams[] = [
    { c0: 0.01, m: 0.001, c1: 0.95 },
    { c0: 0, m: 0.25, c1: 1 },
    { c0: -0.02, m: 0.9, c1: 0.5 },
  ];
  for (const n of sizes) {
    const planes = [plane(n, n), plane(n, n + 1), plane(n, n + 2)];
    const got = await stretchMtfGpu(ctx, planes, params);
    got.forEach((g, c) => {
      const p = params[c]!;
      const d = compareArrays(g, stretchMtf(planes[c]!, p));
      // f32 evaluation: t carries ~1.5 ulp, the curve's log-slope is at most m/(1-m), plus
      // ~3 roundings in the rational function (shaders/stretch/mtf.wgsl header).
      const tol = (4 + (2 * p.m) / (1 - p.m)) * U;
      assert.is(d.nanMismatches, 0, `n=${n} plane ${c}: NaN positions`);
      assert.ok(d.maxAbs <= tol, `n=${n} plane ${c}: max |diff| ${d.maxAbs} > ${tol}`);
    });
  }
  assert.ok((ctx.dispatches.get('stretch_mtf') ?? 0) >= before + sizes.length * 3, 'the WGSL kernel ran');
});

gpuTest('GPU stretch_asinh equals the reference within norm·2^-21 + 2^-20 (all parameter regimes)', async () => {
  const ctx = gpu.ctx!;
  const before = ctx.dispatches.get('stretch_asinh') ?? 0;
  const settings: Partial<AsinhParams>[] = [
    { logD: 0, protectB: 6 },
    { logD: 2, protectB: 6, anchor: 0.02, pedestal: 0.005 },
    { logD: 2, protectB: 0.1, colorGrip: 0.5 },
    { logD: 5, protectB: 0, colorGrip: 0, shadowConvergence: 2 },
    { logD: 7, protectB: 6, colorGrip: 0.3, shadowConvergence: 1, white: 0.9 },
    { logD: 3, protectB: 1, convergencePower: 1, weights: [0.3431, 0.4822, 0.1747] },
  ];
  let runs = 0;
  for (const n of [1, 7, 64 * 4 + 3, 100_001]) {
    const [r, g, b] = [plane(n, 3 * n), plane(n, 3 * n + 1), plane(n, 3 * n + 2)];
    for (const s of settings) {
      const p = { ...hms, ...s } as AsinhParams;
      const got = await stretchAsinhGpu(ctx, r, g, b, p);
      const want = stretchAsinh(r, g, b, p);
      runs++;
      // f32 evaluation on values in [0, 1]: ~10 roundings (≤ 2^-20 together) plus log's
      // absolute error (WGSL: 2^-21 for arguments in [0.5, 2]) scaled by the curve's norm.
      const tol = asinhCurve(p).norm * 2 ** -21 + 2 ** -20;
      for (let c = 0; c < 3; c++) {
        const d = compareArrays(got[c]!, want[c]!);
        assert.is(d.nanMismatches, 0, `n=${n} ${JSON.stringify(s)} channel ${c}: NaN positions`);
        assert.ok(d.maxAbs <= tol, `n=${n} ${JSON.stringify(s)} channel ${c}: max |diff| ${d.maxAbs} > ${tol}`);
      }
      for (const o of got) for (const v of o) assert.ok(Number.isNaN(v) || (v >= 0 && v <= 1), 'outputs in [0, 1]');
    }
  }
  assert.ok((ctx.dispatches.get('stretch_asinh') ?? 0) >= before + runs, 'the WGSL kernel ran');
});

gpuTest('GPU stretch host forms in several upload chunks equal one chunk', async () => {
  const ctx = gpu.ctx!;
  const n = 10_000 + 3;
  const [r, g, b] = [plane(n, 1), plane(n, 2), plane(n, 3)];
  const p: AsinhParams = { ...hms, anchor: 0.01, colorGrip: 0.6, shadowConvergence: 1 };
  const whole = await stretchAsinhGpu(ctx, r, g, b, p);
  const chunked = await stretchAsinhGpu(ctx, r, g, b, p, { chunkSamples: 1000 });
  for (let c = 0; c < 3; c++) assert.equal(compareArrays(chunked[c]!, whole[c]!), { maxAbs: 0, maxRel: 0, worstIndex: -1, nanMismatches: 0 });
  const mtfParams: MtfParams[] = [{ c0: 0, m: 0.2, c1: 1 }];
  const [one] = await stretchMtfGpu(ctx, [r], mtfParams);
  const [many] = await stretchMtfGpu(ctx, [r], mtfParams, { chunkSamples: 1000 });
  assert.equal(compareArrays(many!, one!).maxAbs, 0);
  assert.equal((await stretchAsinhGpu(ctx, new Float32Array(0), new Float32Array(0), new Float32Array(0), p)).map((a) => a.length), [0, 0, 0]);
});

test.run();
