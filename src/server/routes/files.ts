// File endpoints: directory listing, path grants and frame scans, all under the allowed-roots
// rule (paths.ts). Listings never follow a symlink out of the roots: such an entry is shown
// as a `link` with no size or time, so nothing about the outside is revealed.

import { lstat, readdir, realpath, stat } from 'node:fs/promises';
import { join } from 'node:path';
import { z } from 'zod';
import { fitsExtension, folderPatternHint } from '../../pipeline/stages/scan/fits-names.js';
import { decideColorMode, scanFolder, summarizeScan, type FrameInfo } from '../../pipeline/stages/scan/scan.js';
import { queryOf, jsonBody } from '../body.js';
import type { AppContext } from '../context.js';
import { ANY_FITS_PATTERN } from '../../config/rawstack.js';
import { ApiError } from '../errors.js';
import { isInside, MAX_PATH, PATH_FIELD_MAX } from '../paths.js';
import type { ApiRegistry } from '../registry.js';

const MAX_ENTRIES = 5000;

/** .fit/.fits/.fts in any case, gzip-compressed (.fits.gz) or fpack'd (.fz, .fits.fz). */
export function isFitsName(name: string): boolean {
  return fitsExtension(name) !== null;
}

/** Folders nobody may grant: system trees, and anything holding the server's own state. */
const SYSTEM_DIRS = ['/proc', '/sys', '/dev', '/etc', '/boot', '/bin', '/sbin', '/lib', '/lib32', '/lib64', '/usr', '/run', '/root', '/var/run', '/var/lib'];

let systemDirsReal: Promise<string[]> | null = null;
/** The system folders as written and as resolved (`/lib` is `/usr/lib` on merged-/usr systems). */
function systemDirs(): Promise<string[]> {
  systemDirsReal ??= Promise.all(SYSTEM_DIRS.map((d) => realpath(d).catch(() => d))).then((r) => [...new Set([...SYSTEM_DIRS, ...r])]);
  return systemDirsReal;
}

/**
 * Why the folder `real` (a realpath) cannot be granted, or null. Refused: a system folder, a
 * folder inside one, and a folder containing one (granting `/var` would open `/var/lib`); the
 * same for the server's state folder. Checked on every grant and again for stored grants at start.
 */
export async function grantRefusal(real: string, app: Pick<AppContext, 'guard' | 'stateDir'>): Promise<string | null> {
  const system = await systemDirs();
  if (real === '/' || system.some((d) => isInside(d, real) || isInside(real, d))) return 'is or contains a system folder and cannot be granted';
  if (app.guard.isDenied(real) || isInside(real, app.stateDir)) return "holds the server's state and cannot be granted";
  return null;
}

const ListQuery = z.strictObject({ path: z.string().max(PATH_FIELD_MAX).optional(), hidden: z.enum(['true', 'false']).default('false') });
const GrantQuery = z.strictObject({ path: z.string().max(PATH_FIELD_MAX) });
const ScanBody = z.strictObject({
  path: z.string().max(PATH_FIELD_MAX).describe('folder with frames (absolute, inside the allowed roots)'),
  pattern: z.string().min(1).max(256).default(ANY_FITS_PATTERN).describe('";"-separated globs'),
  max_frames: z.number().int().min(0).max(100000).default(0),
  checksums: z.boolean().default(false),
});

export function fileRoutes(api: ApiRegistry, app: AppContext): void {
  api.add(
    { method: 'get', path: '/api/files/list', tag: 'files', summary: 'list a directory (without path: the allowed roots)', query: ListQuery, responses: { 200: '{path, entries}', 403: 'outside the allowed roots', 422: 'missing or not a folder' } },
    async (ctx) => {
      const q = queryOf(ctx, ListQuery);
      if (q.path === undefined || q.path === '') {
        const entries = [];
        for (const root of app.guard.list()) {
          const s = await stat(root).catch(() => null);
          entries.push({ name: root, path: root, type: 'dir', size: null, mtime: s?.mtime.toISOString() ?? null, fits: false, root: true });
        }
        ctx.body = { path: null, parent: null, entries, total: entries.length, truncated: false };
        return;
      }
      const dir = await app.guard.resolve(q.path, { kind: 'dir' });
      let names: string[];
      try {
        names = await readdir(dir);
      } catch (e) {
        throw new ApiError('UNREADABLE_INPUT', `cannot read ${q.path}: ${(e as NodeJS.ErrnoException).code ?? 'error'}`);
      }
      const entries = [];
      for (const name of names.sort()) {
        if (q.hidden === 'false' && name.startsWith('.')) continue;
        if (entries.length >= MAX_ENTRIES) break;
        const full = join(dir, name);
        if (app.guard.isDenied(full)) continue;
        const l = await lstat(full).catch(() => null);
        if (!l) continue;
        let s = l;
        let type: 'dir' | 'file' | 'link' | 'other';
        if (l.isSymbolicLink()) {
          const target = await realpath(full).catch(() => null);
          const inside = target !== null && app.guard.rootOf(target) !== null;
          const ts = inside ? await stat(full).catch(() => null) : null;
          if (!ts) {
            entries.push({ name, path: full, type: 'link', size: null, mtime: null, fits: false, outside_roots: !inside });
            continue;
          }
          s = ts;
        }
        type = s.isDirectory() ? 'dir' : s.isFile() ? 'file' : 'other';
        entries.push({ name, path: full, type, size: type === 'file' ? s.size : null, mtime: s.mtime.toISOString(), fits: type === 'file' && isFitsName(name) });
      }
      entries.sort((a, b) => (a.type === 'dir' ? 0 : 1) - (b.type === 'dir' ? 0 : 1) || a.name.localeCompare(b.name));
      const root = app.guard.rootOf(dir);
      const parent = root && dir !== root ? join(dir, '..') : null;
      ctx.body = { path: dir, parent: parent && isInside(root!, parent) ? parent : null, entries, total: entries.length, truncated: names.length > MAX_ENTRIES };
    },
  );

  api.add(
    { method: 'get', path: '/api/files/grant', tag: 'files', summary: 'grant access to an absolute existing directory (persisted)', changesState: true, query: GrantQuery, responses: { 200: '{path, granted_at}', 403: 'refused (system folder, server state, bad path)', 422: 'missing or not a folder' } },
    async (ctx) => {
      const q = queryOf(ctx, GrantQuery);
      const text = q.path;
      if (Buffer.byteLength(text) > MAX_PATH) throw new ApiError('PATH_NOT_ALLOWED', `path longer than ${MAX_PATH} bytes`);
      if (text.includes('\0')) throw new ApiError('PATH_NOT_ALLOWED', 'path contains a NUL byte');
      if (!text.startsWith('/')) throw new ApiError('PATH_NOT_ALLOWED', 'an absolute path is required');
      if (text.split(/[\\/]/).includes('..')) throw new ApiError('PATH_NOT_ALLOWED', '".." segments are not allowed');
      let real: string;
      try {
        real = await realpath(text);
      } catch {
        throw new ApiError('PATH_NOT_FOUND', `${text} does not exist`);
      }
      const s = await stat(real);
      if (!s.isDirectory()) throw new ApiError('NOT_A_DIRECTORY', `${text} is not a folder`);
      const refusal = await grantRefusal(real, app);
      if (refusal) throw new ApiError('PATH_NOT_ALLOWED', `${text} ${refusal}`);
      const grant = { path: real, granted_at: new Date().toISOString(), granted_by: app.token ? 'bearer token' : `loopback ${ctx.ip}` };
      await app.grants.add(grant);
      await app.guard.addRoot(real);
      ctx.body = { ...grant, roots: app.guard.list() };
    },
  );

  api.add(
    {
      method: 'post',
      path: '/api/files/scan',
      tag: 'files',
      summary: 'scan a folder for frames (headers only)',
      body: ScanBody,
      responses: { 200: 'frames and summary; pattern_hint when the pattern matches nothing but FITS files of another extension are there', 400: 'bad body', 403: 'outside the allowed roots', 422: 'missing or not a folder' },
    },
    async (ctx) => {
      const body = await jsonBody(ctx, ScanBody);
      const dir = await app.guard.resolve(body.path, { kind: 'dir' });
      const frames = await scanFolder(dir, { pattern: body.pattern, maxFrames: body.max_frames, checksums: body.checksums, concurrency: 4, confine: app.guard.confinement() });
      // The condition INPUT_SCAN fails with (pattern_mismatch), so the form can offer the pattern first.
      const hint = frames.length === 0 ? await folderPatternHint(dir, body.pattern) : null;
      const summary = summarizeScan(frames);
      const good = frames.filter((f): f is FrameInfo => f.ok);
      const color = good[0] ? decideColorMode(good[0], 'auto', 'auto') : null;
      const groups = new Map<string, { exptime: number | null; temperature: number | null; count: number }>();
      for (const f of good) {
        const t = f.temperature === null ? null : Math.round(f.temperature);
        const key = `${f.exptime}|${t}`;
        const g = groups.get(key) ?? { exptime: f.exptime, temperature: t, count: 0 };
        g.count++;
        groups.set(key, g);
      }
      ctx.body = {
        path: dir,
        pattern: body.pattern,
        frames: frames.map((f) =>
          f.ok
            ? { index: f.index, name: f.name, path: f.file, ok: true, width: f.width, height: f.height, planes: f.planes, bitpix: f.bitpix, exptime: f.exptime, temperature: f.temperature, gain: f.gain, filter: f.filter, image_type: f.imageType, date_obs: f.dateObs, bayer_pattern: f.bayer, ...(f.sha256 ? { sha256: f.sha256 } : {}) }
            : { index: f.index, name: f.name, path: f.file, ok: false, code: f.code, message: f.message },
        ),
        summary: {
          frames: summary.total,
          readable: summary.readable,
          width: summary.sizes[0]?.width ?? null,
          height: summary.sizes[0]?.height ?? null,
          color_mode: color?.mode ?? null,
          bayer_pattern: color?.bayer ?? null,
          color_source: color?.source ?? null,
          sizes: summary.sizes,
          exposures: summary.exposures,
          filters: summary.filters,
          temperatures: summary.temperatures,
          groups: [...groups.values()].sort((a, b) => b.count - a.count),
          unreadable: summary.unreadable,
        },
        pattern_hint: hint,
        warnings: [
          ...summary.warnings,
          ...(summary.total === 0 ? [hint ? { code: 'pattern_mismatch', message: hint.message, suggested_pattern: hint.suggested_pattern } : { code: 'no_frames', message: `no file matches ${body.pattern}` }] : []),
        ],
      };
    },
  );
}
