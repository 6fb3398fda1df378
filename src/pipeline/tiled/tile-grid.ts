// TILE_GRID's rule: the tile size from the measured seeing, the overlap and the tile origins
// (docs/tiled-workflow.md "Tile grid"). A pure function of the image size, the seeing and the
// `tile.*` keys.
//   T = floor(clip(size_factor · F, T_min, max(T_min, min(W, H) / max_divisor))), T_min = max(16, min_size)
//   O = floor(overlap_fraction · T), S = T − O (S ≤ 0 cannot happen with overlap ≤ 0.5; guarded)
//   origins per axis 0, S, 2S, … while the tile fits, plus one tile flush with the far edge;
//   an axis shorter than T gets one tile of the axis' length.
// Every pixel is covered; along an axis at most three tiles cover a position (two regular ones
// and the flush one), within cpu/stack-weightfield.ts AXIS_SLOTS.

export interface TileSettings {
  size_factor: number;
  min_size: number;
  max_divisor: number;
  overlap_fraction: number;
}

export interface TileGrid {
  imageWidth: number;
  imageHeight: number;
  /** Seeing the size came from (px) and whether it was measured (else the 3 px default). */
  seeingFwhm: number;
  seeingMeasured: boolean;
  tileSize: number;
  overlapPx: number;
  stride: number;
  /** Tile size along each axis (the tile size, or the axis length when shorter). */
  sizeX: number;
  sizeY: number;
  originsX: number[];
  originsY: number[];
}

/** Seeing assumed when no frame has a measured FWHM. */
export const DEFAULT_SEEING_PX = 3;

export function axisOrigins(n: number, T: number, S: number): number[] {
  if (T >= n) return [0];
  const out: number[] = [];
  for (let o = 0; o + T <= n; o += S) out.push(o);
  if (out[out.length - 1]! + T < n) out.push(n - T);
  return out;
}

export function tileGrid(width: number, height: number, seeing: number | null, t: TileSettings): TileGrid {
  const measured = seeing !== null && Number.isFinite(seeing) && seeing > 0;
  const F = measured ? seeing : DEFAULT_SEEING_PX;
  const tMin = Math.max(16, t.min_size);
  const tMax = Math.max(tMin, Math.min(width, height) / t.max_divisor);
  const T = Math.floor(Math.min(Math.max(t.size_factor * F, tMin), tMax));
  let O = Math.floor(Math.min(Math.max(t.overlap_fraction, 0), 0.5) * T);
  if (T - O <= 0) O = Math.floor(0.25 * T);
  const S = T - O;
  const sizeX = Math.min(T, width);
  const sizeY = Math.min(T, height);
  return { imageWidth: width, imageHeight: height, seeingFwhm: F, seeingMeasured: measured, tileSize: T, overlapPx: O, stride: S, sizeX, sizeY, originsX: axisOrigins(width, sizeX, S), originsY: axisOrigins(height, sizeY, S) };
}

export const tileCount = (g: TileGrid): number => g.originsX.length * g.originsY.length;

/** Tile t's rectangle (row-major over the grid: t = ty · tilesX + tx). */
export function tileRect(g: TileGrid, t: number): { x: number; y: number; width: number; height: number } {
  const nx = g.originsX.length;
  return { x: g.originsX[t % nx]!, y: g.originsY[Math.floor(t / nx)]!, width: g.sizeX, height: g.sizeY };
}
