// Pipelines the jobs endpoints can start, with their phase plans (from the definitions, see
// src/pipeline/pipelines.ts). The tiled workflow comes later; until then only Raw Stack exists,
// and it declares no resumable phases (seed: Raw Stack is not resumable).

import type { PhasePlanEntry } from '../../pipeline/events.js';
import { planOfKind } from '../../pipeline/pipelines.js';

export interface PipelineInfo {
  name: string;
  description: string;
  resumable: boolean;
  resumable_phases: string[];
  /** The phases in run order, optional ones marked (what the pipeline's run_start carries). */
  phases: PhasePlanEntry[];
}

export const PIPELINES: PipelineInfo[] = [{ name: 'rawstack', description: 'Raw Stack preprocessing: calibration, registration, quality filter, stacking, postprocess', resumable: false, resumable_phases: [], phases: planOfKind('rawstack') }];

export const PIPELINE_NAMES = PIPELINES.map((p) => p.name);
