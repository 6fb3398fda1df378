// Star catalogues of PCC (src/astro/catalog/): the HTM mesh, the KStars readers against the
// files Debian's kstars-data installs (known bright stars; an HTM cone query equals a scan of
// every record; the two KStars files agree), proper motion to an epoch, the CSV source behind
// the same interface, and which catalogue a run takes (catalog_file > installed > none).
// The tests on the installed files skip, saying why, when kstars-data is missing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { mkdir, open, writeFile, copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { CsvCatalog } from '../../src/astro/catalog/csv.js';
import { catalogCapabilities, chooseCatalog, findInstalledCatalogs, openCatalogFile } from '../../src/astro/catalog/find.js';
import { trixelCount, trixelOf, trixelsInCone } from '../../src/astro/catalog/htm.js';
import { KStarsBinaryCatalog, readBinaryHeader, readTrixels, tychoToJohnson } from '../../src/astro/catalog/kstars-binary.js';
import { KStarsTextCatalog, parseStarLine } from '../../src/astro/catalog/kstars-text.js';
import { applyProperMotion, coneTest, julianEpoch, unitVector, type CatalogStar } from '../../src/astro/catalog/types.js';
import { isPccError } from '../../src/astro/pcc-errors.js';
import { angularSeparationDeg } from '../../src/astro/wcs.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

const KSTARS = '/usr/share/kstars';
const BINARY = [join(KSTARS, 'namedstars.dat'), join(KSTARS, 'unnamedstars.dat')];
const TEXT = join(KSTARS, 'stars.dat');
const haveBinary = BINARY.every((f) => existsSync(f));
const haveText = existsSync(TEXT);
if (!haveBinary || !haveText) console.log(`  kstars-data not installed (${KSTARS}/stars.dat, namedstars.dat, unnamedstars.dat): tests on the real KStars files skipped (apt-get install kstars-data)`);

/** Bright stars with their J2000 position (SIMBAD) and Johnson V, B−V (Hipparcos catalogue). */
const KNOWN = [
  { name: 'Vega', ra: 279.23473, dec: 38.78369, v: 0.03, bv: 0.0 },
  { name: 'Betelgeuse', ra: 88.79294, dec: 7.40706, v: 0.45, bv: 1.5 },
  { name: 'Rigel', ra: 78.63447, dec: -8.20164, v: 0.18, bv: -0.03 },
  { name: 'Sirius', ra: 101.28716, dec: -16.71612, v: -1.44, bv: 0.01 },
];

test('HTM: trixel of the octahedron vertices and faces, children nest, cone lists hold every point inside', () => {
  assert.is(trixelCount(3), 512);
  // Level 0: the 8 root triangles S0..S3, N0..N3 (ids 8..15 → trixels 0..7).
  assert.is(trixelOf(45, -45, 0), 0); // S0: between +x, −z, +y
  assert.is(trixelOf(135, -45, 0), 1);
  assert.is(trixelOf(225, -45, 0), 2);
  assert.is(trixelOf(315, -45, 0), 3);
  assert.is(trixelOf(315, 45, 0), 4); // N0: +x, +z, −y
  assert.is(trixelOf(225, 45, 0), 5);
  assert.is(trixelOf(135, 45, 0), 6);
  assert.is(trixelOf(45, 45, 0), 7);
  const rand = seededRandom(3);
  for (let k = 0; k < 500; k++) {
    const ra = rand() * 360;
    const dec = Math.asin(2 * rand() - 1) * (180 / Math.PI);
    // A level-3 trixel lies inside its level-2 parent: id >> 2.
    const t3 = trixelOf(ra, dec, 3);
    const t2 = trixelOf(ra, dec, 2);
    assert.is((t3 + trixelCount(3)) >> 2, t2 + trixelCount(2), `${ra} ${dec}`);
    // Every point of a cone lies in one of the cone's trixels.
    const cone = { ra: rand() * 360, dec: Math.asin(2 * rand() - 1) * (180 / Math.PI), radius: 0.2 + rand() * 5 };
    const list = new Set(trixelsInCone(cone, 3));
    const inside = coneTest(cone);
    for (let j = 0; j < 20; j++) {
      const r = cone.radius * Math.sqrt(rand());
      const a = rand() * 2 * Math.PI;
      const dDec = r * Math.cos(a);
      const pRa = cone.ra + (r * Math.sin(a)) / Math.max(1e-6, Math.cos(((cone.dec + dDec) * Math.PI) / 180));
      const pDec = Math.max(-90, Math.min(90, cone.dec + dDec));
      const pr = ((pRa % 360) + 360) % 360;
      if (inside(pr, pDec)) assert.ok(list.has(trixelOf(pr, pDec, 3)), `cone ${JSON.stringify(cone)} point ${pr} ${pDec}`);
    }
  }
  // A small cone needs few trixels; the whole sky all of them.
  assert.ok(trixelsInCone({ ra: 83.8, dec: -5.4, radius: 1 }, 3).length <= 6);
  assert.is(trixelsInCone({ ra: 0, dec: 0, radius: 180 }, 3).length, 512);
});

test('epochs and proper motion: DATE-OBS to Julian years; μα·cos δ moves RA by 1/cos δ', () => {
  assert.ok(Math.abs(julianEpoch('2000-01-01T12:00:00')! - 2000) < 1e-9);
  assert.ok(Math.abs(julianEpoch('2026-03-14T21:00:00.000')! - 2026.1995) < 1e-4);
  assert.is(julianEpoch('not a date'), null);
  // Barnard's star (pm −798.6, +10328.1 mas/yr) from J2000 to J2025: 4.3′ north.
  const [ra, dec] = applyProperMotion(269.45402, 4.66828, -798.58, 10328.12, 2000, 2025);
  assert.ok(Math.abs((dec - 4.66828) * 3600 - 258.2) < 0.1, `${dec}`);
  assert.ok(Math.abs((ra - 269.45402) * 3600 * Math.cos((4.66828 * Math.PI) / 180) + 19.96) < 0.05, `${ra}`);
  const [r0] = applyProperMotion(359.9999, 0, 1000, 0, 2000, 2010);
  assert.ok(r0 >= 0 && r0 < 0.01, `wraps: ${r0}`);
  const u = unitVector(90, 0);
  assert.ok(Math.abs(u[1] - 1) < 1e-12);
});

test('KStars binary files: header as KStars reads it, every record in the trixel of its position but proper-motion copies', async () => {
  if (!haveBinary) return;
  for (const file of BINARY) {
    const fh = await open(file, 'r');
    try {
      const h = await readBinaryHeader(fh, file);
      assert.ok(h.littleEndian);
      assert.is(h.htmLevel, 3);
      assert.is(h.index.length, 512);
      assert.is(h.recordSize, 32);
      assert.equal(h.fields.map((f) => f.name), ['RA', 'Dec', 'dRA', 'dDec', 'parallax', 'HD', 'mag', 'bv_index', 'spec_type', 'flags', 'unused']);
      assert.is(h.faintMag, 8);
      // Records are contiguous, trixel after trixel, right after the 5-byte data prefix.
      assert.is(h.index[0]!.offset, h.dataOffset + 5);
      for (let t = 1; t < 512; t++) assert.is(h.index[t]!.offset, h.index[t - 1]!.offset + h.index[t - 1]!.count * 32);
      const all = await readTrixels(fh, h, h.index.map((_, i) => i));
      assert.is(all.length, h.records);
      // My HTM agrees with KStars' for every record except the copies KStars writes of fast
      // stars into the trixels their track crosses (each a byte-identical duplicate).
      const keys = new Map<string, number>();
      for (const r of all) keys.set(r.key, (keys.get(r.key) ?? 0) + 1);
      let elsewhere = 0;
      for (const r of all) if (trixelOf(r.ra, r.dec, 3) !== r.trixel) elsewhere++;
      const copies = all.length - keys.size;
      assert.is(elsewhere, copies, `${file}: ${elsewhere} records off their trixel, ${copies} duplicates`);
      // Brightest first within a trixel.
      for (const t of [0, 100, 300]) {
        const recs = all.filter((r) => r.trixel === t);
        for (let i = 1; i < recs.length; i++) assert.ok(recs[i]!.mag >= recs[i - 1]!.mag);
      }
    } finally {
      await fh.close();
    }
  }
});

test('KStars binary files: a cone query reads only its trixels and returns what a scan of every record finds', async () => {
  if (!haveBinary) return;
  const cat = await KStarsBinaryCatalog.open(BINARY);
  const scan: { ra: number; dec: number; mag: number; bv: number }[] = [];
  const seen = new Set<string>();
  for (const file of BINARY) {
    const fh = await open(file, 'r');
    const h = await readBinaryHeader(fh, file);
    for (const r of await readTrixels(fh, h, h.index.map((_, i) => i))) {
      if (seen.has(r.key)) continue;
      seen.add(r.key);
      const j = tychoToJohnson(r.mag, r.colour);
      scan.push({ ra: r.ra, dec: r.dec, mag: j.v, bv: j.bv });
    }
    await fh.close();
  }
  const rand = seededRandom(17);
  const cones = [
    { ra: 83.8, dec: -5.4, radius: 3 }, // Orion
    { ra: 10.68, dec: 41.27, radius: 2 }, // M31
    { ra: 0.5, dec: 0.3, radius: 4 }, // across RA 0 and several roots
    { ra: 37.95, dec: 89.26, radius: 2.5 }, // around the pole
    ...Array.from({ length: 6 }, () => ({ ra: rand() * 360, dec: Math.asin(2 * rand() - 1) * (180 / Math.PI), radius: 1 + rand() * 6 })),
  ];
  for (const cone of cones) {
    const q = await cat.query({ cone, magMax: 7.5 });
    const inside = coneTest(cone);
    const expect = scan.filter((s) => inside(s.ra, s.dec) && s.mag <= 7.5);
    const key = (s: { ra: number; dec: number }) => `${s.ra.toFixed(5)} ${s.dec.toFixed(5)}`;
    assert.equal(q.stars.map(key).sort(), expect.map(key).sort(), JSON.stringify(cone));
    assert.ok(q.stars.every((s) => s.mag <= 7.5 && s.bv !== null));
    const [n, of] = q.read.split(' of ').map((x) => parseInt(x, 10));
    assert.ok(n! > 0 && n! <= 2 * 64 && of === 1024, q.read);
  }
});

test('KStars files: Vega, Betelgeuse, Rigel and Sirius where they are, with their V and B−V; both files agree', async () => {
  if (!haveBinary || !haveText) return;
  const text = await KStarsTextCatalog.open(TEXT);
  const bin = await KStarsBinaryCatalog.open(BINARY);
  assert.is(text.describe().mag_limit, 8.99);
  assert.is(bin.describe().mag_limit, 8);
  for (const k of KNOWN) {
    const t = (await text.query({ cone: { ra: k.ra, dec: k.dec, radius: 0.02 } })).stars;
    assert.is(t.length, 1, k.name);
    const s = t[0]!;
    assert.ok(angularSeparationDeg(s.ra, s.dec, k.ra, k.dec) * 3600 < 2, `${k.name} at ${s.ra} ${s.dec}`);
    assert.ok(Math.abs(s.mag - k.v) <= 0.02, `${k.name} V ${s.mag}`);
    assert.ok(Math.abs(s.bv! - k.bv) <= 0.02, `${k.name} B−V ${s.bv}`);
    // The binary files hold Tycho photometry (converted) and mix the epochs J2000 and J1991.25
    // (Sirius, 1.3″/yr, sits 11″ from its J2000 place): looser, but the same star.
    const b = (await bin.query({ cone: { ra: k.ra, dec: k.dec, radius: 0.02 } })).stars;
    assert.is(b.length, 1, k.name);
    assert.ok(angularSeparationDeg(b[0]!.ra, b[0]!.dec, k.ra, k.dec) * 3600 < 15, `${k.name} binary at ${b[0]!.ra} ${b[0]!.dec}`);
    assert.ok(Math.abs(b[0]!.mag - k.v) < 0.15 && Math.abs(b[0]!.bv! - k.bv) < 0.1, `${k.name} binary ${b[0]!.mag} ${b[0]!.bv}`);
  }
  // Proper motion to 2026: Sirius (−546, −1223 mas/yr) moves 32″ south-west of its J2000 place.
  const s26 = (await text.query({ cone: { ra: 101.28716, dec: -16.71612, radius: 0.05 }, epoch: 2026 })).stars[0]!;
  assert.ok(Math.abs((s26.dec + 16.71612) * 3600 + 31.8) < 0.5, `Sirius 2026 dec ${s26.dec}`);
  // In a field both files hold, the converted Tycho colours follow stars.dat's Johnson B−V.
  const cone = { ra: 83.8, dec: -5.4, radius: 4 };
  const tq = (await text.query({ cone, magMax: 7.5 })).stars;
  const bq = (await bin.query({ cone, magMax: 7.5 })).stars;
  const pairs: [CatalogStar, CatalogStar][] = [];
  for (const a of tq) {
    const m = bq.find((b) => angularSeparationDeg(a.ra, a.dec, b.ra, b.dec) < 2 / 3600);
    if (m) pairs.push([a, m]);
  }
  assert.ok(pairs.length > 50, `${pairs.length} common stars`);
  const dBv = pairs.map(([a, b]) => b.bv! - a.bv!).sort((x, y) => x - y);
  const dV = pairs.map(([a, b]) => b.mag - a.mag).sort((x, y) => x - y);
  const med = (v: number[]) => v[v.length >> 1]!;
  assert.ok(Math.abs(med(dBv)) < 0.05 && Math.abs(med(dV)) < 0.05, `median differences B−V ${med(dBv)}, V ${med(dV)}`);
});

test('KStars text list: streamed up to the faint limit; malformed lines are typed errors; layout parsed as KStars does', async () => {
  const line = '051432.27 -081205.9 +000001.9-000000.600004.2 00.18-0.03B8 0 0.05   2.07, bet Ori, Rigel';
  const r = parseStarLine(line)!;
  assert.ok(Math.abs(r.ra - 78.634458) < 1e-5 && Math.abs(r.dec + 8.201639) < 1e-5);
  assert.equal([r.pmRa, r.pmDec, r.mag, r.bv], [1.9, -0.6, 0.18, -0.03]);
  assert.is(parseStarLine('# comment'), null);
  await withTempDir('ks-text', async (dir) => {
    const f = join(dir, 'stars.dat');
    const lines = ['# header', line, '055510.31 +072425.4 +000027.3+000010.900007.6 00.4501.50M2 0            , alp Ori, Betelgeuse', '052000.00 -050000.0 +000000.0+000000.000000.0 05.0000.50G0 0', '052100.00 -050000.0 +000000.0+000000.000000.0 07.0000.50G0 0'];
    await writeFile(f, lines.join('\n') + '\n');
    const cat = await openCatalogFile(f);
    assert.ok(cat instanceof KStarsTextCatalog);
    const q = await cat.query({ cone: { ra: 79, dec: -6, radius: 5 }, magMax: 6 });
    assert.equal(q.stars.map((s) => s.mag), [0.18, 5]);
    assert.is(q.rows_read, 4, 'stops at the first star fainter than magMax');
    await writeFile(f, [lines[1], 'garbage that is long enough to be taken for a data line of the star list'].join('\n'));
    try {
      await cat.query({ cone: { ra: 79, dec: -6, radius: 50 } });
      assert.unreachable('malformed line');
    } catch (e) {
      assert.ok(isPccError(e) && e.code === 'PCC_CATALOG_INVALID' && /:2:/.test(e.message), String(e));
    }
  });
});

test('CSV behind the same interface: cone, magnitude window, pmra/pmdec to the epoch', async () => {
  await withTempDir('cat-csv', async (dir) => {
    const f = join(dir, 'c.csv');
    await writeFile(f, 'ra,dec,mag,bv,pmra,pmdec\n10,20,8,0.5,0,0\n10.5,20,9,0.6,1000,0\n30,20,8,0.5,0,0\n10,20.2,15,0.5,0,0\n');
    const cat = await openCatalogFile(f);
    assert.ok(cat instanceof CsvCatalog);
    assert.is(cat.describe().kind, 'csv');
    const q = await cat.query({ cone: { ra: 10, dec: 20, radius: 1 }, magMax: 14, epoch: 2036 });
    assert.is(q.stars.length, 2);
    const moved = q.stars.find((s) => s.mag === 9)!;
    assert.ok(Math.abs((moved.ra - 10.5) * 3600 * Math.cos((20 * Math.PI) / 180) - 36) < 0.01, `${moved.ra}`);
    assert.is(q.proper_motion_applied, 1);
  });
});

test('which catalogue: catalog_file > installed kstars-data (stars.dat before the binary files) > none', async () => {
  await withTempDir('cat-choose', async (dir) => {
    const csv = join(dir, 'mine.csv');
    await writeFile(csv, 'ra,dec,mag,bv\n10,20,8,0.5\n');
    const empty = join(dir, 'empty');
    await mkdir(empty);
    // Nothing installed: no catalogue, and the search is reported.
    const none = await chooseCatalog('', [empty]);
    assert.is(none.catalog, null);
    assert.is(none.source, 'none');
    assert.equal(none.installed.searched, [empty]);
    // A catalogue file wins over anything installed.
    const withFile = await chooseCatalog(csv, [empty]);
    assert.is(withFile.source, 'catalog_file');
    assert.is(withFile.catalog!.id, `catalog_file:${csv}`);
    try {
      await chooseCatalog(join(dir, 'missing.csv'), [empty]);
      assert.unreachable('missing catalog_file');
    } catch (e) {
      assert.ok(isPccError(e) && e.code === 'PCC_CATALOG_UNREADABLE');
    }
    if (!haveBinary || !haveText) return;
    // A KStars folder: stars.dat first, the binary files second; a copy with only the binary files serves those.
    const ks = await findInstalledCatalogs([KSTARS]);
    assert.equal(ks.catalogs.map((c) => c.id), ['kstars:stars.dat', 'kstars:namedstars.dat+unnamedstars.dat']);
    assert.is((await chooseCatalog('', [KSTARS])).catalog!.id, 'kstars:stars.dat');
    assert.is((await chooseCatalog(csv, [KSTARS])).catalog!.id, `catalog_file:${csv}`);
    const binOnly = join(dir, 'ks');
    await mkdir(binOnly);
    for (const f of BINARY) await copyFile(f, join(binOnly, f.split('/').pop()!));
    assert.is((await chooseCatalog('', [binOnly])).catalog!.id, 'kstars:namedstars.dat+unnamedstars.dat');
    // A broken installed file is listed as unusable, not offered.
    await writeFile(join(binOnly, 'stars.dat'), 'not a star list at all, but long enough to look like a line of one\n');
    const broken = await findInstalledCatalogs([binOnly]);
    assert.equal(broken.catalogs.map((c) => c.id), ['kstars:namedstars.dat+unnamedstars.dat']);
    assert.is(broken.unusable.length, 1);
    assert.match(broken.unusable[0]!.reason, /PCC_CATALOG_INVALID/);
    // What /api/system/info lists.
    const caps = await catalogCapabilities('', [KSTARS]);
    assert.equal(caps.catalogs.map((c) => [c.id, c.used_by_default, c.package]), [
      ['kstars:stars.dat', true, 'kstars-data'],
      ['kstars:namedstars.dat+unnamedstars.dat', false, 'kstars-data'],
    ]);
    const capsFile = await catalogCapabilities(csv, [KSTARS]);
    assert.equal(capsFile.catalogs.map((c) => c.used_by_default), [true, false, false]);
  });
});

test.run();
