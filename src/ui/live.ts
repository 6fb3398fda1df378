// Live events of a Raw Stack job for the monitors. Order of sources:
//   1. the job record (GET /api/jobs/:id) until it names its run_id;
//   2. Server-Sent Events from GET /api/runs/:run_id/events (replays events.jsonl, then follows);
//   3. if the stream fails or is unavailable, polling: events.jsonl through the artifact view
//      endpoint plus the job record, once a second.
// Lines reach the caller once each, in seq order. The follower ends at `run_end`, or when the
// job is terminal and a last read of events.jsonl has been delivered (a job that failed before
// its run started has no run_end).

import { api, ApiError, TERMINAL_JOB_STATES, type JobRecord } from './api.js';
import { parseJsonl, type EventLine } from './run-state.js';

export interface FollowCallbacks {
  onLine(line: EventLine): void;
  onJob?(job: JobRecord): void;
  onMode?(mode: 'waiting' | 'sse' | 'polling' | 'done'): void;
  onDone?(job: JobRecord | null): void;
  onError?(message: string): void;
}

const EVENTS_PATH = 'artifacts/preprocess/events.jsonl';
const SSE_TYPES = ['run_start', 'phase_start', 'phase_progress', 'phase_end', 'frame', 'warning', 'run_end'];

export interface Follower {
  stop(): void;
}

export function followJob(jobId: string, cb: FollowCallbacks, opts: { pollMs?: number; forcePolling?: boolean } = {}): Follower {
  const pollMs = opts.pollMs ?? 1000;
  let stopped = false;
  let lastSeq = 0;
  let source: EventSource | null = null;
  let timer: number | null = null;
  let job: JobRecord | null = null;

  const deliver = (line: EventLine): void => {
    if (stopped || typeof line.seq !== 'number' || line.seq <= lastSeq) return;
    lastSeq = line.seq;
    cb.onLine(line);
    if (line.type === 'run_end') finish();
  };

  const finish = (): void => {
    if (stopped) return;
    stopped = true;
    source?.close();
    if (timer !== null) clearTimeout(timer);
    cb.onMode?.('done');
    // The job record turns terminal just after run_end: fetch it once more for the caller.
    void (async () => {
      for (let i = 0; i < 10 && job && !TERMINAL_JOB_STATES.has(job.state); i++) {
        await sleep(300);
        job = await api.job(jobId).catch(() => job);
        if (job) cb.onJob?.(job);
      }
      cb.onDone?.(job);
    })();
  };

  const refreshJob = async (): Promise<JobRecord | null> => {
    try {
      job = await api.job(jobId);
      cb.onJob?.(job);
    } catch (e) {
      cb.onError?.(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e));
    }
    return job;
  };

  const readEventsFile = async (runId: string): Promise<void> => {
    try {
      const v = await api.view(runId, EVENTS_PATH);
      const text = typeof v.text === 'string' ? v.text : Array.isArray(v.json) ? (v.json as unknown[]).map((x) => JSON.stringify(x)).join('\n') : '';
      for (const line of parseJsonl(text)) deliver(line);
    } catch (e) {
      // 404 while the run folder is being created is normal; anything else is worth showing.
      if (!(e instanceof ApiError && e.status === 404)) cb.onError?.(e instanceof ApiError ? `${e.code}: ${e.message}` : String(e));
    }
  };

  const poll = async (runId: string | null): Promise<void> => {
    if (stopped) return;
    const j = await refreshJob();
    const rid = runId ?? j?.run_id ?? null;
    if (rid) await readEventsFile(rid);
    if (stopped) return;
    if (j && TERMINAL_JOB_STATES.has(j.state)) {
      if (rid) await readEventsFile(rid);
      finish();
      return;
    }
    timer = window.setTimeout(() => void poll(rid), pollMs);
  };

  const startSse = (runId: string): void => {
    if (typeof EventSource === 'undefined' || opts.forcePolling) {
      cb.onMode?.('polling');
      void poll(runId);
      return;
    }
    cb.onMode?.('sse');
    const es = new EventSource(api.eventsUrl(runId));
    source = es;
    const onMessage = (ev: MessageEvent): void => {
      try {
        deliver(JSON.parse(String(ev.data)) as EventLine);
      } catch {
        // comments and keep-alives carry no JSON
      }
    };
    es.addEventListener('message', onMessage);
    for (const t of SSE_TYPES) es.addEventListener(t, onMessage as EventListener);
    es.addEventListener('error', () => {
      if (stopped) return;
      // The stream broke or was refused: poll from here on (seq dedup keeps lines single).
      es.close();
      source = null;
      cb.onMode?.('polling');
      void poll(runId);
    });
  };

  const waitForRun = async (): Promise<void> => {
    cb.onMode?.('waiting');
    while (!stopped) {
      const j = await refreshJob();
      if (j?.run_id) {
        startSse(j.run_id);
        return;
      }
      if (j && TERMINAL_JOB_STATES.has(j.state)) {
        finish();
        return;
      }
      await sleep(pollMs / 2);
    }
  };

  void waitForRun();
  return {
    stop(): void {
      stopped = true;
      source?.close();
      if (timer !== null) clearTimeout(timer);
    },
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
