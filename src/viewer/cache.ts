// Where the viewer keeps its pyramids: `<run>/.cache/viewer/<key>/`, one folder per image, key =
// the first 24 hex digits of sha256(path relative to the run folder). Hidden (listRunFiles skips
// dot entries), beside the run it describes, removable at any time (the next view rebuilds it).
// A run folder may hold links planted by whoever can write into it, so every component of the
// cache path is created or checked as a real directory (lstat, never followed), and the result
// must be the realpath of itself inside the run folder; anything else refuses the cache
// (CacheRefused), and the server answers with the error envelope instead of writing through a link.

import { createHash } from 'node:crypto';
import { lstat, mkdir, realpath } from 'node:fs/promises';
import { join } from 'node:path';

export const CACHE_REL = ['.cache', 'viewer'] as const;

export class CacheRefused extends Error {}

export function cacheKey(rel: string): string {
  return createHash('sha256').update(rel).digest('hex').slice(0, 24);
}

/** The image's cache folder inside `runDir` (a realpath), created when missing. */
export async function ensureCacheDir(runDir: string, rel: string): Promise<string> {
  let dir = runDir;
  for (const name of [...CACHE_REL, cacheKey(rel)]) {
    dir = join(dir, name);
    let s = await lstat(dir).catch(() => null);
    if (!s) {
      await mkdir(dir, { mode: 0o755 }).catch((e: NodeJS.ErrnoException) => {
        if (e.code !== 'EEXIST') throw e;
      });
      s = await lstat(dir);
    }
    if (s.isSymbolicLink() || !s.isDirectory()) throw new CacheRefused(`${name} in the run folder is not a plain folder`);
  }
  if ((await realpath(dir)) !== dir) throw new CacheRefused('the cache folder resolves elsewhere');
  return dir;
}
