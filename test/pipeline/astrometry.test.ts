// ASTROMETRY phase (issue 7 item 1): every skip reason, a failing configured solver (error,
// run goes on, PCC then skips no_wcs), the write-out of a solution (headers of the stacked
// outputs, stacked_rgb.wcs, preprocessing_registration.json, state.wcs) through a fake ASTAP,
// and the issue's bar on a real run: generated OSC lights of real Tycho-2 stars placed by a
// known TAN WCS, stacked and solved by solve-field within 5″ (centre) and 0.1 % (scale).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { lookupSolvers } from '../../src/astro/solve.js';
import { readWcsFile } from '../../src/astro/wcs-file.js';
import { TanWcs, angularSeparationDeg } from '../../src/astro/wcs.js';
import { readFitsHeader } from '../../src/fits/index.js';
import { solverStars } from '../../src/astro/solve-image.js';
import { astrometryPhase } from '../../src/pipeline/rawstack/phases/astrometry.js';
import { pccPhase } from '../../src/pipeline/rawstack/phases/pcc.js';
import { runRawStack } from '../../src/pipeline/rawstack/run.js';
import { applyAffine, generateDataset } from '../../fixtures/generator/index.js';
import { TYCHO2_FIELDS, tycho2Field } from '../../fixtures/astrometry/tycho2.js';
import { fakeAstap, fakeSolveField } from '../astro/fake-solvers.js';
import { withTempDir } from '../helpers/tmp.js';
import { config, runOn, synthRgb } from './postprocess-helpers.js';

const RECORDED_WCS = new URL('../../../fixtures/astrometry/astap-solution.wcs', import.meta.url).pathname;
const img = synthRgb({ seed: 3, gradient: 0 });
const off = { bge: false, pcc: false, hypermetric_stretch: false };
const nowhere = { astrometry_net_bin: '/nonexistent/solve-field', astap_bin: '/nonexistent/astap_cli' };
const readJson = async (file: string) => JSON.parse(await readFile(file, 'utf8'));

test('skipped: disabled, no_rgb_stack, solver_missing (each solver choice)', async () => {
  await withTempDir('astrometry-skip', async (dir) => {
    const a = await runOn(img, config({ postprocess: { ...off, astrometry: false } }), join(dir, 'a'), [astrometryPhase]);
    assert.equal([a.end('ASTROMETRY')?.status, a.end('ASTROMETRY')?.reason], ['skipped', 'disabled']);
    const b = await runOn(img, config({ postprocess: { ...off, astrometry: true } }), join(dir, 'b'), [astrometryPhase], { rgb: false });
    assert.equal([b.end('ASTROMETRY')?.status, b.end('ASTROMETRY')?.reason], ['skipped', 'no_rgb_stack']);
    for (const solver of ['auto', 'astrometry_net', 'astap'] as const) {
      const c = await runOn(img, config({ postprocess: { ...off, astrometry: true }, astrometry: { solver, ...nowhere } }), join(dir, `c-${solver}`), [astrometryPhase]);
      const end = c.end('ASTROMETRY') as { status: string; reason?: string; message?: string };
      assert.equal([end.status, end.reason], ['skipped', 'solver_missing']);
      if (solver !== 'astap') assert.match(end.message ?? '', /astrometry_net_bin \/nonexistent\/solve-field/);
      if (solver !== 'astrometry_net') assert.match(end.message ?? '', /astap_bin \/nonexistent\/astap_cli/);
      assert.is(c.result.status, 'ok');
    }
    // An ASTAP binary without its star database (Debian's astap-cli) is a missing solver too.
    const astap = await fakeAstap(join(dir, 'fa'), RECORDED_WCS);
    const d = await runOn(img, config({ postprocess: { ...off, astrometry: true }, astrometry: { solver: 'astap', astap_bin: astap.bin, astap_data_dir: join(dir, 'fa') } }), join(dir, 'd'), [astrometryPhase]);
    assert.equal([d.end('ASTROMETRY')?.status, d.end('ASTROMETRY')?.reason], ['skipped', 'solver_missing']);
  });
});

test('a configured solver that finds nothing: error solver_failed, diagnostics written, run ok, PCC skipped no_wcs', async () => {
  await withTempDir('astrometry-fail', async (dir) => {
    const an = await fakeSolveField(join(dir, 'fake'), 'nosolution');
    const cfg = config({ postprocess: { ...off, astrometry: true, pcc: true }, astrometry: { solver: 'astrometry_net', astrometry_net_bin: an.bin, astrometry_net_data_dir: an.dataDir } });
    const r = await runOn(img, cfg, join(dir, 'run'), [astrometryPhase, pccPhase]);
    const end = r.end('ASTROMETRY') as { status: string; reason?: string; message?: string };
    assert.equal([end.status, end.reason], ['error', 'solver_failed']);
    assert.match(end.message ?? '', /no solution from astrometry_net/);
    assert.is(r.result.status, 'ok');
    assert.equal([r.end('PCC')?.status, r.end('PCC')?.reason], ['skipped', 'no_wcs']);
    assert.is(r.state.wcs, undefined);
    const diag = await readJson(join(r.result.runDir, 'artifacts', 'preprocess', 'preprocessing_registration.json'));
    assert.is(diag.astrometry.solved, false);
    assert.is(diag.astrometry.error, 'solver_failed');
    assert.equal(diag.astrometry.attempts.map((a: { mode: string }) => a.mode), ['blind']);
    assert.ok(diag.astrometry.stars_detected > 50, `stars ${diag.astrometry.stars_detected}`);
    const hdr = await readFitsHeader(r.state.outputs.stacked_rgb!);
    assert.is(TanWcs.fromHeader(hdr.header), undefined, 'no WCS written after a failure');
  });
});

test('a solution is written into the stacked outputs, stacked_rgb.wcs, preprocessing_registration.json and state.wcs', async () => {
  await withTempDir('astrometry-ok', async (dir) => {
    const astap = await fakeAstap(join(dir, 'fake'), RECORDED_WCS);
    const cfg = config({ postprocess: { ...off, astrometry: true }, astrometry: { solver: 'astap', astap_bin: astap.bin, astap_data_dir: astap.dataDir, search_radius: 4 } });
    const r = await runOn(img, cfg, join(dir, 'run'), [astrometryPhase]);
    const end = r.end('ASTROMETRY') as Record<string, unknown>;
    assert.is(end.status, 'ok', JSON.stringify(end));
    assert.is(end.solver, 'astap');
    assert.ok(Math.abs((end.pixel_scale_arcsec as number) - 20) < 1e-6);
    assert.is(end.wcs_file, 'artifacts/preprocess/stacked_rgb.wcs');
    const expected = TanWcs.fromHeader(await readWcsFile(RECORDED_WCS))!;
    assert.equal(r.state.wcs?.cd, expected.cd);
    const out = await readFitsHeader(r.state.outputs.stacked_rgb!);
    assert.equal(TanWcs.fromHeader(out.header)?.crval, expected.crval);
    assert.is(out.header.getBoolean('PLTSOLVD'), true);
    assert.ok(out.header.commentary('HISTORY').some((h) => h.startsWith('ASTROMETRY: astap')));
    assert.is(out.layout.planes, 3);
    const art = join(r.result.runDir, 'artifacts', 'preprocess');
    assert.equal(TanWcs.fromHeader(await readWcsFile(join(art, 'stacked_rgb.wcs')))?.cd, expected.cd);
    const j = await readJson(join(art, 'preprocessing_registration.json'));
    assert.is(j.n_frames, 4);
    assert.is(j.registration_file, 'artifacts/preprocess/registration.json');
    const a = j.astrometry;
    assert.is(a.solved, true);
    assert.is(a.solver, 'astap');
    assert.ok(Math.abs(a.ra - 83.8) < 1e-6 && Math.abs(a.dec + 5.4) < 1e-6);
    assert.ok(Math.abs(a.rotation_deg - 12) < 1e-6);
    assert.equal(a.field_deg.map((v: number) => Math.round(v * 1e6) / 1e6), [(640 * 20) / 3600, (480 * 20) / 3600].map((v) => Math.round(v * 1e6) / 1e6));
    assert.is(a.wcs.CTYPE1, 'RA---TAN');
    assert.is(a.wcs.CRVAL2, -5.4);
    assert.is(a.hints.radiusDeg, 4);
    assert.equal(a.outputs_with_wcs, ['outputs/stacked_rgb.fits']);
    assert.ok(r.state.artifacts.some((x) => x.type === 'wcs' && x.path === 'artifacts/preprocess/stacked_rgb.wcs'));
  });
});

test('solverStars keeps one detection per star cluster, brightest first', () => {
  const s = solverStars([{ x: 10, y: 10, flux: 5 }, { x: 12, y: 11, flux: 50 }, { x: 40, y: 40, flux: 20 }, { x: 41, y: 39, flux: 1 }, { x: Number.NaN, y: 1, flux: 99 }], 6);
  assert.equal(s, [{ x: 12, y: 11, flux: 50 }, { x: 40, y: 40, flux: 20 }]);
});

test('real run: generated OSC lights of Tycho-2 stars, stacked and solved by solve-field (5″ / 0.1 % bar)', async () => {
  const [an] = await lookupSolvers({ solver: 'astrometry_net', astrometry_net_bin: '', astrometry_net_data_dir: '', astap_bin: '', astap_data_dir: '' });
  if (!an!.ok) {
    console.log(`  skipped: ${an!.reason}`);
    return;
  }
  await withTempDir('astrometry-real', async (dir) => {
    const { ra, dec } = TYCHO2_FIELDS.orion;
    const truth = await generateDataset({ out: join(dir, 'data'), kind: 'osc', frames: 4, width: 640, height: 480, seed: 41, calibration: false, badFrames: 'none', skyStars: tycho2Field('orion'), ra, dec, rotationDeg: 23, focalLengthMm: 40, exptime: 10 });
    const cfg = config({ lights_dir: join(dir, 'data', 'lights'), postprocess: { ...off, astrometry: true }, runtime_limits: { parallel_workers: 2, memory_budget: 256 } });
    const result = await runRawStack(cfg, { runsDir: join(dir, 'runs'), device: 'cpu' });
    const ast = result.phases.find((p) => p.phase === 'ASTROMETRY');
    assert.is(ast?.status, 'ok', JSON.stringify(ast));
    const art = join(result.runDir, 'artifacts', 'preprocess');
    const j = await readJson(join(art, 'preprocessing_registration.json'));
    const ref = truth.frames[j.reference_index]!;
    const sep = angularSeparationDeg(j.astrometry.ra, j.astrometry.dec, ref.centre.ra, ref.centre.dec) * 3600;
    const scaleErr = Math.abs(j.astrometry.pixel_scale_arcsec / truth.instrument.pixel_scale_arcsec - 1);
    // Every catalogue star lands where the reference light has it.
    const wcs = TanWcs.fromHeader((await readFitsHeader(result.outputs.stacked_rgb!)).header)!;
    const resid: number[] = [];
    for (const s of truth.stars) {
      const [fx, fy] = applyAffine(ref.transform, s.x, s.y);
      if (fx < 10 || fy < 10 || fx > 630 || fy > 470) continue;
      const p = wcs.skyToPixel(s.ra, s.dec)!;
      resid.push(Math.hypot(p[0] - fx, p[1] - fy));
    }
    resid.sort((a, b) => a - b);
    const medianResid = resid[Math.floor(resid.length / 2)]!;
    console.log(`  solved by ${j.astrometry.index} from ${j.astrometry.stars_detected} detections in ${j.astrometry.duration_ms} ms: centre off ${sep.toFixed(3)}″, scale off ${(scaleErr * 100).toFixed(4)} %, median star residual ${medianResid.toFixed(3)} px over ${resid.length} stars`);
    assert.ok(sep < 5, `centre ${sep}″`);
    assert.ok(scaleErr < 0.001, `scale ${scaleErr}`);
    assert.ok(medianResid < 0.5, `residual ${medianResid} px`);
    // OSC runs write only stacked_rgb.fits (STACKING); it carries the WCS now.
    assert.equal(j.astrometry.outputs_with_wcs, ['outputs/stacked_rgb.fits']);
    assert.ok(existsSync(join(art, 'stacked_rgb.wcs')));
    assert.equal(j.astrometry.hints.source, { centre: 'ra_dec', scale: 'focallen_xpixsz' });
    assert.is(j.astrometry.attempts[0].mode, 'hinted');
    const manifest = await readJson(join(art, 'artifacts_manifest.json'));
    assert.ok(JSON.stringify(manifest).includes('preprocessing_registration.json'));
  });
});

test('real run, ASTROMETRY → PCC: PCC measures the stars through the solved WCS (state.wcs)', async () => {
  const [an] = await lookupSolvers({ solver: 'astrometry_net', astrometry_net_bin: '', astrometry_net_data_dir: '', astap_bin: '', astap_data_dir: '' });
  if (!an!.ok) {
    console.log(`  skipped: ${an!.reason}`);
    return;
  }
  await withTempDir('astrometry-pcc', async (dir) => {
    const { ra, dec } = TYCHO2_FIELDS.m31;
    const truth = await generateDataset({ out: join(dir, 'data'), kind: 'osc', frames: 3, width: 640, height: 480, seed: 43, calibration: false, badFrames: 'none', skyStars: tycho2Field('m31'), ra, dec, rotationDeg: -40, focalLengthMm: 40, exptime: 2 });
    // The PCC catalogue: the generated stars with their true colours (ra,dec,mag,bv).
    const catalog = join(dir, 'catalog.csv');
    await writeFile(catalog, ['ra,dec,mag,bv', ...truth.stars.map((s) => `${s.ra},${s.dec},${s.mag},${s.bv}`)].join('\n') + '\n');
    const cfg = config({ lights_dir: join(dir, 'data', 'lights'), postprocess: { ...off, astrometry: true, pcc: true }, pcc: { catalog_file: catalog }, runtime_limits: { parallel_workers: 2, memory_budget: 256 } });
    const result = await runRawStack(cfg, { runsDir: join(dir, 'runs'), device: 'cpu' });
    const status = Object.fromEntries(result.phases.map((p) => [p.phase, `${p.status}${p.reason ? `/${p.reason}` : ''}`]));
    assert.is(status.ASTROMETRY, 'ok', JSON.stringify(result.phases));
    const diag = await readJson(join(result.runDir, 'artifacts', 'preprocess', 'pcc_diagnostics.json'));
    const report = await readJson(join(result.runDir, 'artifacts', 'preprocess', 'preprocessing_report.json'));
    const pcc = report.postprocess_results.find((x: { phase: string }) => x.phase === 'PCC');
    console.log(`  PCC ${status.PCC}: wcs from ${pcc?.values?.wcs_source}, ${diag.stars_matched} matched, ${diag.stars_used} used`);
    assert.is(pcc?.values?.wcs_source, 'astrometry');
    assert.ok(diag.stars_matched > 0, 'catalogue stars found through the solved WCS');
  });
});

test.run();
