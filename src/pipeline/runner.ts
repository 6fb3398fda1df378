// The phase runner: runs a pipeline's phases in order with the error semantics every pipeline
// shares (docs/ARCHITECTURE.md "Phases and the runner"). Generic: it knows no phase by name.
// - Every phase that begins gets exactly one phase_start and one phase_end (skips included).
// - A core phase ending in error stops every later phase except the always-run one (a report).
// - An optional phase ending in error does not stop the run; later phases see its outcome.
// - Cancellation ends the current phase as error/cancelled, starts nothing else but the
//   always-run phase (which gets a fresh, unaborted signal), and closes with run_end {status: "cancelled"}.
// - finalize() always runs; its own failure turns an ok phase into an error.
// - phase_end carries duration_ms and peak_rss_mib (rss-sampler.ts) of the phase.

import type { EventLog, PhasePlanEntry, PhaseStatus, RunStatus } from './events.js';
import { CancelledError, type Phase, type PhaseContext, type PhaseOutcome } from './phase.js';
import { startRssSampler } from './rss-sampler.js';

export interface RunOptions<S> {
  state: S;
  events: EventLog;
  signal: AbortSignal;
  /** Phase that runs even after errors and cancellation (null: none). */
  alwaysRun: string | null;
  /** Minimum milliseconds between two phase_progress events of a phase. */
  progressIntervalMs?: number;
  /**
   * Runs after each phase's finalize, before its phase_end (e.g. releasing pooled device memory
   * the next phase will not reuse, so a phase's peak does not carry the previous one's buffers).
   * A failure is a warning, never a phase error.
   */
  afterPhase?: (phase: string) => void | Promise<void>;
  /** Outcomes of phases that ran before these (a resume's earlier phases); later phases read them. */
  priorOutcomes?: ReadonlyMap<string, PhaseOutcome>;
  /** The plan phases see in their context (default: `phases`; a resume passes the whole plan). */
  plan?: readonly Pick<Phase<unknown>, 'name' | 'optional'>[];
}

export interface RunResult {
  status: RunStatus;
  outcomes: Map<string, PhaseOutcome>;
  failedPhases: string[];
  durationMs: number;
}

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The plan of a phase list: names and optional flags in run order (what run_start carries). */
export function phasePlan(phases: readonly Pick<Phase<unknown>, 'name' | 'optional'>[]): PhasePlanEntry[] {
  return phases.map((p) => ({ name: p.name, optional: p.optional }));
}

export async function runPhases<S>(phases: Phase<S>[], options: RunOptions<S>): Promise<RunResult> {
  const { state, events, signal } = options;
  const alwaysRun = options.alwaysRun;
  const interval = options.progressIntervalMs ?? 250;
  const outcomes = new Map<string, PhaseOutcome>(options.priorOutcomes ?? []);
  const failedPhases: string[] = [];
  const started = performance.now();
  let coreFailed = false;
  let cancelled = false;
  const plan = phasePlan(options.plan ?? phases);

  for (const phase of phases) {
    const isAlways = phase.name === alwaysRun;
    if ((coreFailed || cancelled || signal.aborted) && !isAlways) {
      if (signal.aborted) cancelled = true;
      continue;
    }
    // REPORT after a cancellation must still be able to finish its work.
    const phaseSignal = isAlways ? new AbortController().signal : signal;
    let lastProgress = -Infinity;
    const ctx: PhaseContext<S> = {
      phase: phase.name,
      plan,
      state,
      signal: phaseSignal,
      events,
      outcomes,
      progress(current, total, substep) {
        const now = performance.now();
        if (current < total && now - lastProgress < interval) return;
        lastProgress = now;
        const body = { type: 'phase_progress' as const, phase: phase.name, current, total, progress: total > 0 ? Math.min(1, current / total) : 1 };
        events.emit(substep === undefined ? body : { ...body, substep });
      },
      frame(index, file, outcome, code, metrics) {
        events.emit({ type: 'frame', phase: phase.name, index, file, outcome, ...(code ? { code } : {}), ...(metrics ? { metrics } : {}) });
      },
      warn(code, message) {
        events.emit({ type: 'warning', code, message, phase: phase.name });
      },
      checkCancelled() {
        if (phaseSignal.aborted) throw new CancelledError();
      },
    };

    events.emit({ type: 'phase_start', phase: phase.name });
    const t0 = performance.now();
    const rss = startRssSampler();
    let outcome: PhaseOutcome;
    try {
      const early = phase.prepare ? await phase.prepare(ctx) : undefined;
      outcome = early ?? (await phase.run(ctx));
      if (phaseSignal.aborted && outcome.status === 'ok') outcome = { status: 'error', reason: 'cancelled', message: 'run cancelled' };
    } catch (e) {
      outcome =
        e instanceof CancelledError || phaseSignal.aborted
          ? { status: 'error', reason: 'cancelled', message: 'run cancelled' }
          : { status: 'error', reason: 'exception', message: describe(e) };
    }
    if (phase.finalize) {
      try {
        await phase.finalize(ctx, outcome);
      } catch (e) {
        if (outcome.status === 'ok') outcome = { status: 'error', reason: 'exception', message: `finalize failed: ${describe(e)}` };
        else ctx.warn('finalize_failed', `${phase.name} finalize failed: ${describe(e)}`);
      }
    }
    if (options.afterPhase) {
      try {
        await options.afterPhase(phase.name);
      } catch (e) {
        ctx.warn('after_phase_failed', `cleanup after ${phase.name} failed: ${describe(e)}`);
      }
    }
    outcomes.set(phase.name, outcome);
    const status: PhaseStatus = outcome.status;
    events.emit({
      type: 'phase_end',
      phase: phase.name,
      status,
      ...(outcome.status !== 'ok' ? { reason: outcome.reason } : {}),
      ...(outcome.status !== 'ok' && outcome.message !== undefined ? { message: outcome.message } : {}),
      duration_ms: Math.round(performance.now() - t0),
      peak_rss_mib: rss.stop(),
      ...(outcome.details ?? {}),
    });
    if (outcome.status === 'error') {
      failedPhases.push(phase.name);
      if (outcome.reason === 'cancelled') cancelled = true;
      else if (!phase.optional) coreFailed = true;
    }
  }
  const status: RunStatus = cancelled ? 'cancelled' : coreFailed || (alwaysRun !== null && outcomes.get(alwaysRun)?.status === 'error') ? 'error' : 'ok';
  const durationMs = Math.round(performance.now() - started);
  events.emit({ type: 'run_end', status, duration_ms: durationMs, failed_phases: failedPhases });
  return { status, outcomes, failedPhases, durationMs };
}
