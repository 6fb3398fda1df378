// A viewer worker thread (protocol.ts): builds pyramids, renders HMS-look tiles, reads pixel values
// and encodes exports, one request at a time, answering each with its id. Errors become
// WorkerFailure codes; nothing thrown here reaches the server's event loop.

import { parentPort, threadId } from 'node:worker_threads';
import { TanWcs } from '../astro/wcs.js';
import { FitsReader, isFitsError } from '../fits/index.js';
import { encodeHalf } from '../shared/half-float.js';
import { CacheRefused } from './cache.js';
import { encodeImage, ExportError, renderFits } from './export.js';
import { applyRecipe, hmsSettings, recipeFromDiagnostics, solveRecipe, type HmsRecipe } from './hms-look.js';
import { ViewerError, type PixelResult, type ViewerErrorCode, type WorkerFailure, type WorkerReply, type WorkerRequest } from './protocol.js';
import { buildPyramid, cachedMeta, type PyramidMeta } from './pyramid.js';
import { decodeTile, readLevelPlanes, readTileBytes } from './tiles.js';

/** Samples at most this many pixels when an HMS look is solved on the pyramid. */
const LOOK_SAMPLE_PIXELS = 2_100_000;
const recipes = new Map<string, HmsRecipe>();

async function recipeFor(dir: string, meta: PyramidMeta, diag: string | null, config: string | null): Promise<HmsRecipe> {
  const key = `${dir}\n${meta.created_at}\n${diag === null ? '' : diag.length}`;
  const known = recipes.get(key);
  if (known) return known;
  const settings = hmsSettings(config);
  let recipe = recipeFromDiagnostics(diag, settings);
  if (!recipe) {
    const level = meta.levels.find((g) => g.width * g.height <= LOOK_SAMPLE_PIXELS) ?? meta.levels[meta.levels.length - 1]!;
    recipe = solveRecipe(await readLevelPlanes(dir, meta, level.level), settings);
  }
  if (recipes.size > 32) recipes.clear();
  recipes.set(key, recipe);
  return recipe;
}

async function pixel(source: string, x: number, y: number): Promise<PixelResult> {
  const reader = await FitsReader.open(source);
  try {
    const { width, height } = reader.layout;
    if (!(Number.isInteger(x) && Number.isInteger(y) && x >= 0 && y >= 0 && x < width && y < height)) throw new ViewerError('OUT_OF_RANGE', `pixel (${x}, ${y}) lies outside the ${width}×${height} image`);
    const row = await reader.readRows(y, 1, { dtype: 'float64' });
    const values = row.planes.map((_, i) => {
      const v = row.data[i * width + x]!;
      return Number.isFinite(v) ? v : null;
    });
    const wcs = TanWcs.fromHeader(reader.header);
    const [ra, dec] = wcs ? wcs.pixelToSky(x, y) : [null, null];
    return { x, y, values, ra, dec };
  } finally {
    await reader.close();
  }
}

async function handle(req: WorkerRequest): Promise<{ result: unknown; transfer: ArrayBuffer[] }> {
  switch (req.op) {
    case 'prepare': {
      const hit = await cachedMeta(req.dir, { size: req.size, mtimeMs: req.mtimeMs });
      if (hit) return { result: { meta: hit, cache: 'hit', thread: threadId }, transfer: [] };
      const meta = await buildPyramid({ source: req.source, dir: req.dir, rel: req.rel, size: req.size, mtimeMs: req.mtimeMs });
      return { result: { meta, cache: 'built', thread: threadId }, transfer: [] };
    }
    case 'pixel':
      return { result: await pixel(req.source, req.x, req.y), transfer: [] };
    case 'look': {
      if (req.meta.channels !== 3) throw new ViewerError('NOT_RGB', 'the HMS look needs an RGB image');
      const recipe = await recipeFor(req.dir, req.meta, req.diag, req.config);
      const tile = decodeTile(await readTileBytes(req.dir, req.meta, req.level, req.tx, req.ty), req.meta);
      const n = req.meta.tile * req.meta.tile;
      const out = applyRecipe(tile.subarray(0, n), tile.subarray(n, 2 * n), tile.subarray(2 * n, 3 * n), recipe);
      const half = new Uint16Array(3 * n);
      // Padding and missing pixels stay NaN (black), as in the raw tiles.
      for (let c = 0; c < 3; c++) {
        const src = tile.subarray(c * n, (c + 1) * n);
        const plane = out[c]!;
        for (let i = 0; i < n; i++) if (Number.isNaN(src[i]!)) plane[i] = NaN;
        encodeHalf(plane, half, 1, n, 0, c * n);
      }
      return { result: { bytes: new Uint8Array(half.buffer), source: recipe.source }, transfer: [half.buffer] };
    }
    case 'export': {
      const settings = hmsSettings(req.config);
      const recipe = req.options.stretch === 'hms' ? recipeFromDiagnostics(req.diag, settings) : null;
      const img = await renderFits(req.source, { ...req.options, hms: { recipe, settings } });
      const buf = await encodeImage(img, req.format);
      const bytes = new Uint8Array(buf.byteLength);
      bytes.set(buf);
      return { result: { bytes, levels: img.levels, hms: img.hms }, transfer: [bytes.buffer] };
    }
  }
}

function failure(e: unknown): WorkerFailure {
  if (e instanceof ViewerError) return { code: e.code, message: e.message, ...(e.fitsCode ? { fits_code: e.fitsCode } : {}) };
  // The file is named by the caller (the worker sees a /proc/self/fd path): message without it.
  if (isFitsError(e)) return { code: 'FITS', message: e.message.startsWith(`${e.file}: `) ? e.message.slice(e.file.length + 2) : e.message, fits_code: e.code };
  if (e instanceof ExportError) return { code: e.code as ViewerErrorCode, message: e.message };
  if (e instanceof CacheRefused) return { code: 'CACHE_REFUSED', message: e.message };
  return { code: 'INTERNAL', message: (e as Error)?.message ?? String(e) };
}

parentPort!.on('message', (msg: { id: number; req: WorkerRequest }) => {
  handle(msg.req).then(
    ({ result, transfer }) => parentPort!.postMessage({ id: msg.id, ok: true, result } satisfies WorkerReply, transfer),
    (e: unknown) => parentPort!.postMessage({ id: msg.id, ok: false, error: failure(e) } satisfies WorkerReply),
  );
});
