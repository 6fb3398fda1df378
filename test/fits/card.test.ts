import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { formatCard, parseCard, type FitsCard } from '../../src/fits/index.js';
import { FitsHeader } from '../../src/fits/header.js';

const card = (text: string) => text.padEnd(80);

test('parses value types: logical, integer, big integer, real with E and D exponents, string, undefined', () => {
  const cases: [string, unknown, boolean?][] = [
    ["SIMPLE  =                    T / conforms", true],
    ['BITPIX  =                  -32', -32],
    ['BIG     = 12345678901234567890', 12345678901234567890n],
    ['EXPTIME =                120.0 / [s]', 120, true],
    ['SMALL   =            1.5D-03', 0.0015, true],
    ['NEG     =              -2.5E+2', -250, true],
    ["OBJECT  = 'M 42    '           / target", 'M 42'],
    ["QUOTE   = 'O''Neil'", "O'Neil"],
    ["LEAD    = '  x'", '  x'],
    ['UNDEF   =                      / nothing here', null],
  ];
  for (const [text, value, real] of cases) {
    const c = parseCard(card(text)) as FitsCard;
    assert.is(c.value, value, text);
    assert.is(Boolean(c.real), Boolean(real), `real flag of ${text}`);
  }
  assert.is((parseCard(card("OBJECT  = 'M 42    '           / target")) as FitsCard).comment, 'target');
});

test('commentary, HIERARCH and END cards', () => {
  const h = parseCard(card('HISTORY   calibrated with 8 darks')) as FitsCard;
  assert.is(h.key, 'HISTORY');
  assert.is(h.value, undefined);
  assert.is(h.comment, '  calibrated with 8 darks');
  const hi = parseCard(card('HIERARCH ESO DET DIT = 1.5000 / integration time')) as FitsCard;
  assert.is(hi.key, 'ESO DET DIT');
  assert.is(hi.value, 1.5);
  assert.ok(hi.hierarch);
  assert.is(parseCard(card('END')), 'END');
  assert.ok('problem' in (parseCard(card('bad key = 1')) as object), 'lower-case keyword refused');
  assert.ok('problem' in (parseCard(card("S       = 'open")) as object), 'unterminated string refused');
  assert.ok('problem' in (parseCard(card('X       = 1') .replace('1', '\u00e9')) as object), 'non-ASCII refused');
});

test('formatting: reals keep a decimal point, strings pad to 8, long strings continue', () => {
  assert.is(formatCard({ key: 'EXPTIME', value: 120, real: true })[0], card('EXPTIME =                120.0'));
  assert.is(formatCard({ key: 'NAXIS', value: 2 })[0], card('NAXIS   =                    2'));
  assert.is(formatCard({ key: 'TINY', value: 1e-30 })[0], card(`TINY    = ${'1.0E-30'.padStart(20)}`));
  assert.is(formatCard({ key: 'OBJECT', value: 'M1' })[0], card("OBJECT  = 'M1      '"));
  const long = 'x'.repeat(150);
  const images = formatCard({ key: 'NOTE', value: long, comment: 'c' });
  assert.is(images.length, 3);
  assert.ok(images.every((i) => i.length === 80));
  const parsed = FitsHeader.parseImages([...images, card('END')]);
  assert.ok('header' in parsed);
  if ('header' in parsed) {
    assert.is(parsed.header.get('NOTE'), long);
    assert.is(parsed.header.card('NOTE')!.comment, 'c');
  }
});

test('quotes at a CONTINUE split point are never cut in half', () => {
  for (let n = 60; n < 75; n++) {
    const value = 'a'.repeat(n) + "''''" + 'b'.repeat(80);
    const images = formatCard({ key: 'Q', value });
    const parsed = FitsHeader.parseImages([...images, card('END')]);
    assert.ok('header' in parsed, `parses at split ${n}`);
    if ('header' in parsed) assert.is(parsed.header.get('Q'), value, `value intact at split ${n}`);
  }
});

test('header set keeps position and comment; delete removes all', () => {
  const h = new FitsHeader();
  h.set('A', 1, { comment: 'first' }).set('B', 'x').set('A', 2);
  assert.equal(h.cards.map((c) => [c.key, c.value, c.comment]), [['A', 2, 'first'], ['B', 'x', undefined]]);
  h.set('A', 3);
  h.cards.push({ key: 'A', value: 4 });
  assert.is(h.delete('A'), 2);
  assert.equal(h.cards.map((c) => c.key), ['B']);
  assert.is(h.getNumber('B'), undefined);
  h.set('N', ' 12.5 ');
  assert.is(h.getNumber('N'), 12.5, 'quoted numbers read as numbers');
});

test('a long string whose comment does not fit gets an extra CONTINUE card carrying the comment', () => {
  // (A value that fits one card keeps that card; its comment is cut to the card like any comment.)
  for (const n of [69, 70, 130, 133, 134, 137]) {
    const value = 'y'.repeat(n);
    const images = formatCard({ key: 'LONGSTR', value, comment: 'a comment of some length' });
    assert.ok(images.every((i) => i.length === 80));
    const parsed = FitsHeader.parseImages([...images, card('END')]);
    assert.ok('header' in parsed, `parses at ${n}`);
    if ('header' in parsed) {
      assert.is(parsed.header.get('LONGSTR'), value, `value at ${n}`);
      assert.is(parsed.header.card('LONGSTR')!.comment, 'a comment of some length', `comment at ${n}`);
    }
  }
});

test('text FITS cannot hold is refused when formatting, not written', () => {
  assert.throws(() => formatCard({ key: 'OBSERVER', value: 'Ren\u00e9e' }), /printable ASCII/);
  assert.throws(() => formatCard({ key: 'COMMENT', comment: 'na\u00efve' }), /printable ASCII/);
  assert.throws(() => formatCard({ key: 'X', value: NaN }), /cannot store NaN/);
  assert.throws(() => formatCard({ key: 'ESO DET LONG NAME', value: 'x'.repeat(70), hierarch: true }), /more than one 80-character card/);
});

test.run();
