// Minimal PNG encoder for the report previews: 8-bit grey or RGB, one IDAT, each scanline with
// the filter (None, Sub, Up, Average, Paeth) of least sum of absolute signed differences (the
// PNG spec's recommended heuristic; noisy sky previews come out ~20% smaller than with one fixed
// filter, and the previews are embedded in the HTML), zlib deflate from node:zlib, CRC-32 hand-written (table-driven, the PNG spec's polynomial). No dependency and no
// ancillary chunks, so the output is byte-for-byte deterministic for a given image.

import { deflateSync } from 'node:zlib';

const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

/** CRC-32 (ISO 3309 / PNG) of the bytes. */
export function crc32(bytes: Uint8Array, crc = 0): number {
  let c = ~crc >>> 0;
  for (let i = 0; i < bytes.length; i++) c = CRC_TABLE[(c ^ bytes[i]!) & 0xff]! ^ (c >>> 8);
  return ~c >>> 0;
}

export interface PngImage {
  width: number;
  height: number;
  /** 1 = grey, 3 = RGB. */
  channels: 1 | 3;
  /** Interleaved 8-bit samples, row-major, width·height·channels bytes. */
  data: Uint8Array;
}

function paeth(a: number, b: number, c: number): number {
  const p = a + b - c;
  const pa = Math.abs(p - a);
  const pb = Math.abs(p - b);
  const pc = Math.abs(p - c);
  return pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
}

/** The filtered scanlines (filter byte + filtered row, per row) that the IDAT deflates. */
export function filterScanlines(img: PngImage): Uint8Array {
  const ch = img.channels;
  const stride = img.width * ch;
  const out = new Uint8Array((stride + 1) * img.height);
  const cand = Array.from({ length: 5 }, () => new Uint8Array(stride));
  for (let y = 0; y < img.height; y++) {
    const src = y * stride;
    const up = src - stride;
    let best = 0;
    let bestCost = Infinity;
    for (let t = 0; t < 5; t++) {
      const row = cand[t]!;
      let cost = 0;
      for (let i = 0; i < stride; i++) {
        const a = i >= ch ? img.data[src + i - ch]! : 0;
        const b = y > 0 ? img.data[up + i]! : 0;
        const c = i >= ch && y > 0 ? img.data[up + i - ch]! : 0;
        const pred = t === 0 ? 0 : t === 1 ? a : t === 2 ? b : t === 3 ? (a + b) >> 1 : paeth(a, b, c);
        const v = (img.data[src + i]! - pred) & 0xff;
        row[i] = v;
        cost += v < 128 ? v : 256 - v;
      }
      if (cost < bestCost) {
        bestCost = cost;
        best = t;
      }
    }
    const dst = y * (stride + 1);
    out[dst] = best;
    out.set(cand[best]!, dst + 1);
  }
  return out;
}

function chunk(type: string, body: Uint8Array): Buffer {
  const out = Buffer.alloc(12 + body.length);
  out.writeUInt32BE(body.length, 0);
  out.write(type, 4, 'latin1');
  out.set(body, 8);
  out.writeUInt32BE(crc32(out.subarray(4, 8 + body.length)), 8 + body.length);
  return out;
}

export function encodePng(img: PngImage): Buffer {
  if (!(img.width > 0 && img.height > 0 && Number.isInteger(img.width) && Number.isInteger(img.height))) throw new RangeError(`png: bad size ${img.width}×${img.height}`);
  if (img.data.length !== img.width * img.height * img.channels) throw new RangeError(`png: need ${img.width * img.height * img.channels} bytes, got ${img.data.length}`);
  const ihdr = Buffer.alloc(13);
  ihdr.writeUInt32BE(img.width, 0);
  ihdr.writeUInt32BE(img.height, 4);
  ihdr[8] = 8; // bit depth
  ihdr[9] = img.channels === 3 ? 2 : 0; // colour type: truecolour or greyscale
  ihdr[10] = 0; // deflate
  ihdr[11] = 0; // adaptive filtering
  ihdr[12] = 0; // no interlace
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk('IHDR', ihdr), chunk('IDAT', deflateSync(filterScanlines(img), { level: 9 })), chunk('IEND', new Uint8Array(0))]);
}
