// The viewer's canvas: zoom (fit, 1:1, 4:1, wheel around the cursor), pan (drag, arrow keys), and
// drawing the pyramid level that matches the zoom (levelForZoom), over the coarsest level while
// finer tiles load. With a second image it blinks (one image at a time) or splits (left: A,
// right: B, a draggable divider). Image coordinates here are display coordinates of level 0
// (row 0 = top of the picture); viewer-page converts to FITS rows for the readout.

import { fitZoom, levelForZoom, TILE, visibleTiles } from '../shared/pyramid-math.js';
import type { ImageSource } from './viewer-source.js';

export type CompareMode = 'off' | 'blink' | 'split';

export const MIN_ZOOM_FACTOR = 0.5;
export const MAX_ZOOM = 16;

export class ViewerCanvas {
  zoom = 1;
  /** View centre in image pixels. */
  cx = 0;
  cy = 0;
  a: ImageSource | null = null;
  b: ImageSource | null = null;
  mode: CompareMode = 'off';
  /** Blink: which image is shown. */
  showing: 'a' | 'b' = 'a';
  /** Split: divider position as a fraction of the canvas width. */
  split = 0.5;
  onView: () => void = () => {};
  /** After each draw: whether every tile of the level the zoom asks for was there. */
  onDrawn: (complete: boolean) => void = () => {};
  onPointer: (ix: number, iy: number, inside: boolean) => void = () => {};
  onTileError: (s: ImageSource, e: unknown) => void = () => {};
  private frame = 0;
  private drag: { x: number; y: number; cx: number; cy: number; divider: boolean } | null = null;
  private readonly ctx: CanvasRenderingContext2D;

  constructor(readonly canvas: HTMLCanvasElement) {
    this.ctx = canvas.getContext('2d')!;
    canvas.addEventListener('wheel', (e) => this.wheel(e), { passive: false });
    canvas.addEventListener('pointerdown', (e) => this.down(e));
    canvas.addEventListener('pointermove', (e) => this.move(e));
    canvas.addEventListener('pointerup', (e) => this.up(e));
    canvas.addEventListener('pointercancel', (e) => this.up(e));
    canvas.addEventListener('pointerleave', () => this.onPointer(0, 0, false));
    canvas.addEventListener('keydown', (e) => this.key(e));
    new ResizeObserver(() => this.resize()).observe(canvas.parentElement!);
    this.resize();
  }

  get width(): number {
    return this.canvas.width;
  }
  get height(): number {
    return this.canvas.height;
  }

  private resize(): void {
    const box = this.canvas.parentElement!.getBoundingClientRect();
    const w = Math.max(100, Math.floor(box.width));
    const h = Math.max(100, Math.floor(box.height));
    if (w === this.canvas.width && h === this.canvas.height) return;
    this.canvas.width = w;
    this.canvas.height = h;
    this.request();
  }

  setImages(a: ImageSource, b: ImageSource | null): void {
    const first = this.a === null;
    this.a = a;
    this.b = b;
    for (const s of [a, b]) if (s) s.onTile = () => this.request();
    for (const s of [a, b]) if (s) s.onError = (e) => this.onTileError(s, e);
    if (first) this.fit();
    this.request();
  }

  fitZoom(): number {
    return this.a ? fitZoom(this.a.info.width, this.a.info.height, this.width, this.height) : 1;
  }

  fit(): void {
    if (!this.a) return;
    this.zoom = this.fitZoom();
    this.cx = this.a.info.width / 2;
    this.cy = this.a.info.height / 2;
    this.changed();
  }

  /** Sets the zoom keeping the image point under screen point (sx, sy) in place (default: centre). */
  setZoom(z: number, sx = this.width / 2, sy = this.height / 2): void {
    const min = Math.min(1, this.fitZoom()) * MIN_ZOOM_FACTOR;
    const nz = Math.max(min, Math.min(MAX_ZOOM, z));
    const [ix, iy] = this.toImage(sx, sy);
    this.zoom = nz;
    this.cx = ix - (sx - this.width / 2) / nz;
    this.cy = iy - (sy - this.height / 2) / nz;
    this.changed();
  }

  /** Centres the view on image pixel (ix, iy) (its centre). */
  centreOn(ix: number, iy: number): void {
    this.cx = ix + 0.5;
    this.cy = iy + 0.5;
    this.changed();
  }

  toImage(sx: number, sy: number): [number, number] {
    return [this.cx + (sx - this.width / 2) / this.zoom, this.cy + (sy - this.height / 2) / this.zoom];
  }

  toScreen(ix: number, iy: number): [number, number] {
    return [(ix - this.cx) * this.zoom + this.width / 2, (iy - this.cy) * this.zoom + this.height / 2];
  }

  private changed(): void {
    this.onView();
    this.request();
  }

  request(): void {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.draw();
    });
  }

  /** Draws now (tests and the first frame call it directly). */
  draw(): void {
    const { ctx } = this;
    ctx.setTransform(1, 0, 0, 1, 0, 0);
    ctx.fillStyle = '#15181c';
    ctx.fillRect(0, 0, this.width, this.height);
    if (!this.a) return;
    this.missing = 0;
    if (this.mode === 'split' && this.b) {
      const x = Math.round(this.split * this.width);
      this.clipped(0, x, this.a);
      this.clipped(x, this.width, this.b);
      ctx.fillStyle = '#f0a202';
      ctx.fillRect(x - 1, 0, 2, this.height);
    } else this.drawSource(this.mode === 'blink' && this.b && this.showing === 'b' ? this.b : this.a);
    this.onDrawn(this.missing === 0);
  }

  private missing = 0;

  private clipped(x0: number, x1: number, s: ImageSource): void {
    const { ctx } = this;
    ctx.save();
    ctx.beginPath();
    ctx.rect(x0, 0, x1 - x0, this.height);
    ctx.clip();
    this.drawSource(s);
    ctx.restore();
  }

  private drawSource(s: ImageSource): void {
    const last = s.info.levels.length - 1;
    const level = levelForZoom(this.zoom, s.info.levels.length);
    // Coarsest level first (one tile, always there quickly), the matching level over it.
    const coarse = this.drawLevel(s, last);
    this.missing += level !== last ? this.drawLevel(s, level) : coarse;
  }

  /** Draws the level's visible tiles that are loaded; returns how many are still missing. */
  private drawLevel(s: ImageSource, level: number): number {
    const g = s.info.levels[level]!;
    const [left, top] = this.toImage(0, 0);
    const range = visibleTiles(g, left, top, this.width / this.zoom, this.height / this.zoom);
    const { ctx } = this;
    ctx.imageSmoothingEnabled = this.zoom < 1;
    ctx.imageSmoothingQuality = 'medium';
    const span = TILE * g.scale;
    let missing = 0;
    for (let ty = range.y0; ty < range.y1; ty++) {
      for (let tx = range.x0; tx < range.x1; tx++) {
        const tile = s.tile(level, tx, ty);
        if (!tile) {
          missing++;
          continue;
        }
        const w = Math.min(TILE, g.width - tx * TILE);
        const h = Math.min(TILE, g.height - ty * TILE);
        // The level's pixels cover `scale` image pixels, the last ones only what is left of the image.
        const iw = Math.min(w * g.scale, s.info.width - tx * span);
        const ih = Math.min(h * g.scale, s.info.height - ty * span);
        const [sx, sy] = this.toScreen(tx * span, ty * span);
        ctx.drawImage(tile, 0, 0, w, h, sx, sy, iw * this.zoom, ih * this.zoom);
      }
    }
    return missing;
  }

  private wheel(e: WheelEvent): void {
    e.preventDefault();
    const r = this.canvas.getBoundingClientRect();
    this.setZoom(this.zoom * (e.deltaY < 0 ? 1.25 : 0.8), e.clientX - r.left, e.clientY - r.top);
  }

  private nearDivider(sx: number): boolean {
    return this.mode === 'split' && this.b !== null && Math.abs(sx - this.split * this.width) < 8;
  }

  private down(e: PointerEvent): void {
    const r = this.canvas.getBoundingClientRect();
    const sx = e.clientX - r.left;
    this.canvas.setPointerCapture(e.pointerId);
    this.drag = { x: e.clientX, y: e.clientY, cx: this.cx, cy: this.cy, divider: this.nearDivider(sx) };
    this.canvas.classList.add('dragging');
  }

  private move(e: PointerEvent): void {
    const r = this.canvas.getBoundingClientRect();
    const sx = e.clientX - r.left;
    const sy = e.clientY - r.top;
    this.canvas.style.cursor = this.drag?.divider || this.nearDivider(sx) ? 'ew-resize' : this.drag ? 'grabbing' : 'crosshair';
    if (this.drag) {
      if (this.drag.divider) {
        this.split = Math.max(0.02, Math.min(0.98, sx / this.width));
        this.request();
      } else {
        this.cx = this.drag.cx - (e.clientX - this.drag.x) / this.zoom;
        this.cy = this.drag.cy - (e.clientY - this.drag.y) / this.zoom;
        this.changed();
      }
    }
    const [ix, iy] = this.toImage(sx, sy);
    const inside = !!this.a && ix >= 0 && iy >= 0 && ix < this.a.info.width && iy < this.a.info.height;
    this.onPointer(ix, iy, inside);
  }

  private up(e: PointerEvent): void {
    if (this.canvas.hasPointerCapture(e.pointerId)) this.canvas.releasePointerCapture(e.pointerId);
    this.drag = null;
    this.canvas.classList.remove('dragging');
  }

  private key(e: KeyboardEvent): void {
    const step = 64 / this.zoom;
    const handled = (() => {
      switch (e.key) {
        case 'ArrowLeft':
          this.cx -= step;
          break;
        case 'ArrowRight':
          this.cx += step;
          break;
        case 'ArrowUp':
          this.cy -= step;
          break;
        case 'ArrowDown':
          this.cy += step;
          break;
        case '+':
        case '=':
          this.setZoom(this.zoom * 1.25);
          return true;
        case '-':
          this.setZoom(this.zoom * 0.8);
          return true;
        case '0':
          this.fit();
          return true;
        case '1':
          this.setZoom(1);
          return true;
        case '4':
          this.setZoom(4);
          return true;
        default:
          return false;
      }
      this.changed();
      return true;
    })();
    if (handled) e.preventDefault();
  }
}
