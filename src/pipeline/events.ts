// The event log writer: one JSON object per line (schema: src/shared/events.ts) with a running
// `seq`, an ISO UTC millisecond timestamp, the event type and the run id. Lines are written
// synchronously in order, so a follower (SSE, the monitor) never sees a partial or reordered
// line, and a crash loses at most the event being written. The file is opened for appending:
// a resumed run continues the log (and its seq) of the run it resumes, never truncating it.

import { closeSync, openSync, writeSync } from 'node:fs';
import type { EventBody, EventLine } from '../shared/events.js';

export type { EventBody, EventLine, PhasePlanEntry, PhaseStatus, RunStatus } from '../shared/events.js';

export class EventLog {
  private fd: number | null;
  private seq = 0;
  /** Every line written, for tests and the report (bounded by the run's event count). */
  readonly lines: EventLine[] = [];

  constructor(
    readonly file: string,
    readonly runId: string,
    private readonly listener?: (line: EventLine) => void,
    /** The last seq already in the file (a resume appends after it). */
    startSeq = 0,
  ) {
    this.seq = startSeq;
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
