import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeFloat32, decodeInt16, decodeInt32 } from '../../src/cpu/decode.js';
import { decodeFloat32Gpu, decodeInt16Gpu, decodeInt32Gpu } from '../../src/gpu/kernels/decode.js';
import { compareArrays, gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

function randomInt16Bytes(count: number, seed: number): Uint8Array {
  const rnd = seededRandom(seed);
  const bytes = new Uint8Array(count * 2);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(rnd() * 256);
  // Extremes: -32768 (0x8000) and 32767 (0x7fff) big-endian.
  if (count >= 2) bytes.set([0x80, 0x00, 0x7f, 0xff], 0);
  return bytes;
}

test('CPU reference: unsigned convention is exact, BLANK gives NaN, scaling applies', () => {
  const bytes = new Uint8Array([0x80, 0x00, 0x7f, 0xff, 0x00, 0x00, 0xff, 0xff]);
  assert.equal(Array.from(decodeInt16(bytes, { count: 4, bscale: 1, bzero: 32768 })), [0, 65535, 32768, 32767]);
  const scaled = decodeInt16(bytes, { count: 4, bscale: 0.5, bzero: 100, blank: -1 });
  assert.equal(Array.from(scaled).slice(0, 3), [100 - 16384, 100 + 16383.5, 100]);
  assert.ok(Number.isNaN(scaled[3]!));
});

gpuTest('GPU decode_int16 equals the CPU reference (unsigned convention, exact)', async () => {
  const ctx = gpu.ctx!;
  const before = ctx.dispatches.get('decode_int16') ?? 0;
  for (const count of [1, 2, 7, 64 * 65 + 3, 200_001]) {
    const bytes = randomInt16Bytes(count, count);
    const params = { count, bscale: 1, bzero: 32768 };
    const got = await decodeInt16Gpu(ctx, bytes, params);
    const d = compareArrays(got, decodeInt16(bytes, params));
    assert.is(d.maxAbs, 0, `count ${count}: max |diff| ${d.maxAbs} at ${d.worstIndex}`);
  }
  assert.ok((ctx.dispatches.get('decode_int16') ?? 0) >= before + 5, 'the WGSL kernel ran');
});

gpuTest('GPU decode_int16 with BSCALE/BZERO and BLANK: within 1 ulp, NaN where blank', async () => {
  const ctx = gpu.ctx!;
  const count = 50_000;
  const bytes = randomInt16Bytes(count, 99);
  bytes.set([0xff, 0xfe], 20); // sample 10 = -2 = BLANK
  const params = { count, bscale: 0.37, bzero: -12.5, blank: -2 };
  const got = await decodeInt16Gpu(ctx, bytes, params);
  const want = decodeInt16(bytes, params);
  const d = compareArrays(got, want);
  assert.is(d.nanMismatches, 0);
  assert.ok(Number.isNaN(got[10]!));
  // Tolerance: one f32 ulp at the largest magnitude (|v| < 2^14 → ulp 2^-10); fma vs double rounding.
  assert.ok(d.maxAbs <= 2 ** -10, `max |diff| ${d.maxAbs}`);
});

// ---------- BITPIX 32 and -32 ----------

/** Big-endian bytes of int32 values. */
function int32Bytes(values: number[]): Uint8Array {
  const bytes = new Uint8Array(values.length * 4);
  const view = new DataView(bytes.buffer);
  values.forEach((v, i) => view.setInt32(4 * i, v, false));
  return bytes;
}

/** Big-endian bytes of f32 bit patterns. */
function float32Bytes(bits: number[]): Uint8Array {
  const bytes = new Uint8Array(bits.length * 4);
  const view = new DataView(bytes.buffer);
  bits.forEach((b, i) => view.setUint32(4 * i, b >>> 0, false));
  return bytes;
}

function randomWords(count: number, seed: number): Uint8Array {
  const rnd = seededRandom(seed);
  const bytes = new Uint8Array(count * 4);
  for (let i = 0; i < bytes.length; i++) bytes[i] = Math.floor(rnd() * 256);
  return bytes;
}

/** Spacing of f32 values at |v|. */
const ulp32 = (v: number) => 2 ** (Math.max(Math.floor(Math.log2(Math.max(Math.abs(v), 2 ** -126))), -126) - 23);

test('CPU reference int32: unsigned convention, BLANK, scaling, f32 rounding of large values', () => {
  const bytes = int32Bytes([-2147483648, 2147483647, 0, -1, 16777217]);
  // BZERO 2^31: stored -2^31 → 0, 2^31 - 1 → 2^32 - 1 (rounds to 2^32 in f32), 0 → 2^31,
  // -1 → 2^31 - 1 (rounds to 2^31), 2^24 + 1 → 2^31 + 2^24 + 1 (f32 spacing 256 there: rounds down by 1).
  assert.equal(Array.from(decodeInt32(bytes, { count: 5, bscale: 1, bzero: 2 ** 31 })), [0, 2 ** 32, 2 ** 31, 2 ** 31, 2 ** 31 + 2 ** 24]);
  // Signed: 2^24 + 1 is not an f32; it rounds (to even) to 2^24.
  const signed = decodeInt32(bytes, { count: 5, bscale: 1, bzero: 0, blank: -1 });
  assert.equal(Array.from(signed).filter((v) => !Number.isNaN(v)), [-(2 ** 31), 2 ** 31, 0, 2 ** 24]);
  assert.ok(Number.isNaN(signed[3]!));
  assert.equal(Array.from(decodeInt32(int32Bytes([10, -4]), { count: 2, bscale: 0.5, bzero: 100 })), [105, 98]);
});

test('CPU reference float32: bits copied, NaN/Inf pass through, scaling applies to finite values', () => {
  const bits = [0x3f800000, 0x80000000, 0x00000001, 0x7fc00001, 0xff800000, 0xc0490fdb];
  const out = decodeFloat32(float32Bytes(bits), { count: 6, bscale: 1, bzero: 0 });
  assert.equal(Array.from(new Uint32Array(out.buffer)), bits.map((b) => b >>> 0));
  const scaled = decodeFloat32(float32Bytes([0x3f800000, 0x7fc00000, 0x7f800000]), { count: 3, bscale: 2, bzero: -1 });
  assert.is(scaled[0], 1);
  assert.ok(Number.isNaN(scaled[1]!));
  assert.is(scaled[2], Infinity);
});

gpuTest('GPU decode_int32 equals the CPU reference exactly for BZERO 0 and 2^31 (odd counts, extremes)', async () => {
  const ctx = gpu.ctx!;
  const before = ctx.dispatches.get('decode_int32') ?? 0;
  let runs = 0;
  for (const count of [1, 2, 3, 5, 64 * 4 * 3 + 1, 200_003]) {
    const bytes = randomWords(count, count + 1);
    if (count >= 4) bytes.set(int32Bytes([-2147483648, 2147483647, 16777217, -16777217]), 0);
    for (const bzero of [0, 2 ** 31]) {
      const params = { count, bscale: 1, bzero };
      const got = await decodeInt32Gpu(ctx, bytes, params);
      runs++;
      // Correctly rounded on both sides: the kernel's split stored = hi * 65536 + lo makes the
      // only rounding the final one, the reference rounds the exact f64 value once.
      const d = compareArrays(got, decodeInt32(bytes, params));
      assert.is(d.maxAbs, 0, `count ${count} bzero ${bzero}: max |diff| ${d.maxAbs} at ${d.worstIndex}`);
    }
  }
  assert.ok((ctx.dispatches.get('decode_int32') ?? 0) >= before + runs, 'the WGSL kernel ran');
});

gpuTest('GPU decode_int32 with BSCALE/BZERO and BLANK: within 2 ulp of |bzero| + |bscale·stored|', async () => {
  const ctx = gpu.ctx!;
  const count = 50_001;
  const bytes = randomWords(count, 7);
  bytes.set(int32Bytes([-5]), 40); // sample 10 = BLANK
  const params = { count, bscale: 0.37, bzero: -12.5, blank: -5 };
  const got = await decodeInt32Gpu(ctx, bytes, params);
  const want = decodeInt32(bytes, params);
  const d = compareArrays(got, want);
  assert.is(d.nanMismatches, 0);
  assert.ok(Number.isNaN(got[10]!));
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < count; i++) {
    if (Number.isNaN(want[i]!)) continue;
    // Two f32 roundings (inner fma, outer fma) on terms no larger than |bzero| + |bscale·stored|.
    const tol = 2 * ulp32(Math.abs(Math.fround(0.37) * view.getInt32(4 * i, false)) + 12.5);
    assert.ok(Math.abs(got[i]! - want[i]!) <= tol, `sample ${i}: ${got[i]} vs ${want[i]}`);
  }
});

gpuTest('GPU decode_float32: identity copies the bits exactly; scaled within 1 ulp; NaN/Inf pass through', async () => {
  const ctx = gpu.ctx!;
  const before = ctx.dispatches.get('decode_float32') ?? 0;
  for (const count of [1, 3, 4 * 64 + 2, 100_001]) {
    const bytes = randomWords(count, count + 3); // random bit patterns: NaNs, Infs, subnormals, ±0
    if (count >= 6) bytes.set(float32Bytes([0x7fc00000, 0x7f800000, 0xff800000, 0x80000000, 0x00000001, 0x7f800001]), 0);
    const identity = await decodeFloat32Gpu(ctx, bytes, { count, bscale: 1, bzero: 0 });
    const want = decodeFloat32(bytes, { count, bscale: 1, bzero: 0 });
    assert.equal(Array.from(new Uint32Array(identity.buffer, 0, count)), Array.from(new Uint32Array(want.buffer, 0, count)), `count ${count}: bit-exact`);
    const params = { count, bscale: 3, bzero: 0.5 };
    const got = await decodeFloat32Gpu(ctx, bytes, params);
    const ref = decodeFloat32(bytes, params);
    for (let i = 0; i < count; i++) {
      const g = got[i]!;
      const w = ref[i]!;
      if (Number.isNaN(w)) {
        assert.ok(Number.isNaN(g), `sample ${i}: NaN passes through`);
        continue;
      }
      // fma (one rounding) or multiply-add (two): ≤ 1 ulp of |bscale·v| + |bzero|.
      const tol = Number.isFinite(w) ? ulp32(Math.abs(3 * want[i]!) + 0.5) : 0;
      assert.ok(g === w || Math.abs(g - w) <= tol, `sample ${i}: ${g} vs ${w}`);
    }
  }
  assert.ok((ctx.dispatches.get('decode_float32') ?? 0) >= before + 8, 'the WGSL kernel ran');
});

test.run();
