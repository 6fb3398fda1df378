// Shared test helpers: seeded random numbers (mulberry32) and temporary folders (KEEP_TMP=1 keeps
// them, to look at what a failing test left).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { mulberry32 } from '../../src/algorithms/ransac.js';

/** Deterministic uniform [0, 1) generator (the project's one mulberry32, src/algorithms/ransac.ts). */
export const seededRandom = mulberry32;

export async function withTempDir<T>(prefix: string, f: (dir: string) => Promise<T>): Promise<T> {
  const dir = await mkdtemp(join(tmpdir(), `skystack-${prefix}-`));
  try {
    return await f(dir);
  } finally {
    if (!process.env.KEEP_TMP) await rm(dir, { recursive: true, force: true });
  }
}
