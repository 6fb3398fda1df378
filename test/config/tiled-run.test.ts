// The tiled YAML schema and its resolution for a run: a predecessor-style file validates (its
// unknown keys are warnings, `rej` is accepted), every block the workflow reads has its defaults
// (tile defaults as the reference: 32 / 64 / 6 / 0.25 / 10), ranges and enums are errors with
// their line, overrides apply by dotted path, and the derived Raw Stack configuration carries
// the input, the calibration folders (dark matching keys included), the rejection and the
// postprocess switches; the quality filter is off (frames are weighted, not dropped).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { resolveTiledConfig } from '../../src/config/tiled-run.js';
import { tiledJsonSchema, validateTiledYaml } from '../../src/config/tiled.js';

const PREDECESSOR = `
pipeline: { mode: classic }
assumptions: { frames_reduced_threshold: 200, frames_min: 50 }
normalization: { enabled: true, mode: background, per_channel: true }
global_metrics:
  weights: { background: 0.4, noise: 0.3, gradient: 0.3 }
  clamp: [-3, 3]
tile: { size_factor: 32, min_size: 64, max_divisor: 6, overlap_fraction: 0.25, star_min_count: 10 }
synthetic: { weighting: global, frames_min: 5, frames_max: 30 }
stacking:
  method: rej
  sigma_clip: { sigma_low: 2.0, sigma_high: 2.0, max_iters: 3, min_fraction: 0.5 }
runtime_limits: { parallel_workers: 4, memory_budget: 512, allow_emergency_mode: false }
`;

test('a predecessor file validates: unknown keys are warnings with their lines, known values pass', () => {
  const v = validateTiledYaml(PREDECESSOR);
  assert.is(v.ok, true, JSON.stringify(v.errors));
  const warned = v.warnings.map((w) => [w.path, w.line]);
  for (const p of [['pipeline', 2], ['assumptions.frames_min', 3], ['normalization.per_channel', 4], ['global_metrics.weights.gradient', 6], ['runtime_limits.allow_emergency_mode', 13]]) {
    assert.ok(warned.some(([path, line]) => path === p[0] && line === p[1]), `${p[0]} warned at line ${p[1]}: ${JSON.stringify(warned)}`);
  }
  const r = resolveTiledConfig(v.config);
  assert.ok(r.ok);
  if (!r.ok) return;
  assert.equal([r.config.raw.rejection.method, r.config.raw.rejection.low, r.config.raw.rejection.min_fraction, r.config.raw.stacking.normalization], ['sigma', 2, 0.5, 'background']);
  assert.equal(r.config.tiled.global_metrics.weights, { background: 0.4, noise: 0.3, transparency: 0.2, fwhm: 0.4 });
});

test('defaults of every tiled block; the tile block as the reference', () => {
  const r = resolveTiledConfig({});
  assert.ok(r.ok);
  if (!r.ok) return;
  const t = r.config.tiled;
  assert.equal([t.tile.size_factor, t.tile.min_size, t.tile.max_divisor, t.tile.overlap_fraction, t.tile.star_min_count], [32, 64, 6, 0.25, 10]);
  assert.equal([t.local_metrics.min_frames, t.local_metrics.star_mode.weights, t.local_metrics.structure_mode, t.local_metrics.clamp], [8, { fwhm: 0.6, roundness: 0, contrast: 0 }, { metric_weight: 0.7, background_weight: 0.3 }, [-3, 3]]);
  assert.equal([t.local_metrics.star_mode.fwhm_map, t.local_metrics.star_mode.fwhm_z_floor, t.local_metrics.star_mode.fwhm_penalty, t.local_metrics.star_mode.fwhm_reference_quantile, t.local_metrics.star_mode.fwhm_deadband], ['local', undefined, 4, 0.1, 0.03]);
  assert.equal([t.global_metrics.mode, t.global_metrics.quality_power], ['quality', 1]);
  assert.equal([t.stacking.method, t.stacking.weight_mode, t.assumptions.frames_reduced_threshold, t.synthetic.enabled, t.validation.max_seam_score], ['sigma', 'local', 200, true, 1.1]);
  assert.is(r.config.raw.quality_filter.mode, 'off');
  assert.equal(r.config.raw.postprocess, { astrometry: true, bge: true, pcc: true, hypermetric_stretch: true });
  // The schema the API serves describes the tiled-only blocks.
  const schema = tiledJsonSchema() as { properties: Record<string, unknown> };
  for (const b of ['input', 'calibration', 'global_metrics', 'tile', 'local_metrics', 'synthetic', 'assumptions', 'stacking', 'validation']) assert.ok(b in schema.properties, b);
});

test('ranges and enums are errors with their line; overrides by dotted path; calibration and postprocess reach the Raw Stack keys', () => {
  const v = validateTiledYaml('tile:\n  overlap_fraction: 0.7\nstacking:\n  weight_mode: best\nglobal_metrics:\n  clamp: [3, -3]\n');
  assert.is(v.ok, false);
  assert.equal(v.errors.map((e) => [e.path, e.line]).sort((a, b) => Number(a[1]) - Number(b[1])), [['tile.overlap_fraction', 2], ['stacking.weight_mode', 4], ['global_metrics.clamp', 6]]);
  const r = resolveTiledConfig(
    { input: { input_dir: '/data/lights', pattern: '*.fit' }, calibration: { darks_dir: '/data/darks', dark_match_exposure_tolerance_percent: 3 }, bge: { method: 'none' }, pcc: { enabled: false } },
    { 'calibration.flats_dir': '/data/flats', 'stacking.method': 'average', 'tile.size_factor': 20 },
  );
  assert.ok(r.ok);
  if (!r.ok) return;
  const raw = r.config.raw;
  assert.equal([raw.lights_dir, raw.pattern, raw.darks_dir, raw.flats_dir, raw.calibration.dark_match_exposure_tolerance_percent, raw.rejection.method], ['/data/lights', '*.fit', '/data/darks', '/data/flats', 3, 'none']);
  assert.equal([raw.postprocess.bge, raw.postprocess.pcc, raw.postprocess.astrometry], [false, false, true]);
  assert.is(r.config.tiled.tile.size_factor, 20);
  const bad = resolveTiledConfig({}, { 'tile.min_size': 4 });
  assert.is(bad.ok, false);
});

test('local_metrics.star_mode: the seeing map is an enum, its z floor a bounded number', () => {
  const v = validateTiledYaml('local_metrics:\n  star_mode:\n    fwhm_map: spline\n    fwhm_z_floor: 0\n');
  assert.is(v.ok, false);
  assert.equal(v.errors.map((e) => e.path).sort(), ['local_metrics.star_mode.fwhm_map', 'local_metrics.star_mode.fwhm_z_floor']);
  const r = resolveTiledConfig({ local_metrics: { star_mode: { fwhm_map: 'surface', fwhm_z_floor: 0.1 } } });
  assert.ok(r.ok);
  if (!r.ok) return;
  assert.equal([r.config.tiled.local_metrics.star_mode.fwhm_map, r.config.tiled.local_metrics.star_mode.fwhm_z_floor, r.config.tiled.local_metrics.star_mode.weights.fwhm], ['surface', 0.1, 0.6]);
});

test.run();
