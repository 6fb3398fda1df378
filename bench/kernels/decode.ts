// Benchmarks of the decode kernels: raw big-endian FITS samples of a 6000x4000 frame
// (1500x1000 with --quick) to f32 physical values.
//   decode_int16    BITPIX 16, unsigned convention (BZERO 32768)
//   decode_int32    BITPIX 32, unsigned convention (BZERO 2^31)
//   decode_float32  BITPIX -32, identity scaling (bit copy) — the common stacked-image case
// GPU paths report kernel time (raw words resident, submit → done) and end to end (upload of the
// raw bytes + kernel + readback of f32); the CPU path times the TypeScript reference.

import type { BenchCase, BenchEnv, BenchResult } from '../harness.js';
import { measure, result } from '../harness.js';
import { decodeFloat32, decodeInt16, decodeInt32, type DecodeParams } from '../../src/cpu/decode.js';
import {
  decodeFloat32Gpu,
  decodeFloat32Resident,
  decodeInt16Gpu,
  decodeInt16Resident,
  decodeInt32Gpu,
  decodeInt32Resident,
} from '../../src/gpu/kernels/decode.js';

type Kind = 'int16' | 'int32' | 'float32';

const SPEC: Record<Kind, { bytes: number; params: Omit<DecodeParams, 'count'> }> = {
  int16: { bytes: 2, params: { bscale: 1, bzero: 32768 } },
  int32: { bytes: 4, params: { bscale: 1, bzero: 2 ** 31 } },
  float32: { bytes: 4, params: { bscale: 1, bzero: 0 } },
};

function rawFrame(kind: Kind, n: number): Uint8Array {
  const bytes = new Uint8Array(n * SPEC[kind].bytes);
  const view = new DataView(bytes.buffer);
  let seed = 7;
  for (let i = 0; i < n; i++) {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    const v = 1000 + (seed >>> 22);
    if (kind === 'int16') view.setInt16(2 * i, v - 32768, false);
    else if (kind === 'int32') view.setInt32(4 * i, v * 4096 - 2 ** 31, false);
    else view.setFloat32(4 * i, v / 65535, false);
  }
  return bytes;
}

function decodeCase(kind: Kind): BenchCase {
  const id = `decode_${kind}` as const;
  return {
    kernel: id,
    async run(env: BenchEnv): Promise<BenchResult[]> {
      const [W, H] = env.quick ? [1500, 1000] : [6000, 4000];
      const n = W * H;
      const bytes = rawFrame(kind, n);
      const params: DecodeParams = { count: n, ...SPEC[kind].params };
      const size = `${W}x${H}`;
      const mpix = n / 1e6;
      const reps = env.quick ? 1 : 5;
      const { ctx } = env;
      if (!ctx) {
        const cpu = kind === 'int16' ? decodeInt16 : kind === 'int32' ? decodeInt32 : decodeFloat32;
        const time = await measure(() => cpu(bytes, params), { warmup: 1, reps });
        return [result(env, { name: `${id} typescript`, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time })];
      }
      const resident = kind === 'int16' ? decodeInt16Resident : kind === 'int32' ? decodeInt32Resident : decodeFloat32Resident;
      const host = kind === 'int16' ? decodeInt16Gpu : kind === 'int32' ? decodeInt32Gpu : decodeFloat32Gpu;
      const words = ctx.upload(bytes);
      const out = ctx.storage(n * 4, 'bench-decoded');
      try {
        const kernelTime = await measure(
          async () => {
            const encoder = ctx.device.createCommandEncoder({ label: id });
            await resident(ctx, words, out, params, encoder);
            ctx.submit(encoder);
            await ctx.done();
          },
          { warmup: 1, reps },
        );
        const e2e = await measure(() => host(ctx, bytes, params), { warmup: 1, reps });
        return [
          result(env, { name: id, timing: 'kernel', unit: 'Mpix/s', size, megaUnits: mpix, time: kernelTime }),
          result(env, { name: id, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time: e2e }),
        ];
      } finally {
        ctx.pool.release(words);
        ctx.pool.release(out);
      }
    },
  };
}

export const cases: BenchCase[] = [decodeCase('int16'), decodeCase('int32'), decodeCase('float32')];
