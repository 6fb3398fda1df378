// `npm run bench [-- --quick] [--device all|auto|gpu|software|cpu] [--only REGEX] [--json FILE] [--no-record]`
// Runs every benchmark case in bench/kernels/ on every available device path, prints a table
// with each figure also as a fraction of the measured host memory bandwidth, appends a dated
// section to bench/RESULTS.md and optionally writes the figures as JSON for scripts.
// `npm run bench -- rawstack|rawstack-memory [--quick] [--budget MIB] [--repeat N] [--data DIR]
// [--no-siril] [--no-record]`: the whole-pipeline benches of bench/rawstack.ts instead (the
// device comes from SKYSTACK_DEVICE, as for a run); `rawstack --osc-large` and `rawstack --scale
// [--size WxH] [--frames A,B,C]`: the large ones of bench/rawstack-large.ts.
// `npm run bench -- gpu [--quick] [--allow-software] [--paths gpu,software] [--only REGEX]
// [--frames N --size WxH] [--no-rawstack] [--json FILE] [--out FILE] [--label TEXT]
// [--software-icd FILE] [--deadline-s S]`: the GPU
// path measured (bench/gpu/suite.ts).
// `npm run bench -- tiled [--frames N] [--size WxH] [--repeat N] [--data DIR] [--json FILE]
// [--no-record]`: the tiled workflow against Raw Stack (bench/tiled-quality.ts, in a child
// process; its own options, --scenarios and --set among them, when run directly).

import { appendFile, readdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { GpuContext } from '../src/gpu/context.js';
import type { DeviceInfo, DevicePath } from '../src/gpu/device.js';
import { measure, type BenchCase, type BenchEnv, type BenchResult } from './harness.js';

const here = dirname(fileURLToPath(import.meta.url));
const resultsFile = join(here, '..', '..', 'bench', 'RESULTS.md');

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    budget: { type: 'string' },
    repeat: { type: 'string', default: '1' },
    data: { type: 'string' },
    'no-siril': { type: 'boolean', default: false },
    'osc-large': { type: 'boolean', default: false },
    scale: { type: 'boolean', default: false },
    quick: { type: 'boolean', default: false },
    device: { type: 'string', default: 'all' },
    only: { type: 'string' },
    json: { type: 'string' },
    'no-record': { type: 'boolean', default: false },
    // gpu suite (bench/gpu/suite.ts)
    'allow-software': { type: 'boolean', default: false },
    paths: { type: 'string', default: 'gpu,software' },
    frames: { type: 'string' },
    size: { type: 'string' },
    out: { type: 'string' },
    label: { type: 'string' },
    'no-rawstack': { type: 'boolean', default: false },
    'software-icd': { type: 'string' },
    'deadline-s': { type: 'string' },
  },
});

interface Machine {
  cpu: string;
  cores: number;
  memory_gib: number;
  node: string;
  platform: string;
  /** Host memory bandwidth from a large Float64Array copy, bytes read + written. */
  bandwidth_gbs: number;
  date: string;
}

async function hostBandwidth(quick: boolean): Promise<number> {
  const n = (quick ? 32 : 128) * 1024 * 1024 / 8;
  const a = new Float64Array(n).fill(1);
  const b = new Float64Array(n);
  const t = await measure(() => b.set(a), { warmup: 1, reps: quick ? 3 : 7 });
  return (2 * n * 8) / (t.medianMs / 1000) / 1e9;
}

async function loadCases(only: RegExp | undefined): Promise<BenchCase[]> {
  const dir = join(here, 'kernels');
  const files = (await readdir(dir)).filter((f) => f.endsWith('.js')).sort();
  const cases: BenchCase[] = [];
  for (const f of files) {
    const mod = (await import(join(dir, f))) as { cases?: BenchCase[] };
    for (const c of mod.cases ?? []) if (!only || only.test(c.kernel)) cases.push(c);
  }
  return cases;
}

async function environments(device: string, quick: boolean): Promise<{ env: BenchEnv; skipped?: string }[]> {
  const wanted: DevicePath[] = device === 'all' ? ['gpu', 'software', 'cpu'] : device === 'auto' ? [] : [device as DevicePath];
  const out: { env: BenchEnv; skipped?: string }[] = [];
  if (device === 'auto') {
    const { ctx, info } = await GpuContext.create('auto');
    out.push({ env: { ctx, info, quick } });
    return out;
  }
  for (const path of wanted) {
    if (path === 'cpu') {
      const { info } = await GpuContext.create('cpu');
      out.push({ env: { ctx: null, info, quick } });
      continue;
    }
    try {
      const { ctx, info } = await GpuContext.create(path);
      out.push({ env: { ctx, info, quick } });
    } catch (e) {
      out.push({ env: { ctx: null, info: { kind: path } as DeviceInfo, quick }, skipped: (e as Error).message });
    }
  }
  return out;
}

function table(results: BenchResult[], bandwidth: number): string {
  const header = ['benchmark', 'device', 'timing', 'size', 'ms', 'cpu ms', 'value', 'unit'];
  const rows = results.map((r) => [r.name, r.device, r.timing, r.size, r.ms.toFixed(1), r.cpu_ms === undefined ? '–' : r.cpu_ms.toFixed(0), r.value.toFixed(1), r.unit]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(' | ')} |`;
  return [line(header), line(widths.map((w) => '-'.repeat(w))), ...rows.map(line), '', `host memory bandwidth (Float64Array copy, read + write): ${bandwidth.toFixed(1)} GB/s`].join('\n');
}

async function main(): Promise<void> {
  const quick = values.quick ?? false;
  const only = values.only ? new RegExp(values.only) : undefined;
  const cases = await loadCases(only);
  const bandwidth = await hostBandwidth(quick);
  const machine: Machine = {
    cpu: cpus()[0]?.model ?? 'unknown',
    cores: cpus().length,
    memory_gib: Math.round(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform}-${process.arch}`,
    bandwidth_gbs: Number(bandwidth.toFixed(2)),
    date: new Date().toISOString(),
  };
  const results: BenchResult[] = [];
  const adapters: string[] = [];
  for (const { env, skipped } of await environments(values.device ?? 'all', quick)) {
    if (skipped) {
      console.log(`[bench] device path ${env.info.kind}: not available (${skipped})`);
      continue;
    }
    const label = env.ctx ? `${env.info.kind} (${env.info.adapter}, ${env.info.backend})` : 'cpu (TypeScript)';
    adapters.push(label);
    console.log(`[bench] device path ${label}: ${cases.length} cases`);
    for (const c of cases) {
      try {
        const rs = await c.run(env);
        for (const r of rs) console.log(`  ${r.name} [${r.device}/${r.timing}] ${r.size}: ${r.value.toFixed(1)} ${r.unit} (${r.ms.toFixed(1)} ms)`);
        results.push(...rs);
      } catch (e) {
        console.log(`  ${c.kernel}: FAILED ${(e as Error).message}`);
      }
    }
    env.ctx?.destroy();
  }
  const text = table(results, bandwidth);
  console.log(`\n${text}`);
  if (values.json) await writeFile(values.json, JSON.stringify({ machine, results }, null, 2) + '\n');
  if (!values['no-record'] && results.length > 0) {
    const section = [
      '',
      `## ${machine.date.slice(0, 10)} — ${machine.cpu}, ${machine.cores} cores, ${machine.memory_gib} GiB, node ${machine.node}${quick ? ' (quick)' : ''}`,
      '',
      `Device paths: ${adapters.join('; ')}`,
      '',
      text,
      '',
    ].join('\n');
    await appendFile(resultsFile, section);
    console.log(`[bench] appended to ${resultsFile}`);
  }
}

const SUITES = ['rawstack', 'rawstack-memory', 'gpu', 'tiled'];
const suite = positionals[0];
if (positionals.length > 1 || (suite !== undefined && !SUITES.includes(suite))) {
  console.error(`bench: unknown selector '${positionals.join(' ')}' (one of ${SUITES.join(', ')}, or none for the kernel benches)`);
  process.exitCode = 2;
} else if (suite === 'tiled') {
  const { spawnSync } = await import('node:child_process');
  const args = [join(here, 'tiled-quality.js')];
  if (values.frames) args.push('--frames', values.frames);
  if (values.size) args.push('--size', values.size);
  if (values.data) args.push('--data', values.data);
  if (values.json) args.push('--json', values.json);
  if (values.repeat !== '1') args.push('--repeats', values.repeat!);
  if (!values['no-record']) args.push('--record');
  process.exitCode = spawnSync(process.execPath, args, { stdio: 'inherit' }).status ?? 1;
} else if (suite === 'gpu') {
  const { parseGpuBenchArgs } = await import('./gpu/args.js');
  const { gpuBench } = await import('./gpu/suite.js');
  const parsed = parseGpuBenchArgs(values);
  if (typeof parsed === 'string') {
    console.error(`bench gpu: ${parsed}`);
    process.exitCode = 2;
  } else process.exitCode = await gpuBench(parsed);
} else if (suite !== undefined) {
  const { speedBench, memoryBench } = await import('./rawstack.js');
  const budget = values.budget === undefined ? undefined : Number(values.budget);
  const repeat = Number(values.repeat);
  if ((budget !== undefined && !(budget >= 64)) || !(repeat >= 1)) {
    console.error('bench: --budget takes MiB (at least 64) and --repeat a positive count');
    process.exitCode = 2;
  } else {
    const options = { quick: values.quick ?? false, record: !values['no-record'], data: values.data, budget, repeat: Math.floor(repeat), siril: !values['no-siril'] };
    const large = suite === 'rawstack' && (values['osc-large'] || values.scale);
    if ((values['osc-large'] || values.scale) && (suite !== 'rawstack' || (values['osc-large'] && values.scale))) {
      console.error('bench: --osc-large and --scale belong to rawstack, one at a time');
      process.exitCode = 2;
    } else if (large) {
      const { oscLargeBench, scaleBench } = await import('./rawstack-large.js');
      if (values['osc-large']) await oscLargeBench(options);
      else process.exitCode = await scaleBench({ ...options, size: values.size, frames: values.frames });
    } else await (suite === 'rawstack' ? speedBench(options) : memoryBench(options));
  }
} else await main();
