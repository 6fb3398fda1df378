// The GPU bench's result (written as JSON) and its Markdown section for bench/RESULTS.md.
// Pure: everything here formats a finished GpuBenchReport, so it is unit-tested without a device.

import type { BandwidthRow } from './bandwidth.js';
import type { DeviceRecord } from './device-record.js';
import { busyCores, IDLE_SPIN_CORES, STREAM_GOAL, type IdleSample, type KernelClass } from './model.js';

export interface KernelRow {
  name: string;
  kernels: string[];
  cls: KernelClass;
  size: string;
  bytes: number;
  mpix: number;
  /** Milliseconds per repetition (timestamp or wall, see `timing`). */
  ms: number;
  timing: 'timestamp' | 'wall';
  wall_ms: number;
  /** GPU time from the first pass's begin to the last's end, per repetition (timestamps only). */
  span_ms: number | null;
  reps: number;
  gbs: number;
  /** gbs over the copy kernel's bandwidth. */
  fraction: number | null;
  mpix_s: number;
  error?: string;
  /** Not measured (the --deadline-s budget ran out). */
  skipped?: string;
}

export interface IdleReport {
  /** Before the device was requested (Dawn not yet loaded on the first path). */
  before: IdleSample;
  /** Right after requestDevice(). */
  after_request: IdleSample;
  /** After the kernel cases ran. */
  after_work: IdleSample;
  /** After device.destroy(). */
  after_destroy: IdleSample;
}

export interface PathReport {
  path: 'gpu' | 'software';
  available: boolean;
  /** Why the path did not run. */
  reason?: string;
  device?: DeviceRecord;
  /** Timestamp grain seen (ns), null when the adapter has no timestamp queries. */
  timestamp_granularity_ns?: number | null;
  bandwidth?: BandwidthRow[];
  /** The copy kernel's GB/s: the reference of every fraction. */
  reference_gbs?: number | null;
  kernels?: KernelRow[];
  idle?: IdleReport;
}

export interface RawstackPhase {
  phase: string;
  status: string;
  duration_ms: number;
  cpu_ms?: number | null;
  peak_rss_mib: number | null;
  /** The phase's own timing breakdown from events.jsonl (timing_ms / timings_ms), if any. */
  timing?: Record<string, unknown>;
}

export interface RawstackRun {
  /** SKYSTACK_DEVICE of the child. */
  path: 'gpu' | 'software' | 'cpu';
  device?: string;
  wall_ms?: number;
  cpu_ms?: number;
  max_rss_mib?: number;
  phases?: RawstackPhase[];
  error?: string;
  /** Not run (the --deadline-s budget ran out). */
  skipped?: string;
}

export interface RawstackReport {
  dataset: string;
  frames: number;
  width: number;
  height: number;
  budget_mib: number;
  /** Seconds the dataset took to generate (null when it was cached). */
  generate_s: number | null;
  runs: RawstackRun[];
}

export interface GpuBenchReport {
  schema: 'skystack-gpu-bench/1';
  date: string;
  /** `load`: 1-minute load average at the start and the end (other work on a shared machine). */
  machine: { cpu: string; cores: number; memory_gib: number; node: string; platform: string; load: [number, number]; label?: string };
  options: { quick: boolean; paths: string[]; allow_software: boolean; software_icd: string | null };
  paths: PathReport[];
  rawstack: RawstackReport | null;
  /** False while the bench is still running (the file is rewritten after every step). */
  complete?: boolean;
}

const fix = (v: number | null | undefined, d = 1) => (v === null || v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(d));
const pct = (v: number | null | undefined) => (v === null || v === undefined || !Number.isFinite(v) ? '–' : `${(100 * v).toFixed(0)} %`);
const mb = (bytes: number) => `${(bytes / 1e6).toFixed(bytes < 1e7 ? 2 : 0)} MB`;

function table(header: string[], rows: string[][]): string {
  return [`| ${header.join(' | ')} |`, `|${header.map(() => '---').join('|')}|`, ...rows.map((r) => `| ${r.join(' | ')} |`)].join('\n');
}

/** One line naming the device (for headings and logs). */
export function deviceLine(p: PathReport): string {
  if (!p.available || !p.device) return `${p.path}: not available (${p.reason ?? 'no adapter'})`;
  const a = p.device.adapter;
  const name = [a.vendor, a.device || a.architecture].filter(Boolean).join(' ');
  return `${p.path}: ${name || 'unknown adapter'} — ${p.device.driver ?? 'driver unknown'} (${p.device.acquisition.backend}, ${p.device.acquisition.featureLevel})`;
}

/** Stream kernels at or above the goal, of those measured (errors left out). */
export function streamGoal(rows: readonly KernelRow[]): { met: number; of: number; missed: string[] } {
  const stream = rows.filter((r) => r.cls === 'stream' && !r.error && !r.skipped && r.fraction !== null);
  const missed = stream.filter((r) => r.fraction! < STREAM_GOAL).map((r) => r.name);
  return { met: stream.length - missed.length, of: stream.length, missed };
}

export function kernelTable(p: PathReport): string {
  const rows = (p.kernels ?? []).map((k) =>
    k.error || k.skipped
      ? [k.name, k.cls, k.size, '–', '–', '–', '–', '–', '–', k.error ? `FAILED: ${k.error}` : k.skipped!]
      : [k.name, k.cls, k.size, mb(k.bytes), `${fix(k.ms, 3)} (${k.timing === 'timestamp' ? 'ts' : 'wall'})`, fix(k.span_ms, 3), fix(k.wall_ms, 3), fix(k.mpix_s, 0), fix(k.gbs, 1), pct(k.fraction)],
  );
  return table(['kernel', 'class', 'size', 'bytes/rep', 'ms/rep', 'GPU span ms/rep', 'wall ms/rep', 'Mpix/s', 'GB/s', 'of copy bw'], rows);
}

export function bandwidthTable(p: PathReport): string {
  return table(
    ['probe', 'bytes/rep (read + written)', 'ms/rep', 'timing', 'GB/s'],
    (p.bandwidth ?? []).map((b) => [b.probe, mb(b.bytes), fix(b.ms, 3), b.timing, fix(b.gbs, 1)]),
  );
}

export function idleLine(idle: IdleReport | undefined): string {
  if (!idle) return 'Idle CPU: not measured.';
  const cell = (s: IdleSample) => `${fix(busyCores(s), 2)}`;
  const spinning = [idle.after_request, idle.after_work].some((s) => busyCores(s) > IDLE_SPIN_CORES);
  return (
    `Idle CPU (busy cores while waiting ${fix(idle.after_request.wallMs / 1000, 1)} s): before the device ${cell(idle.before)}, after requestDevice ${cell(idle.after_request)}, ` +
    `after the kernels ${cell(idle.after_work)}, after destroy ${cell(idle.after_destroy)} — ${spinning ? `**a thread spins while the device idles (> ${IDLE_SPIN_CORES} core)**` : 'no spinning thread'}.`
  );
}

/** Phases whose pixel work runs on the device when there is one (calibrate and masters; warp and stack). */
const PIXEL_PHASES = new Set(['CALIBRATION', 'STACKING']);

export function rawstackTable(r: RawstackReport): string {
  const ok = r.runs.filter((x) => x.phases);
  const notRun = r.runs.filter((x) => !x.phases).map((x) => `Raw Stack on ${x.path}: ${x.error ? `FAILED ${x.error}` : (x.skipped ?? 'not run')}`);
  if (ok.length === 0) return notRun.join('\n');
  const phases = ok[0]!.phases!.filter((p) => p.status !== 'skipped').map((p) => p.phase);
  const cell = (run: RawstackRun, ph: string) => {
    const p = run.phases!.find((x) => x.phase === ph);
    if (!p) return '–';
    const share = run.wall_ms ? ` (${((100 * p.duration_ms) / run.wall_ms).toFixed(0)} %)` : '';
    return `${p.duration_ms}${share} / ${p.cpu_ms ?? '–'}`;
  };
  const rows = phases.map((ph) => [PIXEL_PHASES.has(ph) ? `${ph} ⁽ᵖ⁾` : ph, ...ok.map((run) => cell(run, ph))]);
  rows.push(['**whole run**', ...ok.map((run) => `**${run.wall_ms}** / ${run.cpu_ms} (peak RSS ${fix(run.max_rss_mib, 0)} MiB)`)]);
  const devices = ok.map((run) => `${run.path} = ${run.device ?? '?'}`).join('; ');
  return [table(['phase', ...ok.map((run) => `${run.path}: wall ms (share) / CPU ms`)], rows), '', `Devices: ${devices}.`, ...notRun].join('\n');
}

/** Share of the run's wall time spent in phases that do pixel work on the device. */
export function pixelShare(run: RawstackRun): number | null {
  if (!run.phases || !run.wall_ms) return null;
  const ms = run.phases.filter((p) => PIXEL_PHASES.has(p.phase)).reduce((s, p) => s + p.duration_ms, 0);
  return ms / run.wall_ms;
}

/** The section appended to bench/RESULTS.md. */
export function markdown(report: GpuBenchReport): string {
  const m = report.machine;
  const out: string[] = [
    '',
    `## ${report.date.slice(0, 10)} — GPU bench (\`npm run bench -- gpu${report.options.quick ? ' --quick' : ''}\`), ${m.label ? `${m.label}, ` : ''}${m.cpu}, ${m.cores} cores, ${m.memory_gib} GiB, node ${m.node}`,
    '',
    'Kernel times are per repetition, K repetitions per submit; `ts` = sum of the passes\' GPU timestamps, `wall` = submit to onSubmittedWorkDone over K; GPU span = first pass begin to last pass end over K (gaps between passes included). ' +
      'Bytes are the fewest each repetition must move (inputs read once, outputs written once); fractions are of the copy kernel\'s bandwidth (read + written). ' +
      `Goal: ≥ ${STREAM_GOAL * 100} % for \`stream\` kernels. Load average ${fix(m.load[0], 1)} at the start, ${fix(m.load[1], 1)} at the end, on ${m.cores} cores.`,
  ];
  for (const p of report.paths) {
    out.push('', `### ${deviceLine(p)}`);
    if (p.path === 'software' && report.options.software_icd) out.push('', `Vulkan drivers for this path: \`VK_DRIVER_FILES=${report.options.software_icd}\` (GL ES, where present, is tried first).`);
    if (!p.available) continue;
    const d = p.device!;
    out.push(
      '',
      `Adapter: vendor "${d.adapter.vendor}", architecture "${d.adapter.architecture}", device "${d.adapter.device}", description "${d.adapter.description}"; ` +
        `timestamp queries: ${d.features.includes('timestamp-query') ? `yes (grain ${p.timestamp_granularity_ns ?? '?'} ns)` : 'no (wall time)'}; ` +
        `maxStorageBufferBindingSize ${fix(d.limits.maxStorageBufferBindingSize! / 2 ** 20, 0)} MiB, maxBufferSize ${fix(d.limits.maxBufferSize! / 2 ** 20, 0)} MiB, maxComputeWorkgroupSizeX ${d.limits.maxComputeWorkgroupSizeX}, maxComputeInvocationsPerWorkgroup ${d.limits.maxComputeInvocationsPerWorkgroup} (all limits in the JSON).`,
      '',
      bandwidthTable(p),
      '',
      kernelTable(p),
      '',
    );
    const goal = streamGoal(p.kernels ?? []);
    out.push(`Stream kernels at ≥ ${STREAM_GOAL * 100} % of the copy bandwidth: ${goal.met} of ${goal.of}${goal.missed.length ? ` (below: ${goal.missed.join(', ')})` : ''}.`, '', idleLine(p.idle));
  }
  if (report.rawstack) {
    const r = report.rawstack;
    out.push(
      '',
      `### Raw Stack end to end: mono ${r.frames} × ${r.width}×${r.height} with bias, darks, flats (${r.dataset}), memory_budget ${r.budget_mib} MiB`,
      '',
      'Cells: phase wall ms (share of the run) / CPU ms of all threads; ⁽ᵖ⁾ marks the phases whose pixel work runs on the device (CALIBRATION: masters and calibrate, beside FITS decode and star measurement on the CPU; STACKING: warp and stack).',
      '',
      rawstackTable(r),
      '',
      r.runs
        .filter((x) => x.phases)
        .map((x) => `${x.path}: pixel phases ${pct(pixelShare(x))} of the run`)
        .join('; ') + '.',
      '',
      'Phase breakdowns (the phases\' own `timing_ms`):',
      '',
      ...r.runs.flatMap((x) => (x.phases ?? []).filter((p) => p.timing).map((p) => `- ${x.path} ${p.phase}: \`${JSON.stringify(p.timing)}\``)),
    );
  }
  if (report.complete === false) out.push('', '**Incomplete: the bench was still running when this was written.**');
  out.push('');
  return out.join('\n');
}
