// Locating external executables: an explicit path (must be an executable file) or the first
// executable of a list of names on PATH. No shell is involved.

import { constants } from 'node:fs';
import { access, readdir, stat } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

export async function isExecutable(file: string): Promise<boolean> {
  try {
    const s = await stat(file);
    if (!s.isFile()) return false;
    await access(file, constants.X_OK);
    return true;
  } catch {
    return false;
  }
}

/**
 * `configured` when given: a path (with a `/`) must be executable itself, a bare name is looked
 * up on PATH like the defaults; else the first of `names` found on PATH.
 */
export async function findBinary(configured: string, names: readonly string[], extraDirs: readonly string[] = []): Promise<string | null> {
  if (configured.includes('/')) return (await isExecutable(configured)) ? configured : null;
  if (configured) names = [configured];
  const dirs = [...(process.env.PATH ?? '').split(delimiter).filter(Boolean), ...extraDirs];
  for (const name of names) for (const dir of dirs) if (await isExecutable(join(dir, name))) return join(dir, name);
  return null;
}

/** Files in `dir` whose names match `pattern` (empty when the folder is missing). */
export async function filesMatching(dir: string, pattern: RegExp): Promise<string[]> {
  try {
    return (await readdir(dir)).filter((n) => pattern.test(n)).sort();
  } catch {
    return [];
  }
}
