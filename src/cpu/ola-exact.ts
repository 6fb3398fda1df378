// A literal overlap-add of per-tile weighted means: the test reference the weight-field stack
// (stack-weightfield.ts) must equal with clipping off. Per tile t the weighted mean of the
// frames, M_t(p) = Σ_f W_ft·I_f(p) / Σ_f W_ft over the tile's pixels; then every pixel blends the
// tiles covering it with the window of stack-weightfield.ts, R(p) = Σ_t h_t(p)·M_t(p) / Σ_t h_t(p).
// Whole images in memory, f64 sums; for tests only (no rejection, no NaN handling beyond
// propagating it).

import { tileWindow } from './stack-weightfield.js';

export interface OlaTiles {
  originsX: readonly number[];
  originsY: readonly number[];
  /** Tile size along x and y. */
  sizeX: number;
  sizeY: number;
}

/** frames: N × H × W (frame-major); weights: N × tilesY × tilesX (raw W_ft, not normalised). */
export function olaExact(frames: Float32Array, n: number, width: number, height: number, tiles: OlaTiles, weights: ArrayLike<number>): Float64Array {
  const acc = new Float64Array(width * height);
  const norm = new Float64Array(width * height);
  const nx = tiles.originsX.length;
  const ny = tiles.originsY.length;
  const plane = width * height;
  for (let ty = 0; ty < ny; ty++) {
    for (let tx = 0; tx < nx; tx++) {
      const t = ty * nx + tx;
      let d = 0;
      for (let f = 0; f < n; f++) d += weights[f * nx * ny + t]!;
      const x0 = tiles.originsX[tx]!;
      const y0 = tiles.originsY[ty]!;
      for (let j = 0; j < tiles.sizeY; j++) {
        const y = y0 + j;
        const hy = tileWindow(j, tiles.sizeY);
        for (let i = 0; i < tiles.sizeX; i++) {
          const x = x0 + i;
          let m = 0;
          for (let f = 0; f < n; f++) m += weights[f * nx * ny + t]! * frames[f * plane + y * width + x]!;
          const h = hy * tileWindow(i, tiles.sizeX);
          acc[y * width + x]! += h * (m / d);
          norm[y * width + x]! += h;
        }
      }
    }
  }
  for (let i = 0; i < plane; i++) acc[i] = acc[i]! / norm[i]!;
  return acc;
}
