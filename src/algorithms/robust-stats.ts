// Exact robust statistics of a sample set: min, max, mean, median and MAD-based sigma,
// ignoring NaN and ±Infinity. The median is exact (selection, not a histogram), which makes
// this the reference that histogram-based GPU statistics are compared against.
// Invariant: the input array is never modified; one scratch copy of the finite values is made.

export interface PlaneStats {
  /** Finite samples counted. */
  count: number;
  min: number;
  max: number;
  mean: number;
  /** Exact median; the mean of the two middle values for an even count. */
  median: number;
  /** Robust σ = 1.4826 · median(|x − median|), the Gaussian-consistent MAD. */
  sigma: number;
}

/** Scale that turns a MAD into a Gaussian σ estimate. */
export const MAD_TO_SIGMA = 1.482602218505602;

/** Rearranges `a[lo..hi]` so that `a[k]` holds the k-th smallest value (Hoare selection). */
export function selectInPlace(a: Float32Array | Float64Array, k: number, lo = 0, hi = a.length - 1): number {
  while (hi > lo) {
    // Median of three as pivot keeps sorted and reversed inputs linear.
    const mid = (lo + hi) >>> 1;
    let x = a[lo]!;
    let y = a[mid]!;
    let z = a[hi]!;
    if (x > y) [x, y] = [y, x];
    if (y > z) [y, z] = [z, y];
    if (x > y) [x, y] = [y, x];
    const pivot = y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return a[k]!;
}

/** Exact median of `a` (reorders `a`); NaN for an empty array. */
export function medianInPlace(a: Float32Array | Float64Array): number {
  const n = a.length;
  if (n === 0) return NaN;
  const upper = selectInPlace(a, n >>> 1);
  if (n % 2 === 1) return upper;
  // After selecting the upper middle, the lower middle is the maximum of the left part.
  let lower = -Infinity;
  for (let i = 0; i < n >>> 1; i++) if (a[i]! > lower) lower = a[i]!;
  return (lower + upper) / 2;
}

/** Exact median of the finite values of `v` (NaN when there are none); `v` is not modified. */
export function finiteMedian(v: readonly number[]): number {
  const a = Float64Array.from(v.filter(Number.isFinite));
  return medianInPlace(a);
}

/**
 * `selectInPlace` for Float32Array only, the same algorithm (identical results). The shared
 * function is called with both array types across the program, which makes its element access
 * polymorphic in V8 at about twice the cost; hot per-frame callers (the background mesh of star
 * detection: ~3000 selections per frame) use this monomorphic copy.
 */
export function selectInPlaceF32(a: Float32Array, k: number, lo = 0, hi = a.length - 1): number {
  while (hi > lo) {
    const mid = (lo + hi) >>> 1;
    let x = a[lo]!;
    let y = a[mid]!;
    let z = a[hi]!;
    if (x > y) [x, y] = [y, x];
    if (y > z) [y, z] = [z, y];
    if (x > y) [x, y] = [y, x];
    const pivot = y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return a[k]!;
}

/** `medianInPlace` for Float32Array only (see `selectInPlaceF32`). */
export function medianInPlaceF32(a: Float32Array): number {
  const n = a.length;
  if (n === 0) return NaN;
  const upper = selectInPlaceF32(a, n >>> 1);
  if (n % 2 === 1) return upper;
  let lower = -Infinity;
  for (let i = 0; i < n >>> 1; i++) if (a[i]! > lower) lower = a[i]!;
  return (lower + upper) / 2;
}

/** Statistics of `data[offset .. offset + length)`, finite values only. */
export function planeStats(data: ArrayLike<number>, offset = 0, length = data.length - offset): PlaneStats {
  // Float32 input keeps a float32 scratch (exact copies at half the memory of a double copy).
  const scratch = data instanceof Float32Array ? new Float32Array(length) : new Float64Array(length);
  let count = 0;
  let min = Infinity;
  let max = -Infinity;
  let sum = 0;
  for (let i = 0; i < length; i++) {
    const v = data[offset + i]!;
    if (!Number.isFinite(v)) continue;
    scratch[count++] = v;
    if (v < min) min = v;
    if (v > max) max = v;
    sum += v;
  }
  if (count === 0) return { count: 0, min: NaN, max: NaN, mean: NaN, median: NaN, sigma: NaN };
  const values = scratch.subarray(0, count);
  // Kahan-free mean is fine here: sums of ≤ 2^31 float32 values in a double lose < 1e-7 relative.
  const mean = sum / count;
  const median = medianInPlace(values);
  for (let i = 0; i < count; i++) values[i] = Math.abs(values[i]! - median);
  const mad = medianInPlace(values);
  return { count, min, max, mean, median, sigma: MAD_TO_SIGMA * mad };
}
