// KStars' binary star files (namedstars.dat, unnamedstars.dat of Debian's kstars-data), read in
// place: only the HTM trixels that overlap the query cone are read from disk.
//
// File layout (KStars' BinFileHelper; checked against the installed files, see docs/pcc.md):
//   124 bytes ASCII description · int16 endianness marker 0x4B53 ("SK" on disk when little-endian)
//   · uint8 format version · uint16 field count n · n field descriptors of 16 bytes (name 10
//   bytes NUL-padded, uint8 byte size, uint8 type, int32 scale) · uint32 index size N · N index
//   entries of 12 bytes (uint32 trixel = entry number, uint32 absolute offset of its first
//   record, uint32 record count) · at the data offset: int16 faint magnitude × 100, uint8 HTM
//   level, uint16 (unused) · the records, trixel after trixel, brightest first within one.
// The star record is described by the field table; the star files use RA (int32, hours × scale
// 1e6), Dec (int32, degrees × 1e5), dRA/dDec (int32, mas/yr × 10, dRA being μα·cos δ), mag and
// bv_index (int16 × 100), spectral type, flags. Fields are located by name and decoded with
// their own size and scale, so a reordered table still reads.
//
// Photometry: the installed files carry Tycho VT in `mag` and BT−VT in `bv_index` (compared with
// the Johnson V and B−V of stars.dat for 38 000 common stars: B−V/(BT−VT) ≈ 0.85 and V − VT ≈
// −0.09·(BT−VT) across the colour range). query() converts with the Hipparcos catalogue's linear
// relations V = VT − 0.090·(BT−VT), B−V = 0.850·(BT−VT) (ESA 1997, Vol. 1 §1.3 App. 4).
//
// Invariants: a star is reported once even though KStars writes fast movers into every trixel
// their track crosses (byte-identical copies, dropped by record identity); positions are taken
// as J2000 (the files mix J2000 and J1991.25 epochs without saying which star is which: an error
// of 8.75 yr × proper motion, over 1″ for one star in ten, 11″ for Sirius; PCC's matching
// measures the field's offset and searches a few pixels, so this costs few stars) and moved to
// the query epoch with the stored proper motion. stars.dat (kstars-text.ts) has none of these
// problems and is preferred when installed (find.ts).

import { open, type FileHandle } from 'node:fs/promises';
import { basename } from 'node:path';
import { PccError, throwIfAborted } from '../pcc-errors.js';
import { trixelCount, trixelsInCone } from './htm.js';
import { applyProperMotion, coneTest, type CatalogInfo, type CatalogQuery, type CatalogQueryResult, type CatalogStar, type StarCatalog } from './types.js';

/** First 16 bytes of the description of every KStars binary data file. */
export const KSTARS_BINARY_MAGIC = 'KStars Star Data';

const ENDIAN_MARK = 0x4b53;

export interface BinaryField {
  name: string;
  size: number;
  type: number;
  scale: number;
  offset: number;
}

export interface BinaryHeader {
  file: string;
  littleEndian: boolean;
  version: number;
  fields: BinaryField[];
  recordSize: number;
  /** Per trixel: absolute offset of its first record and its record count. */
  index: { offset: number; count: number }[];
  dataOffset: number;
  faintMag: number;
  htmLevel: number;
  records: number;
}

function bad(file: string, msg: string): PccError {
  return new PccError('PCC_CATALOG_INVALID', `${file}: not a KStars star file as expected (${msg})`);
}

async function readAt(fh: FileHandle, file: string, position: number, length: number): Promise<Buffer> {
  const buf = Buffer.alloc(length);
  let done = 0;
  while (done < length) {
    const { bytesRead } = await fh.read(buf, done, length - done, position + done);
    if (bytesRead === 0) throw bad(file, `truncated at byte ${position + done}`);
    done += bytesRead;
  }
  return buf;
}

/** Reads and checks the header and index of an open KStars binary star file. */
export async function readBinaryHeader(fh: FileHandle, file: string): Promise<BinaryHeader> {
  const pre = await readAt(fh, file, 0, 129);
  if (pre.subarray(0, 16).toString('latin1') !== KSTARS_BINARY_MAGIC) throw bad(file, 'no "KStars Star Data" description');
  const mark = pre.readUInt16LE(124);
  if (mark !== ENDIAN_MARK && pre.readUInt16BE(124) !== ENDIAN_MARK) throw bad(file, `endianness marker 0x${mark.toString(16)}`);
  const le = mark === ENDIAN_MARK;
  const u16 = (b: Buffer, o: number) => (le ? b.readUInt16LE(o) : b.readUInt16BE(o));
  const u32 = (b: Buffer, o: number) => (le ? b.readUInt32LE(o) : b.readUInt32BE(o));
  const version = pre[126]!;
  const nfields = u16(pre, 127);
  if (nfields < 1 || nfields > 64) throw bad(file, `${nfields} fields`);
  const ft = await readAt(fh, file, 129, nfields * 16 + 4);
  const fields: BinaryField[] = [];
  let offset = 0;
  for (let i = 0; i < nfields; i++) {
    const o = i * 16;
    const name = ft.subarray(o, o + 10).toString('latin1').replace(/\0.*$/s, '');
    const size = ft[o + 10]!;
    fields.push({ name, size, type: ft[o + 11]!, scale: le ? ft.readInt32LE(o + 12) : ft.readInt32BE(o + 12), offset });
    offset += size;
  }
  const recordSize = offset;
  const n = u32(ft, nfields * 16);
  const level = Math.round(Math.log(n / 8) / Math.log(4));
  if (!(n >= 8 && trixelCount(level) === n)) throw bad(file, `index of ${n} entries is not an HTM level`);
  const indexStart = 129 + nfields * 16 + 4;
  const ix = await readAt(fh, file, indexStart, n * 12);
  const index: { offset: number; count: number }[] = [];
  let records = 0;
  for (let i = 0; i < n; i++) {
    const id = u32(ix, i * 12);
    if (id !== i) throw bad(file, `index entry ${i} names trixel ${id}`);
    const count = u32(ix, i * 12 + 8);
    index.push({ offset: u32(ix, i * 12 + 4), count });
    records += count;
  }
  const dataOffset = indexStart + n * 12;
  const tail = await readAt(fh, file, dataOffset, 5);
  const faintMag = (le ? tail.readInt16LE(0) : tail.readInt16BE(0)) / 100;
  const htmLevel = tail[2]!;
  if (htmLevel !== level) throw bad(file, `HTM level ${htmLevel} in the data block, ${level} from the index size`);
  return { file, littleEndian: le, version, fields, recordSize, index, dataOffset, faintMag, htmLevel, records };
}

/** Integer decoder of one field of a record (1, 2 or 4 bytes, signed except bytes). */
function fieldReader(h: BinaryHeader, name: string, required: true): (b: Buffer, o: number) => number;
function fieldReader(h: BinaryHeader, name: string, required: false): ((b: Buffer, o: number) => number) | null;
function fieldReader(h: BinaryHeader, name: string, required: boolean): ((b: Buffer, o: number) => number) | null {
  const f = h.fields.find((x) => x.name === name);
  if (!f) {
    if (required) throw bad(h.file, `no ${name} field`);
    return null;
  }
  const scale = f.scale || 1;
  const le = h.littleEndian;
  const at = f.offset;
  switch (f.size) {
    case 4:
      return (b, o) => (le ? b.readInt32LE(o + at) : b.readInt32BE(o + at)) / scale;
    case 2:
      return (b, o) => (le ? b.readInt16LE(o + at) : b.readInt16BE(o + at)) / scale;
    case 1:
      return (b, o) => b[o + at]! / scale;
    default:
      throw bad(h.file, `field ${name} of ${f.size} bytes`);
  }
}

/** Tycho VT, BT−VT → Johnson V, B−V (Hipparcos catalogue Vol. 1 §1.3 App. 4, linear relations). */
export function tychoToJohnson(vt: number, btvt: number): { v: number; bv: number } {
  return { v: vt - 0.09 * btvt, bv: 0.85 * btvt };
}

/** A record as stored (no conversion, no epoch): for tests and tools. */
export interface BinaryRecord {
  trixel: number;
  /** Degrees (RA hours × 15). */
  ra: number;
  dec: number;
  pmRa: number;
  pmDec: number;
  /** Stored magnitude and colour index (VT, BT−VT in the star files). */
  mag: number;
  colour: number;
  key: string;
}

/** Reads the records of the given trixels of one open file (ascending trixel order). */
export async function readTrixels(fh: FileHandle, h: BinaryHeader, trixels: readonly number[], signal?: AbortSignal): Promise<BinaryRecord[]> {
  const ra = fieldReader(h, 'RA', true);
  const dec = fieldReader(h, 'Dec', true);
  const mag = fieldReader(h, 'mag', true);
  const bv = fieldReader(h, 'bv_index', true);
  const pmRa = fieldReader(h, 'dRA', false);
  const pmDec = fieldReader(h, 'dDec', false);
  const out: BinaryRecord[] = [];
  for (const t of trixels) {
    throwIfAborted(signal);
    const e = h.index[t];
    if (!e || e.count === 0) continue;
    const buf = await readAt(fh, h.file, e.offset, e.count * h.recordSize);
    for (let k = 0; k < e.count; k++) {
      const o = k * h.recordSize;
      out.push({
        trixel: t,
        ra: ra(buf, o) * 15,
        dec: dec(buf, o),
        pmRa: pmRa ? pmRa(buf, o) : 0,
        pmDec: pmDec ? pmDec(buf, o) : 0,
        mag: mag(buf, o),
        colour: bv(buf, o),
        // Proper-motion copies are byte-identical records: the record bytes identify a star.
        key: buf.toString('latin1', o, o + h.recordSize),
      });
    }
  }
  return out;
}

async function openFile(file: string): Promise<FileHandle> {
  try {
    return await open(file, 'r');
  } catch (e) {
    throw new PccError('PCC_CATALOG_UNREADABLE', `${file}: ${(e as NodeJS.ErrnoException).code ?? ''} ${(e as Error).message}`, undefined, { cause: e });
  }
}

/** True when `file` starts like a KStars binary data file. */
export async function isKStarsBinary(file: string): Promise<boolean> {
  let fh: FileHandle | undefined;
  try {
    fh = await open(file, 'r');
    const b = Buffer.alloc(16);
    const { bytesRead } = await fh.read(b, 0, 16, 0);
    return bytesRead === 16 && b.toString('latin1') === KSTARS_BINARY_MAGIC;
  } catch {
    return false;
  } finally {
    await fh?.close();
  }
}

/** One or more KStars binary star files (e.g. named + unnamed stars) as one catalogue. */
export class KStarsBinaryCatalog implements StarCatalog {
  readonly id: string;
  private constructor(
    private readonly headers: BinaryHeader[],
    private readonly pkg: string | null,
  ) {
    this.id = `kstars:${headers.map((h) => basename(h.file)).join('+')}`;
  }

  /** Opens and checks the files' headers; PccError when one is missing or not a star file. */
  static async open(files: string[], pkg: string | null = 'kstars-data'): Promise<KStarsBinaryCatalog> {
    const headers: BinaryHeader[] = [];
    for (const file of files) {
      const fh = await openFile(file);
      try {
        const h = await readBinaryHeader(fh, file);
        fieldReader(h, 'RA', true);
        fieldReader(h, 'Dec', true);
        fieldReader(h, 'mag', true);
        fieldReader(h, 'bv_index', true);
        headers.push(h);
      } finally {
        await fh.close();
      }
    }
    return new KStarsBinaryCatalog(headers, pkg);
  }

  describe(): CatalogInfo {
    return {
      id: this.id,
      kind: 'kstars_binary',
      package: this.pkg,
      description: `KStars binary star files (Hipparcos/Tycho, HTM level ${this.headers[0]!.htmLevel} index, read per trixel)`,
      files: this.headers.map((h) => h.file),
      mag_limit: Math.max(...this.headers.map((h) => h.faintMag)),
      // Counts include the proper-motion copies of fast stars (a few hundred).
      stars: this.headers.reduce((a, h) => a + h.records, 0),
      photometry: 'Tycho VT and BT−VT, returned as Johnson V and B−V (V = VT − 0.090·(BT−VT), B−V = 0.850·(BT−VT))',
      epoch: 2000,
      proper_motion: true,
    };
  }

  async query(q: CatalogQuery): Promise<CatalogQueryResult> {
    const epoch = q.epoch ?? 2000;
    const inCone = coneTest(q.cone);
    // A star moves < 11″/yr: widen the cone for the trixel choice and the pre-filter by the
    // largest motion over the epoch difference, test the moved position exactly afterwards.
    const slack = (11 * Math.abs(epoch - 2000)) / 3600;
    const wide = coneTest({ ...q.cone, radius: Math.min(180, q.cone.radius + slack) });
    const lo = q.magMin ?? -Infinity;
    const hi = q.magMax ?? Infinity;
    const stars: CatalogStar[] = [];
    const seen = new Set<string>();
    let rows = 0;
    let moved = 0;
    let trixelsRead = 0;
    let trixelsTotal = 0;
    for (const h of this.headers) {
      const trixels = trixelsInCone({ ...q.cone, radius: Math.min(180, q.cone.radius + slack) }, h.htmLevel);
      trixelsRead += trixels.length;
      trixelsTotal += h.index.length;
      const fh = await openFile(h.file);
      let recs: BinaryRecord[];
      try {
        recs = await readTrixels(fh, h, trixels, q.signal);
      } finally {
        await fh.close();
      }
      for (const r of recs) {
        rows++;
        if (seen.has(r.key)) continue;
        seen.add(r.key);
        if (!wide(r.ra, r.dec)) continue;
        const { v, bv } = tychoToJohnson(r.mag, r.colour);
        if (v < lo || v > hi) continue;
        const move = epoch !== 2000 && (r.pmRa !== 0 || r.pmDec !== 0);
        const [ra, dec] = move ? applyProperMotion(r.ra, r.dec, r.pmRa, r.pmDec, 2000, epoch) : [r.ra, r.dec];
        if (!inCone(ra, dec)) continue;
        if (move) moved++;
        stars.push({ ra, dec, mag: Math.round(v * 1000) / 1000, bv: Math.round(bv * 1000) / 1000, teff: null });
      }
    }
    stars.sort((a, b) => a.mag - b.mag);
    return { stars, rows_read: rows, skipped_no_colour: 0, read: `${trixelsRead} of ${trixelsTotal} HTM trixels (${this.headers.length} file${this.headers.length > 1 ? 's' : ''})`, epoch, proper_motion_applied: moved };
  }
}
