// Reading the image of a FITS file: header alone (scans), whole image, or a range of rows (band
// streaming) without touching the rest of the file. The image may be the primary HDU, the first
// image extension, or a tile-compressed image (hdu.ts), in a plain or gzip-compressed file
// (source.ts, compressed/gzip-source.ts); callers see the same reader for all of them.
// Every failure is a FitsError naming the file; reads are bounded by the file size (or by what
// the decompressed stream actually holds), so a hostile or truncated file can neither hang the
// reader nor make it allocate beyond what its header describes and its data backs.
// A plain file can be opened again for pixel reads from the layout an earlier reader of it
// recorded (reopenPlain: no header read), provided its size, modification time and inode are unchanged;
// such a reader has no header and refuses to give one (FITS_HEADER_NOT_READ).

import { fstatSync } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import { GzipSource } from './compressed/gzip-source.js';
import type { TiledImage } from './compressed/tiled.js';
import { FitsError, isFitsError } from './errors.js';
import type { FitsHeader } from './header.js';
import { locateImage } from './hdu.js';
import type { ImageLayout, StorageKind } from './layout.js';
import { decodeSamples, nativeIsPhysicalFloat32, toPhysical, type PixelArray } from './samples.js';
import { FileSource, osError, readExactly, type ByteSource } from './source.js';

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

export interface RowScratch {
  /** Reusable bytes; replaced by a larger buffer when a read needs more. */
  bytes: Uint8Array;
}

/** `bytes` bytes of `scratch` (grown when short), or of a fresh buffer without scratch. */
function scratchBytes(scratch: RowScratch | undefined, bytes: number): Uint8Array {
  if (!scratch) return new Uint8Array(bytes);
  if (scratch.bytes.byteLength < bytes) scratch.bytes = new Uint8Array(bytes);
  return scratch.bytes.subarray(0, bytes);
}

/** A typed array of the storage kind over `bytes` (aligned: scratch buffers start at offset 0). */
function nativeView(storage: StorageKind, bytes: Uint8Array, n: number): PixelArray {
  const { buffer, byteOffset } = bytes;
  switch (storage) {
    case 'uint8':
      return new Uint8Array(buffer, byteOffset, n);
    case 'int8':
      return new Int8Array(buffer, byteOffset, n);
    case 'int16':
      return new Int16Array(buffer, byteOffset, n);
    case 'uint16':
      return new Uint16Array(buffer, byteOffset, n);
    case 'int32':
      return new Int32Array(buffer, byteOffset, n);
    case 'uint32':
      return new Uint32Array(buffer, byteOffset, n);
    case 'int64':
      return new BigInt64Array(buffer, byteOffset, n);
    case 'uint64':
      return new BigUint64Array(buffer, byteOffset, n);
    case 'float32':
      return new Float32Array(buffer, byteOffset, n);
    case 'float64':
      return new Float64Array(buffer, byteOffset, n);
  }
}

const GZIP_MAGIC = [0x1f, 0x8b];

/**
 * An open FITS file whose image (primary HDU, first image extension or tile-compressed image;
 * the file itself or gzip-compressed) has been located and its layout validated.
 * Every pixel read of the project goes through readNativeRows / readRowsInto (or the whole-image
 * helpers built on them), so plain, gzip and tiled files are read the same way everywhere.
 */
/**
 * What re-opening a plain (uncompressed, untiled) file needs without reading its header again:
 * its image layout and the size, modification time and inode it had (FitsReader.reopenPlain).
 */
export interface PlainReopen {
  layout: ImageLayout;
  size: number;
  mtimeMs: number;
  /** The file's inode: a file replaced by rename (as writeFits writes) has another one even when size and time match. */
  ino: number;
}

export class FitsReader {
  private constructor(
    readonly file: string,
    private readonly src: ByteSource,
    private readonly parsedHeader: FitsHeader | null,
    readonly layout: ImageLayout,
    private readonly tiled: TiledImage | null,
    /** Size, mtime and inode at open (plain files; null otherwise): what reopenPlain checks. */
    private readonly stamp: { size: number; mtimeMs: number; ino: number } | null,
  ) {}

  /** The image's header; a reader re-opened from its layout alone (reopenPlain) has none and says so. */
  get header(): FitsHeader {
    if (!this.parsedHeader) throw new FitsError('FITS_HEADER_NOT_READ', this.file, 'this reader was re-opened from its image layout without its header (open the file for its header)');
    return this.parsedHeader;
  }

  /** For a plain file (positional reads of stored samples), what reopenPlain needs; null for gzip and tiled files. */
  get plainReopen(): PlainReopen | null {
    return this.stamp && !this.tiled && this.layout.compression === null ? { layout: this.layout, ...this.stamp } : null;
  }

  /**
   * Opens `file` again for pixel reads from what an earlier reader of it recorded, without
   * reading or parsing its header: one open and one stat. Null when the file is no longer what
   * it was (another size, modification time or inode, or not a regular file), and the caller opens it
   * in full; errors opening it are the same FitsErrors open() gives.
   */
  static async reopenPlain(file: string, known: PlainReopen): Promise<FitsReader | null> {
    let fh: FileHandle;
    try {
      fh = await open(file, 'r');
    } catch (e) {
      throw osError(e, file);
    }
    try {
      // fstat without a thread-pool round trip: microseconds, and this runs once per frame and band.
      const info = fstatSync(fh.fd);
      // File times tick coarsely (a rewrite within a few ms can keep mtime), hence the inode too.
      if (!info.isFile() || info.size !== known.size || info.mtimeMs !== known.mtimeMs || info.ino !== known.ino) {
        await fh.close();
        return null;
      }
      return new FitsReader(file, new FileSource(fh, info.size, file), null, known.layout, null, { size: info.size, mtimeMs: info.mtimeMs, ino: info.ino });
    } catch (e) {
      await fh.close().catch(() => undefined);
      throw isFitsError(e) ? e : osError(e, file);
    }
  }

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
    let src: ByteSource | null = null;
    try {
      const info = await fh.stat();
      if (info.isDirectory()) throw new FitsError('FITS_NOT_A_FILE', file, 'is a directory');
      if (!info.isFile()) throw new FitsError('FITS_NOT_A_FILE', file, 'is not a regular file');
      if (info.size === 0) throw new FitsError('FITS_EMPTY', file, 'file is empty');
      const magic = new Uint8Array(2);
      await readExactly(fh, magic, 0);
      const gzip = magic[0] === GZIP_MAGIC[0] && magic[1] === GZIP_MAGIC[1];
      if (gzip) {
        // The inflate stream opens the file itself (once per start): this handle is done.
        await fh.close();
        src = new GzipSource(file);
      } else src = new FileSource(fh, info.size, file);
      const { header, layout, tiled } = await locateImage(src, file, gzip);
      return new FitsReader(file, src, header, layout, tiled, gzip ? null : { size: info.size, mtimeMs: info.mtimeMs, ino: info.ino });
    } catch (e) {
      await (src ? src.close() : fh.close().catch(() => undefined)).catch(() => undefined);
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

  private checkRange(y0: number, rows: number, planes: readonly number[]): void {
    const { height, planes: planeCount } = this.layout;
    if (!Number.isInteger(y0) || !Number.isInteger(rows) || y0 < 0 || rows < 0 || y0 + rows > height) {
      throw new FitsError('FITS_ROW_RANGE', this.file, `rows ${y0}..${y0 + rows - 1} lie outside 0..${height - 1}`);
    }
    for (const p of planes) {
      if (!Number.isInteger(p) || p < 0 || p >= planeCount) throw new FitsError('FITS_ROW_RANGE', this.file, `plane ${p} lies outside 0..${planeCount - 1}`);
    }
  }

  /** `count` samples from sample index `first` (planes and rows in file order) of a plain image. */
  private async plainNative(first: number, count: number, scratch: RowScratch | undefined): Promise<PixelArray> {
    const { storage, bytesPerSample, dataOffset } = this.layout;
    const bytes = scratchBytes(scratch, count * bytesPerSample);
    const got = await this.src.read(bytes, dataOffset + first * bytesPerSample);
    if (got < bytes.byteLength) {
      throw new FitsError('FITS_TRUNCATED_DATA', this.file, `file ended while reading pixel data (got ${got} of ${bytes.byteLength} bytes)`);
    }
    return decodeSamples(bytes, storage, bytesPerSample);
  }

  /**
   * Rows [y0, y0 + rows) of one plane (default 0) as stored values in their native type
   * (unsigned conventions applied, no BZERO/BSCALE/BLANK otherwise): a view into `scratch`'s
   * bytes when given (valid until its next use), else into a fresh buffer.
   */
  async readNativeRows(y0: number, rows: number, options: { plane?: number; scratch?: RowScratch } = {}): Promise<PixelArray> {
    const plane = options.plane ?? 0;
    this.checkRange(y0, rows, [plane]);
    const { width, height, storage, bytesPerSample } = this.layout;
    const n = rows * width;
    if (!this.tiled) return this.plainNative((plane * height + y0) * width, n, options.scratch);
    const out = nativeView(storage, scratchBytes(options.scratch, n * bytesPerSample), n);
    await this.tiled.readInto(plane, y0, rows, out);
    return out;
  }

  /**
   * Rows [y0, y0 + rows) of one plane (default 0) as physical float32 values (BZERO/BSCALE
   * applied in double precision, BLANK → NaN) written to out[at ..]. Plain float32 files are read
   * straight into `out`'s memory; other kinds decode through `scratch` (reused when given).
   */
  async readRowsInto(y0: number, rows: number, out: Float32Array, options: { at?: number; plane?: number; scratch?: RowScratch } = {}): Promise<void> {
    const plane = options.plane ?? 0;
    const at = options.at ?? 0;
    this.checkRange(y0, rows, [plane]);
    const { width, height } = this.layout;
    const n = rows * width;
    if (!Number.isInteger(at) || at < 0 || at + n > out.length) throw new RangeError(`readRowsInto: ${n} samples do not fit at ${at} of a ${out.length}-sample array`);
    if (!this.tiled && nativeIsPhysicalFloat32(this.layout)) {
      // The file's bytes are the values: read them into their final place and swap in place.
      const bytes = new Uint8Array(out.buffer, out.byteOffset + 4 * at, 4 * n);
      const got = await this.src.read(bytes, this.layout.dataOffset + 4 * (plane * height + y0) * width);
      if (got < bytes.byteLength) {
        throw new FitsError('FITS_TRUNCATED_DATA', this.file, `file ended while reading pixel data (got ${got} of ${bytes.byteLength} bytes)`);
      }
      decodeSamples(bytes, 'float32', 4);
      return;
    }
    const native = await this.readNativeRows(y0, rows, { plane, ...(options.scratch ? { scratch: options.scratch } : {}) });
    toPhysical(native, this.layout, out, at);
  }

  /** The stored values exactly, in their native type (unsigned conventions applied). */
  async readNative(): Promise<PixelArray> {
    const { width, height, planes, storage, bytesPerSample } = this.layout;
    if (!this.tiled) return this.plainNative(0, width * height * planes, undefined);
    const out = nativeView(storage, new Uint8Array(width * height * planes * bytesPerSample), width * height * planes);
    for (let p = 0; p < planes; p++) await this.tiled.readInto(p, 0, height, out, p * width * height);
    return out;
  }

  /** The whole image as physical values (BZERO/BSCALE applied, BLANK → NaN). */
  async readImage(dtype: 'float64'): Promise<FitsImage<Float64Array>>;
  async readImage(dtype?: 'float32'): Promise<FitsImage<Float32Array>>;
  async readImage(dtype: FloatType = 'float32'): Promise<FitsImage<Float32Array | Float64Array>> {
    const { width, height, planes } = this.layout;
    const band = dtype === 'float64' ? await this.readRows(0, height, { dtype: 'float64' }) : await this.readRows(0, height);
    return { file: this.file, header: this.header, layout: this.layout, width, height, planes, data: band.data };
  }

  /** Rows [y0, y0 + rows) of the given planes (default all), as physical values. */
  async readRows(y0: number, rows: number, options?: { planes?: number[]; dtype?: 'float32' }): Promise<RowBand<Float32Array>>;
  async readRows(y0: number, rows: number, options: { planes?: number[]; dtype: 'float64' }): Promise<RowBand<Float64Array>>;
  async readRows(y0: number, rows: number, options: { planes?: number[]; dtype?: FloatType } = {}): Promise<RowBand<Float32Array | Float64Array>> {
    const { width, planes: planeCount } = this.layout;
    const planes = options.planes ?? Array.from({ length: planeCount }, (_, i) => i);
    this.checkRange(y0, rows, planes);
    const n = rows * width;
    if (planes.length === 1 && options.dtype !== 'float64' && nativeIsPhysicalFloat32(this.layout)) {
      // The decoded samples are the values: no second frame-sized array and copy.
      const data = (await this.readNativeRows(y0, rows, { plane: planes[0]! })) as Float32Array;
      return { y0, rows, width, planes, data };
    }
    const out = options.dtype === 'float64' ? new Float64Array(n * planes.length) : new Float32Array(n * planes.length);
    // One plane at a time keeps the temporary sample buffer at one band's size.
    const scratch: RowScratch = { bytes: new Uint8Array(0) };
    for (let i = 0; i < planes.length; i++) {
      const native = await this.readNativeRows(y0, rows, { plane: planes[i]!, scratch });
      toPhysical(native, this.layout, out, i * n);
    }
    return { y0, rows, width, planes, data: out };
  }

  /** Decoding work so far, for tests and diagnostics: tiles decompressed, gzip stream (re)starts. */
  get stats(): { tilesDecoded: number; inflateStarts: number } {
    return { tilesDecoded: this.tiled?.tilesDecoded ?? 0, inflateStarts: this.src instanceof GzipSource ? this.src.starts : 0 };
  }

  async close(): Promise<void> {
    await this.src.close();
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
