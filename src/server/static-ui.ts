// The static web UI under /ui/, served from dist/ui: `/ui/` is index.html, other files by name
// with their content type, confined to the UI folder (realpath), no directory listings. The
// modules the UI shares with the server (src/shared, built beside it as dist/shared) are served
// under /shared/, where the UI's `../shared/…` imports resolve; the same rules apply. Without a
// built UI, /ui/ answers 404 with the error envelope. The pages link their icon (favicon.svg);
// /favicon.ico, which browsers still ask for on pages without that link (run reports), is sent
// there, so no page's icon request fails.

import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { extname, join } from 'node:path';
import type { Context, Next } from 'koa';
import { ApiError } from './errors.js';
import { resolveInside } from './paths.js';

const MIME: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.mjs': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.json': 'application/json; charset=utf-8',
  '.map': 'application/json; charset=utf-8',
  '.svg': 'image/svg+xml',
  '.png': 'image/png',
  '.ico': 'image/x-icon',
  '.txt': 'text/plain; charset=utf-8',
  '.woff2': 'font/woff2',
};

export function staticUi(uiDir: string) {
  const sharedDir = join(uiDir, '..', 'shared');
  return async function serveUi(ctx: Context, next: Next): Promise<void> {
    if (ctx.path === '/' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.redirect('/ui/');
      return;
    }
    if (ctx.path === '/favicon.ico' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.redirect('/ui/favicon.svg');
      return;
    }
    const shared = ctx.path.startsWith('/shared/');
    if (ctx.path !== '/ui' && !ctx.path.startsWith('/ui/') && !shared) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw new ApiError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed on the UI`);
    if (ctx.path === '/ui') {
      ctx.redirect('/ui/');
      return;
    }
    const base = await realpath(shared ? sharedDir : uiDir).catch(() => null);
    if (!base) throw new ApiError('NOT_FOUND', `the web UI is not built (dist/${shared ? 'shared' : 'ui'} is missing)`);
    let rel: string;
    try {
      rel = decodeURIComponent(ctx.path.slice(shared ? '/shared/'.length : '/ui/'.length));
    } catch {
      throw new ApiError('BAD_REQUEST', 'malformed URL encoding');
    }
    if (shared && !/\.js(\.map)?$/.test(rel)) throw new ApiError('NOT_FOUND', `no shared module ${rel}`);
    if (rel === '' || rel.endsWith('/')) rel += 'index.html';
    let file: string;
    try {
      file = await resolveInside(base, rel, { kind: 'file' });
    } catch (e) {
      if (e instanceof ApiError && (e.code === 'NOT_A_FILE' || e.code === 'UNREADABLE_INPUT')) throw new ApiError('NOT_FOUND', `no UI file ${rel}`);
      throw e;
    }
    const s = await stat(file);
    ctx.type = MIME[extname(file).toLowerCase()] ?? 'application/octet-stream';
    ctx.length = s.size;
    ctx.set('Cache-Control', 'no-cache');
    ctx.body = ctx.method === 'HEAD' ? null : createReadStream(file);
  };
}
