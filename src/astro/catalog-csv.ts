// Local photometric catalogue for PCC: a CSV file with a header line naming at least `ra`, `dec`,
// `mag` and one of `bv` / `teff` (any order, case-insensitive, other columns ignored). ra/dec are
// degrees J2000, mag is V, bv is B−V, teff in kelvin (used when present and the row's bv is blank).
//
// The file is streamed line by line and filtered while reading (cone and magnitude), so a large
// all-sky extract never sits in memory. Blank lines and `#` comments are skipped; a row with a
// blank colour is skipped and counted; a malformed number or an out-of-range coordinate is a
// PCC_CATALOG_INVALID naming the line.

import { createReadStream } from 'node:fs';
import { createInterface } from 'node:readline';
import { PccError } from './pcc-errors.js';

export interface CatalogStar {
  ra: number;
  dec: number;
  mag: number;
  bv: number | null;
  teff: number | null;
}

export interface CatalogRead {
  stars: CatalogStar[];
  /** Data rows read (before the filter). */
  rows: number;
  /** Rows without a usable colour (blank bv and teff). */
  skipped_no_colour: number;
}

function cell(s: string | undefined): string {
  const t = (s ?? '').trim();
  return t.length >= 2 && t.startsWith('"') && t.endsWith('"') ? t.slice(1, -1).trim() : t;
}

export async function readCatalogCsv(file: string, keep: (s: CatalogStar) => boolean = () => true, signal?: AbortSignal): Promise<CatalogRead> {
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
  let col: { ra: number; dec: number; mag: number; bv: number; teff: number } | null = null;
  const stars: CatalogStar[] = [];
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
        col = { ra: at('ra'), dec: at('dec'), mag: at('mag'), bv: at('bv'), teff: at('teff') };
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
      const star: CatalogStar = { ra, dec, mag, bv, teff };
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
