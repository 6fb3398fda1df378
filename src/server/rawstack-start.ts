// Starting a Raw Stack job from the API: body values override the stored
// parameters, which override the defaults; the result is validated once with the Raw Stack
// schema; every path in it is confined to the allowed roots (and replaced by its realpath);
// the run folder is created here so the answer can name run_id and run_dir at once.

import { mkdir } from 'node:fs/promises';
import { z } from 'zod';
import { mergeLayers } from '../config/merge.js';
import { parseRawStackConfig, QueueEntrySchema, type ConfigIssue, type RawStackConfig } from '../config/rawstack.js';
import { createRunFolder, writeRunRecord } from '../pipeline/run-folder.js';
import type { AppContext } from './context.js';
import { ApiError } from './errors.js';
import { newJobId } from './jobs/manager.js';
import type { JobRecord } from './jobs/types.js';
import { confineConfigPaths } from './config-paths.js';
import { PATH_FIELD_MAX } from './paths.js';

export const RawStackStartBody = z.strictObject({
  config: z.record(z.string(), z.unknown()).optional().describe('Raw Stack parameters (JSON editor); override the stored ones'),
  lights_dir: z.string().max(PATH_FIELD_MAX).optional(),
  pattern: z.string().min(1).max(256).optional(),
  runs_dir: z.string().max(PATH_FIELD_MAX).optional(),
  run_name: z.string().max(128).optional(),
  queue: z.array(QueueEntrySchema).max(64).optional(),
});
export type RawStackStart = z.output<typeof RawStackStartBody>;

async function confine(app: AppContext, config: RawStackConfig): Promise<void> {
  const active = config.queue.filter((q) => q.active);
  if (!config.lights_dir && active.length === 0) {
    throw new ApiError('VALIDATION_ERROR', 'lights_dir is required (or a queue with an active entry)', { issues: [{ path: 'lights_dir', code: 'required', message: 'required for a single-folder run' }] });
  }
  await confineConfigPaths(app.guard, config, 'start');
}

export function invalidConfiguration(issues: ConfigIssue[]): ApiError {
  return new ApiError('VALIDATION_ERROR', `invalid configuration: ${issues.slice(0, 5).map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`, { issues });
}

export async function startRawStack(app: AppContext, body: RawStackStart, requestLabel: Record<string, unknown>): Promise<JobRecord> {
  const form: Record<string, unknown> = {};
  if (body.lights_dir !== undefined) form.lights_dir = body.lights_dir;
  if (body.pattern !== undefined) form.pattern = body.pattern;
  if (body.run_name !== undefined) form.run_name = body.run_name;
  if (body.queue !== undefined) form.queue = body.queue;
  // The request's own layer is validated before it is merged: the merge then only ever combines
  // documents of the schema's shape (and its depth is bounded at the body parser before that).
  if (body.config !== undefined) {
    const own = parseRawStackConfig(body.config);
    if (!own.ok) throw invalidConfiguration(own.issues);
  }
  const merged = mergeLayers(app.params.get()?.config as Record<string, unknown> | undefined, body.config, form);
  const parsed = parseRawStackConfig(merged);
  if (!parsed.ok) throw invalidConfiguration(parsed.issues);
  const config = parsed.config;
  await confine(app, config);
  const runsText = body.runs_dir ?? (config.runs_dir || app.runsDir);
  const runsDir = await app.guard.resolve(runsText, { field: 'runs_dir', mustExist: false });
  await mkdir(runsDir, { recursive: true });
  config.runs_dir = runsDir;
  const folder = await createRunFolder(runsDir, config.run_name);
  const jobId = newJobId();
  await writeRunRecord(folder, { run_id: folder.runId, kind: 'rawstack', created_at: new Date().toISOString(), status: 'pending', input: { lights_dir: config.lights_dir, pattern: config.pattern, queue: config.queue }, job_id: jobId });
  return app.jobs.submit(
    'rawstack',
    { ...requestLabel, lights_dir: config.lights_dir, pattern: config.pattern, run_name: config.run_name, runs_dir: runsDir },
    { kind: 'rawstack', job_id: jobId, config: config as unknown as Record<string, unknown>, run_id: folder.runId, run_dir: folder.runDir, confine: app.guard.confinement() },
    { run_id: folder.runId, run_dir: folder.runDir },
    jobId,
  );
}
