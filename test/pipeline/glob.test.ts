// The frame glob (src/pipeline/stages/scan/scan.ts globMatcher) without RegExp: same answers as the
// anchored RegExp it replaced on random short patterns and names (seeded), and patterns that
// make a backtracking engine take exponential time answer at once.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { globMatcher } from '../../src/pipeline/stages/scan/scan.js';
import { seededRandom } from '../helpers/tmp.js';

/** The former matcher: one anchored, case-insensitive RegExp per alternative (fine on short inputs). */
function regexMatcher(pattern: string): (name: string) => boolean {
  const res = pattern
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p.length > 0)
    .map((p) => new RegExp(`^${[...p].map((ch) => (ch === '*' ? '[^/]*' : ch === '?' ? '[^/]' : ch.replace(/[.+^${}()|[\]\\]/g, '\\$&'))).join('')}$`, 'i'));
  return (name) => res.some((re) => re.test(name));
}

test('glob agrees with the anchored RegExp on 20000 random pattern/name pairs', () => {
  const rnd = seededRandom(16);
  const pick = (alphabet: string, max: number) => Array.from({ length: Math.floor(rnd() * (max + 1)) }, () => alphabet[Math.floor(rnd() * alphabet.length)]!).join('');
  let matches = 0;
  for (let k = 0; k < 20000; k++) {
    const pattern = rnd() < 0.2 ? `${pick('aAb*?.', 5)};${pick('ab*?', 4)}` : pick('aAb*?.+(', 7);
    const name = pick('aAbB.+(', 9);
    const want = regexMatcher(pattern)(name);
    assert.is(globMatcher(pattern)(name), want, `${JSON.stringify(pattern)} vs ${JSON.stringify(name)}`);
    if (want) matches++;
  }
  assert.ok(matches > 1000 && matches < 19000, `both outcomes well represented (${matches} matches)`);
});

test('glob: pathological patterns stay cheap; names with "/" never match; empty alternatives are ignored', () => {
  const name = `${'a'.repeat(5000)}c`;
  assert.is(globMatcher(`${'*a'.repeat(120)}*b`)(name), false);
  assert.is(globMatcher(`${'*a'.repeat(120)}*c`)(name), true);
  assert.is(globMatcher('*a*a*a*a*a*a*a*b')('a'.repeat(60)), false);
  assert.is(globMatcher('*')('sub/x.fits'), false);
  assert.is(globMatcher(';;*.FITS; ')('x.fits'), true);
  assert.is(globMatcher(';')('x.fits'), false);
  assert.is(globMatcher('*')(''), true);
  assert.is(globMatcher('?')(''), false);
});

test.run();
