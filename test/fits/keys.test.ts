import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FitsHeader, keys } from '../../src/fits/index.js';

const header = (entries: [string, string | number | boolean][]) => {
  const h = new FitsHeader();
  for (const [k, v] of entries) h.set(k, v);
  return h;
};

test('exposure, temperature and gain accept the common keyword variants and quoted numbers', () => {
  assert.is(keys.exposureSeconds(header([['EXPTIME', 120]])), 120);
  assert.is(keys.exposureSeconds(header([['EXPOSURE', '300.5']])), 300.5);
  assert.is(keys.exposureSeconds(header([])), undefined);
  assert.is(keys.sensorTemperature(header([['CCD-TEMP', -10.2]])), -10.2);
  assert.is(keys.sensorTemperature(header([['SENSOR-T', -5]])), -5);
  assert.is(keys.gain(header([['GAIN', 100]])), 100);
  assert.is(keys.gain(header([['EGAIN', 0.25]])), undefined, 'EGAIN is not the gain setting');
  assert.is(keys.electronsPerAdu(header([['GAIN', 100], ['EGAIN', 0.25]])), 0.25);
  assert.is(keys.saturationLevel(header([['DATAMAX', 65535]])), 65535);
  assert.is(keys.saturationLevel(header([])), undefined);
  assert.is(keys.filterName(header([['FILTER', 'Ha  ']])), 'Ha');
  assert.is(keys.objectName(header([['OBJECT', 'M 42']])), 'M 42');
  assert.is(keys.focalLengthMm(header([['FOCALLEN', 530]])), 530);
  assert.is(keys.pixelSizeMicrons(header([['XPIXSZ', 3.76]])), 3.76);
});

test('DATE-OBS forms: with and without zone, date only, garbage', () => {
  assert.is(keys.dateObs(header([['DATE-OBS', '2026-03-14T21:00:00.000']]))?.toISOString(), '2026-03-14T21:00:00.000Z');
  assert.is(keys.dateObs(header([['DATE-OBS', '2026-03-14T21:00:00Z']]))?.toISOString(), '2026-03-14T21:00:00.000Z');
  assert.is(keys.dateObs(header([['DATE-OBS', '2026-03-14']]))?.toISOString(), '2026-03-14T00:00:00.000Z');
  assert.is(keys.dateObs(header([['DATE-OBS', 'yesterday']])), undefined);
});

test('Bayer pattern from BAYERPAT or COLORTYP, offsets and row order', () => {
  assert.is(keys.bayerPattern(header([['BAYERPAT', 'rggb']])), 'RGGB');
  assert.is(keys.bayerPattern(header([['COLORTYP', 'GBRG']])), 'GBRG');
  assert.is(keys.bayerPattern(header([['BAYERPAT', 'XYZW']])), undefined);
  assert.is(keys.bayerPattern(header([])), undefined);
  assert.equal(keys.bayerOffset(header([['XBAYROFF', 1], ['YBAYROFF', 0]])), { x: 1, y: 0 });
  assert.equal(keys.bayerOffset(header([])), { x: 0, y: 0 });
  assert.is(keys.rowOrder(header([['ROWORDER', 'TOP-DOWN']])), 'TOP-DOWN');
  assert.is(keys.rowOrder(header([['ROWORDER', 'sideways']])), undefined);
});

test('pointing from degrees or sexagesimal OBJCTRA/OBJCTDEC', () => {
  assert.equal(keys.pointing(header([['RA', 83.82], ['DEC', -5.39]])), { ra: 83.82, dec: -5.39 });
  const p = keys.pointing(header([['OBJCTRA', '05 35 17.3'], ['OBJCTDEC', '-05 23 28']]))!;
  assert.ok(Math.abs(p.ra - (5 + 35 / 60 + 17.3 / 3600) * 15) < 1e-9);
  assert.ok(Math.abs(p.dec - -(5 + 23 / 60 + 28 / 3600)) < 1e-9);
  const q = keys.pointing(header([['OBJCTRA', '05:35:17'], ['OBJCTDEC', '+22:00:52']]))!;
  assert.ok(Math.abs(q.dec - (22 + 52 / 3600)) < 1e-9);
  assert.is(keys.pointing(header([['OBJCTRA', 'nowhere'], ['OBJCTDEC', '1']])), undefined);
});

test('WCS from CD matrix, from CDELT + CROTA2, and absent', () => {
  const cd = keys.wcs(header([['CTYPE1', 'RA---TAN'], ['CTYPE2', 'DEC--TAN'], ['CRVAL1', 10], ['CRVAL2', 20], ['CRPIX1', 100.5], ['CRPIX2', 50.5], ['CD1_1', -1e-4], ['CD1_2', 0], ['CD2_1', 0], ['CD2_2', 1e-4]]))!;
  assert.equal(cd.cd, [[-1e-4, 0], [0, 1e-4]]);
  assert.equal(cd.crpix, [100.5, 50.5]);
  const rot = keys.wcs(header([['CTYPE1', 'RA---TAN'], ['CTYPE2', 'DEC--TAN'], ['CRVAL1', 10], ['CRVAL2', 20], ['CRPIX1', 1], ['CRPIX2', 1], ['CDELT1', -2e-4], ['CDELT2', 2e-4], ['CROTA2', 90]]))!;
  assert.ok(Math.abs(rot.cd[0][1] - -2e-4) < 1e-12 && Math.abs(rot.cd[1][0] - -2e-4) < 1e-12 && Math.abs(rot.cd[0][0]) < 1e-15);
  assert.is(keys.wcs(header([['CTYPE1', 'RA---TAN']])), undefined);
});

test.run();
