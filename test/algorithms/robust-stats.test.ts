import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { MAD_TO_SIGMA, medianInPlace, medianInPlaceF32, planeStats, selectInPlace, selectInPlaceF32 } from '../../src/algorithms/robust-stats.js';
import { seededRandom } from '../helpers/tmp.js';

const sortedMedian = (values: number[]) => {
  const s = [...values].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[(n - 1) / 2]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
};

test('selection finds every order statistic of random, sorted, reversed and tied inputs', () => {
  const rnd = seededRandom(11);
  const inputs = [
    Array.from({ length: 101 }, () => rnd()),
    Array.from({ length: 64 }, (_, i) => i),
    Array.from({ length: 64 }, (_, i) => 64 - i),
    Array.from({ length: 50 }, () => Math.floor(rnd() * 3)),
  ];
  for (const values of inputs) {
    const sorted = [...values].sort((a, b) => a - b);
    for (let k = 0; k < values.length; k += 7) {
      assert.is(selectInPlace(Float64Array.from(values), k), sorted[k], `k=${k}`);
    }
  }
});

test('exact median for odd and even counts equals the sorted-array median', () => {
  const rnd = seededRandom(3);
  for (const n of [1, 2, 3, 10, 999, 1000]) {
    const values = Array.from({ length: n }, () => Math.round(rnd() * 1000) / 7);
    assert.is(medianInPlace(Float64Array.from(values)), sortedMedian(values), `n=${n}`);
  }
  assert.ok(Number.isNaN(medianInPlace(new Float64Array(0))));
});

test('plane statistics ignore NaN/Inf and match a direct computation', () => {
  const rnd = seededRandom(5);
  const data = new Float32Array(5001);
  for (let i = 0; i < data.length; i++) data[i] = Math.fround(1000 + 50 * (rnd() + rnd() + rnd() - 1.5));
  data[10] = NaN;
  data[20] = Infinity;
  data[30] = -Infinity;
  const finite = Array.from(data).filter(Number.isFinite);
  const s = planeStats(data);
  assert.is(s.count, 4998);
  assert.is(s.min, Math.min(...finite));
  assert.is(s.max, Math.max(...finite));
  assert.ok(Math.abs(s.mean - finite.reduce((a, b) => a + b, 0) / finite.length) < 1e-9);
  const median = sortedMedian(finite);
  assert.is(s.median, median);
  const mad = sortedMedian(finite.map((v) => Math.abs(v - median)));
  assert.ok(Math.abs(s.sigma - MAD_TO_SIGMA * mad) < 1e-3, `sigma ${s.sigma} vs ${MAD_TO_SIGMA * mad}`);
  // An outlier population moves the mean but barely the robust sigma.
  for (let i = 0; i < 100; i++) data[i * 50] = 60000;
  const polluted = planeStats(data);
  assert.ok(polluted.mean > s.mean + 1000);
  assert.ok(Math.abs(polluted.sigma - s.sigma) / s.sigma < 0.05);
});

test('statistics of a sub-range and of an all-NaN plane', () => {
  const data = Float32Array.from([9, 9, 1, 2, 3, 4, 9]);
  const s = planeStats(data, 2, 4);
  assert.equal([s.count, s.min, s.max, s.mean, s.median], [4, 1, 4, 2.5, 2.5]);
  const empty = planeStats(Float32Array.from([NaN, NaN]));
  assert.is(empty.count, 0);
  assert.ok(Number.isNaN(empty.median));
});

test('the Float32-only selection and median equal the general ones (ties, ±0, odd and even lengths)', () => {
  const rnd = seededRandom(31);
  for (const n of [1, 2, 7, 64, 501, 1000]) {
    const base = Float32Array.from({ length: n }, (_, i) => (i % 5 === 0 ? 0 : i % 7 === 0 ? -0 : Math.round(rnd() * 20) - 10 + (i % 3 === 0 ? 0.5 : 0)));
    assert.ok(Object.is(medianInPlaceF32(base.slice()), medianInPlace(base.slice())), `median n=${n}`);
    for (const k of [0, n >> 1, n - 1]) {
      const a = base.slice();
      const b = base.slice();
      assert.ok(Object.is(selectInPlaceF32(a, k), selectInPlace(b, k)), `select n=${n} k=${k}`);
      assert.equal(Array.from(a).map(String), Array.from(b).map(String), `same partition n=${n} k=${k}`);
    }
  }
});

test.run();
