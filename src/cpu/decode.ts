// TypeScript reference for shaders/decode/*: raw big-endian FITS samples to f32 physical
// values, with the kernels' exact contract (f32 result of bzero + bscale * stored, BLANK → NaN).
// BSCALE and BZERO are taken as f32, as the kernels receive them. int32: the physical value
// bzero + bscale * stored is formed in f64 and rounded to f32 once; the kernel does the same
// exactly when BSCALE = 1 and BZERO is a multiple of 65536 (0 and the unsigned convention 2^31
// included): values of magnitude ≥ 2^24 then carry the f32 rounding (half an ulp: up to 128 for
// uint32 data), because f32 cannot hold every uint32. float32: identity scaling copies the
// bits; NaN and ±Inf always pass through unchanged.

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

/** BITPIX 32: `bytes` holds `count` big-endian int32 samples. */
export function decodeInt32(bytes: Uint8Array, params: DecodeParams): Float32Array {
  const { count, blank } = params;
  const out = new Float32Array(count);
  const scale = Math.fround(params.bscale);
  const zero = Math.fround(params.bzero);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  for (let i = 0; i < count; i++) {
    const s = view.getInt32(4 * i, false);
    out[i] = s === blank ? NaN : zero + scale * s;
  }
  return out;
}

/** BITPIX -32: `bytes` holds `count` big-endian IEEE singles. */
export function decodeFloat32(bytes: Uint8Array, params: DecodeParams): Float32Array {
  const { count } = params;
  const out = new Float32Array(count);
  const bits = new Uint32Array(out.buffer);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const scale = Math.fround(params.bscale);
  const zero = Math.fround(params.bzero);
  const scaled = scale !== 1 || zero !== 0;
  for (let i = 0; i < count; i++) bits[i] = view.getUint32(4 * i, false);
  if (scaled) {
    for (let i = 0; i < count; i++) {
      const v = out[i]!;
      if (v - v === 0) out[i] = zero + scale * v;
    }
  }
  return out;
}
