// A tile-compressed image (the FITS tiled-image convention: fpack's .fz, cfitsio's compressed
// HDUs): a BINTABLE with ZIMAGE = T whose rows are the tiles of an image, each tile's bytes a
// variable-length array in the table's heap. Reads rows of the image by decompressing only the
// tiles that hold them, in the native sample type of the image (ZBITPIX, with the unsigned
// conventions of BZERO applied as for a plain file), so the reader above treats the result like
// decoded plain samples.
// Read: RICE_1 (compressed/rice.ts), GZIP_1, GZIP_2 (byte-shuffled), NOCOMPRESS, per-tile
// fallbacks (GZIP_COMPRESSED_DATA: lossless gzip of the floats; UNCOMPRESSED_DATA: raw values),
// quantized floats (compressed/quantize.ts) with ZSCALE/ZZERO/ZBLANK as columns or keywords.
// Refused with their own codes: HCOMPRESS_1, PLIO_1, unknown ZCMPTYPE
// (FITS_COMPRESSION_UNSUPPORTED); 64-bit integer tiles, tiles across planes, unknown ZQUANTIZ
// (FITS_COMPRESSED_LAYOUT_UNSUPPORTED).
// Memory: the table rows (a few bytes per tile) are read at open; a read holds the compressed
// bytes of the tiles it needs, and one decoded tile row (ZTILE2 rows × width) is kept so that
// consecutive bands cutting through one tile row decode it once.
// Invariants: every pixel of a request comes from its own tile (no tile is trusted to have the
// size the geometry says: a mismatch is FITS_COMPRESSED_CORRUPT); descriptors are checked
// against the heap before anything is read or allocated.

import { gunzipSync } from 'node:zlib';
import { FitsError } from '../errors.js';
import type { FitsHeader } from '../header.js';
import type { ImageLayout } from '../layout.js';
import type { PixelArray } from '../samples.js';
import type { ByteSource } from '../source.js';
import { dequantize, type QuantizeMethod } from './quantize.js';
import { riceDecode, RiceError, type RiceBytePix } from './rice.js';
import { elementBytes, readDescriptor, readNumber, tableLayout, type Column, type Descriptor, type TableLayout } from './table.js';

type Algorithm = 'RICE_1' | 'GZIP_1' | 'GZIP_2' | 'NOCOMPRESS';

/** Tile values before the image's unsigned convention: integers as stored, or floats. */
type TileValues = Int32Array | Float32Array | Float64Array;

/** One tile's bytes per data column (empty where its descriptor has no elements). */
interface TileBytes {
  compressed: Uint8Array;
  gzipped: Uint8Array;
  uncompressed: Uint8Array;
}

/** Most bytes the table's rows may occupy (they are read whole at open). */
const MAX_TABLE_BYTES = 256 * 1024 * 1024;

export interface TiledDescription {
  algorithm: Algorithm;
  tile: number[];
  quantize: QuantizeMethod | null;
}

/** What open() learns from the compression keywords, before the image layout is known. */
export function compressionOf(h: FitsHeader, file: string): { algorithm: Algorithm } {
  const raw = h.getString('ZCMPTYPE')?.trim().toUpperCase();
  if (raw === undefined) throw new FitsError('FITS_MISSING_KEYWORD', file, 'compressed image: ZCMPTYPE is missing');
  if (raw === 'RICE_1' || raw === 'RICE_ONE') return { algorithm: 'RICE_1' };
  if (raw === 'GZIP_1' || raw === 'GZIP_2' || raw === 'NOCOMPRESS') return { algorithm: raw };
  const known = raw === 'HCOMPRESS_1' ? 'HCOMPRESS_1 (wavelet compression)' : raw === 'PLIO_1' ? 'PLIO_1 (IRAF pixel-list compression)' : `'${raw}'`;
  throw new FitsError('FITS_COMPRESSION_UNSUPPORTED', file, `tile compression ${known} is not supported (RICE_1, GZIP_1, GZIP_2 and NOCOMPRESS are); decompress the file with funpack first`);
}

export class TiledImage {
  private readonly width: number;
  private readonly height: number;
  private readonly tileW: number;
  private readonly tileH: number;
  private readonly tilesX: number;
  private readonly tilesY: number;
  private readonly rows: DataView;
  private readonly compressed: Column;
  private readonly gzipped: Column | undefined;
  private readonly uncompressed: Column | undefined;
  private readonly scaleCol: Column | undefined;
  private readonly zeroCol: Column | undefined;
  private readonly blankCol: Column | undefined;
  private readonly float: boolean;
  private readonly quantized: boolean;
  private readonly method: QuantizeMethod;
  private readonly dither0: number;
  private readonly blockSize: number;
  private readonly bytePix: RiceBytePix;
  /** ZSCALE, ZZERO, ZBLANK given as keywords (one value for every tile). */
  private readonly keywords: { scale: number | undefined; zero: number | undefined; blank: number | undefined };
  private cached: { plane: number; tileRow: number; values: TileValues } | null = null;
  /** Tiles decoded so far (tests check that a read decodes only the tiles it needs). */
  tilesDecoded = 0;

  private constructor(
    private readonly src: ByteSource,
    private readonly file: string,
    private readonly layout: ImageLayout,
    private readonly table: TableLayout,
    private readonly heapStart: number,
    rows: Uint8Array,
    h: FitsHeader,
    readonly description: TiledDescription,
  ) {
    const bad = (detail: string) => new FitsError('FITS_COMPRESSED_CORRUPT', file, `compressed image: ${detail}`);
    this.width = layout.width;
    this.height = layout.height;
    [this.tileW, this.tileH] = description.tile as [number, number];
    this.tilesX = Math.ceil(this.width / this.tileW);
    this.tilesY = Math.ceil(this.height / this.tileH);
    this.rows = new DataView(rows.buffer, rows.byteOffset, rows.byteLength);
    const col = (name: string) => table.columns.get(name);
    const compressed = col('COMPRESSED_DATA');
    if (!compressed || !compressed.descriptor) throw bad('the table has no COMPRESSED_DATA variable-length column');
    this.compressed = compressed;
    const vla = (name: string) => {
      const c = col(name);
      return c?.descriptor ? c : undefined;
    };
    this.gzipped = vla('GZIP_COMPRESSED_DATA');
    this.uncompressed = vla('UNCOMPRESSED_DATA');
    this.scaleCol = col('ZSCALE');
    this.zeroCol = col('ZZERO');
    this.blankCol = col('ZBLANK');
    this.float = layout.bitpix < 0;
    this.quantized = this.float && description.quantize !== null;
    this.method = description.quantize ?? 'NO_DITHER';
    this.dither0 = h.getNumber('ZDITHER0') ?? 1;
    this.keywords = { scale: h.getNumber('ZSCALE'), zero: h.getNumber('ZZERO'), blank: h.getNumber('ZBLANK') };
    const param = (name: string): number | undefined => {
      for (let i = 1; i < 100; i++) {
        const n = h.getString(`ZNAME${i}`);
        if (n === undefined) return undefined;
        if (n.trim().toUpperCase() === name) return h.getNumber(`ZVAL${i}`);
      }
      return undefined;
    };
    this.blockSize = param('BLOCKSIZE') ?? 32;
    const bytePix = param('BYTEPIX') ?? 4;
    if (description.algorithm === 'RICE_1') {
      if (bytePix === 8) throw new FitsError('FITS_COMPRESSED_LAYOUT_UNSUPPORTED', file, 'Rice tiles of 64-bit integers (BYTEPIX = 8) are not supported');
      if (bytePix !== 1 && bytePix !== 2 && bytePix !== 4) throw bad(`BYTEPIX = ${bytePix} is not 1, 2, 4 or 8`);
      if (!(Number.isInteger(this.blockSize) && this.blockSize > 0)) throw bad(`BLOCKSIZE = ${this.blockSize} is not a positive integer`);
    }
    this.bytePix = bytePix as RiceBytePix;
  }

  /**
   * Validates the table (`tableHeader` at `dataOffset`) and reads its rows. `layout` is the
   * image's, computed from the restored image header (compressed/image-header.ts).
   */
  static async open(src: ByteSource, tableHeader: FitsHeader, dataOffset: number, layout: ImageLayout, file: string): Promise<TiledImage> {
    const { algorithm } = compressionOf(tableHeader, file);
    if (layout.bitpix === 64) throw new FitsError('FITS_COMPRESSED_LAYOUT_UNSUPPORTED', file, 'tile-compressed 64-bit integer images (ZBITPIX = 64) are not supported');
    const naxis = layout.axes.length;
    const tile: number[] = [];
    for (let i = 1; i <= Math.max(naxis, 3); i++) {
      const axis = layout.axes[i - 1] ?? 1;
      const v = tableHeader.get(`ZTILE${i}`);
      const t = v === undefined ? (i === 1 ? axis : 1) : v;
      if (typeof t !== 'number' || !Number.isInteger(t) || t < 1) throw new FitsError('FITS_BAD_KEYWORD_VALUE', file, `compressed image: ZTILE${i} = ${String(v)} must be a positive integer`);
      tile.push(Math.min(t, Math.max(axis, 1)));
    }
    if (tile.slice(2).some((t) => t !== 1)) {
      throw new FitsError('FITS_COMPRESSED_LAYOUT_UNSUPPORTED', file, `tiles spanning several planes (ZTILE = ${tile.join('x')}) are not supported; tiles must be at most one plane deep`);
    }
    const table = tableLayout(tableHeader, file);
    let quantize: QuantizeMethod | null = null;
    if (layout.bitpix < 0) {
      const q = tableHeader.getString('ZQUANTIZ')?.trim().toUpperCase();
      const hasScale = tableHeader.has('ZSCALE') || table.columns.has('ZSCALE');
      // Without ZSCALE (column or keyword) the tiles hold the floats themselves, whatever
      // ZQUANTIZ says (astropy writes ZQUANTIZ = 'NO_DITHER' on lossless tiles).
      if (q === 'NONE' || !hasScale) quantize = null;
      else if (q === undefined || q === 'NO_DITHER') quantize = 'NO_DITHER';
      else if (q === 'SUBTRACTIVE_DITHER_1' || q === 'SUBTRACTIVE_DITHER_2') quantize = q;
      else throw new FitsError('FITS_COMPRESSED_LAYOUT_UNSUPPORTED', file, `ZQUANTIZ = '${q}' is not a known quantization method`);
    }
    const tiles = Math.ceil(layout.width / tile[0]!) * Math.ceil(layout.height / tile[1]!) * layout.planes;
    if (table.rows !== tiles) {
      throw new FitsError('FITS_COMPRESSED_CORRUPT', file, `compressed image: the table has ${table.rows} rows for ${tiles} tiles of ${tile.slice(0, 2).join('x')}`);
    }
    const rowBytes = table.rowBytes * table.rows;
    if (rowBytes > MAX_TABLE_BYTES) throw new FitsError('FITS_TOO_LARGE', file, `compressed image table of ${rowBytes} bytes`);
    const heapStart = dataOffset + table.heapOffset;
    if (src.size !== undefined && heapStart + table.heapBytes > src.size) {
      throw new FitsError('FITS_TRUNCATED_DATA', file, `compressed image data needs ${table.heapOffset + table.heapBytes} bytes after its header but the file has ${Math.max(0, src.size - dataOffset)}`);
    }
    const rows = new Uint8Array(rowBytes);
    const got = await src.read(rows, dataOffset);
    if (got < rowBytes) throw new FitsError('FITS_TRUNCATED_DATA', file, `file ends inside the compressed image's table (${got} of ${rowBytes} bytes)`);
    return new TiledImage(src, file, layout, table, heapStart, rows, tableHeader, { algorithm, tile, quantize });
  }

  /**
   * Rows [y0, y0 + rows) of `plane` as native samples (the layout's storage kind) into
   * out[at ..]. The range must lie inside the image (the reader checks it).
   */
  async readInto(plane: number, y0: number, rows: number, out: PixelArray, at = 0): Promise<void> {
    const { width, tileH } = this;
    if (rows <= 0) return;
    const first = Math.floor(y0 / tileH);
    const last = Math.floor((y0 + rows - 1) / tileH);
    for (let tr = first; tr <= last; tr++) {
      const rowStart = tr * tileH;
      const rowEnd = Math.min(this.height, rowStart + tileH);
      const a = Math.max(y0, rowStart);
      const b = Math.min(y0 + rows, rowEnd);
      let values: TileValues;
      if (this.cached && this.cached.plane === plane && this.cached.tileRow === tr) values = this.cached.values;
      else {
        values = await this.decodeTileRow(plane, tr);
        // A tile row the request only partly covers is kept: the next band starts inside it.
        if (a > rowStart || b < rowEnd) this.cached = { plane, tileRow: tr, values };
      }
      toNative(values, (a - rowStart) * width, (b - a) * width, this.layout, out, at + (a - y0) * width);
    }
  }

  /** Decodes every tile of tile row `tr` of `plane` into one (rows × width) array. */
  private async decodeTileRow(plane: number, tr: number): Promise<TileValues> {
    const { width, tileW, tileH, tilesX } = this;
    const rowsHere = Math.min(tileH, this.height - tr * tileH);
    const values = this.float ? (this.layout.bitpix === -64 ? new Float64Array(rowsHere * width) : new Float32Array(rowsHere * width)) : new Int32Array(rowsHere * width);
    const firstTile = (plane * this.tilesY + tr) * tilesX;
    const heap = await this.fetch(firstTile, tilesX);
    const scratch = tilesX > 1 ? (this.float ? (this.layout.bitpix === -64 ? new Float64Array(tileW * rowsHere) : new Float32Array(tileW * rowsHere)) : new Int32Array(tileW * rowsHere)) : values;
    for (let tx = 0; tx < tilesX; tx++) {
      const w = Math.min(tileW, width - tx * tileW);
      const n = w * rowsHere;
      const direct = tilesX === 1;
      this.decodeTile(firstTile + tx, n, heap[tx]!, direct ? values : scratch);
      if (!direct) {
        for (let r = 0; r < rowsHere; r++) values.set(scratch.subarray(r * w, r * w + w), r * width + tx * tileW);
      }
    }
    return values;
  }

  /** The heap bytes of tiles [first, first + count): one read when they lie close together. */
  private async fetch(first: number, count: number): Promise<TileBytes[]> {
    const spans: { col: 'compressed' | 'gzipped' | 'uncompressed'; tile: number; offset: number; bytes: number }[] = [];
    for (let i = 0; i < count; i++) {
      const k = first + i;
      for (const [name, column] of [['compressed', this.compressed], ['gzipped', this.gzipped], ['uncompressed', this.uncompressed]] as const) {
        if (!column) continue;
        const d = this.descriptor(k, column);
        if (d.count > 0) spans.push({ col: name, tile: i, offset: d.offset, bytes: d.count * elementBytes(column.type) });
      }
    }
    const empty: Uint8Array = new Uint8Array(0);
    const out: TileBytes[] = Array.from({ length: count }, () => ({ compressed: empty, gzipped: empty, uncompressed: empty }));
    if (spans.length === 0) return out;
    const lo = Math.min(...spans.map((s) => s.offset));
    const hi = Math.max(...spans.map((s) => s.offset + s.bytes));
    const total = spans.reduce((n, s) => n + s.bytes, 0);
    if (hi - lo <= 2 * total + 65536) {
      const block = await this.readHeap(lo, hi - lo);
      for (const s of spans) out[s.tile]![s.col] = block.subarray(s.offset - lo, s.offset - lo + s.bytes);
    } else {
      for (const s of spans) out[s.tile]![s.col] = await this.readHeap(s.offset, s.bytes);
    }
    return out;
  }

  private descriptor(tile: number, column: Column): Descriptor {
    const d = readDescriptor(this.rows, tile * this.table.rowBytes, column);
    const bytes = d.count * elementBytes(column.type);
    if (!Number.isSafeInteger(d.offset + bytes) || d.offset + bytes > this.table.heapBytes) {
      throw new FitsError('FITS_COMPRESSED_CORRUPT', this.file, `compressed image: tile ${tile + 1}'s ${column.name} (${bytes} bytes at heap offset ${d.offset}) lies outside the ${this.table.heapBytes}-byte heap`);
    }
    return d;
  }

  private async readHeap(offset: number, bytes: number): Promise<Uint8Array> {
    const buf = new Uint8Array(bytes);
    const got = await this.src.read(buf, this.heapStart + offset);
    if (got < bytes) throw new FitsError('FITS_TRUNCATED_DATA', this.file, `file ends inside the compressed image's tile data (${got} of ${bytes} bytes)`);
    return buf;
  }

  private fixedNumber(tile: number, column: Column | undefined): number | undefined {
    if (!column || column.descriptor) return undefined;
    return readNumber(this.rows, tile * this.table.rowBytes, column);
  }

  /** Decodes tile `k` (0-based) of `n` pixels into out[0 .. n). */
  private decodeTile(k: number, n: number, bytes: TileBytes, out: TileValues): void {
    const bad = (detail: string) => new FitsError('FITS_COMPRESSED_CORRUPT', this.file, `compressed image tile ${k + 1}: ${detail}`);
    this.tilesDecoded++;
    if (bytes.compressed.length > 0) {
      const algorithm = this.description.algorithm;
      if (algorithm === 'RICE_1') {
        const ints = out instanceof Int32Array ? out : new Int32Array(n);
        try {
          riceDecode(bytes.compressed, ints, n, this.blockSize, this.bytePix);
        } catch (e) {
          if (e instanceof RiceError) throw bad(e.message);
          throw e;
        }
        if (!this.float) return;
        if (!this.quantized) throw bad('Rice-compressed floating-point tile without ZSCALE/ZQUANTIZ (floats must be quantized for Rice)');
        this.restore(k, ints, n, out);
        return;
      }
      let raw: Uint8Array;
      if (algorithm === 'NOCOMPRESS') raw = bytes.compressed;
      else {
        try {
          raw = gunzipSync(bytes.compressed);
        } catch (e) {
          throw bad(`gzip data cannot be decompressed (${(e as Error).message})`);
        }
      }
      const size = raw.length / n;
      if (![1, 2, 4, 8].includes(size)) throw bad(`${raw.length} bytes do not hold ${n} pixels`);
      if (algorithm === 'GZIP_2') raw = unshuffle(raw, size);
      if (this.quantized) {
        if (size === 8) throw new FitsError('FITS_COMPRESSED_LAYOUT_UNSUPPORTED', this.file, 'quantized tiles of 64-bit integers are not supported');
        const ints = new Int32Array(n);
        bigEndianInts(raw, size, ints);
        this.restore(k, ints, n, out);
      } else this.storeRaw(raw, size, n, out, bad);
      return;
    }
    if (bytes.gzipped.length > 0) {
      // A float tile the writer could not quantize: its values, gzip-compressed as they are.
      let raw: Uint8Array;
      try {
        raw = gunzipSync(bytes.gzipped);
      } catch (e) {
        throw bad(`gzip data cannot be decompressed (${(e as Error).message})`);
      }
      const size = raw.length / n;
      if (size !== 4 && size !== 8) throw bad(`${raw.length} bytes of GZIP_COMPRESSED_DATA do not hold ${n} floating-point pixels`);
      this.storeRaw(raw, size, n, out, bad);
      return;
    }
    if (bytes.uncompressed.length > 0) {
      const size = bytes.uncompressed.length / n;
      if (![1, 2, 4, 8].includes(size)) throw bad(`${bytes.uncompressed.length} bytes of UNCOMPRESSED_DATA do not hold ${n} pixels`);
      const type = this.uncompressed!.type;
      this.storeRaw(bytes.uncompressed, size, n, out, bad, type === 'E' || type === 'D');
      return;
    }
    throw bad('holds no data (all data columns are empty)');
  }

  /** Quantized integers → floats with this tile's ZSCALE, ZZERO and ZBLANK. */
  private restore(k: number, ints: Int32Array, n: number, out: TileValues): void {
    const scale = this.fixedNumber(k, this.scaleCol) ?? this.keywords.scale;
    const zero = this.fixedNumber(k, this.zeroCol) ?? this.keywords.zero;
    if (scale === undefined || zero === undefined) throw new FitsError('FITS_COMPRESSED_CORRUPT', this.file, `compressed image tile ${k + 1}: quantized floats without ZSCALE and ZZERO`);
    const blank = this.fixedNumber(k, this.blankCol) ?? this.keywords.blank;
    dequantize(ints, n, { method: this.method, scale, zero, blank, tile: k + 1, dither0: this.dither0 }, out as Float32Array | Float64Array, 0);
  }

  /** Raw big-endian values (integers of `size` bytes, or IEEE floats) → out. */
  private storeRaw(raw: Uint8Array, size: number, n: number, out: TileValues, bad: (d: string) => FitsError, floats = this.float): void {
    if (this.float) {
      if (!floats || (size !== 4 && size !== 8)) {
        // Integers in an unquantized float image: stored values of the float type's range.
        if (size === 8) throw bad('64-bit integers in a floating-point image');
        const ints = new Int32Array(n);
        bigEndianInts(raw, size, ints);
        out.set(ints);
        return;
      }
      const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
      if (size === 4) for (let i = 0; i < n; i++) out[i] = view.getFloat32(4 * i);
      else for (let i = 0; i < n; i++) out[i] = view.getFloat64(8 * i);
      return;
    }
    if (size === 8) throw new FitsError('FITS_COMPRESSED_LAYOUT_UNSUPPORTED', this.file, '64-bit integer tile data is not supported');
    if (floats) throw bad('floating-point tile data in an integer image');
    bigEndianInts(raw, size, out as Int32Array);
  }
}

/** Big-endian integers of 1 (unsigned), 2 or 4 (signed) bytes → ints. */
function bigEndianInts(raw: Uint8Array, size: number, ints: Int32Array): void {
  const n = raw.length / size;
  if (size === 1) {
    ints.set(raw.subarray(0, n));
    return;
  }
  const view = new DataView(raw.buffer, raw.byteOffset, raw.byteLength);
  if (size === 2) for (let i = 0; i < n; i++) ints[i] = view.getInt16(2 * i);
  else for (let i = 0; i < n; i++) ints[i] = view.getInt32(4 * i);
}

/** GZIP_2 stores byte k of every value together (most significant first); this undoes it. */
function unshuffle(raw: Uint8Array, size: number): Uint8Array {
  if (size === 1) return raw;
  const n = raw.length / size;
  const out = new Uint8Array(raw.length);
  for (let b = 0; b < size; b++) {
    const plane = raw.subarray(b * n, (b + 1) * n);
    for (let i = 0; i < n; i++) out[i * size + b] = plane[i]!;
  }
  return out;
}

/**
 * Tile values[from .. from + count) → native samples of the layout's storage kind at out[at ..]:
 * the unsigned conventions (BZERO = 2^(n−1)) shift the stored integer as decodeSamples does for
 * plain files; floats and signed integers are copied.
 */
function toNative(values: TileValues, from: number, count: number, layout: ImageLayout, out: PixelArray, at: number): void {
  const src = values.subarray(from, from + count);
  switch (layout.storage) {
    case 'uint16': {
      const o = out as Uint16Array;
      for (let i = 0; i < count; i++) o[at + i] = src[i]! ^ 0x8000;
      return;
    }
    case 'int8': {
      const o = out as Int8Array;
      for (let i = 0; i < count; i++) o[at + i] = src[i]! ^ 0x80;
      return;
    }
    case 'uint32': {
      const o = out as Uint32Array;
      for (let i = 0; i < count; i++) o[at + i] = (src[i]! ^ 0x80000000) >>> 0;
      return;
    }
    default:
      (out as Exclude<PixelArray, BigInt64Array | BigUint64Array>).set(src, at);
  }
}
