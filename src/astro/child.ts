// Runs an external solver as a child process: an argument array (never a shell), a wall-clock
// time limit, and cancellation through an AbortSignal. Both kill the child's whole process
// group (SIGTERM, then SIGKILL after a grace period): solve-field starts astrometry-engine
// through /bin/sh, and killing solve-field alone would leave the engine running (and holding
// our pipes open). The promise settles once the child has exited, so no solver outlives the
// phase that started it. Output is kept up to a cap (tail kept).

import { spawn } from 'node:child_process';

export interface ChildResult {
  /** Exit code, or null when the child ended by a signal. */
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  timedOut: boolean;
  aborted: boolean;
  durationMs: number;
}

export interface ChildOptions {
  cwd?: string;
  timeoutMs: number;
  signal?: AbortSignal;
  env?: NodeJS.ProcessEnv;
}

const KEEP_CHARS = 64 * 1024;
const KILL_GRACE_MS = 2000;

const keepTail = (s: string): string => (s.length > KEEP_CHARS ? s.slice(s.length - KEEP_CHARS) : s);

/** Starts `bin args…`; rejects only when the binary cannot be started (ENOENT, EACCES). */
export function runChild(bin: string, args: readonly string[], opts: ChildOptions): Promise<ChildResult> {
  return new Promise((resolve, reject) => {
    const started = Date.now();
    let timedOut = false;
    let aborted = false;
    let stdout = '';
    let stderr = '';
    if (opts.signal?.aborted) {
      resolve({ code: null, signal: null, stdout, stderr, timedOut, aborted: true, durationMs: 0 });
      return;
    }
    // detached: the child leads a new process group, so the group can be killed as a whole.
    const child = spawn(bin, [...args], { cwd: opts.cwd, env: opts.env ?? process.env, stdio: ['ignore', 'pipe', 'pipe'], shell: false, detached: process.platform !== 'win32' });
    let killTimer: NodeJS.Timeout | undefined;
    const signalGroup = (sig: NodeJS.Signals) => {
      try {
        if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, sig);
        else child.kill(sig);
      } catch {
        // the group is gone already
      }
    };
    const kill = () => {
      signalGroup('SIGTERM');
      killTimer = setTimeout(() => signalGroup('SIGKILL'), KILL_GRACE_MS);
    };
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, opts.timeoutMs);
    const onAbort = () => {
      aborted = true;
      kill();
    };
    opts.signal?.addEventListener('abort', onAbort, { once: true });
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout = keepTail(stdout + d)));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr = keepTail(stderr + d)));
    const cleanup = () => {
      clearTimeout(timer);
      if (killTimer) clearTimeout(killTimer);
      opts.signal?.removeEventListener('abort', onAbort);
    };
    child.on('error', (e) => {
      cleanup();
      reject(e);
    });
    let settled = false;
    const finish = (code: number | null, signal: NodeJS.Signals | null) => {
      if (settled) return;
      settled = true;
      cleanup();
      resolve({ code, signal, stdout, stderr, timedOut, aborted, durationMs: Date.now() - started });
    };
    child.on('close', finish);
    // A grandchild that survived (or ignores SIGTERM) keeps the pipes open and delays 'close':
    // after the child's own exit, end its group and settle shortly anyway.
    child.on('exit', (code, signal) => {
      if (timedOut || aborted) signalGroup('SIGKILL');
      setTimeout(() => finish(code, signal), 500).unref();
    });
  });
}
