// The one way the server opens a file of a run folder (run.json, events.jsonl, the frame
// table, artifacts for /view and /raw, the SSE tail, the closing run_end). A run folder can hold
// links planted by anyone who can write into it, so `openRunFile`:
// - takes the run folder as the server knows it and refuses it when it is itself a link (its
//   realpath must be the path itself: findRun, the run list and job records all hold realpaths);
// - checks the relative path lexically and by realpath inside the run folder (resolveInside);
// - opens the realpath with O_NOFOLLOW and, where /proc shows it, checks where the opened
//   descriptor really points, so a link swapped in between check and open is refused too.
// Readers that only want content (`readRunText`, `statRunFile`) treat a refused file exactly
// like a missing one, so a planted link reveals nothing, not even whether its target exists.
// `listRunFiles` walks real folders only and lists regular files only: links are never followed.

import { constants } from 'node:fs';
import { lstat, open, readdir, readlink, realpath, type FileHandle } from 'node:fs/promises';
import { basename, dirname, join, relative, resolve, sep } from 'node:path';
import { ApiError } from './errors.js';
import { isInside, resolveInside } from './paths.js';

/** Largest run file read whole into memory (events of a long run stay far below). */
export const RUN_TEXT_LIMIT = 64 * 1024 * 1024;

export interface OpenRunFile {
  fh: FileHandle;
  /** Realpath of the opened file. */
  real: string;
  size: number;
  mtime: Date;
}

/** The run folder's realpath, or a refusal when it is missing or is itself a link. */
async function runBase(runDir: string): Promise<string> {
  const want = resolve(runDir);
  const base = await realpath(want).catch(() => null);
  if (base === null) throw new ApiError('NOT_FOUND', 'run folder not found');
  if (base !== want) throw new ApiError('PATH_NOT_ALLOWED', 'the run folder is a link');
  return base;
}

async function checkDescriptor(base: string, fh: FileHandle): Promise<void> {
  // Linux names an open descriptor's real path here; elsewhere the realpath check stands alone.
  const actual = await readlink(`/proc/self/fd/${fh.fd}`).catch(() => null);
  if (actual !== null && actual.startsWith('/') && !isInside(base, actual)) {
    await fh.close();
    throw new ApiError('PATH_NOT_ALLOWED', 'resolves outside the run folder');
  }
}

/**
 * Opens `rel` (a path relative to the run folder) for reading, or for appending (created when
 * missing, its folder must exist). Errors are the API's: PATH_NOT_ALLOWED when it leads out of
 * the run folder, NOT_FOUND when missing, NOT_A_FILE for folders. The caller closes `fh`.
 */
export async function openRunFile(runDir: string, rel: string, options: { append?: boolean; field?: string } = {}): Promise<OpenRunFile> {
  const base = await runBase(runDir);
  const field = options.field ?? 'path';
  let real: string;
  let flags: number;
  if (options.append) {
    const folder = await resolveInside(base, dirname(rel) === '.' ? '.' : dirname(rel), { kind: 'dir', field });
    real = join(folder, basename(rel));
    flags = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;
  } else {
    real = await resolveInside(base, rel, { kind: 'file', field });
    flags = constants.O_RDONLY | constants.O_NOFOLLOW;
  }
  let fh: FileHandle;
  try {
    fh = await open(real, flags, 0o644);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    if (code === 'ELOOP') throw new ApiError('PATH_NOT_ALLOWED', `${field}: resolves outside the run folder`, { field });
    throw new ApiError(code === 'ENOENT' || code === 'ENOTDIR' ? 'NOT_FOUND' : 'UNREADABLE_INPUT', `${field}: ${rel} cannot be opened (${code ?? 'error'})`, { field });
  }
  await checkDescriptor(base, fh);
  const s = await fh.stat();
  if (!s.isFile()) {
    await fh.close();
    throw new ApiError('NOT_A_FILE', `${field}: ${rel} is not a file`, { field });
  }
  return { fh, real, size: s.size, mtime: s.mtime };
}

/** A run file's text; null when it is missing, leads out of the run folder or exceeds `limit`. */
export async function readRunText(runDir: string, rel: string, limit = RUN_TEXT_LIMIT): Promise<string | null> {
  let f: OpenRunFile;
  try {
    f = await openRunFile(runDir, rel);
  } catch {
    return null;
  }
  try {
    if (f.size > limit) return null;
    return await f.fh.readFile({ encoding: 'utf8' });
  } catch {
    return null;
  } finally {
    await f.fh.close();
  }
}

/** Size and time of a run file; null as for readRunText. */
export async function statRunFile(runDir: string, rel: string): Promise<{ size: number; mtime: Date } | null> {
  try {
    const f = await openRunFile(runDir, rel);
    await f.fh.close();
    return { size: f.size, mtime: f.mtime };
  } catch {
    return null;
  }
}

/** Appends `text` to a run file (created when missing); false when refused. */
export async function appendRunText(runDir: string, rel: string, text: string): Promise<boolean> {
  let f: OpenRunFile;
  try {
    f = await openRunFile(runDir, rel, { append: true });
  } catch {
    return false;
  }
  try {
    await f.fh.appendFile(text, 'utf8');
    return true;
  } finally {
    await f.fh.close();
  }
}

export interface RunFileEntry {
  /** Relative to the run folder, `/`-separated. */
  path: string;
  size: number;
  mtime: string;
}

/**
 * Regular files under the run folder's `subdirs` (and `topFiles` at its top), name order,
 * at most `limit`. Only real folders are entered and only regular files listed: a link, to a
 * file or to a folder, is not an artifact (a run writes files, never links).
 */
export async function listRunFiles(runDir: string, subdirs: string[], topFiles: string[], limit: number): Promise<RunFileEntry[]> {
  let base: string;
  try {
    base = await runBase(runDir);
  } catch {
    return [];
  }
  const out: RunFileEntry[] = [];
  const push = async (full: string) => {
    const s = await lstat(full).catch(() => null);
    if (s?.isFile()) out.push({ path: relative(base, full).split(sep).join('/'), size: s.size, mtime: s.mtime.toISOString() });
  };
  for (const name of topFiles) await push(join(base, name));
  const walk = async (dir: string): Promise<void> => {
    const s = await lstat(dir).catch(() => null);
    if (!s?.isDirectory()) return;
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries.sort((a, b) => a.name.localeCompare(b.name))) {
      if (out.length >= limit) return;
      if (e.name.startsWith('.')) continue;
      const full = join(dir, e.name);
      if (e.isDirectory()) await walk(full);
      else if (e.isFile()) await push(full);
    }
  };
  for (const sub of subdirs) await walk(join(base, sub));
  return out;
}
