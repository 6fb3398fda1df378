// One Raw Stack run from a validated configuration: the Raw Stack definition (definition.ts) run
// by the generic pipeline run (src/pipeline/run.ts), with the run folder under
// `runsDir || config.runs_dir || ./runs`, named by config.run_name, and the device pool capped at
// runtime_limits.memory_budget.

import type { RawStackConfig } from '../../config/rawstack.js';
import type { DeviceInfo, DevicePreference } from '../../gpu/device.js';
import type { EventLine, RunStatus } from '../events.js';
import type { Phase } from '../phase.js';
import type { RunFolder } from '../run-folder.js';
import { runPipeline } from '../run.js';
import { RAWSTACK } from './definition.js';
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

/** The standard phase list (a copy, for tests that replace a phase). */
export function standardPhases(): Phase<RawStackState>[] {
  return [...RAWSTACK.phases];
}

export async function runRawStack(config: RawStackConfig, options: RawStackRunOptions = {}): Promise<RawStackRunResult> {
  const { runsDir, ...rest } = options;
  const r = await runPipeline(RAWSTACK, config, { ...rest, runsDir: runsDir || config.runs_dir || 'runs', runName: config.run_name, memoryBudgetMiB: config.runtime_limits.memory_budget });
  return { runId: r.runId, runDir: r.runDir, status: r.status, phases: r.phases, outputs: r.state.outputs, device: r.device };
}
