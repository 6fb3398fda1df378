// Where an image lives in a FITS file and how its samples are stored, derived from the
// mandatory keywords. Everything that can be wrong with those keywords is refused here,
// before a single pixel byte is read or allocated.

import { BLOCK_LENGTH } from './card.js';
import { FitsError } from './errors.js';
import type { FitsHeader } from './header.js';

export type Bitpix = 8 | 16 | 32 | 64 | -32 | -64;
export const BITPIX_VALUES: readonly Bitpix[] = [8, 16, 32, 64, -32, -64];

/** How samples are held in memory: the FITS unsigned conventions (BZERO = 2^(n-1)) are recognised. */
export type StorageKind = 'uint8' | 'int8' | 'int16' | 'uint16' | 'int32' | 'uint32' | 'int64' | 'uint64' | 'float32' | 'float64';

export interface ImageLayout {
  bitpix: Bitpix;
  /** NAXIS1..NAXISn as written. */
  axes: number[];
  width: number;
  height: number;
  planes: number;
  /** Scaling applied to stored values; for recognised unsigned storage it is already folded into `storage`. */
  bscale: number;
  bzero: number;
  /** Stored integer value that marks a missing pixel (becomes NaN in float output). */
  blank: number | bigint | undefined;
  storage: StorageKind;
  bytesPerSample: number;
  /** Byte offset of the samples in the FITS byte stream (after gunzip for .gz); for a tiled image, of its table. */
  dataOffset: number;
  /** Bytes of the samples once decompressed (width × height × planes × bytesPerSample). */
  dataBytes: number;
  /** The HDU holding the image: 0 = primary, n = n-th extension. */
  hdu: number;
  /** How the samples are stored: null = as they are; 'gzip' (whole file), a ZCMPTYPE (tiles), or 'gzip+RICE_1'. */
  compression: string | null;
}

/** Element count above which one typed array cannot hold the image. */
export const MAX_ELEMENTS = 2 ** 31 - 1;

function integerKey(header: FitsHeader, key: string, file: string): number {
  const card = header.card(key);
  if (card === undefined) throw new FitsError('FITS_MISSING_KEYWORD', file, `mandatory keyword ${key} is missing`);
  const v = card.value;
  if (typeof v !== 'number' || !Number.isInteger(v) || card.real) {
    throw new FitsError('FITS_BAD_KEYWORD_VALUE', file, `${key} must be an integer, found ${JSON.stringify(typeof v === 'bigint' ? v.toString() : v)}`);
  }
  return v;
}

function storageKind(bitpix: Bitpix, bscale: number, bzero: number): StorageKind {
  const unit = bscale === 1;
  switch (bitpix) {
    case 8:
      return unit && bzero === -128 ? 'int8' : 'uint8';
    case 16:
      return unit && bzero === 32768 ? 'uint16' : 'int16';
    case 32:
      return unit && bzero === 2147483648 ? 'uint32' : 'int32';
    case 64:
      return unit && bzero === 9223372036854775808 ? 'uint64' : 'int64';
    case -32:
      return 'float32';
    case -64:
      return 'float64';
  }
}

/** True when `storage` already holds physical values (no BSCALE/BZERO left to apply). */
export function isUnsignedConvention(layout: ImageLayout): boolean {
  return layout.storage === 'int8' || layout.storage === 'uint16' || layout.storage === 'uint32' || layout.storage === 'uint64';
}

/**
 * Validates the header of an image HDU and computes its layout.
 * `dataOffset` is where its data starts; `fileSize` guards against truncated data (Infinity
 * where the size is not known up front: gzip streams, tiled images).
 * An HDU without data (NAXIS = 0 or a zero axis) is 'no-data': the caller looks for the image
 * in the extensions.
 */
export function imageLayout(header: FitsHeader, dataOffset: number, fileSize: number, file: string): ImageLayout | 'no-data' {
  const bitpixRaw = integerKey(header, 'BITPIX', file);
  if (!BITPIX_VALUES.includes(bitpixRaw as Bitpix)) {
    throw new FitsError('FITS_BAD_BITPIX', file, `BITPIX = ${bitpixRaw} is not one of 8, 16, 32, 64, -32, -64`);
  }
  const bitpix = bitpixRaw as Bitpix;
  const naxis = integerKey(header, 'NAXIS', file);
  if (naxis < 0 || naxis > 999) throw new FitsError('FITS_BAD_NAXIS', file, `NAXIS = ${naxis} is outside 0..999`);
  if (header.getBoolean('GROUPS') === true && naxis >= 1 && header.get('NAXIS1') === 0) {
    throw new FitsError('FITS_RANDOM_GROUPS_UNSUPPORTED', file, 'random-groups data (GROUPS = T) holds no image');
  }
  const axes: number[] = [];
  for (let i = 1; i <= naxis; i++) {
    const n = integerKey(header, `NAXIS${i}`, file);
    if (n < 0) throw new FitsError('FITS_BAD_NAXIS', file, `NAXIS${i} = ${n} is negative`);
    axes.push(n);
  }
  if (naxis === 0 || axes.some((n) => n === 0)) return 'no-data';
  if (naxis === 1) throw new FitsError('FITS_UNSUPPORTED_NAXIS', file, 'NAXIS = 1 is a spectrum or table, not an image');
  if (naxis > 3 && axes.slice(3).some((n) => n !== 1)) {
    throw new FitsError('FITS_UNSUPPORTED_NAXIS', file, `NAXIS = ${naxis} with axes ${axes.join('x')}; only 2-D images and 3-D plane cubes are supported`);
  }

  const bscale = header.has('BSCALE') ? header.getNumber('BSCALE') : 1;
  const bzero = header.has('BZERO') ? header.getNumber('BZERO') : 0;
  if (bscale === undefined || bscale === 0) throw new FitsError('FITS_BAD_KEYWORD_VALUE', file, `BSCALE = ${String(header.get('BSCALE'))} must be a non-zero number`);
  if (bzero === undefined) throw new FitsError('FITS_BAD_KEYWORD_VALUE', file, `BZERO = ${String(header.get('BZERO'))} must be a number`);
  let blank: number | bigint | undefined;
  if (bitpix > 0 && header.has('BLANK')) {
    const b = header.get('BLANK');
    if (typeof b === 'number' && Number.isInteger(b)) blank = b;
    else if (typeof b === 'bigint') blank = b;
    else throw new FitsError('FITS_BAD_KEYWORD_VALUE', file, `BLANK = ${String(b)} must be an integer`);
  }

  const width = axes[0]!;
  const height = axes[1]!;
  const planes = axes[2] ?? 1;
  const bytesPerSample = Math.abs(bitpix) / 8;
  const elements = width * height * planes;
  if (!Number.isSafeInteger(elements) || elements > MAX_ELEMENTS) {
    throw new FitsError('FITS_TOO_LARGE', file, `image of ${axes.join('x')} samples exceeds ${MAX_ELEMENTS} elements`);
  }
  const dataBytes = elements * bytesPerSample;
  if (dataOffset + dataBytes > fileSize) {
    throw new FitsError(
      'FITS_TRUNCATED_DATA',
      file,
      `data needs ${dataBytes} bytes after the header but the file has ${Math.max(0, fileSize - dataOffset)}`,
    );
  }
  return {
    bitpix,
    axes,
    width,
    height,
    planes,
    bscale,
    bzero,
    blank,
    storage: storageKind(bitpix, bscale, bzero),
    bytesPerSample,
    dataOffset,
    dataBytes,
    hdu: 0,
    compression: null,
  };
}

/** Bytes an HDU's data occupies on disk, padding included (used to step over HDUs). */
export function paddedDataBytes(header: FitsHeader): number {
  const bitpix = header.getNumber('BITPIX') ?? 8;
  const naxis = header.getNumber('NAXIS') ?? 0;
  if (naxis === 0) return 0;
  let n = 1;
  for (let i = 1; i <= naxis; i++) n *= header.getNumber(`NAXIS${i}`) ?? 0;
  const pcount = header.getNumber('PCOUNT') ?? 0;
  const gcount = header.getNumber('GCOUNT') ?? 1;
  const bytes = (Math.abs(bitpix) / 8) * gcount * (pcount + n);
  return Math.ceil(bytes / BLOCK_LENGTH) * BLOCK_LENGTH;
}
