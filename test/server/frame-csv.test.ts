// The report endpoint's frame_quality.csv reading: numbers parsed, empty cells null, and file
// names quoted because they hold commas or quotes (quality-artifacts.ts csvField) kept whole.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { csvNumericRecords as parseCsv } from '../../src/shared/csv.js';

test('frame_quality.csv: quoted names with commas stay one cell, numbers are numbers', () => {
  const text = 'index,file,fwhm,registration_cc\n0,light_1.fits,2.5,0.98\n1,"night 2, M42.fits",3e-1,\n2,"say ""hi"".fits",-1.25,1\n';
  assert.equal(parseCsv(text), [
    { index: 0, file: 'light_1.fits', fwhm: 2.5, registration_cc: 0.98 },
    { index: 1, file: 'night 2, M42.fits', fwhm: 0.3, registration_cc: null },
    { index: 2, file: 'say "hi".fits', fwhm: -1.25, registration_cc: 1 },
  ]);
});

test.run();
