// Benchmarks for calibrate (6000x4000 light with bias, dark and flat; --quick: 1536x1024).
// GPU/software paths: `kernel` (all five buffers resident, submit -> done) and `end_to_end`
// (upload light and masters, kernel, readback). CPU path: the TypeScript reference on one
// thread and on the 2-worker pool (inputs in SharedArrayBuffers), into a preallocated output.
// In a run the masters are uploaded once per band, not per frame, so the GPU e2e figure is
// pessimistic for a frame loop.

import { calibrate, calibrateParallel, type CalibrationMasters } from '../../src/cpu/calibrate.js';
import { sharedFloat32 } from '../../src/cpu/worker-pool.js';
import { calibrateGpu, calibrateResident } from '../../src/gpu/kernels/calibrate.js';
import { measure, result, type BenchCase, type BenchEnv, type BenchResult } from '../harness.js';

/** Deterministic values in [base, base + spread); shared memory for the worker path, plain for uploads. */
function frame(n: number, base: number, spread: number, seed: number, shared: boolean): Float32Array {
  const m = shared ? sharedFloat32(n) : new Float32Array(n);
  let s = seed;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    m[i] = base + spread * ((s >>> 8) / 16777216);
  }
  return m;
}

async function run(env: BenchEnv): Promise<BenchResult[]> {
  const [W, H] = env.quick ? [1536, 1024] : [6000, 4000];
  const reps = env.quick ? 2 : 5;
  const n = W * H;
  const ctx = env.ctx;
  const light = frame(n, 1000, 3000, 1, !ctx);
  const masters: Required<CalibrationMasters> = { bias: frame(n, 300, 10, 2, !ctx), dark: frame(n, 0, 20, 3, !ctx), flat: frame(n, 0.6, 0.8, 4, !ctx) };
  const params = { darkScale: 1, pedestal: 0 };
  const common = { unit: 'Mpix/s' as const, size: `${W}x${H}`, megaUnits: n / 1e6 };
  if (!ctx) {
    const out = sharedFloat32(n);
    const one = await measure(() => calibrate(light, masters, params, out), { reps });
    const two = await measure(() => calibrateParallel(light, masters, params, { workers: 2 }, out), { reps });
    return [
      result(env, { name: 'calibrate', timing: 'end_to_end', time: one, ...common }),
      result(env, { name: 'calibrate.workers2', timing: 'end_to_end', time: two, ...common }),
    ];
  }
  const bufs = { light: ctx.upload(light), bias: ctx.upload(masters.bias), dark: ctx.upload(masters.dark), flat: ctx.upload(masters.flat), out: ctx.storage(n * 4) };
  try {
    const kernel = await measure(
      async () => {
        await calibrateResident(ctx, bufs.light, bufs, bufs.out, n, params);
        await ctx.done();
      },
      { reps },
    );
    const e2e = await measure(() => calibrateGpu(ctx, light, masters, params), { reps });
    return [
      result(env, { name: 'calibrate', timing: 'kernel', time: kernel, ...common }),
      result(env, { name: 'calibrate', timing: 'end_to_end', time: e2e, ...common }),
    ];
  } finally {
    for (const b of Object.values(bufs)) ctx.pool.release(b);
  }
}

export const cases: BenchCase[] = [{ kernel: 'calibrate', run }];
