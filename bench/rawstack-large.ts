// The large Raw Stack benches of issue 22, selected by flags of `npm run bench -- rawstack`:
//   --osc-large  16 OSC frames of 6248×4176 (RGGB, 16-bit) with bias, darks and flats, skystack
//                with the defaults a user gets (no memory budget, the allocator settings the CLI sets) against Siril's
//                OSC script (bench/siril.ts) on the same frames in the same run; wall, CPU, peak
//                RSS of both and the ratios (target ≤ 0.7× for wall time and memory).
//                `--quick`: 4 OSC frames of 1024×768.
//   --scale      mono 2048×1536 runs of 30, 120 and 1000 frames under the default memory budget,
//                all from one generated 1000-frame session (the shorter runs read its first
//                lights through links, so every run sees the same frames and masters); per run
//                wall, CPU, time per frame and peak RSS, and the verdict of bench/scale-verdict.ts.
//                `--size WxH` and `--frames A,B,C` change the frame size and counts (the stated
//                fallback when the full size cannot finish in the time at hand); `--quick`: 10,
//                20 and 60 frames of 1024×768.
// Datasets are cached under --data (default $TMPDIR/skystack-bench-data) like the other Raw
// Stack benches; each run is its own child process; the run folders are removed after each run.

import { mkdir, readFile, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchConfig, dataName, ensureData, runChild, subsetLights, type ChildResult, type DataSpec } from './rawstack-data.js';
import { bestOf, log, machineLine, mib, phaseColumns, record, type RawstackBenchOptions } from './rawstack.js';
import { scaleVerdict, versusSiril } from './scale-verdict.js';
import { runSiril, sirilScript, sirilVersion, type SirilResult } from './siril.js';

/** NAXIS3 of Siril's stacked result (3 when it debayered), from its primary header. */
async function sirilPlanes(file: string): Promise<string> {
  try {
    const head = (await readFile(file)).subarray(0, 2880 * 4).toString('latin1');
    const naxis = /NAXIS\s*=\s*(\d+)/.exec(head)?.[1];
    return naxis === '3' ? (/NAXIS3\s*=\s*(\d+)/.exec(head)?.[1] ?? '?') : (naxis === '2' ? '1' : '?');
  } catch {
    return '?';
  }
}

const loadLine = (start: number) => `Load average (1 min) at the start: ${start.toFixed(1)}, at the end: ${loadavg()[0]!.toFixed(1)} on ${cpus().length} cores, machine shared with other sessions.`;

export async function oscLargeBench(options: RawstackBenchOptions): Promise<void> {
  const root = options.data ?? join(tmpdir(), 'skystack-bench-data');
  const spec: DataSpec = options.quick ? { kind: 'osc', frames: 4, width: 1024, height: 768, seed: 11, calibration: true } : { kind: 'osc', frames: 16, width: 6248, height: 4176, seed: 11, calibration: true };
  const load = loadavg()[0]!;
  const data = await ensureData(root, spec, log);
  const runs = join(root, 'runs');
  await mkdir(runs, { recursive: true });
  const budget = options.budget; // undefined: the default a user gets
  log(`[bench] rawstack --osc-large: ${dataName(spec)}, memory_budget ${budget ?? 'default'}, best of ${options.repeat}`);
  const sky = await bestOf(options.repeat, () => runChild(benchConfig(data, true, budget, spec), runs), 'skystack ');
  await rm(sky.run_dir, { recursive: true, force: true });
  const table = phaseColumns([['defaults', sky]]);
  log(`\nskystack (${sky.device}):\n${table}`);

  let siril: SirilResult | null = null;
  let summary: string;
  const version = options.siril ? await sirilVersion() : null;
  if (!options.siril) summary = 'Siril comparison switched off (--no-siril).';
  else if (!version) summary = 'siril-cli not installed: no Siril comparison.';
  else {
    for (let i = 0; i < options.repeat; i++) {
      const r = await runSiril(data, join(root, 'siril-work'), 'dark_120s', sirilScript('osc'));
      log(`[bench]   siril run ${i + 1}/${options.repeat}: ${r.wall_ms} ms wall, ${r.cpu_ms} ms CPU, peak RSS ${mib(r.max_rss_mib)} MiB`);
      if (!siril || r.wall_ms < siril.wall_ms) siril = r;
    }
    const planes = await sirilPlanes(join(root, 'siril-work', 'result.fit'));
    await rm(join(root, 'siril-work'), { recursive: true, force: true });
    const steps = siril!.steps.map((s) => `${s.command} ${(s.ms / 1000).toFixed(2)} s`).join(', ');
    summary = [
      `skystack: ${sky.wall_ms} ms wall, ${sky.cpu_ms} ms CPU, peak RSS ${mib(sky.max_rss_mib)} MiB.`,
      `Siril ${siril!.version} (siril-cli, OSC script, same frames): ${siril!.wall_ms} ms wall (CPU ${siril!.cpu_ms ?? '–'} ms), peak RSS ${mib(siril!.max_rss_mib)} MiB, result ${planes} plane(s); steps: ${steps}`,
      '',
      versusSiril(sky, siril!).text,
    ].join('\n');
  }
  log(`\n${summary}`);
  await record({ title: `Raw Stack on large OSC frames vs Siril (\`npm run bench -- rawstack --osc-large${options.quick ? ' --quick' : ''}\`), ${machineLine()}`, setup: `OSC (RGGB) ${spec.frames} frames ${spec.width}×${spec.height} (16-bit), ${dataName(spec)}: bias 8, darks 6 + 6 (120 s, 300 s), flats 8; skystack with the defaults (memory_budget ${budget ?? 'default'}, the allocator settings the CLI sets, postprocess off), INPUT_SCAN → STACKING (+ REPORT); Siril: \`preprocess light -dark=dark_stacked -flat=pp_flat_stacked -cfa -equalize_cfa -debayer\`, \`register pp_light\`, \`stack r_pp_light rej 3 3 -norm=addscale\` with masters from its own stacks. Best of ${options.repeat}. Device: ${sky.device}. ${loadLine(load)}`, table: table, verdict: summary }, options);
}

export interface ScaleOptions extends RawstackBenchOptions {
  /** Frame size override, `WxH`. */
  size: string | undefined;
  /** Frame counts override, `A,B,C` (ascending, at least three). */
  frames: string | undefined;
}

/** `WxH` and `A,B,C` of --size and --frames; a string says what is wrong. */
export function parseScaleArgs(size: string | undefined, frames: string | undefined, quick: boolean): { width: number; height: number; counts: number[] } | string {
  let width = quick ? 1024 : 2048;
  let height = quick ? 768 : 1536;
  if (size !== undefined) {
    const m = /^(\d+)x(\d+)$/.exec(size);
    if (!m || Number(m[1]) < 64 || Number(m[2]) < 64) return `--size takes WxH of at least 64x64, not '${size}'`;
    width = Number(m[1]);
    height = Number(m[2]);
  }
  let counts = quick ? [10, 20, 60] : [30, 120, 1000];
  if (frames !== undefined) {
    counts = frames.split(',').map((f) => Number(f));
    if (counts.length < 3 || counts.some((c, i) => !Number.isInteger(c) || c < 3 || (i > 0 && c <= counts[i - 1]!))) return `--frames takes at least three ascending counts of 3 or more, not '${frames}'`;
  }
  return { width, height, counts };
}

export async function scaleBench(options: ScaleOptions): Promise<number> {
  const parsed = parseScaleArgs(options.size, options.frames, options.quick);
  if (typeof parsed === 'string') {
    console.error(`bench rawstack --scale: ${parsed}`);
    return 2;
  }
  const { width, height, counts } = parsed;
  const root = options.data ?? join(tmpdir(), 'skystack-bench-data');
  const spec: DataSpec = { frames: counts[counts.length - 1]!, width, height, seed: 9, calibration: true };
  const load = loadavg()[0]!;
  const data = await ensureData(root, spec, log);
  const runs = join(root, 'runs');
  await mkdir(runs, { recursive: true });
  const results: { frames: number; r: ChildResult }[] = [];
  for (const frames of counts) {
    const lights = await subsetLights(root, data, frames);
    log(`[bench] rawstack --scale: first ${frames} lights of ${dataName(spec)}, memory_budget ${options.budget ?? 'default'}`);
    const r = await bestOf(1, () => runChild(benchConfig(data, true, options.budget, spec, undefined, lights), runs));
    await rm(r.run_dir, { recursive: true, force: true });
    await rm(lights, { recursive: true, force: true });
    results.push({ frames, r });
  }
  const phases = results[0]!.r.phases.filter((p) => p.status !== 'skipped').map((p) => p.phase);
  const table = [
    `| phase | ${results.map(({ frames }) => `${frames} frames: wall ms / CPU ms / peak MiB`).join(' | ')} |`,
    `|---|${results.map(() => '---').join('|')}|`,
    ...phases.map((ph) => `| ${ph} | ${results.map(({ r }) => {
      const p = r.phases.find((x) => x.phase === ph);
      return p ? `${p.duration_ms} / ${p.cpu_ms ?? '–'} / ${mib(p.peak_rss_mib)}` : '–';
    }).join(' | ')} |`),
    `| **whole run** | ${results.map(({ r }) => `**${r.wall_ms}** / ${r.cpu_ms} / **${mib(r.max_rss_mib)}**`).join(' | ')} |`,
  ].join('\n');
  const verdict = scaleVerdict(results.map(({ frames, r }) => ({ frames, wall_ms: r.wall_ms, cpu_ms: r.cpu_ms, max_rss_mib: r.max_rss_mib }))).text;
  log(`\n${table}\n\n${verdict}`);
  const full = !options.quick && width === 2048 && height === 1536;
  await record({ title: `Raw Stack scale: ${counts.join(', ')} frames (\`npm run bench -- rawstack --scale${options.quick ? ' --quick' : ''}${options.size ? ` --size ${options.size}` : ''}${options.frames ? ` --frames ${options.frames}` : ''}\`), ${machineLine()}`, setup: `Mono ${width}×${height} (16-bit) with bias 8, darks 6 + 6, flats 8; the first N lights of ${dataName(spec)} (one session, so every run shares frames and masters); memory_budget ${options.budget ?? 'default'}; postprocess off, INPUT_SCAN → STACKING (+ REPORT), calibrated frames kept (the default); one child process per run. Device: ${results[0]!.r.device}.${full ? '' : ' Not the issue\'s 2048×1536 size: a fallback or a check.'} Cells: wall ms / CPU ms / peak RSS MiB (VmHWM reset at each phase start). ${loadLine(load)}`, table: table, verdict: verdict }, options);
  return 0;
}
