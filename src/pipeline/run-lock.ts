// One process at a time works in a run folder. A run or a resume holds `<run>/.run.lock` (created
// with O_EXCL, holding {pid, host, purpose, since}) from before it touches the folder until it has
// ended; a second resume of the same run, from the CLI, a job child or another server, is refused
// with RUN_BUSY instead of restoring or setting aside files the first one is writing. A lock whose
// process is gone (same host, pid no longer alive: a killed run) is stale and taken over; a lock
// from another host (a shared disk) cannot be checked and counts as held: its message names the
// file to remove once that run is known to be over.

import { hostname } from 'node:os';
import { open, readFile, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { RUN_LOCK } from '../shared/run-layout.js';

export interface LockHolder {
  pid: number;
  host: string;
  /** What the holder is doing: `run` or `resume`. */
  purpose: string;
  since: string;
}

export class RunBusy extends Error {
  readonly code = 'RUN_BUSY';
  constructor(
    readonly runDir: string,
    readonly holder: LockHolder,
  ) {
    super(`the run is in use by another process (${holder.purpose}, pid ${holder.pid} on ${holder.host}, since ${holder.since}); if that process is known to be gone, remove ${join(runDir, RUN_LOCK)}`);
  }
}

export interface RunLock {
  release(): Promise<void>;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

async function readHolder(file: string): Promise<LockHolder | null> {
  try {
    const h = JSON.parse(await readFile(file, 'utf8')) as Partial<LockHolder>;
    if (typeof h.pid !== 'number' || typeof h.host !== 'string') return null;
    return { pid: h.pid, host: h.host, purpose: typeof h.purpose === 'string' ? h.purpose : 'run', since: typeof h.since === 'string' ? h.since : '?' };
  } catch {
    return null;
  }
}

/** True when the holder can be shown to be gone (same host, process not alive). */
function stale(h: LockHolder): boolean {
  return h.host === hostname() && h.pid !== process.pid && !alive(h.pid);
}

/** The live holder of the run's lock, or null (no lock, a stale one, or an unreadable one). */
export async function runLockHolder(runDir: string): Promise<LockHolder | null> {
  const h = await readHolder(join(runDir, RUN_LOCK));
  return h && !stale(h) ? h : null;
}

/** Takes the run's lock; throws RunBusy when a live process holds it. */
export async function acquireRunLock(runDir: string, purpose: 'run' | 'resume'): Promise<RunLock> {
  const file = join(runDir, RUN_LOCK);
  const mine: LockHolder = { pid: process.pid, host: hostname(), purpose, since: new Date().toISOString() };
  const text = JSON.stringify(mine) + '\n';
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      const fh = await open(file, 'wx');
      try {
        await fh.writeFile(text);
      } finally {
        await fh.close();
      }
      return {
        async release() {
          // Only our own lock goes (a stale-lock takeover by another process leaves theirs alone).
          if ((await readFile(file, 'utf8').catch(() => null)) === text) await unlink(file).catch(() => undefined);
        },
      };
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code !== 'EEXIST') throw e;
    }
    const holder = await readHolder(file);
    // A lock being written this instant reads as empty: look again before judging it.
    if (holder === null) {
      await new Promise((r) => setTimeout(r, 50));
      const again = await readHolder(file);
      if (again === null) await unlink(file).catch(() => undefined);
      continue;
    }
    if (!stale(holder)) throw new RunBusy(runDir, holder);
    await unlink(file).catch(() => undefined);
  }
  const holder = await readHolder(file);
  throw new RunBusy(runDir, holder ?? { pid: -1, host: '?', purpose: 'run', since: '?' });
}
