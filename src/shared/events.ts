// The event line schema every pipeline writes to its run's event log (one JSON object per line,
// docs/ARCHITECTURE.md "Events"): `{seq, ts, run_id, type, ...}`. Types only, shared by the
// writer (src/pipeline/events.ts), the server, the CLI, the job child and the browser.
// `run_start` carries the run's phase plan, so every reader knows the phases, their order and
// which are optional without a copy of any pipeline's definition.

export type PhaseStatus = 'ok' | 'skipped' | 'error';
export type RunStatus = 'ok' | 'error' | 'cancelled';

/** One phase of a run's plan, in run order. Optional phases' errors do not stop the run. */
export interface PhasePlanEntry {
  name: string;
  optional: boolean;
}

export type EventBody =
  | { type: 'run_start'; kind: string; run_dir: string; phases?: PhasePlanEntry[]; input?: Record<string, unknown>; [k: string]: unknown }
  | { type: 'phase_start'; phase: string; [k: string]: unknown }
  | { type: 'phase_progress'; phase: string; current: number; total: number; progress: number; substep?: string }
  | { type: 'phase_end'; phase: string; status: PhaseStatus; reason?: string; duration_ms: number; [k: string]: unknown }
  | { type: 'frame'; phase: string; index: number; file: string; outcome: string; code?: string; metrics?: Record<string, unknown> }
  | { type: 'warning'; code: string; message: string; phase?: string }
  | { type: 'run_end'; status: RunStatus; duration_ms: number; failed_phases: string[] }
  // A resume appends to the run's log: resume_start, then run_start … run_end of the phases it re-runs, then resume_end.
  | { type: 'resume_start'; from_phase: string; config_revision_id: string | null; [k: string]: unknown }
  | { type: 'resume_end'; status: RunStatus; from_phase: string };

export type EventLine = EventBody & { seq: number; ts: string; run_id: string };

/** Parses event-log text; a torn last line (still being written) and lines that are not objects are left out. */
export function parseEventLines(text: string): EventLine[] {
  const out: EventLine[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    try {
      const v = JSON.parse(line) as EventLine;
      if (v && typeof v === 'object' && !Array.isArray(v)) out.push(v);
    } catch {
      // partial line at the end of a file being appended to
    }
  }
  return out;
}
