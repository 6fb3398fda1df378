// Job endpoints: start a pipeline run ({pipeline: rawstack | tiled, ...}), resume a tiled run
// from a phase (tiled-resume.ts; 409 for Raw Stack runs, which are not resumable), list (newest first, paged), one job, cancel. Job records: docs/ARCHITECTURE.md "Processes".

import { readFile } from 'node:fs/promises';
import { z } from 'zod';
import { jsonBody, queryOf } from '../body.js';
import type { AppContext } from '../context.js';
import { ApiError, validationError } from '../errors.js';
import { JOB_ID_RE } from '../jobs/store.js';
import type { JobRecord } from '../jobs/types.js';
import { page, PageQuery, type ApiRegistry } from '../registry.js';
import { AcceptedSchema, JobListSchema, JobRecordSchema } from '../schemas.js';
import { RawStackStartBody, startRawStack } from '../rawstack-start.js';
import { startTiled, TiledStartBody } from '../tiled-start.js';
import { ResumeBody, resumeRun } from '../tiled-resume.js';
import { PIPELINE_NAMES, PIPELINES } from './pipelines.js';

const RunBody = z.looseObject({ pipeline: z.string().min(1).max(64).describe(`one of: ${PIPELINE_NAMES.join(', ')}`) });
const RawStackRunBody = RawStackStartBody.extend({ pipeline: z.literal('rawstack') });
const TiledRunBody = TiledStartBody.extend({ pipeline: z.literal('tiled') });
const JobsQuery = PageQuery.extend({
  state: z.enum(['pending', 'running', 'cancelling', 'ok', 'error', 'cancelled']).optional(),
  kind: z.enum(['run', 'resume', 'rawstack', 'tiled', 'scan', 'pcc_run', 'pcc_apply']).optional(),
});

export function accepted(job: JobRecord): Record<string, unknown> {
  return { job_id: job.job_id, ...(job.run_id ? { run_id: job.run_id, run_dir: job.run_dir } : {}), state: job.state };
}

export function getJob(app: AppContext, id: string): JobRecord {
  const job = JOB_ID_RE.test(id) ? app.jobs.get(id) : undefined;
  if (!job) throw new ApiError('NOT_FOUND', `no job ${id.slice(0, 80)}`);
  return job;
}

export function jobRoutes(api: ApiRegistry, app: AppContext): void {
  api.add(
    {
      method: 'post',
      path: '/api/jobs/run',
      tag: 'jobs',
      summary: 'start a pipeline run: {pipeline: "rawstack", config?, lights_dir?, pattern?, runs_dir?, run_name?, queue?} or {pipeline: "tiled", input_dir, runs_dir?, run_name?, config_yaml? | config?}',
      body: z.discriminatedUnion('pipeline', [RawStackRunBody, TiledRunBody]),
      responses: { 202: '{job_id, run_id, run_dir}', 400: 'invalid body or configuration', 403: 'a path outside the allowed roots', 422: 'pipeline unavailable, or a missing input folder' },
      response: AcceptedSchema,
    },
    async (ctx) => {
      const raw = await jsonBody(ctx, RunBody);
      if (!PIPELINE_NAMES.includes(raw.pipeline)) {
        throw new ApiError('PIPELINE_UNAVAILABLE', `pipeline "${raw.pipeline}" is not available; available: ${PIPELINE_NAMES.join(', ')}`, { available: PIPELINES.map((p) => p.name) });
      }
      if (raw.pipeline === 'tiled') {
        const t = TiledRunBody.safeParse(raw);
        if (!t.success) throw validationError(t.error, 'request body');
        const { pipeline: _t, ...body } = t.data;
        const { job, warnings } = await startTiled(app, body, { pipeline: 'tiled', via: '/api/jobs/run' });
        ctx.status = 202;
        ctx.body = { ...accepted(job), ...(warnings.length ? { warnings } : {}) };
        return;
      }
      const r = RawStackRunBody.safeParse(raw);
      if (!r.success) throw validationError(r.error, 'request body');
      const { pipeline: _p, ...body } = r.data;
      const job = await startRawStack(app, body, { pipeline: 'rawstack', via: '/api/jobs/run' });
      ctx.status = 202;
      ctx.body = accepted(job);
    },
  );

  api.add(
    {
      method: 'post',
      path: '/api/jobs/resume',
      tag: 'jobs',
      summary: 'resume a tiled run from a phase: {run_id, from_phase, dry_run?, config_yaml? | config_revision_id?}',
      body: ResumeBody,
      responses: {
        200: 'dry run: {run_id, run_dir, from_phase, feasible, reason?, missing_files?, changed_keys?, earliest_feasible_phase, would_rerun}',
        202: '{job_id, run_id, run_dir, state, from_phase, would_rerun}',
        400: 'VALIDATION_ERROR (bad body or YAML, no from_phase), RESUME_CONFIG_CONFLICT (config_yaml and config_revision_id)',
        404: 'no such run or revision',
        409: 'RESUME_NOT_SUPPORTED (Raw Stack runs), RESUME_PHASE_NOT_FEASIBLE (details: reason, missing_files?, changed_keys?, earliest_feasible_phase), RUN_BUSY (a job of the run is pending or running)',
      },
    },
    async (ctx) => {
      const body = await jsonBody(ctx, ResumeBody);
      const answer = await resumeRun(app, body);
      ctx.status = answer.status;
      ctx.body = answer.body;
    },
  );

  api.add({ method: 'get', path: '/api/jobs', tag: 'jobs', summary: 'list jobs, newest first', query: JobsQuery, responses: { 200: '{items, total}' }, response: JobListSchema }, async (ctx) => {
    const q = queryOf(ctx, JobsQuery);
    const jobs = app.jobs.list().filter((j) => (!q.state || j.state === q.state) && (!q.kind || j.kind === q.kind));
    ctx.body = page(jobs, q);
  });

  api.add({ method: 'get', path: '/api/jobs/:id', tag: 'jobs', summary: 'one job record', responses: { 200: 'job record', 404: 'no such job' }, response: JobRecordSchema }, async (ctx) => {
    ctx.body = getJob(app, ctx.params.id!);
  });

  const LogQuery = z.strictObject({ tail: z.coerce.number().int().min(1).max(100000).default(200) });
  api.add({ method: 'get', path: '/api/jobs/:id/log', tag: 'jobs', summary: "the job child's stdout/stderr (Dawn's native noise filtered), last ?tail= lines", query: LogQuery, responses: { 200: '{lines, total}', 404: 'no such job' } }, async (ctx) => {
    const q = queryOf(ctx, LogQuery);
    const job = getJob(app, ctx.params.id!);
    const text = await readFile(app.jobStore.logFile(job.job_id), 'utf8').catch(() => '');
    const lines = text.split('\n').filter((l) => l.length > 0);
    ctx.body = { job_id: job.job_id, lines: lines.slice(-q.tail), total: lines.length };
  });

  api.add({ method: 'delete', path: '/api/jobs/:id', tag: 'jobs', summary: 'cancel a job (the child ends within 2 s; its run closes with cancelled)', responses: { 202: 'job record (cancelling or cancelled)', 404: 'no such job', 409: 'JOB_FINISHED' }, response: JobRecordSchema }, async (ctx) => {
    const job = getJob(app, ctx.params.id!);
    const rec = await app.jobs.cancel(job.job_id);
    ctx.status = 202;
    ctx.body = rec;
  });
}
