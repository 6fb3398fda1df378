// Finding the image in a FITS byte stream: the primary HDU when it holds one, else the first
// extension that does: an IMAGE extension with data (a primary without data before it is what
// several capture programs and astropy write), or a tile-compressed image table (ZIMAGE = T,
// fpack's .fz). Other extensions (tables, empty images) are stepped over.
// Headers are read block by block up to END; nothing past the headers and (for tiled images)
// the table's rows is read here. Every failure is a FitsError naming the file.

import { BLOCK_LENGTH, CARD_LENGTH, CARDS_PER_BLOCK } from './card.js';
import { imageHeaderOfTable } from './compressed/image-header.js';
import { compressionOf, TiledImage } from './compressed/tiled.js';
import { FitsError, isFitsError } from './errors.js';
import { FitsHeader } from './header.js';
import { imageLayout, paddedDataBytes, type ImageLayout } from './layout.js';
import type { ByteSource } from './source.js';

/** Extensions looked at before giving up (a file of thousands of tables is not a light). */
const MAX_HDUS = 1000;

const ASCII = new TextDecoder('latin1');

/** A read inside a header: a gzip stream that ends there is a truncated header, not truncated data. */
async function headerRead(src: ByteSource, into: Uint8Array, position: number, file: string): Promise<number> {
  try {
    return await src.read(into, position);
  } catch (e) {
    if (isFitsError(e) && e.code === 'FITS_TRUNCATED_DATA') throw new FitsError('FITS_TRUNCATED_HEADER', file, 'gzip stream ends inside a header (the file is truncated)');
    throw e;
  }
}

/** Reads header blocks starting at `position` up to the END card. */
export async function readHeaderAt(src: ByteSource, position: number, file: string): Promise<{ header: FitsHeader; bytes: number }> {
  const images: string[] = [];
  let offset = position;
  const block = new Uint8Array(BLOCK_LENGTH);
  for (;;) {
    const got = await headerRead(src, block, offset, file);
    if (got === 0) throw new FitsError('FITS_MISSING_END', file, `header has no END card (file ends after ${images.length} cards)`);
    if (got < BLOCK_LENGTH) throw new FitsError('FITS_TRUNCATED_HEADER', file, `file ends ${got} bytes into a 2880-byte header block`);
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

/** The first card must be SIMPLE = T; a container that is not FITS gets a specific code. */
export async function checkPrimarySignature(src: ByteSource, file: string): Promise<void> {
  const head = new Uint8Array(CARD_LENGTH);
  const got = await headerRead(src, head, 0, file);
  if (got === 0) throw new FitsError('FITS_EMPTY', file, src.size === undefined ? 'gzip stream holds no data' : 'file is empty');
  const text = ASCII.decode(head.subarray(0, got));
  if (text.startsWith('XTENSION')) throw new FitsError('FITS_NOT_FITS', file, 'starts with an XTENSION card, not a primary header');
  if (!/^SIMPLE  = /.test(text)) throw new FitsError('FITS_NOT_FITS', file, 'does not start with "SIMPLE  =" (not a FITS file)');
  if (got < CARD_LENGTH) throw new FitsError('FITS_TRUNCATED_HEADER', file, `file has only ${got} bytes`);
  const simple = text.slice(10, 30).trim().split('/')[0]!.trim();
  if (simple === 'F') throw new FitsError('FITS_NONSTANDARD', file, 'SIMPLE = F: the file does not conform to the FITS standard');
  if (simple !== 'T') throw new FitsError('FITS_NOT_FITS', file, `SIMPLE has value "${simple}", expected T`);
}

/** Keywords that belong to one HDU's structure and are never inherited from the primary. */
const HDU_STRUCTURE = /^(SIMPLE|XTENSION|BITPIX|NAXIS\d*|EXTEND|PCOUNT|GCOUNT|GROUPS|BZERO|BSCALE|BLANK|CHECKSUM|DATASUM|EXTNAME|EXTVER|EXTLEVEL|INHERIT|END)$/;

/**
 * An extension image's header with the primary header's keywords it lacks appended (the FITS
 * INHERIT convention, applied always: capture programs put EXPTIME, DATE-OBS, ... in either).
 * Commentary cards of the primary are left out.
 */
export function withPrimaryKeywords(image: FitsHeader, primary: FitsHeader): FitsHeader {
  const out = new FitsHeader([...image.cards]);
  for (const card of primary.cards) {
    if (card.value === undefined || HDU_STRUCTURE.test(card.key) || out.has(card.key)) continue;
    out.cards.push(card);
  }
  return out;
}

export interface LocatedImage {
  /** The image's header: the primary's, an extension's (with the primary's keywords it lacks), or a tiled image's restored one. */
  header: FitsHeader;
  layout: ImageLayout;
  /** Set for a tile-compressed image; null when the samples lie as they are at layout.dataOffset. */
  tiled: TiledImage | null;
}

/** Walks the HDUs of `src` to the first image. `gzip` marks the layout's compression. */
export async function locateImage(src: ByteSource, file: string, gzip: boolean): Promise<LocatedImage> {
  await checkPrimarySignature(src, file);
  const size = src.size ?? Infinity;
  const mark = (layout: ImageLayout, hdu: number, tiled: string | null): ImageLayout => ({
    ...layout,
    hdu,
    compression: gzip && tiled ? `gzip+${tiled}` : gzip ? 'gzip' : tiled,
  });
  const { header: primary, bytes } = await readHeaderAt(src, 0, file);
  const layout = imageLayout(primary, bytes, size, file);
  if (layout !== 'no-data') return { header: primary, layout: mark(layout, 0, null), tiled: null };

  let position = bytes + paddedDataBytes(primary);
  const seen: string[] = [];
  for (let hdu = 1; hdu <= MAX_HDUS && position < size; hdu++) {
    // A stream that ends at an HDU boundary simply has no more extensions.
    const probe = new Uint8Array(1);
    if ((await src.read(probe, position)) === 0) break;
    const { header, bytes: headerBytes } = await readHeaderAt(src, position, file);
    const kind = header.getString('XTENSION')?.trim().toUpperCase() ?? '?';
    const dataOffset = position + headerBytes;
    if (kind === 'BINTABLE' && header.getBoolean('ZIMAGE') === true) {
      compressionOf(header, file); // an algorithm not read is the most useful thing to report
      const imageHeader = withPrimaryKeywords(imageHeaderOfTable(header), primary);
      const restored = imageLayout(imageHeader, dataOffset, Infinity, file);
      if (restored === 'no-data') throw new FitsError('FITS_NO_IMAGE', file, `extension ${hdu} is a compressed image without data (ZNAXIS = 0 or a zero axis)`);
      const tiled = await TiledImage.open(src, header, dataOffset, restored, file);
      return { header: imageHeader, layout: mark(restored, hdu, tiled.description.algorithm), tiled };
    }
    if (kind === 'IMAGE') {
      const ext = imageLayout(header, dataOffset, size, file);
      if (ext !== 'no-data') return { header: withPrimaryKeywords(header, primary), layout: mark(ext, hdu, null), tiled: null };
    }
    seen.push(kind);
    position = dataOffset + paddedDataBytes(header);
  }
  const after = seen.length > 0 ? `; its extensions are ${seen.slice(0, 5).join(', ')}${seen.length > 5 ? ', …' : ''} without image data` : ' and nothing follows it';
  throw new FitsError('FITS_NO_IMAGE', file, `the primary HDU holds no image (NAXIS = 0 or a zero-length axis)${after}`);
}
