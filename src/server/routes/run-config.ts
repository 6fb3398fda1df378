// A run's configuration and its revisions: the configuration the run used
// (GET /api/runs/:id/config: Raw Stack's effective_config.json, a tiled run's config.yaml plus its
// latest revision), the revision list and one revision's YAML, and a revision a user saves for a
// later resume (POST, validated as a tiled YAML first). Raw Stack runs have no revisions
// (409 REVISIONS_NOT_SUPPORTED: they are not resumable, and the seed disables revision functions
// for them). Reads go through run-files.ts, confined to the run folder; writes through
// src/pipeline/config-revisions.ts.

import { z } from 'zod';
import { validateTiledYaml, YAML_LIMIT } from '../../config/tiled.js';
import { parseRevisionIndex, recordRevision, REVISION_ID_RE, revisionsDir } from '../../pipeline/config-revisions.js';
import { configRevisionsPath, type RunLayout } from '../../shared/run-layout.js';
import { jsonBody } from '../body.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import type { ApiRegistry } from '../registry.js';
import { readRunText } from '../run-files.js';
import { readRunRecord, runLayout } from '../run-index.js';
import { findRun } from '../run-lookup.js';

const RevisionBody = z.strictObject({ config_yaml: z.string().min(1).max(YAML_LIMIT).describe('the configuration as tiled-workflow YAML') });

async function revisionsOf(dir: string, layout: RunLayout) {
  const rel = configRevisionsPath(layout);
  if (rel === null) return null;
  return parseRevisionIndex(await readRunText(dir, `${rel}/index.json`));
}

function noRevisions(id: string, kind: string): ApiError {
  return new ApiError('REVISIONS_NOT_SUPPORTED', `run ${id} is a ${kind === 'rawstack' ? 'Raw Stack' : kind} run; its runs are not resumable and keep no configuration revisions`, { run_id: id, kind });
}

export function runConfigRoutes(api: ApiRegistry, app: AppContext): void {
  api.add({ method: 'get', path: '/api/runs/:id/config', tag: 'runs', summary: "the configuration the run used (a tiled run's config.yaml, Raw Stack's effective_config.json) and its latest revision", responses: { 200: '{run_id, kind, path, format, text, revision_id}', 404: 'no such run or no configuration recorded' } }, async (ctx) => {
    const id = ctx.params.id!;
    const dir = await findRun(app, id);
    const layout = await runLayout(dir, await readRunRecord(dir));
    const text = await readRunText(dir, layout.config);
    if (text === null) throw new ApiError('NOT_FOUND', `run ${id} has no recorded configuration (${layout.config})`);
    const revisions = await revisionsOf(dir, layout);
    ctx.body = { run_id: id, kind: layout.kind, path: layout.config, format: layout.config.endsWith('.json') ? 'json' : 'yaml', text, revision_id: revisions?.at(-1)?.revision_id ?? null };
  });

  api.add({ method: 'get', path: '/api/runs/:id/config/revisions', tag: 'runs', summary: 'configuration revisions of a tiled run, oldest first', responses: { 200: '{items, total}', 404: 'no such run', 409: 'REVISIONS_NOT_SUPPORTED (Raw Stack runs)' } }, async (ctx) => {
    const id = ctx.params.id!;
    const dir = await findRun(app, id);
    const layout = await runLayout(dir, await readRunRecord(dir));
    const items = await revisionsOf(dir, layout);
    if (items === null) throw noRevisions(id, layout.kind);
    ctx.body = { items, total: items.length };
  });

  api.add({ method: 'get', path: '/api/runs/:id/config/revisions/:rev', tag: 'runs', summary: "one revision's YAML and record", responses: { 200: '{revision_id, file_name, source, created_at, run_id, yaml}', 404: 'no such run or revision', 409: 'REVISIONS_NOT_SUPPORTED (Raw Stack runs)' } }, async (ctx) => {
    const id = ctx.params.id!;
    const rev = ctx.params.rev!;
    const dir = await findRun(app, id);
    const layout = await runLayout(dir, await readRunRecord(dir));
    const items = await revisionsOf(dir, layout);
    if (items === null) throw noRevisions(id, layout.kind);
    const entry = REVISION_ID_RE.test(rev) ? items.find((e) => e.revision_id === rev) : undefined;
    if (!entry) throw new ApiError('NOT_FOUND', `run ${id} has no revision ${JSON.stringify(rev.slice(0, 40))}`);
    const yaml = await readRunText(dir, `${revisionsDir(layout)}/${entry.file_name}`);
    if (yaml === null) throw new ApiError('NOT_FOUND', `revision ${rev} of run ${id} is listed but its file is missing`);
    ctx.body = { ...entry, yaml };
  });

  api.add({ method: 'post', path: '/api/runs/:id/config/revisions', tag: 'runs', summary: 'save a configuration as a new revision of a tiled run (source user), validated first', body: RevisionBody, responses: { 201: 'the revision record', 400: 'VALIDATION_ERROR with line and column per issue', 404: 'no such run', 409: 'REVISIONS_NOT_SUPPORTED (Raw Stack runs)' } }, async (ctx) => {
    const id = ctx.params.id!;
    const body = await jsonBody(ctx, RevisionBody);
    const dir = await findRun(app, id);
    const layout = await runLayout(dir, await readRunRecord(dir));
    if (configRevisionsPath(layout) === null) throw noRevisions(id, layout.kind);
    const check = validateTiledYaml(body.config_yaml);
    if (!check.ok) throw new ApiError('VALIDATION_ERROR', `the configuration has ${check.errors.length} error${check.errors.length === 1 ? '' : 's'}`, { issues: check.errors });
    ctx.status = 201;
    ctx.body = await recordRevision(dir, { yaml: body.config_yaml, source: 'user', runId: id }, layout);
  });
}
