// The report model: everything preprocessing_report.{json,md,html} show, gathered once from a
// run's state so the three renderers cannot disagree. Plain data, JSON-serialisable.

export interface ReportPhase {
  phase: string;
  status: 'ok' | 'skipped' | 'error' | 'not_started';
  reason?: string;
  message?: string;
  duration_ms?: number;
}

export interface ReportFrame {
  index: number;
  file: string;
  status: 'included' | 'excluded';
  reason: string | null;
  detail: string | null;
  star_count: number | null;
  fwhm: number | null;
  eccentricity: number | null;
  background: number | null;
  noise: number | null;
  registration_cc: number | null;
  quality_score: number | null;
  weight: number | null;
}

export interface ReportArtifact {
  type: string;
  phase: string;
  /** Relative to the run folder. */
  path: string;
}

export interface ReportModel {
  run_id: string;
  status: 'ok' | 'error' | 'cancelled' | 'running';
  kind: 'rawstack';
  generated_at: string;
  generator: { name: string; version: string };
  device: { kind: string; adapter: string | null; fallback_reason?: string };
  phases: ReportPhase[];
  input: { lights_dir: string; pattern: string; frames_total: number; color_mode: string | null; bayer_pattern: string | null; width: number | null; height: number | null };
  reference: { strategy: string; index: number | null; file: string | null } | null;
  quality: { mode: string; frames_total: number; included: number; excluded: number; manual_overrides: number; reasons: Record<string, number> };
  stacking: Record<string, unknown> | null;
  postprocess: Record<string, unknown>;
  frames: ReportFrame[];
  warnings: { code: string; message: string }[];
  artifacts: ReportArtifact[];
  effective_config: Record<string, unknown>;
}
