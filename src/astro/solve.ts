// Plate solving as a library call (ASTROMETRY phase, later the REST API): picks the solver by
// `astrometry.solver` (auto | astrometry_net | astap), runs it with the header hints first and
// blind as the fallback, and returns the TAN(+SIP) WCS or throws a typed SolveError.
//
// Invariants:
// - auto tries every installed solver in the order astrometry.net, ASTAP until one solves; an
//   explicitly chosen solver is the only one tried. None installed → SolveError solver_missing.
// - One wall-clock budget (`timeoutS`) covers all attempts; running out → `timeout`. An aborted
//   signal kills the running child and ends with `cancelled`.
// - Attempt order per solver: `hinted` (header centre within the search radius, scale within
//   its tolerance) when any hint exists, then `blind` (no position; the scale, when known,
//   widened to ÷/× 2.5 for astrometry.net and kept for ASTAP, which needs the field size).
// - Everything a solver writes lives in one temp folder, removed afterwards whatever happens.

import { access, mkdtemp, readFile, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runChild } from './child.js';
import { astapArgs, astapIniMessage, findAstap } from './solver-astap.js';
import { astrometryNetArgs, findAstrometryNet, indexFromLog, writeAstrometryNetConfig } from './solver-astrometry-net.js';
import { lastLines, SolveError, type SolveAttempt, type SolveInput, type SolveResult, type SolverInstall, type SolverLookup, type SolverName } from './solver-types.js';
import { readWcsFile } from './wcs-file.js';
import { TanWcs } from './wcs.js';
import { writeXylist } from './xylist.js';

export * from './solver-types.js';

export interface SolverConfig {
  solver: 'auto' | SolverName;
  astrometry_net_bin: string;
  astrometry_net_data_dir: string;
  astap_bin: string;
  astap_data_dir: string;
}

/** Most stars handed to astrometry.net (brightest first): plenty for a match, keeps it fast. */
export const MAX_XY_STARS = 500;

/** The solvers `cfg` allows, in trial order, each found or with the reason it is missing. */
export async function lookupSolvers(cfg: SolverConfig): Promise<SolverLookup[]> {
  const out: SolverLookup[] = [];
  if (cfg.solver !== 'astap') out.push(await findAstrometryNet(cfg.astrometry_net_bin, cfg.astrometry_net_data_dir));
  if (cfg.solver !== 'astrometry_net') out.push(await findAstap(cfg.astap_bin, cfg.astap_data_dir));
  return out;
}

/**
 * The attempts for one solver: hinted first when the header gives hints that solver can use
 * (astrometry.net: a position or a scale; ASTAP: a position, since a scale alone gives it the same
 * arguments as its blind attempt), then blind.
 */
function modes(solver: SolverName, input: SolveInput): ('hinted' | 'blind')[] {
  const h = input.hints;
  const position = h.ra !== undefined && h.dec !== undefined;
  const hasHint = solver === 'astap' ? position : position || h.scaleArcsec !== undefined;
  return hasHint ? ['hinted', 'blind'] : ['blind'];
}

async function exists(file: string): Promise<boolean> {
  return access(file).then(() => true, () => false);
}

async function attemptOne(install: SolverInstall, mode: 'hinted' | 'blind', input: SolveInput, dir: string, deadline: number, prepared: Map<string, string>, attempts: SolveAttempt[]): Promise<{ wcs: TanWcs; index: string | null } | null> {
  const remainingMs = deadline - Date.now();
  if (remainingMs <= 0) throw new SolveError('timeout', `time limit reached before the ${mode} ${install.solver} attempt`, attempts);
  let args: string[];
  let wcsFile: string;
  let iniFile: string | null = null;
  if (install.solver === 'astrometry_net') {
    let xy = prepared.get('xylist');
    if (!xy) {
      xy = join(dir, 'stars.xyls');
      await writeXylist(xy, input.stars.slice(0, MAX_XY_STARS), input.width, input.height);
      prepared.set('xylist', xy);
    }
    let cfgFile = prepared.get('an-config');
    if (!cfgFile) {
      cfgFile = await writeAstrometryNetConfig(dir, install.dataDir!);
      prepared.set('an-config', cfgFile);
    }
    wcsFile = join(dir, `solution-${mode}.wcs`);
    args = astrometryNetArgs({ xylist: xy, dir, configFile: cfgFile, wcsFile, width: input.width, height: input.height, hints: input.hints, mode, cpuLimitS: remainingMs / 1000 });
  } else {
    let image = prepared.get('image');
    if (!image) {
      image = await input.writeImage(dir);
      prepared.set('image', image);
    }
    const base = join(dir, `astap-${mode}`);
    wcsFile = `${base}.wcs`;
    iniFile = `${base}.ini`;
    args = astapArgs({ image, dataDir: install.dataDir!, outBase: base, height: input.height, hints: input.hints, mode });
  }
  await unlink(wcsFile).catch(() => undefined);
  const r = await runChild(install.binary, args, { cwd: dir, timeoutMs: remainingMs, ...(input.signal ? { signal: input.signal } : {}) });
  let log = lastLines(`${r.stdout}\n${r.stderr}`);
  if (iniFile) {
    const msg = astapIniMessage(await readFile(iniFile, 'utf8').catch(() => ''));
    if (msg) log += `\n${msg}`;
  }
  const attempt: SolveAttempt = { solver: install.solver, mode, args, exitCode: r.code, durationMs: r.durationMs, solved: false, log };
  attempts.push(attempt);
  if (r.aborted) throw new SolveError('cancelled', `${install.solver} cancelled`, attempts);
  if (r.timedOut) throw new SolveError('timeout', `${install.solver} did not finish within the time limit`, attempts);
  if (r.code !== 0 || !(await exists(wcsFile))) return null;
  const header = await readWcsFile(wcsFile);
  if (header.getBoolean('PLTSOLVD') === false) return null;
  const wcs = TanWcs.fromHeader(header);
  if (!wcs) throw new SolveError('solver_failed', `${install.solver} wrote ${wcsFile} without a readable TAN WCS`, attempts);
  attempt.solved = true;
  const index = install.solver === 'astrometry_net' ? indexFromLog(`${r.stdout}\n${r.stderr}`) : install.dataDir;
  return { wcs, index };
}

/** Solves the field with the configured solver(s); see the file comment for the rules. */
export async function plateSolve(cfg: SolverConfig, input: SolveInput, lookups?: SolverLookup[]): Promise<SolveResult> {
  const found = lookups ?? (await lookupSolvers(cfg));
  const installs = found.filter((l): l is Extract<SolverLookup, { ok: true }> => l.ok).map((l) => l.install);
  if (installs.length === 0) {
    throw new SolveError('solver_missing', found.map((l) => (l.ok ? '' : `${l.solver}: ${l.reason}`)).join('; '));
  }
  const started = Date.now();
  const deadline = started + input.timeoutS * 1000;
  const attempts: SolveAttempt[] = [];
  const dir = await mkdtemp(join(tmpdir(), 'skystack-solve-'));
  try {
    for (const install of installs) {
      const prepared = new Map<string, string>();
      for (const mode of modes(install.solver, input)) {
        if (install.solver === 'astrometry_net' && input.stars.length < 4) break;
        const solved = await attemptOne(install, mode, input, dir, deadline, prepared, attempts);
        if (solved) return { solver: install.solver, wcs: solved.wcs, index: solved.index, binary: install.binary, dataDir: install.dataDir, attempts, durationMs: Date.now() - started };
      }
    }
    const tried = installs.map((i) => i.solver).join(', ');
    const why = input.stars.length < 4 ? ` (${input.stars.length} stars detected)` : '';
    throw new SolveError('solver_failed', `no solution from ${tried}${why}`, attempts);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
