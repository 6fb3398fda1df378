import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { calibrate, calibrateParallel, DEFAULT_FLAT_FLOOR, type CalibrateParams, type CalibrationMasters } from '../../src/cpu/calibrate.js';
import { calibrateGpu, calibrateResident } from '../../src/gpu/kernels/calibrate.js';
import { sharedFloat32 } from '../../src/cpu/worker-pool.js';
import { gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

/** A synthetic frame: sky · flat + bias + darkScale · dark, with dyadic values so every step is exact in f32. */
function synthetic(n: number, sky: number, darkScale = 1) {
  const flats = [0.5, 0.75, 1, 1.25, 2];
  const flat = new Float32Array(n).map((_, i) => flats[i % flats.length]!);
  const bias = new Float32Array(n).map((_, i) => 100 + (i % 3));
  const dark = new Float32Array(n).map((_, i) => 8 + (i % 5) * 2);
  const light = new Float32Array(n).map((_, i) => sky * flat[i]! + bias[i]! + darkScale * dark[i]!);
  return { light, bias, dark, flat };
}

test('CPU: known bias, dark and flat recover the sky exactly; darkScale and pedestal apply', () => {
  const { light, bias, dark, flat } = synthetic(103, 1000);
  assert.ok(calibrate(light, { bias, dark, flat }).every((v) => v === 1000));
  const scaled = synthetic(103, 1000, 2.5);
  assert.ok(calibrate(scaled.light, scaled, { darkScale: 2.5 }).every((v) => v === 1000));
  assert.ok(calibrate(light, { bias, dark, flat }, { pedestal: 24 }).every((v) => v === 1024));
});

test('CPU: absent masters count as bias 0, dark 0, flat 1', () => {
  const light = new Float32Array([10, 20, 30]);
  const bias = new Float32Array([1, 2, 3]);
  const dark = new Float32Array([0.5, 0.5, 0.5]);
  const flat = new Float32Array([2, 4, 0.5]);
  assert.equal(Array.from(calibrate(light)), [10, 20, 30]);
  assert.equal(Array.from(calibrate(light, { bias })), [9, 18, 27]);
  assert.equal(Array.from(calibrate(light, { dark })), [9.5, 19.5, 29.5]);
  assert.equal(Array.from(calibrate(light, { flat })), [5, 5, 60]);
  assert.equal(Array.from(calibrate(light, { bias, flat }, { pedestal: 1 })), [5.5, 5.5, 55]);
  assert.equal(Array.from(calibrate(light, { dark }, { darkScale: 2 })), [9, 19, 29]);
});

test('CPU: dead flat (≤ floor or NaN) and NaN light give NaN; floor is a parameter', () => {
  const light = new Float32Array([10, 10, 10, 10, NaN, 10]);
  const flat = new Float32Array([0.01, DEFAULT_FLAT_FLOOR, NaN, 0.0625, 1, -1]);
  const out = calibrate(light, { flat });
  assert.ok(Number.isNaN(out[0]!), 'flat below the floor');
  assert.ok(Number.isNaN(out[1]!), 'flat equal to the floor');
  assert.ok(Number.isNaN(out[2]!), 'NaN flat');
  assert.is(out[3], 160, 'flat just above the floor');
  assert.ok(Number.isNaN(out[4]!), 'NaN light');
  assert.ok(Number.isNaN(out[5]!), 'negative flat');
  const lower = calibrate(light, { flat }, { flatFloor: 0.005 });
  assert.is(lower[0], 1000);
  assert.throws(() => calibrate(light, { flat: new Float32Array(3) }), /pixels/);
});

function randomCase(n: number, seed: number): { light: Float32Array; masters: Required<CalibrationMasters> } {
  const rnd = seededRandom(seed);
  const light = new Float32Array(n).map(() => 500 + 3000 * rnd());
  const bias = new Float32Array(n).map(() => 300 + 10 * rnd());
  const dark = new Float32Array(n).map(() => 20 * rnd());
  const flat = new Float32Array(n).map(() => 0.3 + 0.9 * rnd());
  for (let i = 0; i < n; i += 97) light[i] = NaN;
  for (let i = 5; i < n; i += 89) flat[i] = 0.02; // dead
  for (let i = 7; i < n; i += 211) flat[i] = NaN;
  for (let i = 11; i < n; i += 307) dark[i] = NaN;
  return { light, masters: { bias, dark, flat } };
}

function subsets(m: Required<CalibrationMasters>): CalibrationMasters[] {
  const out: CalibrationMasters[] = [];
  for (let f = 0; f < 8; f++) {
    const s: CalibrationMasters = {};
    if (f & 1) s.bias = m.bias;
    if (f & 2) s.dark = m.dark;
    if (f & 4) s.flat = m.flat;
    out.push(s);
  }
  return out;
}

test('CPU: every master subset (the all-masters loop and the general one) equals the contract in f64, rounded once', () => {
  const { light, masters } = randomCase(4099, 17);
  const params = { darkScale: 0.6, flatFloor: DEFAULT_FLAT_FLOOR, pedestal: 12 };
  const ds = Math.fround(params.darkScale);
  const floor = Math.fround(params.flatFloor);
  for (const m of subsets(masters)) {
    const got = calibrate(light, m, params);
    for (let i = 0; i < light.length; i++) {
      let v = light[i]!;
      if (m.bias) v -= m.bias[i]!;
      if (m.dark) v -= ds * m.dark[i]!;
      if (m.flat) v = m.flat[i]! > floor ? v / m.flat[i]! : NaN;
      assert.ok(Object.is(got[i], Math.fround(v + params.pedestal)), `${Object.keys(m).join('+') || 'none'} at ${i}: ${got[i]} vs ${Math.fround(v + params.pedestal)}`);
    }
  }
});

test('CPU: calibrateParallel (2 workers) is bit-identical to calibrate', async () => {
  const { light, masters } = randomCase(100_003, 1);
  for (const s of subsets(masters)) {
    const params: CalibrateParams = { darkScale: 1.5, pedestal: 10 };
    const want = calibrate(light, s, params);
    const got = await calibrateParallel(light, s, params, { workers: 2 });
    for (let i = 0; i < want.length; i++) if (!Object.is(got[i], want[i])) assert.unreachable(`${Object.keys(s)} [${i}] ${got[i]} != ${want[i]}`);
  }
});

// Tolerance, per pixel: the reference computes in f64 and rounds once; the kernel rounds in f32
// after the subtractions (3 roundings, each ≤ u = 2^-24 relative to operands ≤ M), divides
// (WGSL allows 2.5 ulp ≤ 5u relative) and adds the pedestal (1 more rounding), and the
// reference's own rounding adds one: about 9u·M in all, with M = (|light| + |bias| +
// |darkScale·dark|) / |flat| + |pedestal|. 2^-20·M (16u) bounds it.
function assertCalibrated(got: Float32Array, want: Float32Array, light: Float32Array, m: CalibrationMasters, p: CalibrateParams, what: string): void {
  const s = p.darkScale ?? 1;
  for (let i = 0; i < want.length; i++) {
    const a = got[i]!;
    const b = want[i]!;
    if (Number.isNaN(a) || Number.isNaN(b)) {
      assert.is(Number.isNaN(a), Number.isNaN(b), `${what} [${i}]: NaN mismatch ${a} vs ${b}`);
      continue;
    }
    const M = (Math.abs(light[i]!) + Math.abs(m.bias?.[i] ?? 0) + Math.abs(s * (m.dark?.[i] ?? 0))) / Math.abs(m.flat?.[i] ?? 1) + Math.abs(p.pedestal ?? 0);
    if (Math.abs(a - b) > 2 ** -20 * M) assert.unreachable(`${what} [${i}]: ${a} vs ${b}`);
  }
}

gpuTest('GPU calibrate equals the CPU reference: every master subset, odd counts, NaN and dead flats', async () => {
  const ctx = gpu.ctx!;
  const before = ctx.dispatches.get('calibrate') ?? 0;
  let runs = 0;
  for (const n of [1, 3, 4, 5, 1001, 64 * 4 * 3 + 7]) {
    const { light, masters } = randomCase(n, n);
    for (const s of subsets(masters)) {
      const params: CalibrateParams = { darkScale: 1.25, pedestal: 5, flatFloor: 0.05 };
      const got = await calibrateGpu(ctx, light, s, params);
      assertCalibrated(got, calibrate(light, s, params), light, s, params, `n ${n} masters [${Object.keys(s)}]`);
      runs++;
    }
  }
  assert.ok((ctx.dispatches.get('calibrate') ?? 0) >= before + runs, 'the WGSL kernel ran');
});

gpuTest('GPU calibrate: exact sky recovery, dead flat NaN, resident form in a shared encoder', async () => {
  const ctx = gpu.ctx!;
  const n = 1027;
  const { light, bias, dark, flat } = synthetic(n, 1000, 2.5);
  flat[10] = 0.04;
  flat[11] = NaN;
  const got = await calibrateGpu(ctx, light, { bias, dark, flat }, { darkScale: 2.5 });
  for (let i = 0; i < n; i++) {
    if (i === 10 || i === 11) assert.ok(Number.isNaN(got[i]!), `dead flat at ${i}`);
    else assert.is(got[i], 1000, `pixel ${i}`);
  }
  // Resident: light -> (bias only) -> tmp -> (flat only, pedestal) -> out, one submit.
  const bufs = [ctx.upload(light), ctx.upload(bias), ctx.upload(flat), ctx.storage(n * 4), ctx.storage(n * 4)] as const;
  const [lb, bb, fb, tmp, out] = bufs;
  try {
    const encoder = ctx.device.createCommandEncoder();
    await calibrateResident(ctx, lb, { bias: bb }, tmp, n, {}, encoder);
    await calibrateResident(ctx, tmp, { flat: fb }, out, n, { pedestal: 7 }, encoder);
    ctx.submit(encoder);
    const chained = await ctx.readFloat32(out, n);
    const want = calibrate(calibrate(light, { bias }), { flat }, { pedestal: 7 });
    assertCalibrated(chained, want, light, { bias, flat }, { pedestal: 7 }, 'chained');
    await calibrateResident(ctx, lb, {}, lb, n).then(
      () => assert.unreachable('in-place accepted'),
      (e: Error) => assert.match(e.message, /must not be an input/),
    );
  } finally {
    for (const b of bufs) ctx.pool.release(b);
  }
  // Shared-memory inputs (the CPU worker path keeps frames there) upload as well.
  const share = (a: Float32Array) => {
    const s = sharedFloat32(a.length);
    s.set(a);
    return s;
  };
  const fromShared = await calibrateGpu(ctx, share(light), { bias: share(bias), dark: share(dark), flat: share(flat) }, { darkScale: 2.5 });
  assert.equal(Array.from(fromShared), Array.from(got));
  assert.equal(ctx.uncapturedErrors, []);
});

test.run();
