// IEEE 754 binary16 ("half") conversion for the image viewer's tiles (docs/viewer.md): the
// server stores and sends tile samples as half floats, the browser decodes them through one
// 65 536-entry table. DOM-free, compiled into both the server and the UI.
// Invariants: float → half rounds to nearest, ties to even; NaN stays NaN (0x7e00, sign kept),
// ±Inf and values beyond the half range (|v| ≥ 65520) become ±Inf; values below the smallest
// subnormal (2^-25) become ±0. half → float is exact (every half is a float32).

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** The half bits nearest to `v`. */
export function toHalf(v: number): number {
  f32[0] = v;
  return halfOfBits(u32[0]!, 0);
}

/** The half bits nearest to (float32 with bits `x`) / 2^k. */
function halfOfBits(x: number, k: number): number {
  const sign = (x >>> 16) & 0x8000;
  const e = (x >>> 23) & 0xff;
  const mant = x & 0x7fffff;
  if (e === 0xff) return mant !== 0 ? sign | 0x7e00 : sign | 0x7c00;
  if (e === 0) return sign; // float zero or subnormal: far below the half range
  const exp = e - 112 - k; // rebias 127 → 15, then divide by 2^k
  if (exp >= 31) return sign | 0x7c00;
  if (exp <= 0) {
    if (exp < -10) return sign;
    const m = mant | 0x800000;
    const shift = 14 - exp;
    let h = m >>> shift;
    const rem = m & ((1 << shift) - 1);
    const half = 1 << (shift - 1);
    if (rem > half || (rem === half && (h & 1) === 1)) h++;
    return sign | h;
  }
  let h = (exp << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa moves into the exponent, and from the largest finite half to Inf.
  if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++;
  return sign | h;
}

/** The value of half bits `h` (exact). */
export function fromHalf(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >>> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0) return sign * m * 2 ** -24;
  if (e === 31) return m === 0 ? sign * Infinity : NaN;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

let table: Float32Array | null = null;

/** fromHalf for every 16-bit pattern (built once, 256 KiB). */
export function halfTable(): Float32Array {
  if (!table) {
    table = new Float32Array(65536);
    for (let h = 0; h < 65536; h++) table[h] = fromHalf(h);
  }
  return table;
}

/**
 * Encodes `src[i] / scale` into `dst` (half bits), `n` samples. A power-of-two scale (the
 * viewer's) works on the float bits directly: dividing by 2^k only moves the exponent, so the
 * result is the same as toHalf(src[i] / scale), without a float round trip per sample.
 */
export function encodeHalf(src: Float32Array, dst: Uint16Array, scale = 1, n = src.length, srcAt = 0, dstAt = 0): void {
  const k = Math.log2(scale);
  if (Number.isInteger(k) && src.byteOffset % 4 === 0) {
    encodeHalfBits(new Uint32Array(src.buffer, src.byteOffset, src.length), dst, k, n, srcAt, dstAt);
    return;
  }
  const inv = 1 / scale;
  for (let i = 0; i < n; i++) dst[dstAt + i] = toHalf(src[srcAt + i]! * inv);
}

/** encodeHalf for a scale of 2^k, from the float bits (`bits`: a Uint32Array view of the floats). */
export function encodeHalfBits(bits: Uint32Array, dst: Uint16Array, k: number, n: number, srcAt = 0, dstAt = 0): void {
  for (let i = 0; i < n; i++) {
    const x = bits[srcAt + i]!;
    const exp = ((x >>> 23) & 0xff) - 112 - k;
    if (exp > 0 && exp < 31) {
      // Normal half (the common case), rounded to nearest even.
      let h = (exp << 10) | ((x >>> 13) & 0x3ff);
      const rem = x & 0x1fff;
      if (rem > 0x1000 || (rem === 0x1000 && (h & 1) === 1)) h++;
      dst[dstAt + i] = ((x >>> 16) & 0x8000) | h;
    } else dst[dstAt + i] = halfOfBits(x, k);
  }
}

/** NaN as half bits: the padding of partial tiles. */
export const HALF_NAN = 0x7e00;
