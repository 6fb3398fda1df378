import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { FitsHeader, readFitsNative, writeFits } from '../../src/fits/index.js';
import { withTempDir } from '../helpers/tmp.js';

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

test('inspect --json prints one line with dimensions, header and per-plane statistics', async () => {
  await withTempDir('inspect', async (dir) => {
    const width = 5;
    const height = 4;
    // Plane p holds p*100 + i for i in 0..19; plane 1 has one NaN that must be ignored.
    const data = new Float32Array(width * height * 3);
    for (let p = 0; p < 3; p++) for (let i = 0; i < 20; i++) data[p * 20 + i] = p * 100 + i;
    data[20] = NaN;
    const h = new FitsHeader();
    h.set('EXPTIME', 30, { real: true, comment: 'seconds' });
    h.addHistory('made by a test');
    const file = join(dir, 'cube.fits');
    await writeFits(file, { width, height, planes: 3, data }, { header: h });
    const r = run('inspect', file, '--json');
    assert.is(r.status, 0, r.stderr);
    const lines = r.stdout.trim().split('\n');
    assert.is(lines.length, 1);
    const j = JSON.parse(lines[0]!);
    assert.is(j.file, file);
    assert.is(j.bitpix, -32);
    assert.equal(j.naxis, [5, 4, 3]);
    assert.equal(j.header.find((c: { key: string }) => c.key === 'EXPTIME'), { key: 'EXPTIME', value: 30, comment: 'seconds' });
    assert.equal(j.header.find((c: { key: string }) => c.key === 'HISTORY'), { key: 'HISTORY', value: null, comment: 'made by a test' });
    assert.is(j.planes.length, 3);
    assert.equal(j.planes[0], { min: 0, max: 19, mean: 9.5, median: 9.5, sigma: 1.482602218505602 * 5 });
    assert.equal([j.planes[1].min, j.planes[1].max, j.planes[1].median], [101, 119, 110]);
    assert.is(j.planes[2].mean, 209.5);
  });
});

test('inspect prints a readable table; bad input exits non-zero with one line naming file and code', async () => {
  await withTempDir('inspect-bad', async (dir) => {
    const good = join(dir, 'u16.fits');
    await writeFits(good, { width: 3, height: 1, data: Uint16Array.from([10, 20, 65535]) });
    const text = run('inspect', good);
    assert.is(text.status, 0);
    assert.match(text.stdout, /Image:\s+3 x 1\s+BITPIX 16 \(uint16, BZERO 32768, BSCALE 1\)/);
    assert.match(text.stdout, /^\s+0\s+3\s+10\s+65535\s+/m);

    const bad = join(dir, 'notes.fits');
    await writeFile(bad, 'this is not FITS\n');
    const r = run('inspect', bad, '--json');
    assert.is(r.status, 1);
    assert.is(r.stdout, '');
    const errLines = r.stderr.trim().split('\n');
    assert.is(errLines.length, 1);
    assert.ok(errLines[0]!.includes(bad) && errLines[0]!.includes('FITS_NOT_FITS'), errLines[0]);
    assert.not.match(r.stderr, /at .*\.js:\d+/, 'no stack trace');

    const missing = run('inspect', join(dir, 'nope.fits'));
    assert.is(missing.status, 1);
    assert.match(missing.stderr, /FITS_NOT_FOUND/);
    const usage = run('inspect');
    assert.is(usage.status, 2);
    assert.is(run('frobnicate').status, 2);
  });
});

test('inspect of integer images: exact min/max/mean in double precision (BITPIX 32 near 2^31, a compressed int32 file)', async () => {
  await withTempDir('inspect-i32', async (dir) => {
    // Values float32 cannot hold: 2147483000 + k rounds to multiples of 128 in float32.
    const data = Int32Array.from({ length: 12 }, (_, i) => 2147483000 + 11 * i);
    data[5] = -2147483000;
    const file = join(dir, 'i32.fits');
    await writeFits(file, { width: 4, height: 3, data });
    const j = JSON.parse(run('inspect', file, '--json').stdout);
    const sum = data.reduce((a, v) => a + v, 0);
    assert.equal([j.planes[0].min, j.planes[0].max, j.planes[0].mean], [-2147483000, 2147483121, sum / 12]);
    assert.equal([j.hdu, j.compression], [0, null]);
  });
  // astropy's GZIP_2 int32 tiles (fixtures/compressed): the same exact statistics as its native values.
  const fz = fileURLToPath(new URL('../../../fixtures/compressed/gzip2_i32.fits', import.meta.url));
  const r = run('inspect', fz, '--json');
  assert.is(r.status, 0, r.stderr);
  const j = JSON.parse(r.stdout);
  const native = Array.from((await readFitsNative(fz)).data as Int32Array);
  assert.equal([j.hdu, j.compression, j.bitpix], [1, 'GZIP_2', 32]);
  assert.is(j.planes[0].min, Math.min(...native));
  assert.is(j.planes[0].max, Math.max(...native));
  assert.is(j.planes[0].mean, native.reduce((a, v) => a + v, 0) / native.length);
  assert.match(run('inspect', fz).stdout, /Layout:\s+extension 1, GZIP_2 compressed/);
});

test.run();
