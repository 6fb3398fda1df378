// Benchmarks of star detection + measurement on the CPU (TypeScript; there is no GPU path yet):
// one generated 2048×1536 light (1024×768 with --quick) of the fixture generator — sky gradient,
// vignetting, noise, ~1500 stars, hot pixels — through detectStars (background model, matched
// filter, candidates, deblending, centroids, moments, 64 Moffat fits) and frameMetrics.
// - `stars mono`, `stars osc`: the whole call, mono plane / raw Bayer mosaic (proxy detection,
//   per-site measurement, two site re-normalisations per fitted star);
// - `stars mono detection`: its first stages only (saturation, background, filter, candidates,
//   deblending, frame scale), i.e. what a GPU detection kernel would replace (its CPU time is
//   the whole call's, scaled by the stages' median share of the wall time).
// The budget: detection + matching < 150 ms per 2048×1536 frame on the 2-core machine.

import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { BenchCase, BenchEnv, BenchResult, Timing } from '../harness.js';
import { measure, result } from '../harness.js';
import { generateDataset } from '../../fixtures/generator/index.js';
import { readFitsImage } from '../../src/fits/index.js';
import { detectStars, type StarDetection } from '../../src/algorithms/stars.js';
import { frameMetrics } from '../../src/algorithms/frame-metrics.js';

async function frame(kind: 'mono' | 'osc', width: number, height: number): Promise<Float32Array> {
  const out = await mkdtemp(join(tmpdir(), 'skystack-bench-stars-'));
  try {
    const truth = await generateDataset({ out, kind, frames: 1, width, height, seed: 1, calibration: false });
    return (await readFitsImage(join(out, truth.frames[0]!.file))).data;
  } finally {
    await rm(out, { recursive: true, force: true });
  }
}

/** Timing of a stage from its per-repetition wall times; CPU time by the stage's share of the call. */
function stageTiming(values: number[], shares: number[], whole: Timing): Timing {
  const v = [...values].sort((a, b) => a - b);
  const share = [...shares].sort((a, b) => a - b)[shares.length >> 1]!;
  return { medianMs: v[v.length >> 1]!, minMs: v[0]!, maxMs: v[v.length - 1]!, reps: v.length, cpuMs: whole.cpuMs * share };
}

export const cases: BenchCase[] = [
  {
    kernel: 'stars',
    async run(env: BenchEnv): Promise<BenchResult[]> {
      if (env.ctx) return [];
      const [width, height] = env.quick ? [1024, 768] : [2048, 1536];
      const size = `${width}x${height}`;
      const mpix = (width * height) / 1e6;
      const reps = env.quick ? 3 : 7;
      const out: BenchResult[] = [];
      for (const kind of ['mono', 'osc'] as const) {
        const data = await frame(kind, width, height);
        const stages: number[] = [];
        const shares: number[] = [];
        let stars = 0;
        const time = await measure(
          () => {
            const det = detectStars(data, width, height, { cfa: kind === 'osc' }) as StarDetection;
            if (!det.ok) throw new Error('detection failed');
            frameMetrics(det);
            const stage = det.timings.background + det.timings.filter + det.timings.candidates;
            stages.push(stage);
            shares.push(stage / det.timings.total);
            stars = det.stars.length;
          },
          { warmup: 2, reps },
        );
        out.push(result(env, { name: `stars ${kind} (${stars} stars)`, timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time }));
        if (kind === 'mono') {
          out.push(result(env, { name: 'stars mono detection', timing: 'end_to_end', unit: 'Mpix/s', size, megaUnits: mpix, time: stageTiming(stages.slice(-reps), shares.slice(-reps), time) }));
        }
      }
      return out;
    },
  },
];
