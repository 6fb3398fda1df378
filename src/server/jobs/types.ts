// Job records and job specs (docs/ARCHITECTURE.md "Processes"). A record is what the API shows and what survives a
// restart; a spec is what the child process needs to do the work (written next to the
// record before the child starts, handed over by file name, never through a shell).

import type { ReadConfinement } from '../../pipeline/stages/scan/confine.js';

export type JobKind = 'run' | 'resume' | 'rawstack' | 'tiled' | 'scan' | 'pcc_run' | 'pcc_apply';
export type JobState = 'pending' | 'running' | 'cancelling' | 'ok' | 'error' | 'cancelled';
export const TERMINAL_STATES: ReadonlySet<JobState> = new Set(['ok', 'error', 'cancelled']);

export type JobErrorCode =
  | 'INTERRUPTED' // the server stopped while the job ran
  | 'RUN_FAILED' // the pipeline ended with status error
  | 'JOB_FAILED' // a non-pipeline job (PCC) reported failure
  | 'CHILD_CRASHED' // the child exited without a result (native crash, killed)
  | 'SPAWN_FAILED'; // the child could not be started

export interface JobRecord {
  job_id: string;
  kind: JobKind;
  state: JobState;
  created_at: string;
  started_at: string | null;
  ended_at: string | null;
  run_id: string | null;
  run_dir: string | null;
  progress: { phase: string | null; fraction: number };
  error: { code: JobErrorCode; message: string } | null;
  exit_code: number | null;
  /** Process id of the job's child while it runs (null before and after). */
  pid?: number | null;
  request: Record<string, unknown>;
  /** Result details reported by the child (outputs, diagnostics paths). */
  result?: Record<string, unknown> | null;
}

export type JobSpec =
  | { kind: 'rawstack'; job_id: string; config: Record<string, unknown>; run_id: string; run_dir: string; confine?: ReadConfinement }
  /** A tiled run: its resolved settings and the Raw Stack keys derived from them (config/tiled-run.ts). */
  | { kind: 'tiled'; job_id: string; tiled: Record<string, unknown>; raw: Record<string, unknown>; run_id: string; run_dir: string; confine?: ReadConfinement }
  /** A resume of a tiled run from a phase; tiled/raw absent: the run's own config.yaml. */
  | { kind: 'resume'; job_id: string; run_id: string; run_dir: string; from_phase: string; tiled?: Record<string, unknown>; raw?: Record<string, unknown>; confine?: ReadConfinement }
  | { kind: 'pcc_run'; input: string; output: string; catalog_file: string; diagnostics_file: string; config?: Record<string, unknown> }
  | { kind: 'pcc_apply'; input: string; output: string; matrix: number[][] };

/** Messages from the child over IPC. */
export type ChildMessage =
  | { type: 'started'; pid: number }
  | { type: 'progress'; phase: string | null; fraction: number; persist: boolean }
  | { type: 'result'; status: 'ok' | 'error' | 'cancelled'; message?: string; details?: Record<string, unknown> };
