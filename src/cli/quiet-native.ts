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

import { spawn } from 'node:child_process';
import { DawnNoiseFilter } from '../server/jobs/dawn-noise.js';

/** Commands that open a device. */
const DEVICE_COMMANDS = new Set(['rawstack', 'tiled', 'resume', 'demo', 'serve']);
const CHILD_FLAG = 'SKYSTACK_CLI_CHILD';

/** Whether `command` should run in a filtering child: a device command on a terminal (or when asked for by SKYSTACK_FILTER_NATIVE=1). */
export function wantsQuietChild(command: string | undefined, env: NodeJS.ProcessEnv = process.env, stderrIsTty = Boolean(process.stderr.isTTY)): boolean {
  if (command === undefined || !DEVICE_COMMANDS.has(command) || env[CHILD_FLAG] === '1') return false;
  if (env.SKYSTACK_NATIVE_WARNINGS === '1') return false;
  return stderrIsTty || env.SKYSTACK_FILTER_NATIVE === '1';
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

/** Runs this command line again in a child whose stderr is filtered; resolves to its exit code. */
export function runInQuietChild(argv: string[]): Promise<number> {
  const child = spawn(process.execPath, [...process.execArgv, process.argv[1]!, ...argv], {
    stdio: ['inherit', 'inherit', 'pipe'],
    env: { ...process.env, [CHILD_FLAG]: '1', SKYSTACK_STDERR_TTY: '1', SKYSTACK_STDERR_COLUMNS: String(process.stderr.columns ?? 100) },
  });
  const noise = new NoiseStream();
  child.stderr!.setEncoding('utf8');
  child.stderr!.on('data', (chunk: string) => {
    const text = noise.push(chunk);
    if (text) process.stderr.write(text);
  });
  // The terminal's Ctrl-C reaches the child too; this process waits for it to finish cancelling.
  const ignore = (): void => {};
  process.on('SIGINT', ignore);
  const forward = (): void => {
    child.kill('SIGTERM');
  };
  process.on('SIGTERM', forward);
  return new Promise((resolve) => {
    child.on('error', (e) => {
      process.stderr.write(`skystack: could not start: ${e.message}\n`);
      resolve(1);
    });
    child.on('close', (code, signal) => {
      process.off('SIGINT', ignore);
      process.off('SIGTERM', forward);
      const rest = noise.end();
      if (rest) process.stderr.write(rest);
      resolve(code ?? (signal === 'SIGINT' ? 130 : 1));
    });
  });
}
