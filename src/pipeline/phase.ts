// What a pipeline phase is: an object with prepare / run / finalize (finalize always runs),
// declared memory needs, and a typed outcome. Failures and skips are data with a reason code
// from a closed union (the core set here, each pipeline's own on top), never bare strings, so
// reports, the API and tests can branch on them.

import type { EventLog, PhasePlanEntry } from './events.js';

/**
 * Reasons every pipeline shares (and the runner's own: `cancelled`, `exception`). A pipeline
 * closes its own union over these (Raw Stack: rawstack/reasons.ts) and types its phases with it,
 * so each phase can only end with a reason its pipeline declares.
 */
export type CoreReasonCode =
  // skips
  | 'not_configured' // nothing to do (e.g. no calibration source)
  | 'disabled' // switched off in the configuration
  | 'not_available' // phase not implemented in this build yet
  | 'not_needed' // the pipeline's design makes the phase unnecessary for this run
  | 'prerequisite_failed' // an earlier optional phase this one needs ended in error
  // errors
  | 'cancelled'
  | 'no_frames' // nothing left to process
  | 'input_error' // missing folder, unreadable or mismatched inputs
  | 'device_error' // GPU device lost or unusable
  | 'budget_error' // memory budget too small for the smallest band
  | 'exception'; // an unexpected failure (a bug); message carries the detail

/** A phase's end: ok, or skipped / error with a reason from its pipeline's union `R`. */
export type PhaseOutcome<R extends string = string> =
  | { status: 'ok'; details?: Record<string, unknown> }
  | { status: 'skipped'; reason: R; message?: string; details?: Record<string, unknown> }
  | { status: 'error'; reason: R; message: string; details?: Record<string, unknown> };

export const ok = (details?: Record<string, unknown>): PhaseOutcome<never> => (details ? { status: 'ok', details } : { status: 'ok' });
export const skipped = <R extends string>(reason: R, message?: string, details?: Record<string, unknown>): PhaseOutcome<R> => ({
  status: 'skipped',
  reason,
  ...(message !== undefined ? { message } : {}),
  ...(details ? { details } : {}),
});
export const failed = <R extends string>(reason: R, message: string, details?: Record<string, unknown>): PhaseOutcome<R> => ({
  status: 'error',
  reason,
  message,
  ...(details ? { details } : {}),
});

/** Thrown by `checkCancelled()`; the runner turns it into an `error` outcome with reason `cancelled`. */
export class CancelledError extends Error {
  constructor() {
    super('run cancelled');
  }
}

export interface MemoryNeeds {
  hostBytes: number;
  deviceBytes: number;
}

export interface PhaseContext<S> {
  readonly phase: string;
  /** The run's phases in order, with their optional flags (what run_start carries). */
  readonly plan: readonly PhasePlanEntry[];
  /** Run-wide state shared by the phases (frames, config, intermediate results). */
  readonly state: S;
  readonly signal: AbortSignal;
  readonly events: EventLog;
  /** Outcomes of the phases that ended before this one. */
  readonly outcomes: ReadonlyMap<string, PhaseOutcome>;
  /** Emits `phase_progress` (rate-limited; the last step is always emitted). */
  progress(current: number, total: number, substep?: string): void;
  frame(index: number, file: string, outcome: string, code?: string, metrics?: Record<string, unknown>): void;
  warn(code: string, message: string): void;
  /** Throws CancelledError when the run was cancelled; call between frames and bands. */
  checkCancelled(): void;
}

export interface Phase<S, R extends string = string> {
  readonly name: string;
  /** Optional (postprocess) phases: an error does not stop the run (docs/ARCHITECTURE.md "Pipelines, phases and the runner"). */
  readonly optional: boolean;
  /** Memory this phase needs at most, for the budget check and the report. */
  memory?(ctx: PhaseContext<S>): MemoryNeeds;
  /** Checks prerequisites; returning an outcome (skipped or error) ends the phase without run(). */
  prepare?(ctx: PhaseContext<S>): Promise<PhaseOutcome<R> | void>;
  run(ctx: PhaseContext<S>): Promise<PhaseOutcome<R>>;
  /** Always runs after prepare/run, also after an error or cancellation (release buffers, close files). */
  finalize?(ctx: PhaseContext<S>, outcome: PhaseOutcome): Promise<void>;
}
