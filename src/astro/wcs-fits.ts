// Writing a solved WCS into FITS files (the stacked outputs) and as a header-only `.wcs` file.
// The image is rewritten atomically (writeFits: temp file + rename) with its samples untouched:
// the native array is written back, so BITPIX and every value stay the same. Files whose
// samples need BSCALE/BZERO other than the unsigned-integer convention are refused (their
// stored values would lose their scaling), as are blank-marked integer images.

import { FitsHeader } from '../fits/header.js';
import { FitsError, readFitsNative, writeFits } from '../fits/index.js';
import { isUnsignedConvention } from '../fits/layout.js';
import { writeFileAtomic } from '../pipeline/atomic.js';
import type { TanWcs } from './wcs.js';

/** Adds the WCS (replacing any earlier one), PLTSOLVD = T and HISTORY lines to `file`. */
export async function writeWcsIntoFits(file: string, wcs: TanWcs, history: readonly string[] = []): Promise<void> {
  const img = await readFitsNative(file);
  const { layout } = img;
  const plain = layout.bscale === 1 && (layout.bzero === 0 || isUnsignedConvention(layout)) && layout.blank === undefined;
  if (!plain) throw new FitsError('FITS_BAD_IMAGE', file, 'scaled (BSCALE/BZERO) or BLANK-marked images are not rewritten with a WCS');
  const header = img.header.clone();
  wcs.writeTo(header);
  header.set('PLTSOLVD', true, { comment: 'plate solved' });
  for (const line of history) header.addHistory(line.slice(0, 72));
  await writeFits(file, { width: layout.width, height: layout.height, planes: layout.planes, data: img.data }, { header, cube: layout.axes.length >= 3 });
}

/** A header-only FITS file (NAXIS = 0) holding the WCS and the image size, like solve-field's `.wcs`. */
export function wcsFileBytes(wcs: TanWcs, width: number, height: number): Uint8Array {
  const h = new FitsHeader();
  h.set('SIMPLE', true);
  h.set('BITPIX', 8);
  h.set('NAXIS', 0);
  wcs.writeTo(h);
  h.set('IMAGEW', width, { comment: 'image width [px]' });
  h.set('IMAGEH', height, { comment: 'image height [px]' });
  h.set('PLTSOLVD', true);
  return h.toBytes();
}

export async function writeWcsFile(file: string, wcs: TanWcs, width: number, height: number): Promise<void> {
  await writeFileAtomic(file, wcsFileBytes(wcs, width, height));
}
