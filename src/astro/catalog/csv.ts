// Local photometric catalogue for PCC: a CSV file with a header line naming at least `ra`, `dec`,
// `mag` and one of `bv` / `teff` (any order, case-insensitive, other columns ignored). ra/dec are
// degrees J2000, mag is V, bv is B−V, teff in kelvin (used when present and the row's bv is blank);
// optional `pmra` (μα·cos δ) and `pmdec` columns in mas/yr move the stars to the query epoch.
//
// The file is streamed line by line and filtered while reading (cone and magnitude), so a large
// all-sky extract never sits in memory. Blank lines and `#` comments are skipped; a row with a
// blank colour is skipped and counted; a malformed number or an out-of-range coordinate is a
// PCC_CATALOG_INVALID naming the line.

import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { PccError } from '../pcc-errors.js';
import { applyProperMotion, coneTest, type CatalogInfo, type CatalogQuery, type CatalogQueryResult, type CatalogStar, type StarCatalog } from './types.js';

export type { CatalogStar } from './types.js';

/** A CSV row: the star at J2000 and its proper motion (0 when the file has no pm columns). */
export interface CsvStar extends CatalogStar {
  pm_ra: number;
  pm_dec: number;
}

export interface CatalogRead {
  stars: CsvStar[];
  /** Data rows read (before the filter). */
  rows: number;
  /** Rows without a usable colour (blank bv and teff). */
  skipped_no_colour: number;
}

function cell(s: string | undefined): string {
  const t = (s ?? '').trim();
  return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1).trim() : t;
}

export async function readCatalogCsv(file: string, keep: (s: CsvStar) => boolean = () => true, signal?: AbortSignal): Promise<CatalogRead> {
  let stream;
  try {
    stream = createReadStream(file, { encoding: 'utf8' });
    await new Promise<void>((resolve, reject) => {
      stream!.once('open', () => resolve());
      stream!.once('error', reject);
    });
  } catch (e) {
    throw new PccError('PCC_CATALOG_UNREADABLE', `${file}: ${(e as NodeJS.ErrnoException).code ?? ''} ${(e as Error).message}`, undefined, { cause: e });
  }
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let col: { ra: number; dec: number; mag: number; bv: number; teff: number; pmra: number; pmdec: number } | null = null;
  const stars: CsvStar[] = [];
  let rows = 0;
  let skipped = 0;
  let lineNo = 0;
  try {
    for await (const raw of lines) {
      lineNo++;
      const line = raw.trim();
      if (line === '' || line.startsWith('#')) continue;
      const parts = line.split(',').map(cell);
      if (!col) {
        const names = parts.map((p) => p.toLowerCase());
        const at = (n: string) => names.indexOf(n);
        col = { ra: at('ra'), dec: at('dec'), mag: at('mag'), bv: at('bv'), teff: at('teff'), pmra: at('pmra'), pmdec: at('pmdec') };
        const missing = (['ra', 'dec', 'mag'] as const).filter((k) => col![k] < 0);
        if (missing.length > 0 || (col.bv < 0 && col.teff < 0)) {
          throw new PccError('PCC_CATALOG_INVALID', `${file}: header line ${lineNo} must name ra, dec, mag and bv or teff (missing: ${[...missing, ...(col.bv < 0 && col.teff < 0 ? ['bv|teff'] : [])].join(', ')})`);
        }
        continue;
      }
      if (signal?.aborted) throw new PccError('PCC_CANCELLED', 'cancelled');
      rows++;
      const num = (i: number, name: string, required: boolean): number | null => {
        const s = i >= 0 ? (parts[i] ?? '') : '';
        if (s === '') {
          if (required) throw new PccError('PCC_CATALOG_INVALID', `${file}:${lineNo}: ${name} is empty`);
          return null;
        }
        const v = Number(s);
        if (!Number.isFinite(v)) throw new PccError('PCC_CATALOG_INVALID', `${file}:${lineNo}: ${name} "${s}" is not a number`);
        return v;
      };
      const ra = num(col.ra, 'ra', true)!;
      const dec = num(col.dec, 'dec', true)!;
      const mag = num(col.mag, 'mag', true)!;
      if (ra < 0 || ra > 360 || dec < -90 || dec > 90) throw new PccError('PCC_CATALOG_INVALID', `${file}:${lineNo}: ra ${ra} / dec ${dec} out of range (degrees, ra 0..360, dec −90..90)`);
      const bv = num(col.bv, 'bv', false);
      const teff = num(col.teff, 'teff', false);
      if (teff !== null && !(teff > 0)) throw new PccError('PCC_CATALOG_INVALID', `${file}:${lineNo}: teff ${teff} must be positive (kelvin)`);
      if (bv === null && teff === null) {
        skipped++;
        continue;
      }
      const star: CsvStar = { ra, dec, mag, bv, teff, pm_ra: num(col.pmra, 'pmra', false) ?? 0, pm_dec: num(col.pmdec, 'pmdec', false) ?? 0 };
      if (keep(star)) stars.push(star);
    }
  } catch (e) {
    if (e instanceof PccError) throw e;
    throw new PccError('PCC_CATALOG_UNREADABLE', `${file}: ${(e as Error).message}`, undefined, { cause: e });
  } finally {
    lines.close();
    stream.destroy();
  }
  if (!col) throw new PccError('PCC_CATALOG_INVALID', `${file}: no header line`);
  return { stars, rows, skipped_no_colour: skipped };
}

/** A user's CSV file (pcc.catalog_file) as a catalogue: streamed and filtered on every query. */
export class CsvCatalog implements StarCatalog {
  readonly id: string;
  constructor(private readonly file: string) {
    this.id = `catalog_file:${file}`;
  }

  describe(): CatalogInfo {
    return { id: this.id, kind: 'csv', package: null, description: 'CSV file ra,dec,mag,bv|teff (pcc.catalog_file)', files: [this.file], mag_limit: null, stars: null, photometry: 'Johnson V and B−V (or teff) as given', epoch: 2000, proper_motion: null };
  }

  async query(q: CatalogQuery): Promise<CatalogQueryResult> {
    const epoch = q.epoch ?? 2000;
    const slack = (11 * Math.abs(epoch - 2000)) / 3600;
    const wide = coneTest({ ...q.cone, radius: Math.min(180, q.cone.radius + slack) });
    const inCone = coneTest(q.cone);
    const lo = q.magMin ?? -Infinity;
    const hi = q.magMax ?? Infinity;
    const cat = await readCatalogCsv(this.file, (s) => s.mag >= lo && s.mag <= hi && wide(s.ra, s.dec), q.signal);
    const stars: CatalogStar[] = [];
    let moved = 0;
    for (const s of cat.stars) {
      const move = epoch !== 2000 && (s.pm_ra !== 0 || s.pm_dec !== 0);
      const [ra, dec] = move ? applyProperMotion(s.ra, s.dec, s.pm_ra, s.pm_dec, 2000, epoch) : [s.ra, s.dec];
      if (!inCone(ra, dec)) continue;
      if (move) moved++;
      stars.push({ ra, dec, mag: s.mag, bv: s.bv, teff: s.teff });
    }
    return { stars, rows_read: cat.rows, skipped_no_colour: cat.skipped_no_colour, read: 'whole file (streamed)', epoch, proper_motion_applied: moved };
  }
}
