// Datasets and child runs of the Raw Stack benches (bench/rawstack.ts): generated sessions are
// cached under a data folder (regenerated only when their truth.json is missing), and each Raw
// Stack runs in its own child process (bench/rawstack-child.ts) so its peak RSS is its own.

import { spawn } from 'node:child_process';
import { access, mkdir, readdir, rm, symlink } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateDataset } from '../fixtures/generator/index.js';
import { MALLOC_TUNING, withAllocatorTuning } from '../src/cli/allocator-env.js';

const here = dirname(fileURLToPath(import.meta.url));
const CHILD = join(here, 'rawstack-child.js');

export interface DataSpec {
  frames: number;
  width: number;
  height: number;
  seed: number;
  calibration: boolean;
  /** Camera kind; default mono (the generator's OSC frames are RGGB). */
  kind?: 'mono' | 'osc';
}

export const dataName = (s: DataSpec): string => `${s.kind ?? 'mono'}${s.frames}-${s.width}x${s.height}-s${s.seed}${s.calibration ? '-cal' : ''}`;

/** The dataset's folder under `root`, generated on first use (no labelled bad frames). */
export async function ensureData(root: string, spec: DataSpec, log: (s: string) => void): Promise<string> {
  const dir = join(root, dataName(spec));
  const ok = await access(join(dir, 'truth.json')).then(
    () => true,
    () => false,
  );
  if (!ok) {
    log(`[bench] generating ${dataName(spec)} in ${dir}`);
    await generateDataset({ out: dir, kind: spec.kind ?? 'mono', frames: spec.frames, width: spec.width, height: spec.height, seed: spec.seed, calibration: spec.calibration, badFrames: 'none' });
  }
  return dir;
}

/**
 * A lights folder of the first `frames` lights of `dir` (symbolic links, in name order) under
 * `root`, so runs of different lengths share one generated session and its calibration frames.
 */
export async function subsetLights(root: string, dir: string, frames: number): Promise<string> {
  const names = (await readdir(join(dir, 'lights'))).filter((f) => /\.fits?$/i.test(f)).sort();
  if (names.length < frames) throw new Error(`${dir} holds ${names.length} lights, fewer than ${frames}`);
  const out = join(root, 'subsets', `${dir.split('/').pop()}-first${frames}`);
  await rm(out, { recursive: true, force: true });
  await mkdir(out, { recursive: true });
  for (const f of names.slice(0, frames)) await symlink(join(dir, 'lights', f), join(out, f));
  return out;
}

/**
 * A Raw Stack configuration over a generated dataset, postprocess off (the run ends with STACKING
 * and REPORT). Small frames (under 0.1 Mpx: about 20 stars at the generator's star density) get
 * quality_filter.min_stars 8 instead of 30, or every frame would leave as too_few_stars.
 */
export function benchConfig(dir: string, calibration: boolean, budgetMiB: number | undefined, spec?: Pick<DataSpec, 'width' | 'height'>, workers?: number, lightsDir?: string): Record<string, unknown> {
  return {
    ...(spec && spec.width * spec.height < 100_000 ? { quality_filter: { min_stars: 8 } } : {}),
    lights_dir: lightsDir ?? join(dir, 'lights'),
    ...(calibration ? { bias_dir: join(dir, 'bias'), darks_dir: join(dir, 'darks'), flats_dir: join(dir, 'flats') } : {}),
    // No budget: the default a user gets.
    runtime_limits: { ...(budgetMiB === undefined ? {} : { memory_budget: budgetMiB }), ...(workers ? { parallel_workers: workers } : {}) },
    postprocess: { astrometry: false, pcc: false, bge: false, hypermetric_stretch: false },
  };
}

export interface PhaseRow {
  phase: string;
  status: string;
  reason?: string;
  duration_ms: number;
  /** CPU time of all threads while the phase ran (null from an older child). */
  cpu_ms?: number | null;
  peak_rss_mib: number | null;
}

export interface ChildResult {
  status: string;
  wall_ms: number;
  cpu_ms: number;
  max_rss_mib: number;
  device: string;
  phases: PhaseRow[];
  run_dir: string;
}

/** `runChild`'s env for glibc's own malloc defaults (the MALLOC_* names the CLI sets removed). */
export const PLAIN_MALLOC: NodeJS.ProcessEnv = Object.fromEntries(Object.keys(MALLOC_TUNING).map((k) => [k, undefined]));

/**
 * Runs one Raw Stack in a child process; rejects when the child fails or prints no result. The
 * child stands for the process the CLI runs a pipeline in, so it gets the allocator settings the
 * CLI gives that process (allocator-env.ts); `env` goes over them (PLAIN_MALLOC: glibc defaults).
 */
export function runChild(config: Record<string, unknown>, runsDir: string, env: NodeJS.ProcessEnv = {}): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CHILD, JSON.stringify(config), runsDir], { env: { ...withAllocatorTuning(process.env), ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d: Buffer) => (out += d.toString()));
    child.stderr.on('data', (d: Buffer) => {
      const text = d.toString();
      err += text;
      // Memory profiling lines of SKYSTACK_BENCH_SAMPLE=1 (rawstack-child.ts), as they come.
      if (process.env.SKYSTACK_BENCH_SAMPLE === '1') for (const l of text.split('\n')) if (/^\[(sample|boundary)\]/.test(l)) console.error(l);
    });
    child.on('error', reject);
    child.on('close', (code) => {
      const line = out.trim().split('\n').pop() ?? '';
      try {
        const r = JSON.parse(line) as ChildResult;
        if (code !== 0 || r.status !== 'ok') reject(new Error(`raw stack child ended ${code} with ${line.slice(0, 400)}\n${err.slice(-2000)}`));
        else resolve(r);
      } catch {
        reject(new Error(`raw stack child ended ${code} without a result line:\n${out.slice(-1000)}\n${err.slice(-2000)}`));
      }
    });
  });
}
