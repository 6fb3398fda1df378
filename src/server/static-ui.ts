// The static web UI under /ui/ (DESIGN §2), served from dist/ui: `/ui/` is index.html, other
// files by name with their content type, confined to the UI folder (realpath), no directory
// listings. Without a built UI, /ui/ answers 404 with the error envelope.

import { createReadStream } from 'node:fs';
import { realpath, stat } from 'node:fs/promises';
import { extname } from 'node:path';
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
  return async function serveUi(ctx: Context, next: Next): Promise<void> {
    if (ctx.path === '/' && (ctx.method === 'GET' || ctx.method === 'HEAD')) {
      ctx.redirect('/ui/');
      return;
    }
    if (ctx.path !== '/ui' && !ctx.path.startsWith('/ui/')) return next();
    if (ctx.method !== 'GET' && ctx.method !== 'HEAD') throw new ApiError('METHOD_NOT_ALLOWED', `${ctx.method} is not allowed on the UI`);
    if (ctx.path === '/ui') {
      ctx.redirect('/ui/');
      return;
    }
    const base = await realpath(uiDir).catch(() => null);
    if (!base) throw new ApiError('NOT_FOUND', 'the web UI is not built (dist/ui is missing)');
    let rel: string;
    try {
      rel = decodeURIComponent(ctx.path.slice('/ui/'.length));
    } catch {
      throw new ApiError('BAD_REQUEST', 'malformed URL encoding');
    }
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
