// Benchmarks for debayer_bilinear, debayer_bilinear_vec4 and debayer_mhc (f32 mosaic -> three f32 planes,
// 6000x4000; --quick: 1536x1024). GPU/software paths: `kernel` (mosaic and planes resident,
// submit -> done) and `end_to_end` (upload, kernel, readback of the three planes). CPU path:
// the TypeScript reference on one thread and on the 2-worker pool, both writing into
// preallocated shared planes as a band loop would (the GPU path uploads plain arrays).

import { debayerBilinear, debayerBilinearParallel, debayerMhc, debayerMhcParallel, type DebayerParams, type DebayerPlanes } from '../../src/cpu/debayer.js';
import { sharedFloat32 } from '../../src/cpu/worker-pool.js';
import { debayerBilinearGpu, debayerBilinearResident, debayerMhcGpu, debayerMhcResident, type DebayerBuffers, type DebayerResidentParams } from '../../src/gpu/kernels/debayer.js';
import type { GpuContext } from '../../src/gpu/context.js';
import { measure, result, type BenchCase, type BenchEnv, type BenchResult } from '../harness.js';

/** Deterministic values in [0, 1); in shared memory for the worker path, plain for uploads. */
function mosaic(n: number, shared: boolean): Float32Array {
  const m = shared ? sharedFloat32(n) : new Float32Array(n);
  let s = 12345;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    m[i] = (s >>> 8) / 16777216;
  }
  return m;
}

interface Method {
  one: (input: Float32Array, params: DebayerParams, out: DebayerPlanes) => DebayerPlanes;
  two: (input: Float32Array, params: DebayerParams, options: { workers: number }, out: DebayerPlanes) => Promise<DebayerPlanes>;
  resident: (ctx: GpuContext, mosaic: GPUBuffer, out: DebayerBuffers, params: DebayerResidentParams) => Promise<void>;
  host: (ctx: GpuContext, input: Float32Array, params: DebayerParams) => Promise<DebayerPlanes>;
}

const BILINEAR: Method = { one: debayerBilinear, two: debayerBilinearParallel, resident: debayerBilinearResident, host: debayerBilinearGpu };
const MHC: Method = { one: debayerMhc, two: debayerMhcParallel, resident: debayerMhcResident, host: debayerMhcGpu };

/** TypeScript path: one thread and the 2-worker pool, into preallocated shared planes. */
async function runCpu(env: BenchEnv, name: string, method: Method, W: number, H: number, reps: number): Promise<BenchResult[]> {
  const n = W * H;
  const params: DebayerParams = { width: W, height: H, pattern: 'RGGB' };
  const input = mosaic(n, true);
  const planes = { r: sharedFloat32(n), g: sharedFloat32(n), b: sharedFloat32(n) };
  const common = { unit: 'Mpix/s' as const, size: `${W}x${H}`, megaUnits: n / 1e6 };
  const one = await measure(() => method.one(input, params, planes), { reps });
  const two = await measure(() => method.two(input, params, { workers: 2 }, planes), { reps });
  return [
    result(env, { name, timing: 'end_to_end', time: one, ...common }),
    result(env, { name: `${name}.workers2`, timing: 'end_to_end', time: two, ...common }),
  ];
}

/** Device path: kernel only (resident mosaic and planes) and host to host. */
async function runGpu(env: BenchEnv, name: string, method: Method, W: number, H: number, reps: number): Promise<BenchResult[]> {
  const ctx = env.ctx!;
  const n = W * H;
  const params: DebayerParams = { width: W, height: H, pattern: 'RGGB' };
  const input = mosaic(n, false);
  const common = { unit: 'Mpix/s' as const, size: `${W}x${H}`, megaUnits: n / 1e6 };
  const mosaicBuf = ctx.upload(input);
  const out = { r: ctx.storage(n * 4), g: ctx.storage(n * 4), b: ctx.storage(n * 4) };
  try {
    const kernel = await measure(
      async () => {
        await method.resident(ctx, mosaicBuf, out, { ...params, readRows: H });
        await ctx.done();
      },
      { reps },
    );
    const e2e = await measure(() => method.host(ctx, input, params), { reps });
    return [result(env, { name, timing: 'kernel', time: kernel, ...common }), result(env, { name, timing: 'end_to_end', time: e2e, ...common })];
  } finally {
    ctx.pool.release(mosaicBuf);
    for (const b of Object.values(out)) ctx.pool.release(b);
  }
}

const H = (env: BenchEnv) => (env.quick ? 1024 : 4000);
const W = (env: BenchEnv) => (env.quick ? 1536 : 6000);
const reps = (env: BenchEnv) => (env.quick ? 2 : 5);

export const cases: BenchCase[] = [
  {
    // Scalar kernel: the wrapper uses it for widths not divisible by 4, hence W + 2 (TS: W).
    kernel: 'debayer_bilinear',
    run: (env) => (env.ctx ? runGpu(env, 'debayer_bilinear', BILINEAR, W(env) + 2, H(env), reps(env)) : runCpu(env, 'debayer_bilinear', BILINEAR, W(env), H(env), reps(env))),
  },
  {
    // vec4 kernel: what the wrapper runs for 6000x4000; no separate TypeScript variant.
    kernel: 'debayer_bilinear_vec4',
    run: async (env) => (env.ctx ? runGpu(env, 'debayer_bilinear_vec4', BILINEAR, W(env), H(env), reps(env)) : []),
  },
  {
    kernel: 'debayer_mhc',
    run: (env) => (env.ctx ? runGpu(env, 'debayer_mhc', MHC, W(env), H(env), reps(env)) : runCpu(env, 'debayer_mhc', MHC, W(env), H(env), reps(env))),
  },
];
