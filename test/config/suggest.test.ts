// The parameter suggestion rules (src/config/suggest.ts), apart from the route that gathers the
// facts: memory from free RAM in 64 MiB steps, workers from cores, rejection from the frame count,
// BGE tile size from the FWHM capped by the short side, frames_min only when too few frames.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { defaultRawStackConfig } from '../../src/config/rawstack.js';
import { rejectionFor, suggestParameters } from '../../src/config/suggest.js';

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

test.run();
