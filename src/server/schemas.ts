// Response shapes of the main records, as zod schemas, for the OpenAPI document (the
// handlers build these objects; the schemas describe them for clients such as the UI).

import { z } from 'zod';

export const JobRecordSchema = z.object({
  job_id: z.string(),
  kind: z.enum(['run', 'resume', 'rawstack', 'tiled', 'scan', 'pcc_run', 'pcc_apply']),
  state: z.enum(['pending', 'running', 'cancelling', 'ok', 'error', 'cancelled']),
  created_at: z.string(),
  started_at: z.string().nullable(),
  ended_at: z.string().nullable(),
  run_id: z.string().nullable(),
  run_dir: z.string().nullable(),
  progress: z.object({ phase: z.string().nullable(), fraction: z.number().min(0).max(1) }),
  error: z.object({ code: z.enum(['INTERRUPTED', 'RUN_FAILED', 'JOB_FAILED', 'CHILD_CRASHED', 'SPAWN_FAILED']), message: z.string() }).nullable(),
  exit_code: z.number().int().nullable(),
  pid: z.number().int().nullable().optional(),
  request: z.record(z.string(), z.unknown()),
  result: z.record(z.string(), z.unknown()).nullable().optional(),
});

export const AcceptedSchema = z.object({ job_id: z.string(), run_id: z.string().optional(), run_dir: z.string().optional(), state: z.string(), warnings: z.array(z.string()).optional().describe('tiled: unknown YAML keys that were ignored') });

export const JobListSchema = z.object({ items: z.array(JobRecordSchema), total: z.number().int(), limit: z.number().int(), offset: z.number().int() });

export const PhaseViewSchema = z.object({
  phase: z.string(),
  status: z.enum(['pending', 'running', 'ok', 'skipped', 'error', 'cancelled']),
  optional: z.boolean().optional().describe('an optional phase: its error does not stop the run'),
  progress: z.number(),
  reason: z.string().optional(),
  message: z.string().optional(),
  duration_ms: z.number().optional(),
});

export const PreprocessingStatusSchema = z.object({
  job_id: z.string(),
  state: JobRecordSchema.shape.state,
  error: JobRecordSchema.shape.error,
  run_id: z.string().nullable(),
  run_dir: z.string().nullable(),
  run_status: z.enum(['pending', 'running', 'ok', 'error', 'cancelled']),
  progress: z.number(),
  current_phase: z.string().nullable(),
  phases: z.array(PhaseViewSchema),
  events: z.array(z.record(z.string(), z.unknown())),
});

export const ParametersSchema = z.object({ config: z.record(z.string(), z.unknown()), source: z.enum(['stored', 'defaults']), updated_at: z.string().nullable() });
