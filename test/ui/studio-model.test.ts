// Unit tests of the run studio's DOM-free modules, loaded from the built dist/ui: the YAML key
// context at a cursor (parents from indentation, the partial key, the keys already written),
// the schema's child keys at a path (against the real tiled JSON Schema), inserting a chosen key,
// setting a key path in YAML text (the result read back with the yaml package).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parse } from 'yaml';
import { tiledJsonSchema } from '../../src/config/tiled.js';

const uiDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'ui');
const load = async <T>(name: string): Promise<T> => (await import(pathToFileURL(join(uiDir, name)).href)) as T;
const built = existsSync(join(uiDir, 'yaml-complete.js'));
if (!built) console.log(`  [ui] studio model tests SKIPPED: the UI is not built (${uiDir})`);
const uiTest = (built ? test : test.skip) as typeof test;

interface Ctx {
  path: string[];
  prefix: string;
  from: number;
  to: number;
  indent: number;
  siblings: string[];
}
interface Key {
  key: string;
  description: string;
  type: string;
  default: unknown;
  block: boolean;
}
type Complete = {
  yamlKeyContext(text: string, offset: number): Ctx | null;
  schemaChildren(schema: unknown, path: string[], prefix?: string, exclude?: string[]): Key[];
  applyCompletion(text: string, ctx: Ctx, choice: Key): { text: string; cursor: number };
};
type Edit = { yamlSetPath(text: string, path: string[], value: unknown): string; yamlScalar(v: unknown): string; yamlDropBlock(text: string, key: string): string };

/** The text with the cursor marker `|` removed, and the cursor's offset. */
const at = (marked: string): [string, number] => [marked.replace('|', ''), marked.indexOf('|')];

uiTest('key context: parents from indentation, the partial key, siblings of the same block only', async () => {
  const { yamlKeyContext } = await load<Complete>('yaml-complete.js');
  const [t1, o1] = at('stacking:\n  method: sigma\n  sigma_clip:\n    sigma_low: 3\n    ma|\ntile:\n  min_size: 64\n');
  const c1 = yamlKeyContext(t1, o1)!;
  assert.equal(c1.path, ['stacking', 'sigma_clip']);
  assert.is(c1.prefix, 'ma');
  assert.is(c1.indent, 4);
  assert.equal(c1.siblings, ['sigma_low']);
  assert.is(t1.slice(c1.from, c1.to), 'ma');
  const [t2, o2] = at('stacking:\n  method: sigma\n  |\n# note\ntile:\n  min_size: 64\n');
  const c2 = yamlKeyContext(t2, o2)!;
  assert.equal([c2.path, c2.prefix, c2.siblings], [['stacking'], '', ['method']]);
  const [t3, o3] = at('stacking:\n  method: sigma\nt|\n');
  const c3 = yamlKeyContext(t3, o3)!;
  assert.equal([c3.path, c3.prefix, c3.siblings], [[], 't', ['stacking']]);
  // A word continuing after the cursor is replaced as a whole.
  const [t4, o4] = at('stac|king:\n');
  const c4 = yamlKeyContext(t4, o4)!;
  assert.equal([t4.slice(c4.from, c4.to), c4.prefix], ['stacking', 'stac']);
  // Where no key can be typed: after a colon (a value), under a scalar key, in a list item.
  assert.is(yamlKeyContext(...at('stacking:\n  method: si|\n')), null);
  assert.is(yamlKeyContext(...at('stacking: 3\n  m|\n')), null);
  assert.is(yamlKeyContext(...at('list:\n  - a|\n')), null);
  assert.is(yamlKeyContext(...at('  orphan|\n')), null);
});

uiTest('schema children: the tiled schema\'s keys at a path, with description, default and type, filtered', async () => {
  const { schemaChildren } = await load<Complete>('yaml-complete.js');
  const schema = tiledJsonSchema();
  const top = schemaChildren(schema, []).map((k) => k.key);
  assert.ok(top.includes('stacking') && top.includes('tile') && top.includes('pcc'), top.join());
  const sc = schemaChildren(schema, ['stacking', 'sigma_clip'], '', ['sigma_low']);
  assert.equal(sc.map((k) => k.key), ['sigma_high', 'max_iters', 'min_fraction']);
  assert.equal([sc[0]!.default, sc[0]!.type, sc[0]!.block], [3, 'number', false]);
  const wm = schemaChildren(schema, ['stacking'], 'weight');
  assert.is(wm.find((k) => k.key === 'weight_mode')!.type, '"local" | "global" | "uniform"');
  assert.match(wm.find((k) => k.key === 'weight_mode')!.description, /per-tile weight field/);
  assert.is(schemaChildren(schema, ['stacking'], '').find((k) => k.key === 'sigma_clip')!.block, true);
  assert.equal(schemaChildren(schema, ['no_such_block']), []);
  assert.equal(schemaChildren(schema, ['stacking', 'method']), [], 'a scalar has no children');
});

uiTest('completion: a scalar key gets ": ", a block key opens an indented line; an existing colon is kept', async () => {
  const { yamlKeyContext, applyCompletion, schemaChildren } = await load<Complete>('yaml-complete.js');
  const schema = tiledJsonSchema();
  const [t1, o1] = at('stacking:\n  wei|\n');
  const c1 = yamlKeyContext(t1, o1)!;
  const r1 = applyCompletion(t1, c1, schemaChildren(schema, c1.path, c1.prefix)[0]!);
  assert.is(r1.text, 'stacking:\n  weight_mode: \n');
  assert.is(r1.cursor, 'stacking:\n  weight_mode: '.length);
  const [t2, o2] = at('stacking:\n  sig|\n');
  const c2 = yamlKeyContext(t2, o2)!;
  const r2 = applyCompletion(t2, c2, schemaChildren(schema, c2.path, c2.prefix).find((k) => k.key === 'sigma_clip')!);
  assert.is(r2.text, 'stacking:\n  sigma_clip:\n    \n');
  // Completing a key that already has its colon renames it and keeps the value.
  const [t3, o3] = at('stac|: {}\n');
  const c3 = yamlKeyContext(t3, o3)!;
  assert.is(applyCompletion(t3, c3, schemaChildren(schema, c3.path, c3.prefix)[0]!).text, 'stacking: {}\n');
});

uiTest('yamlSetPath: replaces a value in place (comment kept), adds missing keys and parents, reads back', async () => {
  const { yamlSetPath, yamlScalar, yamlDropBlock } = await load<Edit>('yaml-edit.js');
  const base = '# my run\nstacking:\n  method: sigma # was winsor\n  sigma_clip:\n    sigma_low: 3\ntile:\n  min_size: 64\n';
  const a = yamlSetPath(base, ['stacking', 'method'], 'median');
  assert.is(a, '# my run\nstacking:\n  method: median # was winsor\n  sigma_clip:\n    sigma_low: 3\ntile:\n  min_size: 64\n');
  const b = yamlSetPath(a, ['stacking', 'sigma_clip', 'sigma_high'], 2.5);
  assert.equal(parse(b).stacking.sigma_clip, { sigma_low: 3, sigma_high: 2.5 });
  const c = yamlSetPath(b, ['runtime_limits', 'parallel_workers'], 3);
  assert.equal(parse(c), { stacking: { method: 'median', sigma_clip: { sigma_low: 3, sigma_high: 2.5 } }, tile: { min_size: 64 }, runtime_limits: { parallel_workers: 3 } });
  assert.equal(parse(yamlSetPath('', ['a', 'b'], 'x y')), { a: { b: 'x y' } });
  assert.equal(parse(yamlSetPath('a: 1\n', ['a', 'b'], true)), { a: { b: true } }, 'a scalar turned into a block');
  assert.equal(parse(yamlSetPath('a:\n  b: 1\n  c: 2\nd: 3\n', ['a'], 5)), { a: 5, d: 3 }, 'a block replaced by a scalar');
  assert.is(yamlScalar('yes'), '"yes"');
  assert.is(yamlDropBlock('a: 1\n_runtime:\n  device:\n    kind: cpu\n\n  version: 1\nb:\n  c: 2\n', '_runtime'), 'a: 1\nb:\n  c: 2\n');
  assert.is(yamlScalar('sigma'), 'sigma');
});

test.run();
