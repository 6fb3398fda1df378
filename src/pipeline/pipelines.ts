// The pipelines this build can run, by kind: their definitions (phases, layout, initial state).
// The server reads the phase plan of a run that has not written run_start yet (a queued job, or
// a run folder from before run_start carried its plan) from here; everything else reads the plan
// from run_start.

import type { PhasePlanEntry } from './events.js';
import { RAWSTACK } from './rawstack/definition.js';
import { phasePlan } from './runner.js';
import { TILED } from './tiled/definition.js';

export const PIPELINE_DEFINITIONS = { rawstack: RAWSTACK, tiled: TILED } as const;

/** The phase plan of a pipeline kind (empty for a kind this build does not know). */
export function planOfKind(kind: string): PhasePlanEntry[] {
  const def = (PIPELINE_DEFINITIONS as Record<string, { phases: Parameters<typeof phasePlan>[0] } | undefined>)[kind];
  return def ? phasePlan(def.phases) : [];
}
