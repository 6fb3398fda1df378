// Plate-solver adapters without a solver: solve-field and ASTAP argument arrays (hinted and
// blind), the recorded ASTAP outputs (.wcs text style, .ini of a run without database), the
// xylist file, header hints and the .wcs file we write.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile } from 'node:fs/promises';
import { FitsHeader } from '../../src/fits/header.js';
import { headerHints, solveHints, DEFAULT_HINT_RADIUS_DEG } from '../../src/astro/hints.js';
import { astapArgs, astapIniMessage } from '../../src/astro/solver-astap.js';
import { addPaths, astrometryNetArgs, BLIND_SCALE_FACTOR, indexFromLog } from '../../src/astro/solver-astrometry-net.js';
import { parseWcsText, readWcsFile } from '../../src/astro/wcs-file.js';
import { wcsFileBytes, writeWcsIntoFits } from '../../src/astro/wcs-fits.js';
import { readFitsNative, writeFits } from '../../src/fits/index.js';
import { withTempDir } from '../helpers/tmp.js';
import { TanWcs, angularSeparationDeg } from '../../src/astro/wcs.js';
import { xylistBytes } from '../../src/astro/xylist.js';

const FIX = new URL('../../../fixtures/astrometry/', import.meta.url);
const hints = { ra: 83.8, dec: -5.4, scaleArcsec: 20, scaleTolerance: 0.1, radiusDeg: 5 };
const after = (args: string[], flag: string) => args[args.indexOf(flag) + 1];

test('solve-field arguments: hinted has scale ±10 % and the centre; blind drops the centre and widens the scale', () => {
  const base = { xylist: '/t/stars.xyls', dir: '/t', configFile: '/t/a.cfg', wcsFile: '/t/s.wcs', width: 640, height: 480, hints, cpuLimitS: 42.2 };
  const h = astrometryNetArgs({ ...base, mode: 'hinted' });
  assert.is(h[0], '/t/stars.xyls');
  for (const flag of ['--no-plots', '--overwrite', '--crpix-center']) assert.ok(h.includes(flag), flag);
  assert.is(after(h, '--config'), '/t/a.cfg');
  assert.is(after(h, '--cpulimit'), '43');
  assert.is(after(h, '--wcs'), '/t/s.wcs');
  assert.is(after(h, '--width'), '640');
  assert.is(after(h, '--scale-units'), 'arcsecperpix');
  assert.is(Number(after(h, '--scale-low')), 18);
  assert.is(Number(after(h, '--scale-high')), 22);
  assert.is(Number(after(h, '--ra')), 83.8);
  assert.is(Number(after(h, '--dec')), -5.4);
  assert.is(Number(after(h, '--radius')), 5);
  for (const out of ['--new-fits', '--rdls', '--corr', '--match', '--index-xyls']) assert.is(after(h, out), 'none', out);
  const b = astrometryNetArgs({ ...base, mode: 'blind' });
  assert.not.ok(b.includes('--ra') || b.includes('--dec') || b.includes('--radius'));
  assert.is(Number(after(b, '--scale-low')), 20 / BLIND_SCALE_FACTOR);
  assert.is(Number(after(b, '--scale-high')), 20 * BLIND_SCALE_FACTOR);
  const none = astrometryNetArgs({ ...base, hints: { scaleTolerance: 0.1, radiusDeg: 180 }, mode: 'blind' });
  assert.not.ok(none.includes('--scale-low'));
});

test('ASTAP arguments: -ra in hours, -spd = Dec + 90, -fov = image height in degrees; blind is -r 180 without -ra', () => {
  const h = astapArgs({ image: '/t/l.fits', dataDir: '/opt/astap', outBase: '/t/astap-hinted', height: 480, hints, mode: 'hinted' });
  assert.equal(h.slice(0, 6), ['-f', '/t/l.fits', '-d', '/opt/astap', '-o', '/t/astap-hinted']);
  assert.is(Number(after(h, '-r')), 5);
  assert.ok(Math.abs(Number(after(h, '-ra')) - 83.8 / 15) < 1e-6);
  assert.ok(Math.abs(Number(after(h, '-spd')) - 84.6) < 1e-9);
  assert.ok(Math.abs(Number(after(h, '-fov')) - (480 * 20) / 3600) < 1e-6);
  assert.is(after(h, '-z'), '0');
  const b = astapArgs({ image: '/t/l.fits', dataDir: '/opt/astap', outBase: '/t/b', height: 480, hints, mode: 'blind' });
  assert.is(after(b, '-r'), '180');
  assert.not.ok(b.includes('-ra') || b.includes('-spd'));
  const noScale = astapArgs({ image: '/t/l.fits', dataDir: '/d', outBase: '/t/b', height: 480, hints: { scaleTolerance: 0.1, radiusDeg: 180 }, mode: 'blind' });
  assert.is(after(noScale, '-fov'), '0');
});

test('recorded ASTAP .wcs (text lines, 3-digit exponents) reads as the TAN WCS it describes', async () => {
  const header = await readWcsFile(new URL('astap-solution.wcs', FIX).pathname);
  assert.is(header.getBoolean('PLTSOLVD'), true);
  assert.match(header.getString('WARNING') ?? '', /scale was inaccurate/);
  const wcs = TanWcs.fromHeader(header)!;
  assert.ok(wcs);
  const [ra, dec] = wcs.centre(640, 480);
  assert.ok(angularSeparationDeg(ra, dec, 83.8, -5.4) * 3600 < 0.01);
  assert.ok(Math.abs(wcs.pixelScaleArcsec - 20) < 1e-6);
  assert.ok(Math.abs(wcs.rotationDeg - 12) < 1e-6);
  // Same cards as 80-character records without line breaks (what `-wcs` / astrometry.net write).
  const text = await readFile(new URL('astap-solution.wcs', FIX), 'latin1');
  const records = text.split('\n').filter(Boolean).map((l) => l.padEnd(80)).join('');
  const again = TanWcs.fromHeader(parseWcsText(records))!;
  assert.equal(again.cd, wcs.cd);
});

test('recorded ASTAP .ini without a database: the ERROR line is reported', async () => {
  const ini = await readFile(new URL('astap-no-database.ini', FIX), 'utf8');
  assert.match(ini, /PLTSOLVD=F/);
  assert.is(astapIniMessage(ini), 'ERROR: No star database found.');
  assert.is(astapIniMessage('PLTSOLVD=T\n'), null);
});

test('xylist: primary + BINTABLE with X, Y in FITS 1-based pixels, brightest first', () => {
  const bytes = xylistBytes([{ x: 10, y: 20.5, flux: 900 }, { x: 0, y: 0, flux: 5 }], 640, 480);
  assert.is(bytes.length % 2880, 0);
  const text = new TextDecoder('latin1').decode(bytes);
  const cardsAt = (off: number) => {
    const images: string[] = [];
    for (let i = off; i < off + 2880; i += 80) images.push(text.slice(i, i + 80));
    const r = FitsHeader.parseImages(images);
    if ('problem' in r) throw new Error(r.problem);
    return r.header;
  };
  const p = cardsAt(0);
  assert.is(p.getNumber('NAXIS'), 0);
  assert.is(p.getNumber('IMAGEW'), 640);
  const t = cardsAt(2880);
  assert.is(t.getString('XTENSION'), 'BINTABLE');
  assert.is(t.getNumber('NAXIS1'), 20);
  assert.is(t.getNumber('NAXIS2'), 2);
  assert.equal([t.getString('TTYPE1'), t.getString('TTYPE2'), t.getString('TTYPE3')], ['X', 'Y', 'FLUX']);
  const view = new DataView(bytes.buffer, bytes.byteOffset + 5760);
  assert.is(view.getFloat64(0, false), 11);
  assert.is(view.getFloat64(8, false), 21.5);
  assert.is(view.getFloat32(16, false), 900);
  assert.is(view.getFloat64(20, false), 1);
});

test('astrometry.net config and log parsing', () => {
  assert.equal(addPaths('# c\ncpulimit 300\nadd_path /usr/share/astrometry # here\n  add_path /x/y\nautoindex\n'), ['/usr/share/astrometry', '/x/y']);
  assert.is(indexFromLog('Field 1: solved with index index-tycho2-11.littleendian.fits.\nField 1 solved'), 'index-tycho2-11.littleendian.fits');
  assert.is(indexFromLog('Did not solve'), null);
});

test('header hints: RA/DEC and FOCALLEN·XPIXSZ, or an existing WCS; radius 180 becomes the hinted default', () => {
  const h = new FitsHeader();
  h.set('RA', 83.74258);
  h.set('DEC', -5.323377);
  h.set('FOCALLEN', 40, { real: true });
  h.set('XPIXSZ', 3.76);
  const hh = headerHints(h, 640, 480);
  assert.ok(Math.abs(hh.ra! - 83.74258) < 1e-9 && hh.dec === -5.323377);
  assert.ok(Math.abs(hh.scaleArcsec! - (206.264806 * 3.76) / 40) < 1e-9);
  assert.equal(hh.source, { centre: 'ra_dec', scale: 'focallen_xpixsz' });
  assert.is(solveHints(hh, 180).radiusDeg, DEFAULT_HINT_RADIUS_DEG);
  assert.is(solveHints(hh, 3).radiusDeg, 3);
  const w = TanWcs.fromCentre({ ra: 10.68, dec: 41.27, width: 800, height: 600, scaleArcsec: 7.5, rotationDeg: -30 });
  const fromWcs = headerHints(w.writeTo(new FitsHeader()), 800, 600);
  assert.equal(fromWcs.source, { centre: 'wcs', scale: 'wcs' });
  assert.ok(Math.abs(fromWcs.scaleArcsec! - 7.5) < 1e-9);
  const bare = headerHints(new FitsHeader(), 10, 10);
  assert.equal(bare, { source: { centre: null, scale: null } });
});

test('our stacked_rgb.wcs (header-only FITS) reads back as the same WCS', () => {
  const w = TanWcs.fromCentre({ ra: 359.5, dec: 62, width: 2048, height: 1536, scaleArcsec: 3.3, rotationDeg: 101 });
  const bytes = wcsFileBytes(w, 2048, 1536);
  assert.is(bytes.length % 2880, 0);
  const h = parseWcsText(new TextDecoder('latin1').decode(bytes));
  assert.is(h.getNumber('IMAGEW'), 2048);
  const back = TanWcs.fromHeader(h)!;
  for (let i = 0; i < 2; i++) for (let j = 0; j < 2; j++) assert.ok(Math.abs(back.cd[i]![j]! - w.cd[i]![j]!) < 1e-15);
  assert.equal(back.crval, w.crval);
});

test('writeWcsIntoFits keeps samples, BITPIX and cards, replaces an older WCS, adds PLTSOLVD and HISTORY', async () => {
  await withTempDir('wcs-into-fits', async (dir) => {
    const file = `${dir}/img.fits`;
    const data = Uint16Array.from({ length: 3 * 8 * 6 }, (_, i) => (i * 977) % 65536);
    const h = new FitsHeader();
    h.set('OBJECT', 'M 42');
    TanWcs.fromCentre({ ra: 1, dec: 2, width: 8, height: 6, scaleArcsec: 9 }).writeTo(h);
    await writeFits(file, { width: 8, height: 6, planes: 3, data }, { header: h });
    const w = TanWcs.fromCentre({ ra: 83.8, dec: -5.4, width: 8, height: 6, scaleArcsec: 20, rotationDeg: 12 });
    await writeWcsIntoFits(file, w, ['ASTROMETRY: test']);
    const back = await readFitsNative(file);
    assert.equal(Array.from(back.data as Uint16Array), Array.from(data));
    assert.is(back.layout.bitpix, 16);
    assert.is(back.header.getString('OBJECT'), 'M 42');
    assert.is(back.header.getBoolean('PLTSOLVD'), true);
    assert.equal(back.header.commentary('HISTORY'), ['ASTROMETRY: test']);
    assert.equal(TanWcs.fromHeader(back.header)?.crval, [83.8, -5.4]);
    assert.is(back.header.cards.filter((c) => c.key === 'CRVAL1').length, 1);
  });
});

test.run();
