// Minimal PNG encoder for the report previews: 8-bit grey or RGB, one IDAT, every scanline
// with filter 1 (Sub: smooth sky compresses far better than with filter 0), zlib deflate from
// node:zlib, CRC-32 hand-written (table-driven, the PNG spec's polynomial). No dependency and no
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

/** The filtered scanlines (filter byte 1 + Sub differences per row) that the IDAT deflates. */
export function filterScanlines(img: PngImage): Uint8Array {
  const stride = img.width * img.channels;
  const out = new Uint8Array((stride + 1) * img.height);
  for (let y = 0; y < img.height; y++) {
    const src = y * stride;
    const dst = y * (stride + 1);
    out[dst] = 1;
    for (let i = 0; i < stride; i++) {
      const left = i >= img.channels ? img.data[src + i - img.channels]! : 0;
      out[dst + 1 + i] = (img.data[src + i]! - left) & 0xff;
    }
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
