import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parse } from 'yaml';
import { defaultRawStackConfig } from '../../src/config/rawstack.js';
import { importFromTiled } from '../../src/config/tiled-import.js';

const base = defaultRawStackConfig();
const get = (o: unknown, p: string) => p.split('.').reduce<unknown>((n, k) => (n as Record<string, unknown>)?.[k], o);

// One case per row of the seed's import table: source path, source value, target path, expected value.
const ROWS: [string, unknown, string, unknown][] = [
  ['runtime_limits.parallel_workers', 6, 'runtime_limits.parallel_workers', 6],
  ['runtime_limits.memory_budget', 2048, 'runtime_limits.memory_budget', 2048],
  ['normalization.mode', 'median', 'stacking.normalization', 'median'],
  ['stacking.weighting', 'uniform', 'stacking.weighting', 'uniform'],
  ['stacking.cosmetic_correction', true, 'stacking.cosmetic_correction', true],
  ['stacking.cosmetic_correction_sigma', 4.5, 'stacking.cosmetic_correction_sigma', 4.5],
  ['stacking.per_frame_cosmetic_correction', true, 'stacking.per_frame_cosmetic_correction', true],
  ['stacking.per_frame_cosmetic_correction_sigma', 6, 'stacking.per_frame_cosmetic_correction_sigma', 6],
  ['stacking.sigma_clip.sigma_low', 2.5, 'rejection.low', 2.5],
  ['stacking.sigma_clip.sigma_high', 3.5, 'rejection.high', 3.5],
  ['stacking.sigma_clip.max_iters', 5, 'rejection.max_iters', 5],
  ['stacking.sigma_clip.min_fraction', 0.3, 'rejection.min_fraction', 0.3],
  ['astrometry.search_radius', 15, 'astrometry.search_radius', 15],
  ['astrometry.enabled', false, 'postprocess.astrometry', false],
  ['bge.sample_quantile', 0.3, 'bge.sample_quantile', 0.3],
  ['bge.method', 'none', 'postprocess.bge', false],
  ['bge.method', 'classic', 'postprocess.bge', true],
  ['bge.method', 'autobge', 'postprocess.bge', true],
  ['tile.size_factor', 40, 'tile.size_factor', 40],
  ['pcc.mag_limit', 12, 'pcc.mag_limit', 12],
  ['pcc.enabled', false, 'postprocess.pcc', false],
  ['hypermetric_stretch.target_bg', 0.2, 'hypermetric_stretch.target_bg', 0.2],
  ['hypermetric_stretch.enabled', false, 'postprocess.hypermetric_stretch', false],
];

for (const [from, value, to, expected] of ROWS) {
  test(`import row ${from} = ${JSON.stringify(value)} -> ${to}`, () => {
    const tiled: Record<string, unknown> = {};
    const keys = from.split('.');
    let node = tiled;
    for (const k of keys.slice(0, -1)) node = (node[k] = {}) as Record<string, unknown>;
    node[keys[keys.length - 1]!] = value;
    const r = importFromTiled(tiled, base);
    assert.equal(r.ignored, []);
    assert.equal(get(r.config, to), expected);
    assert.ok(r.mapped.some((m) => m.from === from && m.to === to));
  });
}

test('a realistic tiled YAML: mapped keys applied, tiled-only blocks and unknown keys ignored, not imported', () => {
  const yaml = `
pipeline: { mode: classic }
normalization: { mode: background }
stacking:
  method: rej
  weighting: quality
  sigma_clip: { sigma_low: 2.0, sigma_high: 4.0 }
tile: { size_factor: 24, magic: 3 }
synthetic: { frames: 10 }
bge: { method: none, mystery_knob: 1 }
hypermetric_stretch: { enabled: true, protect_b: 8 }
runtime_limits: { parallel_workers: 8, memory_budget: 4096 }
registration: { engine: triangle_star_matching }
`;
  const r = importFromTiled(parse(yaml), base);
  const c = r.config;
  assert.equal([c.stacking.normalization, c.rejection.low, c.rejection.high, c.tile.size_factor, c.postprocess.bge, c.postprocess.hypermetric_stretch, c.hypermetric_stretch.protect_b, c.runtime_limits.parallel_workers], ['background', 2, 4, 24, false, true, 8, 8]);
  assert.equal(r.ignored.map((i) => i.path).sort(), ['bge.mystery_knob', 'tile.magic']);
  // Tiled-only blocks (synthetic, registration, pipeline) are simply not imported.
  assert.not.ok(r.mapped.some((m) => /^(synthetic|registration|pipeline)/.test(m.from)));
  assert.is(c.stacking.weighting, 'quality');
});

test('stacking under real skies: the tiled stacking block carries local normalization and the rejection bounds', () => {
  const yaml = `
stacking:
  rejection_bounds: sample
  seeing_tolerance: 0.5
  local_normalization: false
  local_normalization_cells: 8
  local_normalization_scale: plane
`;
  const r = importFromTiled(parse(yaml), base);
  const c = r.config;
  assert.equal([c.rejection.bounds, c.rejection.seeing_tolerance, c.stacking.local_normalization, c.stacking.local_normalization_cells, c.stacking.local_normalization_scale], ['sample', 0.5, false, 8, 'plane']);
  assert.equal(r.ignored, []);
  const bad = importFromTiled(parse('stacking: { local_normalization_cells: 100, seeing_tolerance: 0.5 }'), base);
  assert.equal(bad.ignored.map((i) => i.path), ['stacking.local_normalization_cells']);
  assert.is(bad.config.stacking.local_normalization_cells, 16);
  assert.is(bad.config.rejection.seeing_tolerance, 0.5);
});

test('values outside the allowed set or rejected by the schema are ignored with a reason; the rest still applies', () => {
  const r = importFromTiled({ normalization: { mode: 'linear_fit' }, stacking: { weighting: 'snr', sigma_clip: { sigma_low: -3, sigma_high: 2.5 } } }, base);
  assert.equal(r.ignored.map((i) => i.path).sort(), ['normalization.mode', 'stacking.sigma_clip.sigma_low', 'stacking.weighting']);
  assert.equal([r.config.stacking.normalization, r.config.stacking.weighting, r.config.rejection.low, r.config.rejection.high], ['addscale', 'quality', 3, 2.5]);
  assert.ok(r.ignored.find((i) => i.path === 'stacking.sigma_clip.sigma_low')!.reason.length > 0);
});

test.run();
