// ASTAP adapter: finds `astap_cli` (or `astap`) and its star database, builds the argument
// list (as the predecessor called it: -f <image> -d <data dir> -r <radius>, plus the centre and field
// hints), and reads the `<base>.wcs` it writes (text lines or FITS records, wcs-file.ts).
//
// Invariants:
// - Hints in ASTAP's units: -ra in hours, -spd = Dec + 90 (south pole distance), -fov = the
//   image HEIGHT in degrees (ASTAP's "field diameter" is the height).
// - A solve counts only with exit code 0, a `.wcs` file and no `PLTSOLVD = F` card in it.
// - Debian's astap-cli ships no star database, so a missing database is `solver_missing`.

import { dirname } from 'node:path';
import { filesMatching, findBinary } from './find-binary.js';
import type { SolveHints, SolverLookup } from './solver-types.js';

/** Star database files (D05…D80, H17/H18, V50, G05, W08 series). */
export const ASTAP_DB_FILE = /\.(1476|290|wdb)$/i;
const DEFAULT_DIRS = ['/opt/astap', '/usr/share/astap', '/usr/local/share/astap'];

export async function findAstap(binConfigured: string, dataDirConfigured: string): Promise<SolverLookup> {
  const solver = 'astap' as const;
  const binary = await findBinary(binConfigured, ['astap_cli', 'astap'], DEFAULT_DIRS);
  if (!binary) return { ok: false, solver, reason: binConfigured ? `astrometry.astap_bin ${binConfigured} is not an executable file` : 'astap_cli / astap not found on PATH or in /opt/astap' };
  const dirs = dataDirConfigured ? [dataDirConfigured] : [dirname(binary), ...DEFAULT_DIRS];
  for (const dir of dirs) if ((await filesMatching(dir, ASTAP_DB_FILE)).length > 0) return { ok: true, install: { solver, binary, dataDir: dir } };
  return { ok: false, solver, reason: dataDirConfigured ? `no ASTAP star database (*.1476, *.290) in astrometry.astap_data_dir ${dataDirConfigured}` : `no ASTAP star database found (set astrometry.astap_data_dir; looked in ${dirs.join(', ')})` };
}

export interface AstapArgs {
  image: string;
  dataDir: string;
  /** Output base path: ASTAP writes <base>.wcs and <base>.ini. */
  outBase: string;
  height: number;
  hints: SolveHints;
  mode: 'hinted' | 'blind';
}

const num = (v: number, digits = 6) => String(Number(v.toFixed(digits)));

/** The argument array of one ASTAP run (pure; tested without the binary). */
export function astapArgs(a: AstapArgs): string[] {
  const h = a.hints;
  const hinted = a.mode === 'hinted' && h.ra !== undefined && h.dec !== undefined;
  const args = ['-f', a.image, '-d', a.dataDir, '-o', a.outBase, '-r', hinted ? num(Math.min(h.radiusDeg, 180)) : '180'];
  // The field size is kept in the blind attempt too: ASTAP searches position, not scale.
  args.push('-fov', h.scaleArcsec !== undefined ? num((a.height * h.scaleArcsec) / 3600) : '0');
  if (hinted) args.push('-ra', num(h.ra! / 15), '-spd', num(h.dec! + 90));
  args.push('-z', '0');
  return args;
}

/** The error line of ASTAP's `.ini` (ERROR=… / WARNING=…), for the log. */
export function astapIniMessage(ini: string): string | null {
  const m = /^(ERROR|WARNING)=(.*)$/m.exec(ini);
  return m ? `${m[1]}: ${m[2]!.trim()}` : null;
}
