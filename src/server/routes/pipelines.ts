// Pipelines the jobs endpoints can start, with their phase plans (from the definitions, see
// src/pipeline/pipelines.ts): Raw Stack (not resumable, seed) and the tiled workflow (resumable
// from any phase of its plan when the earlier phases' hand-over holds: docs/tiled-workflow.md "Resume").

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

export const PIPELINES: PipelineInfo[] = [
  { name: 'rawstack', description: 'Raw Stack preprocessing: calibration, registration, quality filter, stacking, postprocess', resumable: false, resumable_phases: [], phases: planOfKind('rawstack') },
  { name: 'tiled', description: 'tiled reconstruction: global and per-tile quality weights as a smooth weight field, one stacking pass, postprocess', resumable: true, resumable_phases: planOfKind('tiled').map((p) => p.name), phases: planOfKind('tiled') },
];

export const PIPELINE_NAMES = PIPELINES.map((p) => p.name);
