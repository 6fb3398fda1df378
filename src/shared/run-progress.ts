// Events → phase statuses and run progress: the one fold every reader of a run's events uses
// (the server's run and job views, the CLI's progress bar, the job child's progress messages,
// the web UI's monitors), so they cannot disagree. The phases come from the plan run_start
// carries (or one the reader passes for runs written before it did); a phase the events name
// but the plan does not is appended. Every phase starts `pending`, becomes `running` at
// phase_start and takes its final status (ok | skipped | error) at phase_end; a phase that ended
// because the run was cancelled (phase_end error, reason `cancelled`) reads `cancelled`, since a
// user who pressed Cancel must not see it as a failure. A cancel can also land between two phases
// (while one finishes, after its outcome is settled): the runner then ends that phase as it
// ended and starts no other, so no phase ends `cancelled`; at a cancelled run_end the first phase
// still pending is the one the cancel stopped and reads `cancelled` (reason `cancelled`), the
// ones after it stay pending (never run).
// A resume_start (a resumed run appends to the log) sets the phases from its from_phase on back
// to pending and the run to running.
// Progress: (phases ended + the running phase's fraction) / phases in the plan; 1 once the run
// has ended.

import type { EventLine, PhasePlanEntry, RunStatus } from './events.js';

export type PhaseViewStatus = 'pending' | 'running' | 'ok' | 'skipped' | 'error' | 'cancelled';

export interface PhaseView {
  name: string;
  status: PhaseViewStatus;
  /** From the plan; false for a phase the plan does not name. */
  optional: boolean;
  reason?: string;
  message?: string;
  /** 0..1 while running (from phase_progress), 1 when final. */
  progress: number;
  current?: number;
  total?: number;
  substep?: string;
  duration_ms?: number;
}

export const FINAL_PHASE_STATUSES: ReadonlySet<PhaseViewStatus> = new Set(['ok', 'skipped', 'error', 'cancelled']);

/** The phase plan of a run: run_start's `phases`, or null when no run_start carries one. */
export function planOf(lines: readonly EventLine[]): PhasePlanEntry[] | null {
  for (const l of lines) if (l.type === 'run_start' && Array.isArray(l.phases)) return l.phases.filter((p) => p && typeof p.name === 'string').map((p) => ({ name: p.name, optional: p.optional === true }));
  return null;
}

export class RunProgress {
  readonly phases = new Map<string, PhaseView>();
  runStatus: RunStatus | 'running' | 'pending' = 'pending';
  kind: string | null = null;
  runId: string | null = null;
  /** Whether the phases come from a plan (run_start or the constructor), not from the events alone. */
  private planned = false;

  constructor(plan: readonly PhasePlanEntry[] = []) {
    this.setPlan(plan);
  }

  /** Adds the plan's phases that are not known yet, in plan order before any the events added. */
  private setPlan(plan: readonly PhasePlanEntry[]): void {
    if (plan.length === 0) return;
    const added = [...this.phases.values()].filter((p) => !plan.some((e) => e.name === p.name));
    const known = new Map(this.phases);
    this.phases.clear();
    for (const e of plan) this.phases.set(e.name, { ...(known.get(e.name) ?? { name: e.name, status: 'pending', progress: 0 }), optional: e.optional });
    for (const p of added) this.phases.set(p.name, p);
    this.planned = true;
  }

  apply(line: EventLine | { type: string; [k: string]: unknown }): void {
    const l = line as EventLine;
    if (typeof l.run_id === 'string') this.runId = l.run_id;
    switch (l.type) {
      case 'run_start':
        if (this.runStatus === 'pending') this.runStatus = 'running';
        if (typeof l.kind === 'string') this.kind = l.kind;
        if (Array.isArray(l.phases)) this.setPlan(planOf([l]) ?? []);
        break;
      case 'phase_start': {
        const p = this.phase(l.phase);
        if (!p) break;
        p.status = 'running';
        p.progress = 0;
        break;
      }
      case 'phase_progress': {
        const p = this.phase(l.phase);
        if (!p || p.status !== 'running') break;
        if (typeof l.progress === 'number') p.progress = Math.max(0, Math.min(1, l.progress));
        if (typeof l.current === 'number') p.current = l.current;
        if (typeof l.total === 'number') p.total = l.total;
        if (typeof l.substep === 'string') p.substep = l.substep;
        break;
      }
      case 'phase_end': {
        const p = this.phase(l.phase);
        if (!p) break;
        const s = l.status as string;
        p.status = s === 'ok' || s === 'skipped' ? s : l.reason === 'cancelled' ? 'cancelled' : 'error';
        p.progress = 1;
        if (typeof l.reason === 'string') p.reason = l.reason;
        if (typeof l.message === 'string') p.message = l.message;
        if (typeof l.duration_ms === 'number') p.duration_ms = l.duration_ms;
        break;
      }
      case 'resume_start': {
        // A resume re-runs the phases from from_phase on: they are pending again, the earlier
        // ones keep the status they ended with, and the run is running until its next run_end.
        this.runStatus = 'running';
        const from = typeof l.from_phase === 'string' ? l.from_phase : '';
        let reached = false;
        for (const [name, p] of this.phases) {
          if (name === from) reached = true;
          if (reached) this.phases.set(name, { name, status: 'pending', progress: 0, optional: p.optional });
        }
        break;
      }
      case 'run_end':
        this.runStatus = l.status === 'ok' || l.status === 'error' || l.status === 'cancelled' ? l.status : 'error';
        if (this.runStatus === 'cancelled') this.markStoppedPhase();
        break;
      default:
        break;
    }
  }

  get finished(): boolean {
    return this.runStatus === 'ok' || this.runStatus === 'error' || this.runStatus === 'cancelled';
  }

  /** Whether the phases come from a plan rather than only from the phases the events named. */
  get hasPlan(): boolean {
    return this.planned;
  }

  /** The run's progress, 0..1. */
  get fraction(): number {
    if (this.finished) return 1;
    const all = [...this.phases.values()];
    if (all.length === 0) return 0;
    const done = all.filter((p) => FINAL_PHASE_STATUSES.has(p.status)).length;
    const current = all.find((p) => p.status === 'running')?.progress ?? 0;
    return Math.min(1, (done + current) / all.length);
  }

  /** A cancel between phases: the first phase left pending is where the run stopped. */
  private markStoppedPhase(): void {
    const all = [...this.phases.values()];
    if (all.some((p) => p.status === 'cancelled')) return;
    const stopped = all.find((p) => p.status === 'pending');
    if (!stopped) return;
    stopped.status = 'cancelled';
    stopped.reason = 'cancelled';
    stopped.message = 'run cancelled before this phase started';
  }

  private phase(name: unknown): PhaseView | null {
    if (typeof name !== 'string') return null;
    let p = this.phases.get(name);
    if (!p) {
      p = { name, status: 'pending', optional: false, progress: 0 };
      this.phases.set(name, p);
    }
    return p;
  }
}

/** The fold over a whole list of lines (`plan`: for runs whose run_start carries none). */
export function foldEvents(lines: readonly EventLine[], plan: readonly PhasePlanEntry[] = []): RunProgress {
  const run = new RunProgress(plan);
  for (const l of lines) run.apply(l);
  return run;
}
