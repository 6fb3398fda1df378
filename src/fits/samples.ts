// Conversion between FITS big-endian sample bytes and typed arrays, both ways.
// Native arrays hold the values exactly (unsigned conventions applied by flipping the sign
// bit, which is exact); float output applies BZERO/BSCALE and turns BLANK into NaN.

import type { ImageLayout, StorageKind } from './layout.js';
import { isUnsignedConvention } from './layout.js';

export type PixelArray =
  | Uint8Array
  | Int8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array
  | Float32Array
  | Float64Array;

function swapInPlace(bytes: Uint8Array, bytesPerSample: number): void {
  if (bytesPerSample === 1) return;
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (bytesPerSample === 2) buf.swap16();
  else if (bytesPerSample === 4) buf.swap32();
  else buf.swap64();
}

/**
 * XORs 0x8000 into `count` native-order 16-bit words: two per 32-bit word when `bytes` is
 * 4-byte aligned (fresh and scratch buffers are), several times faster than a per-sample loop
 * on camera frames.
 */
function flipSignBits16(bytes: Uint8Array, count: number): void {
  let i = 0;
  if ((bytes.byteOffset & 3) === 0) {
    const pairs = count >>> 1;
    const w = new Uint32Array(bytes.buffer, bytes.byteOffset, pairs);
    for (let k = 0; k < pairs; k++) w[k] = w[k]! ^ 0x80008000;
    i = pairs * 2;
  }
  if (i < count) {
    const a = new Uint16Array(bytes.buffer, bytes.byteOffset + 2 * i, count - i);
    for (let k = 0; k < a.length; k++) a[k] = a[k]! ^ 0x8000;
  }
}

/**
 * Turns big-endian sample bytes into a native typed array sharing `bytes`' memory.
 * `bytes` must start at an offset aligned to the sample size (a fresh Uint8Array is).
 */
export function decodeSamples(bytes: Uint8Array, storage: StorageKind, bytesPerSample: number): PixelArray {
  swapInPlace(bytes, bytesPerSample);
  const n = bytes.byteLength / bytesPerSample;
  const { buffer, byteOffset } = bytes;
  switch (storage) {
    case 'uint8':
      return bytes;
    case 'int8': {
      for (let i = 0; i < n; i++) bytes[i] = bytes[i]! ^ 0x80;
      return new Int8Array(buffer, byteOffset, n);
    }
    case 'int16':
      return new Int16Array(buffer, byteOffset, n);
    case 'uint16': {
      flipSignBits16(bytes, n);
      return new Uint16Array(buffer, byteOffset, n);
    }
    case 'int32':
      return new Int32Array(buffer, byteOffset, n);
    case 'uint32': {
      const a = new Uint32Array(buffer, byteOffset, n);
      for (let i = 0; i < n; i++) a[i] = (a[i]! ^ 0x80000000) >>> 0;
      return a;
    }
    case 'int64':
      return new BigInt64Array(buffer, byteOffset, n);
    case 'uint64': {
      const a = new BigUint64Array(buffer, byteOffset, n);
      const flip = 1n << 63n;
      for (let i = 0; i < n; i++) a[i] = a[i]! ^ flip;
      return a;
    }
    case 'float32':
      return new Float32Array(buffer, byteOffset, n);
    case 'float64':
      return new Float64Array(buffer, byteOffset, n);
  }
}

/**
 * True when the decoded native samples already are the float32 physical values (float32
 * storage, BSCALE 1, BZERO 0, no BLANK): readers can hand the decoded array out as it is instead
 * of copying it into a second one (calibrated frames are read several times per run).
 */
export function nativeIsPhysicalFloat32(layout: ImageLayout): boolean {
  return layout.storage === 'float32' && layout.bscale === 1 && layout.bzero === 0 && layout.blank === undefined;
}

/** Writes physical values of `native` into `out` starting at `outOffset`. */
export function toPhysical(native: PixelArray, layout: ImageLayout, out: Float32Array | Float64Array, outOffset = 0): void {
  const n = native.length;
  const unsignedConvention = isUnsignedConvention(layout);
  const scale = unsignedConvention ? 1 : layout.bscale;
  const zero = unsignedConvention ? 0 : layout.bzero;
  // BLANK compares with the *stored* value; with the unsigned conventions stored = native - BZERO.
  let blank: number | bigint | undefined = layout.blank;
  if (blank !== undefined && unsignedConvention) {
    // Exact integer arithmetic: 5 + 2^63 must not round to 2^63.
    const shifted = BigInt(blank) + BigInt(layout.bzero);
    blank = native instanceof BigUint64Array ? shifted : Number(shifted);
  }
  if (native instanceof BigInt64Array || native instanceof BigUint64Array) {
    const b = blank === undefined ? undefined : BigInt(blank);
    for (let i = 0; i < n; i++) {
      const v = native[i]!;
      out[outOffset + i] = v === b ? NaN : zero + scale * Number(v);
    }
    return;
  }
  const values = native as Exclude<PixelArray, BigInt64Array | BigUint64Array>;
  if (blank !== undefined) {
    const b = Number(blank);
    for (let i = 0; i < n; i++) {
      const v = values[i]!;
      out[outOffset + i] = v === b ? NaN : zero + scale * v;
    }
  } else if (scale === 1 && zero === 0) {
    out.set(values, outOffset);
  } else {
    for (let i = 0; i < n; i++) out[outOffset + i] = zero + scale * values[i]!;
  }
}

export interface StorageFor {
  bitpix: 8 | 16 | 32 | 64 | -32 | -64;
  bzero: number | bigint;
}

/** BITPIX and BZERO that store a typed array exactly (FITS unsigned conventions included). */
export function storageFor(data: PixelArray): StorageFor {
  if (data instanceof Uint8Array) return { bitpix: 8, bzero: 0 };
  if (data instanceof Int8Array) return { bitpix: 8, bzero: -128 };
  if (data instanceof Int16Array) return { bitpix: 16, bzero: 0 };
  if (data instanceof Uint16Array) return { bitpix: 16, bzero: 32768 };
  if (data instanceof Int32Array) return { bitpix: 32, bzero: 0 };
  if (data instanceof Uint32Array) return { bitpix: 32, bzero: 2147483648 };
  if (data instanceof BigInt64Array) return { bitpix: 64, bzero: 0 };
  if (data instanceof BigUint64Array) return { bitpix: 64, bzero: 9223372036854775808n };
  if (data instanceof Float32Array) return { bitpix: -32, bzero: 0 };
  return { bitpix: -64, bzero: 0 };
}

/** Encodes `count` samples of `data` from `start` into big-endian bytes in `into` (reused scratch). */
export function encodeSamples(data: PixelArray, start: number, count: number, into: Uint8Array): Uint8Array {
  const bytesPerSample = data.BYTES_PER_ELEMENT;
  const out = into.subarray(0, count * bytesPerSample);
  const src = new Uint8Array(data.buffer, data.byteOffset + start * bytesPerSample, count * bytesPerSample);
  out.set(src);
  // Unsigned conventions: stored = value - BZERO, which is a sign-bit flip of the value.
  if (data instanceof Int8Array) for (let i = 0; i < count; i++) out[i] = out[i]! ^ 0x80;
  else if (data instanceof Uint16Array) {
    const v = new Uint16Array(out.buffer, out.byteOffset, count);
    for (let i = 0; i < count; i++) v[i] = v[i]! ^ 0x8000;
  } else if (data instanceof Uint32Array) {
    const v = new Uint32Array(out.buffer, out.byteOffset, count);
    for (let i = 0; i < count; i++) v[i] = (v[i]! ^ 0x80000000) >>> 0;
  } else if (data instanceof BigUint64Array) {
    const v = new BigUint64Array(out.buffer, out.byteOffset, count);
    const flip = 1n << 63n;
    for (let i = 0; i < count; i++) v[i] = v[i]! ^ flip;
  }
  swapInPlace(out, bytesPerSample);
  return out;
}
