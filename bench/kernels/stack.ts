// Benchmarks of the stack kernel on a typical data shape: frames of
// 4096 px rows, sky 1000 ADU with a gradient, sigma ~10 noise, static "stars" (+5000 on 1/5000
// pixels) and per-sample outliers on 1/200 (+300..2300, cosmic rays/trails) so clipping iterates;
// weights 1/(1 + 0.05 f). Cases: sigma 3/3 x3 at N = 16 (the bar), 48 (resident, unrolled) and
// 200 (streaming shape), winsor, median and none at N = 16. GPU paths report `kernel` (all
// bands resident, one submit, until done) and `end_to_end` (stackGpu: upload per band, kernel,
// readback); the CPU path times the TypeScript reference on one thread.

import type { BenchCase, BenchEnv, BenchResult } from '../harness.js';
import { measure, result } from '../harness.js';
import { stack, type StackMethod, type StackParams } from '../../src/cpu/stack.js';
import { planBands } from '../../src/gpu/band-planner.js';
import { stackGpu, stackResident } from '../../src/gpu/kernels/stack.js';

interface Variant {
  method: StackMethod;
  frames: number;
  /** Image rows (full run / --quick); width is 4096 (1024 with --quick). */
  rows: [number, number];
}

const VARIANTS: Variant[] = [
  { method: 'sigma', frames: 16, rows: [2048, 256] },
  { method: 'winsor', frames: 16, rows: [2048, 256] },
  { method: 'median', frames: 16, rows: [2048, 256] },
  { method: 'none', frames: 16, rows: [2048, 256] },
  { method: 'sigma', frames: 48, rows: [512, 128] },
  { method: 'sigma', frames: 200, rows: [128, 32] },
];

/** Deterministic frames (frame-major), cheap to make: LCG uniforms, Irwin-Hall(4) noise. */
function makeFrames(width: number, rows: number, n: number): Float32Array {
  const out = new Float32Array(n * rows * width);
  let s = 0x2545f491;
  const u = () => {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    return s / 4294967296;
  };
  // Irwin-Hall of 4 uniforms has sigma sqrt(4/12); scale to sigma 10.
  const k = 10 / Math.sqrt(4 / 12);
  for (let f = 0; f < n; f++) {
    for (let y = 0; y < rows; y++) {
      let i = (f * rows + y) * width;
      for (let x = 0; x < width; x++, i++) {
        let v = 1000 + 0.01 * x + 0.02 * y + k * (u() + u() + u() + u() - 2);
        if ((x * 7919 + y * 104729) % 5000 === 0) v += 5000;
        if (u() < 1 / 200) v += 300 + 2000 * u();
        out[i] = v;
      }
    }
  }
  return out;
}

function paramsFor(v: Variant, width: number, rows: number): StackParams {
  return {
    width,
    rows,
    frames: v.frames,
    method: v.method,
    low: 3,
    high: 3,
    maxIters: 3,
    minFraction: 0.4,
    weight: Array.from({ length: v.frames }, (_, f) => 1 / (1 + 0.05 * f)),
  };
}

function benchCase(v: Variant): BenchCase {
  const name = `stack.${v.method}.n${v.frames}`;
  return {
    kernel: 'stack',
    async run(env: BenchEnv): Promise<BenchResult[]> {
      const width = env.quick ? 1024 : 4096;
      const rows = v.rows[env.quick ? 1 : 0];
      const n = v.frames;
      const frames = makeFrames(width, rows, n);
      const params = paramsFor(v, width, rows);
      const size = `${width}x${rows}x${n}`;
      const megaUnits = (width * rows * n) / 1e6;
      const reps = env.quick ? 2 : 5;
      const unit = 'Mpix·frames/s' as const;
      const { ctx } = env;
      if (!ctx) {
        const time = await measure(() => stack(frames, params), { warmup: 1, reps: env.quick ? 1 : 3 });
        return [result(env, { name, timing: 'end_to_end', unit, size, megaUnits, time })];
      }
      // Kernel timing: every band's frames resident in its own buffer, all dispatches in one submit.
      const plan = planBands({
        width,
        height: rows,
        frames: n,
        bytesPerPixel: 4,
        outputBytesPerPixel: 8,
        haloRows: 0,
        budgetBytes: ctx.limits.maxBufferSize,
        maxBindingBytes: ctx.limits.maxStorageBufferBindingSize,
        minRows: 1,
      });
      const plane = width * rows;
      const bands = plan.bands.map((band) => {
        const pixels = band.rows * width;
        const src = ctx.storage(n * pixels * 4, 'bench stack frames');
        for (let f = 0; f < n; f++) ctx.write(src, frames.subarray(f * plane + band.y0 * width, f * plane + band.y0 * width + pixels), f * pixels * 4);
        return { band, src, mean: ctx.storage(pixels * 4, 'bench mean'), count: ctx.storage(pixels * 4, 'bench count') };
      });
      const rejected = ctx.storage(2 * n * 4, 'bench rejected');
      try {
        const kernel = await measure(
          async () => {
            const encoder = ctx.device.createCommandEncoder({ label: name });
            for (const b of bands) await stackResident(ctx, b.src, b.mean, b.count, rejected, { ...params, rows: b.band.rows }, encoder);
            ctx.submit(encoder);
            await ctx.done();
          },
          { warmup: 1, reps },
        );
        const e2e = await measure(() => stackGpu(ctx, frames, params), { warmup: 1, reps });
        return [result(env, { name, timing: 'kernel', unit, size, megaUnits, time: kernel }), result(env, { name, timing: 'end_to_end', unit, size, megaUnits, time: e2e })];
      } finally {
        for (const b of bands) for (const buf of [b.src, b.mean, b.count]) ctx.pool.release(buf);
        ctx.pool.release(rejected);
      }
    },
  };
}

export const cases: BenchCase[] = VARIANTS.map(benchCase);
