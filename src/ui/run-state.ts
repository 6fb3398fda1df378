// The monitor's model of one Raw Stack run, built only from events.jsonl lines (DESIGN §5 event
// line) so the inline and the full monitor agree: every phase starts `pending`, becomes
// `running` at phase_start and takes the seed's final status (ok | skipped | error) at
// phase_end. Lines are applied once, by `seq`, so a replayed SSE stream or an overlapping poll
// never double-counts.

/** Seed "Raw Stack processing path": a copy of src/pipeline/rawstack/phase-list.ts (the browser build
 * cannot import it; test/ui/model.test.ts checks they agree). Phases the events add are appended. */
export const RAWSTACK_PHASES = [
  'INPUT_SCAN',
  'CALIBRATION',
  'CFA_CHANNEL_PREP',
  'REFERENCE_SELECTION',
  'REGISTRATION',
  'QUALITY_ANALYSIS',
  'FRAME_FILTERING',
  'STACKING',
  'ASTROMETRY',
  'BGE',
  'PCC',
  'HYPERMETRIC_STRETCH',
  'REPORT',
] as const;

export type PhaseStatus = 'pending' | 'running' | 'ok' | 'skipped' | 'error';
export const FINAL_PHASE_STATUSES: ReadonlySet<PhaseStatus> = new Set(['ok', 'skipped', 'error']);

export interface PhaseView {
  name: string;
  status: PhaseStatus;
  reason?: string;
  message?: string;
  /** 0..1 while running (from phase_progress), 1 when final. */
  progress: number;
  current?: number;
  total?: number;
  substep?: string;
  duration_ms?: number;
}

export interface EventLine {
  seq: number;
  ts?: string;
  type: string;
  [k: string]: unknown;
}

export class RunState {
  readonly phases = new Map<string, PhaseView>();
  /** All lines applied, in seq order. */
  readonly events: EventLine[] = [];
  runStatus: string | null = null;
  runId: string | null = null;
  lastSeq = 0;

  constructor() {
    for (const name of RAWSTACK_PHASES) this.phases.set(name, { name, status: 'pending', progress: 0 });
  }

  /** Applies a line; returns false when it was already applied (seq not newer). */
  apply(line: EventLine): boolean {
    if (typeof line.seq !== 'number' || line.seq <= this.lastSeq) return false;
    this.lastSeq = line.seq;
    this.events.push(line);
    if (typeof line.run_id === 'string') this.runId = line.run_id;
    const phaseName = typeof line.phase === 'string' ? line.phase : null;
    const phase = phaseName ? this.phase(phaseName) : null;
    switch (line.type) {
      case 'phase_start':
        if (phase) {
          phase.status = 'running';
          phase.progress = 0;
        }
        break;
      case 'phase_progress':
        if (phase && phase.status === 'running') {
          if (typeof line.progress === 'number') phase.progress = Math.max(0, Math.min(1, line.progress));
          if (typeof line.current === 'number') phase.current = line.current;
          if (typeof line.total === 'number') phase.total = line.total;
          if (typeof line.substep === 'string') phase.substep = line.substep;
        }
        break;
      case 'phase_end':
        if (phase) {
          const s = line.status;
          phase.status = s === 'ok' || s === 'skipped' || s === 'error' ? s : 'error';
          phase.progress = 1;
          if (typeof line.reason === 'string') phase.reason = line.reason;
          if (typeof line.message === 'string') phase.message = line.message;
          if (typeof line.duration_ms === 'number') phase.duration_ms = line.duration_ms;
        }
        break;
      case 'run_end':
        this.runStatus = typeof line.status === 'string' ? line.status : 'error';
        break;
      default:
        break;
    }
    return true;
  }

  get finished(): boolean {
    return this.runStatus !== null;
  }

  private phase(name: string): PhaseView {
    let p = this.phases.get(name);
    if (!p) {
      p = { name, status: 'pending', progress: 0 };
      this.phases.set(name, p);
    }
    return p;
  }
}

/** Optional phases whose missing result a user must see beside a green "Run ok". */
const OPTIONAL_PHASES = ['ASTROMETRY', 'BGE', 'PCC', 'HYPERMETRIC_STRETCH'];

/**
 * Why optional results are missing: each optional phase that ended skipped (not switched off)
 * or in error, with its reason and message. HMS skipped for a failed PCC carries the switch that
 * changes it in its message (hypermetric_stretch.require_successful_pcc).
 */
export function runNotes(state: RunState): { phase: string; status: string; text: string }[] {
  const out: { phase: string; status: string; text: string }[] = [];
  for (const name of OPTIONAL_PHASES) {
    const p = state.phases.get(name);
    if (!p || (p.status !== 'skipped' && p.status !== 'error') || p.reason === 'disabled') continue;
    out.push({ phase: name, status: p.status, text: `${name} ${p.status}${p.reason ? ` (${p.reason})` : ''}${p.message ? `: ${p.message}` : ''}` });
  }
  return out;
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
    case 'run_end':
      return `run ${String(e.status)}${Array.isArray(e.failed_phases) && e.failed_phases.length ? ` (failed: ${e.failed_phases.join(', ')})` : ''}`;
    default:
      return `${e.type}${phase ? ` ${phase}` : ''}`;
  }
}

/** Parses events.jsonl text; a torn last line (still being written) is left out. */
export function parseJsonl(text: string): EventLine[] {
  const out: EventLine[] = [];
  for (const raw of text.split('\n')) {
    const line = raw.trim();
    if (!line) continue;
    try {
      const v = JSON.parse(line) as EventLine;
      if (v && typeof v === 'object') out.push(v);
    } catch {
      // partial line at the end of a file being appended to
    }
  }
  return out;
}
