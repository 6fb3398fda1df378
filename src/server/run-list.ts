// The run list behind GET /api/runs, kept in memory so a listing does not re-read every
// run.json (55–65 ms at 45 runs before; flat at thousands now, see bench/runs-list.ts).
// What keeps it true without a watcher:
// - runs_dir's mtime changes whenever a run folder is added or removed, so the folder is read
//   again (names only) only then, and only new folders are summarized;
// - a run whose status is final (ok, error, cancelled) never changes its run.json again (the
//   server's closeRun only rewrites running/pending runs), so only runs still in progress, and
//   folders that were not (yet) runs, are summarized again on each listing;
// - the run folders of jobs outside runs_dir are added when their job is first seen.
// A file system whose mtime is coarse could miss a change in the tick of the last read: a
// folder read less than MTIME_SETTLE_MS after its mtime is read again next time. Everything is
// read through run-files.ts (confined to the run folder).

import { readdir, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { newestFirst, RUN_ID_RE, summarizeRun, type RunSummary } from './run-index.js';

const FINAL = new Set(['ok', 'error', 'cancelled']);
const MTIME_SETTLE_MS = 2000;

/** A job's run folder (runs started with another runs_dir inside the roots). */
export interface JobRun {
  run_id: string;
  run_dir: string;
  job_id: string;
}

export class RunList {
  /** Runs by folder. */
  private readonly runs = new Map<string, RunSummary>();
  /** Folders under runs_dir that were not runs when last looked at (being created). */
  private readonly pending = new Map<string, string>();
  private dirMtime: number | null = null;
  private sorted: RunSummary[] | null = null;

  constructor(
    private readonly runsDir: string,
    private readonly settleMs = MTIME_SETTLE_MS,
  ) {}

  private chain: Promise<unknown> = Promise.resolve();

  /** All runs, newest first (the array is shared: callers must not modify it). */
  list(jobRuns: JobRun[] = []): Promise<RunSummary[]> {
    // One update at a time: concurrent requests wait for it instead of repeating it.
    const next = this.chain.then(() => this.update(jobRuns));
    this.chain = next.catch(() => undefined);
    return next;
  }

  private async update(jobRuns: JobRun[]): Promise<RunSummary[]> {
    await this.syncFolder();
    for (const [dir, id] of [...this.pending]) await this.refresh(dir, id, null);
    for (const [dir, r] of [...this.runs]) if (!FINAL.has(r.status)) await this.refresh(dir, r.run_id, r.job_id);
    for (const j of jobRuns) if (!this.runs.has(j.run_dir)) await this.refresh(j.run_dir, j.run_id, j.job_id, false);
    this.sorted ??= [...this.runs.values()].sort(newestFirst);
    return this.sorted;
  }

  private async syncFolder(): Promise<void> {
    const s = await stat(this.runsDir).catch(() => null);
    if (!s) {
      this.dropUnder(new Set());
      this.dirMtime = null;
      return;
    }
    if (this.dirMtime !== null && s.mtimeMs === this.dirMtime) return;
    const entries = await readdir(this.runsDir, { withFileTypes: true }).catch(() => []);
    const present = new Set<string>();
    for (const e of entries) {
      if (!e.isDirectory() || e.name.startsWith('.') || !RUN_ID_RE.test(e.name)) continue;
      const dir = join(this.runsDir, e.name);
      present.add(dir);
      if (!this.runs.has(dir) && !this.pending.has(dir)) await this.refresh(dir, e.name, null);
    }
    this.dropUnder(present);
    this.dirMtime = Date.now() - s.mtimeMs > this.settleMs ? s.mtimeMs : null;
  }

  /** Forgets runs_dir folders that are gone (job run folders elsewhere stay). */
  private dropUnder(present: Set<string>): void {
    for (const dir of [...this.runs.keys(), ...this.pending.keys()]) {
      if (dirname(dir) === this.runsDir && !present.has(dir)) {
        if (this.runs.delete(dir)) this.sorted = null;
        this.pending.delete(dir);
      }
    }
  }

  private async refresh(dir: string, runId: string, jobId: string | null, underRunsDir = true): Promise<void> {
    const next = await summarizeRun(dir, runId, jobId);
    const prev = this.runs.get(dir);
    if (next === null) {
      if (underRunsDir) this.pending.set(dir, runId);
      if (prev) {
        this.runs.delete(dir);
        this.sorted = null;
      }
      return;
    }
    this.pending.delete(dir);
    if (!prev || prev.status !== next.status || prev.created_at !== next.created_at || prev.kind !== next.kind || prev.job_id !== next.job_id || prev.input_dir !== next.input_dir) {
      this.runs.set(dir, next);
      this.sorted = null;
    }
  }
}
