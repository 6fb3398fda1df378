// REST API without pixel jobs: system endpoints, the error envelope, security (Host, Origin,
// token), body limits and validation, stored parameters, config validate/schema/suggest/import,
// files list/grant/scan. A real server on an ephemeral port, raw HTTP requests.
import { test } from 'uvu';
import { existsSync } from 'node:fs';
import * as assert from 'uvu/assert';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { generateDataset } from '../../fixtures/generator/index.js';
import { DEFAULT_UI_DIR, type RunningServer } from '../../src/server/app.js';
import { TILED } from '../../src/pipeline/tiled/definition.js';
import { RAWSTACK } from '../../src/pipeline/rawstack/definition.js';
import { phasePlan } from '../../src/pipeline/runner.js';
import { http, testServer, tinyLights, type Res } from './helpers.js';

let dir = '';
let data = '';
let lights = '';
let srv: RunningServer;
let base = '';

function envelope(r: Res, status: number, code: string): void {
  assert.is(r.status, status, `${status} expected, got ${r.status}: ${r.text.slice(0, 300)}`);
  assert.type(r.json?.error, 'object', `error envelope: ${r.text.slice(0, 200)}`);
  assert.is(r.json.error.code, code, r.text.slice(0, 300));
  assert.type(r.json.error.message, 'string');
  assert.not.match(r.text, /\n\s+at /, 'no stack trace');
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'skystack-api-'));
  data = join(dir, 'data');
  lights = await tinyLights(data);
  // No UI folder: the "missing UI" case must not depend on whether dist/ui has been built.
  srv = await testServer({ runsDir: join(dir, 'runs'), roots: [data], uiDir: join(dir, 'no-ui') });
  base = srv.url;
});

test.after(async () => {
  await srv.close();
  await rm(dir, { recursive: true, force: true });
});

test('system info, health and the OpenAPI document', async () => {
  const info = await http(base, 'GET', '/api/system/info');
  assert.is(info.status, 200);
  assert.is(info.json.name, 'skystack');
  assert.is(info.json.api_version, 1);
  assert.equal(info.json.capabilities.pipelines.map((p: { name: string }) => p.name), ['rawstack', 'tiled']);
  // Each pipeline's phase plan comes from its definition (the same list run_start carries).
  assert.equal(info.json.capabilities.pipelines[0].phases, phasePlan(RAWSTACK.phases));
  assert.equal(info.json.capabilities.pipelines[1].phases, phasePlan(TILED.phases));
  assert.is(info.json.capabilities.sse, true);
  assert.is(info.json.capabilities.resume, true);
  // Solvers: each of the two is either available or listed as missing with the lookup's reason.
  const solvers = info.json.capabilities.astrometry as { solvers: string[]; missing: { solver: string; reason: string }[] };
  assert.equal([...solvers.solvers, ...solvers.missing.map((m) => m.solver)].sort(), ['astap', 'astrometry_net']);
  for (const m of solvers.missing) assert.ok(m.reason.length > 0);
  assert.ok('kind' in info.json.capabilities.device);
  // PCC catalogues: the installed packages found (kstars-data here when installed), the one a
  // run takes marked; none installed → an empty list and where it looked.
  const pcc = info.json.capabilities.pcc as { catalogs: { id: string; package: string | null; used_by_default: boolean; mag_limit: number | null }[]; searched: string[] };
  assert.ok(Array.isArray(pcc.catalogs) && Array.isArray(pcc.searched));
  if (existsSync('/usr/share/kstars/stars.dat')) {
    assert.is(pcc.catalogs[0]!.id, 'kstars:stars.dat');
    assert.is(pcc.catalogs[0]!.package, 'kstars-data');
    assert.is(pcc.catalogs[0]!.used_by_default, true);
    assert.is(pcc.catalogs[0]!.mag_limit, 8.99);
  } else assert.is(pcc.catalogs.filter((c) => c.used_by_default).length, pcc.catalogs.length ? 1 : 0);
  const health = await http(base, 'GET', '/api/system/health');
  assert.is(health.status, 200);
  assert.is(health.json.status, 'ok');
  assert.is(health.json.runs_dir_writable, true);
  const oa = await http(base, 'GET', '/api/openapi.json');
  assert.is(oa.status, 200);
  const paths = Object.keys(oa.json.paths);
  for (const p of [
    '/api/system/info', '/api/system/health', '/api/jobs/run', '/api/jobs/resume', '/api/jobs', '/api/jobs/{id}', '/api/runs', '/api/runs/{id}', '/api/runs/{id}/logs', '/api/runs/{id}/artifacts',
    '/api/runs/{id}/report', '/api/runs/{id}/events', '/api/runs/{id}/artifacts/view', '/api/runs/{id}/artifacts/raw/{path}', '/api/config/validate', '/api/config/suggest', '/api/config/schema', '/api/files/list', '/api/files/grant',
    '/api/files/scan', '/api/pcc/run', '/api/pcc/apply', '/api/tools/preprocessing/parameters', '/api/tools/preprocessing/defaults', '/api/tools/preprocessing/run', '/api/tools/preprocessing/status',
    '/api/tools/preprocessing/cancel', '/api/tools/preprocessing/import',
  ]) assert.ok(paths.includes(p), `openapi lists ${p}`);
  assert.ok(oa.json.paths['/api/jobs/{id}'].delete, 'DELETE /api/jobs/{id}');
  assert.ok(oa.json.paths['/api/tools/preprocessing/parameters'].patch);
  assert.equal(oa.json.paths['/api/jobs/{id}'].get.responses['200'].content['application/json'].schema.properties.state.enum, ['pending', 'running', 'cancelling', 'ok', 'error', 'cancelled']);
  // request schemas come from zod
  assert.ok(oa.json.paths['/api/files/scan'].post.requestBody.content['application/json'].schema.properties.path);
});

test('one error envelope: unknown route, wrong method, missing UI', async () => {
  envelope(await http(base, 'GET', '/api/nope'), 404, 'NOT_FOUND');
  const m = await http(base, 'PUT', '/api/system/info');
  envelope(m, 405, 'METHOD_NOT_ALLOWED');
  envelope(await http(base, 'GET', '/ui/'), 404, 'NOT_FOUND');
  envelope(await http(base, 'GET', '/api/jobs/job_doesnotexist'), 404, 'NOT_FOUND');
  envelope(await http(base, 'GET', '/api/runs/nope'), 404, 'NOT_FOUND');
});

test('foreign Host headers and cross-origin state changes are refused with 403', async () => {
  envelope(await http(base, 'GET', '/api/system/info', { headers: { host: 'evil.example' } }), 403, 'FORBIDDEN_HOST');
  envelope(await http(base, 'GET', '/api/system/info', { headers: { host: `evil.example:${srv.port}` } }), 403, 'FORBIDDEN_HOST');
  envelope(await http(base, 'GET', '/api/system/info', { headers: { host: `127.0.0.1:${srv.port + 1}` } }), 403, 'FORBIDDEN_HOST');
  assert.is((await http(base, 'GET', '/api/system/info', { headers: { host: `localhost:${srv.port}` } })).status, 200);
  envelope(await http(base, 'PATCH', '/api/tools/preprocessing/parameters', { headers: { origin: 'http://evil.example' }, body: {} }), 403, 'FORBIDDEN_ORIGIN');
  envelope(await http(base, 'POST', '/api/files/scan', { headers: { origin: `http://evil.example:${srv.port}` }, body: { path: lights } }), 403, 'FORBIDDEN_ORIGIN');
  envelope(await http(base, 'POST', '/api/files/scan', { headers: { 'sec-fetch-site': 'cross-site' }, body: { path: lights } }), 403, 'FORBIDDEN_ORIGIN');
  envelope(await http(base, 'GET', `/api/files/grant?path=${encodeURIComponent(data)}`, { headers: { origin: 'http://evil.example' } }), 403, 'FORBIDDEN_ORIGIN');
  const same = await http(base, 'POST', '/api/files/scan', { headers: { origin: `http://127.0.0.1:${srv.port}` }, body: { path: lights } });
  assert.is(same.status, 200, same.text);
});

test('bearer token: required when configured, constant answer for wrong tokens, health exempt', async () => {
  const s2 = await testServer({ runsDir: join(dir, 'runs2'), token: 'sesame-123' });
  try {
    envelope(await http(s2.url, 'GET', '/api/system/info'), 401, 'UNAUTHORIZED');
    envelope(await http(s2.url, 'GET', '/api/system/info', { headers: { authorization: 'Bearer wrong' } }), 401, 'UNAUTHORIZED');
    assert.is((await http(s2.url, 'GET', '/api/system/info', { headers: { authorization: 'Bearer sesame-123' } })).status, 200);
    assert.is((await http(s2.url, 'GET', '/api/system/info?access_token=sesame-123')).status, 200);
    envelope(await http(s2.url, 'PATCH', '/api/tools/preprocessing/parameters?access_token=sesame-123', { body: {} }), 401, 'UNAUTHORIZED');
    assert.is((await http(s2.url, 'GET', '/api/system/health')).status, 200);
  } finally {
    await s2.close();
  }
  // bound off loopback without a token: one is generated
  const s3 = await testServer({ runsDir: join(dir, 'runs3'), host: '0.0.0.0' });
  try {
    assert.type(s3.token, 'string');
    assert.ok(s3.token!.length >= 24);
    envelope(await http(s3.url, 'GET', '/api/jobs'), 401, 'UNAUTHORIZED');
    assert.is((await http(s3.url, 'GET', '/api/jobs', { headers: { authorization: `Bearer ${s3.token}` } })).status, 200);
  } finally {
    await s3.close();
  }
});

test('browser session: the token buys an HttpOnly SameSite=Strict cookie per port that the guard accepts; cross-site and wrong tokens refused', async () => {
  const s2 = await testServer({ runsDir: join(dir, 'runs-session'), token: 'sesame-456' });
  const own = { origin: `http://127.0.0.1:${s2.port}` };
  try {
    envelope(await http(s2.url, 'POST', '/api/auth/session', { headers: own, body: { token: 'wrong' } }), 401, 'UNAUTHORIZED');
    envelope(await http(s2.url, 'POST', '/api/auth/session', { headers: { origin: 'http://evil.example' }, body: { token: 'sesame-456' } }), 403, 'FORBIDDEN_ORIGIN');
    envelope(await http(s2.url, 'POST', '/api/auth/session', { headers: own, body: { token: 'sesame-456', extra: 1 } }), 400, 'VALIDATION_ERROR');
    const ok = await http(s2.url, 'POST', '/api/auth/session', { headers: own, body: { token: 'sesame-456' } });
    assert.is(ok.status, 200, ok.text);
    assert.equal(ok.json, { signed_in: true, token_required: true });
    const setCookie = ([] as string[]).concat(ok.headers['set-cookie'] ?? []);
    assert.is(setCookie.length, 1);
    const cookie = setCookie[0]!;
    assert.match(cookie, new RegExp(`^skystack_session_${s2.port}=`));
    assert.match(cookie, /httponly/i);
    assert.match(cookie, /samesite=strict/i);
    assert.match(cookie, /path=\//i);
    const value = cookie.split(';')[0]!.split('=').slice(1).join('=');
    assert.not.ok(value.includes('sesame-456'), 'the cookie holds a derived value, not the token');
    const jar = { cookie: `skystack_session_${s2.port}=${value}` };
    assert.is((await http(s2.url, 'GET', '/api/system/info', { headers: jar })).status, 200);
    const patched = await http(s2.url, 'PATCH', '/api/tools/preprocessing/parameters', { headers: { ...jar, ...own }, body: {} });
    assert.is(patched.status, 200, patched.text);
    envelope(await http(s2.url, 'PATCH', '/api/tools/preprocessing/parameters', { headers: { ...jar, origin: 'http://evil.example' }, body: {} }), 403, 'FORBIDDEN_ORIGIN');
    // another port's cookie, a forged value, or a wrong bearer beside a good cookie: refused
    envelope(await http(s2.url, 'GET', '/api/system/info', { headers: { cookie: `skystack_session_${s2.port + 1}=${value}` } }), 401, 'UNAUTHORIZED');
    envelope(await http(s2.url, 'GET', '/api/system/info', { headers: { cookie: `skystack_session_${s2.port}=${value}x` } }), 401, 'UNAUTHORIZED');
    envelope(await http(s2.url, 'GET', '/api/system/info', { headers: { ...jar, authorization: 'Bearer wrong' } }), 401, 'UNAUTHORIZED');
    const out = await http(s2.url, 'DELETE', '/api/auth/session', { headers: own });
    assert.is(out.status, 204);
    assert.match(([] as string[]).concat(out.headers['set-cookie'] ?? [])[0] ?? '', new RegExp(`^skystack_session_${s2.port}=;.*expires=Thu, 01 Jan 1970`, 'i'));
  } finally {
    await s2.close();
  }
  // no token configured (loopback): nothing to sign in to, no cookie
  const none = await http(base, 'POST', '/api/auth/session', { body: { token: 'anything' } });
  assert.is(none.status, 200, none.text);
  assert.equal(none.json, { signed_in: false, token_required: false });
  assert.is(none.headers['set-cookie'], undefined);
});

test('malformed JSON, oversize bodies, wrong types and unknown keys: 400/413 with specific codes, server keeps serving', async () => {
  envelope(await http(base, 'PATCH', '/api/tools/preprocessing/parameters', { raw: '{"rejection": {', headers: { 'content-type': 'application/json' } }), 400, 'MALFORMED_JSON');
  envelope(await http(base, 'POST', '/api/files/scan', { raw: 'path=/x', headers: { 'content-type': 'application/x-www-form-urlencoded' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
  const big = Buffer.alloc(2 * 1024 * 1024, 0x20);
  envelope(await http(base, 'PATCH', '/api/tools/preprocessing/parameters', { raw: big, headers: { 'content-type': 'application/json' } }), 413, 'PAYLOAD_TOO_LARGE');
  envelope(await http(base, 'POST', '/api/config/validate', { raw: Buffer.alloc(1024 * 1024 + 10, 0x61), headers: { 'content-type': 'text/yaml' } }), 413, 'PAYLOAD_TOO_LARGE');
  const wrong = await http(base, 'PATCH', '/api/tools/preprocessing/parameters', { body: { rejection: { low: 'three' }, quality_filter: { min_stars: -1 } } });
  envelope(wrong, 400, 'VALIDATION_ERROR');
  const paths = wrong.json.error.details.issues.map((i: { path: string }) => i.path);
  assert.ok(paths.includes('rejection.low'), JSON.stringify(paths));
  assert.ok(paths.includes('quality_filter.min_stars'));
  const unknown = await http(base, 'PATCH', '/api/tools/preprocessing/parameters', { body: { stacking: { normalisation: 'median' }, bogus: 1 } });
  envelope(unknown, 400, 'VALIDATION_ERROR');
  const issues = unknown.json.error.details.issues as { path: string; code: string }[];
  assert.ok(issues.some((i) => i.path === 'stacking.normalisation' && i.code === 'unknown_key'), JSON.stringify(issues));
  assert.ok(issues.some((i) => i.path === 'bogus' && i.code === 'unknown_key'));
  envelope(await http(base, 'POST', '/api/files/scan', { body: { path: lights, extra: true } }), 400, 'VALIDATION_ERROR');
  envelope(await http(base, 'POST', '/api/files/scan', { body: { path: 42 } }), 400, 'VALIDATION_ERROR');
  envelope(await http(base, 'GET', '/api/jobs?limit=abc'), 400, 'VALIDATION_ERROR');
  envelope(await http(base, 'POST', '/api/jobs/run', { body: { config: {} } }), 400, 'VALIDATION_ERROR');
  assert.is((await http(base, 'GET', '/api/system/health')).status, 200, 'still serving');
});

test('preprocessing parameters: defaults until stored, PATCH validates and stores, defaults endpoint', async () => {
  const before = await http(base, 'GET', '/api/tools/preprocessing/parameters');
  assert.is(before.status, 200);
  assert.is(before.json.source, 'defaults');
  assert.is(before.json.config.rejection.low, 3);
  const patched = await http(base, 'PATCH', '/api/tools/preprocessing/parameters', { body: { rejection: { low: 2.5 }, stacking: { normalization: 'Median' }, lights_dir: lights } });
  assert.is(patched.status, 200, patched.text);
  assert.is(patched.json.config.stacking.normalization, 'median');
  const after = await http(base, 'GET', '/api/tools/preprocessing/parameters');
  assert.is(after.json.source, 'stored');
  assert.is(after.json.config.rejection.low, 2.5);
  assert.is(after.json.config.lights_dir, lights);
  const defaults = await http(base, 'GET', '/api/tools/preprocessing/defaults');
  assert.is(defaults.json.config.rejection.low, 3);
  assert.is(defaults.json.config.postprocess.pcc, true);
});

test('import from a tiled-workflow YAML: mapped and ignored keys, YAML errors with line', async () => {
  const yaml = 'normalization:\n  mode: background\nstacking:\n  sigma_clip:\n    sigma_low: 2.0\nbge:\n  method: none\ntile_reconstruction:\n  foo: 1\n';
  const r = await http(base, 'POST', '/api/tools/preprocessing/import', { body: { yaml } });
  assert.is(r.status, 200, r.text);
  assert.is(r.json.config.stacking.normalization, 'background');
  assert.is(r.json.config.rejection.low, 2);
  assert.is(r.json.config.postprocess.bge, false);
  assert.ok(r.json.mapped.some((m: { from: string }) => m.from === 'normalization.mode'));
  const bad = await http(base, 'POST', '/api/tools/preprocessing/import', { body: { yaml: 'a: [1, 2\nb: 3\n' } });
  envelope(bad, 400, 'VALIDATION_ERROR');
  assert.type(bad.json.error.details.issues[0].line, 'number');
});

test('config validate: ok, warnings for unknown blocks/keys, errors with path/line/column, YAML syntax errors', async () => {
  const good = await http(base, 'POST', '/api/config/validate', { raw: 'runtime_limits:\n  parallel_workers: 4\nstacking:\n  weighting: quality\n', headers: { 'content-type': 'text/yaml' } });
  assert.is(good.status, 200);
  assert.equal(good.json, { ok: true, errors: [], warnings: [] });
  const warn = await http(base, 'POST', '/api/config/validate', { raw: 'state_clustering:\n  k: 3\nstacking:\n  weighting: uniform\n  fancy: 1\n', headers: { 'content-type': 'text/yaml' } });
  assert.is(warn.json.ok, true);
  assert.equal(
    warn.json.warnings.map((w: { path: string; line: number; column: number }) => [w.path, w.line, w.column]),
    [
      ['state_clustering', 1, 1],
      ['stacking.fancy', 5, 3],
    ],
  );
  const err = await http(base, 'POST', '/api/config/validate', { body: { yaml: 'runtime_limits:\n  parallel_workers: many\nnormalization:\n  mode: sideways\n' } });
  assert.is(err.json.ok, false);
  assert.equal(
    err.json.errors.map((e: { path: string; line: number; column: number }) => [e.path, e.line, e.column]),
    [
      ['runtime_limits.parallel_workers', 2, 21],
      ['normalization.mode', 4, 9],
    ],
  );
  const syntax = await http(base, 'POST', '/api/config/validate', { raw: 'a: 1\nb: [1, 2\n', headers: { 'content-type': 'application/yaml' } });
  assert.is(syntax.json.ok, false);
  assert.is(syntax.json.errors[0].code, 'yaml_syntax');
  assert.type(syntax.json.errors[0].line, 'number');
  assert.type(syntax.json.errors[0].column, 'number');
  const tags = await http(base, 'POST', '/api/config/validate', { raw: 'a: !!js/function "return 1"\n', headers: { 'content-type': 'text/yaml' } });
  assert.is(tags.status, 200);
  envelope(await http(base, 'POST', '/api/config/validate', { raw: 'x', headers: { 'content-type': 'image/png' } }), 415, 'UNSUPPORTED_MEDIA_TYPE');
});

test('config schema (tiled and Raw Stack) and suggestions with reasons', async () => {
  const tiled = await http(base, 'GET', '/api/config/schema');
  assert.ok(tiled.json.properties.stacking);
  assert.ok(tiled.json.properties.hypermetric_stretch);
  const raw = await http(base, 'GET', '/api/config/schema?kind=rawstack');
  assert.ok(raw.json.properties.quality_filter);
  envelope(await http(base, 'GET', '/api/config/schema?kind=other'), 400, 'VALIDATION_ERROR');
  const s = await http(base, 'POST', '/api/config/suggest', { body: { input_dir: lights } });
  assert.is(s.status, 200, s.text);
  const by = Object.fromEntries(s.json.suggestions.map((x: { path: string }) => [x.path, x]));
  for (const p of ['runtime_limits.memory_budget', 'runtime_limits.parallel_workers', 'rejection.method', 'rejection.low', 'tile.min_size']) {
    assert.ok(by[p], `suggestion for ${p}: ${s.text}`);
    assert.type(by[p].reason, 'string');
  }
  assert.is(by['rejection.method'].value, 'median', '6 frames: median');
  assert.is(s.json.measured.frames, 6);
  assert.ok(s.json.measured.fwhm > 1 && s.json.measured.fwhm < 10, `fwhm ${s.json.measured.fwhm}`);
  envelope(await http(base, 'POST', '/api/config/suggest', { body: { input_dir: '/etc' } }), 403, 'PATH_NOT_ALLOWED');
  const fromScan = await http(base, 'POST', '/api/config/suggest', { body: { scan: { frames: 40, width: 600, height: 400, fwhm: 3 } } });
  const bs = Object.fromEntries(fromScan.json.suggestions.map((x: { path: string; value: unknown }) => [x.path, x.value]));
  assert.equal([bs['rejection.method'], bs['rejection.low'], bs['tile.min_size']], ['sigma', 2.5, 66], 'tile: 32 × 3 px capped at 400 / 6');
  // For a tiled run: the tiled YAML's paths, the tile grid from the seeing and the frame size.
  const tiledScan = await http(base, 'POST', '/api/config/suggest', { body: { kind: 'tiled', scan: { frames: 40, width: 600, height: 400, fwhm: 3 } } });
  assert.is(tiledScan.status, 200, tiledScan.text);
  const ts = Object.fromEntries(tiledScan.json.suggestions.map((x: { path: string; value: unknown }) => [x.path, x.value]));
  assert.equal([ts['stacking.method'], ts['stacking.weight_mode'], ts['synthetic.enabled'], ts['tile.min_size'], ts['rejection.method']], ['sigma', 'local', false, 66, undefined], 'tile: 32 × 3 = 96 capped at max(64, 400 / 6)');
  assert.is(tiledScan.json.measured.tile_size, 66);
  const tiledDir = await http(base, 'POST', '/api/config/suggest', { body: { kind: 'tiled', input_dir: lights } });
  assert.is(tiledDir.status, 200, tiledDir.text);
  assert.ok(tiledDir.json.suggestions.some((x: { path: string; value: unknown }) => x.path === 'stacking.weight_mode' && x.value === 'global'), '6 frames: global weights');
  envelope(await http(base, 'POST', '/api/config/suggest', { body: { kind: 'other' } }), 400, 'VALIDATION_ERROR');
});

test('files: roots, listing with FITS marked, grant (persisted as a root), scan with groups and warnings', async () => {
  const roots = await http(base, 'GET', '/api/files/list');
  assert.is(roots.status, 200);
  assert.ok(roots.json.entries.some((e: { path: string }) => e.path === data));
  const list = await http(base, 'GET', `/api/files/list?path=${encodeURIComponent(lights)}`);
  assert.is(list.status, 200, list.text);
  assert.is(list.json.entries.length, 6);
  assert.ok(list.json.entries.every((e: { fits: boolean; type: string; size: number }) => e.fits && e.type === 'file' && e.size > 0));
  envelope(await http(base, 'GET', `/api/files/list?path=${encodeURIComponent(join(lights, 'light_00001.fits'))}`), 422, 'NOT_A_DIRECTORY');
  envelope(await http(base, 'GET', `/api/files/list?path=${encodeURIComponent(join(data, 'missing'))}`), 422, 'PATH_NOT_FOUND');

  const extra = join(dir, 'extra');
  await mkdir(extra);
  envelope(await http(base, 'GET', `/api/files/list?path=${encodeURIComponent(extra)}`), 403, 'PATH_NOT_ALLOWED');
  const g = await http(base, 'GET', `/api/files/grant?path=${encodeURIComponent(extra)}`);
  assert.is(g.status, 200, g.text);
  assert.is(g.json.path, extra);
  assert.match(g.json.granted_by, /loopback/);
  assert.is((await http(base, 'GET', `/api/files/list?path=${encodeURIComponent(extra)}`)).status, 200);

  // mixed sizes and exposures
  const mixed = join(extra, 'mixed');
  await generateDataset({ out: join(dir, 'other'), kind: 'mono', frames: 2, width: 96, height: 64, seed: 9, calibration: false, badFrames: 'none', exptime: 60 });
  await mkdir(mixed);
  for (const f of ['light_00001.fits', 'light_00002.fits']) await copyFile(join(lights, f), join(mixed, f));
  await copyFile(join(dir, 'other', 'lights', 'light_00001.fits'), join(mixed, 'light_00003.fits'));
  await writeFile(join(mixed, 'light_00004.fits'), 'not a fits file');
  const scan = await http(base, 'POST', '/api/files/scan', { body: { path: mixed } });
  assert.is(scan.status, 200, scan.text);
  assert.is(scan.json.summary.frames, 4);
  assert.is(scan.json.summary.readable, 3);
  assert.is(scan.json.summary.width, 192);
  assert.is(scan.json.summary.color_mode, 'MONO');
  assert.is(scan.json.summary.groups.length, 2);
  const codes = scan.json.warnings.map((w: { code: string }) => w.code);
  for (const c of ['mixed_sizes', 'mixed_exposures', 'unreadable_frames']) assert.ok(codes.includes(c), `${c} in ${codes}`);
  const osc = join(dir, 'osc');
  await generateDataset({ out: osc, kind: 'osc', pattern: 'GBRG', frames: 2, width: 64, height: 48, seed: 4, calibration: false, badFrames: 'none' });
  await http(base, 'GET', `/api/files/grant?path=${encodeURIComponent(osc)}`);
  const oscScan = await http(base, 'POST', '/api/files/scan', { body: { path: join(osc, 'lights') } });
  assert.is(oscScan.json.summary.color_mode, 'OSC');
  assert.is(oscScan.json.summary.bayer_pattern, 'GBRG');
});

test('files: .fit/.fts/.fits.gz/.fz are listed as FITS; a scan whose pattern misses them gives pattern_hint and its pattern works', async () => {
  const fit = join(data, 'fit-lights');
  await mkdir(fit);
  for (const [from, to] of [
    ['light_00001.fits', 'L_001.fit'],
    ['light_00002.fits', 'L_002.FIT'],
    ['light_00003.fits', 'L_003.fit'],
  ]) await copyFile(join(lights, from!), join(fit, to!));
  await writeFile(join(fit, 'L_004.fits.gz'), gzipSync(await readFile(join(lights, 'light_00004.fits'))));
  await writeFile(join(fit, 'notes.txt'), 'observing log');
  const list = await http(base, 'GET', `/api/files/list?path=${encodeURIComponent(fit)}`);
  assert.equal(
    list.json.entries.map((e: { name: string; fits: boolean }) => [e.name, e.fits]),
    [['L_001.fit', true], ['L_002.FIT', true], ['L_003.fit', true], ['L_004.fits.gz', true], ['notes.txt', false]],
  );
  const miss = await http(base, 'POST', '/api/files/scan', { body: { path: fit, pattern: '*.fits' } });
  assert.is(miss.status, 200, miss.text);
  assert.is(miss.json.summary.frames, 0);
  assert.equal(miss.json.pattern_hint.suggested_pattern, '*.fit;*.fits.gz');
  assert.equal(miss.json.pattern_hint.found, [{ extension: '.fit', count: 3 }, { extension: '.fits.gz', count: 1 }]);
  assert.equal(miss.json.pattern_hint.examples, ['L_001.fit', 'L_002.FIT', 'L_003.fit']);
  assert.equal(miss.json.warnings.map((w: { code: string }) => w.code), ['pattern_mismatch']);
  const hit = await http(base, 'POST', '/api/files/scan', { body: { path: fit, pattern: miss.json.pattern_hint.suggested_pattern } });
  assert.equal([hit.json.summary.frames, hit.json.summary.readable, hit.json.pattern_hint], [4, 4, null]);
  // A folder without FITS files keeps the plain no_frames warning.
  const none = await http(base, 'POST', '/api/files/scan', { body: { path: fit, pattern: '*.cr2' } });
  assert.is(none.json.pattern_hint.suggested_pattern, '*.fit;*.fits.gz', 'FITS files there: still a hint');
  const empty = join(data, 'no-fits');
  await mkdir(empty);
  await writeFile(join(empty, 'a.txt'), 'x');
  const nothing = await http(base, 'POST', '/api/files/scan', { body: { path: empty, pattern: '*.fits' } });
  assert.equal([nothing.json.pattern_hint, nothing.json.warnings.map((w: { code: string }) => w.code)], [null, ['no_frames']]);
});

test('hostile paths: files list, grant and scan never reach outside the allowed roots', async () => {
  const outside = join(dir, 'outside');
  await mkdir(outside);
  await writeFile(join(outside, 'secret.txt'), 'TOP-SECRET');
  await symlink(outside, join(data, 'link-out'));
  await symlink('/etc', join(data, 'etc-link'));
  const enc = encodeURIComponent;
  const cases: [string, string, unknown?][] = [
    ['GET', `/api/files/list?path=${enc(`${data}/../outside`)}`],
    ['GET', `/api/files/list?path=${enc(`${data}/lights/../../outside`)}`],
    ['GET', `/api/files/list?path=${data}/%2e%2e/outside`],
    ['GET', `/api/files/list?path=${enc('/etc')}`],
    ['GET', `/api/files/list?path=${enc('/')}`],
    ['GET', `/api/files/list?path=${enc(outside)}`],
    ['GET', `/api/files/list?path=${enc(join(data, 'link-out'))}`],
    ['GET', `/api/files/list?path=${enc(join(data, 'etc-link'))}`],
    ['GET', `/api/files/list?path=${enc(data)}%00/../outside`],
    ['GET', `/api/files/list?path=${enc(`${data}/${'a/'.repeat(2100)}`)}`],
    ['GET', `/api/files/list?path=${enc('relative/dir')}`],
    ['GET', `/api/files/list?path=${enc(join(srv.context.stateDir))}`],
    ['GET', `/api/files/grant?path=${enc('/etc')}`],
    ['GET', `/api/files/grant?path=${enc('/')}`],
    ['GET', `/api/files/grant?path=${enc('/proc/self')}`],
    ['GET', `/api/files/grant?path=${enc(`${data}/../outside`)}`],
    ['GET', `/api/files/grant?path=${enc(outside)}%00`],
    ['GET', `/api/files/grant?path=${enc('relative')}`],
    ['GET', `/api/files/grant?path=${enc(srv.context.stateDir)}`],
    ['POST', '/api/files/scan', { path: `${data}/../outside` }],
    ['POST', '/api/files/scan', { path: '/etc' }],
    ['POST', '/api/files/scan', { path: join(data, 'etc-link') }],
    ['POST', '/api/files/scan', { path: join(data, 'link-out') }],
    ['POST', '/api/files/scan', { path: `${outside}\u0000` }],
    ['POST', '/api/files/scan', { path: '/'.repeat(5000) }],
  ];
  for (const [method, path, body] of cases) {
    const r = await http(base, method, path, body ? { body } : {});
    assert.is(r.status, 403, `${method} ${path.slice(0, 120)} → ${r.status} ${r.text.slice(0, 200)}`);
    assert.is(r.json?.error?.code, 'PATH_NOT_ALLOWED', `${path.slice(0, 120)}: ${r.text.slice(0, 200)}`);
    assert.not.match(r.text, /TOP-SECRET|secret\.txt|root:x:/);
  }
  // the symlink pointing out is listed as a bare link, without size or time
  const listed = await http(base, 'GET', `/api/files/list?path=${enc(data)}`);
  const link = listed.json.entries.find((e: { name: string }) => e.name === 'link-out');
  assert.equal([link.type, link.size, link.mtime, link.outside_roots], ['link', null, null, true]);
});

test('static UI: index, pages with content types, shared modules, confinement, no listings', async () => {
  const ui = join(dir, 'ui');
  await mkdir(join(ui, 'css'), { recursive: true });
  // The modules the UI shares with the server are built beside it (dist/shared) and served at /shared/.
  await mkdir(join(dir, 'shared'), { recursive: true });
  await writeFile(join(dir, 'shared', 'csv.js'), 'export const shared = 1;');
  await writeFile(join(dir, 'shared', 'notes.txt'), 'not a module');
  await writeFile(join(ui, 'index.html'), '<!doctype html><title>skystack</title>');
  await writeFile(join(ui, 'run-monitor.html'), '<!doctype html><title>monitor</title>');
  await writeFile(join(ui, 'app.js'), 'export {};');
  await writeFile(join(ui, 'css', 'main.css'), 'body{}');
  await writeFile(join(dir, 'ui-secret.txt'), 'TOP-SECRET');
  await symlink(join(dir, 'ui-secret.txt'), join(ui, 'leak.txt'));
  const s = await testServer({ runsDir: join(dir, 'runs-ui'), uiDir: ui });
  try {
    const root = await http(s.url, 'GET', '/');
    assert.is(root.status, 302);
    assert.is(root.headers.location, '/ui/');
    const idx = await http(s.url, 'GET', '/ui/');
    assert.is(idx.status, 200);
    assert.match(String(idx.headers['content-type']), /^text\/html/);
    assert.match(idx.text, /skystack/);
    assert.match(String((await http(s.url, 'GET', '/ui/run-monitor.html?preprocessing_job_id=job_x')).headers['content-type']), /^text\/html/);
    assert.match(String((await http(s.url, 'GET', '/ui/app.js')).headers['content-type']), /^text\/javascript/);
    assert.match(String((await http(s.url, 'GET', '/ui/css/main.css')).headers['content-type']), /^text\/css/);
    const shared = await http(s.url, 'GET', '/shared/csv.js');
    assert.equal([shared.status, shared.text], [200, 'export const shared = 1;']);
    assert.match(String(shared.headers['content-type']), /^text\/javascript/);
    envelope(await http(s.url, 'GET', '/shared/notes.txt'), 404, 'NOT_FOUND');
    envelope(await http(s.url, 'POST', '/shared/csv.js'), 405, 'METHOD_NOT_ALLOWED');
    envelope(await http(s.url, 'GET', '/ui/css'), 404, 'NOT_FOUND');
    envelope(await http(s.url, 'GET', '/ui/missing.html'), 404, 'NOT_FOUND');
    for (const p of ['/ui/../ui-secret.txt', '/ui/%2e%2e/ui-secret.txt', '/ui/leak.txt', '/ui/..%2fui-secret.txt', '/shared/..%2fui-secret.txt', '/shared/%2e%2e/ui/app.js']) {
      const r = await http(s.url, 'GET', p);
      assert.ok(r.status === 403 || r.status === 404, `${p} → ${r.status}`);
      assert.not.match(r.text, /TOP-SECRET/);
    }
  } finally {
    await s.close();
  }
});

test('icon: every built page links favicon.svg, which the UI serves as SVG; /favicon.ico leads there', async () => {
  const pages = (await readdir(DEFAULT_UI_DIR)).filter((f) => f.endsWith('.html'));
  assert.ok(pages.length >= 4, pages.join(', '));
  for (const p of pages) assert.match(await readFile(join(DEFAULT_UI_DIR, p), 'utf8'), /<link rel="icon" href="favicon\.svg" type="image\/svg\+xml">/, p);
  const s = await testServer({ runsDir: join(dir, 'runs-icon'), uiDir: DEFAULT_UI_DIR });
  try {
    const icon = await http(s.url, 'GET', '/ui/favicon.svg');
    assert.is(icon.status, 200);
    assert.match(String(icon.headers['content-type']), /^image\/svg\+xml/);
    assert.match(icon.text, /^<svg xmlns="http:\/\/www\.w3\.org\/2000\/svg"/);
    const ico = await http(s.url, 'GET', '/favicon.ico');
    assert.equal([ico.status, ico.headers.location], [302, '/ui/favicon.svg']);
  } finally {
    await s.close();
  }
});

test.run();
