// PCC endpoints: POST /api/pcc/run and /api/pcc/apply start jobs in child processes (202 with
// the job id); the jobs write the calibrated / matrix-applied FITS and diagnostics; failures
// are job errors with the PCC code; paths are confined to the roots.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFitsImage, writeFits } from '../../src/fits/index.js';
import type { RunningServer } from '../../src/server/app.js';
import { catalogCsv, pccFixture } from '../astro/pcc-fixture.js';
import { http, testServer, waitFor } from './helpers.js';

let dir = '';
let data = '';
let srv: RunningServer;

async function finished(id: string) {
  return waitFor(async () => {
    const r = await http(srv.url, 'GET', `/api/jobs/${id}`);
    return ['ok', 'error', 'cancelled'].includes(r.json.state) ? r.json : null;
  }, 30000, 50);
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'skystack-pccapi-'));
  data = join(dir, 'data');
  await mkdir(data);
  const f = pccFixture({ width: 256, height: 192, seed: 3 });
  await writeFits(join(data, 'rgb.fits'), { width: f.width, height: f.height, planes: 3, data: f.data }, { header: f.header });
  await writeFile(join(data, 'catalog.csv'), catalogCsv(f.stars));
  srv = await testServer({ runsDir: join(dir, 'runs'), roots: [data] });
});

test.after(async () => {
  await srv.close();
  await rm(dir, { recursive: true, force: true });
});

test('pcc run: 202 with a job id, calibrated FITS and diagnostics written', async () => {
  const r = await http(srv.url, 'POST', '/api/pcc/run', { body: { input: join(data, 'rgb.fits'), catalog_file: join(data, 'catalog.csv'), config: { min_stars: 5 } } });
  assert.is(r.status, 202, r.text);
  assert.match(r.json.job_id, /^job_/);
  assert.is(r.json.output, join(data, 'rgb_pcc.fits'));
  const job = await finished(r.json.job_id);
  assert.is(job.kind, 'pcc_run');
  assert.is(job.state, 'ok', JSON.stringify(job.error));
  assert.is(job.result.factors.length, 3);
  const out = await readFitsImage(r.json.output);
  assert.is(out.planes, 3);
  const diag = JSON.parse(await readFile(r.json.diagnostics_file, 'utf8'));
  assert.is(diag.success, true);
});

test('pcc run without catalog_file: the installed catalogue (or none); star_white fallback on request', async () => {
  const input = join(data, 'rgb.fits');
  const r = await http(srv.url, 'POST', '/api/pcc/run', { body: { input, output: join(data, 'inst.fits') } });
  assert.is(r.status, 202, r.text);
  const job = await finished(r.json.job_id);
  // The fixture's 0.15° field holds no V ≤ 9 star: with kstars-data installed the catalogue is
  // found and has too few stars there; without it there is no catalogue at all.
  assert.is(job.state, 'error');
  assert.match(job.error.message, /PCC_NO_CATALOG_STARS|PCC_NO_CATALOG:/);
  const diag = JSON.parse(await readFile(r.json.diagnostics_file, 'utf8'));
  if (diag.failure_reason === 'PCC_NO_CATALOG_STARS') assert.is(diag.catalog.package, 'kstars-data');
  // With fallback star_white the job ends ok and says it is not photometric.
  const w = await http(srv.url, 'POST', '/api/pcc/run', { body: { input, output: join(data, 'white.fits'), config: { fallback: 'star_white', min_stars: 5 } } });
  const wj = await finished(w.json.job_id);
  assert.is(wj.state, 'ok', JSON.stringify(wj.error));
  assert.is(wj.result.method, 'star_white');
  assert.is(wj.result.photometric, false);
  assert.match(wj.result.pcc_failure.code, /^PCC_NO_CATALOG/);
  const wd = JSON.parse(await readFile(w.json.diagnostics_file, 'utf8'));
  assert.is(wd.method, 'star_white');
});

test('pcc apply: diagonal and 3×3 matrices into new files; failures are job errors with the PCC code', async () => {
  const input = join(data, 'rgb.fits');
  const a = await http(srv.url, 'POST', '/api/pcc/apply', { body: { input, matrix: [2, 1, 0.5], output: join(data, 'diag.fits') } });
  assert.is(a.status, 202, a.text);
  const job = await finished(a.json.job_id);
  assert.is(job.state, 'ok', JSON.stringify(job.error));
  const src = await readFitsImage(input);
  const out = await readFitsImage(join(data, 'diag.fits'));
  const n = src.width * src.height;
  assert.ok(Math.abs(out.data[100]! - 2 * src.data[100]!) < 1e-3 * Math.abs(src.data[100]!) + 1e-6);
  assert.ok(Math.abs(out.data[2 * n + 100]! - 0.5 * src.data[2 * n + 100]!) < 1e-3 * Math.abs(src.data[2 * n + 100]!) + 1e-6);
  const m = await http(srv.url, 'POST', '/api/pcc/apply', { body: { input, matrix: [[1, 0, 0], [0, 1, 0], [0, 0, 1]] } });
  assert.is(m.status, 202);
  assert.is((await finished(m.json.job_id)).state, 'ok');
  // a mono file: the job fails with PCC_NOT_RGB
  await writeFits(join(data, 'mono.fits'), { width: 8, height: 8, data: new Float32Array(64) });
  const bad = await http(srv.url, 'POST', '/api/pcc/apply', { body: { input: join(data, 'mono.fits'), matrix: [1, 1, 1] } });
  const failed = await finished(bad.json.job_id);
  assert.is(failed.state, 'error');
  assert.is(failed.error.code, 'JOB_FAILED');
  assert.match(failed.error.message, /PCC_NOT_RGB/);
});

test('pcc endpoints: bad bodies and paths', async () => {
  const input = join(data, 'rgb.fits');
  const codes = async (body: unknown, path = '/api/pcc/apply') => {
    const r = await http(srv.url, 'POST', path, { body });
    return [r.status, r.json?.error?.code];
  };
  assert.equal(await codes({ input, matrix: [1, 2] }), [400, 'VALIDATION_ERROR']);
  assert.equal(await codes({ input, matrix: [[1, 0], [0, 1]] }), [400, 'VALIDATION_ERROR']);
  assert.equal(await codes({ input, matrix: [1, 1, 1], output: input }), [400, 'VALIDATION_ERROR']);
  assert.equal(await codes({ input: '/etc/passwd', matrix: [1, 1, 1] }), [403, 'PATH_NOT_ALLOWED']);
  assert.equal(await codes({ input, matrix: [1, 1, 1], output: join(dir, 'elsewhere.fits') }), [403, 'PATH_NOT_ALLOWED']);
  assert.equal(await codes({ input: join(data, 'missing.fits'), matrix: [1, 1, 1] }), [422, 'PATH_NOT_FOUND']);
  assert.equal(await codes({ input, catalog_file: '/etc/hosts' }, '/api/pcc/run'), [403, 'PATH_NOT_ALLOWED']);
  assert.equal(await codes({ input, catalog_file: join(data, 'catalog.csv'), config: { min_stars: 'ten' } }, '/api/pcc/run'), [400, 'VALIDATION_ERROR']);
  assert.equal(await codes({ input, catalog_file: join(data, 'catalog.csv'), config: { nope: 1 } }, '/api/pcc/run'), [400, 'VALIDATION_ERROR']);
});

test.run();
