// Benchmarks of the warp kernels (warp_bilinear, warp_lanczos3) on a 4096×2048 f32 star field
// (1024×512 with --quick) under a registration-like transform:
// rotation 0.5°, scale 1.001 about the centre, shift (12.3, −7.7). Lanczos uses the default
// deringing ('undershoot') and is measured in three WGSL paths: the separable two-pass one the
// wrapper picks for such transforms, the 2-D kernel's grouped shape (rotations beyond ~2°) and
// one pixel per invocation (what rotations beyond ~19° other than flips get). GPU paths report kernel time (data resident, submit → done) and end to end
// (upload + kernel + readback); the CPU path times the TypeScript reference.

import type { BenchCase, BenchEnv, BenchResult } from '../harness.js';
import { measure, result } from '../harness.js';
import { warpBilinear, warpLanczos3, type Affine, type WarpKernel, type WarpParams } from '../../src/cpu/warp.js';
import { warpBilinearGpu, warpBilinearResident, warpLanczos3Gpu, warpLanczos3Resident, type WarpGpuOptions } from '../../src/gpu/kernels/warp.js';

function sizeFor(env: BenchEnv): [number, number] {
  return env.quick ? [1024, 512] : [4096, 2048];
}

/** Deterministic sky (1000 ADU, gradient, noise) with Gaussian stars: the data shape registration warps. */
function starField(W: number, H: number): Float32Array {
  let seed = 12345;
  const rnd = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 4294967296;
  };
  const img = new Float32Array(W * H);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) img[y * W + x] = 1000 + (30 * y) / H + 20 * (rnd() - 0.5);
  for (let s = 0; s < (W * H) / 2000; s++) {
    const cx = rnd() * W;
    const cy = rnd() * H;
    const sigma = 1.1 + 1.4 * rnd();
    const amp = 200 + 3800 * rnd() ** 2;
    const r = Math.ceil(4 * sigma);
    for (let y = Math.max(0, Math.floor(cy - r)); y <= Math.min(H - 1, Math.ceil(cy + r)); y++) {
      for (let x = Math.max(0, Math.floor(cx - r)); x <= Math.min(W - 1, Math.ceil(cx + r)); x++) {
        img[y * W + x] = img[y * W + x]! + amp * Math.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * sigma * sigma));
      }
    }
  }
  return img;
}

function transform(W: number, H: number): Affine {
  const a = (0.5 * Math.PI) / 180;
  const c = 1.001 * Math.cos(a);
  const n = 1.001 * Math.sin(a);
  const cx = (W - 1) / 2;
  const cy = (H - 1) / 2;
  return [c, -n, cx - c * cx + n * cy + 12.3, n, c, cy - n * cx - c * cy - 7.7];
}

function benchCase(kernel: WarpKernel, shape: 'best' | 'single' | 'separable' = 'best'): BenchCase {
  const id = `warp_${kernel}`;
  const single = shape === 'single';
  const name = single ? `${id} one-pixel shape` : shape === 'separable' ? `${id} separable` : id;
  return {
    kernel: id,
    async run(env: BenchEnv): Promise<BenchResult[]> {
      const [W, H] = sizeFor(env);
      const src = starField(W, H);
      const params: WarpParams = { affine: transform(W, H), width: W, y0: 0, rows: H, srcWidth: W, srcHeight: H, srcY0: 0, srcRows: H };
      const size = `${W}x${H}`;
      const mpix = (W * H) / 1e6;
      const reps = env.quick ? 2 : 5;
      const { ctx } = env;
      if (!ctx) {
        if (single) return []; // the TypeScript path has one shape (the separable one is a reference only)
        if (shape === 'separable') return [];
        const run = kernel === 'bilinear' ? warpBilinear : warpLanczos3;
        const time = await measure(() => run(src, params), { warmup: 1, reps: env.quick ? 1 : 3 });
        return [result(env, { name: `${id} typescript`, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time })];
      }
      const input = ctx.upload(src);
      const out = ctx.storage(W * H * 4, 'warped');
      const options: WarpGpuOptions = { lanczosShape: single ? 'single' : shape === 'separable' ? 'separable' : '2d' };
      const resident = (encoder: GPUCommandEncoder) => (kernel === 'bilinear' ? warpBilinearResident(ctx, input, out, params, encoder) : warpLanczos3Resident(ctx, input, out, params, encoder, options));
      const host = () => (kernel === 'bilinear' ? warpBilinearGpu(ctx, src, params) : warpLanczos3Gpu(ctx, src, params, options));
      try {
        const kernelTime = await measure(
          async () => {
            const encoder = ctx.device.createCommandEncoder({ label: id });
            await resident(encoder);
            ctx.submit(encoder);
            await ctx.done();
          },
          { warmup: 2, reps },
        );
        const e2e = await measure(host, { warmup: 1, reps });
        return [
          result(env, { name, timing: 'kernel', unit: 'Mpix/s', size, megaUnits: mpix, time: kernelTime }),
          result(env, { name, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time: e2e }),
        ];
      } finally {
        ctx.pool.release(input);
        ctx.pool.release(out);
      }
    },
  };
}

export const cases: BenchCase[] = [benchCase('bilinear'), benchCase('lanczos3'), benchCase('lanczos3', 'single'), benchCase('lanczos3', 'separable')];
