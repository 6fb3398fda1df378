// TAN WCS: round trips pixel → sky → pixel, header round trip, scale/rotation/parity readouts,
// SIP forward and inverse consistency, and agreement with a hand-computed gnomonic position.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { FitsHeader } from '../../src/fits/header.js';
import { TanWcs, angularSeparationDeg } from '../../src/astro/wcs.js';

test('round trip pixel → sky → pixel at several field points, including near the pole', () => {
  for (const [ra, dec, rot] of [[83.8, -5.4, 0], [10, 41.3, 37], [200, 88.5, -120], [359.9, 0.2, 90]] as const) {
    const w = TanWcs.fromCentre({ ra, dec, width: 2048, height: 1536, scaleArcsec: 3.2, rotationDeg: rot });
    for (const [x, y] of [[0, 0], [2047, 1535], [1023.5, 767.5], [100.25, 1400.75]] as const) {
      const [a, d] = w.pixelToSky(x, y);
      const back = w.skyToPixel(a, d)!;
      assert.ok(Math.abs(back[0] - x) < 1e-6 && Math.abs(back[1] - y) < 1e-6, `${ra},${dec}: ${back} vs ${x},${y}`);
    }
    const c = w.centre(2048, 1536);
    assert.ok(angularSeparationDeg(c[0], c[1], ra, dec) < 1e-9);
    assert.ok(Math.abs(w.pixelScaleArcsec - 3.2) < 1e-9);
    assert.ok(Math.abs(w.rotationDeg - rot) < 1e-9, `rotation ${w.rotationDeg} vs ${rot}`);
    assert.is(w.parity, -1);
  }
});

test('east is to the left with north up for the usual parity; one pixel is one scale step', () => {
  const w = TanWcs.fromCentre({ ra: 150, dec: 20, width: 101, height: 101, scaleArcsec: 10 });
  const [ra0, dec0] = w.pixelToSky(50, 50);
  const [raLeft] = w.pixelToSky(40, 50);
  const [, decUp] = w.pixelToSky(50, 60);
  assert.ok(raLeft > ra0, 'RA grows toward smaller x');
  assert.ok(Math.abs((decUp - dec0) * 3600 - 100) < 0.01, `${(decUp - dec0) * 3600}`);
  // Hand gnomonic: a star 1° north of the centre projects to tan(1°) radians on eta.
  const p = w.skyToPixel(150, 21)!;
  const expected = 50 + (Math.tan(Math.PI / 180) * 180 / Math.PI) * 3600 / 10;
  assert.ok(Math.abs(p[1] - expected) < 1e-6, `${p[1]} vs ${expected}`);
  const mirrored = TanWcs.fromCentre({ ra: 150, dec: 20, width: 101, height: 101, scaleArcsec: 10, eastLeft: false });
  assert.is(mirrored.parity, 1);
});

test('header round trip keeps every value and reads CDELT/CROTA2 headers too', () => {
  const w = TanWcs.fromCentre({ ra: 266.4, dec: -29, width: 640, height: 480, scaleArcsec: 1.5, rotationDeg: 12 });
  const h = w.writeTo(new FitsHeader());
  const r = TanWcs.fromHeader(h)!;
  assert.equal(r.crval, w.crval);
  assert.equal(r.crpix, w.crpix);
  assert.equal(r.cd, w.cd);
  assert.is(w.toCards().CTYPE1, 'RA---TAN');
  const legacy = new FitsHeader();
  legacy.set('CTYPE1', 'RA---TAN').set('CTYPE2', 'DEC--TAN').set('CRVAL1', 266.4).set('CRVAL2', -29)
    .set('CRPIX1', 320.5).set('CRPIX2', 240.5).set('CDELT1', -1.5 / 3600).set('CDELT2', 1.5 / 3600).set('CROTA2', 12);
  const l = TanWcs.fromHeader(legacy)!;
  assert.ok(Math.abs(l.rotationDeg - 12) < 1e-9);
  const [a, d] = l.pixelToSky(10, 20);
  const [a2, d2] = w.pixelToSky(10, 20);
  assert.ok(angularSeparationDeg(a, d, a2, d2) < 1e-9);
  const sin = new FitsHeader().set('CTYPE1', 'RA---SIN').set('CTYPE2', 'DEC--SIN').set('CRVAL1', 1).set('CRVAL2', 2)
    .set('CRPIX1', 1).set('CRPIX2', 1).set('CD1_1', 1e-3).set('CD2_2', 1e-3);
  assert.is(TanWcs.fromHeader(sin), undefined);
});

test('SIP distortion: the inverse undoes the forward polynomial and survives the header', () => {
  const base = TanWcs.fromCentre({ ra: 45, dec: 30, width: 1000, height: 800, scaleArcsec: 2 });
  const sip = { a: [[0, 0, 2e-6], [0, 1e-6], [3e-7]], b: [[0, 0, -1e-6], [0, 2e-6], [1e-7]] };
  const w = new TanWcs({ crval: base.crval, crpix: base.crpix, cd: base.cd, sip });
  const h = w.writeTo(new FitsHeader());
  assert.is(h.getString('CTYPE1'), 'RA---TAN-SIP');
  const r = TanWcs.fromHeader(h)!;
  for (const [x, y] of [[0, 0], [999, 799], [123, 456]] as const) {
    const [a, d] = r.pixelToSky(x, y);
    const back = r.skyToPixel(a, d)!;
    assert.ok(Math.hypot(back[0] - x, back[1] - y) < 1e-6, `${back}`);
    const [a0, d0] = base.pixelToSky(x, y);
    if (x === 0) assert.ok(angularSeparationDeg(a, d, a0, d0) * 3600 > 1, 'distortion moves corner stars');
  }
});

test.run();
