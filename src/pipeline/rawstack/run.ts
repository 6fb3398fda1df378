// One Raw Stack run from a validated configuration: creates the run folder, writes run.json and
// effective_config.json, acquires the compute device, runs the phases with the runner's error
// and cancellation semantics, and closes run.json with the final status. The caller (CLI or a
// job child process) owns the AbortSignal and receives every event line as it is written.

import { rm } from 'node:fs/promises';
import type { RawStackConfig } from '../../config/rawstack.js';
import { exposeGc } from '../../cpu/worker-gc.js';
import { collectSharedPools } from '../../cpu/worker-pool.js';
import { GpuContext } from '../../gpu/context.js';
import { devicePreferenceFromEnv, type DeviceInfo, type DevicePreference } from '../../gpu/device.js';
import { SKYSTACK_VERSION } from '../../version.js';
import { writeJsonAtomic } from '../atomic.js';
import { EventLog, type EventLine, type RunStatus } from '../events.js';
import type { Phase } from '../phase.js';
import { createRunFolder, inRunFolder, writeRunRecord, type RunFolder, type RunRecord } from '../run-folder.js';
import { runPhases } from '../runner.js';
import { calibrationPhase } from './phases/calibration.js';
import { cfaChannelPrepPhase } from './phases/cfa-channel-prep.js';
import { frameFilteringPhase } from './phases/frame-filtering.js';
import { inputScanPhase } from './phases/input-scan.js';
import { qualityAnalysisPhase } from './phases/quality-analysis.js';
import { referenceSelectionPhase } from './phases/reference-selection.js';
import { registrationPhase } from './phases/registration.js';
import { stackingPhase } from './phases/stacking.js';
import { astrometryPhase, bgePhase, hmsPhase, pccPhase } from './phases/postprocess.js';
import { addArtifact } from '../artifacts.js';
import { reportPhase } from './phases/report.js';
import type { RawStackState } from './state.js';

export interface RawStackRunOptions {
  /** Parent of the run folder; falls back to config.runs_dir, then ./runs. */
  runsDir?: string;
  jobId?: string | null;
  signal?: AbortSignal;
  onEvent?: (line: EventLine) => void;
  device?: DevicePreference;
  /** Creation time for the folder name (tests). */
  now?: Date;
  /** A run folder created beforehand (the API creates it to answer with run_id at once). */
  folder?: RunFolder;
  /** Phases to run instead of the standard list (tests). */
  phases?: Phase<RawStackState>[];
}

export interface RawStackRunResult {
  runId: string;
  runDir: string;
  status: RunStatus;
  phases: { phase: string; status: string; reason?: string; duration_ms: number }[];
  outputs: RawStackState['outputs'];
  device: DeviceInfo;
}

/** The main thread's collector (a full GC of dead frame buffers takes milliseconds). */
const collectGarbage = exposeGc();

export function standardPhases(): Phase<RawStackState>[] {
  return [inputScanPhase, calibrationPhase, cfaChannelPrepPhase, referenceSelectionPhase, registrationPhase, qualityAnalysisPhase, frameFilteringPhase, stackingPhase, astrometryPhase, bgePhase, pccPhase, hmsPhase, reportPhase];
}

export async function runRawStack(config: RawStackConfig, options: RawStackRunOptions = {}): Promise<RawStackRunResult> {
  const runsDir = options.runsDir || config.runs_dir || 'runs';
  const { ctx: gpu, info: device } = await GpuContext.create(options.device ?? devicePreferenceFromEnv(), config.runtime_limits.memory_budget * 1024 * 1024);
  const folder = options.folder ?? (await createRunFolder(runsDir, config.run_name, options.now));
  const events = new EventLog(folder.eventsFile, folder.runId, options.onEvent);
  const record: RunRecord = {
    run_id: folder.runId,
    kind: 'rawstack',
    created_at: new Date().toISOString(),
    status: 'running',
    input: { lights_dir: config.lights_dir, pattern: config.pattern, queue: config.queue },
    job_id: options.jobId ?? null,
  };
  const state: RawStackState = {
    config,
    folder,
    runId: folder.runId,
    jobId: options.jobId ?? null,
    events,
    device,
    gpu,
    frames: [],
    colorMode: null,
    bayer: null,
    width: null,
    height: null,
    masters: { bias: null, dark: null, flat: null, darkflat: null },
    referenceIndex: null,
    referenceStrategy: null,
    outputs: {},
    artifacts: [],
    warnings: [],
    queue: null,
    summaries: {},
  };
  try {
    await writeRunRecord(folder, record);
    // The effective configuration, plus what ran it; `_runtime` is ignored when fed back as a config.
    await writeJsonAtomic(inRunFolder(folder, folder.layout.config), { ...config, _runtime: { skystack_version: SKYSTACK_VERSION, device } });
    addArtifact(state, 'config', 'INPUT_SCAN', folder.layout.config);
    addArtifact(state, 'events', 'INPUT_SCAN', folder.layout.events);
    events.emit({ type: 'run_start', kind: 'rawstack', run_dir: folder.runDir, device: device.kind, adapter: device.adapter, skystack_version: SKYSTACK_VERSION });
    if (device.fallbackReason) events.emit({ type: 'warning', code: 'device_fallback', message: device.fallbackReason });
    // Pooled device buffers are sized for one phase's work; the next phase rarely reuses them, and
    // on a software adapter they are host memory: released between phases, and the phase's dead
    // frames collected, so no phase's peak carries the previous phase's memory (memory-flat runs).
    const afterPhase = () => {
      gpu?.pool.trim();
      collectGarbage?.();
      // Worker-pool threads release the phase's `reused` shared buffers (worker-pool.ts).
      collectSharedPools();
    };
    const result = await runPhases(options.phases ?? standardPhases(), { state, events, signal: options.signal ?? new AbortController().signal, afterPhase });
    record.status = result.status;
    await writeRunRecord(folder, record);
    const phases = events.lines
      .filter((l): l is Extract<EventLine, { type: 'phase_end' }> => l.type === 'phase_end')
      .map((l) => ({ phase: l.phase, status: l.status, ...(l.reason ? { reason: l.reason } : {}), duration_ms: l.duration_ms }));
    return { runId: folder.runId, runDir: folder.runDir, status: result.status, phases, outputs: state.outputs, device };
  } finally {
    events.close();
    gpu?.destroy();
    // Scratch files (calibrated frames a run does not keep) go whatever the status; the phases
    // have ended, and cancelled frame workers with them, so nothing writes there any more.
    await rm(folder.scratchDir, { recursive: true, force: true }).catch(() => undefined);
  }
}
