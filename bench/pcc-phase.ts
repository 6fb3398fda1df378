// `node dist/bench/pcc-phase.js [--width 2048 --height 1536] [--stars 800] [--repeat 3]`
// Times the PCC phase (phase_end duration_ms: reading the stack and the catalogue, photometry,
// fit, applying the factors, writing stacked_rgb_pcc.fits and the diagnostics) and the in-memory
// core (runPcc) on the PCC test fixture (test/astro/pcc-fixture.ts: stars at catalogue
// positions, OSC dye colours, known gains), for issue 7's "speed of both phases on a 2048×1536
// RGB stack". Prints one line per measurement; does not write bench/RESULTS.md.

import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { runPcc } from '../src/astro/pcc.js';
import { pccPhase } from '../src/pipeline/rawstack/phases/pcc.js';
import { catalogCsv, pccFixture } from '../test/astro/pcc-fixture.js';
import { withTempDir } from '../test/helpers/tmp.js';
import { config, runOn } from '../test/pipeline/postprocess-helpers.js';

const { values } = parseArgs({
  options: {
    width: { type: 'string', default: '2048' },
    height: { type: 'string', default: '1536' },
    stars: { type: 'string', default: '800' },
    repeat: { type: 'string', default: '3' },
  },
});
const width = Number(values.width);
const height = Number(values.height);
const repeat = Math.max(1, Number(values.repeat));
const fx = pccFixture({ width, height, stars: Number(values.stars), camera: 'osc_sensor', seed: 5 });

await withTempDir('bench-pcc', async (dir) => {
  const cat = join(dir, 'cat.csv');
  await writeFile(cat, catalogCsv(fx.stars));
  const phase: number[] = [];
  let used = 0;
  for (let r = 0; r < repeat; r++) {
    const cfg = config({ postprocess: { astrometry: false, bge: false, pcc: true, hypermetric_stretch: false }, pcc: { catalog_file: cat } });
    const run = await runOn(fx, cfg, join(dir, `run${r}`), [pccPhase], { header: fx.header });
    const end = run.end('PCC');
    if (end?.status !== 'ok') throw new Error(JSON.stringify(end));
    phase.push(end.duration_ms);
    used = Number(run.state.summaries.PCC?.stars_used);
  }
  const core: number[] = [];
  for (let r = 0; r < repeat; r++) {
    const t = performance.now();
    runPcc({ width, height, data: fx.data, wcs: fx.wcs, catalog: fx.stars.map((s) => ({ ...s, teff: null })), source: 'bench' });
    core.push(performance.now() - t);
  }
  const line = (name: string, v: number[]) => {
    v.sort((a, b) => a - b);
    console.log(`${name.padEnd(22)} ${width}x${height}  best ${v[0]!.toFixed(0)} ms  median ${v[Math.floor(v.length / 2)]!.toFixed(0)} ms`);
  };
  line(`PCC phase (${used} stars)`, phase);
  line('PCC core (runPcc)', core);
});
