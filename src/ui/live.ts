// Live events of a job's run for the monitors. Order of sources:
//   1. the job record (GET /api/jobs/:id) until it names its run_id;
//   2. Server-Sent Events from GET /api/runs/:run_id/events (replays events.jsonl, then follows),
//      with the job record watched beside it (a job can end without a run_end line, e.g. when
//      it is cancelled before its child wrote anything);
//   3. if the stream fails or is unavailable, polling: the run's event lines
//      (GET /api/runs/:id/logs) plus the job record, once a second.
// Lines reach the caller once each, in seq order. Where the log ends is shared with the server
// (shared/event-end.ts): a run's log goes on after its first run_end when it was resumed, so the
// follower ends at the stream's `end` event (the server decides it per read of the file) or, when
// polling, once a whole read of the lines ends the log; or when the job is terminal and a last
// read of the lines has been delivered. A resume job's run already holds an ended session when
// the job starts, so its follower ends with the job only.
// followRun follows a run that no job of this server owns (started from the CLI, or by an
// earlier server, possibly resumed since): the same stream or polling of its lines, until the end.

import { api, errText, TERMINAL_JOB_STATES, type JobRecord } from './api.js';
import { LogEnd } from '../shared/event-end.js';
import type { EventLine } from './run-state.js';

export interface FollowCallbacks {
  onLine(line: EventLine): void;
  onJob?(job: JobRecord): void;
  onMode?(mode: 'waiting' | 'sse' | 'polling' | 'done'): void;
  onDone?(job: JobRecord | null): void;
  onError?(message: string): void;
}

export interface Follower {
  stop(): void;
}

export function followJob(jobId: string, cb: FollowCallbacks, opts: { pollMs?: number; forcePolling?: boolean } = {}): Follower {
  const pollMs = opts.pollMs ?? 1000;
  let stopped = false;
  // Set by the caller's stop(): from then on no callback fires (a newer job owns the view).
  let detached = false;
  let lastSeq = 0;
  let source: EventSource | null = null;
  const timers = new Set<number>();
  let job: JobRecord | null = null;
  const end = new LogEnd();
  // A resume job's run log already ends (its first session) before the job appends to it.
  const logEnds = (): boolean => job !== null && job.kind !== 'resume';

  const later = (f: () => void, ms: number): void => {
    const t = window.setTimeout(() => {
      timers.delete(t);
      f();
    }, ms);
    timers.add(t);
  };

  const halt = (): void => {
    stopped = true;
    source?.close();
    source = null;
    for (const t of timers) clearTimeout(t);
    timers.clear();
  };

  const deliver = (line: EventLine): void => {
    if (stopped || typeof line.seq !== 'number' || line.seq <= lastSeq) return;
    lastSeq = line.seq;
    end.see(line);
    cb.onLine(line);
  };

  const finish = (): void => {
    if (stopped) return;
    halt();
    cb.onMode?.('done');
    // The job record turns terminal just after run_end: fetch it until it does, for the caller.
    void (async () => {
      for (let i = 0; i < 10 && (!job || !TERMINAL_JOB_STATES.has(job.state)); i++) {
        if (i > 0) await sleep(300);
        job = await api.job(jobId).catch(() => job);
        if (detached) return;
        if (job) cb.onJob?.(job);
      }
      if (!detached) cb.onDone?.(job);
    })();
  };

  const refreshJob = async (): Promise<JobRecord | null> => {
    try {
      job = await api.job(jobId);
      if (!stopped) cb.onJob?.(job);
    } catch (e) {
      if (!detached) cb.onError?.(errText(e));
    }
    return job;
  };

  /** One read of the run's lines; true when they end the log (see the head comment). */
  const readLines = async (runId: string): Promise<boolean> => {
    try {
      for (const line of await api.logs(runId)) deliver(line as EventLine);
      return end.ended && logEnds();
    } catch (e) {
      if (!detached) cb.onError?.(errText(e));
      return false;
    }
  };

  /** Terminal job: deliver what the run wrote, then end. */
  const closeOut = async (runId: string | null): Promise<void> => {
    if (runId) await readLines(runId);
    finish();
  };

  const poll = async (runId: string | null): Promise<void> => {
    if (stopped) return;
    const j = await refreshJob();
    const rid = runId ?? j?.run_id ?? null;
    if (j && TERMINAL_JOB_STATES.has(j.state)) return closeOut(rid);
    if (rid && (await readLines(rid))) return finish();
    if (!stopped) later(() => void poll(rid), pollMs);
  };

  /** Beside the stream: a job that ends without run_end still ends the follower. */
  const watchJob = (runId: string): void => {
    later(async () => {
      if (stopped) return;
      const j = await refreshJob();
      if (stopped) return;
      // Give the stream a moment to deliver a run_end that is on its way.
      if (j && TERMINAL_JOB_STATES.has(j.state)) later(() => void (stopped ? null : (source?.close(), closeOut(runId))), pollMs);
      else watchJob(runId);
    }, pollMs * 2);
  };

  const startSse = (runId: string): void => {
    if (typeof EventSource === 'undefined' || opts.forcePolling) {
      cb.onMode?.('polling');
      void poll(runId);
      return;
    }
    cb.onMode?.('sse');
    const toPolling = (): void => {
      if (stopped || source !== es) return;
      es.close();
      source = null;
      cb.onMode?.('polling');
      for (const t of timers) clearTimeout(t);
      timers.clear();
      void poll(runId);
    };
    // The stream broke or was refused: poll from here on (seq dedup keeps lines single). Its end
    // ends a run job; a resume job's stream can end at the earlier session before the job
    // appends, so that job goes on polling until it is terminal.
    const es = openEventStream(runId, deliver, toPolling, () => {
      if (stopped || source !== es) return;
      if (logEnds()) finish();
      else toPolling();
    });
    source = es;
    watchJob(runId);
  };

  const waitForRun = async (): Promise<void> => {
    cb.onMode?.('waiting');
    while (!stopped) {
      const j = await refreshJob();
      if (j?.run_id) {
        startSse(j.run_id);
        return;
      }
      if (j && TERMINAL_JOB_STATES.has(j.state)) return closeOut(null);
      await sleep(pollMs / 2);
    }
  };

  void waitForRun();
  return {
    stop(): void {
      detached = true;
      halt();
    },
  };
}

export function followRun(runId: string, cb: FollowCallbacks, opts: { pollMs?: number; forcePolling?: boolean } = {}): Follower {
  const pollMs = opts.pollMs ?? 1000;
  let stopped = false;
  let lastSeq = 0;
  let source: EventSource | null = null;
  let timer: number | null = null;
  const end = new LogEnd();
  const halt = (): void => {
    stopped = true;
    source?.close();
    source = null;
    if (timer !== null) clearTimeout(timer);
  };
  const finish = (): void => {
    if (stopped) return;
    halt();
    cb.onMode?.('done');
    cb.onDone?.(null);
  };
  const deliver = (line: EventLine): void => {
    if (stopped || typeof line.seq !== 'number' || line.seq <= lastSeq) return;
    lastSeq = line.seq;
    end.see(line);
    cb.onLine(line);
  };
  const poll = async (): Promise<void> => {
    if (stopped) return;
    try {
      for (const line of await api.logs(runId)) deliver(line as EventLine);
      if (end.ended) return finish();
    } catch (e) {
      if (!stopped) cb.onError?.(errText(e));
    }
    if (!stopped) timer = window.setTimeout(() => void poll(), pollMs);
  };
  if (typeof EventSource === 'undefined' || opts.forcePolling) {
    cb.onMode?.('polling');
    void poll();
  } else {
    cb.onMode?.('sse');
    const es = openEventStream(
      runId,
      deliver,
      () => {
        if (stopped || source !== es) return;
        es.close();
        source = null;
        cb.onMode?.('polling');
        void poll();
      },
      () => {
        if (source === es) finish();
      },
    );
    source = es;
  }
  return { stop: halt };
}

/**
 * The run's event stream: each event line to `deliver`, `onBroken` when it fails or is refused,
 * `onEnd` at the server's `end` event (the log ended, after the lines of that read).
 */
function openEventStream(runId: string, deliver: (line: EventLine) => void, onBroken: () => void, onEnd: () => void): EventSource {
  const es = new EventSource(api.eventsUrl(runId));
  const onMessage = (ev: MessageEvent): void => {
    try {
      deliver(JSON.parse(String(ev.data)) as EventLine);
    } catch {
      // comments and keep-alives carry no JSON
    }
  };
  // The server sends every line as an unnamed event; `end` is its only named one.
  es.addEventListener('message', onMessage);
  es.addEventListener('error', onBroken);
  es.addEventListener('end', onEnd);
  return es;
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
