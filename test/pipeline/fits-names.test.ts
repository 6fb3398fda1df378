// FITS extensions as capture programs write them, and the pattern hint of INPUT_SCAN and the scan
// API: counts per extension, a few names, a suggested pattern that the scan's own matcher takes.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fitsExtension, folderPatternHint, patternHint } from '../../src/pipeline/stages/scan/fits-names.js';
import { globMatcher } from '../../src/pipeline/stages/scan/scan.js';
import { withTempDir } from '../helpers/tmp.js';

test('fitsExtension: .fit/.fits/.fts in any case, .gz and .fz forms; other names null', () => {
  const cases: [string, string | null][] = [
    ['light_001.fit', '.fit'],
    ['Light_001.FIT', '.fit'],
    ['m42.fits', '.fits'],
    ['M42.Fts', '.fts'],
    ['a.fits.gz', '.fits.gz'],
    ['a.FIT.GZ', '.fit.gz'],
    ['a.fz', '.fz'],
    ['a.fits.fz', '.fits.fz'],
    ['archive.tar.gz', null],
    ['notes.txt', null],
    ['fits', null],
    ['a.fitsx', null],
    ['a.fit.bak', null],
  ];
  for (const [name, ext] of cases) assert.is(fitsExtension(name), ext, name);
});

test('patternHint: nothing when the pattern matches or no FITS file is there; else counts, examples, a working pattern', () => {
  assert.is(patternHint(['a.fits', 'b.fit'], '*.fits'), null, 'the pattern matches a file');
  assert.is(patternHint(['a.txt', 'b.cr2'], '*.fits'), null, 'no FITS file');
  assert.is(patternHint(['.hidden.fit'], '*.fits'), null, 'hidden files are ignored, as by the scan');
  const names = ['L_10.fit', 'L_2.fit', 'L_1.FIT', 'L_3.fit', 'dark.fts', 'x.fits.gz', 'x.fits.gz.txt', 'log.txt'];
  const h = patternHint(names, '*.fits')!;
  assert.equal(h.found, [
    { extension: '.fit', count: 4 },
    { extension: '.fits.gz', count: 1 },
    { extension: '.fts', count: 1 },
  ]);
  assert.is(h.suggested_pattern, '*.fit;*.fits.gz;*.fts');
  assert.equal(h.examples, ['dark.fts', 'L_1.FIT', 'L_2.fit'], 'natural name order');
  assert.match(h.message, /no file matches "\*\.fits", but the folder holds 6 FITS files \(4 × \.fit, 1 × \.fits\.gz, 1 × \.fts: dark\.fts, L_1\.FIT, L_2\.fit, …\); the pattern "\*\.fit;\*\.fits\.gz;\*\.fts" takes them/);
  const take = globMatcher(h.suggested_pattern);
  assert.equal(names.filter(take), ['L_10.fit', 'L_2.fit', 'L_1.FIT', 'L_3.fit', 'dark.fts', 'x.fits.gz'], 'the suggestion takes exactly the FITS files');
  const one = patternHint(['only.fz'], 'light_*.fits')!;
  assert.is(one.suggested_pattern, '*.fz');
  assert.match(one.message, /holds 1 FITS file \(1 × \.fz: only\.fz\); the pattern "\*\.fz" takes it$/);
});

test('folderPatternHint: files of the folder only (a sub-folder named like FITS is not a file); a missing folder gives null', async () => {
  await withTempDir('pattern-hint', async (dir) => {
    await writeFile(join(dir, 'a.fit'), 'x');
    await mkdir(join(dir, 'old.fit'));
    const h = await folderPatternHint(dir, '*.fits');
    assert.equal(h?.found, [{ extension: '.fit', count: 1 }]);
    assert.is(await folderPatternHint(join(dir, 'missing'), '*.fits'), null);
  });
});

test.run();
