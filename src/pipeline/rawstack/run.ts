// One Raw Stack run from a validated configuration: the Raw Stack definition (definition.ts) run
// by the generic pipeline run (src/pipeline/run.ts), with the run folder under
// `runsDir || config.runs_dir || ./runs`, named by config.run_name, and the device pool capped at
// runtime_limits.memory_budget.

import type { RawStackConfig } from '../../config/rawstack.js';
import type { Phase } from '../phase.js';
import { runPipeline, type PipelineRunOptions, type PipelineRunResult } from '../run.js';
import { RAWSTACK } from './definition.js';
import type { RawStackState } from './state.js';

/** The generic run's options; the folder's parent, name and the memory budget come from the configuration. */
export type RawStackRunOptions = Omit<PipelineRunOptions<RawStackState>, 'runsDir' | 'runName' | 'memoryBudgetMiB'> & {
  /** Parent of the run folder; falls back to config.runs_dir, then ./runs. */
  runsDir?: string;
};

export type RawStackRunResult = Omit<PipelineRunResult<RawStackState>, 'state'> & { outputs: RawStackState['outputs'] };

/** The standard phase list (a copy, for tests that replace a phase). */
export function standardPhases(): Phase<RawStackState>[] {
  return [...RAWSTACK.phases];
}

export async function runRawStack(config: RawStackConfig, options: RawStackRunOptions = {}): Promise<RawStackRunResult> {
  const { runsDir, ...rest } = options;
  const r = await runPipeline(RAWSTACK, config, { ...rest, runsDir: runsDir || config.runs_dir || 'runs', runName: config.run_name, memoryBudgetMiB: config.runtime_limits.memory_budget });
  return { runId: r.runId, runDir: r.runDir, status: r.status, phases: r.phases, outputs: r.state.outputs, device: r.device };
}
