import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { withTempDir } from '../helpers/tmp.js';

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

test('demo generates a dataset with calibration frames and reports its bad frames', async () => {
  await withTempDir('demo', async (dir) => {
    const out = join(dir, 'data');
    const r = spawnSync(process.execPath, [cli, 'demo', '--out', out, '--frames', '8', '--width', '160', '--height', '120', '--seed', '3', '--no-run'], { encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    assert.equal((await readdir(out)).sort(), ['bias', 'catalogue.csv', 'darks', 'flats', 'lights', 'truth.json']);
    assert.is((await readdir(join(out, 'lights'))).length, 8);
    const truth = JSON.parse(await readFile(join(out, 'truth.json'), 'utf8'));
    // Default sky: the real Tycho-2 stars of the Orion field, written with their colours as the PCC catalogue.
    const catalogue = (await readFile(join(out, 'catalogue.csv'), 'utf8')).trim().split('\n');
    assert.is(catalogue[0], 'ra,dec,mag,bv');
    assert.is(catalogue.length - 1, truth.stars.length);
    const [ra, dec, , bv] = catalogue[1]!.split(',').map(Number);
    assert.ok(Math.abs(ra! - 83.8) < 4 && Math.abs(dec! + 5.4) < 4 && Number.isFinite(bv), catalogue[1]);
    assert.match(r.stdout, /PCC catalogue: .*Tycho-2 field orion/);
    const bad = truth.frames.filter((f: { bad: string | null }) => f.bad !== null);
    assert.is(bad.length, 4, 'one frame of each defect kind at 8 frames');
    for (const f of bad) assert.ok(r.stdout.includes(`${f.file} (${f.bad})`), `stdout names ${f.file}`);
    assert.match(r.stdout, /lights\/light_00001\.fits: 160x120 BITPIX 16, median \d+\.\d ADU/);
  });
});

test('demo --kind lrgb generates four filter sets and one flats folder for the run queue', async () => {
  await withTempDir('demo-lrgb', async (dir) => {
    const out = join(dir, 'data');
    const r = spawnSync(process.execPath, [cli, 'demo', '--kind', 'lrgb', '--out', out, '--frames', '2', '--width', '96', '--height', '64', '--seed', '3', '--no-run'], { encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    assert.equal((await readdir(out)).sort(), ['B', 'G', 'L', 'R', 'flats']);
    assert.is((await readdir(join(out, 'R', 'lights'))).length, 2);
    assert.is((await readdir(join(out, 'flats'))).filter((n) => n.startsWith('B_flat_')).length, 8);
    assert.match(r.stdout, /filter G: .*G\/lights \(2 lights\)/);
  });
});

test('demo --pipeline tiled generates a session with seeing that varies across the field and runs the tiled workflow on it', async () => {
  await withTempDir('demo-tiled', async (dir) => {
    const out = join(dir, 'data');
    const runs = join(dir, 'runs');
    const r = spawnSync(process.execPath, [cli, 'demo', '--pipeline', 'tiled', '--kind', 'mono', '--sky', 'random', '--out', out, '--runs-dir', runs, '--frames', '8', '--width', '192', '--height', '144', '--seed', '3'], { encoding: 'utf8' });
    assert.is(r.status, 0, r.stderr);
    assert.match(r.stdout, /seeing across the field: swap-halves/);
    // The halves swap quality: the field tilt of the seeing runs from +0.25 to -0.25 over the session.
    const truth = JSON.parse(await readFile(join(out, 'truth.json'), 'utf8'));
    const frames = truth.frames as { seeing: { tilt_x: number } }[];
    assert.equal([frames[0]!.seeing.tilt_x, frames[frames.length - 1]!.seeing.tilt_x], [0.25, -0.25]);
    const [run] = (await readdir(runs)).filter((n) => n.startsWith('demo-tiled_'));
    assert.ok(run, 'a tiled run folder');
    const record = JSON.parse(await readFile(join(runs, run!, 'run.json'), 'utf8'));
    assert.is(record.kind, 'tiled');
    assert.ok((await readdir(join(runs, run!, 'outputs'))).includes('stacked.fits'));
    const validation = JSON.parse(await readFile(join(runs, run!, 'artifacts', 'validation.json'), 'utf8'));
    assert.is(validation.weight_mode, 'local');
    assert.match(r.stdout, new RegExp(`report: .*${run}/artifacts/report\\.html`));
  });
});

test('demo refuses bad arguments with exit code 2', () => {
  const r = spawnSync(process.execPath, [cli, 'demo', '--frames', 'many'], { encoding: 'utf8' });
  assert.is(r.status, 2);
  assert.match(r.stderr, /--frames must be a positive integer/);
  const sky = spawnSync(process.execPath, [cli, 'demo', '--sky', 'andromeda', '--no-run'], { encoding: 'utf8' });
  assert.is(sky.status, 2);
  assert.match(sky.stderr, /--sky must be random or one of orion, m31/);
  const pipeline = spawnSync(process.execPath, [cli, 'demo', '--pipeline', 'stack', '--no-run'], { encoding: 'utf8' });
  assert.is(pipeline.status, 2);
  assert.match(pipeline.stderr, /--pipeline must be rawstack or tiled/);
  const seeing = spawnSync(process.execPath, [cli, 'demo', '--pipeline', 'tiled', '--seeing', 'windy', '--no-run'], { encoding: 'utf8' });
  assert.is(seeing.status, 2);
  assert.match(seeing.stderr, /--seeing must be one of swap-halves, drifting-patch, cloud-quadrant, uniform/);
});

test.run();
