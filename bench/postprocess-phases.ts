// `node dist/bench/postprocess-phases.js [--device cpu|auto] [--width 2048 --height 1536] [--repeat 2]`
// Times the BGE and HYPERMETRIC_STRETCH phases (phase_end duration_ms, so reading the stack and
// writing the outputs are included) on a synthetic linear RGB stack with a gradient and stars
// (test/pipeline/postprocess-helpers.ts), for issue 8's "speed of each phase on a 2048×1536
// RGB stack". Prints one line per phase and method (wall and CPU time of the phase); does not
// write bench/RESULTS.md.

import { parseArgs } from 'node:util';
import { bgePhase } from '../src/pipeline/rawstack/phases/bge.js';
import { hmsPhase } from '../src/pipeline/rawstack/phases/hms.js';
import { config, runOn, synthRgb } from '../test/pipeline/postprocess-helpers.js';
import { withTempDir } from '../test/helpers/tmp.js';

const { values } = parseArgs({
  options: {
    device: { type: 'string', default: 'cpu' },
    width: { type: 'string', default: '2048' },
    height: { type: 'string', default: '1536' },
    repeat: { type: 'string', default: '2' },
    match: { type: 'string', default: '' },
    halo: { type: 'string', default: '0' },
  },
});
const device = values.device === 'auto' ? 'auto' : 'cpu';
const width = Number(values.width);
const height = Number(values.height);
const repeat = Math.max(1, Number(values.repeat));
// --halo N adds the faint extended halo of the BGE tests (peak N noise units), --match RE picks cases.
const img = synthRgb({ width, height, seed: 1, stars: Math.round((width * height) / 2000), halo: Number(values.halo) });
const match = new RegExp(values.match ?? '');

const cases: [string, Record<string, unknown>][] = [
  ['BGE classic/rbf', { bge: { fit_method: 'rbf' } }],
  ['BGE classic/poly', { bge: { fit_method: 'poly' } }],
  ['BGE autobge', { bge: { method: 'autobge' } }],
  ['HMS ready_to_use', { hypermetric_stretch: { require_successful_pcc: false, mode: 'ready_to_use' } }],
  ['HMS scientific', { hypermetric_stretch: { require_successful_pcc: false, mode: 'scientific' } }],
];

await withTempDir('bench-post', async (dir) => {
  for (const [name, over] of cases.filter(([name]) => match.test(name))) {
    const isBge = name.startsWith('BGE');
    const phase = isBge ? 'BGE' : 'HYPERMETRIC_STRETCH';
    const times: number[] = [];
    const cpu: number[] = [];
    let dev = '';
    // CPU time of the phase's run() (user + system): steadier than wall time on a shared machine.
    const base = isBge ? bgePhase : hmsPhase;
    const timed: typeof base = {
      ...base,
      async run(ctx) {
        const c0 = process.cpuUsage();
        const out = await base.run(ctx);
        const d = process.cpuUsage(c0);
        cpu.push(Math.round((d.user + d.system) / 1000));
        return out;
      },
    };
    for (let r = 0; r < repeat; r++) {
      const cfg = config({ postprocess: { astrometry: false, pcc: false, bge: isBge, hypermetric_stretch: !isBge }, ...over });
      const run = await runOn(img, cfg, `${dir}/${times.length}-${name.replace(/\W+/g, '_')}`, [timed], {}, device);
      const end = run.end(phase);
      if (end?.status !== 'ok') throw new Error(`${name}: ${JSON.stringify(end)}`);
      times.push(end.duration_ms);
      dev = `${run.result.device.kind}${run.result.device.adapter ? ` (${run.result.device.adapter})` : ''}`;
    }
    times.sort((a, b) => a - b);
    cpu.sort((a, b) => a - b);
    console.log(`${name.padEnd(20)} ${width}x${height}  best ${times[0]} ms  median ${times[Math.floor(times.length / 2)]} ms  cpu best ${cpu[0]} ms  median ${cpu[Math.floor(cpu.length / 2)]} ms  device ${dev}`);
  }
});
