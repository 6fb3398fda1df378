// The report model: everything preprocessing_report.{json,md,html} show, gathered once from a
// run's state so the three renderers cannot disagree. Plain data, JSON-serialisable. `kind` is
// the pipeline that ran, which also says where the report and its artifacts lie (run-layout.ts).

import type { RunKind } from '../shared/run-layout.js';

export interface ReportPhase {
  phase: string;
  status: 'ok' | 'skipped' | 'error' | 'not_started';
  reason?: string;
  message?: string;
  duration_ms?: number;
  /** Peak resident memory of the process during the phase (MiB), from phase_end. */
  peak_rss_mib?: number;
}

/** One run-queue entry as the report shows it (seed "Run queue entry"). */
export interface ReportQueueEntry {
  index: number;
  filter: string;
  label: string | null;
  input_dir: string;
  pattern: string;
  active: boolean;
  /** inactive (skipped, kept), scanned, error (its folder could not be scanned). */
  status: string;
  message: string | null;
  frames_found: number;
  frames_usable: number;
  /** Frames of this entry in its filter's stack. */
  frames_used: number;
  /** The filter's stack (outputs/stacked_<filter>.fits) when it was written. */
  output: string | null;
  /** STACKING wall time of the entry's filter (shared by entries of one filter). */
  stack_ms: number | null;
}

/** One frame's local normalization in the report: per channel the fit and its background surface. */
export interface ReportLnFrame {
  index: number;
  file: string;
  channels: {
    name: string;
    ok: boolean;
    /** Spread of the offsets b over the grid (max − min, normalised ADU): how much the background's shape differed. */
    offset_range: number;
    cells_measured: number;
    cells: number;
    masked_fraction: number;
    /** The offsets b per node, row-major ny × nx (the thumbnail). */
    b: number[];
  }[];
}

/** STACKING's local normalization for the report (null: off or not run). */
export interface ReportLocalNormalization {
  nx: number;
  ny: number;
  frames: ReportLnFrame[];
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
  /** DATE-OBS (ISO, UTC) when the light has one: the frame plots' acquisition order. */
  date_obs?: string | null;
  /** Registration (registration-shift.ts): shift of the frame centre on the reference (px) and rotation (degrees); null when the frame has no transform. */
  dx_px?: number | null;
  dy_px?: number | null;
  rotation_deg?: number | null;
}

export interface ReportArtifact {
  type: string;
  phase: string;
  /** Relative to the run folder. */
  path: string;
}

/** One postprocess phase as the report shows it: its outcome, and the values it left. */
export interface ReportPostprocessSection {
  phase: 'ASTROMETRY' | 'BGE' | 'PCC' | 'HYPERMETRIC_STRETCH';
  status: ReportPhase['status'];
  reason?: string;
  message?: string;
  /** Scalars (and short numeric arrays, e.g. per channel) from the phase's summary/diagnostics. */
  values: Record<string, string | number | boolean | null | number[]>;
  /**
   * PCC only: the colour relations of the fit (phases/pcc.ts colourRelations), per ratio R/G and
   * B/G: each star's catalogue colour x and calibrated image colour y as −2.5·log10(ratio) in
   * magnitudes (0 = the white reference), whether it was used, and the fitted slope (y = slope·x)
   * and scatter (mag). A camera seeing the catalogue's colours exactly lies on y = x.
   */
  colour_relations?: Record<'rg' | 'bg', ReportColourRelation>;
}

export interface ReportColourRelation {
  points: { x: number; y: number; used: boolean }[];
  slope: number;
  scatter: number;
  slope_fixed: boolean;
}

/** A PNG preview of one image output (the HTML embeds the PNG itself; JSON keeps the path). */
export interface ReportPreview {
  output: string;
  /** Relative to the run folder: preview_<output>.png in the artifacts folder. */
  path: string;
  width: number;
  height: number;
  source_width: number;
  source_height: number;
  /** Box size in source pixels. */
  factor: number;
  /** 'auto' = unlinked STF of linear data; 'none' = already-stretched output shown as is. */
  stretch: 'auto' | 'none';
}

/** The tiled workflow's tiles and weights (tiled runs only). */
export interface ReportTiled {
  image: { width: number; height: number };
  tile: { size_x: number; size_y: number; origins_x: number[]; origins_y: number[]; types: string[] | null };
  mode: string;
  reason: string;
  /** Per tile (grid order), (ΣW)² / ΣW² over the frames. */
  n_eff: number[];
  /** Every frame in the weight table with its global weight G. */
  frames: { index: number; file: string; g: number }[];
  /** L per tile for the few frames whose L varies most across the field. */
  local: { index: number; file: string; l: number[] }[];
  validation: { fwhm_improvement_percent: number | null; fwhm_pass: boolean; seam_score: number | null; seam_pass: boolean } | null;
  /**
   * Per tile (grid order), the FWHM expected of this stack over that of a stack with the global
   * weights G only: Σ_f w_ft·F_ft / Σ_f g_f·F_ft with F_ft the frame's median star FWHM in the
   * tile and w, g normalised over the frames measured there; null per tile without a measured
   * frame, and null as a whole when L was off (absent in reports written before it existed).
   */
  fwhm_vs_global?: (number | null)[] | null;
}

export interface ReportModel {
  run_id: string;
  status: 'ok' | 'error' | 'cancelled' | 'running';
  kind: RunKind;
  generated_at: string;
  generator: { name: string; version: string };
  device: { kind: string; adapter: string | null; fallback_reason?: string };
  phases: ReportPhase[];
  /** Run queue entries (null for a single-folder run). */
  queue?: ReportQueueEntry[] | null;
  input: {
    lights_dir: string;
    pattern: string;
    frames_total: number;
    color_mode: string | null;
    bayer_pattern: string | null;
    width: number | null;
    height: number | null;
    /** One line on what stood in for missing calibration (the cosmetic pass without darks), if anything. */
    calibration_note?: string | null;
  };
  reference: { strategy: string; index: number | null; file: string | null } | null;
  quality: { mode: string; frames_total: number; included: number; excluded: number; manual_overrides: number; reasons: Record<string, number> };
  stacking: Record<string, unknown> | null;
  /** Tiles and weights of a tiled run (absent for Raw Stack). */
  tiled?: ReportTiled | null;
  /** Per-frame local normalization surfaces of the stack (absent in reports written before it existed). */
  local_normalization?: ReportLocalNormalization | null;
  /** A run queue's: one per filter stack that applied local normalization (in queue order). */
  local_normalization_per_filter?: { filter: string; ln: ReportLocalNormalization }[] | null;
  postprocess: Record<string, unknown>;
  /** Sections of the postprocess phases that ran (or left data); absent phases are left out. */
  postprocess_results: ReportPostprocessSection[];
  previews: ReportPreview[];
  /** report.detailed: true → `frames` holds every frame; false → only the excluded ones. */
  detailed: boolean;
  frames: ReportFrame[];
  warnings: { code: string; message: string }[];
  artifacts: ReportArtifact[];
  effective_config: Record<string, unknown>;
}
