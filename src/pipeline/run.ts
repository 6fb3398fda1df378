// One run of any pipeline: what every run does around its phases, whatever the pipeline.
//   1. acquire the compute device (GPU, software adapter or TypeScript kernels) with the run's
//      memory budget as the device pool's cap;
//   2. create the run folder (or take one the API created to answer with its id at once) in the
//      pipeline's layout, open the event log, write run.json and the effective configuration;
//   3. emit run_start with the phase plan [{name, optional}], the device and the version (and the
//      input as run.json records it, where the definition asks);
//   4. run the phases (runner.ts), releasing pooled device buffers and collecting dead frame
//      buffers between phases, so no phase's memory peak carries the previous phase's;
//   5. close run.json with the final status, close the event log, release the device and remove
//      the scratch folder, whatever the status.
// The run holds the folder's lock (run-lock.ts) from step 2 to the end; a resume's caller holds it.
// A resume (options.resume) runs the same steps on an existing run folder from one phase on: the
// state the earlier phases left (restored from their checkpoint by the caller), their outcomes,
// the files they wrote kept and every other output set aside (resume/aside.ts) until the resume
// ends; the event log continues (resume_start, run_start … run_end, resume_end), run.json keeps
// its created_at and input, config.yaml becomes the resume's configuration and a revision records
// it. Failed or cancelled: the set-aside files come back and run.json returns to what it was.
// A pipeline is a PipelineDefinition: its kind (which names its run-folder layout), its phases in
// order, the phase that always runs (its report) and its initial state. The caller (CLI, job
// child, tests) owns the AbortSignal and receives every event line as it is written.

import { readFile, rm } from 'node:fs/promises';
import { stringify as yamlStringify } from 'yaml';
import { collectorWhenGrown, exposeGc } from '../cpu/worker-gc.js';
import { collectSharedPools } from '../cpu/worker-pool.js';
import { GpuContext } from '../gpu/context.js';
import { devicePreferenceFromEnv, type DeviceInfo, type DevicePreference } from '../gpu/device.js';
import { recordRevision, type RevisionSource } from './config-revisions.js';
import { configRevisionsPath } from '../shared/run-layout.js';
import { SKYSTACK_VERSION } from '../version.js';
import { addArtifact, type ArtifactList } from './artifacts.js';
import { writeFileAtomic, writeJsonAtomic } from './atomic.js';
import { EventLog, type EventLine, type RunStatus } from './events.js';
import type { Phase, PhaseOutcome } from './phase.js';
import { setAside, type AsideSet } from './resume/aside.js';
import { parseEventLines } from '../shared/events.js';
import { createRunFolder, inRunFolder, writeRunRecord, type RunFolder, type RunKind, type RunRecord } from './run-folder.js';
import { acquireRunLock, type RunLock } from './run-lock.js';
import { phasePlan, runPhases } from './runner.js';

/** What every pipeline's state holds from the start: the run's identity, folder, events and device. */
export interface PipelineBase<C> extends ArtifactList {
  config: C;
  folder: RunFolder;
  runId: string;
  jobId: string | null;
  events: EventLog;
  device: DeviceInfo;
  /** Null when the TypeScript kernels run. */
  gpu: GpuContext | null;
}

export interface PipelineDefinition<C, S extends PipelineBase<C>> {
  readonly kind: RunKind;
  /** The standard phases in run order; run_start's plan is taken from them. */
  readonly phases: readonly Phase<S>[];
  /** The phase that runs even after errors and cancellation (the report), or null. */
  readonly alwaysRun: string | null;
  /** What run.json records as the run's input. */
  input(config: C): Record<string, unknown>;
  /** Whether run_start carries the input too (the tiled workflow's event schema; Raw Stack's run_start does not). */
  readonly inputInRunStart?: boolean;
  /** What the effective-configuration file records (default: the configuration itself). */
  effectiveConfig?(config: C): unknown;
  /** The state before the first phase. */
  initialState(base: PipelineBase<C>): S;
}

export interface PipelineRunOptions<S> {
  /** Parent folder of the run folder (ignored with `folder`). */
  runsDir: string;
  /** Run name of the folder (`run` when empty). */
  runName: string;
  /** MiB the device buffer pool may hold. */
  memoryBudgetMiB: number;
  jobId?: string | null;
  signal?: AbortSignal;
  onEvent?: (line: EventLine) => void;
  device?: DevicePreference;
  /** Creation time for the folder name (tests). */
  now?: Date;
  /** A run folder created beforehand (the API creates it to answer with run_id at once). */
  folder?: RunFolder;
  /** Phases to run instead of the definition's (tests, benches). */
  phases?: readonly Phase<S>[];
  /** Resume the run in `folder` from a phase instead of starting a new one. */
  resume?: PipelineResume<S>;
}

/** What a resume hands the generic run (the pipeline's resume module prepares it). */
export interface PipelineResume<S> {
  /** The first phase that runs again (a phase of the plan). */
  fromPhase: string;
  /** Puts the earlier phases' state (their checkpoint) into the fresh state. */
  restore(state: S): void | Promise<void>;
  /** The earlier phases' outcomes (later phases read them). */
  outcomes: ReadonlyMap<string, PhaseOutcome>;
  /** Whether a file (relative to the run folder) belongs to an earlier phase and stays. */
  keep(rel: string): boolean;
  /** How the configuration revision of this resume is recorded. */
  revisionSource: RevisionSource;
  /** The record of the run being resumed (created_at and input stay). */
  previous: RunRecord;
}

export interface PipelineRunResult<S> {
  runId: string;
  runDir: string;
  status: RunStatus;
  phases: { phase: string; status: string; reason?: string; duration_ms: number }[];
  state: S;
  device: DeviceInfo;
}

/** Growth of the heap and array buffers after which a phase's end runs a full collection (collectorWhenGrown). */
const COLLECT_GROWTH_BYTES = 8 * 1024 * 1024;

/** Writes the effective configuration where the layout says: JSON for a .json path, else YAML; `_runtime` says what ran it. */
async function writeEffectiveConfig(folder: RunFolder, config: unknown, device: DeviceInfo): Promise<void> {
  const body = { ...(config as Record<string, unknown>), _runtime: { skystack_version: SKYSTACK_VERSION, device } };
  const file = inRunFolder(folder, folder.layout.config);
  if (file.endsWith('.json')) await writeJsonAtomic(file, body);
  else await writeFileAtomic(file, yamlStringify(body));
}

export async function runPipeline<C, S extends PipelineBase<C>>(definition: PipelineDefinition<C, S>, config: C, options: PipelineRunOptions<S>): Promise<PipelineRunResult<S>> {
  const plan = options.phases ?? definition.phases;
  const resume = options.resume ?? null;
  if (resume && !options.folder) throw new Error('a resume needs the run folder');
  const fromIndex = resume ? plan.findIndex((p) => p.name === resume.fromPhase) : 0;
  if (fromIndex < 0) throw new Error(`${resume!.fromPhase} is not a phase of the ${definition.kind} plan`);
  const phases = plan.slice(fromIndex);
  const { ctx: gpu, info: device } = await GpuContext.create(options.device ?? devicePreferenceFromEnv(), options.memoryBudgetMiB * 1024 * 1024);
  const folder = options.folder ?? (await createRunFolder(options.runsDir, options.runName, options.now, definition.kind));
  // The folder is this run's until it ends (a resume's caller took the lock before touching it).
  let lock: RunLock | null = null;
  try {
    if (!resume) lock = await acquireRunLock(folder.runDir, 'run');
  } catch (e) {
    gpu?.destroy();
    throw e;
  }
  // A resume continues the log's seq after its last line.
  const lastSeq = resume ? parseEventLines(await readFile(folder.eventsFile, 'utf8').catch(() => '')).reduce((m, l) => Math.max(m, l.seq ?? 0), 0) : 0;
  const events = new EventLog(folder.eventsFile, folder.runId, options.onEvent, lastSeq);
  const record: RunRecord = resume
    ? { ...resume.previous, status: 'running', job_id: options.jobId ?? null }
    : {
        run_id: folder.runId,
        kind: definition.kind,
        created_at: new Date().toISOString(),
        status: 'running',
        input: definition.input(config),
        job_id: options.jobId ?? null,
      };
  const state = definition.initialState({ config, folder, runId: folder.runId, jobId: options.jobId ?? null, events, device, gpu, artifacts: [] });
  const first = plan[0]?.name ?? 'RUN';
  let aside: AsideSet | null = null;
  let status: RunStatus = 'error';
  try {
    if (resume) {
      await resume.restore(state);
      aside = await setAside(folder.runDir, folder.layout.listed.filter((d) => !folder.layout.events.startsWith(`${d}/`)), resume.keep, [folder.layout.config, folder.layout.record]);
    }
    await writeRunRecord(folder, record);
    const effective = definition.effectiveConfig ? definition.effectiveConfig(config) : config;
    await writeEffectiveConfig(folder, effective, device);
    addArtifact(state, 'config', first, folder.layout.config);
    // Kinds that keep configuration revisions start the list with the configuration of this start
    // (a resume adds the configuration it runs with).
    let revisionId: string | null = null;
    if (configRevisionsPath(folder.layout) !== null) revisionId = (await recordRevision(folder.runDir, { yaml: yamlStringify(effective), source: resume?.revisionSource ?? 'run_start', runId: folder.runId }, folder.layout)).revision_id;
    addArtifact(state, 'events', first, folder.layout.events);
    if (resume) events.emit({ type: 'resume_start', from_phase: resume.fromPhase, config_revision_id: revisionId, would_rerun: phases.map((p) => p.name) });
    events.emit({ type: 'run_start', kind: definition.kind, run_dir: folder.runDir, ...(definition.inputInRunStart ? { input: record.input } : {}), device: device.kind, adapter: device.adapter, skystack_version: SKYSTACK_VERSION, phases: phasePlan(plan), ...(resume ? { resumed_from: resume.fromPhase } : {}) });
    if (device.fallbackReason) events.emit({ type: 'warning', code: 'device_fallback', message: device.fallbackReason });
    // Pooled device buffers are sized for one phase's work; the next phase rarely reuses them, and
    // on a software adapter they are host memory: released between phases, and the phase's dead
    // frames collected, so no phase's peak carries the previous phase's memory (memory-flat runs).
    const collectGarbage = collectorWhenGrown(exposeGc(), COLLECT_GROWTH_BYTES);
    const afterPhase = async () => {
      await gpu?.trim();
      collectGarbage();
      // Worker-pool threads release the phase's `reused` shared buffers (worker-pool.ts).
      collectSharedPools();
    };
    const result = await runPhases([...phases], { state, events, signal: options.signal ?? new AbortController().signal, alwaysRun: definition.alwaysRun, afterPhase, ...(resume ? { priorOutcomes: resume.outcomes, plan } : {}) });
    status = result.status;
    record.status = result.status;
    // A resume that did not succeed leaves the earlier outputs (and run.json) as they were.
    if (aside && status !== 'ok') await aside.restore();
    else await writeRunRecord(folder, record);
    if (aside && status === 'ok') await aside.discard();
    aside = null;
    if (resume) events.emit({ type: 'resume_end', status, from_phase: resume.fromPhase });
    const ends = events.lines
      .filter((l): l is Extract<EventLine, { type: 'phase_end' }> => l.type === 'phase_end')
      .map((l) => ({ phase: l.phase, status: l.status, ...(l.reason ? { reason: l.reason } : {}), duration_ms: l.duration_ms }));
    return { runId: folder.runId, runDir: folder.runDir, status: result.status, phases: ends, state, device };
  } catch (e) {
    // A resume that threw before its phases ended: the earlier outputs come back.
    if (aside) {
      await aside.restore().catch(() => undefined);
      events.emit({ type: 'resume_end', status: 'error', from_phase: resume!.fromPhase });
    }
    throw e;
  } finally {
    events.close();
    gpu?.destroy();
    // Scratch files (calibrated frames a run does not keep) go whatever the status; the phases
    // have ended, and cancelled frame workers with them, so nothing writes there any more.
    await rm(folder.scratchDir, { recursive: true, force: true }).catch(() => undefined);
    await lock?.release();
  }
}
