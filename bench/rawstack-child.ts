// Child process of the Raw Stack benches (bench/rawstack*.ts) and the memory-flat test: runs one
// Raw Stack from a JSON configuration given as argv[2] (runs folder argv[3], device preference
// from SKYSTACK_DEVICE) and prints one JSON line with the run status, wall time, peak RSS of the
// whole process and, per phase, duration and peak RSS while the phase ran.
// Per-phase peaks: at each phase_start the kernel's peak-RSS counter (VmHWM) is reset through
// /proc/self/clear_refs ("5"); at phase_end VmHWM is that phase's peak. Where /proc is not
// writable the per-phase peak is null and only the whole-process maxRSS is reported. The reset
// also resets getrusage's maxRSS, so the process peak is the highest VmHWM read before each reset.

import { readFileSync, writeFileSync } from 'node:fs';
import { parseRawStackConfig } from '../src/config/rawstack.js';
import { runRawStack } from '../src/pipeline/rawstack/run.js';

function hwmKiB(): number | null {
  try {
    const m = /VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'));
    return m ? Number(m[1]) : null;
  } catch {
    return null;
  }
}

function resetHwm(): boolean {
  try {
    writeFileSync('/proc/self/clear_refs', '5');
    return true;
  } catch {
    return false;
  }
}

const parsed = parseRawStackConfig(JSON.parse(argvAt(2)) as unknown);
if (!parsed.ok) {
  console.log(JSON.stringify({ status: 'config_error', issues: parsed.issues }));
  process.exit(2);
}

function argvAt(i: number): string {
  const v = process.argv[i];
  if (v === undefined) throw new Error('usage: node rawstack-child.js CONFIG_JSON RUNS_DIR');
  return v;
}

const phasePeaks: Record<string, number | null> = {};
let canReset = true;
let peakKiB = 0;
// getrusage's maxRSS is only the fallback: after fork + exec it starts from the parent's RSS at
// the fork (Linux keeps the forked copy's high-water mark), so a child of a large test process
// would report the parent's size. VmHWM belongs to this process's own address space.
const notePeak = (): void => {
  peakKiB = Math.max(peakKiB, hwmKiB() ?? process.resourceUsage().maxRSS);
};
// SKYSTACK_BENCH_SAMPLE=1: every 20 ms a process.memoryUsage() sample; at each phase end the
// phase's largest-RSS sample (heap, external, array buffers) and the memory at the phase's end
// (what it hands the next phase) go to stderr, which runChild then echoes (memory profiling).
type Sample = NodeJS.MemoryUsage;
let top: Sample | null = null;
const sampler = process.env.SKYSTACK_BENCH_SAMPLE === '1'
  ? setInterval(() => {
      const m = process.memoryUsage();
      if (!top || m.rss > top.rss) top = m;
    }, 20)
  : null;
const t0 = performance.now();
const cpu0 = process.cpuUsage();
// Per phase: CPU time of the whole process (all threads) while the phase ran; steadier than
// wall time on a shared machine.
const phaseCpu: Record<string, number> = {};
let phaseCpu0 = cpu0;
const result = await runRawStack(parsed.config, {
  runsDir: argvAt(3),
  onEvent: (line) => {
    if (line.type === 'phase_start') {
      notePeak();
      canReset = resetHwm();
      phaseCpu0 = process.cpuUsage();
    } else if (line.type === 'phase_end') {
      phasePeaks[line.phase] = canReset ? hwmKiB() : null;
      const c = process.cpuUsage(phaseCpu0);
      phaseCpu[line.phase] = Math.round((c.user + c.system) / 1000);
      if (sampler) {
        const mb = (b: number) => Math.round(b / 2 ** 20);
        const show = (m: Sample) => `rss ${mb(m.rss)} heapUsed ${mb(m.heapUsed)} heapTotal ${mb(m.heapTotal)} external ${mb(m.external)} arrayBuffers ${mb(m.arrayBuffers)} MiB`;
        if (top) console.error(`[sample] ${line.phase}: ${show(top)}`);
        // What the phase leaves to the next one (no collection forced: what the run carries).
        console.error(`[boundary] after ${line.phase}: ${show(process.memoryUsage())}`);
      }
      top = null;
    }
  },
});
const wallMs = performance.now() - t0;
if (sampler) clearInterval(sampler);
const cpu = process.cpuUsage(cpu0);
notePeak();
console.log(
  JSON.stringify({
    status: result.status,
    wall_ms: Math.round(wallMs),
    // User + system time of every thread (workers and the software adapter's threads included).
    cpu_ms: Math.round((cpu.user + cpu.system) / 1000),
    max_rss_mib: peakKiB / 1024,
    device: result.device.kind + (result.device.adapter ? ` (${result.device.adapter})` : ''),
    phases: result.phases.map((p) => ({ ...p, cpu_ms: phaseCpu[p.phase] ?? null, peak_rss_mib: phasePeaks[p.phase] == null ? null : phasePeaks[p.phase]! / 1024 })),
    run_dir: result.runDir,
  }),
);
