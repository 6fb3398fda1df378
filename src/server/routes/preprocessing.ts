// The Raw Stack tool endpoints as the seed lists them: parameters GET (stored, or defaults
// while nothing is stored: always 200) and PATCH (validate with zod and store, persisted),
// defaults, plus run / status / cancel / import.

import { parse as parseYaml, YAMLParseError } from 'yaml';
import { z } from 'zod';
import { defaultRawStackConfig, parseRawStackConfig } from '../../config/rawstack.js';
import { importFromTiled } from '../../config/tiled-import.js';
import { confineConfigPaths } from '../config-paths.js';
import { readEvents, phaseStatuses } from '../run-index.js';
import { checkYamlNesting, jsonBody, queryOf } from '../body.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import type { ApiRegistry } from '../registry.js';
import { RawStackStartBody, startRawStack } from '../rawstack-start.js';
import { accepted, getJob } from './jobs.js';
import { AcceptedSchema, JobRecordSchema, ParametersSchema, PreprocessingStatusSchema } from '../schemas.js';

const StatusQuery = z.strictObject({ job_id: z.string().max(80).optional(), events: z.coerce.number().int().min(0).max(1000).default(50) });
const CancelBody = z.strictObject({ job_id: z.string().min(1).max(80) });
const ImportBody = z.strictObject({ yaml: z.string().max(1024 * 1024).describe('the loaded tiled-workflow YAML') });

export function preprocessingRoutes(api: ApiRegistry, app: AppContext): void {
  api.add(
    { method: 'get', path: '/api/tools/preprocessing/parameters', tag: 'preprocessing', summary: 'the stored preprocessing configuration, or the defaults while nothing is stored', responses: { 200: '{config, source, updated_at}' }, response: ParametersSchema },
    async (ctx) => {
      const stored = app.params.get();
      ctx.body = stored ? { config: stored.config, source: 'stored', updated_at: stored.updated_at } : { config: defaultRawStackConfig(), source: 'defaults', updated_at: null };
    },
  );

  api.add(
    {
      method: 'patch',
      path: '/api/tools/preprocessing/parameters',
      tag: 'preprocessing',
      summary: 'validate the JSON configuration and store it for further Raw Stack starts',
      body: z.record(z.string(), z.unknown()),
      responses: { 200: '{config, source: "stored", updated_at}', 400: 'VALIDATION_ERROR naming each bad key', 403: 'a path outside the allowed roots' },
      response: ParametersSchema,
    },
    async (ctx) => {
      const body = await jsonBody(ctx, z.unknown());
      if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new ApiError('VALIDATION_ERROR', 'the configuration must be a JSON object', { issues: [{ path: '', code: 'invalid_type', message: 'expected object' }] });
      // `{config: {...}}` and a bare configuration are both accepted.
      const candidate = 'config' in body && Object.keys(body).length === 1 ? (body as { config: unknown }).config : body;
      const parsed = parseRawStackConfig(candidate);
      if (!parsed.ok) {
        throw new ApiError('VALIDATION_ERROR', `invalid configuration: ${parsed.issues.slice(0, 5).map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`, { issues: parsed.issues });
      }
      // Stored paths are confined like a run's (existence aside): nothing outside the roots is
      // ever stored, so nothing probes it later (/api/system/info).
      await confineConfigPaths(app.guard, parsed.config, 'store');
      const stored = await app.params.set(parsed.config);
      ctx.body = { config: stored.config, source: 'stored', updated_at: stored.updated_at };
    },
  );

  api.add({ method: 'get', path: '/api/tools/preprocessing/defaults', tag: 'preprocessing', summary: 'the backend default preprocessing configuration', responses: { 200: '{config}' } }, async (ctx) => {
    ctx.body = { config: defaultRawStackConfig() };
  });

  api.add(
    {
      method: 'post',
      path: '/api/tools/preprocessing/run',
      tag: 'preprocessing',
      summary: 'start a Raw Stack job; body values override the stored parameters',
      body: RawStackStartBody,
      responses: { 202: '{job_id, run_id, run_dir}', 400: 'invalid configuration', 403: 'a path outside the allowed roots', 422: 'missing input folder' },
      response: AcceptedSchema,
    },
    async (ctx) => {
      const body = await jsonBody(ctx, RawStackStartBody);
      const job = await startRawStack(app, body, { via: '/api/tools/preprocessing/run' });
      ctx.status = 202;
      ctx.body = accepted(job);
    },
  );

  api.add(
    { method: 'get', path: '/api/tools/preprocessing/status', tag: 'preprocessing', summary: 'job state, phases with status and progress, latest events (?job_id=, default: the newest Raw Stack job)', query: StatusQuery, responses: { 200: 'status', 404: 'no such job' }, response: PreprocessingStatusSchema },
    async (ctx) => {
      const q = queryOf(ctx, StatusQuery);
      const job = q.job_id ? getJob(app, q.job_id) : app.jobs.list().find((j) => j.kind === 'rawstack');
      if (!job) throw new ApiError('NOT_FOUND', 'no Raw Stack job yet');
      const lines = job.run_dir ? await readEvents(job.run_dir) : [];
      const s = phaseStatuses(lines);
      ctx.body = {
        job_id: job.job_id,
        state: job.state,
        error: job.error,
        run_id: job.run_id,
        run_dir: job.run_dir,
        run_status: s.run_status,
        progress: Math.max(s.progress, job.progress.fraction),
        current_phase: s.phases.find((p) => p.status === 'running')?.phase ?? null,
        phases: s.phases,
        events: q.events > 0 ? lines.slice(-q.events) : [],
      };
    },
  );

  api.add(
    { method: 'post', path: '/api/tools/preprocessing/cancel', tag: 'preprocessing', summary: 'cancel a Raw Stack job', body: CancelBody, responses: { 202: 'job record', 404: 'no such job', 409: 'JOB_FINISHED' }, response: JobRecordSchema },
    async (ctx) => {
      const body = await jsonBody(ctx, CancelBody);
      const job = getJob(app, body.job_id);
      ctx.status = 202;
      ctx.body = await app.jobs.cancel(job.job_id);
    },
  );

  api.add(
    {
      method: 'post',
      path: '/api/tools/preprocessing/import',
      tag: 'preprocessing',
      summary: 'Raw Stack parameters imported from a tiled-workflow YAML (not stored; PATCH parameters stores)',
      body: ImportBody,
      responses: { 200: '{config, mapped, ignored}', 400: 'YAML syntax error (line/column) or bad body' },
    },
    async (ctx) => {
      const body = await jsonBody(ctx, ImportBody);
      checkYamlNesting(body.yaml);
      let doc: unknown;
      try {
        doc = parseYaml(body.yaml, { customTags: [], maxAliasCount: 100, uniqueKeys: true });
      } catch (e) {
        const pos = e instanceof YAMLParseError ? e.linePos?.[0] : undefined;
        throw new ApiError('VALIDATION_ERROR', `YAML syntax error: ${(e as Error).message.split('\n')[0]}`, { issues: [{ path: '', code: 'yaml_syntax', message: (e as Error).message.split('\n')[0], line: pos?.line ?? null, column: pos?.col ?? null }] });
      }
      const base = app.params.get()?.config ?? defaultRawStackConfig();
      ctx.body = importFromTiled(doc ?? {}, base);
    },
  );
}
