// Restoring floating-point tiles that the writer quantized to integers (ZQUANTIZ):
//   NO_DITHER             value = i × ZSCALE + ZZERO
//   SUBTRACTIVE_DITHER_1  value = (i − r + 0.5) × ZSCALE + ZZERO, r from the convention's
//                         fixed random sequence, so the writer's dither is taken off exactly
//   SUBTRACTIVE_DITHER_2  as _1, except that the reserved integer −2147483646 is an exact 0.0
// i = ZBLANK (the tile's null value) is a NaN pixel.
// The sequence is the convention's: 10000 values of the Park–Miller generator (a = 16807,
// m = 2^31 − 1, seed 1) divided by m and rounded to float32. A tile starts at index
// (tile number − 1 + ZDITHER0 − 1) mod 10000 of the sequence, reads its starting offset as
// floor(value × 500) and walks on from there, moving the start one place on (and re-reading
// the offset) whenever it runs off the end. The arithmetic is done in double and the result
// rounded to the image's float type, as fpack/funpack do, so values match theirs exactly.

const N_RANDOM = 10000;
/** Quantized value SUBTRACTIVE_DITHER_2 uses for an exact zero. */
export const ZERO_VALUE = -2147483646;

let sequence: Float32Array | null = null;

/** The convention's random sequence (computed once). */
export function ditherSequence(): Float32Array {
  if (sequence) return sequence;
  const a = 16807;
  const m = 2147483647;
  const values = new Float32Array(N_RANDOM);
  let seed = 1;
  for (let i = 0; i < N_RANDOM; i++) {
    const t = a * seed; // < 2^46: exact in a double
    seed = t - m * Math.trunc(t / m);
    values[i] = seed / m;
  }
  // The convention's own check: the 10000th seed is 1043618065.
  if (seed !== 1043618065) throw new Error('dither sequence self-check failed');
  sequence = values;
  return values;
}

export type QuantizeMethod = 'NO_DITHER' | 'SUBTRACTIVE_DITHER_1' | 'SUBTRACTIVE_DITHER_2';

export interface Dequantize {
  method: QuantizeMethod;
  scale: number;
  zero: number;
  /** Integer marking a null pixel, or undefined when the tile has none. */
  blank: number | undefined;
  /** 1-based tile number and ZDITHER0: where the tile's dither starts. */
  tile: number;
  dither0: number;
}

/** Writes the restored floats of `ints[0 .. count)` into out[at ..]. */
export function dequantize(ints: Int32Array, count: number, q: Dequantize, out: Float32Array | Float64Array, at: number): void {
  const { scale, zero, blank } = q;
  const b = blank ?? NaN; // NaN never equals an integer: no nulls
  if (q.method === 'NO_DITHER') {
    for (let i = 0; i < count; i++) {
      const v = ints[i]!;
      out[at + i] = v === b ? NaN : v * scale + zero;
    }
    return;
  }
  const r = ditherSequence();
  const zeroCode = q.method === 'SUBTRACTIVE_DITHER_2' ? ZERO_VALUE : NaN;
  let start = (((q.tile - 1 + q.dither0 - 1) % N_RANDOM) + N_RANDOM) % N_RANDOM;
  let next = Math.floor(r[start]! * 500);
  for (let i = 0; i < count; i++) {
    const v = ints[i]!;
    if (v === b) out[at + i] = NaN;
    else if (v === zeroCode) out[at + i] = 0;
    else out[at + i] = (v - r[next]! + 0.5) * scale + zero;
    if (++next === N_RANDOM) {
      if (++start === N_RANDOM) start = 0;
      next = Math.floor(r[start]! * 500);
    }
  }
}
