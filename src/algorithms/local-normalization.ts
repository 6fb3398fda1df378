// Local normalization (as PixInsight's LocalNormalization does it): each registered frame's smooth
// background and scale are matched to the reference's across the field, so that
//   frame'(x, y) = a(x, y) · frame(x, y) + b(x, y)  ≈  reference(x, y)
// on the sky. Fitted on binned copies of both (binned-plane.ts: cheap, band-by-band
// accumulable), applied per pixel per row band (src/cpu/ln-apply.ts, shaders/stack/ln_apply.wgsl).
//
// Fit (binned planes of one channel, same geometry, frame already globally normalised):
//   1. grid: `cells` cells along the long axis (square-ish), one node at each cell centre;
//   2. star mask: per image, pixels above a first background surface (cell medians,
//      interpolated) by maskSigma × its binned noise, grown by maskGrow binned pixels; the union
//      of both masks (reference stars, the frame's stars, trails, hot spots);
//   3. per cell, the medians of the reference and of the frame over the same unmasked pixels
//      (paired, so both see the same sky), taken about the previous round's surface so that a
//      gradient inside an unevenly masked cell cancels; cells with too few pixels are filled
//      from a plane through their neighbours, and outlying frame nodes (a bright star's halo)
//      are repaired the same way;
//   4. scale: 'none' → a ≡ 1 (local background only); 'plane' → a = 1 + tx·u + ty·v, the tilt of
//      a least-squares plane through the per-cell ratios of star flux (reference / frame, over
//      the star mask, each above its own background), weighted by flux, two robust passes.
//      Star flux in a cell does not depend on seeing (the mask holds the PSF wings), unlike the
//      peak or noise ratios. The plane's mean (the global photometric ratio) is NOT applied: the
//      global normalization (stacking.normalization) keeps its meaning and LN works on top of
//      it; the ratio is reported (`flux_ratio`). A grid of per-cell scales is not offered: a
//      few stars per cell make it noisy, and every error of a(x, y) is photometric scatter;
//   5. b = T − a · m_frame at each node, where the target T is a smooth (cubic) least-squares
//      fit of the reference's node medians: matching every frame to the medians themselves would
//      print their noise into every frame alike, where it would not average out in the stack.
//      The stack keeps the reference's large-scale background (BGE removes it later).
// Model: the grid geometry, a and b per node (row-major), interpolated bilinearly between the
// four surrounding nodes; between the outer nodes and the image edge (half a cell) the outer
// cells extend linearly. JSON-safe (stacking_diagnostics.json).
// Invariants: inputs are not modified; NaN is no data everywhere; a fit that finds no usable
// background returns the identity (a = 1, b = 0) with ok: false and a reason code.

import { MAD_TO_SIGMA, medianInPlace } from './robust-stats.js';
import type { BinnedPlane } from './binned-plane.js';

/** Node (i, j) of a grid sits at full-resolution (x0 + i·dx, y0 + j·dy), i < nx, j < ny. */
export interface GridGeometry {
  /** Full-resolution size of the image the grid covers. */
  width: number;
  height: number;
  nx: number;
  ny: number;
  x0: number;
  y0: number;
  dx: number;
  dy: number;
}

export type LnScaleMode = 'none' | 'plane';
export type LnFitIssue = 'size_mismatch' | 'no_background';

export interface LnFitOptions {
  /** Cells along the image's long axis (default 16). */
  cells?: number;
  /**
   * Star-mask threshold in binned-noise σ (default 3) and its growth in full-resolution pixels
   * (default 8, rounded up to whole binned pixels): the wings of a soft frame's stars must not
   * reach the sky pixels of the medians.
   */
  maskSigma?: number;
  maskGrowPx?: number;
  /**
   * Scale surface (default 'none': the global normalization's scale stands). 'plane' fits a
   * tilt from the stars' relative photometry; with the few dozen isolated, unsaturated stars of
   * a small field its frame-to-frame noise (~0.05 across the field) costs more photometric
   * scatter than real transparency gradients do, so it is for wide, star-rich fields.
   */
  scale?: LnScaleMode;
  /** Fewest unmasked pixels for a cell's background, as a fraction of its area (default 0.1; at least 8 pixels). */
  minCellFraction?: number;
}

export interface LnFitStats {
  ok: boolean;
  reason?: LnFitIssue;
  scale: LnScaleMode;
  /** Cells, and those whose background was measured (the rest filled from neighbours). */
  cells: number;
  cells_measured: number;
  /** Fraction of the valid binned pixels masked as stars or defects. */
  masked_fraction: number;
  /** Binned-pixel noise of the frame and the reference (robust, neighbour differences). */
  noise_frame: number;
  noise_ref: number;
  /** Median star flux ratio reference / frame (the global photometric ratio; informative). */
  flux_ratio: number | null;
  /** Scale plane a = 1 + tilt_x·u + tilt_y·v (u, v = ±1 at the image edges), and the stars it used. */
  tilt_x: number;
  tilt_y: number;
  scale_stars: number;
  /** Spread of the offsets b over the nodes (max − min): how different the backgrounds were. */
  offset_range: number;
}

export interface LnModel {
  version: 1;
  grid: GridGeometry;
  interpolation: 'bilinear, outer cells extended linearly to the image edge';
  /** Per node, row-major ny × nx: frame' = a·frame + b. */
  a: number[];
  b: number[];
  fit: LnFitStats;
}

/** A background surface on a grid (the reference's, for rejection bounds). */
export interface GridSurface {
  grid: GridGeometry;
  values: number[];
}

/**
 * Binning factor for the fit's planes: about 256 binned pixels along the long axis, 1 … 8
 * (a star then covers one or two binned pixels, so the mask leaves most of a cell's sky);
 * even for a CFA mosaic (whole 2×2 cells per block).
 */
export function lnBinFactor(width: number, height: number, cfa = false): number {
  const d = Math.min(8, Math.max(1, Math.floor(Math.max(width, height) / 256)));
  return cfa && d % 2 === 1 ? d + 1 : d;
}

export const LN_DEFAULTS: Required<LnFitOptions> = { cells: 16, maskSigma: 3, maskGrowPx: 8, scale: 'none', minCellFraction: 0.1 };

interface Cells {
  ncx: number;
  ncy: number;
  /** Cell edges in binned pixels: xs[i] .. xs[i + 1]. */
  xs: number[];
  ys: number[];
}

function cellsOf(bw: number, bh: number, cells: number): Cells {
  const size = Math.max(bw, bh) / cells;
  const ncx = Math.max(1, Math.round(bw / size));
  const ncy = Math.max(1, Math.round(bh / size));
  return { ncx, ncy, xs: Array.from({ length: ncx + 1 }, (_, i) => Math.floor((i * bw) / ncx)), ys: Array.from({ length: ncy + 1 }, (_, j) => Math.floor((j * bh) / ncy)) };
}

/** The grid of a binned plane (nodes at the cell centres, in full-resolution pixels). */
export function lnGrid(binned: Pick<BinnedPlane, 'width' | 'height' | 'factor' | 'fullWidth' | 'fullHeight'>, cells = LN_DEFAULTS.cells): GridGeometry {
  const c = cellsOf(binned.width, binned.height, cells);
  const dx = (binned.factor * binned.width) / c.ncx;
  const dy = (binned.factor * binned.height) / c.ncy;
  return { width: binned.fullWidth, height: binned.fullHeight, nx: c.ncx, ny: c.ncy, x0: dx / 2 - 0.5, y0: dy / 2 - 0.5, dx, dy };
}

/** Interpolation position along one axis: base node and weight (see the model's rule). */
function axis(p: number, origin: number, step: number, n: number): [number, number] {
  if (n === 1) return [0, 0];
  const f = Math.min(Math.max((p - origin) / step, -0.5), n - 0.5);
  const i = Math.min(Math.max(Math.floor(f), 0), n - 2);
  return [i, f - i];
}

/** Value of a node field at full-resolution (x, y) by the model's interpolation rule. */
export function gridValueAt(g: GridGeometry, values: ArrayLike<number>, x: number, y: number): number {
  const [i, tx] = axis(x, g.x0, g.dx, g.nx);
  const [j, ty] = axis(y, g.y0, g.dy, g.ny);
  const i1 = Math.min(i + 1, g.nx - 1);
  const j1 = Math.min(j + 1, g.ny - 1);
  const v00 = values[j * g.nx + i]!;
  const v10 = values[j * g.nx + i1]!;
  const v01 = values[j1 * g.nx + i]!;
  const v11 = values[j1 * g.nx + i1]!;
  return (1 - ty) * ((1 - tx) * v00 + tx * v10) + ty * ((1 - tx) * v01 + tx * v11);
}

/** Rows [y0, y0 + rows) of a node field, full width, into `out` (rows × width). */
export function fillGridRows(g: GridGeometry, values: ArrayLike<number>, y0: number, rows: number, out: Float32Array): Float32Array {
  const xs = new Float64Array(g.width);
  for (let x = 0; x < g.width; x++) xs[x] = x;
  const ys = new Float64Array(rows);
  for (let r = 0; r < rows; r++) ys[r] = y0 + r;
  return gridField(g, values, xs, ys, out);
}

/**
 * The node field at every (xs[i], ys[j]) (full-resolution positions) into out (ys × xs,
 * row-major), by gridValueAt's rule: the axis lookups are made once per column and row, not
 * per pixel (the fits evaluate whole surfaces many times).
 */
function gridField(g: GridGeometry, values: ArrayLike<number>, xs: Float64Array, ys: Float64Array, out: Float32Array): Float32Array {
  const nx = xs.length;
  const i0 = new Int32Array(nx);
  const i1 = new Int32Array(nx);
  const tx = new Float64Array(nx);
  for (let k = 0; k < nx; k++) {
    const [i, t] = axis(xs[k]!, g.x0, g.dx, g.nx);
    i0[k] = i;
    i1[k] = Math.min(i + 1, g.nx - 1);
    tx[k] = t;
  }
  for (let r = 0; r < ys.length; r++) {
    const [j, ty] = axis(ys[r]!, g.y0, g.dy, g.ny);
    const a = j * g.nx;
    const b = Math.min(j + 1, g.ny - 1) * g.nx;
    const o = r * nx;
    for (let k = 0; k < nx; k++) {
      const t = tx[k]!;
      const u = i0[k]!;
      const v = i1[k]!;
      out[o + k] = (1 - ty) * ((1 - t) * values[a + u]! + t * values[a + v]!) + ty * ((1 - t) * values[b + u]! + t * values[b + v]!);
    }
  }
  return out;
}

/**
 * Robust per-pixel noise of a binned plane from horizontal neighbour differences (gradients
 * cancel), over pixel pairs outside `mask` when given (in a crowded field most pairs touch a
 * star and would inflate the estimate).
 */
const NOISE_ROW_STEP = 4;

/** Scratch of binnedNoise's differences, kept across calls (a stack fits dozens of frames). */
let noiseScratch = new Float64Array(0);

function binnedNoise(p: BinnedPlane, mask?: Uint8Array): number {
  // Every NOISE_ROW_STEP-th row: ~10⁴ pairs for a 256-pixel-wide plane are plenty for a median.
  const step = p.width * p.height > 16384 ? NOISE_ROW_STEP : 1;
  const need = Math.ceil(p.height / step) * p.width;
  if (noiseScratch.length < need) noiseScratch = new Float64Array(need);
  const d = noiseScratch;
  let n = 0;
  for (let y = 0; y < p.height; y += step) {
    for (let x = 0; x + 1 < p.width; x++) {
      const i = y * p.width + x;
      if (mask && (mask[i] || mask[i + 1])) continue;
      const a = p.data[i]!;
      const b = p.data[i + 1]!;
      if (a === a && b === b) d[n++] = Math.abs(a - b);
    }
  }
  if (n < 16) return mask ? binnedNoise(p) : n === 0 ? NaN : (medianInPlace(d.subarray(0, n)) * MAD_TO_SIGMA) / Math.SQRT2;
  return (medianInPlace(d.subarray(0, n)) * MAD_TO_SIGMA) / Math.SQRT2;
}

/**
 * Most pixels a cell's median is taken over (evenly strided beyond): the node's error is then
 * ~1.25σ/√96 of a binned pixel's noise, a few percent of the per-pixel noise after binning, and
 * a fit costs a few ms instead of tens (the medians were ~70 % of it).
 */
export const CELL_SAMPLES = 96;

/**
 * Per-plane scratch arrays of the fit, kept across calls by name (a stack fits dozens of frames
 * of one size; fresh arrays of ~50–200 KB each per fit cost more in garbage collection than the
 * fit's medians). A name is used by one live array at a time; contents are undefined on return.
 */
const scratchU8 = new Map<string, Uint8Array>();
const scratchF32 = new Map<string, Float32Array>();
function u8(name: string, n: number): Uint8Array {
  let a = scratchU8.get(name);
  if (!a || a.length < n) scratchU8.set(name, (a = new Uint8Array(n)));
  return a.subarray(0, n);
}
function f32s(name: string, n: number): Float32Array {
  let a = scratchF32.get(name);
  if (!a || a.length < n) scratchF32.set(name, (a = new Float32Array(n)));
  return a.subarray(0, n);
}

/**
 * The binned pixels each cell's background median is taken over: the accepted ones (`ok`), in
 * raster order within the cell, at most CELL_SAMPLES of them evenly strided (pixel
 * floor(j·k / CELL_SAMPLES) of the cell's k accepted ones). Chosen once per pixel set: the
 * rounds of backgroundNodes, and the reference and the frame of a fit (the same pixels of
 * both), take the same samples, so a round reads ≤ CELL_SAMPLES pixels a cell instead of the
 * whole plane, and evaluates the previous round's surface at those pixels only.
 */
interface CellSamples {
  /** Cell (ci, cj)'s samples are idx[start[k] .. start[k + 1]), k = cj·ncx + ci. */
  start: Int32Array;
  idx: Int32Array;
  /**
   * Every usable pixel of cell k (at most CELL_SAMPLES of them are sampled): a cell has enough
   * background when this reaches the minimum, whatever the sample cap, else a coarse grid (whose
   * minimum is above the cap) would count no cell as measured.
   */
  usable: Int32Array;
}

function cellSamples(p: BinnedPlane, c: Cells, ok: Uint8Array): CellSamples {
  const cells = c.ncx * c.ncy;
  const start = new Int32Array(cells + 1);
  const idx = new Int32Array(cells * CELL_SAMPLES);
  const usable = new Int32Array(cells);
  let cellMax = 0;
  for (let cj = 0; cj < c.ncy; cj++) for (let ci = 0; ci < c.ncx; ci++) cellMax = Math.max(cellMax, (c.xs[ci + 1]! - c.xs[ci]!) * (c.ys[cj + 1]! - c.ys[cj]!));
  const all = new Int32Array(cellMax);
  let n = 0;
  for (let cj = 0; cj < c.ncy; cj++) {
    for (let ci = 0; ci < c.ncx; ci++) {
      let k = 0;
      const x0 = c.xs[ci]!;
      const x1 = c.xs[ci + 1]!;
      for (let y = c.ys[cj]!; y < c.ys[cj + 1]!; y++) {
        const row = y * p.width;
        for (let i = row + x0; i < row + x1; i++) if (ok[i]) all[k++] = i;
      }
      if (k > CELL_SAMPLES) {
        for (let j = 0; j < CELL_SAMPLES; j++) idx[n++] = all[Math.floor((j * k) / CELL_SAMPLES)]!;
      } else for (let j = 0; j < k; j++) idx[n++] = all[j]!;
      start[cj * c.ncx + ci + 1] = n;
      usable[cj * c.ncx + ci] = k;
    }
  }
  return { start, idx, usable };
}

/** Per-column and per-row interpolation tables of a grid at a binned plane's pixel centres (gridField's rule). */
interface BinnedAxes {
  i0: Int32Array;
  i1: Int32Array;
  tx: Float64Array;
  ja: Int32Array;
  jb: Int32Array;
  ty: Float64Array;
}

function binnedAxes(p: BinnedPlane, g: GridGeometry): BinnedAxes {
  const D = p.factor;
  const o: BinnedAxes = { i0: new Int32Array(p.width), i1: new Int32Array(p.width), tx: new Float64Array(p.width), ja: new Int32Array(p.height), jb: new Int32Array(p.height), ty: new Float64Array(p.height) };
  for (let x = 0; x < p.width; x++) {
    const [i, t] = axis((x + 0.5) * D - 0.5, g.x0, g.dx, g.nx);
    o.i0[x] = i;
    o.i1[x] = Math.min(i + 1, g.nx - 1);
    o.tx[x] = t;
  }
  for (let y = 0; y < p.height; y++) {
    const [j, t] = axis((y + 0.5) * D - 0.5, g.y0, g.dy, g.ny);
    o.ja[y] = j * g.nx;
    o.jb[y] = Math.min(j + 1, g.ny - 1) * g.nx;
    o.ty[y] = t;
  }
  return o;
}

/**
 * Per-cell median of the samples (cellSamples), NaN where fewer than `min`. With `surface` (a
 * filled node field of the previous round), the median is taken of p − surface (the surface
 * rounded to f32, as surfaceAtBinned stores it) and the node's value added back: the gradient
 * inside a cell then cancels, which matters because star masks leave a cell's sky pixels
 * unevenly spread (a plain median would move toward the side with more of them, by up to half
 * the gradient across the cell).
 */
function cellMedians(p: BinnedPlane, c: Cells, ax: BinnedAxes, cs: CellSamples, min: number, surface: number[] | null = null): number[] {
  const values: number[] = [];
  const buf = new Float64Array(CELL_SAMPLES);
  const d = p.data;
  const W = p.width;
  const f32 = Math.fround;
  for (let k = 0; k < c.ncx * c.ncy; k++) {
    const s0 = cs.start[k]!;
    const n = cs.start[k + 1]! - s0;
    if (surface) {
      for (let j = 0; j < n; j++) {
        const i = cs.idx[s0 + j]!;
        const y = (i / W) | 0;
        const x = i - y * W;
        const ty = ax.ty[y]!;
        const a = ax.ja[y]!;
        const b = ax.jb[y]!;
        const t = ax.tx[x]!;
        const u = ax.i0[x]!;
        const v = ax.i1[x]!;
        buf[j] = d[i]! - f32((1 - ty) * ((1 - t) * surface[a + u]! + t * surface[a + v]!) + ty * ((1 - t) * surface[b + u]! + t * surface[b + v]!));
      }
    } else for (let j = 0; j < n; j++) buf[j] = d[cs.idx[s0 + j]!]!;
    const m = cs.usable[k]! >= min && n > 0 ? medianInPlace(buf.subarray(0, n)) : NaN;
    values.push(surface ? m + surface[k]! : m);
  }
  return values;
}

/**
 * The pixels of `p` that are valid and outside `exclude` (null: every valid pixel). A mask, not
 * a predicate: a call per pixel is what a fit's first, still unoptimised runs pay most for.
 */
function acceptedPixels(p: BinnedPlane, exclude: Uint8Array | null): Uint8Array {
  const ok = u8('accepted', p.width * p.height);
  const d = p.data;
  if (exclude) for (let i = 0; i < ok.length; i++) ok[i] = d[i]! === d[i]! && !exclude[i] ? 1 : 0;
  else for (let i = 0; i < ok.length; i++) ok[i] = d[i]! === d[i]! ? 1 : 0;
  return ok;
}

/**
 * Background node field of `p` over its valid pixels outside `use.exclude` (or the samples `use`
 * chosen from them): cell medians, then two rounds of medians about the previous round's surface
 * (cellMedians). `measured` counts the cells with enough pixels; the others are filled from
 * their neighbours. null when no cell has any.
 */
function backgroundNodes(p: BinnedPlane, c: Cells, g: GridGeometry, use: { exclude: Uint8Array | null } | CellSamples, min: number): { values: number[]; measured: number } | null {
  const cs = 'exclude' in use ? cellSamples(p, c, acceptedPixels(p, use.exclude)) : use;
  const ax = binnedAxes(p, g);
  let values = cellMedians(p, c, ax, cs, min);
  const measured = values.filter((v) => v === v).length;
  if (!fillNodes(values, g.nx, g.ny)) return null;
  for (let round = 0; round < 2; round++) {
    const next = cellMedians(p, c, ax, cs, min, values);
    if (!fillNodes(next, g.nx, g.ny)) break;
    values = next;
  }
  return { values, measured };
}

/**
 * Fills NaN nodes, ring by ring inward from the measured ones: each missing node takes the
 * value at its position of a least-squares plane through the known nodes within two steps
 * (a plain neighbour mean would be biased by the gradient at the image edges, where all the
 * neighbours lie on one side), or their mean when they are too few or collinear. False when no
 * node is measured.
 */
function fillNodes(values: number[], nx: number, ny: number): boolean {
  if (!values.some((v) => v === v)) return false;
  const r = [0, 0, 0];
  const us: number[] = [];
  const vs: number[] = [];
  const ws: number[] = [];
  for (;;) {
    const next = values.slice();
    let missing = 0;
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < nx; i++) {
        if (values[j * nx + i]! === values[j * nx + i]!) continue;
        r.length = 0;
        us.length = 0;
        vs.length = 0;
        ws.length = 0;
        for (let dj = -2; dj <= 2; dj++) {
          for (let di = -2; di <= 2; di++) {
            const a = i + di;
            const b = j + dj;
            if (a < 0 || b < 0 || a >= nx || b >= ny) continue;
            const v = values[b * nx + a]!;
            if (v !== v) continue;
            r.push(v);
            us.push(di);
            vs.push(dj);
            ws.push(1 / (di * di + dj * dj));
          }
        }
        if (r.length === 0) {
          missing++;
          continue;
        }
        const p = r.length >= 4 ? planeFit(r, us, vs, ws) : null;
        next[j * nx + i] = p ? p[0] : r.reduce((x, y) => x + y, 0) / r.length;
      }
    }
    for (let k = 0; k < values.length; k++) values[k] = next[k]!;
    if (missing === 0) return true;
  }
}

/** Total degree of the smooth reference background (the LN target and the rejection's sky). */
export const TARGET_DEGREE = 3;

/**
 * smoothNodes' polynomial terms at every node of an nx × ny grid and their normal matrix over
 * all nodes: the same for every fit on one grid (a stack fits dozens of frames), so made once.
 */
const smoothBases = new Map<string, { T: number; basis: number[][]; full: Float64Array }>();
function smoothBasis(nx: number, ny: number): { T: number; basis: number[][]; full: Float64Array } {
  const key = `${nx}x${ny}`;
  let b = smoothBases.get(key);
  if (b) return b;
  const terms: [number, number][] = [];
  for (let d = 0; d <= TARGET_DEGREE; d++) for (let py = 0; py <= d; py++) terms.push([d - py, py]);
  const T = terms.length;
  const uv: [number, number][] = [];
  for (let j = 0; j < ny; j++) for (let i = 0; i < nx; i++) uv.push([nx > 1 ? (2 * i) / (nx - 1) - 1 : 0, ny > 1 ? (2 * j) / (ny - 1) - 1 : 0]);
  const basis = uv.map(([u, v]) => terms.map(([a, e]) => u ** a * v ** e));
  const full = new Float64Array(T * T);
  for (const row of basis) for (let a = 0; a < T; a++) for (let e = 0; e < T; e++) full[a * T + e] = full[a * T + e]! + row[a]! * row[e]!;
  smoothBases.set(key, (b = { T, basis, full }));
  return b;
}

/**
 * A node field smoothed by a least-squares bivariate polynomial of total degree TARGET_DEGREE
 * in the normalised node coordinates, fitted twice (the second time without nodes beyond 3
 * robust σ of the first fit: a bright star's halo, a nebula's edge). Falls back to the field
 * itself when there are too few nodes for the polynomial.
 */
function smoothNodes(values: number[], g: GridGeometry): number[] {
  const { T, basis, full } = smoothBasis(g.nx, g.ny);
  if (values.length < 2 * T) return values.slice();
  let keep = values.map(() => true);
  let fit: number[] | null = null;
  for (let pass = 0; pass < 2; pass++) {
    // Every node kept (the first pass): the grid's own normal matrix, summed in the same order.
    const all = keep.every((k) => k);
    const m = all ? full.slice() : new Float64Array(T * T);
    const y = new Float64Array(T);
    let n = 0;
    for (let k = 0; k < values.length; k++) {
      if (!keep[k]) continue;
      n++;
      const row = basis[k]!;
      for (let a = 0; a < T; a++) {
        y[a] = y[a]! + row[a]! * values[k]!;
        if (!all) for (let b = 0; b < T; b++) m[a * T + b] = m[a * T + b]! + row[a]! * row[b]!;
      }
    }
    if (n < 2 * T) break;
    const c = solveDense(m, y, T);
    if (!c) break;
    // Plain loops, not map/reduce callbacks (the same sums in the same order): a callback per
    // term is what the first, unoptimised fits of a run pay most for here.
    const f: number[] = [];
    for (const row of basis) {
      let acc = 0;
      for (let a = 0; a < T; a++) acc = acc + row[a]! * c[a]!;
      f.push(acc);
    }
    fit = f;
    const res = values.map((v, k) => v - fit![k]!);
    const mad = medianInPlace(Float64Array.from(res.map(Math.abs))) * MAD_TO_SIGMA;
    keep = res.map((r) => mad === 0 || Math.abs(r) <= 3 * mad);
  }
  return fit ?? values.slice();
}

/** Solves the dense n×n system m·x = y by Gaussian elimination with partial pivoting (m, y modified). */
function solveDense(m: Float64Array, y: Float64Array, n: number): number[] | null {
  for (let col = 0; col < n; col++) {
    let piv = col;
    for (let r = col + 1; r < n; r++) if (Math.abs(m[r * n + col]!) > Math.abs(m[piv * n + col]!)) piv = r;
    if (!(Math.abs(m[piv * n + col]!) > 1e-12)) return null;
    if (piv !== col) {
      for (let k = 0; k < n; k++) [m[col * n + k], m[piv * n + k]] = [m[piv * n + k]!, m[col * n + k]!];
      [y[col], y[piv]] = [y[piv]!, y[col]!];
    }
    for (let r = col + 1; r < n; r++) {
      const f = m[r * n + col]! / m[col * n + col]!;
      if (f === 0) continue;
      for (let k = col; k < n; k++) m[r * n + k] = m[r * n + k]! - f * m[col * n + k]!;
      y[r] = y[r]! - f * y[col]!;
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) {
    let acc = y[r]!;
    for (let k = r + 1; k < n; k++) acc -= m[r * n + k]! * x[k]!;
    x[r] = acc / m[r * n + r]!;
  }
  return x;
}

/**
 * Repairs outlying nodes of a frame's background field (a cell dominated by a bright star's
 * halo or a defect the mask missed): each node is compared with a least-squares plane through
 * its neighbours within two steps (itself excluded); nodes beyond 4 robust σ of those residuals
 * take the plane's value. Smooth gradients and glows pass unchanged.
 */
function repairNodes(values: number[], nx: number, ny: number): number[] {
  const r: number[] = [];
  const us: number[] = [];
  const vs: number[] = [];
  const ws: number[] = [];
  const local = values.map((_, k) => {
    const i = k % nx;
    const j = (k - i) / nx;
    r.length = 0;
    us.length = 0;
    vs.length = 0;
    ws.length = 0;
    for (let dj = -2; dj <= 2; dj++) {
      for (let di = -2; di <= 2; di++) {
        const a = i + di;
        const b = j + dj;
        if ((di === 0 && dj === 0) || a < 0 || b < 0 || a >= nx || b >= ny) continue;
        r.push(values[b * nx + a]!);
        us.push(di);
        vs.push(dj);
        ws.push(1 / (di * di + dj * dj));
      }
    }
    const p = r.length >= 5 ? planeFit(r, us, vs, ws) : null;
    return p ? p[0] : NaN;
  });
  const res = values.map((v, k) => v - local[k]!).filter((x) => x === x);
  if (res.length < 8) return values.slice();
  const sigma = medianInPlace(Float64Array.from(res.map(Math.abs))) * MAD_TO_SIGMA;
  return values.map((v, k) => (local[k]! === local[k]! && Math.abs(v - local[k]!) > 4 * sigma ? local[k]! : v));
}

/** Node field interpolated at each binned pixel's centre. */
function surfaceAtBinned(p: BinnedPlane, g: GridGeometry, values: number[], out: Float32Array = new Float32Array(p.width * p.height)): Float32Array {
  const D = p.factor;
  const xs = new Float64Array(p.width);
  for (let x = 0; x < p.width; x++) xs[x] = (x + 0.5) * D - 0.5;
  const ys = new Float64Array(p.height);
  for (let y = 0; y < p.height; y++) ys[y] = (y + 0.5) * D - 0.5;
  return gridField(g, values, xs, ys, out);
}

/**
 * Star/defect mask of one image: pixels high above a background surface, grown. Two rounds:
 * the first with the cell medians of all pixels and the noise of all neighbour pairs, the
 * second with both measured outside the first mask (in a crowded field the first round's noise
 * is inflated by stars and its medians by their wings). Returns the second round's noise.
 */
function starMask(p: BinnedPlane, c: Cells, g: GridGeometry, o: Required<LnFitOptions>, min: number, into: Uint8Array, initial: Uint8Array | null = null): { sigma: number; seeds: Uint8Array } {
  const W = p.width;
  const H = p.height;
  // With `initial` (the reference's mask: the same stars, registered) the first round is skipped:
  // the medians and the noise are measured outside it straight away.
  let mask: Uint8Array | null = initial;
  let sigma = initial ? NaN : binnedNoise(p);
  let seeds = new Uint8Array(W * H);
  for (let round = initial ? 1 : 0; round < 2; round++) {
    const m = mask;
    const bg = backgroundNodes(p, c, g, { exclude: m }, min);
    if (!bg) return { sigma: sigma === sigma ? sigma : binnedNoise(p), seeds };
    const level = bg.values;
    if (m) sigma = binnedNoise(p, m);
    const surface = surfaceAtBinned(p, g, level, f32s('surface', W * H));
    const seed = new Uint8Array(W * H);
    const t = o.maskSigma * sigma;
    for (let i = 0; i < W * H; i++) {
      const e = p.data[i]! - surface[i]!;
      if (e > t) seed[i] = e > 2 * t ? 2 : 1;
    }
    // Round 1 reads round 0's grown mask while it grows its own: two scratch names.
    const grown = u8(round === 0 ? 'grown0' : 'grown1', W * H).fill(0);
    const r = Math.ceil(o.maskGrowPx / p.factor);
    for (let y = 0; y < H; y++) {
      for (let x = 0; x < W; x++) {
        if (!seed[y * W + x]) continue;
        for (let yy = Math.max(0, y - r); yy <= Math.min(H - 1, y + r); yy++) for (let xx = Math.max(0, x - r); xx <= Math.min(W - 1, x + r); xx++) grown[yy * W + xx] = 1;
      }
    }
    mask = grown;
    seeds = seed;
  }
  for (let i = 0; i < W * H; i++) if (mask![i]) into[i] = 1;
  return { sigma, seeds };
}

function resolve(options: LnFitOptions): Required<LnFitOptions> {
  // One literal, so every resolved options object has one shape: a spread's shape follows the
  // keys the caller passed, and the fits' optimised code deoptimised on each new one (a run's
  // first dozen fits ran two to eight times slower; see docs/stacking-quality.md).
  const o: Required<LnFitOptions> = {
    cells: options.cells ?? LN_DEFAULTS.cells,
    maskSigma: options.maskSigma ?? LN_DEFAULTS.maskSigma,
    maskGrowPx: options.maskGrowPx ?? LN_DEFAULTS.maskGrowPx,
    scale: options.scale ?? LN_DEFAULTS.scale,
    minCellFraction: options.minCellFraction ?? LN_DEFAULTS.minCellFraction,
  };
  if (!(Number.isInteger(o.cells) && o.cells >= 1)) throw new RangeError(`local normalization: cells = ${o.cells} must be a positive integer`);
  if (!(o.maskSigma > 0) || !(o.maskGrowPx >= 0)) throw new RangeError('local normalization: maskSigma must be > 0 and maskGrowPx >= 0');
  if (o.scale !== 'none' && o.scale !== 'plane') throw new RangeError(`local normalization: unknown scale mode ${String(o.scale)}`);
  return o;
}

function minCount(c: Cells, p: BinnedPlane, f: number): number {
  return Math.max(8, Math.floor((f * p.width * p.height) / (c.ncx * c.ncy)));
}

/**
 * The reference's own background surface on the LN grid (its star-masked cell medians, smoothed
 * like the LN target), which rejection uses as the sky level under each pixel. With `prepared`
 * made for the same plane and options, its star mask is used (it is the mask this would make).
 */
export function fitReferenceBackground(ref: BinnedPlane, options: LnFitOptions = {}, prepared: PreparedReference | null = null): GridSurface {
  const o = resolve(options);
  const c = cellsOf(ref.width, ref.height, o.cells);
  const grid = lnGrid(ref, o.cells);
  const min = minCount(c, ref, o.minCellFraction);
  let mask: Uint8Array;
  if (prepared && preparedFor(prepared, ref, o)) mask = prepared.mask;
  else {
    mask = new Uint8Array(ref.width * ref.height);
    starMask(ref, c, grid, o, min, mask);
  }
  const bg = backgroundNodes(ref, c, grid, { exclude: mask }, min);
  return { grid, values: bg ? smoothNodes(bg.values, grid) : new Array<number>(grid.nx * grid.ny).fill(0) };
}

function identity(grid: GridGeometry, scale: LnScaleMode, reason: LnFitIssue, noiseFrame: number, noiseRef: number): LnModel {
  const n = grid.nx * grid.ny;
  return {
    version: 1,
    grid,
    interpolation: 'bilinear, outer cells extended linearly to the image edge',
    a: new Array(n).fill(1),
    b: new Array(n).fill(0),
    fit: { ok: false, reason, scale, cells: n, cells_measured: 0, masked_fraction: 0, noise_frame: noiseFrame, noise_ref: noiseRef, flux_ratio: null, tilt_x: 0, tilt_y: 0, scale_stars: 0, offset_range: 0 },
  };
}

/** Weighted least squares of r ≈ c0 + c1·u + c2·v; null when singular. */
function planeFit(r: number[], u: number[], v: number[], w: number[]): [number, number, number] | null {
  // Scratch kept across calls (a fit makes hundreds of these small fits; arithmetic unchanged).
  const m = pfM.fill(0);
  const y = pfY.fill(0);
  const row = pfRow;
  row[0] = 1;
  for (let k = 0; k < r.length; k++) {
    row[1] = u[k]!;
    row[2] = v[k]!;
    for (let a = 0; a < 3; a++) {
      y[a] = y[a]! + w[k]! * row[a]! * r[k]!;
      for (let b = 0; b < 3; b++) m[a * 3 + b] = m[a * 3 + b]! + w[k]! * row[a]! * row[b]!;
    }
  }
  // Cramer's rule on the 3×3 normal equations.
  const d = det3(m);
  if (!(Math.abs(d) > 1e-12 * Math.max(1, m[0]! ** 3))) return null;
  const out: [number, number, number] = [0, 0, 0];
  const q = pfQ;
  for (let col = 0; col < 3; col++) {
    q.set(m);
    for (let a = 0; a < 3; a++) q[a * 3 + col] = y[a]!;
    out[col] = det3(q) / d;
  }
  return out;
}

const pfM = new Float64Array(9);
const pfY = new Float64Array(3);
const pfQ = new Float64Array(9);
const pfRow = new Float64Array(3);
const det3 = (q: Float64Array) => q[0]! * (q[4]! * q[8]! - q[5]! * q[7]!) - q[1]! * (q[3]! * q[8]! - q[5]! * q[6]!) + q[2]! * (q[3]! * q[7]! - q[4]! * q[6]!);

interface StarRatio {
  ratio: number;
  u: number;
  v: number;
  weight: number;
}

/**
 * Aperture photometry of the reference's isolated stars in both binned planes at the same
 * positions: sum within apertureRadiusPx of the peak minus the median of an annulus 1 … 4
 * binned pixels beyond it (pixels outside `mask`), so each star's own local sky is removed and
 * a gradient or glow does not enter the ratio. The aperture holds the PSF wings (12 px holds
 * > 98 % of a FWHM 4.5 px Moffat β = 3), so the ratio hardly depends on seeing; what it does
 * lose is alike over the field and cancels in the plane's tilt. Stars: 8-connected components
 * of the reference's seed pixels, centred on their brightest pixel, without another star's
 * peak within the annulus, flux ≥ 20σ of the aperture sum in the reference, every aperture
 * pixel valid in both, and no pixel bright in the frame alone (a trail, a cosmic ray: 6σ,
 * outside every reference star's footprint) in the annulus: what crosses the aperture crosses
 * the annulus, mostly beyond the star's own footprint.
 */
function starPhotometry(ref: BinnedPlane, frame: BinnedPlane, seeds: Uint8Array, frameSeeds: Uint8Array, mask: Uint8Array, noise: number, o: Required<LnFitOptions>): StarRatio[] {
  const W = ref.width;
  const H = ref.height;
  const D = ref.factor;
  const ra = Math.max(2, Math.ceil(APERTURE_PX / D));
  const rOut = ra + 4;
  // Component peaks by flood fill over the seeds.
  const label = new Int32Array(W * H).fill(-1);
  const peaks: number[] = [];
  const stack: number[] = [];
  for (let i0 = 0; i0 < W * H; i0++) {
    if (!seeds[i0] || label[i0]! >= 0) continue;
    const id = peaks.length;
    let best = i0;
    label[i0] = id;
    stack.push(i0);
    while (stack.length > 0) {
      const i = stack.pop()!;
      if (ref.data[i]! > ref.data[best]!) best = i;
      const x = i % W;
      const y = (i - x) / W;
      for (let dy = -1; dy <= 1; dy++) {
        for (let dx = -1; dx <= 1; dx++) {
          const xx = x + dx;
          const yy = y + dy;
          if (xx < 0 || yy < 0 || xx >= W || yy >= H) continue;
          const j = yy * W + xx;
          if (seeds[j] && label[j]! < 0) {
            label[j] = id;
            stack.push(j);
          }
        }
      }
    }
    peaks.push(best);
  }
  // Each component's grown footprint (first come, raster order): an annulus may use its own
  // star's wings (alike in both images) but not another star's, nor the frame's own defects.
  const r = Math.ceil(o.maskGrowPx / D);
  const owner = new Int32Array(W * H).fill(-1);
  for (let i = 0; i < W * H; i++) {
    const id = label[i]!;
    if (id < 0) continue;
    const x = i % W;
    const y = (i - x) / W;
    for (let yy = Math.max(0, y - r); yy <= Math.min(H - 1, y + r); yy++) for (let xx = Math.max(0, x - r); xx <= Math.min(W - 1, x + r); xx++) if (owner[yy * W + xx]! < 0) owner[yy * W + xx] = id;
  }
  // Isolation: a coarse bucket grid of peaks.
  const cell = rOut + 1;
  const gw = Math.ceil(W / cell);
  const buckets = new Map<number, number[]>();
  for (const p of peaks) {
    const k = Math.floor((p % W) / cell) + Math.floor(Math.floor(p / W) / cell) * gw;
    const b = buckets.get(k);
    if (b) b.push(p);
    else buckets.set(k, [p]);
  }
  const out: StarRatio[] = [];
  const annR: number[] = [];
  const annF: number[] = [];
  const annX: number[] = [];
  const annY: number[] = [];
  for (let id = 0; id < peaks.length; id++) {
    const p = peaks[id]!;
    const px = p % W;
    const py = (p - px) / W;
    if (px < rOut || py < rOut || px >= W - rOut || py >= H - rOut) continue;
    let crowded = false;
    const bx = Math.floor(px / cell);
    const by = Math.floor(py / cell);
    for (let j = by - 1; j <= by + 1 && !crowded; j++) {
      for (let i = bx - 1; i <= bx + 1 && !crowded; i++) {
        for (const q of buckets.get(i + j * gw) ?? []) {
          if (q !== p && Math.hypot((q % W) - px, Math.floor(q / W) - py) <= rOut) crowded = true;
        }
      }
    }
    if (crowded) continue;
    annR.length = 0;
    annF.length = 0;
    annX.length = 0;
    annY.length = 0;
    let sumR = 0;
    let sumF = 0;
    let n = 0;
    let bad = false;
    for (let y = py - rOut; y <= py + rOut && !bad; y++) {
      for (let x = px - rOut; x <= px + rOut; x++) {
        const d2 = (x - px) ** 2 + (y - py) ** 2;
        const i = y * W + x;
        const vr = ref.data[i]!;
        const vf = frame.data[i]!;
        if (d2 <= ra * ra) {
          if (vr !== vr || vf !== vf) {
            bad = true;
            break;
          }
          sumR += vr;
          sumF += vf;
          n++;
        } else if (d2 > (ra + 1) ** 2 && d2 <= rOut * rOut) {
          // Something bright in the frame only (a trail, a cosmic ray: a strong frame seed
          // outside every reference star's footprint) crosses the annulus, so it may cross
          // the aperture too: skip the star.
          if (frameSeeds[i] === 2 && owner[i]! < 0) {
            bad = true;
            break;
          }
          if (!(owner[i] === id || !mask[i]) || vr !== vr || vf !== vf) continue;
          annR.push(vr);
          annF.push(vf);
          annX.push(x - px);
          annY.push(y - py);
        }
      }
    }
    if (bad || annR.length < 12) continue;
    const skyR = annulusLevel(annR, annX, annY);
    const skyF = annulusLevel(annF, annX, annY);
    if (skyR === null || skyF === null) continue;
    const fluxR = sumR - n * skyR;
    const fluxF = sumF - n * skyF;
    const snr = fluxR / (noise * Math.sqrt(n));
    if (!(snr > 20 && fluxF > 0)) continue;
    const fx = (px + 0.5) * D - 0.5;
    const fy = (py + 0.5) * D - 0.5;
    // Weight: inverse variance of the ratio from the sky noise (SNR²), capped at SNR 50 so that
    // the brightest stars' unmodelled errors (shot noise, saturation) do not dominate.
    const snrCapped = Math.min(snr, 50);
    out.push({ ratio: fluxR / fluxF, u: (fx - (ref.fullWidth - 1) / 2) / (ref.fullWidth / 2), v: (fy - (ref.fullHeight - 1) / 2) / (ref.fullHeight / 2), weight: snrCapped * snrCapped });
  }
  return out;
}

/**
 * Sky level at an annulus' centre: a least-squares plane through its pixels (a gradient and an
 * unevenly masked annulus would bias a median), refitted once without pixels beyond 3σ of the
 * first fit (faint stars, wings). Offsets (dx, dy) from the centre; null when degenerate.
 */
function annulusLevel(v: number[], dx: number[], dy: number[]): number | null {
  let keep = v.map(() => true);
  let level: number | null = null;
  for (let pass = 0; pass < 2; pass++) {
    const idx = keep.map((k, i) => (k ? i : -1)).filter((i) => i >= 0);
    if (idx.length < 8) return level;
    const p = planeFit(idx.map((i) => v[i]!), idx.map((i) => dx[i]!), idx.map((i) => dy[i]!), idx.map(() => 1));
    if (!p) return level;
    level = p[0];
    const res = v.map((x, i) => x - (p[0] + p[1] * dx[i]! + p[2] * dy[i]!));
    const sd = Math.sqrt(idx.reduce((a, i) => a + res[i]! * res[i]!, 0) / idx.length);
    keep = res.map((r) => Math.abs(r) <= 3 * sd);
  }
  return level;
}

/** Fewest stars for a scale plane (fewer: a ≡ 1). */
export const MIN_SCALE_STARS = 8;

/** Aperture radius of the scale photometry, full-resolution pixels. */
export const APERTURE_PX = 12;

/** The reference's star mask, made once for the fits of many frames against it (prepareReference). */
export interface PreparedReference {
  ref: BinnedPlane;
  cells: number;
  maskSigma: number;
  maskGrowPx: number;
  minCellFraction: number;
  mask: Uint8Array;
  sigma: number;
  seeds: Uint8Array;
}

/** Whether `prepared` was made for `ref` with these options. */
const preparedFor = (p: PreparedReference, ref: BinnedPlane, o: Required<LnFitOptions>): boolean => p.ref === ref && p.cells === o.cells && p.maskSigma === o.maskSigma && p.maskGrowPx === o.maskGrowPx && p.minCellFraction === o.minCellFraction;

/**
 * The part of fitLocalNormalization that depends on the reference only (its two-round star
 * mask and noise): a stack fits every frame against one reference, so it is made once.
 * fitLocalNormalization uses it when it was made for the same plane and options.
 */
export function prepareReference(ref: BinnedPlane, options: LnFitOptions = {}): PreparedReference {
  const o = resolve(options);
  const c = cellsOf(ref.width, ref.height, o.cells);
  const mask = new Uint8Array(ref.width * ref.height);
  const m = starMask(ref, c, lnGrid(ref, o.cells), o, minCount(c, ref, o.minCellFraction), mask);
  return { ref, cells: o.cells, maskSigma: o.maskSigma, maskGrowPx: o.maskGrowPx, minCellFraction: o.minCellFraction, mask, sigma: m.sigma, seeds: m.seeds };
}

/**
 * The scale tilt (a = 1 + x·u + y·v, its mean not applied) from the stars' flux ratios, by a
 * robust plane: the first pass unweighted (one bright star cannot steer it: a saturated core,
 * clipped more in the sharper image, reads 10–20 % off), each later pass weighted and without
 * the stars beyond 3 robust σ of the previous fit. No tilt below MIN_SCALE_STARS stars. (Its own
 * function: the arrays it makes stay out of the fit's frame, whose optimised code deoptimised on
 * their shapes at every fit.)
 */
function scaleTilt(phot: StarRatio[]): { x: number; y: number; stars: number; fluxRatio: number | null } {
  const fluxRatio = phot.length > 0 ? medianInPlace(Float64Array.from(phot, (s) => s.ratio)) : null;
  if (phot.length < MIN_SCALE_STARS) return { x: 0, y: 0, stars: 0, fluxRatio };
  const r = phot.map((s) => s.ratio);
  const u = phot.map((s) => s.u);
  const v = phot.map((s) => s.v);
  const w = phot.map((s) => s.weight);
  let keep = r.map(() => true);
  let p: [number, number, number] | null = null;
  let stars = 0;
  for (let pass = 0; pass < 3; pass++) {
    const idx = keep.map((k, i) => (k ? i : -1)).filter((i) => i >= 0);
    if (idx.length < MIN_SCALE_STARS) break;
    const q = planeFit(
      idx.map((i) => r[i]!),
      idx.map((i) => u[i]!),
      idx.map((i) => v[i]!),
      idx.map((i) => (pass === 0 ? 1 : w[i]!)),
    );
    if (!q) break;
    p = q;
    stars = idx.length;
    const res = r.map((ri, i) => ri - (q[0] + q[1] * u[i]! + q[2] * v[i]!));
    const mad = medianInPlace(Float64Array.from(idx.map((i) => Math.abs(res[i]!)))) * MAD_TO_SIGMA;
    keep = res.map((x) => Math.abs(x) <= 3 * mad || mad === 0);
  }
  return p && p[0] > 0 ? { x: p[1] / p[0], y: p[2] / p[0], stars, fluxRatio } : { x: 0, y: 0, stars, fluxRatio };
}

/**
 * Fits the local normalization of `frame` to `ref` (binned planes of one channel in the same
 * geometry, the frame already globally normalised). See the head comment for the steps.
 */
export function fitLocalNormalization(ref: BinnedPlane, frame: BinnedPlane, options: LnFitOptions = {}, prepared: PreparedReference | null = null): LnModel {
  const o = resolve(options);
  const grid = lnGrid(ref, o.cells);
  if (ref.width !== frame.width || ref.height !== frame.height || ref.factor !== frame.factor) return identity(grid, o.scale, 'size_mismatch', NaN, NaN);
  const c = cellsOf(ref.width, ref.height, o.cells);
  const min = minCount(c, ref, o.minCellFraction);
  const N = ref.width * ref.height;
  const mask = u8('fitMask', N).fill(0);
  let refMask: { sigma: number; seeds: Uint8Array };
  if (prepared && preparedFor(prepared, ref, o)) {
    mask.set(prepared.mask);
    refMask = prepared;
  } else refMask = starMask(ref, c, grid, o, min, mask);
  const noiseRef = refMask.sigma;
  // Against a prepared reference the frame's mask starts from the reference's (one round, not two).
  const frameMask = starMask(frame, c, grid, o, min, mask, prepared && refMask === prepared ? prepared.mask : null);
  const noiseFrame = frameMask.sigma;
  // The same pixels of both (unmasked, valid in both), so the same samples.
  const ok = u8('fitOk', N);
  const rd = ref.data;
  const fd = frame.data;
  let valid = 0;
  let masked = 0;
  for (let i = 0; i < N; i++) {
    const r = rd[i]!;
    const f = fd[i]!;
    if (r !== r || f !== f) {
      ok[i] = 0;
      continue;
    }
    valid++;
    if (mask[i]) {
      masked++;
      ok[i] = 0;
    } else ok[i] = 1;
  }
  const samples = cellSamples(ref, c, ok);
  const bgRef = backgroundNodes(ref, c, grid, samples, min);
  const bgFrame = backgroundNodes(frame, c, grid, samples, min);
  if (!bgRef || !bgFrame) return identity(grid, o.scale, 'no_background', noiseFrame, noiseRef);
  const measured = bgRef.measured;
  // The target is a smooth fit of the reference's background, not its cell medians: every frame
  // is matched to the target, so the medians' noise would be printed into every frame alike
  // and would not average out in the stack.
  const refBg = smoothNodes(bgRef.values, grid);
  const frameBg = repairNodes(bgFrame.values, grid.nx, grid.ny);

  // Relative photometry of the reference's isolated stars in both images (starPhotometry).
  const tilt = scaleTilt(o.scale === 'plane' ? starPhotometry(ref, frame, refMask.seeds, frameMask.seeds, mask, noiseRef, o) : []);
  const tiltX = tilt.x;
  const tiltY = tilt.y;
  const n = grid.nx * grid.ny;
  const a = new Array<number>(n);
  const b = new Array<number>(n);
  let bMin = Infinity;
  let bMax = -Infinity;
  for (let j = 0; j < grid.ny; j++) {
    for (let i = 0; i < grid.nx; i++) {
      const k = j * grid.nx + i;
      const uu = (grid.x0 + i * grid.dx - (grid.width - 1) / 2) / (grid.width / 2);
      const vv = (grid.y0 + j * grid.dy - (grid.height - 1) / 2) / (grid.height / 2);
      a[k] = 1 + tiltX * uu + tiltY * vv;
      b[k] = refBg[k]! - a[k]! * frameBg[k]!;
      bMin = Math.min(bMin, b[k]!);
      bMax = Math.max(bMax, b[k]!);
    }
  }
  return {
    version: 1,
    grid,
    interpolation: 'bilinear, outer cells extended linearly to the image edge',
    a,
    b,
    fit: {
      ok: true,
      scale: o.scale,
      cells: n,
      cells_measured: measured,
      masked_fraction: valid > 0 ? masked / valid : 0,
      noise_frame: noiseFrame,
      noise_ref: noiseRef,
      flux_ratio: tilt.fluxRatio,
      tilt_x: tiltX,
      tilt_y: tiltY,
      scale_stars: tilt.stars,
      offset_range: bMax - bMin,
    },
  };
}

/**
 * The model of a frame normalised globally by v·scale + offset before the fit, for raw values:
 * a'·v + b' = a·(v·scale + offset) + b.
 */
export function composeGlobal(model: LnModel, scale: number, offset: number): LnModel {
  return { ...model, a: model.a.map((a) => a * scale), b: model.b.map((b, k) => model.a[k]! * offset + b) };
}

/** The model rounded for JSON records (6 significant digits; geometry unchanged). */
export function compactModel(model: LnModel): LnModel {
  const r = (x: number) => (Number.isFinite(x) ? Number(x.toPrecision(6)) : x);
  const f = model.fit;
  return {
    ...model,
    a: model.a.map(r),
    b: model.b.map(r),
    fit: { ...f, masked_fraction: r(f.masked_fraction), noise_frame: r(f.noise_frame), noise_ref: r(f.noise_ref), flux_ratio: f.flux_ratio === null ? null : r(f.flux_ratio), tilt_x: r(f.tilt_x), tilt_y: r(f.tilt_y), offset_range: r(f.offset_range) },
  };
}
