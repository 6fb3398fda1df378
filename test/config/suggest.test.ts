// The parameter suggestion rules (src/config/suggest.ts), apart from the route that gathers the
// facts: memory from free RAM in 64 MiB steps, workers from cores, rejection from the frame count,
// BGE tile size from the FWHM capped by the short side, frames_min only when too few frames;
// for a tiled run the tiled keys: rejection by depth, weighting and clustering by frame count,
// the tile grid the measured seeing gives (the tile-grid rule itself).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { defaultRawStackConfig } from '../../src/config/rawstack.js';
import { rejectionFor, suggestParameters, suggestTiledParameters } from '../../src/config/suggest.js';
import { resolveTiledConfig } from '../../src/config/tiled-run.js';
import { tileGrid } from '../../src/pipeline/tiled/tile-grid.js';

const current = defaultRawStackConfig();
const at = (s: { path: string; value: unknown }[], path: string) => s.find((x) => x.path === path)?.value;

test('machine facts only: memory budget and workers, nothing about the data', () => {
  const r = suggestParameters(current, { freeMiB: 10_000, totalMiB: 16_000, cores: 8, frames: null, fwhm: null, shortSide: null });
  assert.equal(r.suggestions.map((s) => s.path), ['runtime_limits.memory_budget', 'runtime_limits.parallel_workers']);
  assert.is(at(r.suggestions, 'runtime_limits.memory_budget'), 4992, 'half of 10000 MiB in 64 MiB steps');
  assert.is(at(r.suggestions, 'runtime_limits.parallel_workers'), 7);
  assert.is(r.tileSize, null);
  // Bounds: at least 256 MiB and one worker.
  const small = suggestParameters(current, { freeMiB: 100, totalMiB: 512, cores: 1, frames: null, fwhm: null, shortSide: null });
  assert.equal([at(small.suggestions, 'runtime_limits.memory_budget'), at(small.suggestions, 'runtime_limits.parallel_workers')], [256, 1]);
});

test('frames and FWHM: rejection by depth, frames_min when below it, tile size 32 x FWHM capped at the short side / 6', () => {
  const r = suggestParameters(current, { freeMiB: 4096, totalMiB: 8192, cores: 4, frames: 3, fwhm: 2.5, shortSide: 300 });
  assert.equal([at(r.suggestions, 'rejection.method'), at(r.suggestions, 'rejection.low')], [rejectionFor(3).method, 3]);
  assert.is(at(r.suggestions, 'frames_min'), 3);
  assert.is(r.tileSize, 50, 'min(300 / 6, 32 x 2.5 = 80)');
  assert.match(r.suggestions.find((s) => s.path === 'tile.min_size')!.reason, /capped at 1\/6 of the short side/);
  const deep = suggestParameters(current, { freeMiB: 4096, totalMiB: 8192, cores: 4, frames: 60, fwhm: 2.5, shortSide: null });
  assert.equal([at(deep.suggestions, 'rejection.method'), at(deep.suggestions, 'rejection.low'), at(deep.suggestions, 'frames_min')], ['sigma', 2.5, undefined]);
  assert.is(deep.tileSize, 80);
});

test('tiled: tiled key paths; few frames: global weights and no clustering; the tile grid from FWHM and frame size', () => {
  const r0 = resolveTiledConfig({});
  assert.ok(r0.ok);
  if (!r0.ok) return;
  const t = r0.config.tiled;
  const grid = (w: number, h: number, f: number) => {
    const g = tileGrid(w, h, f, t.tile);
    return { tileSize: g.tileSize, tilesX: g.originsX.length, tilesY: g.originsY.length, overlapPx: g.overlapPx };
  };
  const few = suggestTiledParameters(t, { freeMiB: 4096, totalMiB: 8192, cores: 4, frames: 5, fwhm: 2.5, shortSide: 1200, width: 1600, height: 1200 }, grid);
  assert.equal(few.suggestions.map((s) => s.path), ['runtime_limits.memory_budget', 'runtime_limits.parallel_workers', 'stacking.method', 'stacking.sigma_clip.sigma_low', 'stacking.sigma_clip.sigma_high', 'stacking.weight_mode', 'synthetic.enabled', 'tile.min_size']);
  assert.equal([at(few.suggestions, 'stacking.method'), at(few.suggestions, 'stacking.weight_mode'), at(few.suggestions, 'synthetic.enabled')], ['median', 'global', false]);
  assert.match(few.suggestions.find((s) => s.path === 'stacking.weight_mode')!.reason, /below local_metrics\.min_frames = 8/);
  // 32 × 2.5 = 80 px within [64, 1200 / 6 = 200]: tiles of 80 px, overlap 20, stride 60.
  assert.is(few.tileSize, 80);
  assert.match(few.suggestions.find((s) => s.path === 'tile.min_size')!.reason, /27 × 20 tiles of 80 px overlapping by 20 px on 1600 × 1200/);
  // Applying the suggestion leaves the grid as it was (min_size = the tile size).
  assert.is(tileGrid(1600, 1200, 2.5, { ...t.tile, min_size: 80 }).tileSize, 80);
  // Many frames: local weights, clustering; a small seeing raises the tile to the minimum, a large one is capped.
  const deep = suggestTiledParameters(t, { freeMiB: 4096, totalMiB: 8192, cores: 4, frames: 300, fwhm: 1.2, shortSide: 600, width: 800, height: 600 }, grid);
  assert.equal([at(deep.suggestions, 'stacking.weight_mode'), at(deep.suggestions, 'synthetic.enabled'), at(deep.suggestions, 'stacking.sigma_clip.sigma_low'), deep.tileSize], ['local', true, 2.5, 64]);
  assert.match(deep.suggestions.find((s) => s.path === 'tile.min_size')!.reason, /raised to the minimum 64 px/);
  const capped = suggestTiledParameters(t, { freeMiB: 4096, totalMiB: 8192, cores: 4, frames: 20, fwhm: 6, shortSide: 600, width: 800, height: 600 }, grid);
  assert.is(capped.tileSize, 100, '32 × 6 = 192 capped at 600 / 6');
  assert.match(capped.suggestions.find((s) => s.path === 'tile.min_size')!.reason, /capped at 1\/6 of the short side/);
  // Without FWHM or size: no tile suggestion.
  assert.is(suggestTiledParameters(t, { freeMiB: 4096, totalMiB: 8192, cores: 4, frames: 20, fwhm: null, shortSide: null, width: null, height: null }, grid).tileSize, null);
});

test.run();
