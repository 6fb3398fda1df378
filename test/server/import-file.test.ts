// POST /api/tools/preprocessing/import-file {path} (the UI's "server path" import): the same
// answer as /import {yaml} for a YAML file inside the allowed roots; files outside the roots,
// missing files, folders, files over 1 MiB and YAML syntax errors are refused with the envelope.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningServer } from '../../src/server/app.js';
import { http, testServer, type Res } from './helpers.js';

let dir = '';
let data = '';
let outside = '';
let srv: RunningServer;

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'skystack-import-file-'));
  data = join(dir, 'data');
  outside = join(dir, 'outside');
  await mkdir(data, { recursive: true });
  await mkdir(outside, { recursive: true });
  srv = await testServer({ runsDir: join(dir, 'runs'), roots: [data] });
});

test.after(async () => {
  await srv.close();
  await rm(dir, { recursive: true, force: true });
});

const post = (path: unknown): Promise<Res> => http(srv.url, 'POST', '/api/tools/preprocessing/import-file', { body: { path } });

function envelope(r: Res, status: number, code: string): void {
  assert.is(r.status, status, r.text);
  assert.is(r.json?.error?.code, code, r.text);
}

test('a YAML file inside the roots imports like pasted text', async () => {
  const yaml = 'normalization:\n  mode: median\nstacking:\n  sigma_clip:\n    sigma_high: 4\npcc:\n  enabled: false\nbge:\n  bogus: 1\n';
  const file = join(data, 'tile_compile.yaml');
  await writeFile(file, yaml);
  const r = await post(file);
  assert.is(r.status, 200, r.text);
  const pasted = await http(srv.url, 'POST', '/api/tools/preprocessing/import', { body: { yaml } });
  assert.equal(r.json.config, pasted.json.config);
  assert.equal(r.json.mapped, pasted.json.mapped);
  assert.equal(r.json.ignored, pasted.json.ignored);
  assert.is(r.json.path, file);
  assert.is(r.json.config.stacking.normalization, 'median');
  assert.is(r.json.config.rejection.high, 4);
  assert.is(r.json.config.postprocess.pcc, false);
  assert.ok(r.json.ignored.some((i: { path: string }) => i.path === 'bge.bogus'));
  // Nothing is stored by an import.
  const stored = await http(srv.url, 'GET', '/api/tools/preprocessing/parameters');
  assert.is(stored.json.config.stacking.normalization, 'addscale');
});

test('outside the roots (also through a symlink), missing, a folder, relative: refused', async () => {
  const secret = join(outside, 'secret.yaml');
  await writeFile(secret, 'normalization:\n  mode: median\n');
  envelope(await post(secret), 403, 'PATH_NOT_ALLOWED');
  await symlink(secret, join(data, 'link.yaml'));
  envelope(await post(join(data, 'link.yaml')), 403, 'PATH_NOT_ALLOWED');
  envelope(await post('relative.yaml'), 403, 'PATH_NOT_ALLOWED');
  const missing = await post(join(data, 'none.yaml'));
  assert.is(missing.status, 422, missing.text);
  const folder = await post(data);
  assert.is(folder.status, 422, folder.text);
  envelope(await http(srv.url, 'POST', '/api/tools/preprocessing/import-file', { body: { path: join(data, 'x.yaml'), yaml: 'a: 1' } }), 400, 'VALIDATION_ERROR');
});

test('over 1 MiB: 413; YAML syntax error: 400 with the line', async () => {
  const big = join(data, 'big.yaml');
  await writeFile(big, `# ${'x'.repeat(1024 * 1024)}\n`);
  envelope(await post(big), 413, 'PAYLOAD_TOO_LARGE');
  const bad = join(data, 'bad.yaml');
  await writeFile(bad, 'a: [1, 2\nb: 3\n');
  const r = await post(bad);
  envelope(r, 400, 'VALIDATION_ERROR');
  assert.type(r.json.error.details.issues[0].line, 'number');
});

test.run();
