// A tiled run's configuration: the tiled YAML (tiled.ts) with every default filled in, plus the
// Raw Stack configuration the shared phases read (scan, calibration, channel statistics,
// registration, stacking engine, postprocess), derived from it key by key. The tiled document
// is what config.yaml records; the derived Raw Stack keys are an implementation detail.
// Invariants: resolving is a pure function of the document and the overrides; the quality
// filter is off (the tiled workflow weights frames, it does not drop them; only frames that
// cannot be read, measured or registered leave the run); `rej`/`average` mean sigma/mean.

import { getPath, isPlainObject, mergeLayers, setPath } from './merge.js';
import { issuesOf, RawStackConfigSchema, type ConfigIssue, type RawStackConfig } from './rawstack.js';
import { TiledConfigSchema } from './tiled.js';
import type { z } from 'zod';

type Parsed = z.output<typeof TiledConfigSchema>;
type Block<K extends keyof Parsed> = NonNullable<Parsed[K]>;

/** The tiled configuration with every tiled block present and defaulted. */
export interface TiledSettings {
  input: Block<'input'>;
  calibration: Block<'calibration'>;
  output: Block<'output'>;
  runtime_limits: Block<'runtime_limits'>;
  normalization: Block<'normalization'>;
  global_metrics: Block<'global_metrics'>;
  tile: Block<'tile'>;
  local_metrics: Block<'local_metrics'>;
  synthetic: Block<'synthetic'>;
  assumptions: Block<'assumptions'>;
  stacking: Block<'stacking'>;
  validation: Block<'validation'>;
  astrometry: Record<string, unknown>;
  bge: Record<string, unknown>;
  pcc: Record<string, unknown>;
  hypermetric_stretch: Record<string, unknown>;
  report: Block<'report'>;
  resume: Block<'resume'>;
}

/** What a tiled run is given: the tiled settings and the Raw Stack configuration derived from them. */
export interface TiledRunConfig {
  tiled: TiledSettings;
  raw: RawStackConfig;
}

export type TiledResolveResult = { ok: true; config: TiledRunConfig } | { ok: false; issues: ConfigIssue[] };

const DEFAULTED = ['input', 'calibration', 'output', 'runtime_limits', 'normalization', 'global_metrics', 'tile', 'local_metrics', 'synthetic', 'assumptions', 'stacking', 'validation', 'report', 'resume'] as const;

/** The stacking engine's rejection method for a tiled `stacking.method`. */
export function rejectionMethod(method: string): 'sigma' | 'winsor' | 'median' | 'none' {
  if (method === 'rej') return 'sigma';
  if (method === 'mean' || method === 'average') return 'none';
  return method as 'sigma' | 'winsor' | 'median';
}

/**
 * Resolves a tiled document (already free of unknown keys: validateTiledYaml's `config`, or a
 * plain object) with dotted overrides applied on top (`--set tile.size_factor=24`).
 */
export function resolveTiledConfig(document: unknown, overrides: Record<string, unknown> = {}): TiledResolveResult {
  const doc: Record<string, unknown> = isPlainObject(document) ? structuredClone(document) : {};
  delete doc._runtime;
  for (const [k, v] of Object.entries(overrides)) setPath(doc, k, v);
  // Every defaulted block parsed from {} when absent (an absent optional block has no defaults).
  for (const k of DEFAULTED) if (doc[k] === undefined) doc[k] = {};
  const r = TiledConfigSchema.safeParse(doc);
  if (!r.success) return { ok: false, issues: issuesOf(r.error) };
  const p = r.data;
  const tiled = { ...p, astrometry: p.astrometry ?? {}, bge: p.bge ?? {}, pcc: p.pcc ?? {}, hypermetric_stretch: p.hypermetric_stretch ?? {} } as TiledSettings;
  const raw = rawConfigOf(tiled);
  if (!raw.ok) return raw;
  // config.yaml records the shared blocks as they ran (Raw Stack defaults filled in).
  const c = raw.config;
  tiled.astrometry = { ...c.astrometry, enabled: c.postprocess.astrometry };
  tiled.bge = { ...c.bge, method: c.postprocess.bge ? c.bge.method : 'none' };
  tiled.pcc = { ...c.pcc, enabled: c.postprocess.pcc };
  tiled.hypermetric_stretch = { ...c.hypermetric_stretch, enabled: c.postprocess.hypermetric_stretch };
  return { ok: true, config: { tiled, raw: c } };
}

function rawConfigOf(t: TiledSettings): { ok: true; config: RawStackConfig } | { ok: false; issues: ConfigIssue[] } {
  const { bias_dir, darks_dir, flats_dir, darkflats_dir, ...calibration } = t.calibration as Record<string, unknown>;
  const s = t.stacking;
  const patch: Record<string, unknown> = {
    lights_dir: t.input.input_dir,
    pattern: t.input.pattern,
    max_frames: t.input.max_frames,
    input_mode: t.input.input_mode,
    bayer_pattern: t.input.bayer_pattern,
    checksums: t.input.checksums,
    bias_dir: bias_dir ?? '',
    darks_dir: darks_dir ?? '',
    flats_dir: flats_dir ?? '',
    darkflats_dir: darkflats_dir ?? '',
    frames_min: 1,
    run_name: t.output.run_name,
    runs_dir: t.output.runs_dir,
    calibration,
    quality_filter: { mode: 'off' },
    // With a weight field (weight_mode local or global) the noise-model bounds seed the pre-mask
    // and bound the weight-field stack's rejection too (stages/stacking/weightfield.ts), as in
    // Raw Stack: sample bounds clipped the sharp frames' cores where most frames are soft.
    rejection: { method: rejectionMethod(s.method), low: s.sigma_clip.sigma_low, high: s.sigma_clip.sigma_high, max_iters: s.sigma_clip.max_iters, min_fraction: s.sigma_clip.min_fraction, bounds: s.rejection_bounds, seeing_tolerance: s.seeing_tolerance },
    stacking: {
      normalization: t.normalization.enabled ? t.normalization.mode : 'none',
      weighting: 'uniform',
      cosmetic_correction: s.cosmetic_correction,
      cosmetic_correction_sigma: s.cosmetic_correction_sigma,
      per_frame_cosmetic_correction: s.per_frame_cosmetic_correction,
      per_frame_cosmetic_correction_sigma: s.per_frame_cosmetic_correction_sigma,
      local_normalization: s.local_normalization,
      local_normalization_cells: s.local_normalization_cells,
      local_normalization_scale: s.local_normalization_scale,
    },
    runtime_limits: { parallel_workers: t.runtime_limits.parallel_workers, memory_budget: t.runtime_limits.memory_budget },
    report: { formats: t.report.formats },
    // Calibrated frames are what every phase after CALIBRATION reads: kept for a resume unless switched off.
    output: { keep_calibrated_frames: t.resume.keep_intermediates },
  };
  for (const block of ['astrometry', 'bge', 'pcc', 'hypermetric_stretch'] as const) {
    const b = { ...t[block] };
    delete b.enabled;
    patch[block] = b;
  }
  const { star_soft_count } = t.tile;
  if (star_soft_count !== undefined) patch.tile = { star_soft_count };
  const on = (v: unknown) => v !== false;
  patch.postprocess = {
    astrometry: on(getPath(t, 'astrometry.enabled')),
    bge: getPath(t, 'bge.method') !== 'none',
    pcc: on(getPath(t, 'pcc.enabled')),
    hypermetric_stretch: on(getPath(t, 'hypermetric_stretch.enabled')),
  };
  const r = RawStackConfigSchema.safeParse(mergeLayers(patch));
  if (!r.success) return { ok: false, issues: issuesOf(r.error) };
  return { ok: true, config: r.data };
}
