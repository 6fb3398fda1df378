// One image in the viewer: its meta from /image/info, its tiles (fetched on demand, kept in a
// bounded cache as raw half floats), its display levels and the tiles rendered through them.
// Rendering goes through per-channel lookup tables indexed by the half-float bits
// (stretch-math.ts buildLut), so a change of levels re-renders from memory without a fetch.

import { ApiError, request } from './api.js';
import { askForToken, sessionReady } from './auth.js';
import { halfTable } from '../shared/half-float.js';
import { TILE, type LevelGeometry } from '../shared/pyramid-math.js';
import { buildLut, defaultParams, type ChannelStats, type DisplayParams, type StretchMode } from '../shared/stretch-math.js';

export interface HistogramView {
  lo: number;
  hi: number;
  counts: number[];
  above?: number;
}

export interface ImageInfo {
  path: string;
  run_id: string;
  width: number;
  height: number;
  planes: number;
  channels: number;
  bitpix: number;
  row_order: string | null;
  flipped: boolean;
  tile: number;
  scale: number;
  levels: LevelGeometry[];
  stats: (ChannelStats & { histogram: HistogramView })[];
  stretched: boolean;
  wcs: boolean;
  version: string;
  cache: 'hit' | 'built';
  build_ms: number;
}

export interface PixelReading {
  x: number;
  y: number;
  values: (number | null)[];
  ra: number | null;
  dec: number | null;
}

const enc = encodeURIComponent;
const MAX_TILES = 160;

export type Look = 'raw' | 'hms';

export class ImageSource {
  params: DisplayParams;
  look: Look = 'raw';
  /** Rendered tiles for the current levels and look, keyed `look/level/x/y`. */
  private readonly rendered = new Map<string, HTMLCanvasElement>();
  private readonly raw = new Map<string, Uint16Array>();
  private readonly loading = new Map<string, Promise<void>>();
  private luts: Uint8Array[] = [];
  /** Histogram of the HMS look (from its coarsest tile), once fetched. */
  lookHistogram: HistogramView[] | null = null;
  onTile: () => void = () => {};
  /** A tile that failed to load (reported once; not asked again until the look or levels change). */
  onError: (e: unknown) => void = () => {};
  private readonly failed = new Set<string>();

  private constructor(
    readonly runId: string,
    readonly info: ImageInfo,
  ) {
    this.params = defaultParams(info.stretched ? 'hms' : 'auto', info.stats, true);
    this.rebuildLuts();
  }

  static async open(runId: string, path: string): Promise<ImageSource> {
    const info = await request<ImageInfo>('GET', `/api/runs/${enc(runId)}/image/info?path=${enc(path)}`);
    return new ImageSource(runId, info);
  }

  get path(): string {
    return this.info.path;
  }

  /** Whether the HMS look can be computed (a linear RGB image) or is the image itself. */
  get hmsAvailable(): boolean {
    return this.info.stretched || this.info.channels === 3;
  }

  /** The look a stretch mode draws from: the server's HMS look for hms on a linear image. */
  static lookFor(mode: StretchMode, info: ImageInfo): Look {
    return mode === 'hms' && !info.stretched ? 'hms' : 'raw';
  }

  /** Default levels for `mode` (the look changes with it). */
  setMode(mode: StretchMode, linked: boolean): void {
    this.look = ImageSource.lookFor(mode, this.info);
    const stats = this.look === 'hms' ? this.info.stats.map(() => ({ count: 1, min: 0, max: 1, median: 0.5, mad: 0.1 })) : this.info.stats;
    this.params = defaultParams(mode, stats, linked);
    this.rebuildLuts();
  }

  setParams(p: DisplayParams): void {
    this.params = p;
    this.rebuildLuts();
  }

  private rebuildLuts(): void {
    const table = halfTable();
    const scale = this.look === 'hms' ? 1 : this.info.scale;
    this.luts = this.params.channels.map((c) => buildLut(c, this.params.mode, scale, table));
    this.rendered.clear();
    this.failed.clear();
  }

  tileUrl(level: number, x: number, y: number, look: Look = this.look): string {
    return `/api/runs/${enc(this.runId)}/image/tile?path=${enc(this.path)}&level=${level}&x=${x}&y=${y}${look === 'hms' ? '&look=hms' : ''}`;
  }

  private key(level: number, x: number, y: number, look = this.look): string {
    return `${look}/${level}/${x}/${y}`;
  }

  /** The rendered tile, or null while it loads (the load starts here; onTile fires when it lands). */
  tile(level: number, x: number, y: number): HTMLCanvasElement | null {
    const k = this.key(level, x, y);
    const done = this.rendered.get(k);
    if (done) return done;
    const data = this.raw.get(k);
    if (data) {
      const c = this.render(data);
      this.rendered.set(k, c);
      return c;
    }
    if (!this.loading.has(k) && !this.failed.has(k)) {
      const p = this.fetchTile(level, x, y, this.look).then(
        () => {
          this.loading.delete(k);
          this.onTile();
        },
        (e: unknown) => {
          this.loading.delete(k);
          if (this.failed.size === 0) this.onError(e);
          this.failed.add(k);
        },
      );
      this.loading.set(k, p);
    }
    return null;
  }

  /** Raw half-float tile data (fetched when missing). */
  async tileData(level: number, x: number, y: number, look: Look = this.look): Promise<Uint16Array> {
    const k = this.key(level, x, y, look);
    if (!this.raw.has(k)) await this.fetchTile(level, x, y, look);
    return this.raw.get(k)!;
  }

  private async fetchTile(level: number, x: number, y: number, look: Look): Promise<void> {
    await sessionReady();
    const res = await fetch(this.tileUrl(level, x, y, look), { credentials: 'same-origin' });
    if (!res.ok) {
      if (res.status === 401) askForToken();
      let env: { error?: { code?: string; message?: string } } = {};
      try {
        env = (await res.json()) as typeof env;
      } catch {
        // not JSON
      }
      throw new ApiError(res.status, env.error?.code ?? `HTTP_${res.status}`, env.error?.message ?? res.statusText, null);
    }
    const data = new Uint16Array(await res.arrayBuffer());
    const k = this.key(level, x, y, look);
    this.raw.set(k, data);
    while (this.raw.size > MAX_TILES) {
      const first = this.raw.keys().next().value as string;
      this.raw.delete(first);
      this.rendered.delete(first);
    }
  }

  /** Histogram of the HMS look, from its coarsest level (one tile: the whole image, box-averaged). */
  async loadLookHistogram(bins = 256): Promise<HistogramView[]> {
    const last = this.info.levels.length - 1;
    const data = await this.tileData(last, 0, 0, 'hms');
    const table = halfTable();
    const n = TILE * TILE;
    const g = this.info.levels[last]!;
    this.lookHistogram = Array.from({ length: this.info.channels }, (_, c) => {
      const counts = new Array<number>(bins).fill(0);
      for (let y = 0; y < g.height; y++) {
        for (let x = 0; x < g.width; x++) {
          const v = table[data[c * n + y * TILE + x]!]!;
          if (v - v === 0) counts[Math.min(bins - 1, Math.max(0, Math.floor(v * bins)))]!++;
        }
      }
      return { lo: 0, hi: 1, counts };
    });
    return this.lookHistogram;
  }

  private render(data: Uint16Array): HTMLCanvasElement {
    const canvas = document.createElement('canvas');
    canvas.width = TILE;
    canvas.height = TILE;
    const ctx = canvas.getContext('2d')!;
    const img = ctx.createImageData(TILE, TILE);
    const px = img.data;
    const n = TILE * TILE;
    const ch = this.info.channels;
    const [lr, lg, lb] = [this.luts[0]!, this.luts[Math.min(1, this.luts.length - 1)]!, this.luts[Math.min(2, this.luts.length - 1)]!];
    if (ch === 3) {
      for (let i = 0; i < n; i++) {
        const o = 4 * i;
        px[o] = lr[data[i]!]!;
        px[o + 1] = lg[data[n + i]!]!;
        px[o + 2] = lb[data[2 * n + i]!]!;
        px[o + 3] = 255;
      }
    } else {
      for (let i = 0; i < n; i++) {
        const o = 4 * i;
        const v = lr[data[i]!]!;
        px[o] = px[o + 1] = px[o + 2] = v;
        px[o + 3] = 255;
      }
    }
    ctx.putImageData(img, 0, 0);
    return canvas;
  }

  async pixel(x: number, y: number): Promise<PixelReading> {
    return request<PixelReading>('GET', `/api/runs/${enc(this.runId)}/image/pixel?path=${enc(this.path)}&x=${x}&y=${y}`);
  }

  /** The export endpoint for the current levels (the download shows what the viewer shows). */
  exportUrl(format: 'png' | 'tiff' | 'jpeg', bits: 8 | 16): string {
    const p = this.params;
    const list = (f: (c: DisplayParams['channels'][number]) => number) => p.channels.map((c) => String(f(c))).join(',');
    const q = new URLSearchParams({
      path: this.path,
      format,
      bits: String(bits),
      stretch: p.mode,
      linked: String(p.linked),
      black: list((c) => c.black),
      mid: list((c) => c.mid),
      white: list((c) => c.white),
      beta: list((c) => c.beta),
    });
    return `/api/runs/${enc(this.runId)}/image/export?${q.toString()}`;
  }
}
