// Raw Stack benches (issue 6), selected by bench/run.ts's positional argument:
//   rawstack         speed: mono 30 frames 2048×1536 with bias, darks and flats through STACKING
//                    (postprocess off; REPORT runs too), wall time, CPU time and peak RSS per
//                    phase; when siril-cli is installed, Siril on the same frames (bench/siril.ts)
//                    and the ratios skystack / Siril; skystack runs twice: as the CLI runs it
//                    (with the allocator settings the CLI sets itself, src/cli/allocator-env.ts)
//                    and with glibc's plain malloc defaults. `--quick`: 10 frames of 1024×768.
//   rawstack-memory  memory-flat streaming: peak RSS with runtime_limits.memory_budget 256 MiB of
//                    a 30- and a 120-frame run of 1024×768 (ratio, bar ≤ 1.15), and a 1000-frame
//                    run of 256×192 completing. `--quick`: 10 vs 40 frames, 200 small frames.
// `rawstack --osc-large` and `rawstack --scale` are the large benches of bench/rawstack-large.ts,
// which reuse this file's tables and recording.
// Every Raw Stack runs in its own child process (bench/rawstack-child.ts). Datasets are cached
// under --data (default $TMPDIR/skystack-bench-data). Results print as tables and are appended
// to bench/RESULTS.md unless --no-record.

import { appendFile, mkdir, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { benchConfig, dataName, ensureData, PLAIN_MALLOC, runChild, type ChildResult, type DataSpec, type PhaseRow } from './rawstack-data.js';
import { MALLOC_TUNING, V8_TUNING_FLAG } from '../src/cli/allocator-env.js';
import { runSiril, sirilVersion, type SirilResult } from './siril.js';

const here = dirname(fileURLToPath(import.meta.url));
const resultsFile = join(here, '..', '..', 'bench', 'RESULTS.md');

export interface RawstackBenchOptions {
  quick: boolean;
  record: boolean;
  data: string | undefined;
  budget: number | undefined;
  repeat: number;
  siril: boolean;
}

export const log = (s: string) => console.log(s);
export const mib = (v: number | null) => (v === null ? '–' : v.toFixed(0));

export function machineLine(): string {
  return `${cpus()[0]?.model ?? 'unknown CPU'}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}`;
}

/**
 * One row per phase, one "wall ms / CPU ms / peak MiB" column per labelled run (CPU: all threads
 * while the phase ran; on a shared machine it moves less than the wall time).
 */
export function phaseColumns(runs: [string, ChildResult][]): string {
  const cpuOf = (p: PhaseRow) => (p.cpu_ms == null ? '–' : String(p.cpu_ms));
  if (runs.length === 1) {
    const r = runs[0]![1];
    const rows = r.phases.filter((p) => p.status !== 'skipped').map((p) => `| ${p.phase} | ${p.duration_ms} | ${cpuOf(p)} | ${mib(p.peak_rss_mib)} |`);
    return ['| phase | wall ms | CPU ms | peak RSS MiB |', '|---|---|---|---|', ...rows, `| **whole run** | **${r.wall_ms}** | ${r.cpu_ms} | **${mib(r.max_rss_mib)}** |`].join('\n');
  }
  const phases = runs[0]![1].phases.filter((p) => p.status !== 'skipped').map((p) => p.phase);
  const cell = (r: ChildResult, ph: string) => {
    const p = r.phases.find((x) => x.phase === ph);
    return p ? `${p.duration_ms} / ${cpuOf(p)} / ${mib(p.peak_rss_mib)}` : '–';
  };
  return [
    `| phase | ${runs.map(([label]) => `${label}: wall ms / CPU ms / peak MiB`).join(' | ')} |`,
    `|---|${runs.map(() => '---').join('|')}|`,
    ...phases.map((ph) => `| ${ph} | ${runs.map(([, r]) => cell(r, ph)).join(' | ')} |`),
    `| **whole run** | ${runs.map(([, r]) => `**${r.wall_ms}** / ${r.cpu_ms} / **${mib(r.max_rss_mib)}**`).join(' | ')} |`,
  ].join('\n');
}

/** The allocator settings the CLI and the job children set (re-exported for the memory test). */
export { MALLOC_TUNING };

/** Best (lowest wall time) of `repeat` runs. */
export async function bestOf(repeat: number, f: () => Promise<ChildResult>, label = ''): Promise<ChildResult> {
  let best: ChildResult | null = null;
  for (let i = 0; i < repeat; i++) {
    const r = await f();
    log(`[bench]   ${label}run ${i + 1}/${repeat}: ${r.wall_ms} ms wall, ${r.cpu_ms} ms CPU, peak RSS ${mib(r.max_rss_mib)} MiB`);
    if (!best || r.wall_ms < best.wall_ms) best = r;
  }
  return best!;
}

/**
 * Appends one dated section to bench/RESULTS.md (unless --no-record): `## <date> — <title>`,
 * the setup paragraph, the table and the verdict, each followed by a blank line.
 */
export async function record(section: { title: string; setup: string; table: string; verdict: string }, options: Pick<RawstackBenchOptions, 'record'>): Promise<void> {
  if (!options.record) return;
  const date = new Date().toISOString().slice(0, 10);
  await appendFile(resultsFile, ['', `## ${date} — ${section.title}`, '', section.setup, '', section.table, '', section.verdict, ''].join('\n'));
  log(`[bench] appended to ${resultsFile}`);
}

export async function speedBench(options: RawstackBenchOptions): Promise<void> {
  const root = options.data ?? join(tmpdir(), 'skystack-bench-data');
  const spec: DataSpec = options.quick ? { frames: 10, width: 1024, height: 768, seed: 9, calibration: true } : { frames: 30, width: 2048, height: 1536, seed: 9, calibration: true };
  const budget = options.budget ?? 256;
  const load = loadavg()[0]!;
  const data = await ensureData(root, spec, log);
  const runs = join(root, 'runs');
  await mkdir(runs, { recursive: true });
  log(`[bench] rawstack: ${dataName(spec)}, memory_budget ${budget} MiB, best of ${options.repeat} interleaved rounds`);
  const version = options.siril ? await sirilVersion() : null;
  let sirilNote = '';
  if (!options.siril) sirilNote = 'Siril comparison switched off (--no-siril).';
  else if (!version) sirilNote = 'siril-cli not installed (apt-get install -y --no-install-recommends siril): no Siril comparison.';
  // `tuned` is what a user gets (the CLI's settings); `plain` is glibc's own defaults, for
  // comparison. Runs interleave round by round (the order rotating), so that a machine that
  // slows down or speeds up during the bench moves all three alike; each round's own ratio to
  // Siril is kept beside the best-of ratio.
  const rounds: { tuned: ChildResult; plain: ChildResult; siril: SirilResult | null }[] = [];
  for (let i = 0; i < options.repeat; i++) {
    const round: { tuned?: ChildResult; plain?: ChildResult; siril?: SirilResult | null } = { siril: null };
    const steps: (() => Promise<void>)[] = [
      async () => {
        const r = await runChild(benchConfig(data, true, budget), runs);
        await rm(r.run_dir, { recursive: true, force: true });
        log(`[bench]   round ${i + 1}/${options.repeat} as the CLI runs it: ${r.wall_ms} ms wall, ${r.cpu_ms} ms CPU, peak RSS ${mib(r.max_rss_mib)} MiB`);
        round.tuned = r;
      },
      async () => {
        const r = await runChild(benchConfig(data, true, budget), runs, PLAIN_MALLOC);
        await rm(r.run_dir, { recursive: true, force: true });
        log(`[bench]   round ${i + 1}/${options.repeat} plain glibc malloc: ${r.wall_ms} ms wall, ${r.cpu_ms} ms CPU, peak RSS ${mib(r.max_rss_mib)} MiB`);
        round.plain = r;
      },
      ...(version
        ? [
            async () => {
              const r = await runSiril(data, join(root, 'siril-work'), 'dark_120s');
              log(`[bench]   round ${i + 1}/${options.repeat} siril: ${r.wall_ms} ms wall, ${r.cpu_ms} ms CPU, peak RSS ${mib(r.max_rss_mib)} MiB`);
              round.siril = r;
            },
          ]
        : []),
    ];
    for (let k = 0; k < steps.length; k++) await steps[(k + i) % steps.length]!();
    rounds.push({ tuned: round.tuned!, plain: round.plain!, siril: round.siril ?? null });
  }
  if (version) await rm(join(root, 'siril-work'), { recursive: true, force: true });
  const fastest = <T extends { wall_ms: number }>(rs: T[]): T => rs.reduce((a, b) => (b.wall_ms < a.wall_ms ? b : a));
  const tuned = fastest(rounds.map((r) => r.tuned));
  const plain = fastest(rounds.map((r) => r.plain));
  const sirils = rounds.flatMap((r) => (r.siril ? [r.siril] : []));
  const siril: SirilResult | null = sirils.length ? fastest(sirils) : null;
  const table = phaseColumns([
    [`as the CLI runs it (${Object.entries(MALLOC_TUNING).map(([k, v]) => `${k}=${v}`).join(' ')} NODE_OPTIONS=${V8_TUNING_FLAG}, set by skystack)`, tuned],
    ['plain glibc malloc', plain],
  ]);
  log(`\nskystack (${tuned.device}):\n${table}`);

  const lines: string[] = [];
  const ratio = (a: number, b: number | null) => (b ? `${(a / b).toFixed(2)}×` : '–');
  if (siril) {
    const steps = siril.steps.map((s) => `${s.command} ${(s.ms / 1000).toFixed(2)} s`).join(', ');
    lines.push(
      `Siril ${siril.version} (siril-cli, same frames): ${siril.wall_ms} ms wall (CPU ${siril.cpu_ms ?? '–'} ms), peak RSS ${mib(siril.max_rss_mib)} MiB; steps: ${steps}`,
      '',
      `| skystack / Siril | wall time | CPU time | peak RSS |`,
      `|---|---|---|---|`,
      ...([['as the CLI runs it', tuned], ['plain glibc malloc', plain]] as [string, ChildResult][]).map(([label, r]) => `| ${label} | **${ratio(r.wall_ms, siril!.wall_ms)}** | ${ratio(r.cpu_ms, siril!.cpu_ms)} | **${ratio(r.max_rss_mib, siril!.max_rss_mib)}** |`),
      '',
      `Per round, wall as the CLI runs it / Siril's: ${rounds.map((r) => ratio(r.tuned.wall_ms, r.siril?.wall_ms ?? null)).join(', ')}.`,
      '',
      `Target (issue 22) ≤ 0.8× Siril's wall time with no more peak memory, as the CLI runs it: wall ${tuned.wall_ms <= 0.8 * siril.wall_ms ? 'met' : 'NOT met'}, memory ${tuned.max_rss_mib <= siril.max_rss_mib ? 'met' : 'NOT met'}.`,
    );
  } else lines.push(sirilNote);
  const summary = lines.join('\n');
  log(`\n${summary}`);
  await record({ title: `Raw Stack speed vs Siril (\`npm run bench -- rawstack${options.quick ? ' --quick' : ''}\`), ${machineLine()}`, setup: `Mono ${spec.frames} frames ${spec.width}×${spec.height} (16-bit), ${dataName(spec)}: bias 8, darks 6 + 6 (120 s, 300 s), flats 8; INPUT_SCAN → STACKING (+ REPORT), postprocess off, memory_budget ${budget} MiB, best of ${options.repeat} interleaved rounds (skystack as the CLI runs it, with plain glibc malloc, Siril; the order rotating), as the CLI runs it (allocator settings skystack sets itself) and with plain glibc malloc. Device: ${tuned.device}. Peak RSS per phase is VmHWM reset at each phase start; CPU is user + system of all threads. Load average at the start: ${load.toFixed(1)}, at the end: ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores.`, table: table, verdict: summary }, options);
}

export async function memoryBench(options: RawstackBenchOptions): Promise<void> {
  const root = options.data ?? join(tmpdir(), 'skystack-bench-data');
  const budget = options.budget ?? 256;
  const small: DataSpec = { frames: options.quick ? 10 : 30, width: 1024, height: 768, seed: 5, calibration: true };
  const large: DataSpec = { ...small, frames: options.quick ? 40 : 120 };
  const many: DataSpec = { frames: options.quick ? 200 : 1000, width: 256, height: 192, seed: 7, calibration: true };
  const runs = join(root, 'runs');
  await mkdir(runs, { recursive: true });
  const results: { spec: DataSpec; r: ChildResult }[] = [];
  for (const spec of [small, large, many]) {
    const data = await ensureData(root, spec, log);
    log(`[bench] rawstack-memory: ${dataName(spec)}, memory_budget ${budget} MiB`);
    const r = await bestOf(1, () => runChild(benchConfig(data, true, budget, spec), runs));
    await rm(r.run_dir, { recursive: true, force: true });
    results.push({ spec, r });
  }
  const phases = results[0]!.r.phases.filter((p) => p.status !== 'skipped').map((p) => p.phase);
  const header = `| phase | ${results.map(({ spec }) => `${spec.frames}×${spec.width}×${spec.height} ms / MiB`).join(' | ')} |`;
  const rows = phases.map((ph) => `| ${ph} | ${results.map(({ r }) => {
    const p = r.phases.find((x) => x.phase === ph);
    return p ? `${p.duration_ms} / ${mib(p.peak_rss_mib)}` : '–';
  }).join(' | ')} |`);
  const whole = `| **whole run** | ${results.map(({ r }) => `**${r.wall_ms} / ${mib(r.max_rss_mib)}**`).join(' | ')} |`;
  const ratio = results[1]!.r.max_rss_mib / results[0]!.r.max_rss_mib;
  const table = [header, `|---|${results.map(() => '---').join('|')}|`, ...rows, whole].join('\n');
  const verdict = `Peak RSS ${large.frames} / ${small.frames} frames: **${ratio.toFixed(3)}** (bar ≤ 1.15: ${ratio <= 1.15 ? 'met' : 'NOT met'}); ${many.frames} frames of ${many.width}×${many.height}: completed, peak ${mib(results[2]!.r.max_rss_mib)} MiB.`;
  log(`\n${table}\n\n${verdict}`);
  await record({ title: `Raw Stack memory-flat streaming (\`npm run bench -- rawstack-memory${options.quick ? ' --quick' : ''}\`), ${machineLine()}`, setup: `Mono with bias, darks and flats, INPUT_SCAN → STACKING (+ REPORT), postprocess off, runtime_limits.memory_budget ${budget} MiB, one child process per run. Device: ${results[0]!.r.device}. Cells: phase wall ms / peak RSS MiB (VmHWM reset at each phase start).`, table: table, verdict: verdict }, options);
}
