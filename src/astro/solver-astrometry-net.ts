// astrometry.net adapter: finds `solve-field` and its index files, builds the argument list,
// runs it on an xylist of our detected stars (no image2xy) and reads the `.wcs` it writes.
//
// Invariants:
// - The index folder is always named in a config file written into the solve's temp folder
//   (`add_path <dir>` + `autoindex`), so the solve uses exactly the data that was found, not
//   whatever the binary's compiled-in default config says.
// - `--crpix-center` puts the reference pixel at the image centre; `--cpulimit` bounds the
//   engine, and the caller's wall-clock limit kills the process as a backstop.
// - Outputs other than the WCS are switched off (`none`) so nothing large is written.

import { readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { filesMatching, findBinary } from './find-binary.js';
import type { SolveHints, SolverLookup } from './solver-types.js';

export const INDEX_FILE = /^index.*\.fits$/i;

/** Config files that may name the packaged index folder (Debian first, then a source install). */
export function defaultConfigCandidates(binary: string): string[] {
  return ['/etc/astrometry.cfg', '/usr/local/astrometry/etc/astrometry.cfg', resolve(dirname(binary), '..', 'etc', 'astrometry.cfg')];
}

/** `add_path` folders of an astrometry.net config text. */
export function addPaths(configText: string): string[] {
  const out: string[] = [];
  for (const raw of configText.split('\n')) {
    const line = raw.replace(/#.*/, '').trim();
    const m = /^add_path\s+(.+)$/.exec(line);
    if (m) out.push(m[1]!.trim());
  }
  return out;
}

export async function findAstrometryNet(binConfigured: string, dataDirConfigured: string): Promise<SolverLookup> {
  const solver = 'astrometry_net' as const;
  const binary = await findBinary(binConfigured, ['solve-field']);
  if (!binary) return { ok: false, solver, reason: binConfigured ? `astrometry.astrometry_net_bin ${binConfigured} is not an executable file` : 'solve-field not found on PATH' };
  if (dataDirConfigured) {
    const files = await filesMatching(dataDirConfigured, INDEX_FILE);
    if (files.length === 0) return { ok: false, solver, reason: `no index*.fits files in astrometry.astrometry_net_data_dir ${dataDirConfigured}` };
    return { ok: true, install: { solver, binary, dataDir: dataDirConfigured } };
  }
  const dirs: string[] = [];
  for (const cfg of defaultConfigCandidates(binary)) {
    try {
      dirs.push(...addPaths(await readFile(cfg, 'utf8')));
    } catch {
      // no such config: try the next
    }
  }
  dirs.push('/usr/share/astrometry', '/usr/local/astrometry/data');
  for (const dir of dirs) if ((await filesMatching(dir, INDEX_FILE)).length > 0) return { ok: true, install: { solver, binary, dataDir: dir } };
  return { ok: false, solver, reason: 'no astrometry.net index files found (set astrometry.astrometry_net_data_dir or install an astrometry-data-* package)' };
}

export interface AstrometryNetArgs {
  xylist: string;
  /** Temp folder for every output. */
  dir: string;
  configFile: string;
  wcsFile: string;
  width: number;
  height: number;
  hints: SolveHints;
  mode: 'hinted' | 'blind';
  cpuLimitS: number;
}

/** Scale range of the position-blind attempt: header scale ÷ and × this factor. */
export const BLIND_SCALE_FACTOR = 2.5;

const num = (v: number, digits = 6) => String(Number(v.toFixed(digits)));

/** The argument array of one solve-field run (pure; tested without the binary). */
export function astrometryNetArgs(a: AstrometryNetArgs): string[] {
  const args = [
    a.xylist,
    '--config', a.configFile,
    '--dir', a.dir,
    '--temp-dir', a.dir,
    '--overwrite',
    '--no-plots',
    '--no-remove-lines',
    '--width', String(a.width),
    '--height', String(a.height),
    '--x-column', 'X',
    '--y-column', 'Y',
    '--sort-column', 'FLUX',
    '--crpix-center',
    '--cpulimit', String(Math.max(1, Math.ceil(a.cpuLimitS))),
    '--wcs', a.wcsFile,
    '--new-fits', 'none',
    '--rdls', 'none',
    '--corr', 'none',
    '--match', 'none',
    '--index-xyls', 'none',
  ];
  const h = a.hints;
  if (h.scaleArcsec !== undefined) {
    // Blind (in position) keeps a wide scale range: a scale-free search over every index runs
    // until the CPU limit on fields the installed indexes cannot solve, while a header scale
    // that is off by a binning factor of 2 still falls inside the range.
    const [lo, hi] = a.mode === 'hinted' ? [1 - h.scaleTolerance, 1 + h.scaleTolerance] : [1 / BLIND_SCALE_FACTOR, BLIND_SCALE_FACTOR];
    args.push('--scale-units', 'arcsecperpix', '--scale-low', num(h.scaleArcsec * lo), '--scale-high', num(h.scaleArcsec * hi));
  }
  if (a.mode === 'hinted' && h.ra !== undefined && h.dec !== undefined) args.push('--ra', num(h.ra), '--dec', num(h.dec), '--radius', num(h.radiusDeg));
  return args;
}

export function astrometryNetConfig(dataDir: string): string {
  return `# written by skystack for one solve\nadd_path ${dataDir}\nautoindex\n`;
}

export async function writeAstrometryNetConfig(dir: string, dataDir: string): Promise<string> {
  const file = join(dir, 'astrometry.cfg');
  await writeFile(file, astrometryNetConfig(dataDir));
  return file;
}

/** The index file named in solve-field's log ("solved with index index-…fits"), if any. */
export function indexFromLog(log: string): string | null {
  const m = /solved with index\s+(\S+)/i.exec(log) ?? /(index-[\w.-]+\.fits)/i.exec(log);
  return m ? m[1]!.replace(/\.$/, '') : null;
}
