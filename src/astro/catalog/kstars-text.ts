// KStars' text star list (stars.dat of Debian's kstars-data: Hipparcos and Tycho stars to V = 9,
// Johnson V and B−V, J2000 positions with proper motions), read in place as a stream.
//
// Format (fixed columns, 0-based, as KStars parses it; checked against the installed file):
//   [0,2) RA h · [2,4) min · [4,9) s · [10] Dec sign · [11,13) deg · [13,15) ′ · [15,19) ″ ·
//   [20,29) μα·cos δ mas/yr · [29,38) μδ mas/yr · [38,45) parallax mas · [46,51) V · [51,56) B−V ·
//   [56,58) spectral type · names after column 72. `#` lines are comments.
// The file is sorted by magnitude (brightest first), so reading stops at the query's faint
// limit; the file has no spatial index, so a cone query reads the file up to that limit once,
// testing the declination band before parsing anything else of a line (≈ 0.1–0.3 s for the
// whole 7.7 MB file).
//
// Invariants: a malformed data line is a PCC_CATALOG_INVALID naming the line (a file of another
// layout fails on its first line instead of yielding no stars); positions are J2000 and moved
// to the query epoch with the proper motions.

import { createReadStream } from 'node:fs';
import { open } from 'node:fs/promises';
import { PccError, throwIfAborted } from '../pcc-errors.js';
import { applyProperMotion, coneTest, type CatalogInfo, type CatalogQuery, type CatalogQueryResult, type CatalogStar, type StarCatalog } from './types.js';

export interface TextRecord {
  ra: number;
  dec: number;
  pmRa: number;
  pmDec: number;
  mag: number;
  bv: number;
}

const num = (s: string): number => (s.trim() === '' ? NaN : Number(s));

/** Declination (degrees) of a data line, or NaN. */
function lineDec(line: string): number {
  const d = num(line.slice(11, 13)) + num(line.slice(13, 15)) / 60 + num(line.slice(15, 19)) / 3600;
  const sign = line[10];
  return sign === '-' ? -d : sign === '+' ? d : NaN;
}

/** Parses one data line; null when it does not follow the layout. */
export function parseStarLine(line: string): TextRecord | null {
  if (line.length < 56) return null;
  const ra = (num(line.slice(0, 2)) + num(line.slice(2, 4)) / 60 + num(line.slice(4, 9)) / 3600) * 15;
  const dec = lineDec(line);
  const r = { ra, dec, pmRa: num(line.slice(20, 29)), pmDec: num(line.slice(29, 38)), mag: num(line.slice(46, 51)), bv: num(line.slice(51, 56)) };
  if (!Object.values(r).every(Number.isFinite) || ra < 0 || ra >= 360 || dec < -90 || dec > 90) return null;
  return r;
}

const isData = (line: string) => line.length > 0 && line[0] !== '#' && line.trim() !== '';

/** First data line and last data line of the file (the faint limit), read from its two ends. */
async function ends(file: string): Promise<{ first: string | null; last: string | null; size: number }> {
  const fh = await open(file, 'r');
  try {
    const { size } = await fh.stat();
    const n = Math.min(size, 64 * 1024);
    const head = Buffer.alloc(n);
    await fh.read(head, 0, n, 0);
    const tail = Buffer.alloc(Math.min(size, 4096));
    await fh.read(tail, 0, tail.length, size - tail.length);
    const first = head.toString('latin1').split('\n').find(isData) ?? null;
    const last = tail.toString('latin1').split('\n').filter(isData).pop() ?? null;
    return { first, last, size };
  } finally {
    await fh.close();
  }
}

export class KStarsTextCatalog implements StarCatalog {
  readonly id: string;
  private constructor(
    private readonly file: string,
    private readonly faint: number | null,
    private readonly pkg: string | null,
  ) {
    this.id = 'kstars:stars.dat';
  }

  /** Checks that `file` is a KStars star list (its first data line parses); PccError otherwise. */
  static async open(file: string, pkg: string | null = 'kstars-data'): Promise<KStarsTextCatalog> {
    let e;
    try {
      e = await ends(file);
    } catch (err) {
      throw new PccError('PCC_CATALOG_UNREADABLE', `${file}: ${(err as NodeJS.ErrnoException).code ?? ''} ${(err as Error).message}`, undefined, { cause: err });
    }
    if (!e.first || !parseStarLine(e.first)) throw new PccError('PCC_CATALOG_INVALID', `${file}: the first data line is not a KStars star list line`);
    const last = e.last ? parseStarLine(e.last) : null;
    return new KStarsTextCatalog(file, last ? last.mag : null, pkg);
  }

  /** True when the first data line of `file` parses as a star list line. */
  static async sniff(file: string): Promise<boolean> {
    try {
      const e = await ends(file);
      return e.first !== null && parseStarLine(e.first) !== null;
    } catch {
      return false;
    }
  }

  describe(): CatalogInfo {
    return {
      id: this.id,
      kind: 'kstars_text',
      package: this.pkg,
      description: 'KStars star list (Hipparcos and Tycho stars, sorted by magnitude, streamed)',
      files: [this.file],
      mag_limit: this.faint,
      stars: null,
      photometry: 'Johnson V and B−V',
      epoch: 2000,
      proper_motion: true,
    };
  }

  async query(q: CatalogQuery): Promise<CatalogQueryResult> {
    const epoch = q.epoch ?? 2000;
    const inCone = coneTest(q.cone);
    const slack = (11 * Math.abs(epoch - 2000)) / 3600; // fastest stars move < 11″/yr
    const r = Math.min(180, q.cone.radius + slack);
    const wide = coneTest({ ...q.cone, radius: r });
    const decLo = q.cone.dec - r;
    const decHi = q.cone.dec + r;
    const lo = q.magMin ?? -Infinity;
    const hi = q.magMax ?? Infinity;
    const stars: CatalogStar[] = [];
    let rows = 0;
    let moved = 0;
    let lineNo = 0;
    let stoppedAt: number | null = null;
    let rest = '';
    // false once a star fainter than magMax is met (sorted by magnitude: nothing after can pass).
    const take = (line: string): boolean => {
      lineNo++;
      if (!isData(line)) return true;
      rows++;
      const dec = lineDec(line);
      if (!Number.isFinite(dec)) throw new PccError('PCC_CATALOG_INVALID', `${this.file}:${lineNo}: not a KStars star list line`);
      const mag = num(line.slice(46, 51));
      if (mag > hi) {
        stoppedAt = mag;
        return false;
      }
      if (dec < decLo || dec > decHi || mag < lo) return true;
      const s = parseStarLine(line);
      if (!s) throw new PccError('PCC_CATALOG_INVALID', `${this.file}:${lineNo}: not a KStars star list line`);
      if (!wide(s.ra, s.dec)) return true;
      const move = epoch !== 2000 && (s.pmRa !== 0 || s.pmDec !== 0);
      const [ra, d] = move ? applyProperMotion(s.ra, s.dec, s.pmRa, s.pmDec, 2000, epoch) : [s.ra, s.dec];
      if (!inCone(ra, d)) return true;
      if (move) moved++;
      stars.push({ ra, dec: d, mag: s.mag, bv: s.bv, teff: null });
      return true;
    };
    const stream = createReadStream(this.file, { encoding: 'latin1', highWaterMark: 1 << 20 });
    try {
      let going = true;
      for await (const chunk of stream as AsyncIterable<string>) {
        throwIfAborted(q.signal);
        const lines = (rest + chunk).split('\n');
        rest = lines.pop()!;
        for (const line of lines) if (!(going = take(line))) break;
        if (!going) break;
      }
      if (going && rest !== '') take(rest);
    } catch (e) {
      if (e instanceof PccError) throw e;
      throw new PccError('PCC_CATALOG_UNREADABLE', `${this.file}: ${(e as Error).message}`, undefined, { cause: e });
    } finally {
      stream.destroy();
    }
    return { stars, rows_read: rows, skipped_no_colour: 0, read: stoppedAt === null ? 'whole file (streamed)' : `up to V ${stoppedAt} (file sorted by magnitude)`, epoch, proper_motion_applied: moved };
  }
}
