// One tiled run from a resolved configuration (config/tiled-run.ts): the tiled definition
// (definition.ts) run by the generic pipeline run, the folder under
// `runsDir || output.runs_dir || ./runs` named by output.run_name, the device pool capped at
// runtime_limits.memory_budget.

import type { TiledRunConfig } from '../../config/tiled-run.js';
import { runPipeline, type PipelineRunOptions, type PipelineRunResult } from '../run.js';
import { TILED } from './definition.js';
import type { TiledState } from './state.js';

export type TiledRunOptions = Omit<PipelineRunOptions<TiledState>, 'runsDir' | 'runName' | 'memoryBudgetMiB'> & { runsDir?: string };

export type TiledRunResult = Omit<PipelineRunResult<TiledState>, 'state'> & { outputs: TiledState['outputs']; state: TiledState };

export async function runTiled(config: TiledRunConfig, options: TiledRunOptions = {}): Promise<TiledRunResult> {
  const { runsDir, ...rest } = options;
  const bundle = Object.assign(structuredClone(config.raw), { tiled: config.tiled });
  const t = config.tiled;
  const r = await runPipeline(TILED, bundle, { ...rest, runsDir: runsDir || t.output.runs_dir || 'runs', runName: t.output.run_name, memoryBudgetMiB: t.runtime_limits.memory_budget });
  return { runId: r.runId, runDir: r.runDir, status: r.status, phases: r.phases, outputs: r.state.outputs, device: r.device, state: r.state };
}
