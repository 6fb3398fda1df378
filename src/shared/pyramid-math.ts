// Geometry of the image viewer's tile pyramid (docs/viewer.md), shared by the server that builds
// it and the browser that draws it. DOM-free.
// - Level 0 is the image; level k+1 halves level k: width_{k+1} = ceil(width_k / 2) (each pixel
//   the mean of the finite samples of its 2×2 block, NaN when none), the same for heights.
// - The last level is the first whose width and height both fit one tile.
// - Every level is cut into TILE × TILE tiles in display order (row 0 = top of the picture, see
//   displayFlipped); edge tiles are padded with NaN so every tile has the same size.
// - A view at zoom z (screen pixels per image pixel) draws the finest level whose pixels are not
//   smaller than a screen pixel: level = clamp(floor(log2(1 / z)), 0, last).

export const TILE = 256;

export interface LevelGeometry {
  level: number;
  /** Image pixels per level pixel along each axis (2^level). */
  scale: number;
  width: number;
  height: number;
  /** Tiles across and down. */
  cols: number;
  rows: number;
}

export function pyramidLevels(width: number, height: number, tile = TILE): LevelGeometry[] {
  if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0)) throw new RangeError(`pyramid: bad size ${width}×${height}`);
  const out: LevelGeometry[] = [];
  let w = width;
  let h = height;
  for (let level = 0; ; level++) {
    out.push({ level, scale: 2 ** level, width: w, height: h, cols: Math.ceil(w / tile), rows: Math.ceil(h / tile) });
    if (w <= tile && h <= tile) return out;
    w = Math.ceil(w / 2);
    h = Math.ceil(h / 2);
  }
}

/** The level to draw at zoom `zoom` (screen px per image px). */
export function levelForZoom(zoom: number, levels: number): number {
  if (!(zoom > 0)) return levels - 1;
  const l = Math.floor(Math.log2(1 / zoom) + 1e-9);
  return Math.max(0, Math.min(levels - 1, l));
}

/** Zoom that fits the whole image into a viewport (never above 1:1 unless the image is tiny). */
export function fitZoom(width: number, height: number, viewW: number, viewH: number): number {
  if (!(viewW > 0 && viewH > 0)) return 1;
  return Math.min(viewW / width, viewH / height);
}

export interface TileRange {
  x0: number;
  y0: number;
  x1: number;
  y1: number;
}

/**
 * Tiles of `g` that intersect the image rectangle [left, left + w) × [top, top + h) (image
 * pixels of level 0, display order), clamped to the level's grid; x1/y1 exclusive.
 */
export function visibleTiles(g: LevelGeometry, left: number, top: number, w: number, h: number, tile = TILE): TileRange {
  const span = tile * g.scale;
  const x0 = Math.min(g.cols, Math.max(0, Math.floor(left / span)));
  const y0 = Math.min(g.rows, Math.max(0, Math.floor(top / span)));
  const x1 = Math.min(g.cols, Math.ceil((left + w) / span));
  const y1 = Math.min(g.rows, Math.ceil((top + h) / span));
  return { x0, y0, x1: Math.max(x0, x1), y1: Math.max(y0, y1) };
}

/** Bytes of one tile: planes × TILE × TILE half floats, planar. */
export function tileBytes(planes: number, tile = TILE): number {
  return planes * tile * tile * 2;
}

/** Byte offset of tile (tx, ty) in its level's file (tiles in row-major order). */
export function tileOffset(g: LevelGeometry, tx: number, ty: number, planes: number, tile = TILE): number {
  return (ty * g.cols + tx) * tileBytes(planes, tile);
}

/**
 * FITS rows are stored bottom-up by the FITS convention (the first row is the bottom of the
 * picture, as ds9 and Siril show it) unless ROWORDER = 'TOP-DOWN' says the first row is the top
 * (capture programs write that). Pictures (PNG, TIFF, JPEG, the screen) go top-down, so the rows
 * are flipped for display and export unless the header says TOP-DOWN.
 */
export function displayFlipped(rowOrder: string | null | undefined): boolean {
  return (rowOrder ?? '').trim().toUpperCase() !== 'TOP-DOWN';
}

/** The FITS (storage) row of display row `y` (0 = top), and back (the map is its own inverse). */
export function fitsRow(displayRow: number, height: number, flipped: boolean): number {
  return flipped ? height - 1 - displayRow : displayRow;
}
