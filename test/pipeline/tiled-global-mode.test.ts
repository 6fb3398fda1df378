// GLOBAL_METRICS's G in mode quality (the default): Raw Stack's quality weights of the same frames
// (the inverse-variance form q = s/(1 − s) of each frame's quality score, mean 1), raised to
// quality_power and renormalised; in mode formula the predecessor's exp(k · clip(Q)) of the
// recorded quality Q; global_metrics.json records the mode, the frames' scores and G.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateDataset } from '../../fixtures/generator/index.js';
import { qualityWeights } from '../../src/algorithms/frame-metrics.js';
import { runTiled } from '../../src/pipeline/tiled/run.js';
import { smallTiledConfig } from '../helpers/tiled-config.js';
import { withTempDir } from '../helpers/tmp.js';

interface GlobalJson {
  mode: string;
  formula: string;
  metrics: { index: number; frame_quality_score: number; quality_score: number; global_weight: number }[];
}

test('global_metrics.mode quality: G is Raw Stack quality weight to the power quality_power, mean 1; mode formula: exp(k · clip(Q))', () =>
  withTempDir('tiled-gmode', async (dir) => {
    const data = join(dir, 'data');
    await generateDataset({ out: data, kind: 'mono', frames: 10, width: 224, height: 160, seed: 33, calibration: false, badFrames: 'none', starDensity: 8000 });
    const run = async (name: string, power: number, mode = 'quality') => {
      const cfg = smallTiledConfig(data, join(dir, 'runs'), name, { global_metrics: { mode, quality_power: power } }, false);
      const res = await runTiled(cfg, { device: 'cpu' });
      assert.is(res.status, 'ok', JSON.stringify(res.phases));
      return JSON.parse(await readFile(join(res.runDir, 'artifacts', 'global_metrics.json'), 'utf8')) as GlobalJson;
    };
    for (const power of [1, 2]) {
      const g = await run(`p${power}`, power);
      assert.is(g.mode, 'quality');
      assert.match(g.formula, /Raw Stack quality weights/);
      const scores = g.metrics.map((m) => m.frame_quality_score);
      assert.ok(Math.max(...scores) - Math.min(...scores) > 0.05, `the frames' scores differ: ${scores}`);
      const q = qualityWeights(scores, scores.map(() => true)).map((w) => w ** power);
      const mean = q.reduce((a, b) => a + b, 0) / q.length;
      g.metrics.forEach((m, i) => assert.ok(Math.abs(m.global_weight - q[i]! / mean) <= 2e-3 * (q[i]! / mean) + 1e-4, `power ${power}, frame ${m.index}: G ${m.global_weight} vs ${q[i]! / mean}`));
      const gMean = g.metrics.reduce((a, m) => a + m.global_weight, 0) / g.metrics.length;
      assert.ok(Math.abs(gMean - 1) < 1e-3, `mean G ${gMean}`);
    }
    // Mode formula: G = exp(1.5 · clip(Q, [−3, 3])) of the recorded Q, not mean 1.
    const f = await run('formula', 1, 'formula');
    assert.is(f.mode, 'formula');
    assert.match(f.formula, /^G = exp\(k \* clip\(Q\)\)/);
    assert.ok(f.metrics.some((m) => Math.abs(m.quality_score) > 0.05), 'the frames differ in Q');
    for (const m of f.metrics) assert.ok(Math.abs(m.global_weight - Math.exp(1.5 * Math.min(3, Math.max(-3, m.quality_score)))) <= 1e-4 * m.global_weight + 1e-4, `frame ${m.index}: G ${m.global_weight}, Q ${m.quality_score}`);
  }),
);

test.run();
