// Resuming a tiled run from the API (POST /api/jobs/resume; docs/tiled-workflow.md "Resume").
// The configuration is the run's own config.yaml, or `config_yaml`, or a stored revision
// (`config_revision_id`), never two at once (400 RESUME_CONFIG_CONFLICT); a given one is
// validated with line numbers and its paths confined to the allowed roots like a tiled start's
// (the run's own configuration is checked against the roots too: the run may come from the CLI).
// Feasibility is checked here (src/pipeline/tiled/resume.ts): a dry run answers 200 with the
// verdict and writes nothing; a real resume that is not feasible is 409
// RESUME_PHASE_NOT_FEASIBLE with the verdict as details, a run with a job still pending or
// running, or a run folder another process holds (its run lock: a CLI resume), is 409 RUN_BUSY, and a feasible one becomes a job of kind `resume` (202 {job_id, run_id}).
// The job child checks feasibility again before it touches the folder.

import { dirname } from 'node:path';
import { z } from 'zod';
import { resolveTiledConfig, type TiledRunConfig } from '../config/tiled-run.js';
import { validateTiledYaml, YAML_LIMIT } from '../config/tiled.js';
import { listRevisions, REVISION_ID_RE, revisionsDir } from '../pipeline/config-revisions.js';
import { runLockHolder } from '../pipeline/run-lock.js';
import { checkResume, configFromYaml, refusal, ResumeRefused, runDefaults } from '../pipeline/tiled/resume.js';
import { RUN_LAYOUTS } from '../shared/run-layout.js';
import { confineConfigPaths } from './config-paths.js';
import type { AppContext } from './context.js';
import { ApiError } from './errors.js';
import { newJobId } from './jobs/manager.js';
import { TERMINAL_STATES, type JobRecord } from './jobs/types.js';
import { invalidConfiguration } from './rawstack-start.js';
import { readRunText } from './run-files.js';
import { readRunRecord } from './run-index.js';
import { findRun } from './run-lookup.js';
import { syncPaths } from './tiled-start.js';

export const ResumeBody = z.strictObject({
  run_id: z.string().min(1).max(200),
  from_phase: z.string().min(1).max(64).optional().describe('the first phase to run again (a phase of the tiled plan)'),
  dry_run: z.boolean().optional().describe('only check feasibility; nothing is written'),
  config_yaml: z.string().max(YAML_LIMIT).optional().describe('the tiled YAML to resume with (else the run’s config.yaml)'),
  config_revision_id: z.string().max(40).optional().describe('a stored revision of the run to resume with'),
});
export type ResumeRequest = z.output<typeof ResumeBody>;

export type ResumeAnswer = { status: 200; body: Record<string, unknown> } | { status: 202; body: Record<string, unknown>; job: JobRecord };

/** The configuration a resume request names, resolved and confined; null for the run's own. */
async function requestedConfig(app: AppContext, dir: string, body: ResumeRequest): Promise<TiledRunConfig | null> {
  let yaml: string | null = body.config_yaml ?? null;
  if (body.config_revision_id !== undefined) {
    const rev = body.config_revision_id;
    const entry = REVISION_ID_RE.test(rev) ? (await listRevisions(dir)).find((e) => e.revision_id === rev) : undefined;
    if (!entry) throw new ApiError('NOT_FOUND', `run ${body.run_id} has no revision ${JSON.stringify(rev.slice(0, 40))}`);
    yaml = await readRunText(dir, `${revisionsDir(RUN_LAYOUTS.tiled)}/${entry.file_name}`);
    if (yaml === null) throw new ApiError('NOT_FOUND', `revision ${rev} of run ${body.run_id} is listed but its file is missing`);
  }
  if (yaml === null) return null;
  const v = validateTiledYaml(yaml);
  if (!v.ok) throw new ApiError('VALIDATION_ERROR', `invalid tiled YAML: ${v.errors.slice(0, 5).map((e) => `${e.path || '(root)'} (line ${e.line ?? '?'}): ${e.message}`).join('; ')}`, { issues: v.errors });
  const r = resolveTiledConfig(v.config ?? {}, await runDefaults(dir, v.config ?? {}));
  if (!r.ok) throw invalidConfiguration(r.issues);
  const config = r.config;
  await confineConfigPaths(app.guard, config.raw, 'start');
  syncPaths(config);
  // Where the run lies is not the configuration's to change.
  config.tiled.output.runs_dir = dirname(dir);
  config.raw.runs_dir = dirname(dir);
  return config;
}

export async function resumeRun(app: AppContext, body: ResumeRequest): Promise<ResumeAnswer> {
  const dir = await findRun(app, body.run_id);
  const rec = await readRunRecord(dir);
  const kind = rec?.kind ?? 'rawstack';
  if (kind !== 'tiled') throw new ApiError('RESUME_NOT_SUPPORTED', `run ${body.run_id} is a ${kind === 'rawstack' ? 'Raw Stack' : kind} run; ${kind === 'rawstack' ? 'Raw Stack' : kind} runs are not resumable`, { run_id: body.run_id, kind });
  if (body.from_phase === undefined) throw new ApiError('VALIDATION_ERROR', 'from_phase is required', { issues: [{ path: 'from_phase', code: 'required', message: 'the first phase to run again' }] });
  if (body.config_yaml !== undefined && body.config_revision_id !== undefined) {
    throw new ApiError('RESUME_CONFIG_CONFLICT', 'give config_yaml or config_revision_id, not both', { issues: [{ path: 'config_revision_id', code: 'exclusive', message: 'config_yaml and config_revision_id exclude each other' }] });
  }
  const fromPhase = body.from_phase;
  const config = await requestedConfig(app, dir, body);
  // The run's own configuration may come from a CLI run: its paths must lie in the allowed roots too.
  if (!config) {
    const own = configFromYaml(await readRunText(dir, RUN_LAYOUTS.tiled.config));
    // Gone paths are feasibility's to report (input_missing); paths outside the roots are refused.
    if (own) await confineConfigPaths(app.guard, own.raw, 'start').catch((e: unknown) => {
      if (!(e instanceof ApiError) || e.code === 'PATH_NOT_ALLOWED') throw e;
    });
  }
  let checked;
  try {
    // A dry run compares the lights' checksums; a real one leaves that to its job (it checks again).
    checked = await checkResume(dir, fromPhase, config, { checksums: body.dry_run === true });
  } catch (e) {
    if (e instanceof ResumeRefused) throw new ApiError(e.code, e.message, { run_id: body.run_id, ...e.details });
    throw e;
  }
  const { verdict } = checked;
  if (body.dry_run) {
    const { message: _m, ...rest } = verdict;
    return { status: 200, body: { run_id: body.run_id, run_dir: dir, from_phase: fromPhase, ...rest } };
  }
  const busy = app.jobs.list().find((j) => j.run_id === body.run_id && !TERMINAL_STATES.has(j.state));
  if (busy) throw new ApiError('RUN_BUSY', `run ${body.run_id} has a ${busy.kind} job that is ${busy.state} (${busy.job_id}); resume it when that job has ended`, { run_id: body.run_id, job_id: busy.job_id, state: busy.state });
  // A process outside this server's jobs (the CLI, another server) working in the folder.
  const holder = await runLockHolder(dir);
  if (holder) throw new ApiError('RUN_BUSY', `run ${body.run_id} is in use by another process (${holder.purpose}, pid ${holder.pid} on ${holder.host}, since ${holder.since}); resume it when that has ended`, { run_id: body.run_id, holder });
  if (!verdict.feasible) {
    const r = refusal(verdict, fromPhase);
    throw new ApiError('RESUME_PHASE_NOT_FEASIBLE', r.message, { run_id: body.run_id, from_phase: fromPhase, ...r.details });
  }
  const jobId = newJobId();
  const job = await app.jobs.submit(
    'resume',
    { via: '/api/jobs/resume', run_id: body.run_id, from_phase: fromPhase, ...(body.config_revision_id ? { config_revision_id: body.config_revision_id } : {}), ...(body.config_yaml !== undefined ? { config_yaml: true } : {}) },
    {
      kind: 'resume',
      job_id: jobId,
      run_id: body.run_id,
      run_dir: dir,
      from_phase: fromPhase,
      ...(config ? { tiled: config.tiled as unknown as Record<string, unknown>, raw: config.raw as unknown as Record<string, unknown> } : {}),
      confine: app.guard.confinement(),
    },
    { run_id: body.run_id, run_dir: dir },
    jobId,
  );
  return { status: 202, body: { job_id: job.job_id, run_id: body.run_id, run_dir: dir, state: job.state, from_phase: fromPhase, would_rerun: verdict.would_rerun }, job };
}
