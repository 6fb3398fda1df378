// Nesting depth before parsing (src/config/nesting.ts): exact for JSON (brackets inside strings
// and escaped quotes do not count), an upper bound for YAML that stays close on block and flow
// documents written by the yaml library, and deep texts of every YAML style are caught early.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { stringify } from 'yaml';
import { jsonDepth, MAX_NESTING, yamlDepth } from '../../src/config/nesting.js';
import { seededRandom } from '../helpers/tmp.js';

function depthOf(v: unknown): number {
  if (Array.isArray(v)) return 1 + Math.max(0, ...v.map(depthOf));
  if (typeof v === 'object' && v !== null) return 1 + Math.max(0, ...Object.values(v).map(depthOf));
  return 0;
}

function randomValue(rnd: () => number, depth: number): unknown {
  const r = rnd();
  if (depth <= 0 || r < 0.25) {
    const scalars = ['plain', 'with [brackets] and {braces}', 'quote " and \\ back', "it's", '# not a comment', 'a: b', 42, 1.5, true, null, '- dash', '|pipe', '>gt'];
    return scalars[Math.floor(rnd() * scalars.length)];
  }
  const n = 1 + Math.floor(rnd() * 3);
  if (r < 0.6) return Object.fromEntries(Array.from({ length: n }, (_, i) => [`k${i}${rnd() < 0.2 ? ' [x]' : ''}`, randomValue(rnd, depth - 1)]));
  return Array.from({ length: n }, () => randomValue(rnd, depth - 1));
}

test('JSON depth is exact on random documents (strings with brackets and escapes included)', () => {
  const rnd = seededRandom(5);
  for (let k = 0; k < 500; k++) {
    const v = randomValue(rnd, 1 + Math.floor(rnd() * 8));
    assert.is(jsonDepth(JSON.stringify(v)), depthOf(v), JSON.stringify(v));
    assert.is(jsonDepth(JSON.stringify(v, null, 2)), depthOf(v));
  }
  assert.is(jsonDepth('"[[[["'), 0);
  assert.is(jsonDepth('{"a\\"[": [1]}'), 2);
  assert.is(jsonDepth('['.repeat(100000), 64), 65, 'stops just past the limit');
});

test('YAML depth is an upper bound, close to the real depth, in block and flow styles', () => {
  const rnd = seededRandom(7);
  let worst = 0;
  for (let k = 0; k < 500; k++) {
    const v = { root: randomValue(rnd, 1 + Math.floor(rnd() * 7)) };
    const want = depthOf(v);
    for (const text of [stringify(v), stringify(v, { collectionStyle: 'flow' }), stringify(v, { indentSeq: false }), `# comment\n${stringify(v)}---\n`]) {
      const got = yamlDepth(text);
      assert.ok(got >= want, `${got} < ${want} for:\n${text}`);
      worst = Math.max(worst, got - want);
    }
  }
  assert.ok(worst <= 2, `over-estimate at most 2 levels (got ${worst})`);
  assert.is(yamlDepth('a: |\n  [[[[[[\n     {{{{\nb: 1\n'), 1, 'block scalar text is not structure');
  assert.is(yamlDepth("a: it's [x]\nb: light_[1].fits\n"), 1, 'brackets inside plain scalars are text');
});

test('deep YAML of every style is caught past the limit', () => {
  const limit = MAX_NESTING;
  const cases = [
    `a: ${'['.repeat(20000)}${']'.repeat(20000)}`,
    `${'- '.repeat(3000)}1`,
    Array.from({ length: 200 }, (_, i) => `${' '.repeat(i)}k:`).join('\n') + ' 1',
    `a: ${'{b: '.repeat(3000)}1${'}'.repeat(3000)}`,
    Array.from({ length: 200 }, (_, i) => `${' '.repeat(i)}- `).join('\n') + '1',
    `a:\n${'  ['.repeat(100)}\n${']'.repeat(100)}`,
  ];
  for (const c of cases) assert.ok(yamlDepth(c, limit) > limit, c.slice(0, 60));
  assert.ok(yamlDepth('stacking:\n  sigma_clip:\n    sigma_low: 2\n', limit) <= 3);
});

test.run();
