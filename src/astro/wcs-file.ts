// Reads the WCS a solver wrote as a header-only file: astrometry.net's `.wcs` (a FITS file of
// 2880-byte blocks, 80-character cards, no line breaks) and ASTAP's `.wcs` (the same cards, one
// per text line). Both become a FitsHeader; TanWcs.fromHeader then reads the projection.

import { readFile } from 'node:fs/promises';
import { CARD_LENGTH } from '../fits/card.js';
import { FitsHeader } from '../fits/header.js';

export class WcsFileError extends Error {
  override name = 'WcsFileError';
}

/** Card images of a header text: line-separated (ASTAP) or fixed 80-character records (FITS). */
export function cardImages(text: string): string[] {
  const lines = /\r?\n/.test(text) ? text.split(/\r?\n/) : (text.match(new RegExp(`[^]{1,${CARD_LENGTH}}`, 'g')) ?? []);
  return lines.filter((l) => l.length > 0).map((l) => l.slice(0, CARD_LENGTH).padEnd(CARD_LENGTH));
}

export function parseWcsText(text: string): FitsHeader {
  const images = cardImages(text);
  // A text file may lack END (some writers stop at the last card); add one so the parser ends.
  if (!images.some((c) => /^END\s*$/.test(c))) images.push('END'.padEnd(CARD_LENGTH));
  const parsed = FitsHeader.parseImages(images);
  if ('problem' in parsed) throw new WcsFileError(`card ${parsed.cardIndex + 1}: ${parsed.problem}`);
  return parsed.header;
}

export async function readWcsFile(file: string): Promise<FitsHeader> {
  const bytes = await readFile(file);
  // latin1 keeps one character per byte, so fixed-width records stay aligned.
  return parseWcsText(bytes.toString('latin1'));
}
