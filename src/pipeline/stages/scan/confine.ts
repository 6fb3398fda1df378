// Read confinement of frame scans. The API server lets requests read only inside its allowed
// roots (src/server/paths.ts); a folder inside a root can still hold links to files elsewhere,
// and the frame scans that list such a folder (the scan endpoints in the server, INPUT_SCAN and
// the calibration folders in a job child) would follow them. A confinement names the roots
// (realpaths) and the denied folders inside them; a scan under one keeps only the entries whose
// realpath lies inside a root and outside every denied folder. An entry left out is treated
// exactly like an entry that is not there (a dangling link is left out the same way), so a
// planted link reveals nothing about its target, not even whether it exists.
// The server passes its confinement with each scan; a job child receives it in its job spec and
// sets it once for the whole process (setReadConfinement), so every scan of the run obeys it
// without each phase passing it on. The CLI sets none: a local user reads what they can read.

import { realpath } from 'node:fs/promises';
import { isAbsolute, join, relative, sep } from 'node:path';

export interface ReadConfinement {
  /** Allowed roots (realpaths). */
  roots: string[];
  /** Folders inside the roots that stay out of reach (realpaths). */
  denied: string[];
}

let processConfinement: ReadConfinement | null = null;

/** Confines every later scan of this process (called once by a job child). */
export function setReadConfinement(c: ReadConfinement | null): void {
  processConfinement = c;
}

export function readConfinement(): ReadConfinement | null {
  return processConfinement;
}

function within(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

export function insideConfinement(c: ReadConfinement, real: string): boolean {
  return c.roots.some((r) => within(r, real)) && !c.denied.some((d) => within(d, real));
}

/** The names in `dir` whose realpath is inside `c` (order kept); none when `dir` itself is not. */
export async function confinedNames(dir: string, names: string[], c: ReadConfinement): Promise<string[]> {
  const realDir = await realpath(dir).catch(() => null);
  if (realDir === null || !insideConfinement(c, realDir)) return [];
  const keep = await Promise.all(names.map(async (n) => {
    const real = await realpath(join(realDir, n)).catch(() => null);
    return real !== null && insideConfinement(c, real);
  }));
  return names.filter((_n, i) => keep[i]);
}
