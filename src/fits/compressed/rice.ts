// Rice decoding of one tile (ZCMPTYPE RICE_1, the FITS tiled-image convention's default and
// what fpack writes unless told otherwise).
// The stream: the first pixel as a plain big-endian integer of BYTEPIX bytes, then blocks of
// BLOCKSIZE pixels (the last one shorter). Each block starts with a code of FSBITS bits (3, 4,
// 5 for BYTEPIX 1, 2, 4) holding fs + 1:
//   0             every difference in the block is zero;
//   FSMAX + 1     (FSMAX = 6, 14, 25) each difference is stored raw in 8 × BYTEPIX bits;
//   otherwise     each difference is a unary prefix q (q zero bits and a one) and fs low bits,
//                 value (q << fs) | low.
// A difference d from the previous pixel is stored folded to non-negative: d ≥ 0 as 2d, d < 0 as
// −2d − 1; pixels wrap modulo 2^(8 × BYTEPIX) as the encoder's unsigned arithmetic did.
// Output: BYTEPIX 1 as unsigned bytes (0..255), 2 as signed 16-bit, 4 as signed 32-bit, which is
// how the tile's integers were stored before compression.
// Invariants: never reads past `input` (a short or corrupt stream is an error, never a hang or
// garbage beyond the tile), writes exactly `count` pixels.

export class RiceError extends Error {}

const FS_BITS = { 1: 3, 2: 4, 4: 5 } as const;
const FS_MAX = { 1: 6, 2: 14, 4: 25 } as const;

export type RiceBytePix = 1 | 2 | 4;

/** Decodes `count` pixels of a Rice stream into out[0 .. count). */
export function riceDecode(input: Uint8Array, out: Int32Array, count: number, blockSize: number, bytePix: RiceBytePix): void {
  if (count === 0) return;
  if (input.length < bytePix) throw new RiceError(`Rice tile of ${input.length} bytes is shorter than its first pixel`);
  const fsBits = FS_BITS[bytePix];
  const fsMax = FS_MAX[bytePix];
  const rawBits = 8 * bytePix;
  // Pixels are kept as unsigned values of rawBits bits; `wrap` brings a sum back into range.
  const shift = 32 - rawBits;
  let last = 0;
  for (let i = 0; i < bytePix; i++) last = (last << 8) | input[i]!;
  // Bit reader: `acc` holds `bits` unread bits in its low end (at most 32 + 7 are ever needed
  // at once, so reads of more than 24 bits are split).
  let pos = bytePix;
  let acc = 0;
  let bits = 0;
  const end = input.length;
  const need = (n: number): void => {
    while (bits < n) {
      if (pos >= end) throw new RiceError('Rice stream ends before its pixels do');
      acc = ((acc << 8) | input[pos++]!) >>> 0;
      bits += 8;
    }
  };
  const take = (n: number): number => {
    // n ≤ 24: acc then holds at most 31 bits, so the shifts stay inside 32-bit integers.
    need(n);
    bits -= n;
    const v = (acc >>> bits) & ((1 << n) - 1);
    acc &= (1 << bits) - 1;
    return v;
  };
  const takeWide = (n: number): number => (n <= 24 ? take(n) : ((take(n - 16) << 16) | take(16)) >>> 0);
  const emit = (i: number, folded: number): void => {
    // Unfold: even → folded / 2, odd → −(folded + 1) / 2, as an unsigned delta of rawBits bits.
    const delta = folded & 1 ? ~(folded >>> 1) : folded >>> 1;
    last = rawBits === 32 ? (last + delta) | 0 : ((last + delta) << shift) >>> shift;
    out[i] = last;
  };
  for (let i = 0; i < count; ) {
    const fs = take(fsBits) - 1;
    const stop = Math.min(count, i + blockSize);
    if (fs < 0) {
      for (; i < stop; i++) out[i] = last;
    } else if (fs === fsMax) {
      for (; i < stop; i++) emit(i, takeWide(rawBits));
    } else {
      for (; i < stop; i++) {
        // Unary prefix: count zero bits up to the terminating one.
        let q = 0;
        for (;;) {
          if (bits === 0) need(8);
          if (acc === 0) {
            q += bits;
            bits = 0;
            continue;
          }
          const lead = 31 - Math.clz32(acc); // index of the highest set bit, < bits
          q += bits - 1 - lead;
          bits = lead;
          acc &= (1 << bits) - 1;
          break;
        }
        const low = fs === 0 ? 0 : takeWide(fs);
        emit(i, ((q << fs) | low) >>> 0);
      }
    }
  }
  if (bytePix === 2) for (let i = 0; i < count; i++) out[i] = (out[i]! << 16) >> 16;
}
