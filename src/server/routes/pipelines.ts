// Pipelines the jobs endpoints can start. The tiled workflow comes later; until then only
// Raw Stack exists, and it declares no resumable phases (seed: Raw Stack is not resumable).

export interface PipelineInfo {
  name: string;
  description: string;
  resumable: boolean;
  resumable_phases: string[];
}

export const PIPELINES: PipelineInfo[] = [{ name: 'rawstack', description: 'Raw Stack preprocessing: calibration, registration, quality filter, stacking, postprocess', resumable: false, resumable_phases: [] }];

export const PIPELINE_NAMES = PIPELINES.map((p) => p.name);
