// Where a run's event log ends, for every reader that follows one (the server's event stream, the
// browser's followers). A log is one session (run_start … run_end) or that session followed by
// resume sessions appended to the same file (resume_start, run_start … run_end, resume_end): a
// run_end inside a resume does not end the log, its resume_end does. A resume_start after an end
// opens the log again, so a reader that saw the first session's run_end in one batch and a
// resume_start in the next keeps following.
// Readers feed every line in order and ask `ended` after a whole batch (a file read, a poll), not
// after each line: a finished log replayed in one batch ends at its last session's end.

/** The one field the rule reads; the browser's lines type it as a plain string. */
interface Typed {
  type: string;
}

export class LogEnd {
  private resuming = false;
  private done = false;

  /** Feeds one line (in seq order). */
  see(line: Typed): void {
    if (line.type === 'resume_start') {
      this.resuming = true;
      this.done = false;
    } else if (line.type === 'run_end') {
      if (!this.resuming) this.done = true;
    } else if (line.type === 'resume_end') {
      this.resuming = false;
      this.done = true;
    }
  }

  /** Whether the lines seen so far end the log (no session is open). */
  get ended(): boolean {
    return this.done;
  }
}

/** Whether a complete list of lines ends the log (see LogEnd). */
export function logEnded(lines: readonly Typed[]): boolean {
  const end = new LogEnd();
  for (const l of lines) end.see(l);
  return end.ended;
}
