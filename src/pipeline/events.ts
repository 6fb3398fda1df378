// events.jsonl writer (DESIGN §5 "Event line"): one JSON object per line with a running `seq`,
// an ISO UTC millisecond timestamp, the event type and the run id. Lines are written
// synchronously in order, so a follower (SSE, the monitor) never sees a partial or reordered
// line, and a crash loses at most the event being written.

import { closeSync, openSync, writeSync } from 'node:fs';

export type PhaseStatus = 'ok' | 'skipped' | 'error';
export type RunStatus = 'ok' | 'error' | 'cancelled';

export type EventBody =
  | { type: 'run_start'; kind: string; run_dir: string; [k: string]: unknown }
  | { type: 'phase_start'; phase: string; [k: string]: unknown }
  | { type: 'phase_progress'; phase: string; current: number; total: number; progress: number; substep?: string }
  | { type: 'phase_end'; phase: string; status: PhaseStatus; reason?: string; duration_ms: number; [k: string]: unknown }
  | { type: 'frame'; phase: string; index: number; file: string; outcome: string; code?: string; metrics?: Record<string, unknown> }
  | { type: 'warning'; code: string; message: string; phase?: string }
  | { type: 'run_end'; status: RunStatus; duration_ms: number; failed_phases: string[] };

export type EventLine = EventBody & { seq: number; ts: string; run_id: string };

export class EventLog {
  private fd: number | null;
  private seq = 0;
  /** Every line written, for tests and the report (bounded by the run's event count). */
  readonly lines: EventLine[] = [];

  constructor(
    readonly file: string,
    readonly runId: string,
    private readonly listener?: (line: EventLine) => void,
  ) {
    this.fd = openSync(file, 'a');
  }

  emit(body: EventBody): EventLine {
    const line = { seq: ++this.seq, ts: new Date().toISOString(), run_id: this.runId, ...body } as EventLine;
    if (this.fd === null) throw new Error(`event log ${this.file} is closed`);
    writeSync(this.fd, JSON.stringify(line) + '\n');
    this.lines.push(line);
    this.listener?.(line);
    return line;
  }

  close(): void {
    if (this.fd !== null) {
      closeSync(this.fd);
      this.fd = null;
    }
  }
}
