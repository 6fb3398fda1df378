// Dawn writes warnings from native code straight to file descriptor 2 whenever an adapter is
// requested (a missing Vulkan loader, limits it lowers for its own reasons; docs/ARCHITECTURE.md
// "GPU strategy"). Node cannot redirect its own descriptor 2, so on a terminal the commands that
// open a device run in a child process whose stderr passes through here: Dawn's expected lines
// go, everything else (the progress bar's carriage-return redraws included) passes at once.
// Piped output (logs, CI, benchmarks measuring the process) is left as it is: no child.
//
// The child learns that its stderr reaches a terminal from SKYSTACK_STDERR_TTY/_COLUMNS (its own
// stderr is a pipe). Ctrl-C reaches both processes (same process group): the parent ignores it
// and waits, the child cancels its run as it would alone; the parent exits with the child's code.

//
// The same child carries the allocator settings (allocator-env.ts) when this process was started
// without them: a pipeline command then always runs in a child, filtered only on a terminal.

import { spawn } from 'node:child_process';
import { DawnNoiseFilter } from '../server/jobs/dawn-noise.js';
import { needsAllocatorRelaunch, withAllocatorTuning } from './allocator-env.js';

/** Commands that open a device. */
const DEVICE_COMMANDS = new Set(['rawstack', 'tiled', 'resume', 'demo', 'serve']);
/** Commands that run a pipeline in this process (serve's job children get the settings from the job manager). */
const PIPELINE_COMMANDS = new Set(['rawstack', 'tiled', 'resume', 'demo']);
const CHILD_FLAG = 'SKYSTACK_CLI_CHILD';

/** Whether `command` should run in a filtering child: a device command on a terminal (or when asked for by SKYSTACK_FILTER_NATIVE=1). */
export function wantsQuietChild(command: string | undefined, env: NodeJS.ProcessEnv = process.env, stderrIsTty = Boolean(process.stderr.isTTY)): boolean {
  if (command === undefined || !DEVICE_COMMANDS.has(command) || env[CHILD_FLAG] === '1') return false;
  if (env.SKYSTACK_NATIVE_WARNINGS === '1') return false;
  return stderrIsTty || env.SKYSTACK_FILTER_NATIVE === '1';
}

/** Whether `command` should run again in a child with the allocator settings this process lacks. */
export function wantsAllocatorChild(command: string | undefined, env: NodeJS.ProcessEnv = process.env, platform: NodeJS.Platform = process.platform): boolean {
  return command !== undefined && PIPELINE_COMMANDS.has(command) && env[CHILD_FLAG] !== '1' && needsAllocatorRelaunch(env, platform);
}

/** Whether stderr reaches a terminal, directly or through a filtering parent. */
export function stderrIsTerminal(stream: NodeJS.WriteStream = process.stderr): boolean {
  return Boolean(stream.isTTY) || (stream === process.stderr && process.env.SKYSTACK_STDERR_TTY === '1');
}

/** The terminal's width for stderr (the parent's, in a filtering child). */
export function stderrColumns(stream: NodeJS.WriteStream = process.stderr): number {
  const env = Number(process.env.SKYSTACK_STDERR_COLUMNS);
  return stream.columns ?? (Number.isInteger(env) && env > 0 ? env : 100);
}

/**
 * Streaming form of DawnNoiseFilter: text is judged line by line, but a partial line that cannot
 * be one of Dawn's (a progress redraw) is passed on at once instead of waiting for its newline.
 */
export class NoiseStream {
  readonly filter = new DawnNoiseFilter();
  private pending = '';
  /** Part of the current line was already passed on: the rest of it follows unjudged. */
  private passing = false;

  /** The text of `chunk` to write now. */
  push(chunk: string): string {
    let out = '';
    this.pending += chunk;
    for (;;) {
      const nl = this.pending.indexOf('\n');
      if (nl < 0) break;
      const line = this.pending.slice(0, nl);
      this.pending = this.pending.slice(nl + 1);
      if (this.passing) out += `${line}\n`;
      else if (this.filter.keep(line)) out += `${line}\n`;
      this.passing = false;
    }
    if (this.pending !== '' && (this.passing || !this.couldBeNoise(this.pending))) {
      out += this.pending;
      this.pending = '';
      this.passing = true;
    }
    return out;
  }

  /** What is left at the end (a last line without newline). */
  end(): string {
    const rest = this.pending;
    this.pending = '';
    return rest !== '' && (this.passing || this.filter.keep(rest)) ? rest : '';
  }

  private couldBeNoise(partial: string): boolean {
    const head = 'Warning: ';
    if (head.startsWith(partial) || partial.startsWith(head)) return true;
    // The native trace lines after a warning are indented (a progress redraw starts with \r).
    return this.filter.afterWarning && /^[ \t]/.test(partial);
  }
}

/**
 * Runs this command line again in a child with the allocator settings; its stderr is filtered
 * when `filter` (a terminal), else passed through untouched. Resolves to the child's exit code.
 * Signals: filtered, the child shares the terminal's process group (Ctrl-C reaches both; this
 * process ignores it and waits); unfiltered, the child has its own group and every signal sent to
 * this process (a `kill` by pid, a terminal's Ctrl-C) is passed on once, as SIGINT stays SIGINT.
 */
export function runInQuietChild(argv: string[], filter = true): Promise<number> {
  const env = withAllocatorTuning({ ...process.env, [CHILD_FLAG]: '1' });
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...argv], {
    stdio: ['inherit', 'inherit', filter ? 'pipe' : 'inherit'],
    env: filter ? { ...env, SKYSTACK_STDERR_TTY: '1', SKYSTACK_STDERR_COLUMNS: String(process.stderr.columns ?? 100) } : env,
    detached: !filter,
  });
  const noise = new NoiseStream();
  if (filter) {
    child.stderr!.setEncoding('utf8');
    child.stderr!.on('data', (chunk: string) => {
      const text = noise.push(chunk);
      if (text) process.stderr.write(text);
    });
  }
  const onInt = (): void => {
    if (!filter) child.kill('SIGINT');
  };
  process.on('SIGINT', onInt);
  const forward = (): void => {
    child.kill('SIGTERM');
  };
  process.on('SIGTERM', forward);
  process.on('SIGHUP', forward);
  return new Promise((resolve) => {
    child.on('error', (e) => {
      process.stderr.write(`skystack: could not start: ${e.message}\n`);
      resolve(1);
    });
    child.on('close', (code, signal) => {
      process.off('SIGINT', onInt);
      process.off('SIGTERM', forward);
      process.off('SIGHUP', forward);
      const rest = filter ? noise.end() : '';
      if (rest) process.stderr.write(rest);
      resolve(code ?? (signal === 'SIGINT' ? 130 : 1));
    });
  });
}
