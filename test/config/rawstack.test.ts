import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { defaultRawStackConfig, parseRawStackConfig, rawStackJsonSchema } from '../../src/config/rawstack.js';
import { mergeLayers, setPath } from '../../src/config/merge.js';

test('defaults follow the seed tables', () => {
  const c = defaultRawStackConfig();
  assert.equal([c.pattern, c.max_frames, c.input_mode, c.bayer_pattern, c.run_name], ['*.fits', 0, 'auto', 'auto', '']);
  assert.equal(c.quality_filter, { mode: 'auto', min_stars: 30, min_correlation: 0.75, max_fwhm_sigma: 2.0, max_eccentricity: 0.65, min_relative_transparency: 0.6, relative_fallback: true, manual_overrides: {} });
  assert.equal([c.rejection.method, c.rejection.low, c.rejection.high, c.rejection.max_iters, c.rejection.min_fraction], ['sigma', 3, 3, 3, 0.4]);
  assert.equal([c.stacking.normalization, c.stacking.weighting], ['addscale', 'quality']);
  // Stacking under real skies (docs/stacking-quality.md): both on by default.
  assert.equal([c.stacking.local_normalization, c.stacking.local_normalization_cells, c.stacking.local_normalization_scale], [true, 16, 'none']);
  assert.equal([c.rejection.bounds, c.rejection.seeing_tolerance], ['noise_model', 1]);
  assert.equal(c.postprocess, { astrometry: true, bge: true, pcc: true, hypermetric_stretch: true });
  assert.is(c.calibration.dark_match_exposure_tolerance_percent, 8);
  const h = c.hypermetric_stretch;
  assert.equal(
    [h.require_successful_pcc, h.mode, h.sensor_profile, h.fallback_profile, h.adaptive_anchor, h.target_bg, h.protect_b, h.convergence_power, h.log_d_mode, h.color_strategy, h.color_grip, h.output_rgb],
    [true, 'ready_to_use', 'rec709', 'rec709', true, 0.15, 6.0, 3.5, 'auto', 'fixed', 1.0, 'stacked_rgb_hms.fits'],
  );
  assert.equal(c.report.formats, ['json', 'markdown', 'html']);
});

test('aliases and case: cfa_osc, mono, rggb, SIGMA', () => {
  const r = parseRawStackConfig({ input_mode: 'cfa_osc', bayer_pattern: 'rggb', rejection: { method: 'SIGMA' }, quality_filter: { mode: 'Strict' } });
  assert.ok(r.ok);
  if (r.ok) assert.equal([r.config.input_mode, r.config.bayer_pattern, r.config.rejection.method, r.config.quality_filter.mode], ['OSC', 'RGGB', 'sigma', 'strict']);
  const m = parseRawStackConfig({ input_mode: 'mono' });
  assert.ok(m.ok && m.config.input_mode === 'MONO');
});

test('unknown keys and bad values are errors naming the path', () => {
  const r = parseRawStackConfig({ bogus: 1, rejection: { low: -1, extra: true }, queue: [{ filter: 'Ha', input_dir: '' }], hypermetric_stretch: { output_rgb: '../x.fits' } });
  assert.not.ok(r.ok);
  if (!r.ok) {
    const paths = r.issues.map((i) => `${i.path}:${i.code}`).sort();
    assert.equal(paths, ['bogus:unknown_key', 'hypermetric_stretch.output_rgb:invalid_format', 'queue.0.input_dir:too_small', 'rejection.extra:unknown_key', 'rejection.low:too_small']);
  }
  assert.not.ok(parseRawStackConfig({ max_frames: 1.5 }).ok);
  assert.not.ok(parseRawStackConfig({ stacking: { normalization: 'magic' } }).ok);
  assert.not.ok(parseRawStackConfig({ stacking: { local_normalization_cells: 1 } }).ok);
  assert.not.ok(parseRawStackConfig({ stacking: { local_normalization_cells: 65 } }).ok);
  assert.not.ok(parseRawStackConfig({ stacking: { local_normalization_scale: 'grid' } }).ok);
  assert.not.ok(parseRawStackConfig({ rejection: { bounds: 'mad' } }).ok);
  assert.not.ok(parseRawStackConfig({ rejection: { seeing_tolerance: -0.1 } }).ok);
  assert.not.ok(parseRawStackConfig({ rejection: { seeing_tolerance: 4.5 } }).ok);
  const ok = parseRawStackConfig({ rejection: { bounds: 'Sample', seeing_tolerance: 0 }, stacking: { local_normalization: false, local_normalization_scale: 'PLANE' } });
  assert.ok(ok.ok && ok.config.rejection.bounds === 'sample' && ok.config.rejection.seeing_tolerance === 0 && ok.config.stacking.local_normalization_scale === 'plane');
  assert.not.ok(parseRawStackConfig('not an object').ok);
});

test('queue entries default active to true', () => {
  const r = parseRawStackConfig({ queue: [{ filter: 'R', input_dir: '/data/r' }, { filter: 'G', input_dir: '/data/g', active: false }] });
  assert.ok(r.ok);
  if (r.ok) assert.equal(r.config.queue.map((q) => q.active), [true, false]);
});

test('precedence: form fields over editor JSON over stored over defaults', () => {
  const stored = { rejection: { low: 2.5 }, stacking: { weighting: 'uniform' } };
  const editor = { rejection: { low: 2.0, high: 4.0 }, postprocess: { bge: false } };
  const form = { rejection: { low: 3.5 }, postprocess: { bge: true }, lights_dir: '/data/lights' };
  const r = parseRawStackConfig(mergeLayers(defaultRawStackConfig(), stored, editor, form));
  assert.ok(r.ok);
  if (r.ok) {
    assert.equal([r.config.rejection.low, r.config.rejection.high, r.config.stacking.weighting, r.config.postprocess.bge, r.config.lights_dir], [3.5, 4.0, 'uniform', true, '/data/lights']);
  }
  // Arrays are replaced, not concatenated; undefined never overrides.
  const merged = mergeLayers({ report: { formats: ['json', 'html'] } }, { report: { formats: ['json'] } }, { report: { detailed: undefined } });
  assert.equal(merged, { report: { formats: ['json'] } });
  assert.throws(() => setPath({}, '__proto__.polluted', 1));
  const evil = JSON.parse('{"__proto__": {"polluted": true}}');
  mergeLayers({}, evil);
  assert.is(({} as Record<string, unknown>).polluted, undefined);
});

test('JSON schema for the editor lists every group with defaults', () => {
  const schema = rawStackJsonSchema() as { properties: Record<string, { default?: unknown; properties?: Record<string, { default?: unknown }> }> };
  for (const g of ['calibration', 'quality_filter', 'rejection', 'stacking', 'postprocess', 'astrometry', 'bge', 'tile', 'pcc', 'hypermetric_stretch', 'report', 'runtime_limits']) {
    assert.ok(schema.properties[g], g);
  }
  assert.is(schema.properties.rejection!.properties!.low!.default, 3);
  assert.is(schema.properties.pattern!.default, '*.fits');
});

test.run();
