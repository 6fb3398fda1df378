// Types shared by the plate-solver adapters (solver-astrometry-net.ts, solver-astap.ts) and
// their dispatcher (solve.ts). A solve either returns a SolveResult or throws a SolveError whose
// code is a closed union, so the ASTROMETRY phase and the API can branch on it.

import type { TanWcs } from './wcs.js';
import type { XyStar } from './xylist.js';

export type SolverName = 'astrometry_net' | 'astap';

/** Where the hints came from, for the diagnostics. */
export interface SolveHints {
  /** Approximate field centre (degrees), from the FITS header; absent: blind in position. */
  ra?: number;
  dec?: number;
  /** Approximate pixel scale (arcsec/px), e.g. from FOCALLEN and XPIXSZ; absent: any scale. */
  scaleArcsec?: number;
  /** Relative tolerance on the scale hint (0.1 = ±10 %). */
  scaleTolerance: number;
  /** Search radius around the centre hint in degrees (≥ 180: the whole sky). */
  radiusDeg: number;
}

export interface SolveInput {
  width: number;
  height: number;
  /** Detected stars, brightest first, 0-based pixel coordinates (astrometry.net solves these). */
  stars: readonly XyStar[];
  /** Writes a FITS image of the field into `dir` and returns its path (ASTAP solves an image). */
  writeImage(dir: string): Promise<string>;
  hints: SolveHints;
  /** Wall-clock limit for the whole solve, all attempts together. */
  timeoutS: number;
  signal?: AbortSignal;
}

export interface SolveAttempt {
  solver: SolverName;
  /** 'hinted' uses the header's centre (and scale); 'blind' searches the whole sky. */
  mode: 'hinted' | 'blind';
  args: string[];
  exitCode: number | null;
  durationMs: number;
  solved: boolean;
  /** Last lines of the solver's output. */
  log: string;
}

export interface SolveResult {
  solver: SolverName;
  wcs: TanWcs;
  /** Index file (astrometry.net) or star database (ASTAP) that produced the match, when known. */
  index: string | null;
  binary: string;
  dataDir: string | null;
  attempts: SolveAttempt[];
  durationMs: number;
}

export type SolveErrorCode =
  | 'solver_missing' // no binary or no catalogue data for the chosen solver
  | 'solver_failed' // the solver ran and found no solution (or crashed, or its output was unreadable)
  | 'timeout' // the time limit ran out
  | 'cancelled';

export class SolveError extends Error {
  override name = 'SolveError';
  constructor(
    readonly code: SolveErrorCode,
    message: string,
    readonly attempts: SolveAttempt[] = [],
  ) {
    super(message);
  }
}

/** A solver found on this machine: its binary and catalogue data. */
export interface SolverInstall {
  solver: SolverName;
  binary: string;
  dataDir: string | null;
}

/** Result of looking for a solver: found, or why not (for the skip message). */
export type SolverLookup = { ok: true; install: SolverInstall } | { ok: false; solver: SolverName; reason: string };

export const lastLines = (text: string, n = 15): string => text.trim().split('\n').slice(-n).join('\n');
