// `npm run bench -- gpu`: the GPU path measured. Per device path (the hardware GPU, then the
// software adapter): the device record, its memory bandwidth (bandwidth.ts), every WGSL kernel's
// throughput as a fraction of it (kernels.ts) and the idle CPU after requestDevice(), then the
// Raw Stack bench end to end with per-phase times on that path (and once on the TypeScript path).
// Writes a JSON report and a Markdown section (appended to bench/RESULTS.md unless --no-record;
// --json/--out files are rewritten after every step, so a run cut short keeps what it measured).
// --deadline-s skips what has not started by then. A hardware adapter is required unless
// --allow-software (the rehearsal on a machine without one).
// Exit status: 0 all measured, 1 a case or run failed (the rest still measured and written),
// 3 no hardware adapter where one is required.

import { appendFile, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { GpuContext } from '../../src/gpu/context.js';
import { PassTimer } from '../../src/gpu/timer.js';
import { dataName, benchConfig, ensureData, runChild, type DataSpec } from '../rawstack-data.js';
import { measureBandwidth } from './bandwidth.js';
import { idleSample, recordDevice } from './device-record.js';
import { KERNEL_CASES } from './kernels.js';
import { fractionOf, gbPerSecond } from './model.js';
import { deviceLine, markdown, streamGoal, type GpuBenchReport, type KernelRow, type PathReport, type RawstackReport, type RawstackRun } from './report.js';
import { timeBatches, type BatchOptions } from './timing.js';
import type { GpuBenchOptions } from './args.js';

const here = dirname(fileURLToPath(import.meta.url));
const resultsFile = join(here, '..', '..', '..', 'bench', 'RESULTS.md');

/** Exact pass timings: Dawn otherwise quantizes timestamps (a guard for browsers). */
const DAWN_FLAGS = ['disable-dawn-features=timestamp_quantization'];

const log = (s: string) => console.log(s);

async function writeAtomic(file: string, text: string): Promise<void> {
  await writeFile(`${file}.tmp`, text);
  await rename(`${file}.tmp`, file);
}

function emptyRow(name: string): KernelRow {
  return { name, kernels: [], cls: 'compute', size: '', bytes: 0, mpix: 0, ms: NaN, timing: 'wall', wall_ms: NaN, span_ms: null, reps: 0, gbs: NaN, fraction: null, mpix_s: NaN };
}

/** Environment of a path: --software-icd is the Vulkan driver list of the software path only. */
function envFor(path: 'gpu' | 'software' | 'cpu', o: GpuBenchOptions): Record<string, string> {
  return path === 'software' && o.softwareIcd ? { VK_DRIVER_FILES: o.softwareIcd } : {};
}

/** Runs `f` with `env` set in process.env (the Vulkan loader reads it when Dawn creates an instance). */
async function withEnv<T>(env: Record<string, string>, f: () => Promise<T>): Promise<T> {
  const saved = Object.fromEntries(Object.keys(env).map((k) => [k, process.env[k]]));
  Object.assign(process.env, env);
  try {
    return await f();
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
  }
}

async function measurePath(path: 'gpu' | 'software', o: GpuBenchOptions, clock: Clock): Promise<PathReport> {
  const idleMs = o.quick ? 1000 : 3000;
  const before = await idleSample(idleMs);
  let created: Awaited<ReturnType<typeof GpuContext.create>>;
  try {
    created = await withEnv(envFor(path, o), () => GpuContext.create(path, undefined, { dawnFlags: DAWN_FLAGS }));
  } catch (e) {
    return { path, available: false, reason: (e as Error).message };
  }
  const ctx = created.ctx!;
  const afterRequest = await idleSample(idleMs);
  const adapterInfo = (ctx.device as GPUDevice & { adapterInfo?: GPUAdapterInfo }).adapterInfo ?? null;
  const report: PathReport = { path, available: true, device: recordDevice(ctx, adapterInfo), timestamp_granularity_ns: null };
  log(`[gpu-bench] ${deviceLine(report)}`);
  const timer = PassTimer.supported(ctx.device) ? new PassTimer(ctx.device) : null;
  ctx.timer = timer;
  log(`[gpu-bench]   timing: ${timer ? 'GPU timestamp queries' : 'wall time (no timestamp-query feature)'}`);
  // A software adapter takes a whole batch's target in one repetition: fewer samples keep its time in bounds.
  const batch: BatchOptions = { targetMs: o.quick ? 10 : 25, maxReps: 200, samples: o.quick || path === 'software' ? 3 : 5 };
  try {
    report.bandwidth = await measureBandwidth(ctx, { bytes: (o.quick ? 64 : 256) * 2 ** 20, batch });
    for (const b of report.bandwidth) log(`[gpu-bench]   bandwidth ${b.probe}: ${b.gbs.toFixed(1)} GB/s (${b.timing}, ${b.reps} reps)`);
    report.reference_gbs = report.bandwidth.find((b) => b.probe === 'copy kernel')?.gbs ?? null;
  } catch (e) {
    log(`[gpu-bench]   bandwidth: FAILED ${(e as Error).message}`);
    report.bandwidth = [];
    report.reference_gbs = null;
  }
  report.kernels = [];
  let grain: number | null = null;
  for (const c of KERNEL_CASES) {
    if (o.only && !o.only.test(c.name)) continue;
    let row: KernelRow;
    const late = clock.over();
    if (late) {
      report.kernels.push({ ...emptyRow(c.name), skipped: late });
      continue;
    }
    try {
      const p = await c.prepare(ctx, o.quick);
      try {
        const t = await timeBatches(ctx, p.rep, { ...batch, selfSubmit: p.selfSubmit ?? false });
        if (t.granularityNs !== null) grain = grain === null ? t.granularityNs : Math.min(grain, t.granularityNs);
        const gbs = gbPerSecond(p.bytes, t.ms);
        row = { name: p.name, kernels: p.kernels, cls: p.cls, size: p.size, bytes: p.bytes, mpix: p.mpix, ms: t.ms, timing: t.timing, wall_ms: t.wallMs, span_ms: t.spanMs, reps: t.reps, gbs, fraction: fractionOf(gbs, report.reference_gbs), mpix_s: p.mpix / (t.ms / 1000) };
      } finally {
        p.release();
      }
      if (ctx.uncapturedErrors.length > 0) throw new Error(`device validation errors: ${ctx.uncapturedErrors.splice(0).join('; ')}`);
    } catch (e) {
      row = { ...emptyRow(c.name), error: (e as Error).message.split('\n')[0] };
    }
    report.kernels.push(row);
    log(`[gpu-bench]   ${row.name}: ${row.error ? `FAILED ${row.error}` : `${row.ms.toFixed(3)} ms/rep (${row.timing}, ${row.reps} reps), ${row.gbs.toFixed(1)} GB/s, ${row.fraction === null ? '–' : `${(100 * row.fraction).toFixed(0)} %`} of copy`}`);
  }
  report.timestamp_granularity_ns = grain;
  const afterWork = await idleSample(idleMs);
  ctx.timer = null;
  timer?.destroy();
  ctx.destroy();
  const afterDestroy = await idleSample(idleMs);
  report.idle = { before, after_request: afterRequest, after_work: afterWork, after_destroy: afterDestroy };
  return report;
}

/** The phases' own timing breakdowns (timing_ms / timings_ms) from a run's events.jsonl. */
async function phaseTimings(runDir: string): Promise<Map<string, Record<string, unknown>>> {
  const out = new Map<string, Record<string, unknown>>();
  const text = await readFile(join(runDir, 'artifacts', 'preprocess', 'events.jsonl'), 'utf8').catch(() => '');
  for (const line of text.split('\n')) {
    if (!line.includes('"phase_end"')) continue;
    try {
      const e = JSON.parse(line) as Record<string, unknown>;
      const t = (e.timing_ms ?? e.timings_ms) as Record<string, unknown> | undefined;
      if (typeof e.phase === 'string' && t && typeof t === 'object') out.set(e.phase, t);
    } catch {
      // a torn line: no breakdown for that phase
    }
  }
  return out;
}

/** Seconds since the bench started, against --deadline-s. */
class Clock {
  private readonly t0 = performance.now();
  constructor(private readonly deadlineS: number | undefined) {}
  get seconds(): number {
    return (performance.now() - this.t0) / 1000;
  }
  /** Why the next step is skipped (the deadline passed), or null. */
  over(): string | null {
    return this.deadlineS !== undefined && this.seconds > this.deadlineS ? `skipped: ${this.seconds.toFixed(0)} s past the start, over --deadline-s ${this.deadlineS}` : null;
  }
}

/** The Raw Stack dataset (generated on first use) and an empty report for its runs. */
async function rawstackData(o: GpuBenchOptions): Promise<{ data: string; runs: string; spec: DataSpec; report: RawstackReport }> {
  const root = o.data ?? join(tmpdir(), 'skystack-bench-data');
  const spec: DataSpec = { frames: o.frames, width: o.width, height: o.height, seed: 9, calibration: true };
  const t0 = performance.now();
  const cached = await readFile(join(root, dataName(spec), 'truth.json')).then(
    () => true,
    () => false,
  );
  const data = await ensureData(root, spec, log);
  const report: RawstackReport = { dataset: dataName(spec), frames: spec.frames, width: spec.width, height: spec.height, budget_mib: o.budget, generate_s: cached ? null : Math.round((performance.now() - t0) / 100) / 10, runs: [] };
  const runs = join(root, 'runs');
  await mkdir(runs, { recursive: true });
  return { data, runs, spec, report };
}

/** One Raw Stack in a child process with SKYSTACK_DEVICE=path. */
async function rawstackRun(path: 'gpu' | 'software' | 'cpu', d: Awaited<ReturnType<typeof rawstackData>>, o: GpuBenchOptions): Promise<RawstackRun> {
  log(`[gpu-bench] Raw Stack ${d.report.dataset} on SKYSTACK_DEVICE=${path}`);
  try {
    const r = await runChild(benchConfig(d.data, true, o.budget, d.spec), d.runs, { SKYSTACK_DEVICE: path, ...envFor(path, o) });
    const timings = await phaseTimings(r.run_dir);
    await rm(r.run_dir, { recursive: true, force: true });
    log(`[gpu-bench]   ${r.wall_ms} ms wall, ${r.cpu_ms} ms CPU, peak RSS ${r.max_rss_mib.toFixed(0)} MiB (${r.device})`);
    return {
      path,
      device: r.device,
      wall_ms: r.wall_ms,
      cpu_ms: r.cpu_ms,
      max_rss_mib: r.max_rss_mib,
      phases: r.phases.map((p) => ({ phase: p.phase, status: p.status, duration_ms: p.duration_ms, cpu_ms: p.cpu_ms ?? null, peak_rss_mib: p.peak_rss_mib, ...(timings.has(p.phase) ? { timing: timings.get(p.phase)! } : {}) })),
    };
  } catch (e) {
    const error = (e as Error).message.slice(0, 2000);
    log(`[gpu-bench]   FAILED ${error}`);
    return { path, error };
  }
}

/**
 * Order: each device path's kernels and then its Raw Stack, the TypeScript path's Raw Stack after
 * the first path that ran, so the hardware GPU's figures come first; the report is rewritten
 * after every step, so a run cut short (the device call's time limit) still leaves them.
 */
export async function gpuBench(o: GpuBenchOptions): Promise<number> {
  const clock = new Clock(o.deadlineS);
  const report: GpuBenchReport = {
    schema: 'skystack-gpu-bench/1',
    date: new Date().toISOString(),
    machine: { cpu: cpus()[0]?.model ?? 'unknown', cores: cpus().length, memory_gib: Math.round(totalmem() / 2 ** 30), node: process.version, platform: `${process.platform}-${process.arch}`, load: [loadavg()[0]!, 0], ...(o.label ? { label: o.label } : {}) },
    options: { quick: o.quick, paths: o.paths, allow_software: o.allowSoftware, software_icd: o.softwareIcd ?? null },
    paths: [],
    rawstack: null,
  };
  const save = async (final: boolean) => {
    report.machine.load[1] = loadavg()[0]!;
    report.complete = final;
    if (o.json) await writeAtomic(o.json, JSON.stringify(report, null, 2) + '\n');
    if (o.out) await writeAtomic(o.out, markdown(report));
  };
  let status = 0;
  let data: Awaited<ReturnType<typeof rawstackData>> | null = null;
  for (const path of o.paths) {
    const skip = clock.over();
    const p: PathReport = skip ? { path, available: false, reason: skip } : await measurePath(path, o, clock);
    report.paths.push(p);
    await save(false);
    if (!p.available) {
      log(`[gpu-bench] ${deviceLine(p)}`);
      if (path === 'gpu' && !o.allowSoftware) {
        console.error(`[gpu-bench] FAILED: no hardware adapter (${p.reason}). On a machine without a GPU pass --allow-software to measure the software adapter alone.`);
        status = 3;
        break;
      }
      continue;
    }
    if (!o.rawstack) continue;
    try {
      data ??= await rawstackData(o);
    } catch (e) {
      log(`[gpu-bench] Raw Stack dataset: FAILED ${(e as Error).message}`);
      break;
    }
    report.rawstack = data.report;
    for (const run of data.report.runs.some((r) => r.path === 'cpu') ? [path] : [path, 'cpu' as const]) {
      const late = clock.over();
      data.report.runs.push(late ? { path: run, skipped: late } : await rawstackRun(run, data, o));
      await save(false);
    }
  }
  const failed = report.paths.some((p) => p.kernels?.some((k) => k.error)) || (report.rawstack?.runs.some((r) => r.error) ?? false);
  if (status === 0 && failed) status = 1;
  await save(true);
  const section = markdown(report);
  log(section);
  for (const p of report.paths) {
    if (!p.kernels) continue;
    const g = streamGoal(p.kernels);
    log(`[gpu-bench] ${p.path}: stream kernels at the goal: ${g.met} of ${g.of}`);
  }
  if (o.json) log(`[gpu-bench] JSON: ${o.json}`);
  if (o.out) log(`[gpu-bench] Markdown section: ${o.out}`);
  if (o.record && report.paths.some((p) => p.available)) {
    await appendFile(resultsFile, section);
    log(`[gpu-bench] appended to ${resultsFile}`);
  }
  return status;
}
