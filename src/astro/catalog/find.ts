// Which photometric catalogue PCC uses: `pcc.catalog_file` when set (a CSV file, or a KStars star
// file given by name), else the first installed catalogue package found, so PCC works on a
// user's own data without a hand-made catalogue. Installed sources, in order of preference:
//   1. kstars-data's stars.dat: Johnson V and B−V to V = 9 (≈126 000 stars), streamed;
//   2. kstars-data's namedstars.dat + unnamedstars.dat: Tycho photometry to V = 8 (≈42 000
//      stars), HTM-indexed (only the trixels around the field are read).
// stars.dat goes first because it reaches a magnitude deeper (three times the stars per field)
// in the photometric system PCC's colour model is defined in; the binary files serve when it
// is missing. Search folders: SKYSTACK_KSTARS_DATA (`:`-separated; empty = none, which tests
// use to stand for a machine without the package), else /usr/share/kstars,
// /usr/local/share/kstars and ~/.local/share/kstars.
//
// Invariants: discovery never throws (a damaged installed file is listed with the reason it is
// unusable, not offered); openCatalogFile throws PccError (PCC_CATALOG_UNREADABLE/INVALID).

import { access } from 'node:fs/promises';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { isPccError, PccError } from '../pcc-errors.js';
import { CsvCatalog } from './csv.js';
import { isKStarsBinary, KStarsBinaryCatalog } from './kstars-binary.js';
import { KStarsTextCatalog } from './kstars-text.js';
import type { CatalogInfo, StarCatalog } from './types.js';

export const KSTARS_PACKAGE = 'kstars-data';

export function kstarsDataDirs(env: NodeJS.ProcessEnv = process.env): string[] {
  const v = env.SKYSTACK_KSTARS_DATA;
  if (v !== undefined) return v.split(':').filter((d) => d !== '');
  return ['/usr/share/kstars', '/usr/local/share/kstars', join(homedir(), '.local', 'share', 'kstars')];
}

const exists = (f: string) => access(f).then(() => true, () => false);

export interface UnusableCatalog {
  files: string[];
  reason: string;
}

export interface InstalledCatalogs {
  /** Usable catalogues, preferred first. */
  catalogs: StarCatalog[];
  /** Installed files that could not be used, with the reason. */
  unusable: UnusableCatalog[];
  /** Folders searched. */
  searched: string[];
}

/** Installed catalogue packages found on this machine (see the head comment for the order). */
export async function findInstalledCatalogs(dirs: string[] = kstarsDataDirs()): Promise<InstalledCatalogs> {
  const catalogs: StarCatalog[] = [];
  const unusable: UnusableCatalog[] = [];
  const tryOpen = async (files: string[], make: () => Promise<StarCatalog>) => {
    try {
      catalogs.push(await make());
    } catch (e) {
      unusable.push({ files, reason: isPccError(e) ? e.message : String(e) });
    }
  };
  const text: string[] = [];
  const binary: string[][] = [];
  for (const dir of dirs) {
    const starsDat = join(dir, 'stars.dat');
    if (await exists(starsDat)) text.push(starsDat);
    const bin = ['namedstars.dat', 'unnamedstars.dat'].map((f) => join(dir, f));
    const present = [];
    for (const f of bin) if (await exists(f)) present.push(f);
    if (present.length) binary.push(present);
  }
  // Only the first folder's copy of each kind: later folders hold the same package's data.
  if (text[0]) await tryOpen([text[0]], () => KStarsTextCatalog.open(text[0]!, KSTARS_PACKAGE));
  if (binary[0]) await tryOpen(binary[0], () => KStarsBinaryCatalog.open(binary[0]!, KSTARS_PACKAGE));
  return { catalogs, unusable, searched: dirs };
}

/** `pcc.catalog_file` as a catalogue: a KStars binary or text star file by its content, else CSV. */
export async function openCatalogFile(file: string): Promise<StarCatalog> {
  if (!(await exists(file))) throw new PccError('PCC_CATALOG_UNREADABLE', `${file}: no such file`);
  if (await isKStarsBinary(file)) return KStarsBinaryCatalog.open([file], null);
  if (await KStarsTextCatalog.sniff(file)) return KStarsTextCatalog.open(file, null);
  return new CsvCatalog(file);
}

export interface CatalogChoice {
  catalog: StarCatalog | null;
  /** How it was chosen: the configured file, an installed package, or none available. */
  source: 'catalog_file' | 'installed' | 'none';
  installed: InstalledCatalogs;
}

/** The catalogue a PCC run uses: catalog_file > installed packages (preferred first) > none. */
export async function chooseCatalog(catalogFile: string, dirs?: string[]): Promise<CatalogChoice> {
  const installed = await findInstalledCatalogs(dirs);
  if (catalogFile) return { catalog: await openCatalogFile(catalogFile), source: 'catalog_file', installed };
  const first = installed.catalogs[0];
  return first ? { catalog: first, source: 'installed', installed } : { catalog: null, source: 'none', installed };
}

/** What /api/system/info lists: every usable catalogue (with `used_by_default` on the one PCC takes when catalog_file is empty) and the unusable ones. */
export async function catalogCapabilities(catalogFile: string, dirs?: string[]): Promise<{ catalogs: (CatalogInfo & { used_by_default: boolean; source: 'catalog_file' | 'installed' })[]; unusable: UnusableCatalog[]; searched: string[] }> {
  const installed = await findInstalledCatalogs(dirs);
  const list: (CatalogInfo & { used_by_default: boolean; source: 'catalog_file' | 'installed' })[] = [];
  if (catalogFile) {
    try {
      list.push({ ...(await openCatalogFile(catalogFile)).describe(), used_by_default: true, source: 'catalog_file' });
    } catch (e) {
      installed.unusable.unshift({ files: [catalogFile], reason: isPccError(e) ? e.message : String(e) });
    }
  }
  installed.catalogs.forEach((c, i) => list.push({ ...c.describe(), used_by_default: !catalogFile && i === 0, source: 'installed' }));
  return { catalogs: list, unusable: installed.unusable, searched: installed.searched };
}
