// Image viewer endpoints (issue 21, docs/viewer.md) for any FITS image of a run folder:
//   GET /api/runs/:id/images          the run's FITS images with their geometry (compare lists)
//   GET /api/runs/:id/image/info      pyramid meta: size, planes, row order, levels, statistics
//                                     (built on first view, then cached in <run>/.cache/viewer/)
//   GET /api/runs/:id/image/tile      one tile, planar half floats (look=hms: the run's HMS look)
//   GET /api/runs/:id/image/pixel     the FITS value of one pixel per plane, RA/Dec with a WCS
//   GET /api/runs/:id/image/export    the image as PNG, TIFF or JPEG, stretched as the viewer shows
// Every file is opened through run-files.ts (confined to the run folder: `..`, NUL, links out
// → 403, missing → 404), pixel work runs on the viewer's worker threads (src/viewer/service.ts).

import { basename } from 'node:path';
import { z } from 'zod';
import { FitsReader } from '../../fits/index.js';
import { CacheRefused } from '../../viewer/cache.js';
import { EXPORT_EXT, EXPORT_MIME, ExportError, parseChannel, type ChannelChoice, type ExportFormat } from '../../viewer/export.js';
import { ViewerError } from '../../viewer/protocol.js';
import { sourcePath, type OpenedSource, type Prepared } from '../../viewer/service.js';
import { STRETCH_MODES, type ChannelLevels } from '../../shared/stretch-math.js';
import { queryOf } from '../body.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { PATH_FIELD_MAX } from '../paths.js';
import type { ApiRegistry } from '../registry.js';
import { listRunFiles, openRunFile, readRunText } from '../run-files.js';
import { runLayout } from '../run-index.js';
import { artifactPath } from '../../shared/run-layout.js';
import { findRun } from '../run-lookup.js';

const FITS_NAME = /\.(fits?|fts)(\.fz|\.gz)?$/i;
/** Images listed per run (calibrated frames included). */
const LIST_LIMIT = 2000;

const path = z.string().max(PATH_FIELD_MAX).describe('FITS file relative to the run folder');
const int = (min: number) => z.coerce.number().int().min(min);
const ImageQuery = z.strictObject({ path });
const TileQuery = z.strictObject({ path, level: int(0), x: int(0), y: int(0), look: z.enum(['raw', 'hms']).default('raw') });
const PixelQuery = z.strictObject({ path, x: int(0).describe('FITS column, 0-based'), y: int(0).describe('FITS row in storage order, 0-based') });
const numberList = z
  .string()
  .max(400)
  .regex(/^-?[\d.eE+-]+(,-?[\d.eE+-]+)*$/, 'comma-separated numbers')
  .transform((s) => s.split(',').map(Number));
const ExportQuery = z.strictObject({
  path,
  format: z.enum(['png', 'tiff', 'tif', 'jpeg', 'jpg']).default('png'),
  bits: z.enum(['8', '16']).optional().describe('default 16 for PNG and TIFF, 8 for JPEG'),
  stretch: z.enum(STRETCH_MODES as [string, ...string[]]).default('auto'),
  channel: z.string().max(8).optional().describe('rgb, r, g, b or a plane number'),
  linked: z.enum(['true', 'false']).optional(),
  black: numberList.optional(),
  mid: numberList.optional(),
  white: numberList.optional(),
  beta: numberList.optional(),
});

/** A ViewerError (or the errors it wraps) as the API's error. */
export function viewerApiError(e: unknown): unknown {
  if (e instanceof CacheRefused) return new ApiError('PATH_NOT_ALLOWED', `the viewer cache is refused: ${e.message}`);
  if (e instanceof ExportError) return new ApiError(e.code === 'NOT_RGB' ? 'UNSUPPORTED_TYPE' : 'VALIDATION_ERROR', e.message, { reason: e.code });
  if (!(e instanceof ViewerError)) return e;
  switch (e.code) {
    case 'FITS':
      return new ApiError('UNREADABLE_INPUT', `not a readable FITS image: ${e.message}`, { reason: 'FITS', fits_code: e.fitsCode });
    case 'NOT_RGB':
      return new ApiError('UNSUPPORTED_TYPE', e.message, { reason: e.code });
    case 'OUT_OF_RANGE':
    case 'BAD_OPTION':
    case 'CHANNEL_OUT_OF_RANGE':
    case 'UNSUPPORTED_FORMAT':
      return new ApiError('VALIDATION_ERROR', e.message, { reason: e.code, issues: [] });
    case 'CACHE_REFUSED':
      return new ApiError('PATH_NOT_ALLOWED', e.message);
    case 'WORKER_FAILED':
      return new ApiError('SERVICE_UNAVAILABLE', e.message);
    default:
      return new ApiError('INTERNAL', 'internal server error');
  }
}

/** Confined open first (so hostile paths get their 403/404 whatever their name), then the type. */
async function openImage(runDir: string, rel: string): Promise<OpenedSource> {
  const src = await openRunFile(runDir, rel);
  if (!FITS_NAME.test(rel)) {
    await src.fh.close();
    throw new ApiError('UNSUPPORTED_TYPE', `${rel} is not a FITS image (.fits, .fit, .fts)`, { reason: 'NOT_FITS' });
  }
  return src;
}

async function withImage<T>(app: AppContext, id: string, rel: string, f: (runDir: string, src: OpenedSource) => Promise<T>): Promise<T> {
  const runDir = await findRun(app, id);
  const src = await openImage(runDir, rel);
  try {
    return await f(runDir, src);
  } catch (e) {
    throw viewerApiError(e);
  } finally {
    await src.fh.close();
  }
}

/** The run's HMS diagnostics and configuration, which give its stretch look (viewer/hms-look.ts). */
async function runLookFiles(runDir: string): Promise<{ diag: string | null; config: string | null }> {
  const layout = await runLayout(runDir);
  return { diag: await readRunText(runDir, artifactPath(layout, 'hms_diagnostics.json'), 4 * 1024 * 1024), config: await readRunText(runDir, layout.config, 4 * 1024 * 1024) };
}

function infoBody(p: Prepared, rel: string, runId: string) {
  const m = p.meta;
  return {
    path: rel,
    run_id: runId,
    width: m.width,
    height: m.height,
    planes: m.planes,
    channels: m.channels,
    bitpix: m.bitpix,
    row_order: m.row_order,
    flipped: m.flipped,
    tile: m.tile,
    scale: m.scale,
    levels: m.levels,
    stats: m.stats,
    stretched: m.stretched,
    wcs: m.wcs,
    version: m.created_at,
    cache: p.cache,
    build_ms: m.build_ms,
  };
}

export function imageRoutes(api: ApiRegistry, app: AppContext): void {
  api.add({ method: 'get', path: '/api/runs/:id/images', tag: 'viewer', summary: 'FITS images of the run (outputs, masters, calibrated frames) with their geometry', responses: { 200: '{items, total}', 404: 'no such run' } }, async (ctx) => {
    const runDir = await findRun(app, ctx.params.id!);
    const layout = await runLayout(runDir);
    const files = (await listRunFiles(runDir, [...layout.listed], [], 100000)).filter((f) => FITS_NAME.test(f.path)).slice(0, LIST_LIMIT);
    const items = [];
    for (const f of files) {
      let src: OpenedSource;
      try {
        src = await openRunFile(runDir, f.path);
      } catch {
        continue;
      }
      try {
        const r = await FitsReader.open(sourcePath(src));
        try {
          items.push({ path: f.path, size: f.size, mtime: f.mtime, width: r.width, height: r.height, planes: r.planes, bitpix: r.layout.bitpix, stretched: r.header.getNumber('HMSLOGD') !== undefined, frame: f.path.startsWith(`${layout.calibrated}/`) });
        } finally {
          await r.close();
        }
      } catch {
        items.push({ path: f.path, size: f.size, mtime: f.mtime, width: null, height: null, planes: null, bitpix: null, stretched: false, frame: false, unreadable: true });
      } finally {
        await src.fh.close();
      }
    }
    ctx.body = { items, total: items.length };
  });

  api.add(
    { method: 'get', path: '/api/runs/:id/image/info', tag: 'viewer', summary: 'image geometry, row order, pyramid levels and channel statistics (builds the tile pyramid on first view)', query: ImageQuery, responses: { 200: 'meta', 403: 'outside the run folder', 404: 'not found', 422: 'not a FITS image' } },
    async (ctx) => {
      const q = queryOf(ctx, ImageQuery);
      ctx.body = await withImage(app, ctx.params.id!, q.path, async (runDir, src) => infoBody(await app.viewer.prepare(runDir, q.path, src), q.path, ctx.params.id!));
    },
  );

  api.add(
    { method: 'get', path: '/api/runs/:id/image/tile', tag: 'viewer', summary: 'one tile: channels × 256 × 256 half floats, planar, little-endian (value = half · scale; look=hms: the run HMS look in [0, 1])', query: TileQuery, responses: { 200: 'application/octet-stream', 400: 'no such tile', 403: 'outside the run folder', 404: 'not found' } },
    async (ctx) => {
      const q = queryOf(ctx, TileQuery);
      const out = await withImage(app, ctx.params.id!, q.path, async (runDir, src) => {
        const p = await app.viewer.prepare(runDir, q.path, src);
        if (q.look === 'raw') return { bytes: await app.viewer.tile(p, q.level, q.x, q.y), scale: p.meta.scale, look: 'raw' };
        if (p.meta.stretched) throw new ApiError('UNSUPPORTED_TYPE', 'the image is already stretched by HMS: show it as is (look=raw)', { reason: 'STRETCHED' });
        const t = await app.viewer.lookTile(p, q.level, q.x, q.y, await runLookFiles(runDir));
        return { bytes: Buffer.from(t.bytes.buffer, t.bytes.byteOffset, t.bytes.byteLength), scale: 1, look: `hms-${t.source}` };
      });
      ctx.type = 'application/octet-stream';
      ctx.set('X-Tile-Scale', String(out.scale));
      ctx.set('X-Tile-Look', out.look);
      ctx.body = out.bytes;
    },
  );

  api.add(
    { method: 'get', path: '/api/runs/:id/image/pixel', tag: 'viewer', summary: 'the FITS value of pixel (x, y) per plane (0-based storage coordinates) and its RA/Dec when the header has a WCS', query: PixelQuery, responses: { 200: '{x, y, values, ra, dec}', 400: 'outside the image', 403: 'outside the run folder', 404: 'not found' } },
    async (ctx) => {
      const q = queryOf(ctx, PixelQuery);
      ctx.body = await withImage(app, ctx.params.id!, q.path, (_runDir, src) => app.viewer.pixel(src, q.x, q.y));
    },
  );

  api.add(
    { method: 'get', path: '/api/runs/:id/image/export', tag: 'viewer', summary: 'the image as PNG, TIFF (8/16-bit) or JPEG, rows top-down, stretched like the viewer (levels optional)', query: ExportQuery, responses: { 200: 'the encoded image (attachment)', 400: 'bad option', 403: 'outside the run folder', 404: 'not found', 422: 'not a FITS image' } },
    async (ctx) => {
      const q = queryOf(ctx, ExportQuery);
      const format: ExportFormat = q.format === 'tif' ? 'tiff' : q.format === 'jpg' ? 'jpeg' : (q.format as ExportFormat);
      const bits = q.bits ? (Number(q.bits) as 8 | 16) : format === 'jpeg' ? 8 : 16;
      let channel: ChannelChoice | null = null;
      let levels: ChannelLevels[] | null = null;
      try {
        channel = q.channel ? parseChannel(q.channel) : null;
        levels = explicitLevels(q);
      } catch (e) {
        throw viewerApiError(e);
      }
      const result = await withImage(app, ctx.params.id!, q.path, async (runDir, src) =>
        app.viewer.export(src, format, { stretch: q.stretch as (typeof STRETCH_MODES)[number], bits, channel, levels, ...(q.linked ? { linked: q.linked === 'true' } : {}) }, q.stretch === 'hms' ? await runLookFiles(runDir) : { diag: null, config: null }),
      );
      const stem = basename(q.path).replace(/(\.(fits?|fts))?(\.fz|\.gz)?$/i, '').replace(/[^A-Za-z0-9._-]/g, '_') || 'image';
      ctx.type = EXPORT_MIME[format];
      ctx.set('Content-Disposition', `attachment; filename="${stem}.${EXPORT_EXT[format]}"`);
      ctx.body = Buffer.from(result.bytes.buffer, result.bytes.byteOffset, result.bytes.byteLength);
    },
  );
}

function explicitLevels(q: { black?: number[]; mid?: number[]; white?: number[]; beta?: number[] }): ChannelLevels[] | null {
  const given = [q.black, q.mid, q.white].filter((v) => v !== undefined);
  if (given.length === 0) return null;
  if (given.length !== 3) throw new ExportError('BAD_OPTION', 'levels need black, mid and white together');
  const n = Math.max(q.black!.length, q.mid!.length, q.white!.length);
  if (n > 3 || [q.black!, q.mid!, q.white!, q.beta ?? [0]].some((l) => l.length !== 1 && l.length !== n)) throw new ExportError('BAD_OPTION', 'black, mid, white (and beta) need one value, or one per channel');
  const at = (l: number[] | undefined, i: number, d: number) => (l ? (l[Math.min(i, l.length - 1)] ?? d) : d);
  return Array.from({ length: n }, (_, i) => ({ black: at(q.black, i, 0), mid: at(q.mid, i, 0.5), white: at(q.white, i, 1), beta: at(q.beta, i, 0) }));
}

