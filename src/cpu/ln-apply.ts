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
  const gy0 = f32(g.y0);
  const dy = f32(g.dy);
  const nodes = g.nx * g.ny;
  // Per column: node and weight in x (the same for every row and frame).
  const { i0: ix, i1: ix1, tx } = columnAxis(g);
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

/** Per column of a grid's image: node pair and weight in x (the axis rule), kept per grid object. */
const columnAxes = new WeakMap<GridGeometry, { i0: Int32Array; i1: Int32Array; tx: Float64Array }>();

function columnAxis(grid: GridGeometry): { i0: Int32Array; i1: Int32Array; tx: Float64Array } {
  let a = columnAxes.get(grid);
  if (!a) {
    const W = grid.width;
    a = { i0: new Int32Array(W), i1: new Int32Array(W), tx: new Float64Array(W) };
    for (let x = 0; x < W; x++) {
      const [i, t] = axis(x, f32(grid.x0), f32(grid.dx), grid.nx);
      a.i0[x] = i;
      a.i1[x] = Math.min(i + 1, grid.nx - 1);
      a.tx[x] = t;
    }
    columnAxes.set(grid, a);
  }
  return a;
}

/**
 * The linear piece of the grid's y axis image row `y` falls in, by the axis rule above: −1 below
 * the low clamp (and for a one-row grid), ny − 1 above the high clamp, else the cell
 * clamp(⌊u⌋, 0, ny − 2), u = (y − y0)/dy (the outer cells reach the clamps). Ids are consecutive,
 * and (a, b) is linear in y inside each piece and continuous across them. The separable warp's
 * column pass computes the same in f32 (lanczos3_cols.wgsl ln_piece).
 */
export function lnPiece(grid: GridGeometry, y: number): number {
  const n = grid.ny;
  if (n === 1) return -1;
  const u = (y - f32(grid.y0)) / f32(grid.dy);
  if (u < -0.5) return -1;
  if (u > n - 0.5) return n - 1;
  return Math.min(Math.max(Math.floor(u), 0), n - 2);
}

/**
 * Pieces lnColumnTable may list beyond ⌈rows / dy⌉ for a band of `rows` rows: the band's first
 * piece may start just inside it, a clamp piece, and the one listed each side.
 */
export const LN_EXTRA_PIECES = 4;

/** Most pieces lnColumnTable lists for a band of `rows` rows, wherever it lies. */
export function lnMaxPieces(grid: GridGeometry, rows: number): number {
  return grid.ny === 1 ? 1 : Math.min(grid.ny + 1, Math.ceil(rows / f32(grid.dy)) + LN_EXTRA_PIECES);
}

/** Floats of lnColumnTable for a band of `rows` rows and `width` columns, wherever it lies. */
export function lnColumnTableFloats(grid: GridGeometry, rows: number, width: number): number {
  return lnMaxPieces(grid, rows) * width * 4;
}

/**
 * One frame's model along each column as straight lines, for the pieces of the grid's y axis a
 * band [y0, y0 + rows) meets (lnPiece; one more on each side, so that a boundary row the shader
 * rounds the other way still finds its line): entry (p − firstPiece)·width + x holds, for piece p
 * and column x, (a, b) at u = p and their change per unit of u = (y − grid.y0)/grid.dy, so that
 * (a, b)(x, y) = entry.xy + (u − p)·entry.zw inside a cell (a clamp's entry is its constant, zw
 * = 0): lnApply's bilinear value (x step first, in f64, rounded to f32 once per entry). Entries
 * do not depend on the band, so a pixel's value is the same whatever band it is warped in. What
 * the separable warp's column pass reads (shaders/warp/lanczos3_cols.wgsl): a group of 8 rows
 * meets at most two pieces, so two loads give its 8 pixels' (a, b).
 */
export function lnColumnTable(grid: GridGeometry, frameCoefficients: ArrayLike<number>, y0: number, rows: number, out?: Float32Array): { table: Float32Array; firstPiece: number; pieces: number } {
  const { nx, ny, width: W } = grid;
  const firstPiece = Math.max(lnPiece(grid, y0) - 1, -1);
  const pieces = (ny === 1 ? -1 : Math.min(lnPiece(grid, y0 + rows - 1) + 1, ny - 1)) - firstPiece + 1;
  const table = out ? out.subarray(0, pieces * W * 4) : new Float32Array(pieces * W * 4);
  const { i0, i1, tx } = columnAxis(grid);
  const c = frameCoefficients;
  for (let k = 0; k < pieces; k++) {
    const p = firstPiece + k;
    // Node rows j, j + 1 and the weight of j + 1: a cell's line starts at w = 0 (u = j) and moves
    // by N_{j+1} − N_j per unit of u; a clamp is the outer cell's line at w = −0.5 or 1.5.
    let j = 0;
    let w0 = 0;
    let cell = false;
    if (ny > 1) {
      if (p === -1) w0 = -0.5;
      else if (p === ny - 1) {
        j = ny - 2;
        w0 = 1.5;
      } else {
        j = p;
        cell = true;
      }
    }
    const ja = j * nx;
    const jb = Math.min(j + 1, ny - 1) * nx;
    for (let x = 0; x < W; x++) {
      const i = i0[x]!;
      const j1 = i1[x]!;
      const t = tx[x]!;
      const o = (k * W + x) * 4;
      for (let q = 0; q < 2; q++) {
        const na = (1 - t) * c[(ja + i) * 2 + q]! + t * c[(ja + j1) * 2 + q]!;
        const nb = (1 - t) * c[(jb + i) * 2 + q]! + t * c[(jb + j1) * 2 + q]!;
        table[o + q] = (1 - w0) * na + w0 * nb;
        table[o + 2 + q] = cell ? nb - na : 0;
      }
    }
  }
  return { table, firstPiece, pieces };
}
