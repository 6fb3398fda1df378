// Writes an astrometry.net "xylist": a FITS file with an empty primary HDU and one BINTABLE
// extension with columns X, Y (FITS 1-based pixel coordinates, float64) and FLUX (float32),
// rows brightest first, plus IMAGEW/IMAGEH cards. solve-field solves such a list directly
// (no image2xy source extraction), which is faster and uses our own star detection.
// Only what solve-field reads is written; the file is a valid FITS file (2880-byte blocks,
// big-endian binary data).

import { writeFile } from 'node:fs/promises';
import { FitsHeader } from '../fits/header.js';
import { BLOCK_LENGTH } from '../fits/card.js';

export interface XyStar {
  /** 0-based pixel coordinates (this project's convention); written as x + 1, y + 1. */
  x: number;
  y: number;
  flux: number;
}

function padBlock(bytes: Uint8Array, fill: number): Uint8Array {
  const size = Math.ceil(bytes.length / BLOCK_LENGTH) * BLOCK_LENGTH;
  if (size === bytes.length) return bytes;
  const out = new Uint8Array(size).fill(fill);
  out.set(bytes);
  return out;
}

export function xylistBytes(stars: readonly XyStar[], width: number, height: number): Uint8Array {
  const primary = new FitsHeader();
  primary.set('SIMPLE', true);
  primary.set('BITPIX', 8);
  primary.set('NAXIS', 0);
  primary.set('EXTEND', true);
  primary.set('IMAGEW', width);
  primary.set('IMAGEH', height);
  const rowBytes = 8 + 8 + 4;
  const table = new FitsHeader();
  table.set('XTENSION', 'BINTABLE');
  table.set('BITPIX', 8);
  table.set('NAXIS', 2);
  table.set('NAXIS1', rowBytes);
  table.set('NAXIS2', stars.length);
  table.set('PCOUNT', 0);
  table.set('GCOUNT', 1);
  table.set('TFIELDS', 3);
  table.set('TTYPE1', 'X');
  table.set('TFORM1', '1D');
  table.set('TTYPE2', 'Y');
  table.set('TFORM2', '1D');
  table.set('TTYPE3', 'FLUX');
  table.set('TFORM3', '1E');
  table.set('IMAGEW', width);
  table.set('IMAGEH', height);
  const data = new Uint8Array(rowBytes * stars.length);
  const view = new DataView(data.buffer);
  stars.forEach((s, i) => {
    view.setFloat64(i * rowBytes, s.x + 1, false);
    view.setFloat64(i * rowBytes + 8, s.y + 1, false);
    view.setFloat32(i * rowBytes + 16, s.flux, false);
  });
  const parts = [padBlock(primary.toBytes(), 0x20), padBlock(table.toBytes(), 0x20), padBlock(data, 0)];
  const out = new Uint8Array(parts.reduce((a, p) => a + p.length, 0));
  let off = 0;
  for (const p of parts) {
    out.set(p, off);
    off += p.length;
  }
  return out;
}

export async function writeXylist(file: string, stars: readonly XyStar[], width: number, height: number): Promise<void> {
  await writeFile(file, xylistBytes(stars, width, height));
}
