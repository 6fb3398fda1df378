// The WebAssembly SIMD kernels of star detection's significance image against the TypeScript
// reference (stars.ts, `useSignificanceWasm(false)`): D, its segment maxima and the saturation
// scan bit for bit on planes with stars, a sky gradient, NaN and ±Infinity pixels, a clipped
// plateau, odd and tiny widths; and whole detections (mono and mosaic) identical, also with a
// lent scratch buffer for D.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { renderStar } from '../../fixtures/generator/psf.js';
import { estimateBackground } from '../../src/algorithms/background.js';
import { detectStars, significanceImage, useSignificanceWasm } from '../../src/algorithms/stars.js';
import { significanceKernels } from '../../src/algorithms/significance-wasm.js';
import { seededRandom } from '../helpers/tmp.js';

function gaussian(random: () => number): number {
  let u = 0;
  while (u === 0) u = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** Sky with a gradient and noise, `stars` Moffat stars, optionally clipped at `clip`. */
function plane(seed: number, width: number, height: number, stars: number, clip = Infinity): Float32Array {
  const random = seededRandom(seed);
  const data = new Float32Array(width * height);
  for (let k = 0; k < stars; k++) {
    const f = 2e3 * Math.exp(5 * random());
    renderStar(data, width, height, random() * width, random() * height, [f, f, f, f], { fwhm: 2 + 2 * random(), beta: 3, trail: [0, 0] });
  }
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const k = y * width + x;
      data[k] = Math.min(clip, data[k]! + 800 + 0.3 * x - 0.2 * y + 10 * gaussian(random));
    }
  }
  return data;
}

function bothWays<T>(f: () => T): [T, T] {
  const was = useSignificanceWasm(false);
  try {
    const ts = f();
    useSignificanceWasm(true);
    return [ts, f()];
  } finally {
    useSignificanceWasm(was);
  }
}

const bits = (a: Float32Array): Uint32Array => new Uint32Array(a.buffer, a.byteOffset, a.length);

function sameArrays(a: Float32Array, b: Float32Array, what: string): void {
  assert.is(a.length, b.length, `${what}: length`);
  const ua = bits(a);
  const ub = bits(b);
  for (let i = 0; i < ua.length; i++) {
    if (ua[i] !== ub[i]) assert.unreachable(`${what}: value ${i} differs (${a[i]} vs ${b[i]})`);
  }
}

test('WebAssembly SIMD is available (Node ≥ 20): the kernels compile', () => {
  assert.ok(significanceKernels(), 'kernels');
});

test('significance image: WebAssembly kernels equal the TypeScript reference bit for bit', () => {
  const cases: { name: string; w: number; h: number; data: Float32Array }[] = [
    { name: '301×203 stars and gradient', w: 301, h: 203, data: plane(1, 301, 203, 60) },
    { name: '256×128 clipped plateau', w: 256, h: 128, data: plane(2, 256, 128, 40, 30000) },
    { name: '3×40 tiny', w: 3, h: 40, data: plane(3, 3, 40, 2) },
    { name: '4×4 tiny', w: 4, h: 4, data: plane(4, 4, 4, 0) },
    { name: '5×9 odd', w: 5, h: 9, data: plane(5, 5, 9, 1) },
  ];
  const special = plane(6, 199, 151, 30);
  special[10 * 199 + 7] = NaN;
  special[10 * 199 + 198] = NaN;
  special[60 * 199] = Infinity;
  special[80 * 199 + 50] = -Infinity;
  for (let x = 20; x < 40; x++) special[120 * 199 + x] = NaN;
  cases.push({ name: '199×151 NaN and ±Infinity', w: 199, h: 151, data: special });
  for (const c of cases) {
    const bg = estimateBackground(c.data, c.w, c.h, { tileSize: Math.min(64, Math.max(4, c.w >> 1)) });
    for (const fwhm of [2, 1.5]) {
      const [ts, wasm] = bothWays(() => significanceImage(c.data, c.w, c.h, bg, fwhm));
      sameArrays(ts.D, wasm.D, `${c.name}, FWHM ${fwhm}: D`);
      sameArrays(ts.blocks.max, wasm.blocks.max, `${c.name}, FWHM ${fwhm}: segment maxima`);
      assert.is(wasm.saturation, ts.saturation, `${c.name}: saturation level`);
    }
  }
});

test('detectStars: identical detections with and without the WebAssembly kernels (mono and mosaic)', () => {
  for (const cfa of [false, true]) {
    const data = plane(11, 400, 300, 150, cfa ? Infinity : 40000);
    const [ts, wasm] = bothWays(() => detectStars(data, 400, 300, { cfa }));
    assert.ok(ts.ok && wasm.ok, 'detections succeed');
    if (!ts.ok || !wasm.ok) return;
    assert.ok(ts.stars.length > 50, `stars found (${ts.stars.length})`);
    assert.equal({ ...wasm, timings: null }, { ...ts, timings: null }, cfa ? 'mosaic' : 'mono');
    // A lent scratch buffer (DetectOptions.scratch, holding garbage) changes nothing.
    const scratch = new Float32Array(400 * 300).fill(12345);
    const lent = detectStars(data, 400, 300, { cfa, scratch });
    assert.equal({ ...lent, timings: null }, { ...wasm, timings: null }, 'with scratch');
  }
});

test.run();
