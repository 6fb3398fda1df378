// PCC end to end on a generated OSC session (fixtures/generator): the real pipeline from
// INPUT_SCAN to REPORT, with ASTROMETRY replaced by the generator's true WCS (moved onto the
// reference frame the pipeline chose), and the generator's star list as the catalogue. The
// camera's dye curves are not sRGB, the stack went through calibration-free debayer,
// registration and rejection, so this checks the whole chain: a G2V star must come out neutral
// (truth: truth.colour_model.white_reference.ratios, in camera electrons). Tolerance 0.03 mag,
// not the 0.02 (that bar is met on the known-gain fixtures, test/astro/pcc.test.ts):
// the truth here is the camera's electrons, and channel gains the stack itself introduces
// (per-channel normalisation, debayer) count as error. Measured at seed 31: R/G 0.024, B/G
// 0.008 mag with apertures from the detected stars' FWHM (3.05 px; 0.018 / 0.006 with the older
// moment FWHM, slightly wider apertures); larger apertures shrink the R/G part (0.012 at 10 px,
// 0.004 at 14 px, fewer stars), a per-channel curve-of-growth correction on 10 stars did not
// (tried, not kept); the source is not separated further.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { TanWcs } from '../../src/astro/wcs.js';
import { parseRawStackConfig } from '../../src/config/rawstack.js';
import { ok, type Phase } from '../../src/pipeline/phase.js';
import { runRawStack, standardPhases } from '../../src/pipeline/rawstack/run.js';
import type { RawStackState } from '../../src/pipeline/rawstack/state.js';
import { withTempDir } from '../helpers/tmp.js';
import { magError } from '../astro/pcc-fixture.js';
import { demoSkyOptions } from '../../src/cli/demo.js';
import { existsSync } from 'node:fs';
import { KStarsTextCatalog } from '../../src/astro/catalog/kstars-text.js';

/** The truth WCS (frame 0) carried onto frame `r`: p = A·q + t ⇒ CD' = CD·A⁻¹, CRPIX' = t + 1 + A·(CRPIX − 1). */
function wcsOfFrame(truth: Truth, r: number): TanWcs {
  const [[a, b, tx], [c, d, ty]] = truth.frames[r]!.transform;
  const det = a * d - b * c;
  const inv = [[d / det, -b / det], [-c / det, a / det]] as const;
  const cd = truth.wcs.cd;
  const [px, py] = [truth.wcs.crpix[0] - 1, truth.wcs.crpix[1] - 1];
  return new TanWcs({
    crval: truth.wcs.crval,
    crpix: [tx + 1 + a * px + b * py, ty + 1 + c * px + d * py],
    cd: [
      [cd[0][0] * inv[0][0] + cd[0][1] * inv[1][0], cd[0][0] * inv[0][1] + cd[0][1] * inv[1][1]],
      [cd[1][0] * inv[0][0] + cd[1][1] * inv[1][0], cd[1][0] * inv[0][1] + cd[1][1] * inv[1][1]],
    ],
  });
}

test('generated OSC session: PCC makes the G2V white reference neutral within 0.03 mag', async () => {
  await withTempDir('pcc-e2e', async (dir) => {
    const data = join(dir, 'data');
    const truth = await generateDataset({ out: data, kind: 'osc', pattern: 'RGGB', frames: 8, width: 800, height: 600, seed: 31, calibration: false });
    const catalog = join(dir, 'catalogue.csv');
    await writeFile(catalog, 'ra,dec,mag,bv\n' + truth.stars.map((s) => `${s.ra},${s.dec},${s.mag},${s.bv}`).join('\n') + '\n');
    const astrometry: Phase<RawStackState> = {
      name: 'ASTROMETRY',
      optional: true,
      async run(ctx) {
        (ctx.state as RawStackState & { wcs?: unknown }).wcs = wcsOfFrame(truth, ctx.state.referenceIndex ?? 0);
        return ok();
      },
    };
    const parsed = parseRawStackConfig({ lights_dir: join(data, 'lights'), pcc: { catalog_file: catalog, mag_limit: 16 }, runtime_limits: { parallel_workers: 2, memory_budget: 256 } });
    assert.ok(parsed.ok);
    if (!parsed.ok) return;
    const phases = standardPhases().map((p) => (p.name === 'ASTROMETRY' ? astrometry : p));
    const result = await runRawStack(parsed.config, { runsDir: join(dir, 'runs'), device: 'cpu', phases });
    assert.is(result.status, 'ok');
    const pcc = result.phases.find((p) => p.phase === 'PCC');
    const d = JSON.parse(await readFile(join(result.runDir, 'artifacts', 'preprocess', 'pcc_diagnostics.json'), 'utf8'));
    assert.is(pcc?.status, 'ok', JSON.stringify({ pcc, error: d.error }));
    const w = truth.colour_model.white_reference.ratios;
    const eR = magError(d.factors.R / d.factors.G, w.g! / w.r!);
    const eB = magError(d.factors.B / d.factors.G, w.g! / w.b!);
    console.log(`  generated OSC: R/G ${eR.toFixed(4)} mag, B/G ${eB.toFixed(4)} mag from the camera truth; ${d.stars_used}/${d.stars_matched} stars, residual ${d.residual_rms.toFixed(4)}, fwhm ${d.fwhm_px.toFixed(2)}, offset ${d.wcs_offset_px}`);
    assert.ok(eR < 0.03 && eB < 0.03, `${eR} ${eB}`);
    assert.is(result.phases.find((p) => p.phase === 'HYPERMETRIC_STRETCH')?.status, 'ok');
  });
});

// The demo's session (`skystack demo`: real Orion Tycho-2 stars, a 63 mm camera lens, OSC,
// calibration frames), its generator star list as catalogue.csv: PCC must see the camera's
// colour relation, not grey clipped cores. The demo once reported slopes 0.20 / 0.23 here (its
// optic was f/0.6 and PCC used saturated stars); the generator's dye curves against the sRGB
// model give R/G ≈ 0.84 and B/G ≈ 0.59 (test/astro/pcc.test.ts on the same curves).
test('the demo session: PCC slopes of the camera (R/G 0.75–0.95, B/G 0.5–0.7), saturated stars refused, measured FWHM', async () => {
  await withTempDir('pcc-demo', async (dir) => {
    const data = join(dir, 'data');
    const truth = await generateDataset({ out: data, kind: 'osc', pattern: 'RGGB', frames: 8, width: 1024, height: 768, seed: 1, badFrames: 'none', ...demoSkyOptions('orion', 1024) });
    const catalog = join(dir, 'catalogue.csv');
    await writeFile(catalog, 'ra,dec,mag,bv\n' + truth.stars.map((st) => `${st.ra},${st.dec},${st.mag},${st.bv}`).join('\n') + '\n');
    const astrometry: Phase<RawStackState> = {
      name: 'ASTROMETRY',
      optional: true,
      async run(ctx) {
        (ctx.state as RawStackState & { wcs?: unknown }).wcs = wcsOfFrame(truth, ctx.state.referenceIndex ?? 0);
        return ok();
      },
    };
    const parsed = parseRawStackConfig({ lights_dir: join(data, 'lights'), bias_dir: join(data, 'bias'), darks_dir: join(data, 'darks'), flats_dir: join(data, 'flats'), pcc: { catalog_file: catalog }, runtime_limits: { parallel_workers: 2, memory_budget: 256 } });
    assert.ok(parsed.ok);
    if (!parsed.ok) return;
    const phases = standardPhases().map((p) => (p.name === 'ASTROMETRY' ? astrometry : p));
    const result = await runRawStack(parsed.config, { runsDir: join(dir, 'runs'), device: 'cpu', phases });
    const d = JSON.parse(await readFile(join(result.runDir, 'artifacts', 'preprocess', 'pcc_diagnostics.json'), 'utf8'));
    assert.is(d.success, true, d.error);
    console.log(`  demo session: slopes R/G ${d.lines.rg.slope.toFixed(3)}, B/G ${d.lines.bg.slope.toFixed(3)}, scatter ${d.lines.rg.residual_rms.toFixed(4)} / ${d.lines.bg.residual_rms.toFixed(4)}, ${d.stars_used}/${d.stars_in_field} stars, refused ${JSON.stringify(d.rejected)}, fwhm ${d.fwhm_px.toFixed(2)} (${d.fwhm_source})`);
    assert.ok(d.lines.rg.slope > 0.75 && d.lines.rg.slope < 0.95, `R/G slope ${d.lines.rg.slope}`);
    assert.ok(d.lines.bg.slope > 0.5 && d.lines.bg.slope < 0.7, `B/G slope ${d.lines.bg.slope}`);
    assert.ok(d.lines.rg.residual_rms < 0.05 && d.lines.bg.residual_rms < 0.05);
    assert.is(d.fwhm_source, 'stack_stars');
    // Every star whose core the generator clipped clearly (peak 25 % over the clip level in the
    // reference frame, so clipped in most frames) and PCC measured was refused. A star that just
    // reaches the level in the reference frame loses a few per cent of one channel's core in the
    // stack and keeps its colour (the demo's red V 7.3 star: 1.6σ from the R/G line).
    const sat = truth.stars.filter((t) => t.saturated && t.peak_e >= 1.25 * truth.sensor.saturation_e);
    const usedSat = d.stars.filter((s: { ra: number; dec: number; used: boolean }) => s.used && sat.some((t) => Math.abs(t.ra - s.ra) < 1e-5 && Math.abs(t.dec - s.dec) < 1e-5));
    assert.is(usedSat.length, 0, JSON.stringify(usedSat));
    assert.ok(d.rejected.saturated + d.rejected.nonlinear >= 5, JSON.stringify(d.rejected));
    const w = truth.colour_model.white_reference.ratios;
    assert.ok(magError(d.factors.R / d.factors.G, w.g! / w.r!) < 0.03 && magError(d.factors.B / d.factors.G, w.g! / w.b!) < 0.03);
  });
});

// Nothing hand-made: the sky is kstars-data's own stars (positions, V, B−V) around Orion, and the
// run leaves pcc.catalog_file empty, so PCC must find the installed catalogue by itself, carry it
// to DATE-OBS and calibrate against it. Skips without kstars-data.
test('no catalogue file: PCC finds kstars-data by itself and calibrates a sky of its stars', async () => {
  const starsDat = '/usr/share/kstars/stars.dat';
  if (!existsSync(starsDat)) {
    console.log('  kstars-data not installed: installed-catalogue end-to-end test skipped');
    return;
  }
  await withTempDir('pcc-kstars', async (dir) => {
    const field = (await (await KStarsTextCatalog.open(starsDat)).query({ cone: { ra: 83.8, dec: -5.4, radius: 3 } })).stars;
    const data = join(dir, 'data');
    const truth = await generateDataset({ out: data, kind: 'osc', pattern: 'RGGB', frames: 6, width: 1024, height: 768, seed: 5, calibration: false, badFrames: 'none', ...demoSkyOptions('orion', 1024), skyStars: field.map((s) => ({ ra: s.ra, dec: s.dec, mag: s.mag, bv: s.bv! })) });
    const astrometry: Phase<RawStackState> = {
      name: 'ASTROMETRY',
      optional: true,
      async run(ctx) {
        (ctx.state as RawStackState & { wcs?: unknown }).wcs = wcsOfFrame(truth, ctx.state.referenceIndex ?? 0);
        return ok();
      },
    };
    const parsed = parseRawStackConfig({ lights_dir: join(data, 'lights'), runtime_limits: { parallel_workers: 2, memory_budget: 256 } });
    assert.ok(parsed.ok);
    if (!parsed.ok) return;
    assert.is(parsed.config.pcc.catalog_file, '');
    const before = process.env.SKYSTACK_KSTARS_DATA;
    process.env.SKYSTACK_KSTARS_DATA = '/usr/share/kstars';
    let result;
    try {
      result = await runRawStack(parsed.config, { runsDir: join(dir, 'runs'), device: 'cpu', phases: standardPhases().map((p) => (p.name === 'ASTROMETRY' ? astrometry : p)) });
    } finally {
      if (before === undefined) delete process.env.SKYSTACK_KSTARS_DATA;
      else process.env.SKYSTACK_KSTARS_DATA = before;
    }
    const d = JSON.parse(await readFile(join(result.runDir, 'artifacts', 'preprocess', 'pcc_diagnostics.json'), 'utf8'));
    console.log(`  kstars-data sky: ${d.used_source}, ${d.catalog?.stars_returned} catalogue stars (${d.catalog?.read}), epoch ${d.catalog?.epoch}, ${d.stars_used}/${d.stars_in_field} used, slopes ${d.lines?.rg?.slope?.toFixed(3)} / ${d.lines?.bg?.slope?.toFixed(3)}`);
    assert.is(d.success, true, d.error);
    assert.is(d.used_source, 'kstars:stars.dat');
    assert.is(d.catalog.package, 'kstars-data');
    assert.is(d.catalog.epoch_source, 'DATE-OBS');
    assert.ok(d.catalog.proper_motion_applied > 0);
    assert.ok(d.lines.rg.slope > 0.75 && d.lines.rg.slope < 0.95 && d.lines.bg.slope > 0.5 && d.lines.bg.slope < 0.7, JSON.stringify(d.lines));
    const w = truth.colour_model.white_reference.ratios;
    assert.ok(magError(d.factors.R / d.factors.G, w.g! / w.r!) < 0.03 && magError(d.factors.B / d.factors.G, w.g! / w.b!) < 0.03, JSON.stringify(d.factors));
    assert.is(result.phases.find((p) => p.phase === 'HYPERMETRIC_STRETCH')?.status, 'ok');
  });
});

test.run();
