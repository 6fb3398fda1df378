// The monitor's model of one run, built only from its event lines so the inline and the full
// monitor agree: the phase statuses and progress are the shared fold (src/shared/run-progress.ts,
// the same the server and the CLI use), with the phase plan from run_start. Lines are applied
// once, by `seq`, so a replayed SSE stream or an overlapping poll never double-counts.

import { parseEventLines, type PhasePlanEntry } from '../shared/events.js';
import { RunProgress, type PhaseView } from '../shared/run-progress.js';

export { FINAL_PHASE_STATUSES, type PhaseView, type PhaseViewStatus as PhaseStatus } from '../shared/run-progress.js';

export interface EventLine {
  seq: number;
  ts?: string;
  type: string;
  [k: string]: unknown;
}

export class RunState {
  /** All lines applied, in seq order. */
  readonly events: EventLine[] = [];
  lastSeq = 0;
  private readonly run: RunProgress;

  /** `plan`: the phases to show before run_start names them (the pipeline's plan from /api/system/info). */
  constructor(plan: readonly PhasePlanEntry[] = []) {
    this.run = new RunProgress(plan);
  }

  /** Phases in plan order (empty until run_start names the plan). */
  get phases(): Map<string, PhaseView> {
    return this.run.phases;
  }

  /** The run's final status (run_end), null while it runs. */
  get runStatus(): string | null {
    return this.run.finished ? this.run.runStatus : null;
  }

  get runId(): string | null {
    return this.run.runId;
  }

  /** The pipeline kind run_start names (`rawstack`, `tiled`), null before it. */
  get kind(): string | null {
    return this.run.kind;
  }

  /** Applies a line; returns false when it was already applied (seq not newer). */
  apply(line: EventLine): boolean {
    if (typeof line.seq !== 'number' || line.seq <= this.lastSeq) return false;
    this.lastSeq = line.seq;
    this.events.push(line);
    this.run.apply(line);
    return true;
  }

  get finished(): boolean {
    return this.run.finished;
  }
}

/**
 * Why optional results are missing: each optional phase (from the plan) that ended skipped (not
 * switched off) or in error, with its reason and message. HMS skipped for a failed PCC carries the
 * switch that changes it in its message (hypermetric_stretch.require_successful_pcc).
 */
export function runNotes(state: RunState): { phase: string; status: string; text: string }[] {
  const out: { phase: string; status: string; text: string }[] = [];
  for (const p of state.phases.values()) {
    if (!p.optional || (p.status !== 'skipped' && p.status !== 'error') || p.reason === 'disabled') continue;
    out.push({ phase: p.name, status: p.status, text: `${p.name} ${p.status}${p.reason ? ` (${p.reason})` : ''}${p.message ? `: ${p.message}` : ''}` });
  }
  return out;
}

/** The required phase that ended in error (the one that failed the run), null when none did. */
export function failedPhase(state: RunState): PhaseView | null {
  for (const p of state.phases.values()) if (!p.optional && p.status === 'error') return p;
  return null;
}

/** One readable line for the log. */
export function describeEvent(e: EventLine): string {
  const phase = typeof e.phase === 'string' ? e.phase : '';
  switch (e.type) {
    case 'run_start':
      return `run started${typeof e.device === 'string' ? ` on ${e.device}${typeof e.adapter === 'string' && e.adapter ? ` (${e.adapter})` : ''}` : ''}`;
    case 'phase_start':
      return `${phase} started`;
    case 'phase_progress':
      return `${phase} ${String(e.current ?? '')}/${String(e.total ?? '')}${typeof e.substep === 'string' ? ` ${e.substep}` : ''}`;
    case 'phase_end': {
      const why = [e.reason, e.message].filter((x) => typeof x === 'string' && x).join(': ');
      const secs = typeof e.duration_ms === 'number' ? ` in ${(e.duration_ms / 1000).toFixed(2)} s` : '';
      return `${phase} ${String(e.status)}${why ? ` (${why})` : ''}${secs}`;
    }
    case 'frame':
      return `${phase} frame ${String(e.index)} ${String(e.file ?? '')}: ${String(e.outcome ?? '')}${typeof e.code === 'string' ? ` (${e.code})` : ''}`;
    case 'warning':
      return `warning ${String(e.code ?? '')}: ${String(e.message ?? '')}`;
    case 'resume_start':
      return `resume from ${String(e.from_phase ?? '?')}${typeof e.config_revision_id === 'string' ? ` with ${e.config_revision_id}` : ''}`;
    case 'resume_end':
      return `resume ${String(e.status)}`;
    case 'run_end':
      return `run ${String(e.status)}${Array.isArray(e.failed_phases) && e.failed_phases.length ? ` (failed: ${e.failed_phases.join(', ')})` : ''}`;
    default:
      return `${e.type}${phase ? ` ${phase}` : ''}`;
  }
}

/** Parses event-log text; a torn last line (still being written) is left out. */
export const parseJsonl = (text: string): EventLine[] => parseEventLines(text) as unknown as EventLine[];
