// Starting a tiled-workflow job from the API (POST /api/jobs/run {pipeline: "tiled"}): the tiled
// document is `config_yaml` (validated with line numbers; unknown keys are warnings, ignored) or
// `config` (a mapping of tiled blocks), with `input_dir` and `run_name` on top; it is resolved
// once (config/tiled-run.ts). Every path the run reads (the derived Raw Stack configuration's:
// lights, calibration folders and masters, catalogue, solver data) is confined to the allowed
// roots and replaced by its realpath, in the tiled settings too, so config.yaml records what
// ran. The run folder is created here so the answer can name run_id and run_dir at once.

import { mkdir } from 'node:fs/promises';
import { z } from 'zod';
import { resolveTiledConfig, type TiledRunConfig } from '../config/tiled-run.js';
import { validateTiledYaml, YAML_LIMIT } from '../config/tiled.js';
import { createRunFolder, writeRunRecord } from '../pipeline/run-folder.js';
import { confineConfigPaths } from './config-paths.js';
import type { AppContext } from './context.js';
import { ApiError } from './errors.js';
import { newJobId } from './jobs/manager.js';
import type { JobRecord } from './jobs/types.js';
import { PATH_FIELD_MAX } from './paths.js';
import { invalidConfiguration } from './rawstack-start.js';

export const TiledStartBody = z.strictObject({
  input_dir: z.string().max(PATH_FIELD_MAX).optional().describe('folder with the lights (else input.input_dir of the configuration)'),
  runs_dir: z.string().max(PATH_FIELD_MAX).optional(),
  run_name: z.string().max(128).optional(),
  config_yaml: z.string().max(YAML_LIMIT).optional().describe('a tiled-workflow YAML'),
  config: z.record(z.string(), z.unknown()).optional().describe('the tiled blocks as JSON (instead of config_yaml)'),
});
export type TiledStart = z.output<typeof TiledStartBody>;

/** The tiled settings' path fields, taken back from the confined Raw Stack configuration. */
export function syncPaths(c: TiledRunConfig): void {
  const { tiled: t, raw: r } = c;
  t.input.input_dir = r.lights_dir;
  Object.assign(t.calibration, { bias_dir: r.bias_dir, darks_dir: r.darks_dir, flats_dir: r.flats_dir, darkflats_dir: r.darkflats_dir });
  for (const k of ['bias_master', 'dark_master', 'flat_master', 'darkflat_master'] as const) t.calibration[k] = r.calibration[k];
  t.pcc.catalog_file = r.pcc.catalog_file;
  for (const k of ['astrometry_net_bin', 'astrometry_net_data_dir', 'astap_bin', 'astap_data_dir'] as const) t.astrometry[k] = r.astrometry[k];
}

export async function startTiled(app: AppContext, body: TiledStart, requestLabel: Record<string, unknown>): Promise<{ job: JobRecord; warnings: string[] }> {
  if (body.config_yaml !== undefined && body.config !== undefined) throw new ApiError('VALIDATION_ERROR', 'give config_yaml or config, not both', { issues: [{ path: 'config', code: 'exclusive', message: 'config_yaml and config exclude each other' }] });
  let document: Record<string, unknown> = {};
  const warnings: string[] = [];
  if (body.config_yaml !== undefined) {
    const v = validateTiledYaml(body.config_yaml);
    if (!v.ok) throw new ApiError('VALIDATION_ERROR', `invalid tiled YAML: ${v.errors.slice(0, 5).map((e) => `${e.path || '(root)'} (line ${e.line ?? '?'}): ${e.message}`).join('; ')}`, { issues: v.errors });
    for (const w of v.warnings) warnings.push(`${w.path || '(root)'} (line ${w.line ?? '?'}): ${w.message}`);
    document = v.config ?? {};
  } else if (body.config !== undefined) document = body.config;
  const overrides: Record<string, unknown> = {};
  if (body.input_dir !== undefined) overrides['input.input_dir'] = body.input_dir;
  if (body.run_name !== undefined) overrides['output.run_name'] = body.run_name;
  const r = resolveTiledConfig(document, overrides);
  if (!r.ok) throw invalidConfiguration(r.issues);
  const config = r.config;
  if (config.raw.lights_dir === '') throw new ApiError('VALIDATION_ERROR', 'input_dir is required', { issues: [{ path: 'input_dir', code: 'required', message: 'the folder with the lights' }] });
  await confineConfigPaths(app.guard, config.raw, 'start');
  syncPaths(config);
  const runsText = body.runs_dir ?? (config.tiled.output.runs_dir || app.runsDir);
  const runsDir = await app.guard.resolve(runsText, { field: 'runs_dir', mustExist: false });
  await mkdir(runsDir, { recursive: true });
  config.tiled.output.runs_dir = runsDir;
  config.raw.runs_dir = runsDir;
  const folder = await createRunFolder(runsDir, config.tiled.output.run_name, undefined, 'tiled');
  const jobId = newJobId();
  await writeRunRecord(folder, { run_id: folder.runId, kind: 'tiled', created_at: new Date().toISOString(), status: 'pending', input: { input_dir: config.tiled.input.input_dir, pattern: config.tiled.input.pattern }, job_id: jobId });
  const job = await app.jobs.submit(
    'tiled',
    { ...requestLabel, input_dir: config.tiled.input.input_dir, run_name: config.tiled.output.run_name, runs_dir: runsDir, ...(warnings.length ? { config_warnings: warnings } : {}) },
    { kind: 'tiled', job_id: jobId, tiled: config.tiled as unknown as Record<string, unknown>, raw: config.raw as unknown as Record<string, unknown>, run_id: folder.runId, run_dir: folder.runDir, confine: app.guard.confinement() },
    { run_id: folder.runId, run_dir: folder.runDir },
    jobId,
  );
  return { job, warnings };
}
