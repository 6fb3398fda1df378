// Reading the primary image of a FITS file: header alone (scans), whole image, or a range of
// rows (band streaming) without touching the rest of the file.
// Every failure is a FitsError naming the file; reads are bounded by the file size, so a
// hostile or truncated file can neither hang the reader nor make it allocate beyond the file.

import { open, stat, type FileHandle } from 'node:fs/promises';
import { BLOCK_LENGTH, CARD_LENGTH, CARDS_PER_BLOCK } from './card.js';
import { FitsError, isFitsError } from './errors.js';
import { FitsHeader } from './header.js';
import { imageLayout, paddedDataBytes, type ImageLayout } from './layout.js';
import { decodeSamples, nativeIsPhysicalFloat32, toPhysical, type PixelArray } from './samples.js';

export type FloatType = 'float32' | 'float64';

export interface FitsImage<T extends Float32Array | Float64Array = Float32Array> {
  file: string;
  header: FitsHeader;
  layout: ImageLayout;
  width: number;
  height: number;
  planes: number;
  /** Planar: plane p, row y, column x at (p * height + y) * width + x. */
  data: T;
}

export interface RowBand<T extends Float32Array | Float64Array = Float32Array> {
  y0: number;
  rows: number;
  width: number;
  /** Planes in this band, in the order requested. */
  planes: number[];
  /** Planar: band plane i, band row r at (i * rows + r) * width + x. */
  data: T;
}

function osError(e: unknown, file: string): FitsError {
  const code = (e as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT') return new FitsError('FITS_NOT_FOUND', file, 'no such file');
  if (code === 'EISDIR') return new FitsError('FITS_NOT_A_FILE', file, 'is a directory');
  return new FitsError('FITS_UNREADABLE', file, `${code ?? 'I/O error'}: ${(e as Error)?.message ?? String(e)}`);
}

async function readExactly(fh: FileHandle, into: Uint8Array, position: number): Promise<number> {
  let done = 0;
  while (done < into.byteLength) {
    const { bytesRead } = await fh.read(into, done, into.byteLength - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done;
}

const ASCII = new TextDecoder('latin1');

/** Reads header blocks starting at `position` up to the END card. */
async function readHeaderAt(fh: FileHandle, position: number, fileSize: number, file: string): Promise<{ header: FitsHeader; bytes: number }> {
  const images: string[] = [];
  let offset = position;
  const block = new Uint8Array(BLOCK_LENGTH);
  for (;;) {
    if (offset >= fileSize) throw new FitsError('FITS_MISSING_END', file, `header has no END card (file ends after ${images.length} cards)`);
    const got = await readExactly(fh, block, offset);
    if (got < BLOCK_LENGTH) {
      throw new FitsError('FITS_TRUNCATED_HEADER', file, `file ends ${got} bytes into a 2880-byte header block`);
    }
    const text = ASCII.decode(block);
    let ended = false;
    for (let i = 0; i < CARDS_PER_BLOCK; i++) {
      const image = text.slice(i * CARD_LENGTH, (i + 1) * CARD_LENGTH);
      images.push(image);
      if (image.startsWith('END') && image.slice(3).trim() === '') {
        ended = true;
        break;
      }
    }
    offset += BLOCK_LENGTH;
    if (ended) break;
  }
  const parsed = FitsHeader.parseImages(images);
  if ('problem' in parsed) throw new FitsError('FITS_BAD_CARD', file, `header card ${parsed.cardIndex + 1}: ${parsed.problem}`);
  return { header: parsed.header, bytes: offset - position };
}

const GZIP_MAGIC = [0x1f, 0x8b];

async function checkPrimarySignature(fh: FileHandle, fileSize: number, file: string): Promise<void> {
  if (fileSize === 0) throw new FitsError('FITS_EMPTY', file, 'file is empty');
  const head = new Uint8Array(Math.min(CARD_LENGTH, fileSize));
  await readExactly(fh, head, 0);
  if (head[0] === GZIP_MAGIC[0] && head[1] === GZIP_MAGIC[1]) {
    throw new FitsError('FITS_GZIP_UNSUPPORTED', file, 'gzip-compressed FITS is not supported yet; decompress it first (gunzip)');
  }
  const text = ASCII.decode(head);
  if (text.startsWith('XTENSION')) throw new FitsError('FITS_NOT_FITS', file, 'starts with an XTENSION card, not a primary header');
  if (!/^SIMPLE  = /.test(text)) throw new FitsError('FITS_NOT_FITS', file, 'does not start with "SIMPLE  =" (not a FITS file)');
  if (text.length < CARD_LENGTH) throw new FitsError('FITS_TRUNCATED_HEADER', file, `file has only ${fileSize} bytes`);
  const simple = text.slice(10, 30).trim().split('/')[0]!.trim();
  if (simple === 'F') throw new FitsError('FITS_NONSTANDARD', file, 'SIMPLE = F: the file does not conform to the FITS standard');
  if (simple !== 'T') throw new FitsError('FITS_NOT_FITS', file, `SIMPLE has value "${simple}", expected T`);
}

/** Explains a primary HDU without data by looking at the first extension. */
async function explainMissingImage(fh: FileHandle, header: FitsHeader, headerBytes: number, fileSize: number, file: string): Promise<never> {
  const next = headerBytes + paddedDataBytes(header);
  if (next < fileSize) {
    let ext: FitsHeader | undefined;
    try {
      ext = (await readHeaderAt(fh, next, fileSize, file)).header;
    } catch (e) {
      if (!isFitsError(e)) throw e;
    }
    if (ext?.getBoolean('ZIMAGE') === true) {
      throw new FitsError('FITS_COMPRESSED_UNSUPPORTED', file, 'tile-compressed image (fpack/.fz) is not supported yet; decompress it with funpack first');
    }
    const kind = ext?.getString('XTENSION')?.trim();
    if (kind !== undefined) {
      throw new FitsError('FITS_NO_PRIMARY_IMAGE', file, `primary HDU holds no image; the first extension is ${kind} (only primary images are read)`);
    }
  }
  throw new FitsError('FITS_NO_PRIMARY_IMAGE', file, 'primary HDU holds no image data (NAXIS = 0 or a zero-length axis)');
}

/** An open FITS file whose primary header and image layout have been validated. */
export class FitsReader {
  private constructor(
    readonly file: string,
    private readonly fh: FileHandle,
    readonly header: FitsHeader,
    readonly layout: ImageLayout,
  ) {}

  static async open(file: string): Promise<FitsReader> {
    // Check the kind before opening: opening a named pipe would block until a writer appears.
    try {
      const kind = await stat(file);
      if (kind.isDirectory()) throw new FitsError('FITS_NOT_A_FILE', file, 'is a directory');
      if (!kind.isFile()) throw new FitsError('FITS_NOT_A_FILE', file, 'is not a regular file');
    } catch (e) {
      throw isFitsError(e) ? e : osError(e, file);
    }
    let fh: FileHandle;
    try {
      fh = await open(file, 'r');
    } catch (e) {
      throw osError(e, file);
    }
    try {
      const stat = await fh.stat();
      if (stat.isDirectory()) throw new FitsError('FITS_NOT_A_FILE', file, 'is a directory');
      if (!stat.isFile()) throw new FitsError('FITS_NOT_A_FILE', file, 'is not a regular file');
      await checkPrimarySignature(fh, stat.size, file);
      const { header, bytes } = await readHeaderAt(fh, 0, stat.size, file);
      const layout = imageLayout(header, bytes, stat.size, file);
      if (layout === 'no-data') await explainMissingImage(fh, header, bytes, stat.size, file);
      return new FitsReader(file, fh, header, layout as ImageLayout);
    } catch (e) {
      await fh.close().catch(() => undefined);
      throw isFitsError(e) ? e : osError(e, file);
    }
  }

  get width(): number {
    return this.layout.width;
  }
  get height(): number {
    return this.layout.height;
  }
  get planes(): number {
    return this.layout.planes;
  }

  private async readSamples(byteOffset: number, samples: number): Promise<PixelArray> {
    const { storage, bytesPerSample } = this.layout;
    const bytes = new Uint8Array(samples * bytesPerSample);
    let got: number;
    try {
      got = await readExactly(this.fh, bytes, this.layout.dataOffset + byteOffset);
    } catch (e) {
      throw osError(e, this.file);
    }
    if (got < bytes.byteLength) {
      throw new FitsError('FITS_TRUNCATED_DATA', this.file, `file ended while reading pixel data (got ${got} of ${bytes.byteLength} bytes)`);
    }
    return decodeSamples(bytes, storage, bytesPerSample);
  }

  /** The stored values exactly, in their native type (unsigned conventions applied). */
  async readNative(): Promise<PixelArray> {
    return this.readSamples(0, this.layout.dataBytes / this.layout.bytesPerSample);
  }

  /** The whole image as physical values (BZERO/BSCALE applied, BLANK → NaN). */
  async readImage(dtype: 'float64'): Promise<FitsImage<Float64Array>>;
  async readImage(dtype?: 'float32'): Promise<FitsImage<Float32Array>>;
  async readImage(dtype: FloatType = 'float32'): Promise<FitsImage<Float32Array | Float64Array>> {
    const { width, height, planes } = this.layout;
    if (planes === 1 && dtype === 'float32' && nativeIsPhysicalFloat32(this.layout)) {
      const data = (await this.readSamples(0, width * height)) as Float32Array;
      return { file: this.file, header: this.header, layout: this.layout, width, height, planes, data };
    }
    const out = dtype === 'float64' ? new Float64Array(width * height * planes) : new Float32Array(width * height * planes);
    // One plane at a time keeps the temporary sample buffer at one plane's size.
    for (let p = 0; p < planes; p++) {
      const native = await this.readSamples(p * width * height * this.layout.bytesPerSample, width * height);
      toPhysical(native, this.layout, out, p * width * height);
    }
    return { file: this.file, header: this.header, layout: this.layout, width, height, planes, data: out };
  }

  /** Rows [y0, y0 + rows) of the given planes (default all), as physical values. */
  async readRows(y0: number, rows: number, options?: { planes?: number[]; dtype?: 'float32' }): Promise<RowBand<Float32Array>>;
  async readRows(y0: number, rows: number, options: { planes?: number[]; dtype: 'float64' }): Promise<RowBand<Float64Array>>;
  async readRows(y0: number, rows: number, options: { planes?: number[]; dtype?: FloatType } = {}): Promise<RowBand<Float32Array | Float64Array>> {
    const { width, height, planes: planeCount, bytesPerSample } = this.layout;
    const planes = options.planes ?? Array.from({ length: planeCount }, (_, i) => i);
    if (!Number.isInteger(y0) || !Number.isInteger(rows) || y0 < 0 || rows < 0 || y0 + rows > height) {
      throw new FitsError('FITS_ROW_RANGE', this.file, `rows ${y0}..${y0 + rows - 1} lie outside 0..${height - 1}`);
    }
    for (const p of planes) {
      if (!Number.isInteger(p) || p < 0 || p >= planeCount) throw new FitsError('FITS_ROW_RANGE', this.file, `plane ${p} lies outside 0..${planeCount - 1}`);
    }
    const n = rows * width;
    if (planes.length === 1 && options.dtype !== 'float64' && nativeIsPhysicalFloat32(this.layout)) {
      // The decoded samples are the values: no second frame-sized array and copy.
      const data = (await this.readSamples((planes[0]! * height + y0) * width * bytesPerSample, n)) as Float32Array;
      return { y0, rows, width, planes, data };
    }
    const out = options.dtype === 'float64' ? new Float64Array(n * planes.length) : new Float32Array(n * planes.length);
    for (let i = 0; i < planes.length; i++) {
      const offset = (planes[i]! * height + y0) * width * bytesPerSample;
      const native = await this.readSamples(offset, n);
      toPhysical(native, this.layout, out, i * n);
    }
    return { y0, rows, width, planes, data: out };
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => undefined);
  }
}

async function withReader<T>(file: string, f: (r: FitsReader) => Promise<T>): Promise<T> {
  const reader = await FitsReader.open(file);
  try {
    return await f(reader);
  } finally {
    await reader.close();
  }
}

/** Header and layout only; reads no pixel data (for scans). */
export function readFitsHeader(file: string): Promise<{ header: FitsHeader; layout: ImageLayout }> {
  return withReader(file, async (r) => ({ header: r.header, layout: r.layout }));
}

export function readFitsImage(file: string, dtype: 'float64'): Promise<FitsImage<Float64Array>>;
export function readFitsImage(file: string, dtype?: 'float32'): Promise<FitsImage<Float32Array>>;
export function readFitsImage(file: string, dtype: FloatType = 'float32'): Promise<FitsImage<Float32Array | Float64Array>> {
  return withReader(file, (r): Promise<FitsImage<Float32Array | Float64Array>> => (dtype === 'float64' ? r.readImage('float64') : r.readImage('float32')));
}

export function readFitsNative(file: string): Promise<{ header: FitsHeader; layout: ImageLayout; data: PixelArray }> {
  return withReader(file, async (r) => ({ header: r.header, layout: r.layout, data: await r.readNative() }));
}
