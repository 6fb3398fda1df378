// Reading run folders for the API: which folders under runs_dir are runs, their run.json and
// layout (by pipeline kind, src/shared/run-layout.ts), their event log, the phase statuses
// derived from the events, and closing a run whose
// process ended without closing it (cancel by kill, server restart): the open phase gets a
// phase_end {status: error, reason} and the run a run_end, so every run's events are closed.
// Every file of a run folder is opened through run-files.ts (confined to the run folder).

import { readdir, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeJsonAtomic } from '../pipeline/atomic.js';
import type { EventLine, RunStatus } from '../pipeline/events.js';
import { parseEventLines } from '../shared/events.js';
import { foldEvents, planOf, type PhaseViewStatus } from '../shared/run-progress.js';
import { planOfKind } from '../pipeline/pipelines.js';
import { inRunFolder, runFolderAt, type RunRecord } from '../pipeline/run-folder.js';
import { layoutOf, RUN_LAYOUTS, RUN_RECORD, type RunLayout } from '../shared/run-layout.js';
import { appendRunText, readRunText, statRunFile } from './run-files.js';

export const RUN_ID_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/** run.json, or null when missing, unparsable or not a confined regular file. */
export async function readRunRecord(runDir: string): Promise<RunRecord | null> {
  const text = await readRunText(runDir, RUN_RECORD, 1024 * 1024);
  if (text === null) return null;
  try {
    const rec = JSON.parse(text) as RunRecord;
    return typeof rec === 'object' && rec !== null && !Array.isArray(rec) ? rec : null;
  } catch {
    return null;
  }
}

/**
 * The run's layout: the kind its run.json names; without a run.json (a run folder written by
 * hand, or one whose record is being replaced) the kind whose event log exists, else Raw Stack's.
 */
export async function runLayout(runDir: string, rec?: RunRecord | null): Promise<RunLayout> {
  const record = rec === undefined ? await readRunRecord(runDir) : rec;
  if (record) return layoutOf(record.kind);
  for (const layout of Object.values(RUN_LAYOUTS)) if (await statRunFile(runDir, layout.events)) return layout;
  return RUN_LAYOUTS.rawstack;
}

/** Parsed event lines; a torn last line (being written) is left out. */
export async function readEvents(runDir: string, layout?: RunLayout): Promise<EventLine[]> {
  const text = await readRunText(runDir, (layout ?? (await runLayout(runDir))).events);
  return text === null ? [] : parseEventText(text);
}

export const parseEventText = parseEventLines;

export interface RunSummary {
  run_id: string;
  kind: string;
  status: string;
  created_at: string;
  /** The folder the run read its frames from (run.json input: lights_dir, or input_dir for tiled runs); null when run.json names none. */
  input_dir: string | null;
  job_id: string | null;
  run_dir: string;
}

/** Runs directly under runs_dir (folders with run.json or an events file), newest first. */
export async function listRuns(runsDir: string): Promise<RunSummary[]> {
  const entries = await readdir(runsDir, { withFileTypes: true }).catch(() => []);
  const out: RunSummary[] = [];
  for (const e of entries) {
    if (!e.isDirectory() || e.name.startsWith('.') || !RUN_ID_RE.test(e.name)) continue;
    const dir = join(runsDir, e.name);
    const summary = await summarizeRun(dir, e.name);
    if (summary) out.push(summary);
  }
  return out.sort(newestFirst);
}

export function newestFirst(a: RunSummary, b: RunSummary): number {
  return b.created_at.localeCompare(a.created_at) || b.run_id.localeCompare(a.run_id);
}

/** One run's list entry: from run.json, else from its events file's time; null when neither. */
export async function summarizeRun(dir: string, runId: string, jobId: string | null = null): Promise<RunSummary | null> {
  const rec = await readRunRecord(dir);
  let created = typeof rec?.created_at === 'string' ? rec.created_at : undefined;
  if (!rec) {
    const s = await statRunFile(dir, (await runLayout(dir, null)).events);
    if (!s) return null;
    created = s.mtime.toISOString();
  }
  const str = (v: unknown, d: string) => (typeof v === 'string' ? v : d);
  const input = rec?.input && typeof rec.input === 'object' ? rec.input : {};
  const inputDir = [input.lights_dir, input.input_dir].find((v): v is string => typeof v === 'string' && v !== '') ?? null;
  return { run_id: runId, kind: str(rec?.kind, 'rawstack'), status: str(rec?.status, 'unknown'), created_at: created ?? '', input_dir: inputDir, job_id: typeof rec?.job_id === 'string' ? rec.job_id : jobId, run_dir: dir };
}

export type PhaseView = { phase: string; status: PhaseViewStatus; optional: boolean; progress: number; reason?: string; message?: string; duration_ms?: number };

/**
 * Phase list with statuses from the events (shared/run-progress.ts): the plan run_start carries,
 * else that of the run's kind (`kind`: a run not started yet, or written before run_start carried
 * its plan); phases the events name beyond it appended.
 */
export function phaseStatuses(lines: readonly EventLine[], kind = 'rawstack'): { phases: PhaseView[]; run_status: RunStatus | 'running' | 'pending'; progress: number } {
  const run = foldEvents(lines, planOf(lines) ? [] : planOfKind(kind));
  const phases = [...run.phases.values()].map((p): PhaseView => ({
    phase: p.name,
    status: p.status,
    optional: p.optional,
    progress: p.progress,
    ...(p.reason !== undefined ? { reason: p.reason } : {}),
    ...(p.message !== undefined ? { message: p.message } : {}),
    ...(p.duration_ms !== undefined ? { duration_ms: p.duration_ms } : {}),
  }));
  return { phases, run_status: run.runStatus, progress: Math.round(run.fraction * 1e4) / 1e4 };
}

/**
 * Closes a run whose process is gone: ends open phases with `error`/`reason`, appends run_end
 * with `status`, and sets run.json's status. Idempotent (nothing happens after a run_end).
 */
export async function closeRun(runDir: string, status: RunStatus, reason: 'cancelled' | 'interrupted' | 'crashed'): Promise<boolean> {
  const rec = await readRunRecord(runDir);
  const layout = await runLayout(runDir, rec);
  const folder = runFolderAt(runDir, rec?.run_id ?? '', layout.kind);
  // The run's process is gone: its scratch files (unkept calibrated frames) go too, also when a
  // killed process could not remove them itself. rm removes a planted symlink, never its target.
  await rm(folder.scratchDir, { recursive: true, force: true }).catch(() => undefined);
  const all = await readEvents(runDir, layout);
  // A resume appends a session (resume_start … run_end, resume_end): only the last one is closed.
  const resumedAt = all.map((l) => l.type).lastIndexOf('resume_start');
  const resume = resumedAt >= 0 ? (all[resumedAt] as Extract<EventLine, { type: 'resume_start' }>) : null;
  const lines = resumedAt >= 0 ? all.slice(resumedAt) : all;
  if (lines.some((l) => l.type === 'run_end')) {
    if (rec && (rec.status === 'running' || (rec.status as string) === 'pending')) {
      rec.status = lines.filter((l): l is Extract<EventLine, { type: 'run_end' }> => l.type === 'run_end').pop()!.status;
      await writeJsonAtomic(inRunFolder(folder, layout.record), rec);
    }
    return false;
  }
  const runId = lines[0]?.run_id ?? rec?.run_id ?? '';
  let seq = all.reduce((m, l) => Math.max(m, l.seq ?? 0), 0);
  const now = Date.now();
  // A process killed mid-write can leave a torn last line: start ours on a fresh line.
  const text = (await readRunText(runDir, layout.events)) ?? '';
  let out = text.length > 0 && !text.endsWith('\n') ? '\n' : '';
  const emit = (body: Record<string, unknown>) => {
    out += JSON.stringify({ seq: ++seq, ts: new Date().toISOString(), run_id: runId, ...body }) + '\n';
  };
  const startTs = lines[0] ? Date.parse(lines[0].ts) : now;
  if (!lines.some((l) => l.type === 'run_start')) emit({ type: 'run_start', kind: layout.kind, run_dir: runDir });
  const open = new Map<string, number>();
  for (const l of lines) {
    if (l.type === 'phase_start') open.set(l.phase, Date.parse(l.ts));
    else if (l.type === 'phase_end') open.delete(l.phase);
  }
  const failed = lines.filter((l): l is Extract<EventLine, { type: 'phase_end' }> => l.type === 'phase_end' && l.status === 'error').map((l) => l.phase);
  const message = reason === 'cancelled' ? 'run cancelled' : reason === 'interrupted' ? 'the server stopped while the run was active' : 'the job process ended unexpectedly';
  for (const [phase, t0] of open) {
    emit({ type: 'phase_end', phase, status: 'error', reason, message, duration_ms: Math.max(0, now - t0) });
    failed.push(phase);
  }
  emit({ type: 'run_end', status, duration_ms: Math.max(0, now - startTs), failed_phases: failed, closed_by: 'server', reason });
  if (resume) emit({ type: 'resume_end', status, from_phase: resume.from_phase, closed_by: 'server' });
  // One append through the confined open: a planted events.jsonl link is never written through.
  if (!(await appendRunText(runDir, layout.events, out))) return false;
  if (rec) {
    rec.status = status;
    await writeJsonAtomic(inRunFolder(folder, layout.record), rec);
  }
  return true;
}
