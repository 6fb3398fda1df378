// Configuration templates of the run studio: the store (atomic files under the state dir, names a
// closed alphabet, list by name skipping temp files) and the API (PUT creates 201 then replaces
// 200, a template with YAML errors is refused with their lines, bad names 400, unknown names 404,
// DELETE removes, and the files lie under <state_dir>/templates).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { TemplateStore } from '../../src/server/templates.js';
import { withTempDir } from '../helpers/tmp.js';
import { http, testServer } from './helpers.js';

test('store: put, get, list by name, replace, delete; temp files and foreign files are not templates', async () => {
  await withTempDir('templates', async (root) => {
    const dir = join(root, 'templates');
    const s = new TemplateStore(dir);
    assert.equal(await s.list(), []);
    await s.put('wide-field', 'stacking:\n  method: sigma\n', new Date('2026-01-01T00:00:00Z'));
    await s.put('a_first', '', new Date('2026-01-02T00:00:00Z'));
    await writeFile(join(dir, '.wide-field.json.123.abcd.tmp'), '{');
    await writeFile(join(dir, 'notes.txt'), 'x');
    assert.equal((await s.list()).map((t) => [t.name, t.bytes]), [['a_first', 0], ['wide-field', 26]]);
    assert.is((await s.get('wide-field'))?.updated_at, '2026-01-01T00:00:00.000Z');
    await s.put('wide-field', 'stacking:\n  method: winsor\n');
    assert.is((await s.get('wide-field'))?.yaml, 'stacking:\n  method: winsor\n');
    assert.ok(await s.delete('wide-field'));
    assert.not.ok(await s.delete('wide-field'));
    assert.is(await s.get('wide-field'), null);
    for (const bad of ['../x', '.hidden', 'a/b', '', 'x'.repeat(65)]) {
      let threw = false;
      try {
        await s.get(bad);
      } catch {
        threw = true;
      }
      assert.ok(threw, `name ${JSON.stringify(bad)} refused`);
    }
  });
});

test('API: PUT creates then replaces, validated with lines; list, get, delete; bad and unknown names', async () => {
  await withTempDir('templates-api', async (root) => {
    const runsDir = join(root, 'runs');
    const server = await testServer({ runsDir, roots: [root] });
    try {
      const base = server.url;
      const origin = { origin: base };
      const created = await http(base, 'PUT', '/api/config/templates/deep-sky', { headers: origin, body: { yaml: 'stacking:\n  method: sigma\n' } });
      assert.is(created.status, 201, created.text);
      assert.is(created.json.name, 'deep-sky');
      const replaced = await http(base, 'PUT', '/api/config/templates/deep-sky', { headers: origin, body: { yaml: 'stacking:\n  method: winsor\n' } });
      assert.is(replaced.status, 200);
      const bad = await http(base, 'PUT', '/api/config/templates/broken', { headers: origin, body: { yaml: 'stacking:\n  method: fancy\n' } });
      assert.is(bad.status, 400);
      assert.is(bad.json.error.code, 'VALIDATION_ERROR');
      assert.is(bad.json.error.details.issues[0].line, 2);
      const list = await http(base, 'GET', '/api/config/templates');
      assert.equal(list.json.items.map((t: { name: string }) => t.name), ['deep-sky']);
      const one = await http(base, 'GET', '/api/config/templates/deep-sky');
      assert.is(one.json.yaml, 'stacking:\n  method: winsor\n');
      // Stored under the state dir (default: <runs_dir>/.skystack), one JSON file per template.
      const stateFiles = await readdir(join(runsDir, '.skystack', 'templates'));
      assert.equal(stateFiles, ['deep-sky.json']);
      assert.is(JSON.parse(await readFile(join(runsDir, '.skystack', 'templates', 'deep-sky.json'), 'utf8')).name, 'deep-sky');
      const badName = await http(base, 'PUT', '/api/config/templates/.hidden', { headers: origin, body: { yaml: '' } });
      assert.is(badName.status, 400);
      assert.is(badName.json.error.details.issues[0].path, 'name');
      const extra = await http(base, 'PUT', '/api/config/templates/x', { headers: origin, body: { yaml: '', other: 1 } });
      assert.is(extra.status, 400, 'unknown body keys refused');
      assert.is((await http(base, 'GET', '/api/config/templates/none')).status, 404);
      const crossSite = await http(base, 'PUT', '/api/config/templates/evil', { headers: { origin: 'http://evil.example' }, body: { yaml: '' } });
      assert.is(crossSite.status, 403);
      assert.is((await http(base, 'DELETE', '/api/config/templates/deep-sky', { headers: origin })).status, 204);
      assert.is((await http(base, 'DELETE', '/api/config/templates/deep-sky', { headers: origin })).status, 404);
      assert.equal((await http(base, 'GET', '/api/config/templates')).json.items, []);
    } finally {
      await server.close();
    }
  });
});

test.run();
