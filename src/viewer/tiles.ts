// Reading the viewer's cached tiles (pyramid.ts wrote them): one tile's bytes by position, a tile
// decoded to float planes, and a whole level as planes (the sample an HMS look is solved on).
// Files are opened without following links; tiles outside the level are refused.

import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { join } from 'node:path';
import { halfTable } from '../shared/half-float.js';
import { tileBytes, tileOffset } from '../shared/pyramid-math.js';
import { levelName, type PyramidMeta } from './pyramid.js';
import { ViewerError } from './protocol.js';

export async function readTileBytes(dir: string, meta: PyramidMeta, level: number, tx: number, ty: number): Promise<Buffer> {
  const g = meta.levels[level];
  if (!g || !(tx >= 0 && tx < g.cols && ty >= 0 && ty < g.rows)) throw new ViewerError('OUT_OF_RANGE', `tile ${level}/${tx}/${ty} does not exist`);
  const size = tileBytes(meta.channels, meta.tile);
  const buf = Buffer.alloc(size);
  const fh = await open(join(dir, levelName(level)), constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const { bytesRead } = await fh.read(buf, 0, size, tileOffset(g, tx, ty, meta.channels, meta.tile));
    if (bytesRead !== size) throw new ViewerError('INTERNAL', 'the tile cache is short; it is rebuilt on the next view');
  } finally {
    await fh.close();
  }
  return buf;
}

/** A tile's samples as planar float values (value = half · scale; padding NaN). */
export function decodeTile(bytes: Uint8Array, meta: PyramidMeta): Float32Array {
  const h = new Uint16Array(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength));
  const t = halfTable();
  const out = new Float32Array(h.length);
  for (let i = 0; i < h.length; i++) out[i] = t[h[i]!]! * meta.scale;
  return out;
}

/** Level `level` as planes of its width × height (display order). */
export async function readLevelPlanes(dir: string, meta: PyramidMeta, level: number): Promise<Float32Array[]> {
  const g = meta.levels[level]!;
  const T = meta.tile;
  const planes = Array.from({ length: meta.channels }, () => new Float32Array(g.width * g.height));
  for (let ty = 0; ty < g.rows; ty++) {
    for (let tx = 0; tx < g.cols; tx++) {
      const tile = decodeTile(await readTileBytes(dir, meta, level, tx, ty), meta);
      const w = Math.min(T, g.width - tx * T);
      const hgt = Math.min(T, g.height - ty * T);
      for (let c = 0; c < meta.channels; c++) {
        for (let y = 0; y < hgt; y++) planes[c]!.set(tile.subarray((c * T + y) * T, (c * T + y) * T + w), (ty * T + y) * g.width + tx * T);
      }
    }
  }
  return planes;
}
