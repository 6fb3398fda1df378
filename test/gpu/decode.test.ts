import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { decodeInt16 } from '../../src/cpu/decode.js';
import { decodeInt16Gpu } from '../../src/gpu/kernels/decode.js';
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

test.run();
