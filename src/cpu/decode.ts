// TypeScript reference for shaders/decode/*: raw big-endian FITS samples to f32 physical
// values, with the kernels' exact contract (f32 result of bzero + bscale * stored, BLANK → NaN).

export interface DecodeParams {
  /** Samples to decode. */
  count: number;
  bscale: number;
  bzero: number;
  /** Stored value that marks missing data. */
  blank?: number;
}

/** BITPIX 16: `bytes` holds `count` big-endian int16 samples. */
export function decodeInt16(bytes: Uint8Array, params: DecodeParams): Float32Array {
  const { count, bscale, bzero, blank } = params;
  const out = new Float32Array(count);
  const scale = Math.fround(bscale);
  const zero = Math.fround(bzero);
  for (let i = 0; i < count; i++) {
    const s = ((bytes[2 * i]! << 24) >> 16) | bytes[2 * i + 1]!;
    out[i] = s === blank ? NaN : zero + scale * s;
  }
  return out;
}
