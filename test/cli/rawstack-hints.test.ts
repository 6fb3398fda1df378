// What a first-time user meets on the command line: `--help` after any command prints the usage
// (exit 0, not an unknown-option error), and a folder of .fit files under the default `*.fits`
// pattern ends with the scan's explanation plus a hint naming the --pattern that takes them.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFile, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateDataset } from '../../fixtures/generator/index.js';
import { main } from '../../src/cli/main.js';
import { RUN_LAYOUTS } from '../../src/shared/run-layout.js';
import { runRawStackCli } from '../../src/cli/rawstack.js';
import { withTempDir } from '../helpers/tmp.js';

async function captured(stream: 'stdout' | 'stderr', f: () => Promise<number>): Promise<{ code: number; text: string }> {
  const target = process[stream];
  const write = target.write;
  let text = '';
  target.write = ((chunk: string | Uint8Array) => {
    text += typeof chunk === 'string' ? chunk : Buffer.from(chunk).toString();
    return true;
  }) as typeof target.write;
  try {
    return { code: await f(), text };
  } finally {
    target.write = write;
  }
}

test('--help after a command prints the usage and exits 0', async () => {
  for (const argv of [['rawstack', '--help'], ['export', '-h'], ['inspect', 'x.fits', '--help']]) {
    const { code, text } = await captured('stdout', () => main(argv));
    assert.is(code, 0, argv.join(' '));
    assert.match(text, /^usage: skystack <command> \[options\]/);
    assert.match(text, /rawstack \[--config FILE\.json\|FILE\.yaml\]/);
  }
});

test('*.fits on a folder of .fit lights: INPUT_SCAN explains, the CLI hints --pattern, exit 1', async () => {
  await withTempDir('cli-hint', async (dir) => {
    await generateDataset({ out: join(dir, 'data'), kind: 'mono', frames: 2, width: 64, height: 48, seed: 3, calibration: false, badFrames: 'none' });
    const lights = join(dir, 'fit');
    await mkdir(lights);
    for (const n of ['light_00001', 'light_00002']) await copyFile(join(dir, 'data', 'lights', `${n}.fits`), join(lights, `${n}.fit`));
    // --input-dir (what `tiled` calls the lights folder) names the same folder as --lights.
    for (const option of ['--lights', '--input-dir']) {
      const { code, text } = await captured('stderr', () => runRawStackCli([option, lights, '--runs-dir', join(dir, 'runs')]));
      assert.is(code, 1, option);
      assert.match(text, /INPUT_SCAN: error \(pattern_mismatch: .*no file matches "\*\.fits", but the folder holds 2 FITS files/);
      assert.match(text, /\nhint: run again with --pattern '\*\.fit'\n/);
    }
    const both = await captured('stderr', () => main(['rawstack', '--lights', lights, '--input-dir', join(dir, 'data', 'lights')]));
    assert.is(both.code, 2, both.text);
    assert.match(both.text, /--lights and --input-dir name the same folder: give one/);
  });
});

test('--darks (and --bias/--flats/--darkflats) name the calibration folders, as `tiled` takes them: a darks-only session gets its master dark', async () => {
  await withTempDir('cli-darks', async (dir) => {
    await generateDataset({ out: join(dir, 'data'), kind: 'mono', frames: 4, width: 160, height: 120, seed: 5, calibration: true, calibrationCounts: { bias: 0, darks: 3, flats: 0 }, badFrames: 'none' });
    const { code, text } = await captured('stdout', () =>
      runRawStackCli(['--lights', join(dir, 'data', 'lights'), '--darks', join(dir, 'data', 'darks'), '--runs-dir', join(dir, 'runs'), '--set', 'postprocess.astrometry=false', '--set', 'quality_filter.min_stars=3', '--json']),
    );
    assert.is(code, 0, text);
    const r = JSON.parse(text.trim().split('\n').pop()!) as { run_dir: string; phases: { phase: string; status: string }[] };
    const cal = r.phases.find((p) => p.phase === 'CALIBRATION')!;
    assert.is(cal.status, 'ok', JSON.stringify(cal));
    // A master dark was built from the folder and no other master (no bias, no flats given).
    assert.equal(await readdir(join(r.run_dir, 'outputs', 'masters')), ['master_dark_120s.fits']);
    const config = JSON.parse(await readFile(join(r.run_dir, ...RUN_LAYOUTS.rawstack.config.split('/')), 'utf8')) as { darks_dir: string; bias_dir: string };
    assert.equal([config.darks_dir, config.bias_dir], [join(dir, 'data', 'darks'), '']);
    const usage = await captured('stderr', () => main(['rawstack', '--darks']));
    assert.is(usage.code, 2, usage.text);
  });
});

test.run();
