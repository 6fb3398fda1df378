// The binary-table side of a tile-compressed image: where each column sits in a table row
// (TFORMn), and the variable-length array descriptors (P: two 32-bit, Q: two 64-bit integers,
// element count then byte offset into the heap) that point at each tile's bytes.
// Only what the tiled-image convention needs is read; a malformed TFORM is a FitsError.

import { FitsError } from '../errors.js';
import type { FitsHeader } from '../header.js';

/** Bytes per element of the binary-table type letters (X is bits, counted separately). */
const TYPE_BYTES: Record<string, number> = { L: 1, B: 1, I: 2, J: 4, K: 8, A: 1, E: 4, D: 8, C: 8, M: 16 };

export interface Column {
  name: string;
  /** Byte offset inside a table row. */
  offset: number;
  /** Fixed-size element type, or the element type of a variable-length array. */
  type: string;
  repeat: number;
  /** 'P' or 'Q' for a variable-length array descriptor, null for a fixed-size field. */
  descriptor: 'P' | 'Q' | null;
}

export interface TableLayout {
  rowBytes: number;
  rows: number;
  heapOffset: number;
  heapBytes: number;
  columns: Map<string, Column>;
}

export function tableLayout(h: FitsHeader, file: string): TableLayout {
  const int = (key: string, fallback?: number): number => {
    const v = h.get(key);
    if (v === undefined && fallback !== undefined) return fallback;
    if (typeof v !== 'number' || !Number.isInteger(v) || v < 0) {
      throw new FitsError(v === undefined ? 'FITS_MISSING_KEYWORD' : 'FITS_BAD_KEYWORD_VALUE', file, `compressed image table: ${key} = ${String(v)} must be a non-negative integer`);
    }
    return v;
  };
  const rowBytes = int('NAXIS1');
  const rows = int('NAXIS2');
  const heapBytes = int('PCOUNT', 0);
  const heapOffset = int('THEAP', rowBytes * rows);
  const fields = int('TFIELDS');
  const columns = new Map<string, Column>();
  let offset = 0;
  for (let i = 1; i <= fields; i++) {
    const form = h.getString(`TFORM${i}`)?.trim().toUpperCase();
    if (form === undefined) throw new FitsError('FITS_MISSING_KEYWORD', file, `compressed image table: TFORM${i} is missing`);
    const m = /^(\d*)([PQ]?)([LXBIJKAEDCM])(?:\(\d*\))?$/.exec(form);
    if (!m) throw new FitsError('FITS_BAD_KEYWORD_VALUE', file, `compressed image table: TFORM${i} = '${form}' is not a binary-table format`);
    const repeat = m[1] === '' ? 1 : Number(m[1]);
    const descriptor = (m[2] || null) as 'P' | 'Q' | null;
    const type = m[3]!;
    const bytes = descriptor === 'P' ? 8 * repeat : descriptor === 'Q' ? 16 * repeat : type === 'X' ? Math.ceil(repeat / 8) : TYPE_BYTES[type]! * repeat;
    const name = h.getString(`TTYPE${i}`)?.trim().toUpperCase() ?? '';
    if (name !== '' && !columns.has(name)) columns.set(name, { name, offset, type, repeat, descriptor });
    offset += bytes;
  }
  if (offset !== rowBytes) throw new FitsError('FITS_BAD_KEYWORD_VALUE', file, `compressed image table: TFORMs add up to ${offset} bytes per row, NAXIS1 = ${rowBytes}`);
  return { rowBytes, rows, heapOffset, heapBytes, columns };
}

export const elementBytes = (type: string): number => TYPE_BYTES[type] ?? 1;

/** A variable-length array: `count` elements at `offset` bytes into the heap. */
export interface Descriptor {
  count: number;
  offset: number;
}

/** The descriptor of `column` in the table row starting at `row[at]`. */
export function readDescriptor(view: DataView, at: number, column: Column): Descriptor {
  const p = at + column.offset;
  if (column.descriptor === 'P') return { count: view.getUint32(p), offset: view.getUint32(p + 4) };
  // Q: 64-bit values; anything at or above 2^53 is beyond any real heap and fails the bounds check.
  const big = (q: number) => view.getUint32(q) * 2 ** 32 + view.getUint32(q + 4);
  return { count: big(p), offset: big(p + 8) };
}

/** A fixed-size numeric field (ZSCALE, ZZERO as D; ZBLANK as J/I/K) of the row at `row[at]`. */
export function readNumber(view: DataView, at: number, column: Column): number {
  const p = at + column.offset;
  switch (column.type) {
    case 'D':
      return view.getFloat64(p);
    case 'E':
      return view.getFloat32(p);
    case 'J':
      return view.getInt32(p);
    case 'I':
      return view.getInt16(p);
    case 'B':
      return view.getUint8(p);
    case 'K':
      return Number(view.getBigInt64(p));
    default:
      return NaN;
  }
}
