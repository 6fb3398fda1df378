// Benchmarks of the stats kernels on a 6000x4000 f32 sky frame (1500x1000 with --quick): 1000
// ADU background with a gradient, σ≈25 noise, hot pixels and a few NaN. Cases:
//   stats_minmax     count/min/max/mean only (pass 1)
//   stats_histogram  the full contract (mean, exact median, MAD σ), whole image and Bayer phases
//   stats_tiles      per-tile statistics, T = 128
// GPU paths report kernel time (data resident; the selection's per-level readbacks of 16 KiB
// included, as they are part of the resident computation) and end to end (upload + all passes +
// results); the CPU path times the TypeScript histogram reference and, for comparison, the exact
// quickselect reference (src/algorithms/robust-stats.ts planeStats).

import type { BenchCase, BenchEnv, BenchResult } from '../harness.js';
import { measure, result } from '../harness.js';
import { planeStats } from '../../src/algorithms/robust-stats.js';
import { imageStats, tileStats, type StatsParams } from '../../src/cpu/stats.js';
import {
  imageStatsGpu,
  imageStatsResident,
  statsMinMaxResident,
  tileStatsGpu,
  tileStatsResident,
  type StatsSegment,
} from '../../src/gpu/kernels/stats.js';
import type { GpuContext } from '../../src/gpu/context.js';

function sizeFor(env: BenchEnv): [number, number] {
  return env.quick ? [1500, 1000] : [6000, 4000];
}

/** Deterministic sky frame (LCG noise: fast to generate at 24 Mpx). */
export function skyFrame(W: number, H: number): Float32Array {
  let seed = 4242;
  const rnd = () => {
    seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0;
    return seed / 4294967296;
  };
  const img = new Float32Array(W * H);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      let v = 1000 + (40 * x) / W + (25 * y) / H + 25 * (rnd() + rnd() + rnd() - 1.5);
      if (rnd() < 0.0005) v += 20000 * rnd();
      img[y * W + x] = v;
    }
  }
  for (let i = 0; i < img.length; i += 10007) img[i] = NaN;
  return img;
}

/** Uploads a frame as one segment (24 Mpx f32 = 96 MB fits one 128 MiB binding). */
function resident(ctx: GpuContext, img: Float32Array, H: number): StatsSegment[] {
  return [{ buffer: ctx.upload(img), y0: 0, rows: H }];
}

const TILE = 128;

function wholeCase(kernel: 'stats_minmax' | 'stats_histogram', mode: StatsParams['mode']): BenchCase {
  const name = kernel === 'stats_minmax' ? 'stats_minmax' : `stats_histogram ${mode} (median+MAD)`;
  return {
    kernel,
    async run(env: BenchEnv): Promise<BenchResult[]> {
      const [W, H] = sizeFor(env);
      const img = skyFrame(W, H);
      const params: StatsParams = { width: W, height: H, mode };
      const size = `${W}x${H}`;
      const mpix = (W * H) / 1e6;
      const reps = env.quick ? 1 : 3;
      const { ctx } = env;
      if (!ctx) {
        const out: BenchResult[] = [];
        if (kernel === 'stats_histogram') {
          const time = await measure(() => imageStats(img, params), { warmup: 1, reps });
          out.push(result(env, { name: `${name} typescript`, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time }));
          if (mode === 'whole') {
            const exact = await measure(() => planeStats(img), { warmup: 1, reps });
            out.push(result(env, { name: `${name} typescript exact-select (planeStats)`, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time: exact }));
          }
        }
        return out;
      }
      const segments = resident(ctx, img, H);
      const partials = ctx.storage(64 * 1024, 'bench-partials');
      try {
        const run =
          kernel === 'stats_minmax'
            ? async () => {
                await statsMinMaxResident(ctx, segments[0]!, partials, params);
                await ctx.done();
              }
            : () => imageStatsResident(ctx, segments, params);
        const kernelTime = await measure(run, { warmup: 1, reps });
        const results = [result(env, { name, timing: 'kernel', unit: 'Mpix/s', size, megaUnits: mpix, time: kernelTime })];
        if (kernel === 'stats_histogram') {
          const e2e = await measure(() => imageStatsGpu(ctx, img, params), { warmup: 1, reps });
          results.push(result(env, { name, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time: e2e }));
        }
        return results;
      } finally {
        ctx.pool.release(partials);
        for (const s of segments) ctx.pool.release(s.buffer as GPUBuffer);
      }
    },
  };
}

const tilesCase: BenchCase = {
  kernel: 'stats_tiles',
  async run(env: BenchEnv): Promise<BenchResult[]> {
    const [W, H] = sizeFor(env);
    const img = skyFrame(W, H);
    const params = { width: W, height: H, tile: TILE };
    const size = `${W}x${H}/T${TILE}`;
    const mpix = (W * H) / 1e6;
    const reps = env.quick ? 1 : 3;
    const name = `stats_tiles T=${TILE}`;
    const { ctx } = env;
    if (!ctx) {
      const time = await measure(() => tileStats(img, params), { warmup: 1, reps });
      return [result(env, { name: `${name} typescript`, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time })];
    }
    const segments = resident(ctx, img, H);
    const records = ctx.storage(Math.ceil(W / TILE) * Math.ceil(H / TILE) * 32, 'bench-tiles');
    try {
      const kernelTime = await measure(
        async () => {
          await tileStatsResident(ctx, segments, records, params);
          await ctx.done();
        },
        { warmup: 1, reps },
      );
      const e2e = await measure(() => tileStatsGpu(ctx, img, params), { warmup: 1, reps });
      return [
        result(env, { name, timing: 'kernel', unit: 'Mpix/s', size, megaUnits: mpix, time: kernelTime }),
        result(env, { name, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time: e2e }),
      ];
    } finally {
      ctx.pool.release(records);
      for (const s of segments) ctx.pool.release(s.buffer as GPUBuffer);
    }
  },
};

export const cases: BenchCase[] = [wholeCase('stats_minmax', 'whole'), wholeCase('stats_histogram', 'whole'), wholeCase('stats_histogram', 'bayer'), tilesCase];
