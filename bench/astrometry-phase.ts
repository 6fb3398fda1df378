// `node dist/bench/astrometry-phase.js [--width 2048 --height 1536] [--repeat 3]`
// Times the ASTROMETRY phase (phase_end duration_ms: reading the stack, star detection, the
// solve-field run, rewriting stacked_rgb.fits with the WCS, the .wcs and JSON artifacts) on a
// synthetic 2048×1536 linear RGB stack whose stars are the Tycho-2 stars of the `orion` field
// placed by a known TAN WCS (7″/px, 4.0° × 3.0°), with sky and Gaussian noise, for issue 7's
// "speed of the phase on a 2048×1536 RGB stack". Three cases (--only NAME picks one): `hinted`
// (RA/DEC and FOCALLEN/XPIXSZ in the header), `scale` (FOCALLEN/XPIXSZ only) and `blind`. Needs solve-field and the tycho2-10-19 index package.
// Prints one line per case (and the detection / solver split); does not write bench/RESULTS.md.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { lookupSolvers } from '../src/astro/solve.js';
import { angularSeparationDeg, TanWcs } from '../src/astro/wcs.js';
import { FitsHeader, writeFits } from '../src/fits/index.js';
import { ok, type Phase } from '../src/pipeline/phase.js';
import { astrometryPhase } from '../src/pipeline/rawstack/phases/astrometry.js';
import { reportPhase } from '../src/pipeline/rawstack/phases/report.js';
import { runRawStack } from '../src/pipeline/rawstack/run.js';
import type { RawStackState } from '../src/pipeline/rawstack/state.js';
import { TYCHO2_FIELDS, tycho2Field } from '../fixtures/astrometry/tycho2.js';
import { config } from '../test/pipeline/postprocess-helpers.js';
import { seededRandom, withTempDir } from '../test/helpers/tmp.js';

const { values } = parseArgs({ options: { width: { type: 'string', default: '2048' }, height: { type: 'string', default: '1536' }, repeat: { type: 'string', default: '3' }, only: { type: 'string' } } });
const width = Number(values.width);
const height = Number(values.height);
const repeat = Math.max(1, Number(values.repeat));
const SCALE = 7;
const FOCAL_MM = 110.8; // 3.76 µm pixels → 7.0″/px

const [an] = await lookupSolvers({ solver: 'astrometry_net', astrometry_net_bin: '', astrometry_net_data_dir: '', astap_bin: '', astap_data_dir: '' });
if (!an?.ok) {
  console.log(`skipped: ${an && !an.ok ? an.reason : 'no lookup'}`);
  process.exit(0);
}

const { ra, dec } = TYCHO2_FIELDS.orion;
const truth = TanWcs.fromCentre({ ra: ra + 0.15, dec: dec + 0.1, width, height, scaleArcsec: SCALE, rotationDeg: 17 });
const n = width * height;
const data = new Float32Array(3 * n);
const rand = seededRandom(5);
const gauss = () => Math.sqrt(-2 * Math.log(Math.max(rand(), 1e-12))) * Math.cos(2 * Math.PI * rand());
for (let c = 0; c < 3; c++) for (let i = 0; i < n; i++) data[c * n + i] = 800 + 100 * c + 12 * gauss();
const sigma = 2.2 / 2.3548;
let placed = 0;
for (const s of tycho2Field('orion')) {
  const p = truth.skyToPixel(s.ra, s.dec);
  if (!p || p[0] < 0 || p[1] < 0 || p[0] > width - 1 || p[1] > height - 1) continue;
  placed++;
  const flux = 4e5 * 10 ** (-0.4 * (s.mag - 9));
  const r = Math.ceil(6 * sigma + 2);
  for (let y = Math.max(0, Math.floor(p[1]) - r); y <= Math.min(height - 1, Math.floor(p[1]) + r); y++) {
    for (let x = Math.max(0, Math.floor(p[0]) - r); x <= Math.min(width - 1, Math.floor(p[0]) + r); x++) {
      const v = (flux / (2 * Math.PI * sigma * sigma)) * Math.exp(-((x - p[0]) ** 2 + (y - p[1]) ** 2) / (2 * sigma * sigma));
      for (let c = 0; c < 3; c++) data[c * n + y * width + x] = Math.min(60000, data[c * n + y * width + x]! + v * [0.9, 1, 0.8][c]!);
    }
  }
}

type Case = 'hinted' | 'scale' | 'blind';

function inject(kind: Case): Phase<RawStackState> {
  return {
    name: 'STACK_INJECT',
    optional: false,
    async run({ state }) {
      const h = new FitsHeader();
      if (kind === 'hinted') {
        const [cra, cdec] = truth.centre(width, height);
        h.set('RA', cra + 0.05, { real: true });
        h.set('DEC', cdec - 0.05, { real: true });
      }
      if (kind !== 'blind') {
        h.set('FOCALLEN', FOCAL_MM, { real: true });
        h.set('XPIXSZ', 3.76, { real: true });
      }
      const file = join(state.folder.outputsDir, 'stacked_rgb.fits');
      await writeFits(file, { width, height, planes: 3, data }, { header: h });
      state.outputs.stacked_rgb = file;
      state.width = width;
      state.height = height;
      return ok();
    },
  };
}

await withTempDir('bench-astrometry', async (dir) => {
  for (const kind of (['hinted', 'scale', 'blind'] as const).filter((k) => !values.only || k === values.only)) {
    const rows: { phase: number; detect: number; solve: number; write: number; sep: number; scale: number }[] = [];
    for (let r = 0; r < repeat; r++) {
      const cfg = config({ postprocess: { astrometry: true, bge: false, pcc: false, hypermetric_stretch: false }, astrometry: { solver: 'astrometry_net' } });
      const res = await runRawStack(cfg, { runsDir: join(dir, `${kind}-${r}`), device: 'cpu', phases: [inject(kind), astrometryPhase, reportPhase] });
      const end = res.phases.find((p) => p.phase === 'ASTROMETRY')!;
      if (end.status !== 'ok') throw new Error(JSON.stringify(end));
      const a = JSON.parse(await readFile(join(res.runDir, 'artifacts', 'preprocess', 'preprocessing_registration.json'), 'utf8')).astrometry;
      const [tra, tdec] = truth.centre(width, height);
      rows.push({ phase: end.duration_ms, detect: a.detect_ms, solve: a.solve_ms, write: a.duration_ms - a.detect_ms - a.solve_ms, sep: angularSeparationDeg(a.ra, a.dec, tra, tdec) * 3600, scale: Math.abs(a.pixel_scale_arcsec / SCALE - 1) * 100 });
    }
    rows.sort((x, y) => x.phase - y.phase);
    const med = rows[Math.floor(rows.length / 2)]!;
    console.log(`ASTROMETRY ${kind.padEnd(6)} ${width}x${height} (${placed} Tycho-2 stars)  best ${rows[0]!.phase} ms  median ${med.phase} ms  [median: read+detect ${med.detect} ms, solve-field ${med.solve} ms, rest ${med.write} ms; centre off ${med.sep.toFixed(2)}″, scale off ${med.scale.toFixed(4)} %]`);
  }
});
