// What a pipeline phase is: an object with prepare / run / finalize (finalize always runs),
// declared memory needs, and a typed outcome. Failures and skips are data with a reason code
// from a closed union, never bare strings, so reports, the API and tests can branch on them.

import type { EventLog, PhasePlanEntry } from './events.js';

export type ReasonCode =
  // skips
  | 'not_configured' // nothing to do (e.g. no calibration source)
  | 'disabled' // switched off in the configuration
  | 'quality_mode_off' // FRAME_FILTERING with quality_filter.mode = off
  | 'no_rgb_stack' // postprocess phases on mono data
  | 'no_wcs' // PCC without a solved WCS
  | 'no_catalog_stars' // PCC without a catalogue or without catalogue stars on the image
  | 'solver_missing' // ASTROMETRY without a solver binary or data
  | 'pcc_failed' // HMS with require_successful_pcc after a failed PCC
  | 'not_available' // phase not implemented in this build yet
  | 'prerequisite_failed' // an earlier optional phase this one needs ended in error
  // errors
  | 'cancelled'
  | 'no_frames' // nothing left to process
  | 'pattern_mismatch' // INPUT_SCAN: the file pattern matches nothing, but the folder holds FITS files it does not take
  | 'input_error' // missing folder, unreadable or mismatched inputs
  | 'calibration_error'
  | 'registration_error'
  | 'stacking_error'
  | 'device_error' // GPU device lost or unusable
  | 'budget_error' // memory budget too small for the smallest band
  | 'solver_failed'
  | 'fit_failed' // a model fit rejected by its guards (PCC: too few stars, residual, condition number)
  | 'exception'; // an unexpected failure (a bug); message carries the detail

export type PhaseOutcome =
  | { status: 'ok'; details?: Record<string, unknown> }
  | { status: 'skipped'; reason: ReasonCode; message?: string; details?: Record<string, unknown> }
  | { status: 'error'; reason: ReasonCode; message: string; details?: Record<string, unknown> };

export const ok = (details?: Record<string, unknown>): PhaseOutcome => (details ? { status: 'ok', details } : { status: 'ok' });
export const skipped = (reason: ReasonCode, message?: string, details?: Record<string, unknown>): PhaseOutcome => ({
  status: 'skipped',
  reason,
  ...(message !== undefined ? { message } : {}),
  ...(details ? { details } : {}),
});
export const failed = (reason: ReasonCode, message: string, details?: Record<string, unknown>): PhaseOutcome => ({
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

export interface Phase<S> {
  readonly name: string;
  /** Optional (postprocess) phases: an error does not stop the run (DESIGN §5). */
  readonly optional: boolean;
  /** Memory this phase needs at most, for the budget check and the report. */
  memory?(ctx: PhaseContext<S>): MemoryNeeds;
  /** Checks prerequisites; returning an outcome (skipped or error) ends the phase without run(). */
  prepare?(ctx: PhaseContext<S>): Promise<PhaseOutcome | void>;
  run(ctx: PhaseContext<S>): Promise<PhaseOutcome>;
  /** Always runs after prepare/run, also after an error or cancellation (release buffers, close files). */
  finalize?(ctx: PhaseContext<S>, outcome: PhaseOutcome): Promise<void>;
}
