// Run queue CALIBRATION with flats of several filters in one folder (FILTER keyword): one flat
// master per filter, each light divided by its own filter's flat, a filter without flats warned
// about and left unflattened; bias and darks shared. LRGB fixture with calibration frames,
// 3 lights per filter at 256×192, INPUT_SCAN → CALIBRATION only.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFile, mkdir, mkdtemp, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateLrgb, type LrgbSet } from '../../fixtures/generator/lrgb.js';
import { calibrationPhase } from '../../src/pipeline/rawstack/phases/calibration.js';
import { config, image, runPhasesOn, type PhaseRun } from './calibration-helpers.js';

let root = '';
let set: LrgbSet;
let run: PhaseRun;

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-queue-flats-'));
  set = await generateLrgb(join(root, 'lrgb'), { frames: 3, width: 256, height: 192, seed: 9, badFrames: 'none', calibrationCounts: { bias: 3, darks: 2, flats: 3 } });
  // One flats folder with the L, R and G flats (no B flats); bias and darks of the L set.
  const flats = join(root, 'flats');
  await mkdir(flats);
  for (const f of ['L', 'R', 'G'] as const) {
    for (const name of await readdir(join(set.dirs[f], 'flats'))) await copyFile(join(set.dirs[f], 'flats', name), join(flats, `${f}_${name}`));
  }
  const queue = (['L', 'R', 'G', 'B'] as const).map((f) => ({ filter: f, input_dir: join(set.dirs[f], 'lights') }));
  run = await runPhasesOn(config({ queue, bias_dir: join(set.dirs.L, 'bias'), darks_dir: join(set.dirs.L, 'darks'), flats_dir: flats }), { runsDir: join(root, 'runs'), phases: [calibrationPhase] });
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

test('per-filter flat masters from one folder; each light divided by its filter\'s; B without flats warned and unflattened', async () => {
  const end = run.end('CALIBRATION')!;
  assert.is(end.status, 'ok', JSON.stringify(end));
  const masters = (await readdir(join(run.result.runDir, 'outputs/masters'))).sort();
  assert.equal(masters, ['master_bias.fits', 'master_dark_120s.fits', 'master_flat_G.fits', 'master_flat_L.fits', 'master_flat_R.fits']);
  for (const f of ['L', 'R', 'G']) {
    const m = await image(join(run.result.runDir, `outputs/masters/master_flat_${f}.fits`));
    assert.is(m.header.getString('FILTER'), f);
    assert.is(m.header.getNumber('NCOMBINE'), 3);
  }
  const flat = (end as Record<string, any>).flat;
  assert.equal(Object.keys(flat.per_filter).sort(), ['G', 'L', 'R']);
  assert.is(flat.per_filter.R.lights, 3);
  assert.is(flat.unflattened_lights, 3);
  const warn = run.warnings('flat_missing_for_filter');
  assert.is(warn.length, 1);
  assert.match(warn[0]!.message, /FILTER = B.*3 light\(s\) of filter B/);
  const st = run.state!;
  assert.is(st.masters.flat, join(run.result.runDir, 'outputs/masters/master_flat_L.fits'));
  for (const frame of st.frames) {
    const cal = await image(frame.calibratedFile!);
    const history = cal.header.commentary('HISTORY').join(' ');
    if (frame.filter === 'B') {
      assert.is(cal.header.getBoolean('FLATCORR'), false, frame.name);
      assert.not.match(history, /divided by flat/);
    } else {
      assert.is(cal.header.getBoolean('FLATCORR'), true, frame.name);
      assert.ok(history.includes(`divided by flat master_flat_${frame.filter}.fits`), `${frame.filter} ${frame.name}: ${history}`);
    }
  }
});

test.run();
