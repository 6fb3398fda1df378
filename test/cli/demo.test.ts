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
    assert.equal((await readdir(out)).sort(), ['bias', 'darks', 'flats', 'lights', 'truth.json']);
    assert.is((await readdir(join(out, 'lights'))).length, 8);
    const truth = JSON.parse(await readFile(join(out, 'truth.json'), 'utf8'));
    const bad = truth.frames.filter((f: { bad: string | null }) => f.bad !== null);
    assert.is(bad.length, 4, 'one frame of each defect kind at 8 frames');
    for (const f of bad) assert.ok(r.stdout.includes(`${f.file} (${f.bad})`), `stdout names ${f.file}`);
    assert.match(r.stdout, /lights\/light_00001\.fits: 160x120 BITPIX 16, median \d+\.\d ADU/);
  });
});

test('demo refuses bad arguments with exit code 2', () => {
  const r = spawnSync(process.execPath, [cli, 'demo', '--frames', 'many'], { encoding: 'utf8' });
  assert.is(r.status, 2);
  assert.match(r.stderr, /--frames must be a positive integer/);
});

test.run();
