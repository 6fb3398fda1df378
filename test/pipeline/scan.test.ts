import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FitsHeader, writeFits } from '../../src/fits/index.js';
import { decideColorMode, globMatcher, scanFolder, ScanError, summarizeScan, type FrameInfo } from '../../src/pipeline/stages/scan/scan.js';
import { withTempDir } from '../helpers/tmp.js';

async function frame(file: string, width: number, height: number, cards: [string, string | number][] = [], planes = 1): Promise<void> {
  const h = new FitsHeader();
  for (const [k, v] of cards) h.set(k, v);
  await writeFits(file, { width, height, planes, data: new Uint16Array(width * height * planes) }, { header: h });
}

test('glob: *, ?, alternatives, case-insensitive, literal dots', () => {
  const m = globMatcher('*.fits');
  assert.ok(m('a.fits') && m('B.FITS') && !m('a.fit') && !m('afits'));
  const alt = globMatcher('light_*.fit; *.fts');
  assert.ok(alt('light_001.fit') && alt('x.fts') && !alt('dark_001.fit'));
  assert.ok(globMatcher('f?.fits')('f1.fits') && !globMatcher('f?.fits')('f10.fits'));
  assert.ok(globMatcher('a+b.fits')('a+b.fits') && !globMatcher('a+b.fits')('aab.fits'));
});

test('scan: natural order, max_frames, headers, unreadable files kept with their code, mixed groups warned', async () => {
  await withTempDir('scan', async (dir) => {
    await frame(join(dir, 'light_10.fits'), 8, 6, [['EXPTIME', 120], ['CCD-TEMP', -10], ['FILTER', 'L'], ['DATE-OBS', '2026-03-14T21:00:00']]);
    await frame(join(dir, 'light_2.fits'), 8, 6, [['EXPTIME', 120], ['CCD-TEMP', -9.5], ['FILTER', 'L']]);
    await frame(join(dir, 'light_3.fits'), 10, 6, [['EXPTIME', 60], ['FILTER', 'Ha']]);
    await writeFile(join(dir, 'light_4.fits'), 'garbage');
    await writeFile(join(dir, 'notes.txt'), 'x');
    const frames = await scanFolder(dir, { pattern: '*.fits', concurrency: 2 });
    assert.equal(frames.map((f) => f.name), ['light_2.fits', 'light_3.fits', 'light_4.fits', 'light_10.fits']);
    const first = frames[0] as FrameInfo;
    assert.equal([first.width, first.height, first.exptime, first.temperature, first.filter], [8, 6, 120, -9.5, 'L']);
    assert.is((frames[3] as FrameInfo).dateObs, '2026-03-14T21:00:00.000Z');
    const bad = frames[2]!;
    assert.not.ok(bad.ok);
    if (!bad.ok) assert.is(bad.code, 'FITS_NOT_FITS');
    const s = summarizeScan(frames);
    assert.equal([s.total, s.readable, s.unreadable.length], [4, 3, 1]);
    assert.equal(s.sizes[0], { width: 8, height: 6, planes: 1, count: 2 });
    assert.equal(s.warnings.map((w) => w.code).sort(), ['mixed_exposures', 'mixed_filters', 'mixed_sizes', 'unreadable_frames']);
    assert.equal(s.temperatures, { min: -10, max: -9.5 });
    const limited = await scanFolder(dir, { pattern: '*.fits', maxFrames: 2 });
    assert.equal(limited.map((f) => f.name), ['light_2.fits', 'light_3.fits']);
  });
});

test('scan checksums are SHA-256 of the file bytes', async () => {
  await withTempDir('scan-sum', async (dir) => {
    await frame(join(dir, 'a.fits'), 4, 4);
    const [f] = await scanFolder(dir, { pattern: '*.fits', checksums: true });
    const { createHash } = await import('node:crypto');
    const { readFile } = await import('node:fs/promises');
    assert.is((f as FrameInfo).sha256, createHash('sha256').update(await readFile(join(dir, 'a.fits'))).digest('hex'));
  });
});

test('scan errors for missing folders and files that are not folders', async () => {
  await withTempDir('scan-err', async (dir) => {
    const file = join(dir, 'x.fits');
    await frame(file, 2, 2);
    for (const [p, code] of [[join(dir, 'nope'), 'PATH_NOT_FOUND'], [file, 'NOT_A_DIRECTORY']] as const) {
      try {
        await scanFolder(p, { pattern: '*' });
        assert.unreachable();
      } catch (e) {
        assert.instance(e, ScanError);
        assert.is((e as ScanError).code, code);
      }
    }
    await mkdir(join(dir, 'empty'));
    assert.equal(await scanFolder(join(dir, 'empty'), { pattern: '*.fits' }), []);
  });
});

test('colour mode: settings win, then BAYERPAT/COLORTYP, NAXIS3 = 3, offsets; mono by default', () => {
  const base = { index: 0, file: 'f', name: 'f', ok: true, width: 4, height: 4, planes: 1, bitpix: 16, bytes: 32, exptime: null, temperature: null, gain: null, filter: null, imageType: null, dateObs: null, bayer: null, colorType: null, hasBayerOffsets: false } as const;
  assert.equal(decideColorMode({ ...base, bayer: 'GBRG' }, 'auto', 'auto'), { mode: 'OSC', bayer: 'GBRG', source: 'BAYERPAT/COLORTYP header' });
  assert.is(decideColorMode({ ...base, bayer: 'GBRG' }, 'auto', 'BGGR').bayer, 'BGGR');
  assert.is(decideColorMode({ ...base, bayer: 'GBRG' }, 'MONO', 'auto').mode, 'MONO');
  assert.is(decideColorMode({ ...base, colorType: 'MONO' }, 'auto', 'auto').mode, 'MONO');
  assert.equal(decideColorMode({ ...base, colorType: 'OSC' }, 'auto', 'auto').bayer, 'RGGB');
  assert.is(decideColorMode({ ...base, planes: 3 }, 'auto', 'auto').mode, 'RGB');
  assert.is(decideColorMode({ ...base, hasBayerOffsets: true }, 'auto', 'auto').mode, 'OSC');
  assert.is(decideColorMode(base, 'auto', 'auto').mode, 'MONO');
  assert.is(decideColorMode(base, 'OSC', 'auto').bayer, 'RGGB');
});

test.run();
