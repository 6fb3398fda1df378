// Configuration revisions: the store (sequential ids, exclusive files, an index completed after a
// crash between the two writes, no write through a planted link) and the API (a tiled run's
// config and revisions listed and read, a user revision validated before it is stored, Raw Stack
// runs refused with REVISIONS_NOT_SUPPORTED, ids that are not revision ids are 404).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, readFile, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { listRevisions, recordRevision } from '../../src/pipeline/config-revisions.js';
import { RUN_LAYOUTS } from '../../src/shared/run-layout.js';
import { withTempDir } from '../helpers/tmp.js';
import { http, testServer } from './helpers.js';

/** The message `f` rejects with (fails when it resolves). */
async function rejection(f: () => Promise<unknown>): Promise<string> {
  try {
    await f();
  } catch (e) {
    return (e as Error).message;
  }
  assert.unreachable('expected a rejection');
  return '';
}

async function tiledRun(runsDir: string, id: string): Promise<string> {
  const dir = join(runsDir, id);
  await mkdir(join(dir, 'logs'), { recursive: true });
  await writeFile(join(dir, 'run.json'), JSON.stringify({ run_id: id, kind: 'tiled', status: 'ok' }));
  await writeFile(join(dir, 'config.yaml'), 'stacking:\n  method: sigma\n');
  return dir;
}

test('store: sequential ids, YAML kept as given, index oldest first; an unlisted file is listed by the next write', async () => {
  await withTempDir('revisions', async (root) => {
    const dir = await tiledRun(root, 'r1_20260101_000000');
    const a = await recordRevision(dir, { yaml: 'stacking:\n  method: sigma\n', source: 'run_start', runId: 'r1', now: new Date('2026-01-01T00:00:00Z') });
    const b = await recordRevision(dir, { yaml: 'stacking:\n  method: winsor', source: 'resume_selected', runId: 'r1' });
    assert.equal([a.revision_id, b.revision_id], ['rev_0001', 'rev_0002']);
    assert.is(a.created_at, '2026-01-01T00:00:00.000Z');
    const revDir = join(dir, 'artifacts', 'config_revisions');
    assert.is(await readFile(join(revDir, 'rev_0002.yaml'), 'utf8'), 'stacking:\n  method: winsor\n');
    // A writer that stopped after its file: the next write lists it (as a user revision).
    await writeFile(join(revDir, 'rev_0003.yaml'), 'x: 1\n');
    const d = await recordRevision(dir, { yaml: 'y: 2\n', source: 'user', runId: 'r1' });
    assert.is(d.revision_id, 'rev_0004');
    assert.equal((await listRevisions(dir)).map((e) => [e.revision_id, e.source]), [['rev_0001', 'run_start'], ['rev_0002', 'resume_selected'], ['rev_0003', 'user'], ['rev_0004', 'user']]);
    assert.equal((await readdir(revDir)).sort(), ['index.json', 'rev_0001.yaml', 'rev_0002.yaml', 'rev_0003.yaml', 'rev_0004.yaml']);
    // Raw Stack runs keep none.
    assert.match(await rejection(() => recordRevision(dir, { yaml: 'a: 1', source: 'user', runId: 'r1' }, RUN_LAYOUTS.rawstack)), /keep no configuration revisions/);
  });
});

test('store: a revisions folder planted as a link out of the run folder is refused', async () => {
  await withTempDir('revisions-link', async (root) => {
    const dir = await tiledRun(root, 'r2_20260101_000000');
    const outside = join(root, 'outside');
    await mkdir(outside);
    await mkdir(join(dir, 'artifacts'), { recursive: true });
    await symlink(outside, join(dir, 'artifacts', 'config_revisions'));
    assert.match(await rejection(() => recordRevision(dir, { yaml: 'a: 1', source: 'user', runId: 'r2' })), /leads outside the run folder/);
    assert.equal(await readdir(outside), []);
  });
});

test('API: config, revisions list and one revision of a tiled run; user revision validated; Raw Stack refused', async () => {
  await withTempDir('revisions-api', async (root) => {
    const runsDir = join(root, 'runs');
    const id = 'night_20260101_000000';
    const dir = await tiledRun(runsDir, id);
    await recordRevision(dir, { yaml: 'stacking:\n  method: sigma\n', source: 'run_start', runId: id });
    const raw = join(runsDir, 'raw_20260101_000000');
    await mkdir(join(raw, 'artifacts', 'preprocess'), { recursive: true });
    await writeFile(join(raw, 'run.json'), JSON.stringify({ run_id: 'raw_20260101_000000', kind: 'rawstack', status: 'ok' }));
    await writeFile(join(raw, 'artifacts', 'preprocess', 'effective_config.json'), '{"rejection":{"method":"sigma"}}');
    const server = await testServer({ runsDir, roots: [root] });
    try {
      const base = server.url;
      const origin = { origin: base };
      const cfg = await http(base, 'GET', `/api/runs/${id}/config`);
      assert.is(cfg.status, 200);
      assert.equal([cfg.json.kind, cfg.json.path, cfg.json.format, cfg.json.text, cfg.json.revision_id], ['tiled', 'config.yaml', 'yaml', 'stacking:\n  method: sigma\n', 'rev_0001']);
      const bad = await http(base, 'POST', `/api/runs/${id}/config/revisions`, { headers: origin, body: { config_yaml: 'stacking:\n  method: fancy\n' } });
      assert.is(bad.status, 400);
      assert.is(bad.json.error.code, 'VALIDATION_ERROR');
      assert.is(bad.json.error.details.issues[0].line, 2, 'the issue names its line');
      const good = await http(base, 'POST', `/api/runs/${id}/config/revisions`, { headers: origin, body: { config_yaml: 'stacking:\n  method: winsor\n' } });
      assert.is(good.status, 201, good.text);
      assert.equal([good.json.revision_id, good.json.source, good.json.run_id], ['rev_0002', 'user', id]);
      const list = await http(base, 'GET', `/api/runs/${id}/config/revisions`);
      assert.equal(list.json.items.map((e: { revision_id: string }) => e.revision_id), ['rev_0001', 'rev_0002']);
      const one = await http(base, 'GET', `/api/runs/${id}/config/revisions/rev_0002`);
      assert.equal([one.status, one.json.yaml, one.json.source], [200, 'stacking:\n  method: winsor\n', 'user']);
      for (const rev of ['rev_0009', '..%2Findex', 'index.json', 'rev_0001.yaml']) assert.is((await http(base, 'GET', `/api/runs/${id}/config/revisions/${rev}`)).status, 404, rev);
      // Cross-site: a state-changing route needs a same-origin request.
      const evil = await http(base, 'POST', `/api/runs/${id}/config/revisions`, { headers: { origin: 'http://evil.example' }, body: { config_yaml: 'a: 1\n' } });
      assert.is(evil.status, 403);
      // Raw Stack: its configuration is readable, revisions are not supported.
      const rcfg = await http(base, 'GET', '/api/runs/raw_20260101_000000/config');
      assert.equal([rcfg.status, rcfg.json.kind, rcfg.json.format, rcfg.json.revision_id], [200, 'rawstack', 'json', null]);
      for (const [m, p] of [['GET', '/config/revisions'], ['GET', '/config/revisions/rev_0001'], ['POST', '/config/revisions']] as const) {
        const r = await http(base, m, `/api/runs/raw_20260101_000000${p}`, m === 'POST' ? { headers: origin, body: { config_yaml: 'a: 1\n' } } : {});
        assert.equal([r.status, r.json.error.code], [409, 'REVISIONS_NOT_SUPPORTED'], `${m} ${p}`);
      }
      await rm(join(dir, 'config.yaml'));
      assert.is((await http(base, 'GET', `/api/runs/${id}/config`)).status, 404);
    } finally {
      await server.close();
    }
  });
});

test.run();
