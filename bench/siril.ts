// Siril side of `npm run bench -- rawstack` (and `--osc-large`): the same generated frames through
// siril-cli with the classic mono or OSC script (Siril 1.0 syntax): masters built with Siril's own stack (bias: rej 3 3
// -nonorm; flat: preprocessed with the bias, rej 3 3 -norm=mul; dark: rej 3 3 -nonorm), lights
// preprocessed with the dark and flat masters (OSC: as CFA, equalized and debayered), registered (global star registration) and stacked
// with `stack r_pp_light rej 3 3 -norm=addscale`. Siril gets the darks whose exposure matches
// the lights (skystack's dark auto-select picks the same group itself).
// Measured: wall time, user + system CPU and peak RSS of the siril-cli process, from GNU time
// (/usr/bin/time -v) when present, else by polling /proc/PID/status (VmHWM) and /proc/PID/stat.

import { execFile, spawn } from 'node:child_process';
import { mkdir, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

export interface SirilResult {
  version: string;
  wall_ms: number;
  cpu_ms: number | null;
  max_rss_mib: number;
  /** Seconds per script command, from Siril's own "Execution time" lines. */
  steps: { command: string; ms: number }[];
  log: string;
}

/** siril-cli's version line, or null when it is not installed. */
export async function sirilVersion(): Promise<string | null> {
  try {
    const { stdout, stderr } = await run('siril-cli', ['--version'], { timeout: 20_000 });
    const m = /siril\s+([\d.]+\S*)/i.exec(stdout + stderr);
    return m ? m[1]! : (stdout + stderr).trim().split('\n')[0] ?? 'unknown';
  } catch {
    return null;
  }
}

/**
 * Siril's classic script for a session with bias, darks and flats (its own Mono/OSC
 * preprocessing scripts, Siril 1.0 syntax). OSC: the lights are calibrated as CFA data, the
 * CFA channels equalized (the flat's colour cast) and debayered in the same preprocess, as
 * Siril's OSC_Preprocessing script does; masters are built the same way for both.
 */
export function sirilScript(kind: 'mono' | 'osc'): string {
  const lights = kind === 'osc' ? 'preprocess light -dark=dark_stacked -flat=pp_flat_stacked -cfa -equalize_cfa -debayer' : 'preprocess light -dark=dark_stacked -flat=pp_flat_stacked';
  return `requires 1.0.0
cd bias
convert bias -out=../process
cd ../process
stack bias rej 3 3 -nonorm
cd ../flats
convert flat -out=../process
cd ../process
preprocess flat -bias=bias_stacked
stack pp_flat rej 3 3 -norm=mul
cd ../darks
convert dark -out=../process
cd ../process
stack dark rej 3 3 -nonorm
cd ../lights
convert light -out=../process
cd ../process
${lights}
register pp_light
stack r_pp_light rej 3 3 -norm=addscale -out=../result
`;
}

/** The mono script (the `rawstack` bench's). */
export const SIRIL_SCRIPT = sirilScript('mono');

/** Links the dataset's frames into a fresh Siril work folder (darks: only `darkPrefix*`). */
async function prepareWork(data: string, work: string, darkPrefix: string, script: string): Promise<void> {
  await rm(work, { recursive: true, force: true });
  for (const d of ['bias', 'darks', 'flats', 'lights', 'process']) await mkdir(join(work, d), { recursive: true });
  for (const d of ['bias', 'darks', 'flats', 'lights']) {
    for (const f of await readdir(join(data, d))) {
      if (d === 'darks' && !f.startsWith(darkPrefix)) continue;
      await symlink(join(data, d, f), join(work, d, f));
    }
  }
  await writeFile(join(work, 'script.ssf'), script);
}

async function hasGnuTime(): Promise<boolean> {
  try {
    await run('/usr/bin/time', ['-v', 'true'], { timeout: 5000 });
    return true;
  } catch {
    return false;
  }
}

/**
 * Per command, Siril's "Execution time" line: "850.00 ms", "12.34 s", and past a minute
 * "2 min 05 s" (hours too), which a plain seconds pattern would miss.
 */
export function parseSteps(log: string): { command: string; ms: number }[] {
  const steps: { command: string; ms: number }[] = [];
  let current = '';
  for (const line of log.split('\n')) {
    const cmd = /Running command: (\w+)/.exec(line);
    if (cmd) current = cmd[1]!;
    const t = /Execution time: (?:(\d+) h )?(?:(\d+) min )?([\d.]+) (ms|s)\b/.exec(line);
    if (t && current) steps.push({ command: current, ms: (Number(t[1] ?? 0) * 3600 + Number(t[2] ?? 0) * 60) * 1000 + Number(t[3]) * (t[4] === 's' ? 1000 : 1) });
  }
  return steps;
}

/** Polls /proc for the peak RSS (VmHWM) and CPU ticks of a running process. */
function pollProc(pid: number): { stop: () => { rssKiB: number; cpuMs: number | null } } {
  let rss = 0;
  let ticks: number | null = null;
  const read = async () => {
    try {
      const s = await readFile(`/proc/${pid}/status`, 'utf8');
      const m = /VmHWM:\s+(\d+)/.exec(s);
      if (m) rss = Math.max(rss, Number(m[1]));
      const st = (await readFile(`/proc/${pid}/stat`, 'utf8')).split(') ')[1]!.split(' ');
      ticks = Number(st[11]) + Number(st[12]); // utime + stime (fields 14, 15)
    } catch {
      /* the process is gone */
    }
  };
  const timer = setInterval(() => void read(), 50);
  return {
    stop: () => {
      clearInterval(timer);
      return { rssKiB: rss, cpuMs: ticks === null ? null : ticks * 10 };
    },
  };
}

/** Runs the script (default: the mono one) on `data` in `work`; rejects when siril-cli fails. */
export async function runSiril(data: string, work: string, darkPrefix: string, script: string = SIRIL_SCRIPT): Promise<SirilResult> {
  const version = (await sirilVersion()) ?? 'unknown';
  await prepareWork(data, work, darkPrefix, script);
  const gnuTime = await hasGnuTime();
  const cmd = gnuTime ? '/usr/bin/time' : 'siril-cli';
  const args = gnuTime ? ['-v', 'siril-cli', '-d', work, '-s', join(work, 'script.ssf')] : ['-d', work, '-s', join(work, 'script.ssf')];
  const t0 = performance.now();
  const child = spawn(cmd, args, { cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  const poll = gnuTime ? null : pollProc(child.pid!);
  let out = '';
  let err = '';
  child.stdout.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr.on('data', (d: Buffer) => (err += d.toString()));
  const code = await new Promise<number | null>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', resolve);
  });
  const wall = performance.now() - t0;
  const polled = poll?.stop();
  const log = out.replace(/\r/g, '\n');
  if (code !== 0 || !/Script execution finished successfully/.test(log)) {
    throw new Error(`siril-cli ended ${code}:\n${log.split('\n').filter((l) => !/progress/.test(l)).slice(-15).join('\n')}\n${err.slice(-1500)}`);
  }
  let rssKiB = polled?.rssKiB ?? 0;
  let cpuMs = polled?.cpuMs ?? null;
  let wallMs = wall;
  if (gnuTime) {
    const num = (re: RegExp) => Number(re.exec(err)?.[1] ?? NaN);
    rssKiB = num(/Maximum resident set size \(kbytes\): (\d+)/);
    cpuMs = (num(/User time \(seconds\): ([\d.]+)/) + num(/System time \(seconds\): ([\d.]+)/)) * 1000;
    const el = /Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (?:(\d+):)?(\d+):([\d.]+)/.exec(err);
    if (el) wallMs = ((Number(el[1] ?? 0) * 60 + Number(el[2])) * 60 + Number(el[3])) * 1000;
  }
  return { version, wall_ms: Math.round(wallMs), cpu_ms: cpuMs === null ? null : Math.round(cpuMs), max_rss_mib: rssKiB / 1024, steps: parseSteps(log), log };
}
