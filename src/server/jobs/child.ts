// Starting a job's child process: `node <cli> job <spec-file>` with an argument array (never
// a shell), an IPC channel for progress and the result, and piped stdout/stderr copied into
// the job log with Dawn's native noise filtered out. Cancel = SIGTERM (the child aborts its
// run, which closes its events), then SIGKILL after a grace period so it is gone in time.

import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import { DawnNoiseFilter } from './dawn-noise.js';
import type { ChildMessage } from './types.js';

export interface ChildHandle {
  pid: number | null;
  /** Resolves when the process has exited (never rejects). */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** SIGTERM now, SIGKILL after `graceMs` if still alive. */
  terminate(graceMs: number): void;
}

export interface SpawnOptions {
  cliPath: string;
  specFile: string;
  logFile: string;
  onMessage: (m: ChildMessage) => void;
  env?: NodeJS.ProcessEnv;
}

export function spawnJobChild(o: SpawnOptions): ChildHandle {
  const log = createWriteStream(o.logFile, { flags: 'a' });
  const filter = new DawnNoiseFilter();
  let child: ChildProcess;
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolveExit) => {
    child = spawn(process.execPath, [o.cliPath, 'job', o.specFile], {
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
      env: o.env ?? process.env,
      shell: false,
      windowsHide: true,
    });
    // Resolve once the process has exited and both pipes have drained into the log.
    let open = 2;
    let status: { code: number | null; signal: NodeJS.Signals | null } | null = null;
    let done = false;
    const finish = () => {
      if (done || open > 0 || !status) return;
      done = true;
      if (filter.hidden > 0) log.write(`(${filter.hidden} expected Dawn adapter warnings hidden)\n`);
      log.end(() => resolveExit(status!));
    };
    const pipeLines = (stream: Readable | null) => {
      if (!stream) {
        open--;
        return;
      }
      const rl = createInterface({ input: stream });
      rl.on('line', (line) => {
        if (filter.keep(line)) log.write(`${line}\n`);
      });
      rl.on('close', () => {
        open--;
        finish();
      });
    };
    pipeLines(child.stdout);
    pipeLines(child.stderr);
    child.on('message', (m) => o.onMessage(m as ChildMessage));
    child.on('error', (e) => {
      // spawn failure: no exit event follows
      log.write(`spawn failed: ${e.message}\n`);
      status ??= { code: null, signal: null };
      open = 0;
      finish();
    });
    child.on('exit', (code, signal) => {
      status = { code, signal };
      finish();
    });
  });
  let killTimer: NodeJS.Timeout | null = null;
  void exited.then(() => {
    if (killTimer) clearTimeout(killTimer);
  });
  return {
    get pid() {
      return child.pid ?? null;
    },
    exited,
    terminate(graceMs: number) {
      if (child.exitCode !== null || child.signalCode !== null) return;
      child.kill('SIGTERM');
      killTimer ??= setTimeout(() => {
        if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      }, graceMs);
    },
  };
}
