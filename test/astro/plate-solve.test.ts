// plateSolve as a library: solver lookup (missing binary / data → solver_missing), the ASTAP
// path end to end through a fake astap_cli returning the recorded .wcs, hinted-then-blind
// attempts, the time limit and cancellation (the solver's whole process group is killed), and a
// REAL astrometry.net solve of a Tycho-2 star field placed by a known TAN WCS (skipped with a
// reason when solve-field or the index package is absent).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile } from 'node:fs/promises';
import { solveFitsFile } from '../../src/astro/solve-image.js';
import { writeFits } from '../../src/fits/index.js';
import { synthRgb } from '../pipeline/postprocess-helpers.js';
import { lookupSolvers, plateSolve, SolveError, type SolveInput, type SolverConfig } from '../../src/astro/solve.js';
import { TanWcs, angularSeparationDeg } from '../../src/astro/wcs.js';
import { TYCHO2_FIELDS, tycho2Field, type Tycho2Field } from '../../fixtures/astrometry/tycho2.js';
import { withTempDir } from '../helpers/tmp.js';
import { fakeAstap, fakeSolveField } from './fake-solvers.js';

const RECORDED_WCS = new URL('../../../fixtures/astrometry/astap-solution.wcs', import.meta.url).pathname;
const noSolver: SolverConfig = { solver: 'auto', astrometry_net_bin: '/nonexistent/solve-field', astrometry_net_data_dir: '', astap_bin: '/nonexistent/astap_cli', astap_data_dir: '' };

function input(over: Partial<SolveInput> = {}): SolveInput {
  const stars = Array.from({ length: 30 }, (_, i) => ({ x: 10 + 20 * i, y: 15 + 13 * i, flux: 1000 - i }));
  return { width: 640, height: 480, stars, hints: { ra: 83.8, dec: -5.4, scaleArcsec: 20, scaleTolerance: 0.1, radiusDeg: 10 }, timeoutS: 20, writeImage: async (dir) => `${dir}/image.fits`, ...over };
}

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

test('no binary or no data → solver_missing naming each solver and why', async () => {
  await withTempDir('solve-missing', async (dir) => {
    const err = await plateSolve(noSolver, input()).catch((e: unknown) => e);
    assert.instance(err, SolveError);
    assert.is((err as SolveError).code, 'solver_missing');
    assert.match((err as SolveError).message, /astrometry_net: astrometry.astrometry_net_bin \/nonexistent\/solve-field is not an executable file/);
    assert.match((err as SolveError).message, /astap: /);
    const an = await fakeSolveField(dir, 'nosolution');
    const [noIndex] = await lookupSolvers({ ...noSolver, solver: 'astrometry_net', astrometry_net_bin: an.bin, astrometry_net_data_dir: dir + '/empty' });
    assert.is(noIndex!.ok, false);
    assert.match(noIndex!.ok ? '' : noIndex!.reason, /no index\*\.fits files/);
    const [ok] = await lookupSolvers({ ...noSolver, solver: 'astrometry_net', astrometry_net_bin: an.bin, astrometry_net_data_dir: an.dataDir });
    assert.equal(ok, { ok: true, install: { solver: 'astrometry_net', binary: an.bin, dataDir: an.dataDir } });
  });
});

test('ASTAP path: the recorded .wcs of a fake astap_cli becomes the result; arguments carry the data dir and hints', async () => {
  await withTempDir('solve-astap', async (dir) => {
    const astap = await fakeAstap(dir, RECORDED_WCS);
    let wrote = '';
    const r = await plateSolve({ ...noSolver, solver: 'astap', astap_bin: astap.bin, astap_data_dir: astap.dataDir }, input({ writeImage: async (d) => (wrote = `${d}/luminance.fits`) }));
    assert.is(r.solver, 'astap');
    assert.is(r.dataDir, astap.dataDir);
    assert.is(r.attempts.length, 1);
    assert.is(r.attempts[0]!.mode, 'hinted');
    const [ra, dec] = r.wcs.centre(640, 480);
    assert.ok(angularSeparationDeg(ra, dec, 83.8, -5.4) * 3600 < 0.01);
    assert.ok(Math.abs(r.wcs.pixelScaleArcsec - 20) < 1e-6);
    const logged = (await readFile(astap.argsLog, 'utf8')).trim().split(' ').slice(1);
    assert.equal(logged.slice(0, 4), ['-f', wrote, '-d', astap.dataDir]);
    assert.ok(logged.includes('-spd') && logged.includes('-ra'));
  });
});

test('solveFitsFile: an RGB FITS file is detected and solved as a library call (fake ASTAP)', async () => {
  await withTempDir('solve-file', async (dir) => {
    const astap = await fakeAstap(dir, RECORDED_WCS);
    const img = synthRgb({ seed: 4, gradient: 0 });
    const file = `${dir}/rgb.fits`;
    await writeFits(file, { width: img.width, height: img.height, planes: 3, data: img.data });
    const { result, prepared } = await solveFitsFile(file, { ...noSolver, solver: 'astap', astap_bin: astap.bin, astap_data_dir: astap.dataDir, search_radius: 180, timeout_s: 20 });
    assert.is(result.solver, 'astap');
    assert.equal(prepared.hintSource, { centre: null, scale: null });
    assert.equal(result.attempts.map((a) => a.mode), ['blind']);
    assert.ok(prepared.stars.length > 50 && prepared.stars.length <= img.stars.length, `${prepared.stars.length} stars`);
    assert.ok(Math.abs(result.wcs.pixelScaleArcsec - 20) < 1e-6);
  });
});

test('no solution: hinted then blind attempt, then solver_failed with both attempts', async () => {
  await withTempDir('solve-none', async (dir) => {
    const an = await fakeSolveField(dir, 'nosolution');
    const err = (await plateSolve({ ...noSolver, solver: 'astrometry_net', astrometry_net_bin: an.bin, astrometry_net_data_dir: an.dataDir }, input()).catch((e: unknown) => e)) as SolveError;
    assert.is(err.code, 'solver_failed');
    assert.equal(err.attempts.map((a) => [a.mode, a.solved, a.exitCode]), [['hinted', false, 0], ['blind', false, 0]]);
    const runs = (await readFile(an.argsLog, 'utf8')).trim().split('\n');
    assert.is(runs.length, 2);
    assert.match(runs[0]!, /--ra 83\.8 --dec -5\.4 --radius 10/);
    assert.not.match(runs[1]!, /--ra/);
    const crash = await fakeSolveField(`${dir}/crash`, 'crash');
    const e2 = (await plateSolve({ ...noSolver, solver: 'astrometry_net', astrometry_net_bin: crash.bin, astrometry_net_data_dir: crash.dataDir }, input()).catch((e: unknown) => e)) as SolveError;
    assert.is(e2.code, 'solver_failed');
    assert.is(e2.attempts[0]!.exitCode, 3);
    assert.match(e2.attempts[0]!.log, /segfault/);
  });
});

test('time limit and cancellation kill the solver and its children', async () => {
  await withTempDir('solve-kill', async (dir) => {
    const an = await fakeSolveField(dir, 'hang');
    const cfg = { ...noSolver, solver: 'astrometry_net' as const, astrometry_net_bin: an.bin, astrometry_net_data_dir: an.dataDir };
    const t0 = Date.now();
    const err = (await plateSolve(cfg, input({ timeoutS: 1 })).catch((e: unknown) => e)) as SolveError;
    assert.is(err.code, 'timeout');
    assert.ok(Date.now() - t0 < 6000, `took ${Date.now() - t0} ms`);
    const pid = Number((await readFile(an.argsLog, 'utf8')).split(' ')[0]);
    await new Promise((r) => setTimeout(r, 300));
    assert.not.ok(alive(pid), 'solver process gone');
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 300);
    const t1 = Date.now();
    const e2 = (await plateSolve(cfg, input({ signal: ac.signal })).catch((e: unknown) => e)) as SolveError;
    assert.is(e2.code, 'cancelled');
    assert.ok(Date.now() - t1 < 5000);
  });
});

/** The Tycho-2 stars of `field` seen through `wcs`, brightest first, as a detector would list them. */
function fieldStars(field: Tycho2Field, wcs: TanWcs, width: number, height: number) {
  const out: { x: number; y: number; flux: number }[] = [];
  for (const s of tycho2Field(field)) {
    const p = wcs.skyToPixel(s.ra, s.dec);
    if (p && p[0] >= 0 && p[1] >= 0 && p[0] <= width - 1 && p[1] <= height - 1) out.push({ x: p[0], y: p[1], flux: 10 ** (-0.4 * (s.mag - 12)) });
  }
  return out.sort((a, b) => b.flux - a.flux);
}

const realCfg: SolverConfig = { solver: 'astrometry_net', astrometry_net_bin: '', astrometry_net_data_dir: '', astap_bin: '', astap_data_dir: '' };

test('real solve-field: Tycho-2 fields recovered within 5″ (centre) and 0.1 % (scale), hinted and blind', async () => {
  const [an] = await lookupSolvers(realCfg);
  if (!an!.ok) {
    console.log(`  skipped: ${an!.reason}`);
    return;
  }
  const cases = [
    { field: 'orion' as const, width: 640, height: 480, scale: 20, rot: 12, eastLeft: true, hinted: true },
    { field: 'm31' as const, width: 800, height: 600, scale: 15, rot: -127, eastLeft: false, hinted: false },
  ];
  for (const c of cases) {
    const { ra, dec } = TYCHO2_FIELDS[c.field];
    const truth = TanWcs.fromCentre({ ra: ra + 0.3, dec: dec - 0.2, width: c.width, height: c.height, scaleArcsec: c.scale, rotationDeg: c.rot, eastLeft: c.eastLeft });
    const stars = fieldStars(c.field, truth, c.width, c.height);
    const hints = c.hinted ? { ra, dec, scaleArcsec: c.scale * 1.04, scaleTolerance: 0.1, radiusDeg: 10 } : { scaleTolerance: 0.1, radiusDeg: 180 };
    const r = await plateSolve(realCfg, input({ width: c.width, height: c.height, stars, hints, timeoutS: 120 }));
    const [tra, tdec] = truth.centre(c.width, c.height);
    const [sra, sdec] = r.wcs.centre(c.width, c.height);
    const sep = angularSeparationDeg(tra, tdec, sra, sdec) * 3600;
    const scaleErr = Math.abs(r.wcs.pixelScaleArcsec / c.scale - 1);
    console.log(`  ${c.field}: ${stars.length} stars, ${r.attempts.map((a) => a.mode).join('+')}, ${r.index}, centre off ${sep.toFixed(3)}″, scale off ${(scaleErr * 100).toFixed(4)} %, rotation ${r.wcs.rotationDeg.toFixed(3)}° (truth ${truth.rotationDeg.toFixed(3)}°), parity ${r.wcs.parity}, ${r.durationMs} ms`);
    assert.ok(sep < 5, `centre ${sep}″`);
    assert.ok(scaleErr < 0.001, `scale ${scaleErr}`);
    assert.is(r.wcs.parity, truth.parity);
    assert.ok(Math.abs(((r.wcs.rotationDeg - truth.rotationDeg + 540) % 360) - 180) < 0.05);
    assert.match(r.index ?? '', /^index-tycho2-/);
  }
});

test.run();
