// TypeScript reference for shaders/stack/ln_apply.wgsl: applies local normalization models
// (src/algorithms/local-normalization.ts) in place to a band of N registered frames, the layout
// the stack kernel reads: frame f, band row r, column x at (f·srcRows + srcRow0 + r)·width + x.
//   v' = a(x, y)·v + b(x, y),   y = y0 + r (image row),
// a and b interpolated from frame f's node grid by the model's rule (bilinear, the outer cells
// extended linearly to the image edge): fx = clamp((x − x0)/dx, −0.5, nx − 0.5),
// i = clamp(⌊fx⌋, 0, nx − 2), tx = fx − i (nx = 1: i = 0, tx = 0), likewise in y.
// No data: NaN stays NaN. All frames of one call share the grid geometry (the LN fit gives
// every frame of an image the same grid).
// Precision: the shader works in f32 (geometry, weights, coefficients, one multiply-add); this
// reference uses f64 on the f32-rounded inputs and rounds the result once, so the two differ by
// a few f32 ulps of |a·v| + |b| (test/gpu/ln-apply.test.ts states the bound).

import type { GridGeometry, LnModel } from '../algorithms/local-normalization.js';

export interface LnApplyParams {
  width: number;
  /** Rows to normalise. */
  rows: number;
  frames: number;
  /** Image row of band row 0. */
  y0: number;
  /** Rows per frame in the band buffer and the buffer row of band row 0 (default: rows, 0). */
  srcRows?: number;
  srcRow0?: number;
  grid: GridGeometry;
  /** frames × ny × nx × 2 f32: (a, b) per node, row-major per frame (packLnCoefficients). */
  coefficients: Float32Array;
}

/** Bytes per node in the coefficient table. */
export const LN_NODE_FLOATS = 2;

function sameGrid(a: GridGeometry, b: GridGeometry): boolean {
  return a.width === b.width && a.height === b.height && a.nx === b.nx && a.ny === b.ny && a.x0 === b.x0 && a.y0 === b.y0 && a.dx === b.dx && a.dy === b.dy;
}

/** The coefficient table of `models` (one per frame, all on one grid). */
export function packLnCoefficients(models: readonly Pick<LnModel, 'grid' | 'a' | 'b'>[]): { grid: GridGeometry; coefficients: Float32Array } {
  if (models.length === 0) throw new RangeError('ln-apply: no models');
  const grid = models[0]!.grid;
  const nodes = grid.nx * grid.ny;
  const out = new Float32Array(models.length * nodes * LN_NODE_FLOATS);
  models.forEach((m, f) => {
    if (!sameGrid(m.grid, grid)) throw new RangeError(`ln-apply: model ${f} has another grid than model 0`);
    if (m.a.length !== nodes || m.b.length !== nodes) throw new RangeError(`ln-apply: model ${f} holds ${m.a.length}/${m.b.length} coefficients for ${nodes} nodes`);
    for (let k = 0; k < nodes; k++) {
      out[(f * nodes + k) * 2] = m.a[k]!;
      out[(f * nodes + k) * 2 + 1] = m.b[k]!;
    }
  });
  return { grid, coefficients: out };
}

export function validateLnApply(p: LnApplyParams, bandLength?: number): void {
  for (const [name, v] of Object.entries({ width: p.width, rows: p.rows, frames: p.frames, y0: p.y0, nx: p.grid.nx, ny: p.grid.ny })) {
    if (!Number.isInteger(v) || v < (name === 'y0' ? 0 : 1)) throw new RangeError(`ln-apply: ${name} = ${v} invalid`);
  }
  const srcRows = p.srcRows ?? p.rows;
  const srcRow0 = p.srcRow0 ?? 0;
  if (!(Number.isInteger(srcRows) && Number.isInteger(srcRow0) && srcRow0 >= 0 && srcRow0 + p.rows <= srcRows)) throw new RangeError(`ln-apply: rows ${srcRow0}..${srcRow0 + p.rows} outside the ${srcRows} rows per frame`);
  if (p.grid.width !== p.width) throw new RangeError(`ln-apply: grid of width ${p.grid.width} for a band of width ${p.width}`);
  if (!(p.grid.dx > 0 && p.grid.dy > 0)) throw new RangeError('ln-apply: grid spacing must be > 0');
  if (p.coefficients.length < p.frames * p.grid.nx * p.grid.ny * 2) throw new RangeError(`ln-apply: ${p.coefficients.length} coefficients for ${p.frames} frames of ${p.grid.nx}×${p.grid.ny} nodes`);
  if (bandLength !== undefined && bandLength < p.frames * srcRows * p.width) throw new RangeError(`ln-apply: band holds ${bandLength} samples, need ${p.frames}×${srcRows}×${p.width}`);
}

const f32 = Math.fround;

/** Node index and weight along one axis, as the shader computes them (f32 inputs). */
function axis(p: number, origin: number, step: number, n: number): [number, number] {
  if (n === 1) return [0, 0];
  const f = Math.min(Math.max((p - origin) / step, -0.5), n - 0.5);
  const i = Math.min(Math.max(Math.floor(f), 0), n - 2);
  return [i, f - i];
}

/** Normalises the band in place (see the head comment). */
export function lnApply(band: Float32Array, p: LnApplyParams): void {
  validateLnApply(p, band.length);
  const { width: W, rows, frames, grid: g, coefficients: c } = p;
  const srcRows = p.srcRows ?? rows;
  const srcRow0 = p.srcRow0 ?? 0;
  const x0 = f32(g.x0);
  const gy0 = f32(g.y0);
  const dx = f32(g.dx);
  const dy = f32(g.dy);
  const nodes = g.nx * g.ny;
  // Per column: node and weight in x (the same for every row and frame).
  const ix = new Int32Array(W);
  const tx = new Float64Array(W);
  const ix1 = new Int32Array(W);
  for (let x = 0; x < W; x++) {
    const [i, t] = axis(x, x0, dx, g.nx);
    ix[x] = i;
    tx[x] = t;
    ix1[x] = Math.min(i + 1, g.nx - 1);
  }
  for (let f = 0; f < frames; f++) {
    const base = f * nodes * 2;
    for (let r = 0; r < rows; r++) {
      const [j, ty] = axis(p.y0 + r, gy0, dy, g.ny);
      const j1 = Math.min(j + 1, g.ny - 1);
      const rowA = base + j * g.nx * 2;
      const rowB = base + j1 * g.nx * 2;
      const off = (f * srcRows + srcRow0 + r) * W;
      for (let x = 0; x < W; x++) {
        const v = band[off + x]!;
        if (v !== v) continue;
        const i = ix[x]!;
        const i1 = ix1[x]!;
        const t = tx[x]!;
        const a = (1 - ty) * ((1 - t) * c[rowA + 2 * i]! + t * c[rowA + 2 * i1]!) + ty * ((1 - t) * c[rowB + 2 * i]! + t * c[rowB + 2 * i1]!);
        const b = (1 - ty) * ((1 - t) * c[rowA + 2 * i + 1]! + t * c[rowA + 2 * i1 + 1]!) + ty * ((1 - t) * c[rowB + 2 * i + 1]! + t * c[rowB + 2 * i1 + 1]!);
        band[off + x] = a * v + b;
      }
    }
  }
}

/**
 * One frame's model interpolated in y to each of rows [y0, y0 + rows): rows × nx (a, b), what the
 * Lanczos warp's fused store reads (shaders/warp/lanczos3.wgsl, LN = 1); a pixel's (a, b) is then
 * the mix of its row's two nodes around x by the axis rule above, which is lnApply's bilinear
 * value (the y step done first, in f64 here, rounded to f32 once).
 */
export function lnRowTable(grid: GridGeometry, frameCoefficients: ArrayLike<number>, y0: number, rows: number, out?: Float32Array): Float32Array {
  const nx = grid.nx;
  const table = out ? out.subarray(0, rows * nx * 2) : new Float32Array(rows * nx * 2);
  const gy0 = f32(grid.y0);
  const dy = f32(grid.dy);
  for (let r = 0; r < rows; r++) {
    const [j, ty] = axis(y0 + r, gy0, dy, grid.ny);
    const j1 = Math.min(j + 1, grid.ny - 1);
    for (let i = 0; i < nx; i++) {
      for (let k = 0; k < 2; k++) table[(r * nx + i) * 2 + k] = (1 - ty) * frameCoefficients[(j * nx + i) * 2 + k]! + ty * frameCoefficients[(j1 * nx + i) * 2 + k]!;
    }
  }
  return table;
}
