// The tiled-workflow configuration YAML (docs/ARCHITECTURE.md "Configuration"; the workflow:
// docs/tiled-workflow.md): every block the tiled pipeline reads, with defaults, ranges and enums.
// Known blocks are validated strictly (types, ranges, enums); unknown blocks and unknown keys
// inside known blocks are warnings, so YAML files from the predecessor validate and import (its
// `stacking.method` values `rej` and `average` are accepted as sigma and mean). Every finding
// carries the YAML line and column of the offending node. Parsed without custom tags. The blocks
// Raw Stack shares (astrometry, bge, pcc, hypermetric_stretch, calibration) take Raw Stack's keys;
// their defaults come from the Raw Stack schema when a run resolves them (tiled-run.ts).

import { isMap, isPair, isScalar, LineCounter, parseDocument, type Document } from 'yaml';
import { z } from 'zod';
import { RawStackConfigSchema } from './rawstack.js';

const shape = RawStackConfigSchema.shape;
const sub = <K extends 'astrometry' | 'bge' | 'pcc' | 'hypermetric_stretch'>(k: K) => shape[k].unwrap().partial();
const weight = z.number().min(0).max(1);
const clamp = z.tuple([z.number(), z.number()]).refine(([lo, hi]) => lo < hi, 'clamp must be [low, high] with low < high');

const TileBlock = z.strictObject({
  size_factor: z.number().min(1).default(32).describe('tile size = size_factor × the measured seeing FWHM (px), before the limits'),
  min_size: z.number().int().min(16).default(64).describe('smallest tile size (px)'),
  max_divisor: z.number().int().min(1).default(6).describe('largest tile size = min(width, height) / max_divisor'),
  overlap_fraction: z.number().min(0).max(0.5).default(0.25).describe('overlap of neighbouring tiles, fraction of the tile size'),
  star_min_count: z.number().int().min(0).default(10).describe('a tile is a STAR tile when the median star count over frames reaches this'),
  star_soft_count: z.number().int().min(0).optional().describe('Raw Stack BGE key (imported; the tiled workflow does not read it)'),
});

export const TiledConfigSchema = z.strictObject({
  input: z
    .strictObject({
      input_dir: z.string().max(4096).default(''),
      pattern: z.string().max(256).default('*.fits').describe('";"-separated patterns selecting the lights'),
      max_frames: z.number().int().min(0).default(0).describe('0 = unlimited'),
      input_mode: z.enum(['auto', 'OSC', 'MONO']).default('auto'),
      bayer_pattern: z.enum(['auto', 'RGGB', 'GBRG', 'GRBG', 'BGGR']).default('auto'),
      checksums: z.boolean().default(false).describe('SHA-256 of every light during the scan (recorded in the phase records)'),
    })
    .prefault({})
    .describe('lights of the run'),
  calibration: z
    .strictObject({ ...shape.calibration.unwrap().shape, bias_dir: z.string().max(4096).default(''), darks_dir: z.string().max(4096).default(''), flats_dir: z.string().max(4096).default(''), darkflats_dir: z.string().max(4096).default('') })
    .prefault({})
    .describe('calibration frames and Raw Stack calibration keys (dark matching included)'),
  output: z.strictObject({ runs_dir: z.string().max(4096).default(''), run_name: z.string().max(128).default('') }).prefault({}),
  runtime_limits: z
    .strictObject({
      parallel_workers: z.number().int().min(1).max(256).default(2),
      memory_budget: z.number().int().min(64).max(1024 * 1024).default(1024).describe('MiB'),
      acceleration_backend: z.enum(['auto', 'cpu', 'gpu', 'software']).default('auto'),
    })
    .prefault({}),
  normalization: z
    .strictObject({
      enabled: z.boolean().default(true).describe('false: no photometric normalisation of the frames (mode none)'),
      mode: z.enum(['background', 'median', 'addscale', 'none']).default('addscale').describe('the stacking engine normalisation against the reference frame'),
    })
    .prefault({}),
  global_metrics: z
    .strictObject({
      mode: z
        .enum(['formula', 'quality'])
        .default('quality')
        .describe("how G is made: quality (default) = Raw Stack's quality weight (inverse-variance form of its quality score, mean 1): the tiled stack weighs whole frames exactly as Raw Stack does and L adds only the local differences (with local_metrics.star_mode.fwhm_penalty, exactly Raw Stack's weighting where seeing is flat across the field); formula = the predecessor's exp(k · clip(Q)) from the weights below (bench/RESULTS.md, tiled workflow)"),
      quality_power: z.number().positive().max(4).default(1).describe('mode quality: G = (Raw Stack quality weight)^p, renormalised to mean 1; p > 1 weighs the frames harder than Raw Stack does'),
      weights: z
        .strictObject({
          background: weight.default(0.2),
          noise: weight.default(0.2),
          transparency: weight.default(0.2),
          fwhm: weight.default(0.4),
        })
        .prefault({})
        .refine((w) => w.background + w.noise + w.transparency + w.fwhm > 0, 'at least one global weight must be > 0')
        .describe('mode formula: weights of −z(background), −z(noise), z(transparency), −z(FWHM) in the frame quality Q; normalised to sum 1'),
      clamp: clamp.default([-3, 3]),
      weight_exponent_scale: z.number().positive().max(10).default(1.5).describe('mode formula: G = exp(k · clip(Q)); 1.5 comes within ~0.5 % of the FWHM of Raw Stack quality weights where the seeing does not vary across the field (bench/tiled-quality.ts)'),
    })
    .prefault({}),
  tile: TileBlock.prefault({}),
  local_metrics: z
    .strictObject({
      min_frames: z.number().int().min(2).default(8).describe('below this many frames the local weights are off (global weights only), with a warning'),
      star_mode: z
        .strictObject({
          weights: z
            .strictObject({ fwhm: weight.default(0.6), roundness: weight.default(0), contrast: weight.default(0) })
            .prefault({})
            .describe("weights of the FWHM (z-score law only; fwhm_penalty replaces it), roundness and contrast (peak/σ) z-scores in a STAR tile's Q (the z-score law had 0.6/0.2/0.2). Roundness and contrast 0 by default: G carries the frame's roundness and transparency, and their z-scores, scaled by the frames' spread, perturb the weights where nothing differs (each left cloud-quadrant regions 0.02–0.09 % softer than Raw Stack's quality weights; bench/RESULTS.md)"),
          fwhm_map: z
            .enum(['local', 'surface', 'plane', 'tile'])
            .default('local')
            .describe("a tile's seeing for L: local = the frame's seeing surface (a robust quadratic FWHM map over all its stars; a plane or a constant with fewer) at the tile centre plus the Gaussian-weighted (bandwidth one tile) median of the nearby stars' residuals, shrunk by a prior of 3 stars; surface = the surface alone; plane = the surface, at most a plane; tile = the median FWHM of the tile's (pooled) stars (before issue 19's seeing map; bench/RESULTS.md)"),
          fwhm_penalty: z
            .number()
            .min(0)
            .max(50)
            .default(4)
            .describe("a > 0 (default 4): a STAR tile's FWHM term in L is −a·ln(F / the tile's median F over the frames), less fwhm_deadband in size, F the tile's FWHM relative to the frame's own reference (fwhm_reference_quantile), so L ∝ F^−a: a fixed law; where seeing is flat across the field the term is 0 and W = G (with global_metrics.mode quality: Raw Stack's weighting); 0: the z-score law wf·(−z(FWHM)) with fwhm_z_floor"),
          fwhm_deadband: z
            .number()
            .min(0)
            .max(1)
            .default(0.03)
            .describe("with fwhm_penalty > 0: |ln F| (F against the tile's median over the frames) up to this counts as 0 and beyond it less this: a soft threshold at the seeing map's frame-to-frame scatter (1–2 %), so where seeing is flat across the field W = G exactly"),
          fwhm_reference_quantile: z
            .number()
            .min(0)
            .max(1)
            .default(0.1)
            .describe("with fwhm_penalty > 0: a frame's reference seeing for its tiles' relative FWHM, this quantile of its tile FWHMs (its sharp part)"),
          fwhm_z_floor: z
            .number()
            .min(0.01)
            .max(1)
            .optional()
            .describe("z-score law (fwhm_penalty 0) only: floor of the FWHM z-score's scale, relative to the median; default 0.25 with fwhm_map tile, 0.10 with local, 0.08 with surface or plane (their estimates are less noisy)"),
        })
        .prefault({}),
      structure_mode: z.strictObject({ metric_weight: weight.default(0.7), background_weight: weight.default(0.3) }).prefault({}),
      clamp: clamp.default([-3, 3]),
    })
    .prefault({}),
  synthetic: z
    .strictObject({
      enabled: z.boolean().default(true).describe('state clustering into per-cluster weight tables (only at or above assumptions.frames_reduced_threshold frames)'),
      frames_min: z.number().int().min(1).default(5),
      frames_max: z.number().int().min(1).default(30),
      weighting: z.enum(['global', 'tile_weighted']).default('tile_weighted'),
      clustering: z.strictObject({ cluster_count_range: z.tuple([z.number().int().min(1), z.number().int().min(1)]).default([5, 30]) }).prefault({}),
    })
    .prefault({}),
  assumptions: z
    .strictObject({
      frames_reduced_threshold: z.number().int().min(1).default(200).describe('below this many frames: reduced mode (no state clustering)'),
      reduced_mode_skip_clustering: z.boolean().default(true),
    })
    .prefault({}),
  stacking: z
    .strictObject({
      method: z.enum(['sigma', 'winsor', 'median', 'mean', 'rej', 'average']).default('sigma').describe('rej = sigma, average = mean (predecessor names)'),
      weight_mode: z.enum(['local', 'global', 'uniform']).default('local').describe('local: per-tile weight field G·L; global: G only; uniform: all 1'),
      weighting: z.enum(['quality', 'uniform']).optional().describe('Raw Stack key (imported; the tiled workflow reads weight_mode)'),
      cosmetic_correction: z.boolean().default(false),
      cosmetic_correction_sigma: z.number().positive().default(5),
      per_frame_cosmetic_correction: z.boolean().default(false),
      per_frame_cosmetic_correction_sigma: z.number().positive().default(5),
      sigma_clip: z
        .strictObject({ sigma_low: z.number().positive().default(3), sigma_high: z.number().positive().default(3), max_iters: z.number().int().min(1).max(100).default(3), min_fraction: z.number().min(0).max(1).default(0.4) })
        .prefault({}),
      rejection_bounds: z.enum(['noise_model', 'sample']).default('noise_model').describe('noise_model: a sample is rejected beyond what camera noise and seeing explain; sample: the classic spread-of-samples bounds. With a weight field (weight_mode local, global) too, as in Raw Stack (the pre-mask\'s seeds and the weighted stack\'s rejection)'),
      seeing_tolerance: z.number().min(0).max(4).default(1).describe('fraction of a star\'s signal frames may differ by because of seeing (noise_model bounds)'),
      local_normalization: z.boolean().default(true).describe('match each frame\'s background to the reference\'s across the field before rejection'),
      local_normalization_cells: z.number().int().min(2).max(64).default(16).describe('local normalization grid cells along the long side'),
      local_normalization_scale: z.enum(['none', 'plane']).default('none').describe('plane: also fit a brightness tilt from star photometry'),
    })
    .prefault({}),
  validation: z
    .strictObject({
      min_fwhm_improvement_percent: z
        .number()
        .min(-100)
        .max(100)
        .default(-15)
        .describe('the stack FWHM must be at least this much below the median frame FWHM (negative: at most this much above); saturated stars left out of both; OSC: the frames are measured on the mosaic, so their FWHM is first scaled by what bilinear debayering does to the reference frame'),
      max_seam_score: z.number().positive().default(1.1).describe('tile-boundary gradient over the gradient beside it, pooled over the boundary lines'),
      require_no_tile_pattern: z.boolean().default(true),
    })
    .prefault({}),
  astrometry: sub('astrometry'),
  bge: sub('bge'),
  pcc: sub('pcc'),
  hypermetric_stretch: sub('hypermetric_stretch'),
  report: z.strictObject({ formats: z.array(z.enum(['json', 'markdown', 'html'])).min(1).default(['json', 'markdown', 'html']) }).prefault({}),
  resume: z
    .strictObject({
      keep_intermediates: z.boolean().default(true).describe('keep the calibrated frames (outputs/calibrated/) so a resume can start after CALIBRATION; false: they are removed when the run ends and the earliest phase a resume can start from is CALIBRATION'),
    })
    .prefault({})
    .describe('what a run keeps for a later resume (docs/tiled-workflow.md "Resume")'),
}).partial();

export type TiledConfig = z.output<typeof TiledConfigSchema>;

export interface Finding {
  path: string;
  message: string;
  line: number | null;
  column: number | null;
  code?: string;
}

export interface TiledValidation {
  ok: boolean;
  errors: Finding[];
  warnings: Finding[];
  /** The parsed document with unknown keys removed (for import), when there were no errors. */
  config: Record<string, unknown> | null;
  /** The parsed document as written. */
  document: unknown;
}

function position(doc: Document, counter: LineCounter, path: (string | number)[], key: boolean): { line: number | null; column: number | null } {
  // The node at `path` (or, for unknown keys, the key node itself); else its nearest ancestor.
  for (let n = path.length; n >= 0; n--) {
    const p = path.slice(0, n);
    let node: unknown;
    if (key && n === path.length && n > 0) {
      const parent = p.length > 1 ? doc.getIn(p.slice(0, -1), true) : doc.contents;
      if (isMap(parent)) node = parent.items.find((it) => isPair(it) && isScalar(it.key) && String(it.key.value) === String(p[p.length - 1]))?.key;
    } else {
      node = p.length === 0 ? doc.contents : doc.getIn(p, true);
    }
    const range = (node as { range?: [number, number, number] } | undefined)?.range;
    if (range) {
      const pos = counter.linePos(range[0]);
      return { line: pos.line, column: pos.col };
    }
  }
  return { line: null, column: null };
}

function isObj(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Known keys of a zod object schema (through optional/partial wrappers). */
function objectShape(s: z.ZodType): Record<string, z.ZodType> | null {
  let cur: z.ZodType = s;
  for (let i = 0; i < 5; i++) {
    if (cur instanceof z.ZodObject) return cur.shape as Record<string, z.ZodType>;
    if (cur instanceof z.ZodOptional || cur instanceof z.ZodDefault || cur instanceof z.ZodPrefault || cur instanceof z.ZodNullable) cur = cur.unwrap() as z.ZodType;
    else return null;
  }
  return null;
}

/** Removes unknown keys (recording them) so the strict schema only judges known ones. */
function prune(value: Record<string, unknown>, schema: z.ZodType, path: string[], unknown: string[][]): Record<string, unknown> {
  const known = objectShape(schema);
  if (!known) return value;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(value)) {
    const child = known[k];
    if (!child) {
      unknown.push([...path, k]);
      continue;
    }
    out[k] = isObj(v) && objectShape(child) ? prune(v, child, [...path, k], unknown) : v;
  }
  return out;
}

export const YAML_LIMIT = 1024 * 1024;

export function validateTiledYaml(text: string): TiledValidation {
  const counter = new LineCounter();
  const doc = parseDocument(text, { lineCounter: counter, customTags: [], uniqueKeys: true, prettyErrors: false });
  const errors: Finding[] = [];
  const warnings: Finding[] = [];
  for (const e of doc.errors) {
    const pos = e.linePos?.[0] ?? counter.linePos(e.pos[0]);
    errors.push({ path: '', code: 'yaml_syntax', message: e.message.split('\n')[0]!, line: pos?.line ?? null, column: pos?.col ?? null });
  }
  for (const w of doc.warnings) {
    const pos = w.linePos?.[0] ?? counter.linePos(w.pos[0]);
    warnings.push({ path: '', code: 'yaml_warning', message: w.message.split('\n')[0]!, line: pos?.line ?? null, column: pos?.col ?? null });
  }
  if (errors.length > 0) return { ok: false, errors, warnings, config: null, document: null };
  let value: unknown;
  try {
    value = doc.toJS({ maxAliasCount: 100 });
  } catch (e) {
    return { ok: false, errors: [{ path: '', code: 'yaml_syntax', message: (e as Error).message.split('\n')[0]!, line: null, column: null }], warnings, config: null, document: null };
  }
  if (value === null || value === undefined) value = {};
  if (!isObj(value)) {
    const pos = position(doc, counter, [], false);
    return { ok: false, errors: [{ path: '', code: 'invalid_type', message: 'the configuration must be a mapping of blocks', ...pos }], warnings, config: null, document: value };
  }
  // A run's config.yaml used as a configuration: what ran it (`_runtime`) is not a block.
  delete value._runtime;
  const unknown: string[][] = [];
  const pruned = prune(value, TiledConfigSchema, [], unknown);
  for (const p of unknown) {
    warnings.push({ path: p.join('.'), code: p.length === 1 ? 'unknown_block' : 'unknown_key', message: p.length === 1 ? `unknown block "${p[0]}" (ignored)` : `unknown key "${p.join('.')}" (ignored)`, ...position(doc, counter, p, true) });
  }
  const r = TiledConfigSchema.safeParse(pruned);
  if (!r.success) {
    for (const issue of r.error.issues) {
      const path = issue.path.map((x) => (typeof x === 'symbol' ? String(x) : x));
      errors.push({ path: path.join('.'), code: issue.code, message: issue.message, ...position(doc, counter, path, false) });
    }
  }
  return { ok: errors.length === 0, errors, warnings, config: errors.length === 0 ? pruned : null, document: value };
}

export function tiledJsonSchema(): unknown {
  return z.toJSONSchema(TiledConfigSchema, { io: 'input', unrepresentable: 'any' });
}
