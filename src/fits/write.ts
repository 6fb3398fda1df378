// Writing a primary FITS image atomically: the file appears under its final name only when
// it is complete (temporary name in the same folder, fsync, rename), so a crash or a full
// disk never leaves a half-written image that looks good.
// Structural cards come from the data; a carried-over header contributes everything else.

import { open, rename, unlink, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { BLOCK_LENGTH } from './card.js';
import { FitsError } from './errors.js';
import { FitsHeader } from './header.js';
import { encodeSamples, storageFor, type PixelArray } from './samples.js';

export interface ImageToWrite {
  width: number;
  height: number;
  /** 1 writes NAXIS = 2; more writes a NAXIS = 3 plane cube. Default 1. */
  planes?: number;
  /** Planar samples; the array type picks BITPIX (Float32Array → -32, Uint16Array → 16 with BZERO 32768, ...). */
  data: PixelArray;
}

export interface WriteOptions {
  /** Cards to carry over (e.g. the reference light's header); structural and checksum cards are replaced. */
  header?: FitsHeader;
  /** Force NAXIS = 3 even for one plane. */
  cube?: boolean;
  /**
   * Flush the data to the disk before the rename (default true). False for intermediates that a
   * rerun regenerates (calibrated frames): the fsync costs ~45 ms per 12 MiB frame of wall time
   * and only guards against a power loss, while the temp-name + rename still guarantees that no
   * process crash leaves a partial file under the final name.
   */
  durable?: boolean;
}

/** Keywords derived from the data array, never carried over from another file. */
const STRUCTURAL = /^(SIMPLE|BITPIX|NAXIS\d*|EXTEND|BZERO|BSCALE|BLANK|PCOUNT|GCOUNT|GROUPS|XTENSION|END|CHECKSUM|DATASUM|ZIMAGE|ZBITPIX|ZNAXIS\d*|ZCMPTYPE)$/;

export function buildHeader(image: ImageToWrite, options: WriteOptions = {}): FitsHeader {
  const planes = image.planes ?? 1;
  const { bitpix, bzero } = storageFor(image.data);
  const header = new FitsHeader();
  header.set('SIMPLE', true, { comment: 'conforms to FITS standard' });
  header.set('BITPIX', bitpix, { comment: 'array data type' });
  const cube = planes > 1 || options.cube === true;
  header.set('NAXIS', cube ? 3 : 2, { comment: 'number of array dimensions' });
  header.set('NAXIS1', image.width);
  header.set('NAXIS2', image.height);
  if (cube) header.set('NAXIS3', planes);
  if (bzero !== 0) {
    header.set('BZERO', bzero, { comment: 'offset data range to that of unsigned' });
    header.set('BSCALE', 1);
  }
  for (const card of options.header?.cards ?? []) {
    if (card.value !== undefined && STRUCTURAL.test(card.key) && !card.hierarch) continue;
    header.cards.push({ ...card, ...(card.raw ? { raw: [...card.raw] } : {}) });
  }
  return header;
}

function validate(image: ImageToWrite, file: string): void {
  const planes = image.planes ?? 1;
  for (const [name, v] of [['width', image.width], ['height', image.height], ['planes', planes]] as const) {
    if (!Number.isInteger(v) || v < 1) throw new FitsError('FITS_BAD_IMAGE', file, `${name} = ${v} must be a positive integer`);
  }
  const expected = image.width * image.height * planes;
  if (image.data.length !== expected) {
    throw new FitsError('FITS_BAD_IMAGE', file, `data has ${image.data.length} samples, expected ${image.width}x${image.height}x${planes} = ${expected}`);
  }
}

const CHUNK_SAMPLES = 1 << 20;

/** Writes `image` to `file` through a temporary file and a rename. */
export async function writeFits(file: string, image: ImageToWrite, options: WriteOptions = {}): Promise<void> {
  validate(image, file);
  let headerBytes: Uint8Array;
  try {
    headerBytes = buildHeader(image, options).toBytes();
  } catch (e) {
    if (e instanceof RangeError) throw new FitsError('FITS_BAD_HEADER', file, e.message);
    throw e;
  }
  const tmp = partialWriteName(file);
  let fh: FileHandle | undefined;
  try {
    fh = await open(tmp, 'wx');
  } catch (e) {
    throw new FitsError('FITS_WRITE_FAILED', file, `cannot create temporary file: ${(e as Error).message}`);
  }
  try {
    let position = 0;
    const write = async (bytes: Uint8Array) => {
      let done = 0;
      while (done < bytes.byteLength) {
        const { bytesWritten } = await fh!.write(bytes, done, bytes.byteLength - done, position + done);
        done += bytesWritten;
      }
      position += bytes.byteLength;
    };
    await write(headerBytes);
    const data = image.data;
    const scratch = new Uint8Array(Math.min(CHUNK_SAMPLES, data.length) * data.BYTES_PER_ELEMENT);
    for (let start = 0; start < data.length; start += CHUNK_SAMPLES) {
      const count = Math.min(CHUNK_SAMPLES, data.length - start);
      await write(encodeSamples(data, start, count, scratch));
    }
    const dataBytes = data.length * data.BYTES_PER_ELEMENT;
    const padding = (BLOCK_LENGTH - (dataBytes % BLOCK_LENGTH)) % BLOCK_LENGTH;
    if (padding > 0) await write(new Uint8Array(padding));
    if (options.durable !== false) await fh!.sync();
    await fh!.close();
    fh = undefined;
    await rename(tmp, file);
  } catch (e) {
    if (fh) await fh.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    if (e instanceof FitsError) throw e;
    throw new FitsError('FITS_WRITE_FAILED', file, (e as Error).message);
  }
}

/** The temporary name a write of `file` goes to before the rename (hidden, beside it). */
export function partialWriteName(file: string): string {
  return join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
}

/**
 * Whether a directory entry is a writeFits temporary file: one is left behind only when the
 * writing process or thread dies mid-write (a terminated worker), and callers that own the
 * folder remove them.
 */
export function isPartialWrite(name: string): boolean {
  return /^\..+\.\d+\.[0-9a-f]{8}\.tmp$/.test(name);
}

/** Rounds and clamps float samples into 0..65535 for a 16-bit unsigned image (NaN → 0). */
export function toUint16(data: Float32Array | Float64Array): Uint16Array {
  const out = new Uint16Array(data.length);
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    out[i] = v > 0 ? (v >= 65535 ? 65535 : Math.round(v)) : 0;
  }
  return out;
}
