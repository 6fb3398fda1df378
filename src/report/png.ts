// PNG encoder for the report previews: 8-bit grey or RGB, encoded by sharp (libvips → libpng; the
// project's image encoder, see docs/viewer.md) with adaptive filtering — libpng picks each
// scanline's filter by the least sum of absolute differences, the PNG spec's recommended
// heuristic (noisy sky previews come out ~20 % smaller than with one fixed filter, and the
// previews are embedded in the HTML) — and deflate level 9. The samples are written as given
// (no colour profile, no gamma chunk), and the bytes are the same for the same image and sharp
// version.

import sharp from 'sharp';

export interface PngImage {
  width: number;
  height: number;
  /** 1 = grey, 3 = RGB. */
  channels: 1 | 3;
  /** Interleaved 8-bit samples, row-major, width·height·channels bytes. */
  data: Uint8Array;
}

export async function encodePng(img: PngImage): Promise<Buffer> {
  if (!(img.width > 0 && img.height > 0 && Number.isInteger(img.width) && Number.isInteger(img.height))) throw new RangeError(`png: bad size ${img.width}×${img.height}`);
  if (img.data.length !== img.width * img.height * img.channels) throw new RangeError(`png: need ${img.width * img.height * img.channels} bytes, got ${img.data.length}`);
  return sharp(img.data, { raw: { width: img.width, height: img.height, channels: img.channels } })
    .toColourspace(img.channels === 3 ? 'srgb' : 'b-w')
    .png({ compressionLevel: 9, adaptiveFiltering: true })
    .toBuffer();
}
