// The tile-grid picture shared by the report and the run monitor: which frames' L maps are shown
// (mostVariedFrames) and the tree the grid makes (rectangles in grid order, values as text).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { diverging, gridRects, heat, LOCAL_SHOWN, mostVariedFrames, tileGridSvg, tileScale } from '../../src/shared/tile-grid-svg.js';
import type { SvgNode } from '../../src/shared/frame-plot-svg.js';

test('mostVariedFrames: largest max/min of the finite L first, ties by index, frames without L left out, at most LOCAL_SHOWN', () => {
  const rows = [
    { index: 0, l: [1, 1, 1] },
    { index: 1, l: [0.5, 2, NaN] },
    { index: 2, l: [NaN, NaN, NaN] },
    { index: 3, l: [1, 3, 1] },
    { index: 4, l: [2, 0.5, 1] },
    { index: 5, l: [1, 1.5, 1] },
    { index: 6, l: [1, 1.2, 1] },
  ];
  const chosen = mostVariedFrames(rows).map((r) => r.index);
  assert.is(LOCAL_SHOWN, 4);
  assert.equal(chosen, [1, 4, 3, 5]);
  assert.equal(mostVariedFrames([{ index: 9, l: [NaN] }]), []);
});

test('tileScale: near-equal values share one colour band; a real spread keeps its range', () => {
  // N_eff 13.2 against 13.8 (4 %): the floor puts lo at 13.8 × 0.75 = 10.35, so the two tiles sit
  // in the top fifth of the scale, not at its two ends.
  const near = tileScale([13.2, 13.8, NaN, null]);
  assert.is(near.hi, 13.8);
  assert.ok(Math.abs(near.lo - 10.35) < 1e-12);
  const tiles = gridRects([0, 50], [0], 50, 50);
  const svg = tileGridSvg({ image: { width: 100, height: 50 }, tiles, types: null }, [13.2, 13.8], { width: 100, label: 'N', ...near, showValues: false, invert: true });
  const fills = svg.children.filter((c): c is SvgNode => typeof c !== 'string' && c.tag === 'rect').map((r) => r.attrs.fill);
  assert.is(fills[1], heat(0), 'the larger N_eff is the cool end');
  assert.is(fills[0], heat(1 - (13.2 - 10.35) / (13.8 - 10.35)));
  assert.is.not(fills[0], heat(1), 'the smaller one is not painted as the warm end');
  // A spread wider than the floor is drawn end to end; no finite value gives [0, 1].
  assert.equal(tileScale([2, 10, 6]), { lo: 2, hi: 10 });
  assert.equal(tileScale([NaN, null]), { lo: 0, hi: 1 });
  assert.equal(tileScale([1, 1.1], 0.5), { lo: 0.55, hi: 1.1 });
});

test('tileGridSvg: one rectangle per tile in grid order, values written when asked', () => {
  const tiles = gridRects([0, 50], [0, 40], 60, 50);
  assert.is(tiles.length, 4);
  const svg = tileGridSvg({ image: { width: 110, height: 90 }, tiles, types: null }, [1, 2, 3, NaN], { width: 220, label: 'L', lo: 1, hi: 3, showValues: true });
  const rects: SvgNode[] = [];
  const texts: string[] = [];
  const walk = (n: SvgNode | string) => {
    if (typeof n === 'string') return;
    if (n.tag === 'rect') rects.push(n);
    if (n.tag === 'text') texts.push(n.children.filter((c): c is string => typeof c === 'string').join(''));
    for (const c of n.children) walk(c);
  };
  walk(svg);
  assert.equal(rects.map((r) => r.attrs['data-tile']), [0, 1, 2, 3]);
  assert.equal(rects.map((r) => r.attrs.x), ['0.0', '100.0', '0.0', '100.0']);
  assert.is(rects[3]!.attrs.fill, '#777', 'no value: grey');
  assert.equal(texts, ['1.0', '2.0', '3.0', '–']);
});


test('diverging palette: neutral grey at the centre (a ratio of 1.00 is no difference), blue below, red above, missing still #777', () => {
  assert.is(diverging(0.5), 'rgb(185,185,185)');
  assert.is(diverging(0), 'rgb(40,90,220)');
  assert.is(diverging(1), 'rgb(215,45,35)');
  assert.is(diverging(NaN), diverging(0.5), 'a non-finite position is neutral');
  const tiles = gridRects([0, 50, 100], [0], 50, 50);
  const svg = tileGridSvg({ image: { width: 150, height: 50 }, tiles, types: null }, [0.9, 1, NaN], { width: 150, label: 'r', lo: 0.9, hi: 1.1, showValues: false, palette: 'diverging' });
  const fills = svg.children.filter((c): c is SvgNode => typeof c !== 'string' && c.tag === 'rect').map((r) => r.attrs.fill);
  assert.equal(fills, [diverging(0), 'rgb(185,185,185)', '#777']);
  assert.is.not(fills[1], heat(0.5), 'the default palette would paint 1.00 yellow');
});

test.run();
