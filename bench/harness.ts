// Benchmark harness shared by bench/kernels/*.ts: timing with warm-up and median of
// repetitions, and the result record `npm run bench -- --json` writes.
// Kernel timing = data resident on the device, from submit to completion; end_to_end adds
// upload and readback. CPU (TypeScript) cases report end_to_end on host arrays.

import type { GpuContext } from '../src/gpu/context.js';
import type { DeviceInfo, DevicePath } from '../src/gpu/device.js';

export interface BenchEnv {
  /** Device context for the path under test, or null for the TypeScript path. */
  ctx: GpuContext | null;
  info: DeviceInfo;
  /** `--quick`: smaller sizes and fewer repetitions (smoke runs, CI). */
  quick: boolean;
}

export type BenchUnit = 'Mpix/s' | 'Mpix·frames/s' | 'GB/s';

export interface BenchResult {
  /** Starts with the kernel id: stack, debayer, warp_lanczos3, warp_bilinear, calibrate, stats, stretch, decode. */
  name: string;
  device: DevicePath;
  adapter: string;
  timing: 'kernel' | 'end_to_end';
  unit: BenchUnit;
  value: number;
  /** Problem size, e.g. "4096x2048x16". */
  size: string;
  /** Median milliseconds per repetition. */
  ms: number;
  /**
   * Median process CPU milliseconds per repetition (llvmpipe's threads included). On a shared
   * machine wall time inflates with other load; CPU time barely does, so it tells the two apart.
   */
  cpu_ms?: number;
}

export interface BenchCase {
  /** Kernel id this case measures. */
  kernel: string;
  /** Runs on the given path; returns nothing when the case does not apply to it (e.g. GPU-only). */
  run(env: BenchEnv): Promise<BenchResult[]>;
}

export interface Timing {
  medianMs: number;
  minMs: number;
  maxMs: number;
  reps: number;
  /** Median process CPU time (user + system, all threads of this process) per repetition. */
  cpuMs: number;
}

/** Median wall time of `fn` after `warmup` untimed calls. */
export async function measure(fn: () => unknown | Promise<unknown>, options: { warmup?: number; reps?: number } = {}): Promise<Timing> {
  const warmup = options.warmup ?? 1;
  const reps = options.reps ?? 5;
  for (let i = 0; i < warmup; i++) await fn();
  const times: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < reps; i++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
  }
  times.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  return { medianMs: times[Math.floor(times.length / 2)]!, minMs: times[0]!, maxMs: times[times.length - 1]!, reps, cpuMs: cpu[Math.floor(cpu.length / 2)]! };
}

/** Builds a result from a timing: `units` is Mpix (or Mpix·frames) processed per repetition. */
export function result(env: BenchEnv, fields: { name: string; timing: BenchResult['timing']; unit: BenchUnit; size: string; megaUnits: number; time: Timing; device?: DevicePath }): BenchResult {
  return {
    name: fields.name,
    device: fields.device ?? (env.ctx ? env.info.kind : 'cpu'),
    adapter: env.ctx ? (env.info.adapter ?? 'unknown') : `TypeScript on ${process.version}`,
    timing: fields.timing,
    unit: fields.unit,
    value: fields.megaUnits / (fields.time.medianMs / 1000),
    size: fields.size,
    ms: fields.time.medianMs,
    cpu_ms: fields.time.cpuMs,
  };
}
