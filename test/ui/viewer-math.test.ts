// Unit tests of the image viewer's DOM-free maths (src/shared/half-float.ts, pyramid-math.ts,
// stretch-math.ts), compiled into the Node build as the server uses them: half-float rounding
// (every half value, ties, overflow, subnormals, the power-of-two fast path), pyramid geometry and
// row order, and the screen stretch (MTF against src/cpu/stretch.ts, the auto levels against the
// report preview's auto-stretch, linked vs per channel, asinh, hms, the lookup tables).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mtf as cpuMtf } from '../../src/cpu/stretch.js';
import { autoStf } from '../../src/report/preview.js';
import { encodeHalf, fromHalf, halfTable, toHalf } from '../../src/shared/half-float.js';
import { displayFlipped, fitsRow, fitZoom, levelForZoom, pyramidLevels, tileBytes, tileOffset, visibleTiles } from '../../src/shared/pyramid-math.js';
import { asinhCurve, betaFor, buildLut, defaultLevels, displayValue, levelsProblem, midFor, mtf, type ChannelStats } from '../../src/shared/stretch-math.js';
import { seededRandom } from '../helpers/tmp.js';

// ---- half floats

test('half: every finite half value survives float → half → float exactly; NaN stays NaN', () => {
  for (let h = 0; h < 65536; h++) {
    const v = fromHalf(h);
    if (Number.isNaN(v)) {
      assert.ok((h & 0x7c00) === 0x7c00 && (h & 0x3ff) !== 0, `h=${h}`);
      assert.ok(Number.isNaN(fromHalf(toHalf(v))));
      continue;
    }
    // -0 and +0 keep their sign bits.
    assert.is(toHalf(v), h, `h=${h.toString(16)} v=${v}`);
  }
});

test('half: known values, rounding to nearest with ties to even, overflow and underflow', () => {
  assert.is(toHalf(1), 0x3c00);
  assert.is(toHalf(-2), 0xc000);
  assert.is(toHalf(65504), 0x7bff);
  assert.is(fromHalf(0x0001), 2 ** -24);
  // 1 + 2^-11 lies halfway between 1 and 1 + 2^-10: ties to even (1).
  assert.is(toHalf(1 + 2 ** -11), 0x3c00);
  // 1 + 3·2^-11 lies halfway between 1 + 2^-10 (odd) and 1 + 2^-9 (even): up.
  assert.is(toHalf(1 + 3 * 2 ** -11), 0x3c02);
  assert.is(toHalf(1 + 2 ** -11 + 2 ** -20), 0x3c01);
  assert.is(toHalf(65520), 0x7c00); // rounds past the largest finite half
  assert.is(toHalf(65519), 0x7bff);
  assert.is(toHalf(Infinity), 0x7c00);
  assert.is(toHalf(-Infinity), 0xfc00);
  assert.is(toHalf(2 ** -26), 0); // below half the smallest subnormal
  assert.is(toHalf(3 * 2 ** -26), 0x0001); // 0.75 of the smallest subnormal rounds up
  assert.is(toHalf(1.5 * 2 ** -24), 0x0002); // tie between subnormals 1 and 2: even
  const t = halfTable();
  assert.is(t[0x3555], fromHalf(0x3555));
});

test('half: encodeHalf with a power-of-two scale equals toHalf(v / scale) for random and edge values', () => {
  const rnd = seededRandom(21);
  const edge = [0, -0, 1, 65504, 65520, 1e-8, 6.1e-5, 5.96e-8, NaN, Infinity, -Infinity, 1e30, -1e30, 3.4e38];
  const vals = Float32Array.from([...edge, ...Array.from({ length: 20000 }, () => (rnd() - 0.3) * 10 ** (rnd() * 16 - 8))]);
  for (const scale of [1, 2, 2 ** 17, 2 ** -5]) {
    const out = new Uint16Array(vals.length);
    encodeHalf(vals, out, scale);
    for (let i = 0; i < vals.length; i++) assert.is(out[i], toHalf(vals[i]! / scale), `scale ${scale}, v ${vals[i]}`);
  }
  // A non-power-of-two scale takes the general path.
  const out = new Uint16Array(vals.length);
  encodeHalf(vals, out, 3);
  for (let i = 0; i < 100; i++) assert.is(out[i], toHalf(vals[i]! * (1 / 3)));
});

// ---- pyramid geometry

test('pyramid: levels of a 6000×4000 image, a one-tile image and thin images', () => {
  const l = pyramidLevels(6000, 4000);
  assert.equal(
    l.map((g) => [g.width, g.height, g.cols, g.rows, g.scale]),
    [
      [6000, 4000, 24, 16, 1],
      [3000, 2000, 12, 8, 2],
      [1500, 1000, 6, 4, 4],
      [750, 500, 3, 2, 8],
      [375, 250, 2, 1, 16],
      [188, 125, 1, 1, 32],
    ],
  );
  assert.is(pyramidLevels(256, 256).length, 1);
  assert.equal(pyramidLevels(257, 1).map((g) => [g.width, g.height]), [[257, 1], [129, 1]]);
  assert.equal(pyramidLevels(1, 1000).map((g) => g.height), [1000, 500, 250]);
  assert.throws(() => pyramidLevels(0, 5), /bad size/);
});

test('pyramid: level for a zoom, fit zoom, visible tiles, tile offsets', () => {
  assert.is(levelForZoom(1, 6), 0);
  assert.is(levelForZoom(4, 6), 0);
  assert.is(levelForZoom(0.5, 6), 1);
  assert.is(levelForZoom(0.49, 6), 1);
  assert.is(levelForZoom(0.26, 6), 1);
  assert.is(levelForZoom(0.25, 6), 2);
  assert.is(levelForZoom(1 / 100, 6), 5);
  assert.is(fitZoom(6000, 4000, 1200, 1000), 0.2);
  const g = pyramidLevels(6000, 4000)[1]!; // 3000×2000, tiles of 512 image px
  assert.equal(visibleTiles(g, 0, 0, 512, 512), { x0: 0, y0: 0, x1: 1, y1: 1 });
  assert.equal(visibleTiles(g, 511, 511, 2, 2), { x0: 0, y0: 0, x1: 2, y1: 2 });
  assert.equal(visibleTiles(g, -1000, -1000, 100000, 100000), { x0: 0, y0: 0, x1: 12, y1: 8 });
  assert.equal(visibleTiles(g, 7000, 5000, 100, 100), { x0: 12, y0: 8, x1: 12, y1: 8 });
  assert.is(tileBytes(3), 3 * 256 * 256 * 2);
  assert.is(tileOffset(g, 2, 1, 3), (1 * 12 + 2) * tileBytes(3));
});

test('row order: FITS rows bottom-up unless ROWORDER says TOP-DOWN; fitsRow is its own inverse', () => {
  assert.ok(displayFlipped(undefined));
  assert.ok(displayFlipped(null));
  assert.ok(displayFlipped('BOTTOM-UP'));
  assert.not.ok(displayFlipped('TOP-DOWN'));
  assert.not.ok(displayFlipped(' top-down '));
  assert.is(fitsRow(0, 10, true), 9);
  assert.is(fitsRow(9, 10, true), 0);
  assert.is(fitsRow(3, 10, false), 3);
  for (let y = 0; y < 10; y++) assert.is(fitsRow(fitsRow(y, 10, true), 10, true), y);
});

// ---- stretch

test('mtf: the same curve as src/cpu/stretch.ts, fixed points 0, m → ½, 1; midFor inverts it', () => {
  for (const m of [0.001, 0.05, 0.25, 0.5, 0.8]) {
    for (let x = 0; x <= 1; x += 1 / 64) assert.ok(Math.abs(mtf(m, x) - cpuMtf(m, x)) < 1e-15, `m ${m} x ${x}`);
    assert.is(mtf(m, 0), 0);
    assert.is(mtf(m, 1), 1);
    assert.ok(Math.abs(mtf(m, m) - 0.5) < 1e-12);
  }
  for (const x of [0.001, 0.02, 0.3, 0.7]) for (const y of [0.1, 0.25, 0.6]) assert.ok(Math.abs(mtf(midFor(x, y), x) - y) < 1e-9, `x ${x} y ${y}`);
  assert.is(midFor(0), 0.5);
  assert.is(midFor(1.2), 0.5);
});

function statsOf(v: Float32Array): ChannelStats {
  const s = Float64Array.from(v).sort();
  const med = (a: Float64Array) => (a.length % 2 ? a[(a.length - 1) / 2]! : (a[a.length / 2 - 1]! + a[a.length / 2]!) / 2);
  const m = med(s);
  return { count: v.length, min: s[0]!, max: s[s.length - 1]!, median: m, mad: med(s.map((x) => Math.abs(x - m)).sort()) };
}

function channel(seed: number, sky: number, noise: number, n = 4001): Float32Array {
  const rnd = seededRandom(seed);
  const v = new Float32Array(n);
  for (let i = 0; i < n; i++) v[i] = sky + noise * (rnd() + rnd() + rnd() - 1.5) + (rnd() < 0.01 ? 400 * rnd() : 0);
  return v;
}

test('auto levels per channel: the report preview auto-stretch (same black, white, midtones); median lands on 0.25', () => {
  for (const [seed, sky, noise] of [[1, 100, 5], [2, 0.02, 0.001], [3, 1000, 40]] as const) {
    const v = channel(seed, sky, noise);
    const st = statsOf(v);
    const [mine] = defaultLevels('auto', [st], false);
    const ref = autoStf(v)!;
    assert.ok(Math.abs(mine!.black - ref.c0) <= 1e-9 * Math.max(1, Math.abs(ref.c0)), `black ${mine!.black} vs ${ref.c0}`);
    assert.is(mine!.white, ref.c1);
    assert.ok(Math.abs(mine!.mid - ref.m) < 1e-9, `mid ${mine!.mid} vs ${ref.m}`);
    assert.ok(Math.abs(displayValue(st.median, mine!, 'auto') - 0.25) < 1e-9);
  }
});

test('auto levels linked: one set for all channels from the mean median and shadows and the top max; unlinked differ', () => {
  const st = [statsOf(channel(4, 100, 5)), statsOf(channel(5, 130, 6)), statsOf(channel(6, 80, 4))];
  const linked = defaultLevels('auto', st, true);
  assert.equal(linked[0], linked[1]);
  assert.equal(linked[1], linked[2]);
  const shadows = st.reduce((a, s) => a + Math.max(s.min, s.median - 2.8 * 1.4826 * s.mad), 0) / 3;
  assert.ok(Math.abs(linked[0]!.black - shadows) < 1e-9);
  assert.is(linked[0]!.white, Math.max(...st.map((s) => s.max)));
  const meanMedian = st.reduce((a, s) => a + s.median, 0) / 3;
  assert.ok(Math.abs(displayValue(meanMedian, linked[0]!, 'auto') - 0.25) < 1e-9);
  const unlinked = defaultLevels('auto', st, false);
  assert.not.equal(unlinked[0], unlinked[1]);
  // Each unlinked channel puts its own median on 0.25: the colour cast of the sky is removed.
  st.forEach((s, i) => assert.ok(Math.abs(displayValue(s.median, unlinked[i]!, 'auto') - 0.25) < 1e-9));
});

test('linear, asinh and hms levels; displayValue clips, maps NaN to black and is monotone', () => {
  const st = [statsOf(channel(7, 50, 3))];
  const [lin] = defaultLevels('linear', st, false);
  assert.equal([lin!.black, lin!.white, lin!.mid], [st[0]!.min, st[0]!.max, 0.5]);
  assert.is(displayValue(st[0]!.min, lin!, 'linear'), 0);
  assert.is(displayValue((st[0]!.min + st[0]!.max) / 2, lin!, 'linear'), 0.5);
  const [as] = defaultLevels('asinh', st, false);
  assert.ok(as!.beta > 1);
  assert.ok(Math.abs(displayValue(st[0]!.median, as!, 'asinh') - 0.25) < 1e-6);
  const [hms] = defaultLevels('hms', st, false);
  assert.equal(hms, { black: 0, mid: 0.5, white: 1, beta: 0 });
  assert.is(displayValue(0.37, hms!, 'hms'), 0.37);
  assert.is(displayValue(1.3, hms!, 'hms'), 1);
  assert.is(displayValue(-0.1, hms!, 'hms'), 0);
  assert.is(displayValue(NaN, hms!, 'hms'), 0);
  for (const [mode, c] of [['auto', defaultLevels('auto', st, false)[0]!], ['asinh', as!]] as const) {
    let prev = -1;
    for (let v = st[0]!.min - 10; v < st[0]!.max + 10; v += 0.37) {
      const d = displayValue(v, c, mode);
      assert.ok(d >= prev && d >= 0 && d <= 1);
      prev = d;
    }
  }
  assert.ok(Math.abs(asinhCurve(betaFor(0.01), 0.01) - 0.25) < 1e-9);
  assert.ok(betaFor(0.5) < 1e-5); // a median above the target needs no asinh: (almost) linear
  assert.is(levelsProblem({ black: 1, mid: 0.5, white: 1, beta: 0 }), 'the white point must be above the black point');
  assert.is(levelsProblem({ black: 0, mid: 1, white: 1, beta: 0 }), 'the midtones balance must lie in (0, 1)');
  assert.is(levelsProblem({ black: 0, mid: 0.2, white: NaN, beta: 0 }), 'levels must be finite numbers');
  assert.is(levelsProblem({ black: 0, mid: 0.2, white: 1, beta: 0 }), null);
});

test('lookup table: lut[half bits] is the display byte of the half value times the tile scale', () => {
  const st = [statsOf(channel(8, 2000, 30))];
  const [c] = defaultLevels('auto', st, false);
  const scale = 2;
  const lut = buildLut(c!, 'auto', scale, halfTable());
  for (const v of [0, 1900, 2000, 2050, 2400, 6000, 65535, NaN]) {
    const h = toHalf(v / scale);
    assert.is(lut[h], Math.round(255 * displayValue(fromHalf(h) * scale, c!, 'auto')), `v ${v}`);
  }
  assert.is(lut[toHalf(NaN)], 0);
  assert.is(lut[toHalf(Infinity)], 255);
});

test.run();
