// The sky mesh's WebAssembly median (select-wasm.ts) against robust-stats' medianInPlaceF32, its
// reference: the same value and the same reordering of the array, on random arrays of every size
// the mesh uses, with and without ties (so the sky model cannot change: background.test.ts).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { medianInPlaceF32 } from '../../src/algorithms/robust-stats.js';
import { selectKernels, selectScratch } from '../../src/algorithms/select-wasm.js';
import { seededRandom } from '../helpers/tmp.js';

test('WebAssembly median equals medianInPlaceF32: value and order, sizes 1–400, ties', () => {
  const k = selectKernels();
  assert.ok(k, 'kernel compiles');
  if (!k) return;
  const [a, b] = selectScratch(k, 400);
  assert.is(b.byteOffset, 400 * 4, 'second scratch array follows the first');
  const random = seededRandom(5);
  for (let t = 0; t < 3000; t++) {
    const n = 1 + (t % 400);
    const ref = new Float32Array(n);
    // A third of the arrays hold ten distinct values only (ties everywhere).
    for (let i = 0; i < n; i++) ref[i] = t % 3 === 0 ? Math.floor(random() * 10) : (random() - 0.5) * 40;
    a.set(ref);
    const want = medianInPlaceF32(ref);
    const got = k.median(a.byteOffset, n);
    if (!Object.is(got, want)) assert.unreachable(`n ${n}: median ${got} vs ${want}`);
    for (let i = 0; i < n; i++) if (a[i] !== ref[i]) assert.unreachable(`n ${n}: order differs at ${i}`);
  }
  assert.ok(Number.isNaN(k.median(0, 0)), 'empty: NaN');
});

test.run();
