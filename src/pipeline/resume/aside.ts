// Setting a run's outputs aside while a resume re-makes them: every file under the run's listed
// folders (artifacts/, outputs/) that the resume will write again moves to `.resume_previous/`
// (same relative path), and the files the resume replaces in place (config.yaml, run.json) are
// copied there. The resume ends in one of two ways:
//   - discard(): it succeeded; the old files are deleted;
//   - restore(): it failed or was cancelled; the files it wrote where old ones lay (or new ones in
//     the set-aside folders) are removed and the old ones moved back, so the run folder holds
//     the earlier outputs again.
// Moves are renames inside the run folder (one file system: no copies of large outputs). The
// event log is never set aside: a resume appends to it. A `.resume_previous/` left by a resume
// whose process died is restored by restoreLeftover() before the next resume.

import { copyFile, mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises';
import { dirname, isAbsolute, join } from 'node:path';
import { writeJsonAtomic } from '../atomic.js';

export const ASIDE_DIR = '.resume_previous';
const MANIFEST = '.aside.json';

/** Every regular file under `dir` (relative to `root`, `/`-separated). */
export async function listFiles(root: string, dir: string): Promise<string[]> {
  const out: string[] = [];
  const walk = async (rel: string) => {
    const entries = await readdir(join(root, ...rel.split('/')), { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      const r = `${rel}/${e.name}`;
      if (e.isDirectory()) await walk(r);
      else if (e.isFile()) out.push(r);
    }
  };
  await walk(dir);
  return out.sort();
}

export interface AsideSet {
  /** Relative paths that were moved aside. */
  moved: string[];
  /** Relative paths copied aside (replaced in place by the resume). */
  copied: string[];
  discard(): Promise<void>;
  restore(): Promise<void>;
}

const abs = (root: string, rel: string) => join(root, ...rel.split('/'));

async function moveFile(from: string, to: string): Promise<void> {
  await mkdir(dirname(to), { recursive: true });
  await rename(from, to);
}

/**
 * Moves the files under `folders` for which `keep` is false aside, and copies `replaced` there.
 * `folders` and `replaced` are relative to `runDir`.
 */
export async function setAside(runDir: string, folders: readonly string[], keep: (rel: string) => boolean, replaced: readonly string[]): Promise<AsideSet> {
  const asideRoot = join(runDir, ASIDE_DIR);
  await rm(asideRoot, { recursive: true, force: true });
  await mkdir(asideRoot, { recursive: true });
  const moved: string[] = [];
  const copied: string[] = [];
  for (const folder of folders) {
    for (const rel of await listFiles(runDir, folder)) {
      if (keep(rel)) continue;
      await moveFile(abs(runDir, rel), abs(asideRoot, rel));
      moved.push(rel);
    }
  }
  for (const rel of replaced) {
    const st = await stat(abs(runDir, rel)).catch(() => null);
    if (!st?.isFile()) continue;
    await mkdir(dirname(abs(asideRoot, rel)), { recursive: true });
    await copyFile(abs(runDir, rel), abs(asideRoot, rel));
    copied.push(rel);
  }
  await writeJsonAtomic(join(asideRoot, MANIFEST), { folders, moved, copied });
  return {
    moved,
    copied,
    discard: () => rm(asideRoot, { recursive: true, force: true }),
    restore: () => restoreAside(runDir, folders, keep, moved, copied),
  };
}

async function restoreAside(runDir: string, folders: readonly string[], keep: (rel: string) => boolean, moved: readonly string[], copied: readonly string[]): Promise<void> {
  // What the resume wrote: every file the earlier phases do not own.
  for (const folder of folders) for (const rel of await listFiles(runDir, folder)) if (!keep(rel)) await rm(abs(runDir, rel), { force: true });
  await moveBack(runDir, [...moved, ...copied]);
}

/**
 * Where each file of `runDir` will lie once a leftover `.resume_previous/` is restored: a
 * function from a path as the run records it (relative to the run folder, or absolute) to an
 * absolute one: the set-aside copy for the paths the aside folder holds, the file itself
 * otherwise. Reads only, so a dry run judges a resume exactly as the real one will, which
 * restores first.
 */
export async function afterLeftoverRestore(runDir: string): Promise<(rel: string) => string> {
  const asideRoot = join(runDir, ASIDE_DIR);
  const text = await readFile(join(asideRoot, MANIFEST), 'utf8').catch(() => null);
  const pending = new Set<string>();
  if (text !== null) {
    const m = JSON.parse(text) as { moved: string[]; copied: string[] };
    for (const rel of [...m.moved, ...m.copied]) if (await stat(abs(asideRoot, rel)).catch(() => null)) pending.add(rel);
  }
  // Paths outside the run folder (absolute: the lights) are never set aside.
  return (rel) => (isAbsolute(rel) ? rel : abs(pending.has(rel) ? asideRoot : runDir, rel));
}

/** Moves the set-aside files (relative paths) back into the run folder, then drops the aside folder. */
async function moveBack(runDir: string, rels: readonly string[]): Promise<void> {
  const asideRoot = join(runDir, ASIDE_DIR);
  for (const rel of rels) {
    const from = abs(asideRoot, rel);
    if (await stat(from).catch(() => null)) await moveFile(from, abs(runDir, rel));
  }
  await rm(asideRoot, { recursive: true, force: true });
}

/**
 * Restores a set-aside folder a resume whose process died left behind (its manifest says what
 * was moved and copied); true when there was one. Files the dead resume wrote stay where the
 * old ones do not come back over them.
 */
export async function restoreLeftover(runDir: string): Promise<boolean> {
  const text = await readFile(join(runDir, ASIDE_DIR, MANIFEST), 'utf8').catch(() => null);
  if (text === null) return false;
  const m = JSON.parse(text) as { moved: string[]; copied: string[] };
  await moveBack(runDir, [...m.moved, ...m.copied]);
  return true;
}
