// Resuming a tiled run from a phase (docs/tiled-workflow.md "Resume"): what the run folder says
// (gatherResumeFacts: config.yaml, phase_records.json, the checkpoints and the files they point
// to, the lights), the feasibility verdict (resume-feasibility.ts), and the resume itself: the
// checkpoint of the phase before from_phase restored into a fresh state and the generic run
// (run.ts) started on the same folder from from_phase, with the files of the earlier phases
// kept and everything else set aside until the resume ends. A dry run is checkResume() alone and
// writes nothing.

import { readFile, stat } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { resolveTiledConfig, type TiledRunConfig } from '../../config/tiled-run.js';
import { isPlainObject } from '../../config/merge.js';
import { artifactPath, configRevisionsPath, RUN_LAYOUTS, RUN_RECORD } from '../../shared/run-layout.js';
import type { RevisionSource } from '../config-revisions.js';
import type { EventLine } from '../events.js';
import type { PhaseOutcome } from '../phase.js';
import { afterLeftoverRestore, restoreLeftover } from '../resume/aside.js';
import { acquireRunLock } from '../run-lock.js';
import { identityHolds } from '../resume/file-identity.js';
import { runFolderAt, type RunFolder, type RunRecord } from '../run-folder.js';
import { runPipeline, type PipelineRunOptions } from '../run.js';
import { sha256 } from '../stages/scan/scan.js';
import { sha } from './records.js';
import { checkpointPath, readCheckpoint, restoreCheckpoint, type Checkpoint } from './checkpoint.js';
import { TILED } from './definition.js';
import { resumeFeasibility, type Feasibility, type PhaseFacts } from './resume-feasibility.js';
import type { TiledRunResult } from './run.js';
import type { PhaseRecord, TiledState } from './state.js';

export const TILED_PLAN: readonly string[] = TILED.phases.map((p) => p.name);

/** Why a run cannot be resumed at all (not a tiled run) or not from this phase. */
export class ResumeRefused extends Error {
  constructor(
    readonly code: 'RESUME_NOT_SUPPORTED' | 'RESUME_PHASE_NOT_FEASIBLE',
    message: string,
    readonly details: Record<string, unknown>,
  ) {
    super(message);
  }
}

export interface ResumeFacts {
  folder: RunFolder;
  record: RunRecord;
  previous: TiledRunConfig | null;
  records: Record<string, PhaseRecord>;
  phases: PhaseFacts[];
  /** Checkpoints that decoded, by phase. */
  checkpoints: Map<string, Checkpoint>;
  missingInputs: string[];
}

/** A file's SHA-256, null when it cannot be read. */
const fileSha256 = (file: string): Promise<string | null> => sha256(file).catch(() => null);

/** The tiled settings config.yaml records (resolved again, so defaults are filled), or null. */
export function configFromYaml(text: string | null): TiledRunConfig | null {
  if (text === null) return null;
  try {
    const doc = parseYaml(text, { customTags: [] }) as unknown;
    if (!isPlainObject(doc)) return null;
    const r = resolveTiledConfig(doc);
    return r.ok ? r.config : null;
  } catch {
    return null;
  }
}

/**
 * Overrides for a resume configuration that leaves out the run's lights folder or run name:
 * the run's own (a resume does not change which lights a run is of, nor its folder's name).
 */
export async function runDefaults(runDir: string, document: Record<string, unknown>): Promise<Record<string, unknown>> {
  const previous = configFromYaml(await readFile(`${runDir}/${RUN_LAYOUTS.tiled.config}`, 'utf8').catch(() => null));
  if (!previous) return {};
  const given = (block: string, key: string) => {
    const b = document[block];
    return isPlainObject(b) && typeof b[key] === 'string' && b[key] !== '';
  };
  const out: Record<string, unknown> = {};
  if (!given('input', 'input_dir')) out['input.input_dir'] = previous.tiled.input.input_dir;
  if (!given('output', 'run_name')) out['output.run_name'] = previous.tiled.output.run_name;
  return out;
}

/** The run record of a run folder (`at` maps a relative path to the file to read), or null. */
export async function readRecord(runDir: string, at: (rel: string) => string = (rel) => `${runDir}/${rel}`): Promise<RunRecord | null> {
  try {
    const r = JSON.parse(await readFile(at(RUN_RECORD), 'utf8')) as RunRecord;
    return isPlainObject(r) ? r : null;
  } catch {
    return null;
  }
}

/**
 * Everything feasibility needs from the run folder (reads only), as the folder will be once a
 * resume whose process died has had its set-aside files restored (resumeTiled restores them
 * first): so a dry run, or the server's check before it starts the job, answers as the resume will.
 */
export async function gatherResumeFacts(runDir: string, options: CheckOptions = {}): Promise<ResumeFacts> {
  const at = await afterLeftoverRestore(runDir);
  const record = await readRecord(runDir, at);
  if (!record) throw notARun(runDir);
  if (record.kind !== 'tiled') {
    const kind = record.kind ?? 'rawstack';
    throw new ResumeRefused('RESUME_NOT_SUPPORTED', `${runDir} is a ${kind === 'rawstack' ? 'Raw Stack' : kind} run; only tiled runs can be resumed`, { kind });
  }
  const folder = runFolderAt(runDir, record.run_id, 'tiled');
  const layout = RUN_LAYOUTS.tiled;
  const previous = configFromYaml(await readFile(at(layout.config), 'utf8').catch(() => null));
  let records: Record<string, PhaseRecord> = {};
  try {
    const r = JSON.parse(await readFile(at(artifactPath(layout, 'phase_records.json')), 'utf8')) as unknown;
    if (isPlainObject(r)) records = r as Record<string, PhaseRecord>;
  } catch {
    // no records: nothing can be handed on
  }
  const phases: PhaseFacts[] = [];
  const checkpoints = new Map<string, Checkpoint>();
  const held = new Map<string, boolean>();
  let previousHash: string | null = null;
  for (const name of TILED_PLAN) {
    const rec = records[name] ?? null;
    if (!rec) {
      phases.push({ name, record: null, recordValid: false, missingFiles: [] });
      continue;
    }
    const { record_hash, ...body } = rec;
    const recordValid = record_hash === sha(body) && (rec.inputs?.previous ?? null) === previousHash;
    previousHash = record_hash;
    const missingFiles: string[] = [];
    if (rec.checkpoint) {
      const read = await readCheckpoint(at(rec.checkpoint.path), runDir);
      if (!read || read.sha256 !== rec.checkpoint.sha256 || read.checkpoint.phase !== name) missingFiles.push(rec.checkpoint.path);
      else {
        checkpoints.set(name, read.checkpoint);
        for (const id of read.checkpoint.files) {
          const key = `${id.path}\0${id.size}\0${id.hash}`;
          let ok = held.get(key);
          if (ok === undefined) held.set(key, (ok = await identityHolds(at(id.path), id)));
          if (!ok) missingFiles.push(id.path);
        }
      }
    }
    phases.push({ name, record: rec, recordValid, missingFiles });
  }
  // The lights as SCAN_INPUT saw them: present with the same identity, and the same SHA-256
  // when the scan took one (input.checksums).
  const missingInputs: string[] = [];
  const scan = checkpoints.get(TILED_PLAN[0]!);
  const sums = new Map(((scan?.state.frames ?? []) as TiledState['frames']).map((f) => [f.file, f.info?.sha256 ?? null]));
  for (const id of scan?.inputs ?? []) {
    const sum = sums.get(id.path) ?? null;
    if (!(await identityHolds(id.path, id)) || (sum !== null && options.checksums !== false && (await fileSha256(id.path)) !== sum)) missingInputs.push(id.path);
  }
  return { folder, record, previous, records, phases, checkpoints, missingInputs };
}

export interface CheckOptions {
  /**
   * Compare the lights' full SHA-256 with the scan's when it took one (input.checksums). Default
   * true; false leaves it to the resume itself, which checks again before it runs (the server's
   * check before it queues a resume job: reading every light in full belongs in the job, not in
   * the request).
   */
  checksums?: boolean;
}

/** The feasibility of resuming `runDir` from `fromPhase` with `next` (default: the run's own configuration). */
export async function checkResume(runDir: string, fromPhase: string, next?: TiledRunConfig | null, options: CheckOptions = {}): Promise<{ facts: ResumeFacts; verdict: Feasibility }> {
  const facts = await gatherResumeFacts(runDir, options);
  const nextConfig = next ?? facts.previous;
  const verdict = resumeFeasibility({
    plan: TILED_PLAN,
    fromPhase,
    previousConfig: (facts.previous?.tiled as unknown as Record<string, unknown>) ?? null,
    nextConfig: (nextConfig?.tiled as unknown as Record<string, unknown>) ?? null,
    phases: facts.phases,
    missingInputs: facts.missingInputs,
  });
  return { facts, verdict };
}

/** The 409 details of a verdict that is not feasible. */
export function refusal(verdict: Feasibility, fromPhase: string): ResumeRefused {
  const { feasible: _f, would_rerun: _w, message, ...details } = verdict;
  return new ResumeRefused('RESUME_PHASE_NOT_FEASIBLE', `cannot resume from ${fromPhase.slice(0, 64)}: ${message ?? verdict.reason}`, details);
}

export interface ResumeOptions extends Omit<PipelineRunOptions<TiledState>, 'runsDir' | 'runName' | 'memoryBudgetMiB' | 'folder' | 'resume' | 'phases'> {
  /** The configuration to run with (null: the run's own config.yaml). */
  config?: TiledRunConfig | null;
  /** How the resume's configuration revision is recorded (default: resume_previous without a config, resume_selected with one). */
  revisionSource?: RevisionSource;
}

/** A folder without a run record (or no folder at all): nothing to resume. */
function notARun(runDir: string): ResumeRefused {
  return new ResumeRefused('RESUME_NOT_SUPPORTED', `${runDir} is not a run folder (no ${RUN_RECORD} there)`, { reason: 'not_a_run' });
}

/** Resumes the tiled run in `runDir` from `fromPhase`; throws ResumeRefused when it cannot. */
export async function resumeTiled(runDir: string, fromPhase: string, options: ResumeOptions = {}): Promise<TiledRunResult & { fromPhase: string; events: EventLine[] }> {
  // One process at a time in the folder: a second resume must not restore or set aside the files
  // this one is writing (RunBusy, code RUN_BUSY, when a live process holds the lock).
  if (!(await stat(runDir).then((st) => st.isDirectory(), () => false))) throw notARun(runDir);
  const lock = await acquireRunLock(runDir, 'resume');
  try {
    return await resumeLocked(runDir, fromPhase, options);
  } finally {
    await lock.release();
  }
}

async function resumeLocked(runDir: string, fromPhase: string, options: ResumeOptions): Promise<TiledRunResult & { fromPhase: string; events: EventLine[] }> {
  // A resume whose process died left the earlier outputs set aside: they come back first.
  await restoreLeftover(runDir);
  const { config, revisionSource, ...rest } = options;
  const { facts, verdict } = await checkResume(runDir, fromPhase, config);
  if (!verdict.feasible) throw refusal(verdict, fromPhase);
  const run = config ?? facts.previous!;
  const from = TILED_PLAN.indexOf(fromPhase);
  const before = TILED_PLAN.slice(0, from);
  const handOver = from > 0 ? facts.checkpoints.get(TILED_PLAN[from - 1]!)! : null;
  const records: Record<string, PhaseRecord> = {};
  for (const name of before) records[name] = facts.records[name]!;
  // The earlier phases' files stay: their checkpoints, every file any of their checkpoints points
  // to, and the configuration revisions (a history, never set aside).
  const kept = new Set<string>();
  for (const name of before) {
    kept.add(checkpointPath(facts.folder, name));
    for (const id of facts.checkpoints.get(name)?.files ?? []) kept.add(id.path);
  }
  const revisions = configRevisionsPath(facts.folder.layout)!;
  const outcomes = new Map<string, PhaseOutcome>(handOver?.outcomes ?? []);
  const bundle = Object.assign(structuredClone(run.raw), { tiled: run.tiled });
  const r = await runPipeline(TILED, bundle, {
    ...rest,
    runsDir: '',
    runName: '',
    memoryBudgetMiB: run.tiled.runtime_limits.memory_budget,
    folder: facts.folder,
    resume: {
      fromPhase,
      restore: (s) => {
        if (handOver) restoreCheckpoint(s, handOver, records);
      },
      outcomes,
      keep: (rel) => kept.has(rel) || rel.startsWith(`${revisions}/`),
      revisionSource: revisionSource ?? (config ? 'resume_selected' : 'resume_previous'),
      previous: facts.record,
    },
  });
  return { runId: r.runId, runDir: r.runDir, status: r.status, phases: r.phases, outputs: r.state.outputs, device: r.device, state: r.state, fromPhase, events: r.state.events.lines };
}
