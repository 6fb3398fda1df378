// The viewer's tile pyramid of one FITS image (docs/viewer.md), built in one streaming pass:
// the image is read in bands of TILE display rows (bottom-up FITS rows flipped, see
// displayFlipped), each band is cut into level-0 tiles and halved into the next level's band,
// and so on down the levels, so memory is about two bands per level whatever the image size.
// The channel statistics (min, max, median, MAD, histogram) are gathered in the same pass.
//
// Cache layout (a folder per image, under the run's `.cache/viewer/`):
//   level-<k>.f16   every tile of level k, row-major, each planes × TILE × TILE half floats
//                   (planar), holding value / scale (scale a power of two, in the meta)
//   meta.json       written last: what is there, and for which source (size, mtime); a cache
//                   whose meta does not match the source, or whose files are short, is rebuilt
// Files are written under temporary names (O_EXCL, no links followed) and renamed into place.

import { constants } from 'node:fs';
import { open, readFile, rename, stat, unlink, type FileHandle } from 'node:fs/promises';
import { join } from 'node:path';
import { randomBytes } from 'node:crypto';
import { TanWcs } from '../astro/wcs.js';
import { FitsReader } from '../fits/index.js';
import { rowOrder } from '../fits/keys.js';
import { encodeHalfBits, HALF_NAN } from '../shared/half-float.js';
import { displayFlipped, pyramidLevels, TILE, tileBytes, type LevelGeometry } from '../shared/pyramid-math.js';
import { ChannelAccumulator, type ChannelSummary } from './stats.js';

/** Bumped whenever the cache layout or its meaning changes: older caches are rebuilt. */
export const PYRAMID_FORMAT = 1;

export interface PyramidMeta {
  format: number;
  source: { path: string; size: number; mtime_ms: number };
  width: number;
  height: number;
  /** Planes of the FITS image. */
  planes: number;
  /** Planes in the tiles: 3 (RGB from planes 0..2) or 1. */
  channels: number;
  bitpix: number;
  row_order: 'TOP-DOWN' | 'BOTTOM-UP' | null;
  /** Display rows are FITS rows reversed (displayFlipped). */
  flipped: boolean;
  tile: number;
  /** Tile samples hold value / scale. */
  scale: number;
  levels: LevelGeometry[];
  stats: ChannelSummary[];
  /** The image is an HMS output: already stretched into [0, 1]. */
  stretched: boolean;
  wcs: boolean;
  build_ms: number;
  created_at: string;
}

export const META_NAME = 'meta.json';
export const levelName = (k: number) => `level-${k}.f16`;

/** Power-of-two tile scale that keeps |values| well inside the half range. */
export function idealScale(maxAbs: number): number {
  if (!(maxAbs > 0) || !Number.isFinite(maxAbs)) return 1;
  return 2 ** (Math.ceil(Math.log2(maxAbs)) - 15);
}

/** First guess before the data are seen: integer images from their BITPIX, floats 1. */
function initialScale(bitpix: number): number {
  switch (bitpix) {
    case 16:
      return 2;
    case 32:
      return 2 ** 17;
    case 64:
      return 2 ** 49;
    default:
      return 1;
  }
}

/** True when `scale` wastes precision or overflows the half range for data up to `maxAbs`. */
export function scaleUnfit(maxAbs: number, scale: number): boolean {
  if (!(maxAbs > 0) || !Number.isFinite(maxAbs)) return false;
  const r = maxAbs / scale;
  return r > 131008 || r < 2 ** -8;
}

/** Opens a file of the cache folder for writing under a fresh temporary name (no links followed). */
async function createTemp(dir: string, name: string): Promise<{ fh: FileHandle; tmp: string }> {
  const tmp = join(dir, `.${name}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fh = await open(tmp, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | constants.O_NOFOLLOW, 0o644);
  return { fh, tmp };
}

/** One level's band of up to TILE rows being filled, flushed as a row of tiles. */
class LevelBand {
  readonly buf: Float32Array;
  private readonly bits: Uint32Array;
  private readonly k: number;
  filled = 0;
  tileRow = 0;
  private readonly tiles: Uint16Array;

  constructor(
    readonly g: LevelGeometry,
    readonly channels: number,
    readonly fh: FileHandle,
    readonly scale: number,
    readonly next: LevelBand | null,
  ) {
    this.buf = new Float32Array(channels * TILE * g.width);
    this.bits = new Uint32Array(this.buf.buffer);
    this.k = Math.log2(scale);
    this.tiles = new Uint16Array((g.cols * tileBytes(channels)) / 2);
  }

  /** Appends `rows` rows (planar: channel c, row r at (c * rows + r) * width) from `src`. */
  async append(src: Float32Array, rows: number): Promise<void> {
    const w = this.g.width;
    let done = 0;
    while (done < rows) {
      const take = Math.min(rows - done, TILE - this.filled);
      for (let c = 0; c < this.channels; c++) {
        this.buf.set(src.subarray((c * rows + done) * w, (c * rows + done + take) * w), (c * TILE + this.filled) * w);
      }
      this.filled += take;
      done += take;
      if (this.filled === TILE) await this.flush();
    }
  }

  async flush(): Promise<void> {
    if (this.filled === 0) return;
    const { g, channels } = this;
    const w = g.width;
    const rows = this.filled;
    this.tiles.fill(HALF_NAN);
    const perTile = channels * TILE * TILE;
    for (let tx = 0; tx < g.cols; tx++) {
      const x0 = tx * TILE;
      const n = Math.min(TILE, w - x0);
      for (let c = 0; c < channels; c++) {
        for (let y = 0; y < rows; y++) encodeHalfBits(this.bits, this.tiles, this.k, n, (c * TILE + y) * w + x0, tx * perTile + (c * TILE + y) * TILE);
      }
    }
    const bytes = new Uint8Array(this.tiles.buffer, 0, this.tiles.byteLength);
    await this.fh.write(bytes, 0, bytes.byteLength, this.tileRow * bytes.byteLength);
    if (this.next) {
      const half = halve(this.buf, w, rows, channels, this.next.g.width);
      await this.next.append(half, Math.ceil(rows / 2));
    }
    this.tileRow++;
    this.filled = 0;
  }
}

/**
 * 2×2 block means of `rows` rows of width `w` (band layout: channel c, row r at
 * (c * TILE + r) * w), into planar rows of width `w2`; non-finite samples are left out of a mean,
 * a block with none is NaN. Odd edges average the 1 or 2 samples they have.
 */
export function halve(src: Float32Array, w: number, rows: number, channels: number, w2: number, stride = TILE): Float32Array {
  const rows2 = Math.ceil(rows / 2);
  const out = new Float32Array(channels * rows2 * w2);
  for (let c = 0; c < channels; c++) {
    for (let r = 0; r < rows2; r++) {
      const a = (c * stride + 2 * r) * w;
      const b = 2 * r + 1 < rows ? a + w : -1;
      const o = (c * rows2 + r) * w2;
      for (let x = 0; x < w2; x++) {
        const x0 = 2 * x;
        const x1 = x0 + 1 < w ? x0 + 1 : -1;
        // Up to four samples; a missing neighbour (odd edge) reads as NaN and is left out.
        const v0 = src[a + x0]!;
        const v1 = x1 >= 0 ? src[a + x1]! : NaN;
        const v2 = b >= 0 ? src[b + x0]! : NaN;
        const v3 = b >= 0 && x1 >= 0 ? src[b + x1]! : NaN;
        let sum = 0;
        let n = 0;
        if (v0 - v0 === 0) {
          sum += v0;
          n++;
        }
        if (v1 - v1 === 0) {
          sum += v1;
          n++;
        }
        if (v2 - v2 === 0) {
          sum += v2;
          n++;
        }
        if (v3 - v3 === 0) {
          sum += v3;
          n++;
        }
        out[o + x] = n > 0 ? sum / n : NaN;
      }
    }
  }
  return out;
}

export interface BuildOptions {
  /** File to read (a path, or /proc/self/fd/N of a descriptor the caller checked). */
  source: string;
  /** The cache folder of this image (exists, checked by the caller). */
  dir: string;
  /** Source identity recorded in the meta. */
  rel: string;
  size: number;
  mtimeMs: number;
}

async function buildOnce(o: BuildOptions, scale: number): Promise<PyramidMeta> {
  const started = Date.now();
  const reader = await FitsReader.open(o.source);
  const temps: { fh: FileHandle; tmp: string; name: string }[] = [];
  try {
    const { width, height, planes, bitpix } = reader.layout;
    const channels = planes >= 3 ? 3 : 1;
    const ro = rowOrder(reader.header) ?? null;
    const flipped = displayFlipped(ro);
    const levels = pyramidLevels(width, height);
    for (const g of levels) temps.push({ ...(await createTemp(o.dir, levelName(g.level))), name: levelName(g.level) });
    let next: LevelBand | null = null;
    for (let k = levels.length - 1; k >= 0; k--) next = new LevelBand(levels[k]!, channels, temps[k]!.fh, scale, next);
    const top = next!;
    const acc = Array.from({ length: channels }, () => new ChannelAccumulator(width * height));
    const band = new Float32Array(channels * TILE * width);
    const planeList = Array.from({ length: channels }, (_, c) => c);
    for (let d0 = 0; d0 < height; d0 += TILE) {
      const rows = Math.min(TILE, height - d0);
      const f0 = flipped ? height - d0 - rows : d0;
      const got = await reader.readRows(f0, rows, { planes: planeList });
      for (let c = 0; c < channels; c++) {
        const plane = got.data.subarray(c * rows * width, (c + 1) * rows * width);
        acc[c]!.add(plane);
        if (flipped) for (let r = 0; r < rows; r++) band.set(plane.subarray((rows - 1 - r) * width, (rows - r) * width), (c * rows + r) * width);
        else band.set(plane, c * rows * width);
      }
      await top.append(band, rows);
    }
    for (let b: LevelBand | null = top; b; b = b.next) await b.flush();
    for (const t of temps) await t.fh.close();
    for (const t of temps) await rename(t.tmp, join(o.dir, t.name));
    temps.length = 0;
    const stats = acc.map((a) => a.finish());
    return {
      format: PYRAMID_FORMAT,
      source: { path: o.rel, size: o.size, mtime_ms: o.mtimeMs },
      width,
      height,
      planes,
      channels,
      bitpix,
      row_order: ro,
      flipped,
      tile: TILE,
      scale,
      levels,
      stats,
      stretched: reader.header.getNumber('HMSLOGD') !== undefined,
      wcs: TanWcs.fromHeader(reader.header) !== undefined,
      build_ms: Date.now() - started,
      created_at: new Date().toISOString(),
    };
  } finally {
    for (const t of temps) {
      await t.fh.close().catch(() => undefined);
      await unlink(t.tmp).catch(() => undefined);
    }
    await reader.close();
  }
}

/** Builds the pyramid (a second pass only when the first scale guess did not fit the data) and writes meta.json. */
export async function buildPyramid(o: BuildOptions): Promise<PyramidMeta> {
  const probe = await FitsReader.open(o.source);
  const bitpix = probe.layout.bitpix;
  await probe.close();
  let meta = await buildOnce(o, initialScale(bitpix));
  const maxAbs = Math.max(0, ...meta.stats.flatMap((s) => (s.count > 0 ? [Math.abs(s.min), Math.abs(s.max)] : [])));
  if (scaleUnfit(maxAbs, meta.scale)) {
    const first = meta.build_ms;
    meta = await buildOnce(o, idealScale(maxAbs));
    meta.build_ms += first;
  }
  const { fh, tmp } = await createTemp(o.dir, META_NAME);
  try {
    await fh.writeFile(JSON.stringify(meta) + '\n');
    await fh.close();
    await rename(tmp, join(o.dir, META_NAME));
  } catch (e) {
    await fh.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
  return meta;
}

/** The cached meta when it describes this source and every level file is complete; else null. */
export async function cachedMeta(dir: string, source: { size: number; mtimeMs: number }): Promise<PyramidMeta | null> {
  let meta: PyramidMeta;
  try {
    const fh = await open(join(dir, META_NAME), constants.O_RDONLY | constants.O_NOFOLLOW);
    try {
      meta = JSON.parse(await fh.readFile({ encoding: 'utf8' })) as PyramidMeta;
    } finally {
      await fh.close();
    }
  } catch {
    return null;
  }
  if (meta.format !== PYRAMID_FORMAT || meta.source?.size !== source.size || meta.source?.mtime_ms !== source.mtimeMs || !Array.isArray(meta.levels)) return null;
  for (const g of meta.levels) {
    const s = await stat(join(dir, levelName(g.level))).catch(() => null);
    if (!s?.isFile() || s.size !== g.cols * g.rows * tileBytes(meta.channels)) return null;
  }
  return meta;
}

/** Reads meta.json without checking it against a source (tests, bench). */
export async function readMeta(dir: string): Promise<PyramidMeta> {
  return JSON.parse(await readFile(join(dir, META_NAME), 'utf8')) as PyramidMeta;
}
