// PCC library (issue 7 items 2 and 3): colour model, white references, catalogue CSV reader,
// Siegel fit, applyColorMatrixToFile, and runPccOnFile on a fixture with known channel gains —
// the bar: R/G and B/G factors within 0.02 mag of the white-reference truth — plus every typed
// failure (no WCS, not RGB, unreadable, no catalogue stars, too few stars, residual, condition).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readCatalogCsv } from '../../src/astro/catalog/csv.js';
import { siegelLine } from '../../src/astro/pcc-fit.js';
import { linearityTest } from '../../src/astro/photometry.js';
import { applyColorMatrixToFile, isPccError, runPccOnFile, runStarWhiteOnFile, type PccErrorCode } from '../../src/astro/pcc-file.js';
import { blackbodyRgb, bvToTeff, whiteReference } from '../../src/astro/star-color.js';
import { FitsHeader, readFitsImage, writeFits } from '../../src/fits/index.js';
import { withTempDir, seededRandom } from '../helpers/tmp.js';
import { catalogCsv, magError, pccFixture, truePeak, truthRatios, type PccFixture } from './pcc-fixture.js';

async function rejects(p: Promise<unknown>, code: PccErrorCode): Promise<Error> {
  try {
    await p;
  } catch (e) {
    assert.ok(isPccError(e), `expected PccError, got ${String(e)}`);
    assert.is(e.code, code, e.message);
    return e;
  }
  assert.unreachable(`expected ${code}`);
  throw new Error('unreachable');
}

async function writeFixture(dir: string, f: PccFixture, stars = f.stars): Promise<{ input: string; catalog: string }> {
  const input = join(dir, 'rgb.fits');
  await writeFits(input, { width: f.width, height: f.height, planes: 3, data: f.data }, { header: f.header });
  const catalog = join(dir, 'cat.csv');
  await writeFile(catalog, catalogCsv(stars));
  return { input, catalog };
}

test('colour model: Ballesteros temperatures, hotter stars bluer, G2V near the sun', () => {
  assert.ok(Math.abs(bvToTeff(0.65) - 5800) < 150, `${bvToTeff(0.65)}`);
  assert.ok(bvToTeff(0) > 9000 && bvToTeff(1.5) < 4200);
  let prev = Infinity;
  for (const t of [3000, 4000, 5000, 6500, 9000, 15000]) {
    const [r, g, b] = blackbodyRgb(t);
    assert.ok(Math.abs(r + g + b - 1) < 1e-9);
    assert.ok(r / b < prev, `R/B falls with temperature at ${t} K`);
    prev = r / b;
  }
  // A 6500 K blackbody is close to the D65 white of sRGB.
  const [r, g, b] = blackbodyRgb(6504);
  assert.ok(Math.abs(r / g - 1) < 0.08 && Math.abs(b / g - 1) < 0.08, `${r / g} ${b / g}`);
});

test('white reference: spectral type, B−V, temperature; bad names are typed errors', async () => {
  assert.is(whiteReference('G2V').bv, 0.65);
  assert.is(whiteReference(' g2v ').bv, 0.65);
  assert.is(whiteReference('0.3').bv, 0.3);
  assert.is(whiteReference('5778K').teff, 5778);
  for (const bad of ['sunlight', '9.0', '100K']) {
    try {
      whiteReference(bad);
      assert.unreachable(bad);
    } catch (e) {
      assert.ok(isPccError(e) && e.code === 'PCC_BAD_WHITE_REFERENCE', String(e));
    }
  }
});

test('catalogue CSV: any column order, teff instead of bv, comments, blank colours skipped, typed errors', async () => {
  await withTempDir('pcc-cat', async (dir) => {
    const f = join(dir, 'c.csv');
    await writeFile(f, '# extract\nMAG, Dec ,ra,teff,id\n10.5,-5.1,83.2,5800,a\n\n11,-5.2,83.3,,b\n12,-5.3,83.4,4000,c\n');
    const r = await readCatalogCsv(f);
    assert.is(r.rows, 3);
    assert.is(r.skipped_no_colour, 1);
    assert.equal(r.stars.map((s) => [s.ra, s.dec, s.mag, s.teff, s.bv]), [[83.2, -5.1, 10.5, 5800, null], [83.4, -5.3, 12, 4000, null]]);
    const g = await readCatalogCsv(f, (s) => s.mag > 11);
    assert.is(g.stars.length, 1);
    await writeFile(f, 'ra,dec,bv\n1,2,0.5\n');
    const e1 = await rejects(readCatalogCsv(f), 'PCC_CATALOG_INVALID');
    assert.match(e1.message, /mag/);
    await writeFile(f, 'ra,dec,mag,bv\n1,2,3,0.5\n1,2,x,0.5\n');
    const e2 = await rejects(readCatalogCsv(f), 'PCC_CATALOG_INVALID');
    assert.match(e2.message, /:3: mag "x"/);
    await writeFile(f, 'ra,dec,mag,bv\n400,2,3,0.5\n');
    await rejects(readCatalogCsv(f), 'PCC_CATALOG_INVALID');
    await rejects(readCatalogCsv(join(dir, 'missing.csv')), 'PCC_CATALOG_UNREADABLE');
  });
});

test('Siegel repeated median: exact line despite 40 % outliers', () => {
  const rand = seededRandom(3);
  const x = Array.from({ length: 50 }, () => rand() * 2);
  const y = x.map((v, i) => (i % 5 < 2 ? 10 * rand() : 0.2 + 0.7 * v));
  const l = siegelLine(x, y)!;
  assert.ok(Math.abs(l.a - 0.2) < 1e-9 && Math.abs(l.b - 0.7) < 1e-9, JSON.stringify(l));
  assert.is(siegelLine([1, 1, 1], [1, 2, 3]), null);
});

test('applyColorMatrixToFile: diagonal and 3×3, header kept, NaN kept, typed errors', async () => {
  await withTempDir('pcc-apply', async (dir) => {
    const w = 5;
    const h = 4;
    const n = w * h;
    const data = new Float32Array(3 * n);
    for (let i = 0; i < n; i++) {
      data[i] = i;
      data[n + i] = 2 * i + 1;
      data[2 * n + i] = 100 - i;
    }
    data[7] = NaN;
    const header = new FitsHeader();
    header.set('OBJECT', 'M42');
    const input = join(dir, 'in.fits');
    await writeFits(input, { width: w, height: h, planes: 3, data }, { header });
    const d = await applyColorMatrixToFile({ input, output: join(dir, 'diag.fits'), matrix: [0.5, 1, 2] });
    assert.equal(d.matrix, [[0.5, 0, 0], [0, 1, 0], [0, 0, 2]]);
    const a = await readFitsImage(d.output);
    assert.is(a.header.getString('OBJECT'), 'M42');
    assert.ok(a.header.commentary('HISTORY').some((l) => l.includes('colour matrix')));
    assert.is(a.data[3], 1.5);
    assert.ok(Number.isNaN(a.data[7]!));
    assert.is(a.data[n + 3], 7);
    assert.is(a.data[2 * n + 3], 194);
    const m = [[0.9, 0.1, 0], [0.05, 0.9, 0.05], [0, 0.2, 0.8]];
    const f = await applyColorMatrixToFile({ input, output: join(dir, 'full.fits'), matrix: m });
    const b = await readFitsImage(f.output);
    for (const i of [0, 5, 19]) {
      const px = [data[i]!, data[n + i]!, data[2 * n + i]!];
      for (let c = 0; c < 3; c++) assert.ok(Math.abs(b.data[c * n + i]! - (m[c]![0]! * px[0]! + m[c]![1]! * px[1]! + m[c]![2]! * px[2]!)) < 1e-4);
    }
    await rejects(applyColorMatrixToFile({ input, output: join(dir, 'x.fits'), matrix: [[1, 0], [0, 1]] }), 'PCC_BAD_MATRIX');
    await rejects(applyColorMatrixToFile({ input, output: join(dir, 'x.fits'), matrix: [1, NaN, 1] }), 'PCC_BAD_MATRIX');
    await rejects(applyColorMatrixToFile({ input: join(dir, 'none.fits'), output: join(dir, 'x.fits'), matrix: [1, 1, 1] }), 'PCC_UNREADABLE');
    const mono = join(dir, 'mono.fits');
    await writeFits(mono, { width: w, height: h, data: data.slice(0, n) });
    await rejects(applyColorMatrixToFile({ input: mono, output: join(dir, 'x.fits'), matrix: [1, 1, 1] }), 'PCC_NOT_RGB');
    const ac = new AbortController();
    ac.abort();
    await rejects(applyColorMatrixToFile({ input, output: join(dir, 'x.fits'), matrix: [1, 1, 1], signal: ac.signal }), 'PCC_CANCELLED');
    assert.not.ok(existsSync(join(dir, 'x.fits')));
  });
});

const fx = pccFixture();

test('runPccOnFile: recovers R/G and B/G within 0.02 mag of the G2V white reference; sky neutral', async () => {
  await withTempDir('pcc-run', async (dir) => {
    const { input, catalog } = await writeFixture(dir, fx);
    const diagnosticsFile = join(dir, 'pcc_diagnostics.json');
    const r = await runPccOnFile({ input, output: join(dir, 'out.fits'), catalogFile: catalog, diagnosticsFile });
    const res = r.result;
    const [tr, tb] = truthRatios(fx.gains, res.white_reference.bv!);
    const eR = magError(res.factors[0] / res.factors[1], tr);
    const eB = magError(res.factors[2] / res.factors[1], tb);
    console.log(`  PCC fixture: R/G error ${eR.toFixed(4)} mag, B/G error ${eB.toFixed(4)} mag, ${res.stars_used}/${res.stars_matched} stars, residual ${res.residual_rms.toFixed(4)}, fwhm ${res.fwhm_px.toFixed(2)}`);
    assert.ok(eR < 0.02, `R/G off by ${eR} mag`);
    assert.ok(eB < 0.02, `B/G off by ${eB} mag`);
    assert.ok(res.stars_used >= 40, `${res.stars_used} stars used`);
    assert.ok(Math.max(...res.factors) === 1 && res.condition_number <= 3);
    assert.ok(Math.abs(res.fwhm_px - 3) < 0.4, `fwhm ${res.fwhm_px}`);
    const d = JSON.parse(await readFile(diagnosticsFile, 'utf8'));
    assert.is(d.success, true);
    for (const k of ['used_source', 'stars_matched', 'stars_used', 'residual_rms', 'determinant', 'condition_number', 'apply_mode', 'error', 'factors', 'white_reference']) assert.ok(k in d, k);
    assert.is(d.white_reference.name, 'G2V');
    // Output: the sky is neutral (equal medians), a G2V-coloured star would come out grey.
    const out = await readFitsImage(r.output);
    assert.ok(out.header.commentary('HISTORY').some((l) => l.includes('skystack PCC')));
    const n = fx.width * fx.height;
    const med = [0, 1, 2].map((c) => {
      const v = Array.from(out.data.subarray(c * n, c * n + n).filter((_, i) => i % 7 === 0)).sort((a, b) => a - b);
      return v[v.length >> 1]!;
    });
    assert.ok(Math.abs(med[0]! - med[1]!) < 1 && Math.abs(med[2]! - med[1]!) < 1, `sky medians ${med}`);
    assert.ok(Math.abs(med[1]! - fx.sky[1] * res.factors[1]) < 2);
  });
});

test('runPccOnFile: WCS a few pixels off, teff catalogue, another white reference', async () => {
  await withTempDir('pcc-off', async (dir) => {
    const f = pccFixture({ seed: 4, wcsOffsetPx: [3.5, -2.5], gains: [1.2, 1.0, 0.8] });
    const { input } = await writeFixture(dir, f);
    const catalog = join(dir, 'teff.csv');
    await writeFile(catalog, 'ra,dec,mag,teff\n' + f.stars.map((s) => `${s.ra},${s.dec},${s.mag},${bvToTeff(s.bv)}`).join('\n'));
    const r = await runPccOnFile({ input, output: join(dir, 'out.fits'), catalogFile: catalog, config: { white_reference: 'A0V' } });
    const [tr, tb] = truthRatios(f.gains, r.result.white_reference.bv!);
    assert.ok(Math.abs(r.result.wcs_offset_px[0] - 3.5) < 0.3 && Math.abs(r.result.wcs_offset_px[1] + 2.5) < 0.3, `${r.result.wcs_offset_px}`);
    assert.ok(magError(r.result.factors[0] / r.result.factors[1], tr) < 0.02);
    assert.ok(magError(r.result.factors[2] / r.result.factors[1], tb) < 0.02);
  });
});

test('runPccOnFile: camera bands unlike sRGB (the generator\'s OSC dye curves) still within 0.02 mag at the white reference', async () => {
  await withTempDir('pcc-cam', async (dir) => {
    for (const [seed, gains] of [[21, [0.8, 1, 1.3]], [22, [1.25, 1, 0.7]]] as const) {
      const f = pccFixture({ seed, camera: 'osc_sensor', gains: [...gains], stars: 150 });
      const { input, catalog } = await writeFixture(dir, f);
      const r = await runPccOnFile({ input, output: join(dir, 'out.fits'), catalogFile: catalog });
      const [tr, tb] = truthRatios(f.gains, 0.65, 'osc_sensor');
      const eR = magError(r.result.factors[0] / r.result.factors[1], tr);
      const eB = magError(r.result.factors[2] / r.result.factors[1], tb);
      console.log(`  OSC sensor fixture (seed ${seed}): R/G ${eR.toFixed(4)} mag, B/G ${eB.toFixed(4)} mag, slopes ${r.result.lines.rg.slope.toFixed(3)} / ${r.result.lines.bg.slope.toFixed(3)}, residual ${r.result.residual_rms.toFixed(4)}`);
      assert.ok(eR < 0.02 && eB < 0.02, `${eR} ${eB}`);
    }
  });
});

test('runPccOnFile: wide stars (FWHM 7 px) are measured with a wider window and apertures', async () => {
  await withTempDir('pcc-wide', async (dir) => {
    const f = pccFixture({ seed: 8, fwhm: 7, stars: 70, flux13: 30000 });
    const { input, catalog } = await writeFixture(dir, f);
    const r = await runPccOnFile({ input, output: join(dir, 'out.fits'), catalogFile: catalog });
    // The apertures come from the stars the detection measured on the image, not a guess.
    assert.ok(Math.abs(r.result.fwhm_px - 7) < 0.7, `fwhm ${r.result.fwhm_px}`);
    assert.is(r.result.fwhm_source, 'stack_stars');
    assert.ok(r.result.radii_px.aperture > 12);
    const [tr, tb] = truthRatios(f.gains, 0.65);
    assert.ok(magError(r.result.factors[0] / r.result.factors[1], tr) < 0.02);
    assert.ok(magError(r.result.factors[2] / r.result.factors[1], tb) < 0.02);
  });
});

test('saturated and non-linear stars are left out: clipped cores (flat tops), stars near the clip level, SATURATE', async () => {
  await withTempDir('pcc-sat', async (dir) => {
    // A sensor clipping at 30 000: the ~30 brightest of 120 stars have flat tops.
    const clip = 30000;
    const f = pccFixture({ seed: 5, clip });
    const { input, catalog } = await writeFixture(dir, f);
    const diagnosticsFile = join(dir, 'd.json');
    const r = await runPccOnFile({ input, output: join(dir, 'out.fits'), catalogFile: catalog, diagnosticsFile });
    const res = r.result;
    const clipped = f.stars.filter((s) => Math.max(...truePeak(f, s)) >= clip);
    assert.ok(clipped.length >= 15, `${clipped.length} clipped stars in the fixture`);
    // No used star reaches the clip level; the refused ones are counted by reason and marked.
    const at = (s: { ra: number; dec: number }) => f.stars.find((t) => Math.abs(t.ra - s.ra) < 1e-6 && Math.abs(t.dec - s.dec) < 1e-6)!;
    const usedPeaks = res.stars.filter((s) => s.used).map((s) => Math.max(...truePeak(f, at(s))));
    assert.is(usedPeaks.filter((p) => p >= clip).length, 0, 'a clipped star was used');
    assert.ok(usedPeaks.filter((p) => p >= 0.8 * clip).length <= 1, `${usedPeaks.filter((p) => p >= 0.8 * clip).length} used stars in the non-linear range`);
    assert.ok(res.rejected.saturated! + res.rejected.nonlinear! >= clipped.length - 3, JSON.stringify(res.rejected));
    assert.ok(res.saturation.flat_tops >= 10, JSON.stringify(res.saturation));
    for (const c of [0, 1, 2] as const) assert.ok(Math.abs(res.saturation.clip_level[c]! - clip) < 0.01 * clip, `clip level ${res.saturation.clip_level}`);
    // The calibration still meets the bar on the linear stars.
    const [tr, tb] = truthRatios(f.gains, 0.65);
    assert.ok(magError(res.factors[0] / res.factors[1], tr) < 0.02 && magError(res.factors[2] / res.factors[1], tb) < 0.02);
    const d = JSON.parse(await readFile(diagnosticsFile, 'utf8'));
    assert.is(d.saturation.flat_tops, res.saturation.flat_tops);
    assert.ok(d.stars.some((s: { excluded?: string }) => s.excluded === 'nonlinear') || res.rejected.nonlinear === 0);
    // A header SATURATE: stars peaking at 80 % of it are non-linear, whatever the image shows.
    const g = pccFixture({ seed: 5 });
    g.header.set('SATURATE', 40000);
    const w = await writeFixture(join(dir), g);
    const rs = await runPccOnFile({ input: w.input, output: join(dir, 'out2.fits'), catalogFile: w.catalog });
    assert.is(rs.result.saturation.header_level, 40000);
    const usedS = rs.result.stars.filter((s) => s.used).map((s) => Math.max(...truePeak(g, at(s))));
    assert.ok(usedS.length >= 40 && usedS.every((p) => p < 0.8 * 40000 * 1.02), `max used peak ${Math.max(...usedS)}`);
    assert.ok(rs.result.rejected.nonlinear! >= 10, JSON.stringify(rs.result.rejected));
  });
});

test('linearity: a core clipped in one channel only (a bright red star) is flagged, though its channel sum barely moves', () => {
  // 12 stars with the same PSF: peak = 6 % of the flux in every channel (sky 100); star 11, the
  // brightest, is red and clipped in R alone, its R peak 20 % below its PSF's.
  const rnd = seededRandom(5);
  const ms = Array.from({ length: 12 }, (_, i) => {
    const f = 2e4 * 1.35 ** i;
    const flux: [number, number, number] = [f * 0.8, f, f * 0.6];
    const share = () => 0.06 * (1 + 0.01 * (rnd() - 0.5));
    const peak = flux.map((v) => 100 + v * share()) as [number, number, number];
    return { flux, sky: [100, 100, 100] as [number, number, number], peak };
  });
  const red = ms[11]!;
  red.flux = [red.flux[1] * 1.2, red.flux[1], red.flux[1] * 0.5];
  red.peak = [100 + red.flux[0] * 0.06 * 0.8, 100 + red.flux[1] * 0.06, 100 + red.flux[2] * 0.06];
  const sumShare = (m: (typeof ms)[number]) => (m.peak[0] + m.peak[1] + m.peak[2] - 300) / (m.flux[0] + m.flux[1] + m.flux[2]);
  // Summed over the channels the red star keeps 91 % of a whole core's share: a test on the sum
  // (cut at 10 % here) would take it for a whole star while its R/G is 20 % too low.
  assert.ok(sumShare(red) > 0.06 * 0.9, String(sumShare(red)));
  const t = linearityTest(ms);
  assert.equal(t.flags.map((f, i) => (f ? i : -1)).filter((i) => i >= 0), [11]);
  assert.is(t.flattened, 1);
  // The clip level is known only where a core was clipped: R, from that one star (no flat top, so one star does not set it).
  assert.equal(t.clip_level, [null, null, null]);
  // Two red stars clipped alike set R's clip level, and a third red star peaking at 85 % of it is non-linear too.
  const second = { flux: [...red.flux] as [number, number, number], sky: red.sky, peak: [...red.peak] as [number, number, number] };
  const near = { flux: [red.flux[0] * 0.4, red.flux[1] * 0.4, red.flux[2] * 0.4] as [number, number, number], sky: red.sky, peak: [100 + 0.85 * (red.peak[0] - 100), 100 + red.flux[1] * 0.4 * 0.06, 100 + red.flux[2] * 0.4 * 0.06] as [number, number, number] };
  near.flux[0] = (near.peak[0] - 100) / 0.06;
  const t2 = linearityTest([...ms, second, near]);
  assert.ok(t2.clip_level[0] !== null && Math.abs(t2.clip_level[0] - red.peak[0]) < 1e-6, String(t2.clip_level));
  assert.equal([t2.clip_level[1], t2.clip_level[2]], [null, null]);
  assert.ok(t2.flags[12] && t2.flags[13], JSON.stringify(t2.flags));
});

test('FWHM: no star measurable on the image → the fixed fallback, reported as such', async () => {
  await withTempDir('pcc-fwhm', async (dir) => {
    // Catalogue stars, but an image of a flat sky only.
    const f = pccFixture({ seed: 6, flux13: 0, noise: 0 });
    const { input, catalog } = await writeFixture(dir, f);
    const diagnosticsFile = join(dir, 'd.json');
    await rejects(runPccOnFile({ input, output: join(dir, 'o.fits'), catalogFile: catalog, diagnosticsFile }), 'PCC_TOO_FEW_STARS');
    const d = JSON.parse(await readFile(diagnosticsFile, 'utf8'));
    assert.is(d.fwhm_source, 'fallback');
    assert.is(d.fwhm_px, 3);
  });
});

test('star_white fallback: median star colour made neutral, labelled non-photometric; its own failures are typed', async () => {
  await withTempDir('pcc-white', async (dir) => {
    const f = pccFixture({ seed: 12, stars: 150 });
    const { input } = await writeFixture(dir, f);
    const diagnosticsFile = join(dir, 'd.json');
    const w = await runStarWhiteOnFile({ input, output: join(dir, 'white.fits'), failure: { code: 'PCC_NO_CATALOG', message: 'PCC_NO_CATALOG: no star catalogue' }, diagnosticsFile });
    const r = w.result;
    assert.is(r.method, 'star_white');
    assert.is(r.photometric, false);
    assert.ok(r.stars_used >= 60, `${r.stars_used} stars`);
    // The truth: the factors that make a star of the stars' median colour neutral.
    const medianBv = f.stars.map((s) => s.bv).sort((a, b) => a - b)[f.stars.length >> 1]!;
    const [tr, tb] = truthRatios(f.gains, medianBv);
    const eR = magError(r.factors[0] / r.factors[1], tr);
    const eB = magError(r.factors[2] / r.factors[1], tb);
    console.log(`  star_white: R/G ${eR.toFixed(4)} mag, B/G ${eB.toFixed(4)} mag from a B−V ${medianBv.toFixed(2)} star made neutral, ${r.stars_used} stars`);
    assert.ok(eR < 0.06 && eB < 0.06, `${eR} ${eB}`);
    const d = JSON.parse(await readFile(diagnosticsFile, 'utf8'));
    assert.is(d.method, 'star_white');
    assert.is(d.success, false);
    assert.is(d.photometric, false);
    assert.is(d.failure_reason, 'PCC_NO_CATALOG');
    assert.match(d.note, /non-photometric/);
    assert.is(d.star_white.stars_used, r.stars_used);
    const out = await readFitsImage(w.output);
    assert.ok(out.header.commentary('HISTORY').some((l) => l.includes('star_white (NOT photometric')));
    // Too few stars for it either: a typed failure, recorded.
    const empty = pccFixture({ seed: 13, flux13: 0 });
    const e = await writeFixture(join(dir), empty);
    await rejects(runStarWhiteOnFile({ input: e.input, output: join(dir, 'w2.fits'), failure: { code: 'PCC_NO_WCS', message: 'no WCS' }, diagnosticsFile }), 'PCC_TOO_FEW_STARS');
    const d2 = JSON.parse(await readFile(diagnosticsFile, 'utf8'));
    assert.is(d2.method, 'star_white');
    assert.is(d2.star_white.failure_reason, 'PCC_TOO_FEW_STARS');
  });
});

test('runPccOnFile failures: no WCS, no catalogue stars, too few stars, bad residual, ill-conditioned', async () => {
  await withTempDir('pcc-fail', async (dir) => {
    const { input, catalog } = await writeFixture(dir, fx);
    const out = join(dir, 'out.fits');
    const diagnosticsFile = join(dir, 'd.json');
    // No WCS.
    const bare = join(dir, 'bare.fits');
    await writeFits(bare, { width: fx.width, height: fx.height, planes: 3, data: fx.data });
    await rejects(runPccOnFile({ input: bare, output: out, catalogFile: catalog, diagnosticsFile }), 'PCC_NO_WCS');
    assert.is(JSON.parse(await readFile(diagnosticsFile, 'utf8')).failure_reason, 'PCC_NO_WCS');
    // Catalogue of another sky region.
    const far = join(dir, 'far.csv');
    await writeFile(far, catalogCsv(fx.stars.map((s) => ({ ...s, ra: (s.ra + 90) % 360 }))));
    await rejects(runPccOnFile({ input, output: out, catalogFile: far }), 'PCC_NO_CATALOG_STARS');
    // Only 6 stars in the catalogue: fewer catalogue stars on the image than min_stars.
    const few = join(dir, 'few.csv');
    await writeFile(few, catalogCsv(fx.stars.slice(0, 6)));
    const eFew = await rejects(runPccOnFile({ input, output: out, catalogFile: few, diagnosticsFile }), 'PCC_NO_CATALOG_STARS');
    assert.match(eFew.message, /only 6 catalogue stars .* need ≥ 10/);
    // 14 catalogue stars on the image, but where the image has none (moved 60 px): found too few.
    const moved = join(dir, 'moved.csv');
    await writeFile(moved, catalogCsv(fx.stars.slice(0, 14).map((s) => ({ ...s, dec: s.dec + (60 * 2.1) / 3600 }))));
    await rejects(runPccOnFile({ input, output: out, catalogFile: moved, diagnosticsFile }), 'PCC_TOO_FEW_STARS');
    const d = JSON.parse(await readFile(diagnosticsFile, 'utf8'));
    assert.is(d.success, false);
    assert.is(d.failure_reason, 'PCC_TOO_FEW_STARS');
    assert.ok(d.stars_in_field >= 10 && d.stars_matched <= 2, `${d.stars_in_field} ${d.stars_matched}`);
    // Catalogue colours scrambled: image colours no longer follow the catalogue's (the slopes
    // come out near or below 0), so no factors are reported.
    const rand = seededRandom(9);
    const bvs = fx.stars.map((s) => s.bv).sort(() => rand() - 0.5);
    const scrambled = join(dir, 'scrambled.csv');
    await writeFile(scrambled, catalogCsv(fx.stars.map((s, i) => ({ ...s, bv: bvs[i]! }))));
    const eScr = await rejects(runPccOnFile({ input, output: out, catalogFile: scrambled, diagnosticsFile }), 'PCC_INVERTED_COLOURS');
    assert.match(eScr.message, /R\/G slope -?\d\.\d+, B\/G slope -?\d\.\d+/);
    const dScr = JSON.parse(await readFile(diagnosticsFile, 'utf8'));
    assert.is(dScr.failure_reason, 'PCC_INVERTED_COLOURS');
    assert.ok(Math.min(dScr.lines.rg.slope, dScr.lines.bg.slope) <= 0, JSON.stringify(dScr.lines));
    // Catalogue colours spread 3× wider than the stars' (B−V stretched about 0.65): the image
    // relation is compressed to a slope of about 1/3, below min_slope 0.5.
    const wide = join(dir, 'wide.csv');
    await writeFile(wide, catalogCsv(fx.stars.map((s) => ({ ...s, bv: 0.65 + 3 * (s.bv - 0.65) }))));
    const eWide = await rejects(runPccOnFile({ input, output: out, catalogFile: wide, diagnosticsFile }), 'PCC_COMPRESSED_COLOURS');
    const dWide = JSON.parse(await readFile(diagnosticsFile, 'utf8'));
    assert.ok(dWide.lines.rg.slope > 0.15 && dWide.lines.rg.slope < 0.5, `rg slope ${dWide.lines.rg.slope}`);
    assert.ok(dWide.lines.bg.slope > 0.15 && dWide.lines.bg.slope < 0.5, `bg slope ${dWide.lines.bg.slope}`);
    assert.match(eWide.message, /min_slope 0\.5/);
    // ...and passes when the user lowers min_slope (an unusual camera).
    const okWide = await runPccOnFile({ input, output: join(dir, 'wide-ok.fits'), catalogFile: wide, config: { min_slope: 0.15 } });
    assert.ok(okWide.result.lines.rg.slope < 0.5);
    // Catalogue colours with 0.15 mag of noise: the relation holds, the scatter does not.
    const noisy = join(dir, 'noisy.csv');
    const g = () => Math.sqrt(-2 * Math.log(Math.max(rand(), 1e-12))) * Math.cos(2 * Math.PI * rand());
    await writeFile(noisy, catalogCsv(fx.stars.map((s) => ({ ...s, bv: s.bv + 0.15 * g() }))));
    await rejects(runPccOnFile({ input, output: out, catalogFile: noisy, config: { max_residual_rms: 0.05 } }), 'PCC_BAD_RESIDUAL');
    // A channel 5× weaker than the others: factors spread beyond max_condition_number 3.
    const weak = pccFixture({ gains: [0.2, 1, 1] });
    const w = await writeFixture(join(dir), { ...weak }, weak.stars);
    await rejects(runPccOnFile({ input: w.input, output: out, catalogFile: w.catalog }), 'PCC_ILL_CONDITIONED');
    assert.not.ok(existsSync(out));
    // Bad options and input.
    await rejects(runPccOnFile({ input, output: out, catalogFile: catalog, config: { white_reference: 'Vega-ish' } }), 'PCC_BAD_WHITE_REFERENCE');
    await rejects(runPccOnFile({ input, output: out, catalogFile: catalog, config: { mag_limit: 3 } }), 'PCC_BAD_OPTIONS');
    await rejects(runPccOnFile({ input: join(dir, 'nope.fits'), output: out, catalogFile: catalog }), 'PCC_UNREADABLE');
    await rejects(runPccOnFile({ input, output: out, catalogFile: join(dir, 'nope.csv') }), 'PCC_CATALOG_UNREADABLE');
  });
});

test.run();
