// The job queue (docs/ARCHITECTURE.md "Processes"): FIFO, at most `maxConcurrent` children at once, every state
// change persisted atomically before it is visible. States: pending → running → ok | error |
// cancelled; running → cancelling → cancelled; terminal states never change. At start-up,
// jobs found running/cancelling become error/INTERRUPTED (their runs get a closing run_end);
// pending ones are queued again in their original order.

import { randomBytes } from 'node:crypto';
import { restoreLeftover } from '../../pipeline/resume/aside.js';
import { runLockHolder } from '../../pipeline/run-lock.js';
import { closeRun } from '../run-index.js';
import { ApiError } from '../errors.js';
import { spawnJobChild, type ChildHandle } from './child.js';
import { JobStore } from './store.js';
import { withAllocatorTuning } from '../../cli/allocator-env.js';
import { TERMINAL_STATES, type ChildMessage, type JobKind, type JobRecord, type JobSpec } from './types.js';

export interface JobManagerOptions {
  store: JobStore;
  cliPath: string;
  maxConcurrent: number;
  /** Milliseconds between SIGTERM and SIGKILL on cancel (default 1200: the child is gone within 2 s). */
  killGraceMs?: number;
  log?: (message: string) => void;
  env?: NodeJS.ProcessEnv;
}

export function newJobId(): string {
  return `job_${Date.now().toString(36)}${randomBytes(5).toString('hex')}`;
}

export class JobManager {
  private readonly jobs = new Map<string, JobRecord>();
  private readonly queue: string[] = [];
  private readonly children = new Map<string, ChildHandle>();
  private readonly cancelRequested = new Set<string>();
  private readonly results = new Map<string, Extract<ChildMessage, { type: 'result' }>>();
  private readonly settled = new Map<string, Promise<void>>();
  private stopping = false;

  constructor(private readonly o: JobManagerOptions) {}

  get maxConcurrent(): number {
    return this.o.maxConcurrent;
  }

  /** Loads persisted jobs; running ones become INTERRUPTED, pending ones are queued again. */
  async init(): Promise<{ interrupted: string[]; requeued: string[] }> {
    const interrupted: string[] = [];
    const requeued: string[] = [];
    for (const rec of await this.o.store.loadAll()) {
      this.jobs.set(rec.job_id, rec);
      if (rec.state === 'running' || rec.state === 'cancelling') {
        rec.state = 'error';
        rec.ended_at = new Date().toISOString();
        rec.error = { code: 'INTERRUPTED', message: 'the server stopped while this job was running' };
        await this.o.store.save(rec);
        if (rec.run_dir) await closeRun(rec.run_dir, 'error', 'interrupted').catch((e) => this.o.log?.(`closing run ${rec.run_id}: ${(e as Error).message}`));
        interrupted.push(rec.job_id);
      } else if (rec.state === 'pending') {
        this.queue.push(rec.job_id);
        requeued.push(rec.job_id);
      }
    }
    this.pump();
    return { interrupted, requeued };
  }

  list(): JobRecord[] {
    return [...this.jobs.values()].sort((a, b) => b.created_at.localeCompare(a.created_at) || b.job_id.localeCompare(a.job_id));
  }

  get(id: string): JobRecord | undefined {
    return this.jobs.get(id);
  }

  running(): number {
    return this.children.size;
  }

  queued(): number {
    return this.queue.length;
  }

  /** Creates, persists and queues a job. */
  async submit(kind: JobKind, request: Record<string, unknown>, spec: JobSpec, run?: { run_id: string; run_dir: string }, id = newJobId()): Promise<JobRecord> {
    const rec: JobRecord = {
      job_id: id,
      kind,
      state: 'pending',
      created_at: new Date().toISOString(),
      started_at: null,
      ended_at: null,
      run_id: run?.run_id ?? null,
      run_dir: run?.run_dir ?? null,
      progress: { phase: null, fraction: 0 },
      error: null,
      exit_code: null,
      request,
      result: null,
    };
    await this.o.store.saveSpec(id, spec);
    await this.o.store.save(rec);
    this.jobs.set(id, rec);
    this.queue.push(id);
    this.pump();
    return rec;
  }

  /** Cancels a job: pending ones at once, running ones through their child. */
  async cancel(id: string): Promise<JobRecord> {
    const rec = this.jobs.get(id);
    if (!rec) throw new ApiError('NOT_FOUND', `no job ${id}`);
    if (TERMINAL_STATES.has(rec.state)) throw new ApiError('JOB_FINISHED', `job ${id} already ended (${rec.state})`, { state: rec.state });
    if (rec.state === 'pending') {
      const i = this.queue.indexOf(id);
      if (i >= 0) this.queue.splice(i, 1);
      rec.state = 'cancelled';
      rec.ended_at = new Date().toISOString();
      await this.o.store.save(rec);
      if (rec.run_dir) await closeRun(rec.run_dir, 'cancelled', 'cancelled');
      return rec;
    }
    this.cancelRequested.add(id);
    if (rec.state === 'running') {
      rec.state = 'cancelling';
      await this.o.store.save(rec);
    }
    this.children.get(id)?.terminate(this.o.killGraceMs ?? 1200);
    return rec;
  }

  /** Resolves when the job has reached a terminal state (tests, shutdown). */
  async waitFor(id: string): Promise<JobRecord | undefined> {
    await this.settled.get(id);
    return this.jobs.get(id);
  }

  /** Stops starting new jobs and ends running children (server shutdown). */
  async shutdown(): Promise<void> {
    this.stopping = true;
    const ids = [...this.children.keys()];
    for (const id of ids) {
      this.cancelRequested.add(id);
      this.children.get(id)?.terminate(this.o.killGraceMs ?? 1200);
    }
    await Promise.all(ids.map((id) => this.settled.get(id)));
  }

  private pump(): void {
    while (!this.stopping && this.children.size < this.o.maxConcurrent && this.queue.length > 0) {
      const id = this.queue.shift()!;
      const rec = this.jobs.get(id);
      if (!rec || rec.state !== 'pending') continue;
      this.start(rec);
    }
  }

  private start(rec: JobRecord): void {
    rec.state = 'running';
    rec.started_at = new Date().toISOString();
    const id = rec.job_id;
    let persisting = this.o.store.save(rec);
    const persist = () => {
      persisting = persisting.then(() => this.o.store.save(rec)).catch((e) => this.o.log?.(`saving job ${id}: ${(e as Error).message}`));
    };
    // The API token is the server's secret; job children never need it.
    const { SKYSTACK_TOKEN: _token, ...env } = this.o.env ?? process.env;
    const child = spawnJobChild({
      cliPath: this.o.cliPath,
      specFile: this.o.store.specFile(id),
      logFile: this.o.store.logFile(id),
      // The allocator settings a pipeline process runs with (the CLI sets them the same way).
      env: withAllocatorTuning(env),
      onMessage: (m) => {
        if (m.type === 'progress') {
          rec.progress = { phase: m.phase, fraction: Math.max(0, Math.min(1, m.fraction)) };
          if (m.persist) persist();
        } else if (m.type === 'result') {
          this.results.set(id, m);
        }
      },
    });
    this.children.set(id, child);
    rec.pid = child.pid;
    persist();
    this.settled.set(
      id,
      child.exited.then(async ({ code, signal }) => {
        this.children.delete(id);
        await persisting;
        rec.pid = null;
        const result = this.results.get(id);
        this.results.delete(id);
        rec.exit_code = code;
        rec.ended_at = new Date().toISOString();
        const cancelled = this.cancelRequested.delete(id);
        if (result?.details) rec.result = result.details;
        if (cancelled || result?.status === 'cancelled') {
          rec.state = 'cancelled';
        } else if (result?.status === 'ok') {
          rec.state = 'ok';
          rec.progress.fraction = 1;
        } else if (result) {
          rec.state = 'error';
          rec.error = { code: rec.kind === 'rawstack' || rec.kind === 'tiled' || rec.kind === 'resume' ? 'RUN_FAILED' : 'JOB_FAILED', message: result.message ?? 'the job failed' };
        } else {
          rec.state = 'error';
          rec.error = { code: code === null && signal === null ? 'SPAWN_FAILED' : 'CHILD_CRASHED', message: `job process ended without a result (exit code ${code}, signal ${signal})` };
        }
        // A resume whose child died mid-way left the earlier outputs set aside: they come back.
        // Unless another process (a CLI resume) is working in the folder now: its files are live.
        if (rec.kind === 'resume' && rec.run_dir && !(await runLockHolder(rec.run_dir))) await restoreLeftover(rec.run_dir).catch((e) => this.o.log?.(`restoring run ${rec.run_id}: ${(e as Error).message}`));
        if (rec.run_dir) {
          await closeRun(rec.run_dir, rec.state === 'cancelled' ? 'cancelled' : rec.state === 'ok' ? 'ok' : 'error', rec.state === 'cancelled' ? 'cancelled' : 'crashed').catch((e) =>
            this.o.log?.(`closing run ${rec.run_id}: ${(e as Error).message}`),
          );
        }
        await this.o.store.save(rec).catch((e) => this.o.log?.(`saving job ${id}: ${(e as Error).message}`));
        this.pump();
      }),
    );
  }
}
