// Finding runs for the API: every run it knows (runs_dir folders plus the run folders of jobs
// elsewhere) and the run folder of an id, confined to the runs dir or a job's run folder. Shared
// by the run, job, image and config routes (so no route imports another).

import { realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { AppContext } from './context.js';
import { ApiError } from './errors.js';
import { isInside } from './paths.js';
import { RUN_ID_RE, type RunSummary } from './run-index.js';

/** All runs the API knows: runs_dir folders plus job run folders elsewhere, newest first. */
export async function allRuns(app: AppContext): Promise<RunSummary[]> {
  const jobRuns = app.jobs.list().flatMap((j) => (j.run_dir && j.run_id ? [{ run_id: j.run_id, run_dir: j.run_dir, job_id: j.job_id }] : []));
  return app.runList.list(jobRuns);
}

/** The run folder (realpath) for an id, confined to the runs dir or a job's run folder. */
export async function findRun(app: AppContext, id: string): Promise<string> {
  if (!RUN_ID_RE.test(id) || id.includes('..')) throw new ApiError('NOT_FOUND', `no run ${JSON.stringify(id.slice(0, 140))}`);
  const candidates = [join(app.runsDir, id), ...app.jobs.list().filter((j) => j.run_id === id && j.run_dir).map((j) => j.run_dir!)];
  for (const c of candidates) {
    const real = await realpath(c).catch(() => null);
    if (!real || app.guard.rootOf(real) === null) continue;
    if (c.startsWith(app.runsDir) && !isInside(app.runsDir, real)) continue;
    const s = await stat(real).catch(() => null);
    if (s?.isDirectory()) return real;
  }
  throw new ApiError('NOT_FOUND', `no run ${id}`);
}
