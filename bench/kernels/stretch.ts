// Benchmarks of the stretch kernels on 6000x4000 RGB f32 planes (1500x1000 with --quick),
// linear data in [0, 1] (mostly dark, as a stacked image is):
//   stretch_mtf    clipping + midtones transfer on each of the 3 planes
//   stretch_asinh  the HMS per-pixel colour stretch (logD 2, protect_b 6, grip 0.7, shadow 0.5:
//                  the per-channel blend included, its most expensive setting)
// GPU paths report kernel time (planes resident, one submit → done) and end to end (upload of
// 3 planes + kernel + readback of 3 planes); the CPU path times the TypeScript reference.

import type { BenchCase, BenchEnv, BenchResult } from '../harness.js';
import { measure, result } from '../harness.js';
import { REC709, stretchAsinh, stretchMtf, type AsinhParams, type MtfParams } from '../../src/cpu/stretch.js';
import { stretchAsinhGpu, stretchAsinhResident, stretchMtfGpu, stretchMtfResident } from '../../src/gpu/kernels/stretch.js';

function sizeFor(env: BenchEnv): [number, number] {
  return env.quick ? [1500, 1000] : [6000, 4000];
}

function planes(n: number): [Float32Array, Float32Array, Float32Array] {
  let seed = 99;
  const rnd = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 4294967296;
  };
  const make = (k: number) => Float32Array.from({ length: n }, () => 0.02 + k * rnd() ** 4);
  return [make(0.9), make(1), make(0.8)];
}

const MTF: MtfParams[] = [
  { c0: 0.01, m: 0.12, c1: 1 },
  { c0: 0.012, m: 0.1, c1: 1 },
  { c0: 0.009, m: 0.13, c1: 1 },
];
const HMS: AsinhParams = { anchor: 0.015, weights: REC709, logD: 2, protectB: 6, convergencePower: 3.5, colorGrip: 0.7, shadowConvergence: 0.5, pedestal: 0.005 };

function stretchCase(kernel: 'stretch_mtf' | 'stretch_asinh'): BenchCase {
  return {
    kernel,
    async run(env: BenchEnv): Promise<BenchResult[]> {
      const [W, H] = sizeFor(env);
      const n = W * H;
      const [r, g, b] = planes(n);
      const size = `${W}x${H}x3`;
      const mpix = n / 1e6;
      const reps = env.quick ? 1 : 3;
      const { ctx } = env;
      if (!ctx) {
        const run = kernel === 'stretch_mtf' ? () => [r, g, b].map((p, c) => stretchMtf(p, MTF[c]!)) : () => stretchAsinh(r, g, b, HMS);
        const time = await measure(run, { warmup: 1, reps });
        return [result(env, { name: `${kernel} typescript`, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time })];
      }
      const ins = [r, g, b].map((p) => ctx.upload(p)) as [GPUBuffer, GPUBuffer, GPUBuffer];
      const outs = [0, 1, 2].map(() => ctx.storage(n * 4, 'bench-stretch')) as [GPUBuffer, GPUBuffer, GPUBuffer];
      try {
        const kernelTime = await measure(
          async () => {
            const encoder = ctx.device.createCommandEncoder({ label: kernel });
            if (kernel === 'stretch_mtf') for (let c = 0; c < 3; c++) await stretchMtfResident(ctx, ins[c]!, outs[c]!, n, MTF[c]!, encoder);
            else await stretchAsinhResident(ctx, ins, outs, n, HMS, encoder);
            ctx.submit(encoder);
            await ctx.done();
          },
          { warmup: 1, reps },
        );
        const e2e = await measure(() => (kernel === 'stretch_mtf' ? stretchMtfGpu(ctx, [r, g, b], MTF) : stretchAsinhGpu(ctx, r, g, b, HMS)), { warmup: 1, reps });
        return [
          result(env, { name: kernel, timing: 'kernel', unit: 'Mpix/s', size, megaUnits: mpix, time: kernelTime }),
          result(env, { name: kernel, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time: e2e }),
        ];
      } finally {
        for (const buf of [...ins, ...outs]) ctx.pool.release(buf);
      }
    },
  };
}

export const cases: BenchCase[] = [stretchCase('stretch_mtf'), stretchCase('stretch_asinh')];
