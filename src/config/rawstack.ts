// The Raw Stack parameter set (seed "Preprocessing parameter groups", docs/ARCHITECTURE.md "Configuration"):
// one zod schema that is the single source of defaults, validation, TypeScript types and the
// JSON Schema served to the parameter editor. Input/cfa_mono/registration keys sit at the top
// level, everything else nests by its dotted name. Unknown keys are errors naming their path.
// Defaults follow the seed where it states them and the predecessor's elsewhere; deliberate
// differences are noted at the key.

import { z } from 'zod';

/** Case-insensitive enum: the editor and old configs write `osc`, `Mono`, `rggb`... */
function looseEnum<const T extends readonly [string, ...string[]]>(values: T, aliases: Record<string, T[number]> = {}) {
  const byLower = new Map<string, T[number]>(values.map((v) => [v.toLowerCase(), v]));
  for (const [alias, target] of Object.entries(aliases)) byLower.set(alias.toLowerCase(), target);
  return z.preprocess((v) => (typeof v === 'string' ? (byLower.get(v.trim().toLowerCase()) ?? v) : v), z.enum(values));
}

const path = z.string().max(4096);

/**
 * Every FITS file name a calibration folder may hold (plain, gzip-compressed, fpack'd), in any
 * letter case: a calibration folder holds calibration frames only, so it takes them all.
 */
export const ANY_FITS_PATTERN = '*.fit;*.fits;*.fts;*.fit.gz;*.fits.gz;*.fts.gz;*.fz';

export const BAYER_PATTERN_VALUES = ['auto', 'RGGB', 'GBRG', 'GRBG', 'BGGR'] as const;
export const INPUT_MODE_VALUES = ['auto', 'OSC', 'MONO'] as const;

export const QueueEntrySchema = z.strictObject({
  filter: z.string().min(1).max(32).describe('channel label such as L, R, G, B, Ha; OSC for colour data'),
  input_dir: path.min(1).describe('folder with the lights of this channel'),
  pattern: z.string().max(256).optional().describe('file pattern for this channel (default: the run pattern)'),
  label: z.string().max(128).optional().describe('optional label of the entry'),
  active: z.boolean().default(true).describe('when false the entry is kept but skipped'),
});

const CalibrationSchema = z.strictObject({
  use_bias: z.boolean().default(true).describe('apply bias when a bias folder or master is configured'),
  use_dark: z.boolean().default(true).describe('apply darks when a dark folder or master is configured'),
  use_flat: z.boolean().default(true).describe('apply flats when a flat folder or master is configured'),
  use_darkflat: z.boolean().default(true).describe('subtract dark flats from flats when configured'),
  bias_use_master: z.boolean().default(false).describe('use bias_master (a master file) instead of bias_dir'),
  dark_use_master: z.boolean().default(false),
  flat_use_master: z.boolean().default(false),
  darkflat_use_master: z.boolean().default(false),
  bias_master: path.default(''),
  dark_master: path.default(''),
  flat_master: path.default(''),
  darkflat_master: path.default(''),
  pattern: z.string().max(256).default(ANY_FITS_PATTERN).describe('";"-separated patterns selecting calibration frames'),
  dark_auto_select: z.boolean().default(true).describe('filter darks by exposure time (and temperature) from the FITS headers'),
  dark_match_exposure_tolerance_percent: z.number().min(0).max(100).default(8),
  dark_match_use_temp: z.boolean().default(false),
  dark_match_temp_tolerance_c: z.number().min(0).max(50).default(3),
  master_rejection_sigma: z.number().positive().default(3).describe('kappa of the sigma-clipped mean that forms masters'),
  cosmetic_without_darks: z.boolean().default(true).describe('when no dark is applied: isolated hot and cold pixels of each light are replaced before star detection and stacking'),
  cosmetic_without_darks_sigma: z.number().positive().default(5).describe('outlier threshold (σ) of that cosmetic pass'),
});

const QualityFilterSchema = z.strictObject({
  mode: looseEnum(['auto', 'strict', 'relaxed', 'off']).default('auto').describe('auto: k = max_fwhm_sigma; strict: k = 1.5; relaxed: k = 3.0; off: no filtering'),
  min_stars: z.number().int().min(0).default(30),
  min_correlation: z.number().min(0).max(1).default(0.75),
  max_fwhm_sigma: z.number().positive().default(2.0),
  max_eccentricity: z.number().min(0).max(1).default(0.65),
  min_relative_transparency: z.number().min(0).max(1).default(0.6).describe('star count or median star flux below this fraction of the sequence median excludes a frame (auto, strict)'),
  relative_fallback: z.boolean().default(true).describe('when min_stars, max_eccentricity and min_correlation would exclude more than half of the frames (a systematic cause), rules relative to the sequence median decide instead, with a warning'),
  manual_overrides: z
    .record(z.string().min(1), z.union([z.boolean(), z.strictObject({ include: z.boolean(), index: z.number().int().min(0).optional(), filename: z.string().optional() })]))
    .default({})
    .describe('frame index or file name -> include (true) or exclude (false); wins over automatic decisions'),
});

const RejectionSchema = z.strictObject({
  method: looseEnum(['sigma', 'winsor', 'median', 'none']).default('sigma'),
  low: z.number().positive().default(3.0),
  high: z.number().positive().default(3.0),
  max_iters: z.number().int().min(1).max(100).default(3),
  min_fraction: z.number().min(0).max(1).default(0.4).describe('stop clipping when fewer than this fraction of the valid samples would remain'),
  bounds: looseEnum(['noise_model', 'sample']).default('noise_model').describe('how sigma and winsor judge a sample: noise_model (camera noise, shot noise and a seeing term, docs/stacking-quality.md) or sample (the spread of the samples themselves)'),
  seeing_tolerance: z.number().min(0).max(4).default(1).describe('noise_model: the fraction of a star\'s signal by which frames may differ because their seeing differs (0: camera noise only)'),
});

const StackingSchema = z.strictObject({
  normalization: looseEnum(['addscale', 'background', 'median', 'none']).default('addscale'),
  weighting: looseEnum(['quality', 'uniform']).default('quality'),
  cosmetic_correction: z.boolean().default(false).describe('final cosmetic correction of the stack'),
  cosmetic_correction_sigma: z.number().positive().default(5.0),
  per_frame_cosmetic_correction: z.boolean().default(false).describe('hot/cold pixel correction of each frame before warp and stack'),
  per_frame_cosmetic_correction_sigma: z.number().positive().default(5.0),
  local_normalization: z.boolean().default(true).describe('match each frame\'s background to the reference\'s across the field before rejection (on top of normalization; off when normalization is none)'),
  local_normalization_cells: z.number().int().min(2).max(64).default(16).describe('cells of the background grid along the long side'),
  local_normalization_scale: looseEnum(['none', 'plane']).default('none').describe('plane: also fit a scale tilt from star photometry (wide, star-rich fields)'),
});

const PostprocessSchema = z.strictObject({
  astrometry: z.boolean().default(true),
  bge: z.boolean().default(true),
  pcc: z.boolean().default(true),
  hypermetric_stretch: z.boolean().default(true),
});

const AstrometrySchema = z.strictObject({
  solver: looseEnum(['auto', 'astrometry_net', 'astap']).default('auto'),
  astrometry_net_bin: path.default('').describe('solve-field executable (empty: search PATH)'),
  astrometry_net_data_dir: path.default('').describe('index files folder (empty: the solver default)'),
  astap_bin: path.default(''),
  astap_data_dir: path.default(''),
  search_radius: z.number().min(0).max(180).default(180).describe('degrees around the header pointing; 180 = blind'),
  timeout_s: z.number().positive().max(3600).default(120),
  enabled: z.boolean().optional().describe('tiled-workflow key; presets postprocess.astrometry on import only'),
});

const BgeSchema = z.strictObject({
  method: looseEnum(['none', 'classic', 'autobge']).default('classic').describe('tiled-workflow on/off control; in Raw Stack postprocess.bge decides'),
  sample_quantile: z.number().min(0).max(1).default(0.2),
  min_valid_samples_for_apply: z.number().int().min(1).default(16),
  min_valid_sample_fraction: z.number().min(0).max(1).default(0.1),
  grid_cells: z.number().int().min(4).max(256).default(32).describe('N_g: coarse grid cells along the short side'),
  fit_method: looseEnum(['rbf', 'poly']).default('rbf'),
  poly_order: z.number().int().min(1).max(4).default(2),
  star_dilate_px: z.number().int().min(0).default(4),
  autobge: z
    .strictObject({
      num_sample_points: z.number().int().min(0).max(600).default(0).describe('0 = auto (tile stride, at most 400 samples)'),
      gradient_descent_max_iters: z.number().int().min(0).max(10000).default(100),
      downsample_scale: z.number().int().min(1).max(32).default(4).describe('block size (px) of the descent map'),
      border_margin: z.number().int().min(0).default(10).describe('px kept free of sample positions along the edges'),
      bright_reject_sigma: z.number().positive().default(3).describe('stage-one clip: samples this many robust sigmas above the polynomial trend are bright structure'),
    })
    .prefault({})
    .describe('sample placement of bge.method autobge (predecessor AutoBGE names)'),
});

const TileSchema = z.strictObject({
  size_factor: z.number().min(1).default(32),
  min_size: z.number().int().min(1).default(64),
  max_divisor: z.number().int().min(1).default(6),
  overlap_fraction: z.number().min(0).max(0.5).default(0.25),
  star_min_count: z.number().int().min(0).default(10),
  star_soft_count: z.number().int().min(0).default(10),
});

const PccSchema = z.strictObject({
  enabled: z.boolean().optional().describe('tiled-workflow key; presets postprocess.pcc on import only'),
  catalog_file: path.default('').describe('CSV ra,dec,mag,bv (or teff), or a KStars star file; empty: the installed catalogue package (kstars-data)'),
  mag_limit: z.number().default(14),
  mag_bright_limit: z.number().default(6),
  min_stars: z.number().int().min(3).default(10),
  max_condition_number: z.number().positive().default(3.0),
  max_residual_rms: z.number().positive().default(0.35),
  white_reference: z.string().default('G2V').describe('spectral type or B-V that comes out neutral'),
  min_aperture_px: z.number().positive().default(4),
  background_neutralization: z.boolean().default(true).describe('sky made neutral grey while star colours get the fitted factors'),
  min_slope: z.number().min(0).max(1).default(0.5).describe('image vs catalogue colour slope below which the fit is rejected (compressed or inverted colours)'),
  fallback: looseEnum(['none', 'star_white']).default('none').describe('without WCS, catalogue or enough stars: star_white = non-photometric white balance on the median star colour'),
});

export const SENSOR_PROFILES = ['rec709'] as const;

const HmsSchema = z.strictObject({
  enabled: z.boolean().optional().describe('tiled-workflow key; presets postprocess.hypermetric_stretch on import only'),
  require_successful_pcc: z.boolean().default(true),
  mode: looseEnum(['ready_to_use', 'scientific']).default('ready_to_use'),
  sensor_profile: z.string().default('rec709'),
  fallback_profile: z.string().default('rec709'),
  adaptive_anchor: z.boolean().default(true),
  target_bg: z.number().min(0).max(1).default(0.15),
  protect_b: z.number().min(0.1).default(6.0),
  convergence_power: z.number().min(1).max(10).default(3.5),
  log_d_mode: looseEnum(['auto', 'fixed']).default('auto'),
  fixed_log_d: z.number().min(0).max(7).default(2.0),
  color_strategy: looseEnum(['fixed', 'adaptive']).default('fixed'),
  fixed_color_strategy: z.number().min(-1).max(1).default(0),
  color_grip: z.number().min(0).max(1).default(1.0),
  shadow_convergence: z.number().min(0).default(0),
  linear_expansion: z.number().min(0).max(1).default(0),
  highlight_ceiling_percentile: z.number().min(90).max(100).default(100),
  write_channels: z.boolean().default(false),
  output_rgb: z
    .string()
    .min(1)
    .regex(/^[^/\\]+\.fits?$/, 'a file name ending in .fits or .fit, without folders')
    .default('stacked_rgb_hms.fits'),
});

const ReportSchema = z.strictObject({
  detailed: z.boolean().default(true),
  formats: z.array(looseEnum(['json', 'markdown', 'html'])).min(1).default(['json', 'markdown', 'html']),
});

const OutputSchema = z.strictObject({
  keep_calibrated_frames: z
    .boolean()
    .default(true)
    .describe('keep outputs/calibrated/cal_NNNNN.fit; false: calibrated frames live in a scratch folder of the run that is removed when the run ends'),
});

const RuntimeLimitsSchema = z.strictObject({
  parallel_workers: z.number().int().min(1).max(256).default(2).describe('concurrent file decoding and CPU work'),
  memory_budget: z.number().int().min(64).max(1024 * 1024).default(1024).describe('MiB for band buffers (GPU and host); sets band height'),
});

export const RawStackConfigSchema = z.strictObject({
  // input group (top level, docs/ARCHITECTURE.md "Configuration")
  lights_dir: path.default('').describe('folder with light FITS frames (required for a single-folder run)'),
  bias_dir: path.default(''),
  darks_dir: path.default(''),
  flats_dir: path.default(''),
  darkflats_dir: path.default(''),
  input_mode: looseEnum(INPUT_MODE_VALUES, { cfa_osc: 'OSC', color: 'OSC', colour: 'OSC' }).default('auto').describe('sensor type; auto reads COLORTYP, BAYERPAT, NAXIS'),
  raw_formats: z.array(looseEnum(['fits'], { fit: 'fits', fts: 'fits', tile_compile: 'fits' })).default(['fits']).describe('input formats; FITS only (.fit/.fits/.fts)'),
  // cfa_mono group
  bayer_pattern: looseEnum(BAYER_PATTERN_VALUES).default('auto'),
  cfa_mode: looseEnum(['bilinear', 'superpixel'], { tile_compile: 'bilinear' }).default('bilinear').describe('demosaicing of OSC frames before stacking'),
  mono_mode: looseEnum(['auto', 'mono']).default('auto'),
  // registration group
  registration_reference: looseEnum(['best_quality', 'temporal_midpoint']).default('best_quality'),
  // form fields named in the seed's prose
  pattern: z.string().min(1).max(256).default('*.fits').describe('simple glob selecting lights in the folder'),
  max_frames: z.number().int().min(0).default(0).describe('0 = unlimited'),
  frames_min: z.number().int().min(0).default(5).describe('below this a warning is logged (no abort)'),
  checksums: z.boolean().default(false).describe('SHA-256 of every input during the scan'),
  run_name: z.string().max(128).default(''),
  runs_dir: path.default(''),
  queue: z.array(QueueEntrySchema).default([]),
  // nested groups
  calibration: CalibrationSchema.prefault({}),
  quality_filter: QualityFilterSchema.prefault({}),
  rejection: RejectionSchema.prefault({}),
  stacking: StackingSchema.prefault({}),
  postprocess: PostprocessSchema.prefault({}),
  astrometry: AstrometrySchema.prefault({}),
  bge: BgeSchema.prefault({}),
  tile: TileSchema.prefault({}),
  pcc: PccSchema.prefault({}),
  hypermetric_stretch: HmsSchema.prefault({}),
  report: ReportSchema.prefault({}),
  output: OutputSchema.prefault({}),
  runtime_limits: RuntimeLimitsSchema.prefault({}),
});

export type RawStackConfig = z.output<typeof RawStackConfigSchema>;
export type RawStackConfigInput = z.input<typeof RawStackConfigSchema>;

export interface ConfigIssue {
  /** Dotted path of the offending key, e.g. `rejection.low` or `queue.0.input_dir`. */
  path: string;
  code: string;
  message: string;
}

export type ConfigResult = { ok: true; config: RawStackConfig } | { ok: false; issues: ConfigIssue[] };

export function issuesOf(error: z.ZodError): ConfigIssue[] {
  const out: ConfigIssue[] = [];
  for (const issue of error.issues) {
    const base = issue.path.map(String).join('.');
    if (issue.code === 'unrecognized_keys') {
      for (const key of issue.keys) out.push({ path: base ? `${base}.${key}` : key, code: 'unknown_key', message: `unknown key "${base ? `${base}.${key}` : key}"` });
    } else {
      out.push({ path: base, code: issue.code, message: issue.message });
    }
  }
  return out;
}

/** Validates and fills defaults. Never throws for bad input. */
export function parseRawStackConfig(input: unknown): ConfigResult {
  // An effective_config.json carries what ran it under `_runtime`; it is not a parameter.
  if (typeof input === 'object' && input !== null && !Array.isArray(input) && '_runtime' in input) {
    const { _runtime: _ignored, ...rest } = input as Record<string, unknown>;
    input = rest;
  }
  const r = RawStackConfigSchema.safeParse(input ?? {});
  return r.success ? { ok: true, config: r.data } : { ok: false, issues: issuesOf(r.error) };
}

/** The backend defaults (what the Reset button loads). */
export function defaultRawStackConfig(): RawStackConfig {
  return RawStackConfigSchema.parse({});
}

/** JSON Schema of the parameter set for the editor (inputs: defaults are optional there). */
export function rawStackJsonSchema(): unknown {
  return z.toJSONSchema(RawStackConfigSchema, { io: 'input', unrepresentable: 'any' });
}
