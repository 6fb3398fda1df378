// Path confinement (docs/threat-model.md): every path that arrives in a request is checked here before
// anything touches the file system with it. Rules, in order: a string of at most MAX_PATH
// bytes, no NUL, absolute, no `..` segment; lexically inside an allowed root (so nothing
// outside the roots is even stat()ed, and answers never reveal whether such a path exists);
// then resolved with realpath (symlinks included) and checked again, so a link pointing out
// of a root is refused, whether its target exists or not. Roots are themselves realpath'd when
// they are added.

import { lstat, readlink, realpath, stat } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize, relative, resolve, sep } from 'node:path';
import { ApiError } from './errors.js';

export const MAX_PATH = 4096;

export function isInside(root: string, p: string): boolean {
  const rel = relative(root, p);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${sep}`) && !isAbsolute(rel));
}

function refuse(message: string, details?: Record<string, unknown>): never {
  throw new ApiError('PATH_NOT_ALLOWED', message, details);
}

/** Lexical checks shared by absolute and relative paths. */
function checkText(input: unknown, field: string): string {
  if (typeof input !== 'string' || input.length === 0) throw new ApiError('VALIDATION_ERROR', `${field}: a non-empty path is required`, { issues: [{ path: field, code: 'invalid_type', message: 'path required' }] });
  if (Buffer.byteLength(input) > MAX_PATH) refuse(`${field}: path longer than ${MAX_PATH} bytes`, { field });
  if (input.includes('\0')) refuse(`${field}: path contains a NUL byte`, { field });
  if (input.split(/[\\/]/).some((seg) => seg === '..')) refuse(`${field}: ".." segments are not allowed`, { field });
  return input;
}

/** Links followed while locating one path before it counts as a loop (as the kernel's ELOOP). */
const MAX_LINK_HOPS = 40;

/**
 * Where an absolute path leads: the realpath of its longest existing part, plus the missing
 * rest. Resolved one component at a time, so a link is followed even when its target is missing
 * (a dangling link leads where it points): whether a path leads out of the roots then never
 * depends on whether its target exists, and the answer reveals nothing about existence outside.
 */
async function locate(p: string): Promise<{ real: string; rest: string[] }> {
  let pending = p.split('/').filter((c) => c !== '' && c !== '.');
  let real = '/';
  let hops = 0;
  while (pending.length > 0) {
    const name = pending.shift()!;
    if (name === '..') {
      real = dirname(real);
      continue;
    }
    const next = join(real, name);
    let isLink: boolean;
    try {
      isLink = (await lstat(next)).isSymbolicLink();
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code !== 'ENOENT' && code !== 'ENOTDIR') throw new ApiError('UNREADABLE_INPUT', `cannot resolve ${p}: ${code ?? 'error'}`);
      // The rest does not exist; where it would be is lexical from here (a `..` in a link's
      // target can climb above `real`: then the whole path counts as missing from `/`).
      const where = normalize(join(real, name, ...pending));
      const base = isInside(real, where) ? real : '/';
      return { real: base, rest: relative(base, where).split(sep).filter((c) => c !== '') };
    }
    if (isLink) {
      if (++hops > MAX_LINK_HOPS) throw new ApiError('UNREADABLE_INPUT', `cannot resolve ${p}: too many links`);
      const target = await readlink(next);
      if (target.startsWith('/')) real = '/';
      pending = [...target.split('/').filter((c) => c !== '' && c !== '.'), ...pending];
      continue;
    }
    real = next;
  }
  return { real, rest: [] };
}

export type PathKind = 'dir' | 'file' | 'any';

export interface ResolveOptions {
  /** Field name used in error messages. */
  field?: string;
  /** Refuse paths that do not exist (422 PATH_NOT_FOUND), default true. */
  mustExist?: boolean;
  kind?: PathKind;
}

export class PathGuard {
  private roots: string[] = [];
  private denied: string[] = [];

  /** A folder inside a root that requests may never reach (the server's state dir). */
  async deny(dir: string): Promise<void> {
    this.denied.push(await realpath(resolve(dir)).catch(() => resolve(dir)));
  }

  isDenied(real: string): boolean {
    return this.denied.some((d) => isInside(d, real));
  }

  /** Adds an allowed root (realpath'd; missing roots are created by the caller first). */
  async addRoot(dir: string): Promise<string> {
    const real = await realpath(resolve(dir));
    if (!this.roots.includes(real)) this.roots.push(real);
    return real;
  }

  list(): string[] {
    return [...this.roots];
  }

  /** Roots and denied folders, for scans that must stay inside them (pipeline/stages/scan/confine.ts). */
  confinement(): { roots: string[]; denied: string[] } {
    return { roots: [...this.roots], denied: [...this.denied] };
  }

  /** The root that contains `real`, or null. */
  rootOf(real: string): string | null {
    if (this.isDenied(real)) return null;
    let best: string | null = null;
    for (const r of this.roots) if (isInside(r, real) && (best === null || r.length > best.length)) best = r;
    return best;
  }

  /** An absolute path from a request, confined to the allowed roots. Returns its realpath. */
  async resolve(input: unknown, options: ResolveOptions = {}): Promise<string> {
    const field = options.field ?? 'path';
    const text = checkText(input, field);
    if (!isAbsolute(text)) refuse(`${field}: an absolute path is required`, { field });
    const lexical = normalize(text);
    if (!this.rootOf(lexical) && !(await this.lexicalAliasOfRoot(lexical))) refuse(`${field}: outside the allowed roots`, { field });
    const { real, rest } = await locate(lexical);
    const where = rest.length > 0 ? join(real, ...rest) : real;
    if (!this.rootOf(where)) refuse(`${field}: resolves outside the allowed roots`, { field });
    if (rest.length > 0) {
      if (options.mustExist ?? true) throw new ApiError('PATH_NOT_FOUND', `${field}: ${text} does not exist`, { field });
      return where;
    }
    await checkKind(real, options.kind ?? 'any', field, text);
    return real;
  }

  /**
   * A root reached through a symlinked parent (e.g. /tmp -> /private/tmp) is refused by the
   * lexical check above; accept it when the path's existing ancestor resolves inside a root.
   * Only ancestors are resolved, so nothing below a foreign folder is inspected.
   */
  private async lexicalAliasOfRoot(lexical: string): Promise<boolean> {
    try {
      const { real, rest } = await locate(dirname(lexical));
      const candidate = join(real, ...rest, basename(lexical));
      return this.rootOf(candidate) !== null;
    } catch {
      return false;
    }
  }
}

async function checkKind(real: string, kind: PathKind, field: string, text: string): Promise<void> {
  if (kind === 'any') return;
  const s = await stat(real).catch(() => null);
  if (!s) throw new ApiError('PATH_NOT_FOUND', `${field}: ${text} does not exist`, { field });
  if (kind === 'dir' && !s.isDirectory()) throw new ApiError('NOT_A_DIRECTORY', `${field}: ${text} is not a folder`, { field });
  if (kind === 'file' && !s.isFile()) throw new ApiError('NOT_A_FILE', `${field}: ${text} is not a file`, { field });
}

/**
 * A relative path inside `base` (artifact paths inside a run folder). `base` must already be a
 * realpath. Refuses absolute paths, `..`, NUL and links that lead out of `base`.
 */
export async function resolveInside(base: string, input: unknown, options: ResolveOptions = {}): Promise<string> {
  const field = options.field ?? 'path';
  const text = checkText(input, field);
  if (isAbsolute(text) || /^[A-Za-z]:/.test(text) || text.startsWith('\\')) refuse(`${field}: a path relative to the run folder is required`, { field });
  const joined = join(base, text);
  if (!isInside(base, joined)) refuse(`${field}: outside the run folder`, { field });
  let real: string;
  try {
    real = await realpath(joined);
  } catch (e) {
    const code = (e as NodeJS.ErrnoException).code;
    throw new ApiError(code === 'ENOENT' || code === 'ENOTDIR' ? 'NOT_FOUND' : 'UNREADABLE_INPUT', `${field}: ${text} not found in the run folder`, { field });
  }
  if (!isInside(base, real)) refuse(`${field}: resolves outside the run folder`, { field });
  await checkKind(real, options.kind ?? 'any', field, text);
  return real;
}

/** Longest path text a request schema accepts: longer ones reach the guard (403), not zod (400). */
export const PATH_FIELD_MAX = 65536;
