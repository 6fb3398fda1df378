// Probe-style checks of the REST API (issue 16, docs/threat-model.md): each test is one class of
// hostile request, sent from outside over HTTP the way a probe would, and asserts the class is
// answered right: a pathological glob does not stall the server, no alias of a state-changing
// route skips its cross-site guard, links planted in a run folder or an allowed folder reveal
// nothing outside the roots, a parent of a system folder cannot be granted, deep JSON/YAML get
// a specific 400, stored paths are confined (no existence oracle through /api/system/info), a
// stalled request body is timed out while SSE streams stay open, and the run list follows runs
// that appear, change and disappear.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmod, copyFile, mkdir, mkdtemp, readdir, rm, symlink, writeFile, appendFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningServer } from '../../src/server/app.js';
import type { ServerOptions } from '../../src/server/context.js';
import { http, serveProcess, testServer, tinyLights, waitFor, type Res } from './helpers.js';

let dir = '';
let data = '';
let lights = '';
let outside = '';
let srv: RunningServer;
let base = '';

function envelope(r: Res, status: number, code: string): void {
  assert.is(r.status, status, `${status} expected, got ${r.status}: ${r.text.slice(0, 300)}`);
  assert.is(r.json?.error?.code, code, r.text.slice(0, 300));
  assert.not.match(r.text, /\n\s+at /, 'no stack trace');
}

/** A request with a deadline: a server that does not answer in `ms` fails the test instead of hanging it. */
async function within<T>(ms: number, what: string, p: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_r, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([p, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Raw bytes over a socket; resolves with what came back and whether the server closed it within `ms`. */
function rawExchange(port: number, bytes: string, ms: number): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => s.write(bytes));
    let text = '';
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => finish(false), ms);
    s.on('data', (d) => (text += d.toString()));
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
  });
}

/** Reads an SSE response for `ms` (or until the server ends it); returns the text received. */
function sseFor(port: number, path: string, ms: number, onOpen?: () => void): Promise<{ text: string; ended: boolean }> {
  return new Promise((resolve) => {
    const s = connect(port, '127.0.0.1', () => {
      s.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      onOpen?.();
    });
    let text = '';
    let settled = false;
    const finish = (ended: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      s.destroy();
      resolve({ text, ended });
    };
    const timer = setTimeout(() => finish(false), ms);
    s.on('data', (d) => {
      text += d.toString();
      if (/event: end/.test(text)) finish(true);
    });
    s.on('close', () => finish(true));
    s.on('error', () => finish(true));
  });
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'skystack-hardening-'));
  data = join(dir, 'data');
  lights = await tinyLights(data);
  outside = join(dir, 'outside');
  await mkdir(outside);
  srv = await testServer({ runsDir: join(dir, 'runs'), roots: [data] });
  base = srv.url;
});

test.after(async () => {
  await srv.close();
  await rm(dir, { recursive: true, force: true });
});

test('1. a backtracking glob cannot stall the server (files scan and config suggest)', async () => {
  const folder = join(data, 'long-names');
  await mkdir(folder);
  await writeFile(join(folder, 'a'.repeat(60)), 'x');
  await writeFile(join(folder, `${'a'.repeat(40)}b`), 'x');
  // With a RegExp per `*` this pattern against the 60-character name takes seconds to hours. The
  // server runs as its own process here, so a stalled event loop there cannot stall this test's
  // deadline timers.
  const { proc, url: base } = await serveProcess(['--runs-dir', join(dir, 'runs-glob'), '--root', data]);
  try {
    const pattern = '*a*a*a*a*a*a*a*b';
    const scan = await within(10000, 'scan', http(base, 'POST', '/api/files/scan', { body: { path: folder, pattern } }));
    assert.is(scan.status, 200, scan.text);
    assert.equal(scan.json.frames.map((f: { name: string }) => f.name), [`${'a'.repeat(40)}b`]);
    const suggest = await within(10000, 'suggest', http(base, 'POST', '/api/config/suggest', { body: { input_dir: folder, pattern: `${pattern};*.fits` } }));
    assert.is(suggest.status, 200, suggest.text);
    assert.is(suggest.json.measured.frames, 0);
    // the pattern length is bounded at the schema edge
    envelope(await http(base, 'POST', '/api/files/scan', { body: { path: folder, pattern: '*a'.repeat(200) } }), 400, 'VALIDATION_ERROR');
    assert.is((await http(base, 'GET', '/api/system/health')).status, 200);
  } finally {
    proc.kill('SIGKILL');
  }
});

test('2. no alias of a state-changing route skips its cross-site guard', async () => {
  const oa = (await http(base, 'GET', '/api/openapi.json')).json as { paths: Record<string, Record<string, { 'x-changes-state'?: boolean }>> };
  const routes: { method: string; path: string }[] = [];
  for (const [p, ops] of Object.entries(oa.paths)) {
    for (const [m, op] of Object.entries(ops)) if (m !== 'get' || op['x-changes-state']) routes.push({ method: m.toUpperCase(), path: p });
  }
  if (!routes.some((r) => r.path === '/api/files/grant')) routes.push({ method: 'GET', path: '/api/files/grant' });
  assert.ok(routes.length >= 10, `state-changing routes: ${routes.map((r) => r.path).join(' ')}`);
  const target = join(dir, 'grant-target');
  await mkdir(target);
  const grantsBefore = (await http(base, 'GET', '/api/files/list')).json.entries.length;
  const paramsBefore = (await http(base, 'GET', '/api/tools/preprocessing/parameters')).text;
  const jobsBefore = (await http(base, 'GET', '/api/jobs')).json.total;
  const concrete = (p: string) => p.replace('{id}', 'job_x0000000000').replace('{path}', 'x');
  const aliases = (p: string): string[] => {
    const segs = p.split('/');
    const last = segs[segs.length - 1]!;
    const enc = `%${last.charCodeAt(0).toString(16)}${last.slice(1)}`;
    return [
      p,
      `${p}/`,
      p.toUpperCase(),
      segs.map((s) => (s ? s[0]!.toUpperCase() + s.slice(1) : s)).join('/'),
      p.replace('/api/', '/api//'),
      `/${p}`,
      [...segs.slice(0, -1), enc].join('/'),
      p.replace(/\//g, '%2F'),
      p.replace('/api/', '/api/./'),
      `${p}%20`,
      `${p};x`,
    ];
  };
  const bodies: Record<string, unknown> = {
    '/api/files/scan': { path: lights },
    '/api/tools/preprocessing/parameters': { rejection: { low: 1.5 } },
    '/api/tools/preprocessing/run': { lights_dir: lights },
    '/api/jobs/run': { pipeline: 'rawstack', lights_dir: lights },
    '/api/config/suggest': { scan: { frames: 3 } },
  };
  let tried = 0;
  for (const r of routes) {
    for (const a of aliases(concrete(r.path))) {
      for (const headers of [{ origin: 'http://evil.example' }, { 'sec-fetch-site': 'cross-site' }] as Record<string, string>[]) {
        const query = r.path === '/api/files/grant' ? `?path=${encodeURIComponent(target)}` : '';
        const body = bodies[r.path];
        const res = await http(base, r.method, `${a}${query}`, { headers, ...(body && r.method !== 'GET' ? { body } : {}) });
        tried++;
        assert.ok(res.status >= 400, `${r.method} ${a} with ${JSON.stringify(headers)} → ${res.status} ${res.text.slice(0, 200)}`);
        if (a === concrete(r.path)) envelope(res, 403, 'FORBIDDEN_ORIGIN');
      }
    }
  }
  assert.ok(tried > 200);
  assert.is((await http(base, 'GET', '/api/files/list')).json.entries.length, grantsBefore, 'no grant was made');
  envelope(await http(base, 'GET', `/api/files/list?path=${encodeURIComponent(target)}`), 403, 'PATH_NOT_ALLOWED');
  assert.is((await http(base, 'GET', '/api/tools/preprocessing/parameters')).text, paramsBefore, 'parameters unchanged');
  assert.is((await http(base, 'GET', '/api/jobs')).json.total, jobsBefore, 'no job started');
  // routing is strict and case-sensitive for plain reads too
  assert.is((await http(base, 'GET', '/api/system/info')).status, 200);
  for (const p of ['/api/system/info/', '/API/system/info', '/api//system/info']) envelope(await http(base, 'GET', p), 404, 'NOT_FOUND');
});

test('3. links planted in a run folder reveal nothing outside the run folder', async () => {
  const runs = srv.context.runsDir;
  await writeFile(join(outside, 'run.json'), JSON.stringify({ run_id: 'evil', kind: 'SECRET-KIND', status: 'SECRET-STATUS', created_at: '2099-01-01T00:00:00.000Z', job_id: null }));
  const ev = [
    { seq: 1, ts: '2099-01-01T00:00:00.000Z', run_id: 'evil', type: 'run_start', kind: 'SECRET-EVENT', run_dir: '/x' },
    { seq: 2, ts: '2099-01-01T00:00:01.000Z', run_id: 'evil', type: 'run_end', status: 'ok', duration_ms: 1, failed_phases: [], note: 'SECRET-EVENT' },
  ];
  await writeFile(join(outside, 'events.jsonl'), ev.map((l) => JSON.stringify(l)).join('\n') + '\n');
  await writeFile(join(outside, 'frame_quality.csv'), 'index,file,status,fwhm\n0,SECRET-ROW.fits,accepted,2.5\n');
  await writeFile(join(outside, 'report.json'), '{"secret": "SECRET-REPORT"}');
  const outDir = join(outside, 'outdir');
  await mkdir(join(outDir, 'preprocess'), { recursive: true });
  await writeFile(join(outDir, 'hidden-file.txt'), 'SECRET-CONTENT');
  await copyFile(join(outside, 'events.jsonl'), join(outDir, 'preprocess', 'events.jsonl'));
  await copyFile(join(outside, 'frame_quality.csv'), join(outDir, 'preprocess', 'frame_quality.csv'));
  // run A: every file a link; run B: whole sub-folders are links; run C: the run folder itself is one
  const a = join(runs, 'evil_a');
  await mkdir(join(a, 'artifacts', 'preprocess'), { recursive: true });
  await symlink(join(outside, 'run.json'), join(a, 'run.json'));
  await symlink(join(outside, 'events.jsonl'), join(a, 'artifacts', 'preprocess', 'events.jsonl'));
  await symlink(join(outside, 'frame_quality.csv'), join(a, 'artifacts', 'preprocess', 'frame_quality.csv'));
  await symlink(join(outside, 'report.json'), join(a, 'artifacts', 'preprocess', 'preprocessing_report.json'));
  await symlink(outDir, join(a, 'outputs'));
  const b = join(runs, 'evil_b');
  await mkdir(b);
  await writeFile(join(b, 'run.json'), JSON.stringify({ run_id: 'evil_b', kind: 'rawstack', status: 'ok', created_at: '2098-01-01T00:00:00.000Z', job_id: null }));
  await symlink(outDir, join(b, 'artifacts'));
  await symlink(outDir, join(b, 'outputs'));
  await symlink(outside, join(runs, 'evil_c'));
  const leaks = /SECRET/;
  const list = await http(base, 'GET', '/api/runs?limit=1000');
  assert.is(list.status, 200);
  assert.not.match(list.text, leaks, `run list: ${list.text.slice(0, 300)}`);
  for (const id of ['evil_a', 'evil_b', 'evil_c']) {
    for (const p of ['', '/logs', '/artifacts', '/report', '/artifacts/view?path=run.json', '/artifacts/view?path=artifacts/preprocess/events.jsonl', '/artifacts/view?path=outputs/hidden-file.txt', '/artifacts/raw/run.json', '/artifacts/raw/outputs/hidden-file.txt', '/artifacts/raw/artifacts/hidden-file.txt']) {
      const r = await http(base, 'GET', `/api/runs/${id}${p}`);
      assert.not.match(r.text, leaks, `${id}${p} → ${r.status} ${r.text.slice(0, 300)}`);
      assert.ok(r.status < 500, `${id}${p} → ${r.status}`);
    }
    const suggest = await http(base, 'POST', '/api/config/suggest', { body: { run_id: id } });
    assert.not.match(suggest.text, leaks, `suggest ${id}: ${suggest.text.slice(0, 300)}`);
    const s = await sseFor(srv.port, `/api/runs/${id}/events`, 800);
    assert.not.match(s.text, leaks, `events ${id}: ${s.text.slice(0, 300)}`);
  }
  const details = await http(base, 'GET', '/api/runs/evil_b');
  assert.is(details.status, 200);
  assert.is(details.json.events, 0, 'a linked-out events file counts as none');
  const arts = await http(base, 'GET', '/api/runs/evil_b/artifacts');
  assert.equal(arts.json.items.map((i: { path: string }) => i.path), ['run.json']);
  assert.equal((await http(base, 'GET', '/api/runs/evil_a/artifacts')).json.items, [], 'links are not artifacts');
});

test('4. a folder that contains a refused system folder cannot be granted', async () => {
  const before = (await http(base, 'GET', '/api/files/list')).json.entries.length;
  for (const p of ['/var', '/var/', '/usr/local/..', '/usr']) {
    const r = await http(base, 'GET', `/api/files/grant?path=${encodeURIComponent(p)}`);
    envelope(r, 403, 'PATH_NOT_ALLOWED');
  }
  envelope(await http(base, 'GET', `/api/files/list?path=${encodeURIComponent('/var/lib')}`), 403, 'PATH_NOT_ALLOWED');
  assert.is((await http(base, 'GET', '/api/files/list')).json.entries.length, before);
  // an ordinary folder beside them still can
  const ok = join(dir, 'grant-ok');
  await mkdir(ok);
  assert.is((await http(base, 'GET', `/api/files/grant?path=${encodeURIComponent(ok)}`)).status, 200);
  // a grant stored under the older rule is not honoured at start
  const state = join(dir, 'state-grants');
  await mkdir(state, { recursive: true });
  await writeFile(join(state, 'grants.json'), JSON.stringify([{ path: '/var', granted_at: '2026-01-01T00:00:00.000Z', granted_by: 'x' }, { path: ok, granted_at: '2026-01-01T00:00:00.000Z', granted_by: 'x' }]));
  const s = await testServer({ runsDir: join(dir, 'runs-grants'), stateDir: state });
  try {
    const roots = (await http(s.url, 'GET', '/api/files/list')).json.entries.map((e: { path: string }) => e.path);
    assert.ok(roots.includes(ok) && !roots.includes('/var'), roots.join(' '));
  } finally {
    await s.close();
  }
});

test('5. deeply nested JSON and YAML get 400 NESTING_TOO_DEEP with a short message, never 500', async () => {
  const deepObj = (n: number) => `${'{"a":'.repeat(n)}1${'}'.repeat(n)}`;
  const deepArr = (n: number) => `${'['.repeat(n)}${']'.repeat(n)}`;
  const cases: [string, string, string][] = [
    ['POST', '/api/jobs/run', `{"pipeline":"rawstack","lights_dir":${JSON.stringify(lights)},"config":${deepObj(6000)}}`],
    ['POST', '/api/tools/preprocessing/run', `{"lights_dir":${JSON.stringify(lights)},"config":${deepObj(6000)}}`],
    ['POST', '/api/tools/preprocessing/run', `{"config":{"quality_filter":{"overrides":${deepObj(200)}}}}`],
    ['PATCH', '/api/tools/preprocessing/parameters', deepObj(6000)],
    ['POST', '/api/files/scan', `{"path":${deepArr(50000)}}`],
    ['POST', '/api/config/suggest', `{"scan":${deepObj(100000)}}`],
    ['POST', '/api/tools/preprocessing/import', `{"yaml":"a: 1","x":${deepArr(3000)}}`],
  ];
  for (const [m, p, raw] of cases) {
    const r = await http(base, m, p, { raw, headers: { 'content-type': 'application/json' } });
    envelope(r, 400, 'NESTING_TOO_DEEP');
    assert.ok(r.json.error.message.length < 200, r.json.error.message);
  }
  const yamls = [
    `a: ${'['.repeat(20000)}${']'.repeat(20000)}`,
    `${'- '.repeat(3000)}1`,
    Array.from({ length: 1400 }, (_, i) => `${' '.repeat(i)}k:`).join('\n') + ' 1',
    `a: ${'{b: '.repeat(3000)}1${'}'.repeat(3000)}`,
  ];
  const yamlFile = join(data, 'deep.yaml');
  for (const y of yamls) {
    for (const r of [
      await http(base, 'POST', '/api/config/validate', { raw: y, headers: { 'content-type': 'text/yaml' } }),
      await http(base, 'POST', '/api/config/validate', { body: { yaml: y } }),
      await http(base, 'POST', '/api/tools/preprocessing/import', { body: { yaml: y } }),
      await (async () => {
        await writeFile(yamlFile, y);
        return http(base, 'POST', '/api/tools/preprocessing/import-file', { body: { path: yamlFile } });
      })(),
    ]) {
      envelope(r, 400, 'NESTING_TOO_DEEP');
      assert.ok(r.json.error.message.length < 200, r.json.error.message);
    }
  }
  // ordinary nesting still passes
  const fine = await http(base, 'POST', '/api/config/validate', { raw: 'stacking:\n  sigma_clip:\n    sigma_low: 2\n', headers: { 'content-type': 'text/yaml' } });
  assert.is(fine.status, 200, fine.text);
  assert.is((await http(base, 'GET', '/api/system/health')).status, 200);
});

test('6. file links inside an allowed folder are confined: scan and run see only frames inside the roots', async () => {
  const mixed = join(data, 'linked');
  await mkdir(mixed);
  const names = (await readdir(lights)).filter((n) => n.endsWith('.fits')).sort();
  for (const n of names.slice(0, 5)) await copyFile(join(lights, n), join(mixed, n));
  await copyFile(join(lights, names[5]!), join(outside, 'outside_frame.fits'));
  await symlink(join(outside, 'outside_frame.fits'), join(mixed, 'light_90001.fits'));
  await symlink(join(outside, 'missing.fits'), join(mixed, 'light_90002.fits'));
  await symlink('/etc/passwd', join(mixed, 'light_90003.fits'));
  await symlink(join(mixed, names[0]!), join(mixed, 'light_90004.fits')); // a link inside the roots is fine
  const scan = await http(base, 'POST', '/api/files/scan', { body: { path: mixed, pattern: '*.fits', checksums: true } });
  assert.is(scan.status, 200, scan.text);
  const listed = scan.json.frames.map((f: { name: string }) => f.name);
  assert.equal(listed, [...names.slice(0, 5), 'light_90004.fits']);
  assert.not.match(scan.text, /outside|passwd|90001|90002|90003/);
  assert.is(scan.json.summary.readable, 6);

  // Paths named in requests: a link out of the roots is refused the same way whether its target
  // exists or not (no existence oracle); a dangling link inside the roots is a missing file.
  await writeFile(join(outside, 'exists.yaml'), 'a: 1\n');
  await symlink(join(outside, 'exists.yaml'), join(data, 'to-existing.yaml'));
  await symlink(join(outside, 'absent.yaml'), join(data, 'to-absent.yaml'));
  await symlink('../outside/absent-too.yaml', join(data, 'to-absent-relative.yaml'));
  await symlink(join(data, 'absent-inside.yaml'), join(data, 'to-absent-inside.yaml'));
  const answer = async (name: string) => {
    const r = await http(base, 'POST', '/api/tools/preprocessing/import-file', { body: { path: join(data, name) } });
    return `${r.status} ${r.json?.error?.code}`;
  };
  assert.is(await answer('to-existing.yaml'), '403 PATH_NOT_ALLOWED');
  assert.is(await answer('to-absent.yaml'), '403 PATH_NOT_ALLOWED');
  assert.is(await answer('to-absent-relative.yaml'), '403 PATH_NOT_ALLOWED');
  assert.is(await answer('to-absent-inside.yaml'), '422 PATH_NOT_FOUND');
  assert.is((await http(base, 'GET', `/api/files/list?path=${encodeURIComponent(join(data, 'to-absent.yaml', 'x'))}`)).status, 403);

  const start = await http(base, 'POST', '/api/tools/preprocessing/run', {
    body: { lights_dir: mixed, pattern: 'light_0*.fits;light_90001.fits;light_90003.fits', run_name: 'linked', config: { frames_min: 1, postprocess: { astrometry: false, bge: false, pcc: false, hypermetric_stretch: false } } },
  });
  assert.is(start.status, 202, start.text);
  const job = await waitFor(async () => {
    const r = await http(base, 'GET', `/api/jobs/${start.json.job_id}`);
    return ['ok', 'error', 'cancelled'].includes(r.json.state) ? r : null;
  }, 60000, 100);
  const logs = await http(base, 'GET', `/api/runs/${start.json.run_id}/logs`);
  const scanEnd = logs.json.items.find((l: { type: string; phase?: string }) => l.type === 'phase_end' && l.phase === 'INPUT_SCAN');
  assert.ok(scanEnd, `INPUT_SCAN ended (${job.json.state}): ${logs.text.slice(0, 400)}`);
  assert.not.match(logs.text, /outside_frame|90001|90003|passwd/, 'the run never saw the linked-out frames');
  const report = await http(base, 'GET', `/api/runs/${start.json.run_id}/report`);
  if (report.status === 200 && report.json.frames.length > 0) {
    assert.equal(report.json.frames.map((f: { file: string }) => String(f.file).split('/').pop()).sort(), names.slice(0, 5));
  }
});

test('7. stored paths are confined, and /api/system/info is no existence oracle', async () => {
  const indexDir = join(outside, 'index-dir');
  await mkdir(indexDir);
  await writeFile(join(indexDir, 'index-4107.fits'), 'x');
  const bin = join(outside, 'bin');
  await mkdir(bin);
  await writeFile(join(bin, 'solve-field'), '#!/bin/sh\nexit 0\n');
  await chmod(join(bin, 'solve-field'), 0o755);
  const refused: Record<string, unknown>[] = [
    { astrometry: { astrometry_net_data_dir: indexDir } },
    { astrometry: { astap_data_dir: '/etc' } },
    { pcc: { catalog_file: '/etc/passwd' } },
    { lights_dir: outside },
    { bias_dir: '/etc' },
    { runs_dir: '/etc/skystack-runs' },
    { calibration: { dark_master: join(outside, 'missing.fits') } },
    { queue: [{ filter: 'L', input_dir: '/etc' }] },
    { astrometry: { astrometry_net_bin: '/etc/passwd' } },
  ];
  for (const body of refused) {
    const r = await http(base, 'PATCH', '/api/tools/preprocessing/parameters', { body });
    assert.is(r.status, 403, `PATCH ${JSON.stringify(body)} → ${r.status}`);
    envelope(r, 403, 'PATH_NOT_ALLOWED');
  }
  assert.not.match((await http(base, 'GET', '/api/tools/preprocessing/parameters')).text, /outside|\/etc/);
  // Parameters stored before this rule (written straight into the state file) are confined at
  // start: two servers whose stored data folders differ only outside the roots answer alike.
  const answers: unknown[] = [];
  for (const dataDir of [indexDir, join(outside, 'no-such-dir')]) {
    const state = join(dir, `state-${answers.length}`);
    await mkdir(state, { recursive: true });
    await writeFile(join(state, 'parameters.json'), JSON.stringify({ config: { astrometry: { astrometry_net_bin: join(bin, 'solve-field'), astrometry_net_data_dir: dataDir } }, updated_at: '2026-01-01T00:00:00.000Z' }));
    const s = await testServer({ runsDir: join(dir, `runs-info-${answers.length}`), stateDir: state, roots: [data] });
    try {
      const info = await http(s.url, 'GET', '/api/system/info');
      assert.is(info.status, 200);
      assert.not.match(info.text, /index-dir|no-such-dir/);
      answers.push(info.json.capabilities.astrometry);
    } finally {
      await s.close();
    }
  }
  assert.equal(answers[0], answers[1]);
});

test('8. a stalled request body is timed out; SSE streams stay open', async () => {
  const s = await testServer({ runsDir: join(dir, 'runs-slow'), roots: [data], ...({ requestTimeoutMs: 800 } as Partial<ServerOptions>) });
  try {
    const host = `Host: 127.0.0.1:${s.port}\r\n`;
    const post = await rawExchange(s.port, `POST /api/files/scan HTTP/1.1\r\n${host}Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{"pa`, 8000);
    assert.ok(post.closed, `stalled POST body: socket still open (${post.text.slice(0, 120)})`);
    assert.match(post.text, /^HTTP\/1\.1 408/);
    assert.match(post.text, /"code":"REQUEST_TIMEOUT"/, 'answered in the error envelope');
    // a route that never reads its body is cut off as well
    const del = await rawExchange(s.port, `DELETE /api/jobs/job_x0000000000 HTTP/1.1\r\n${host}Content-Length: 50\r\n\r\nab`, 8000);
    assert.ok(del.closed, 'stalled DELETE body: socket still open');
    // headers that never end
    const hdr = await rawExchange(s.port, `GET /api/system/info HTTP/1.1\r\n${host}X-Slow: 1\r\n`, 8000);
    assert.ok(hdr.closed, 'stalled headers: socket still open');
    // an SSE stream outlives the request timeout and still delivers new events
    const run = join(s.context.runsDir, 'sse_run');
    await mkdir(join(run, 'artifacts', 'preprocess'), { recursive: true });
    const events = join(run, 'artifacts', 'preprocess', 'events.jsonl');
    await writeFile(events, `${JSON.stringify({ seq: 1, ts: new Date().toISOString(), run_id: 'sse_run', type: 'run_start', kind: 'rawstack', run_dir: run })}\n`);
    const stream = sseFor(s.port, '/api/runs/sse_run/events', 8000, () => {
      setTimeout(() => {
        void appendFile(events, `${JSON.stringify({ seq: 2, ts: new Date().toISOString(), run_id: 'sse_run', type: 'run_end', status: 'ok', duration_ms: 1, failed_phases: [] })}\n`);
      }, 2500);
    });
    const got = await stream;
    assert.match(got.text, /"type":"run_start"/);
    assert.match(got.text, /"type":"run_end"/, `the stream stayed open past the request timeout: ${got.text.slice(-200)}`);
    assert.ok(got.ended, 'ended by the run_end event');
  } finally {
    await s.close();
  }
});

test('run list: runs that appear, change and disappear are listed at once, newest first', async () => {
  const s = await testServer({ runsDir: join(dir, 'runs-index'), roots: [data] });
  try {
    const runs = s.context.runsDir;
    const make = async (id: string, status: string, created: string) => {
      await mkdir(join(runs, id), { recursive: true });
      await writeFile(join(runs, id, 'run.json'), JSON.stringify({ run_id: id, kind: 'rawstack', status, created_at: created, job_id: null }));
    };
    await make('r1', 'ok', '2026-01-01T00:00:00.000Z');
    await make('r2', 'running', '2026-01-02T00:00:00.000Z');
    const ids = async () => (await http(s.url, 'GET', '/api/runs')).json.items.map((r: { run_id: string; status: string }) => `${r.run_id}:${r.status}`);
    assert.equal(await ids(), ['r2:running', 'r1:ok']);
    await make('r3', 'pending', '2026-01-03T00:00:00.000Z');
    assert.equal(await ids(), ['r3:pending', 'r2:running', 'r1:ok']);
    await make('r2', 'ok', '2026-01-02T00:00:00.000Z');
    assert.equal(await ids(), ['r3:pending', 'r2:ok', 'r1:ok']);
    await rm(join(runs, 'r1'), { recursive: true });
    assert.equal(await ids(), ['r3:pending', 'r2:ok']);
    const paged = await http(s.url, 'GET', '/api/runs?limit=1&offset=1');
    assert.equal([paged.json.total, paged.json.items[0].run_id], [2, 'r2']);
    // a started job's run shows at once
    const start = await http(s.url, 'POST', '/api/tools/preprocessing/run', { body: { lights_dir: lights, run_name: 'idx' } });
    assert.is(start.status, 202, start.text);
    assert.ok((await ids()).some((x: string) => x.startsWith(`${start.json.run_id}:`)));
    await http(s.url, 'DELETE', `/api/jobs/${start.json.job_id}`);
  } finally {
    await s.close();
  }
});

test.run();
