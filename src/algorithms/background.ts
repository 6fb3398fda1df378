// Robust tiled sky background and noise model of one image plane (SExtractor-style mesh).
//
// The plane is cut into a grid of ~tileSize px tiles. Per tile, a sub-sampled set of pixels
// (~1/step², NaN/±Inf skipped) is sigma-clipped around its median (±clipSigma·σ, σ = 1.4826·MAD,
// `clipRounds` rounds) so stars and hot pixels drop out; the clipped median is the tile's sky
// level (the first window is placed from every other sample by default — it only has to be
// roughly right — which saves a quarter of the selections; on the bench frames levels moved by
// < 0.02 % and the global noise by −0.1 to −0.2 %). The tile's per-pixel noise is 1.4826·median|v − v_neighbour|/√2 over sampled pixels and
// their horizontal neighbours inside the clip range: differences of neighbours are blind to the
// sky's gradient across the tile, which would widen the spread of the values themselves.
// Level mesh: a 3×3 median filter removes tiles that sit on bright stars, satellite trails or
// small nebulae (their clipped statistics are still pulled upward); it works on the residuals
// from a robust quadratic surface, so the curvature of vignetting is not shaved (a plain median
// at the peak of a dome returns a lower neighbour). Noise mesh: the robust quadratic surface
// itself (the sky, hence the noise, varies smoothly; a single tile's σ is good to ~7 %).
// The model is evaluated by bilinear interpolation between tile centres, extrapolated linearly
// beyond the outer centres, so gradients and vignetting carry on to the borders.
// (Meant for planes whose neighbouring pixels see the same sky: a mono plane or a Bayer
// mosaic's luminance proxy; on a raw mosaic set pairDistance 2 — its level is then a mixture.)
//
// Invariants:
// - The input plane is never modified; memory is O(number of tiles) plus one tile's scratch.
// - Tiles with too few finite samples are NaN in the raw mesh and are filled from their
//   neighbours by linear extrapolation (then the global median), so the model is finite
//   everywhere; the median filter pads the mesh by linear extrapolation, so gradients pass it
//   unchanged up to the borders.
// - `median` and `rms` are the medians of the filtered tile meshes: the frame's global sky
//   level and per-pixel noise (`background_median`, `background_rms` of the frame metrics).

import { MAD_TO_SIGMA, medianInPlace, medianInPlaceF32 } from './robust-stats.js';
import { selectKernels, selectScratch } from './select-wasm.js';

export interface BackgroundOptions {
  /** Nominal tile edge in px (tiles are spread evenly, so actual sizes differ by < 1 tile / count). Default 64. */
  tileSize?: number;
  /** Sub-sampling: ~one pixel in step² of each tile is used (1 = all). Default 4 (~290 per 64 px tile). */
  step?: number;
  /** Clipping half-width in σ. Default 3. */
  clipSigma?: number;
  /** Clipping rounds at most (the mesh median filter removes what clipping leaves). Default 2. */
  clipRounds?: number;
  /** Edge of the median filter over the tile mesh (1 = none, 3 = 3×3). Default 3. */
  filterSize?: number;
  /** Distance of the neighbour whose difference measures the noise (2 on a raw Bayer mosaic). Default 1. */
  pairDistance?: number;
  /** Samples that place the first clip window: every other one ('half', cheaper) or all. Default 'half'. */
  firstClip?: 'half' | 'all';
}

export interface BackgroundModel {
  width: number;
  height: number;
  /** Tile counts along x and y. */
  nx: number;
  ny: number;
  /** Tile boundaries: tile i spans x in [xEdges[i], xEdges[i+1]). Length nx+1 / ny+1. */
  xEdges: Int32Array;
  yEdges: Int32Array;
  /** Filtered sky level and per-pixel noise per tile, row-major ny × nx. */
  level: Float32Array;
  noise: Float32Array;
  /** Global sky level (median of `level`) and per-pixel noise (median of `noise`). */
  median: number;
  rms: number;
}

const DEFAULTS = { tileSize: 64, step: 4, clipSigma: 3, clipRounds: 2, filterSize: 3, pairDistance: 1, firstClip: 'half' as 'half' | 'all' };

/**
 * Tile statistics. `v[0..n)` are the samples, `nb[0..n)` each sample's horizontal neighbour.
 * Level: the median after sigma clipping (σ from the MAD of the samples, `rounds` rounds).
 * Noise: 1.4826 · median |v − nb| / √2 over the pairs whose both values survive the clip — the
 * spread of neighbour differences, which a gradient across the tile (vignetting, sky glow) does
 * not widen, unlike the spread of the values themselves. Reorders `v`; `dev` is scratch.
 */
function tileStats(v: Float32Array, nb: Float32Array, n: number, work: Float32Array, dev: Float32Array, clip: number, rounds: number, halfFirst: boolean, medianOf: MedianOf): [number, number] {
  let med = NaN;
  let lo = -Infinity;
  let hi = Infinity;
  // The first round's median and MAD only place the first clip window, several σ wide: every
  // other sample places it well enough (its edges move by ~0.1σ, where ~0.1 % of the samples
  // lie), at half the cost of two of the tile's four selections. Every later statistic — the
  // level (last round's median) and the noise — uses all samples.
  const half = halfFirst && rounds > 1 && n >= 64;
  let count = half ? n >> 1 : n;
  if (half) for (let i = 0; i < count; i++) work[i] = v[2 * i]!;
  else work.set(v.subarray(0, n));
  // Rounds: median; then (but for the last round) MAD-σ and the clip for the next median.
  for (let round = 0; round < rounds; round++) {
    const values = work.subarray(0, count);
    med = medianOf(work, count);
    if (round === rounds - 1) break;
    for (let i = 0; i < count; i++) dev[i] = Math.abs(values[i]! - med);
    const sigma = MAD_TO_SIGMA * medianOf(dev, count);
    if (!(sigma > 0)) break;
    lo = med - clip * sigma;
    hi = med + clip * sigma;
    let kept = 0;
    // After a half-sample first round, the clip applies to all samples.
    const from = round === 0 && half ? v : values;
    const total = round === 0 && half ? n : count;
    for (let i = 0; i < total; i++) {
      const x = from[i]!;
      if (x >= lo && x <= hi) work[kept++] = x;
    }
    if (kept < 8) break;
    if (kept === total && !(round === 0 && half)) break;
    count = kept;
  }
  let m = 0;
  for (let i = 0; i < n; i++) {
    const a = v[i]!;
    const b = nb[i]!;
    if (a >= lo && a <= hi && b >= lo && b <= hi) dev[m++] = Math.abs(a - b);
  }
  const noise = m >= 8 ? (MAD_TO_SIGMA * medianOf(dev, m)) / Math.SQRT2 : NaN;
  return [med, noise];
}

/** Median of a[0 … n), reordering them (medianInPlaceF32's result). */
type MedianOf = (a: Float32Array, n: number) => number;

function evenEdges(length: number, tiles: number): Int32Array {
  const e = new Int32Array(tiles + 1);
  for (let i = 0; i <= tiles; i++) e[i] = Math.round((i * length) / tiles);
  return e;
}

/**
 * Median filter of the mesh over (2·half + 1)² windows. The mesh is first padded, by linear
 * extrapolation (ghost = 2·edge − inner: a gradient then passes unchanged even at the borders,
 * where a plain median of the fewer neighbours would shift it by half a tile) or by replicating
 * the border; non-finite values are left out of each window.
 */
function filterMesh(src: Float32Array, nx: number, ny: number, half: number, padding: 'linear' | 'replicate' = 'linear'): Float32Array {
  const px = nx + 2 * half;
  const py = ny + 2 * half;
  const pad = new Float64Array(px * py).fill(NaN);
  for (let j = 0; j < ny; j++) for (let i = 0; i < nx; i++) pad[(j + half) * px + i + half] = src[j * nx + i]!;
  const extrapolate = (a: number, b: number) => (padding === 'linear' && Number.isFinite(a) && Number.isFinite(b) ? 2 * a - b : a);
  for (let j = half; j < half + ny; j++) {
    for (let k = 1; k <= half; k++) {
      const row = j * px;
      pad[row + half - k] = nx > k ? extrapolate(pad[row + half]!, pad[row + half + k]!) : pad[row + half]!;
      pad[row + half + nx - 1 + k] = nx > k ? extrapolate(pad[row + half + nx - 1]!, pad[row + half + nx - 1 - k]!) : pad[row + half + nx - 1]!;
    }
  }
  for (let i = 0; i < px; i++) {
    for (let k = 1; k <= half; k++) {
      const top = pad[half * px + i]!;
      const bottom = pad[(half + ny - 1) * px + i]!;
      pad[(half - k) * px + i] = ny > k ? extrapolate(top, pad[(half + k) * px + i]!) : top;
      pad[(half + ny - 1 + k) * px + i] = ny > k ? extrapolate(bottom, pad[(half + ny - 1 - k) * px + i]!) : bottom;
    }
  }
  const out = new Float32Array(nx * ny);
  const win = new Float64Array((2 * half + 1) ** 2);
  for (let j = 0; j < ny; j++) {
    for (let i = 0; i < nx; i++) {
      let n = 0;
      for (let dj = 0; dj <= 2 * half; dj++) {
        for (let di = 0; di <= 2 * half; di++) {
          const v = pad[(j + dj) * px + i + di]!;
          if (Number.isFinite(v)) win[n++] = v;
        }
      }
      out[j * nx + i] = n > 0 ? medianInPlace(win.subarray(0, n)) : NaN;
    }
  }
  return out;
}

/** Values of a robust least-squares quadratic surface (plane or constant on small meshes) over the mesh. */
function smoothSurface(mesh: Float32Array, nx: number, ny: number): Float64Array {
  const terms = nx * ny >= 12 && nx >= 3 && ny >= 3 ? 6 : nx * ny >= 4 ? 3 : 1;
  const sx = Math.max(1, (nx - 1) / 2);
  const sy = Math.max(1, (ny - 1) / 2);
  const basis = (i: number, j: number, out: Float64Array) => {
    const u = (i - (nx - 1) / 2) / sx;
    const v = (j - (ny - 1) / 2) / sy;
    out[0] = 1;
    if (terms >= 3) {
      out[1] = u;
      out[2] = v;
    }
    if (terms === 6) {
      out[3] = u * u;
      out[4] = u * v;
      out[5] = v * v;
    }
  };
  const b = new Float64Array(terms);
  const coef = new Float64Array(terms);
  const use = new Uint8Array(nx * ny).fill(1);
  const fitted = new Float64Array(nx * ny);
  for (let round = 0; round < 2; round++) {
    const a = new Float64Array(terms * terms);
    const rhs = new Float64Array(terms);
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < nx; i++) {
        if (!use[j * nx + i]) continue;
        basis(i, j, b);
        const v = mesh[j * nx + i]!;
        for (let p = 0; p < terms; p++) {
          rhs[p] = rhs[p]! + b[p]! * v;
          for (let q = 0; q < terms; q++) a[p * terms + q] = a[p * terms + q]! + b[p]! * b[q]!;
        }
      }
    }
    // Gaussian elimination with partial pivoting (≤ 6 unknowns).
    for (let c = 0; c < terms; c++) {
      let piv = c;
      for (let r = c + 1; r < terms; r++) if (Math.abs(a[r * terms + c]!) > Math.abs(a[piv * terms + c]!)) piv = r;
      if (!(Math.abs(a[piv * terms + c]!) > 1e-12)) return fitted.fill(NaN);
      for (let q = 0; q < terms; q++) {
        const t = a[c * terms + q]!;
        a[c * terms + q] = a[piv * terms + q]!;
        a[piv * terms + q] = t;
      }
      const t = rhs[c]!;
      rhs[c] = rhs[piv]!;
      rhs[piv] = t;
      for (let r = c + 1; r < terms; r++) {
        const f = a[r * terms + c]! / a[c * terms + c]!;
        for (let q = c; q < terms; q++) a[r * terms + q] = a[r * terms + q]! - f * a[c * terms + q]!;
        rhs[r] = rhs[r]! - f * rhs[c]!;
      }
    }
    for (let c = terms - 1; c >= 0; c--) {
      let v = rhs[c]!;
      for (let q = c + 1; q < terms; q++) v -= a[c * terms + q]! * coef[q]!;
      coef[c] = v / a[c * terms + c]!;
    }
    const resid = new Float64Array(nx * ny);
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < nx; i++) {
        basis(i, j, b);
        let v = 0;
        for (let p = 0; p < terms; p++) v += coef[p]! * b[p]!;
        fitted[j * nx + i] = v;
        resid[j * nx + i] = Math.abs(mesh[j * nx + i]! - v);
      }
    }
    // Second round without the tiles far off the surface (bright stars, nebulae).
    const mad = medianInPlace(resid.slice());
    for (let k = 0; k < nx * ny; k++) use[k] = resid[k]! <= 4 * MAD_TO_SIGMA * mad + 1e-12 ? 1 : 0;
  }
  return fitted;
}

/**
 * Median filter applied to the residuals from a smooth surface, which is then added back: a
 * plain median filter shifts curved regions (at the peak of the vignetting every neighbour is
 * lower, so the median is too), while the residuals of a quadratic sky are flat.
 */
function filterDetrended(mesh: Float32Array, nx: number, ny: number, half: number): Float32Array {
  const surface = smoothSurface(mesh, nx, ny);
  if (!Number.isFinite(surface[0]!)) return filterMesh(mesh, nx, ny, half);
  const resid = new Float32Array(nx * ny);
  for (let k = 0; k < resid.length; k++) resid[k] = mesh[k]! - surface[k]!;
  // Residuals of a smooth sky are flat: replicated borders keep noise from being extrapolated.
  const filtered = filterMesh(resid, nx, ny, half, 'replicate');
  for (let k = 0; k < filtered.length; k++) filtered[k] = filtered[k]! + surface[k]!;
  return filtered;
}

/** Noise mesh: the robust quadratic surface on meshes of ≥ 3×3 tiles, else the median-filtered mesh. */
function smoothNoise(mesh: Float32Array, nx: number, ny: number, half: number): Float32Array {
  if (nx < 3 || ny < 3) return filterMesh(mesh, nx, ny, half);
  const surface = smoothSurface(mesh, nx, ny);
  if (!Number.isFinite(surface[0]!)) return filterMesh(mesh, nx, ny, half);
  const out = new Float32Array(nx * ny);
  for (let k = 0; k < out.length; k++) out[k] = Math.max(surface[k]!, 1e-3 * Math.abs(surface[k]!) + Number.MIN_VALUE);
  return out;
}

/**
 * Fills NaN tiles: the mean of linear extrapolations from the two nearest finite tiles along each
 * axis direction where both exist, else the mean of finite 8-neighbours; repeated until no hole
 * is left next to data; what remains gets `fallback`.
 */
function fillHoles(mesh: Float32Array, nx: number, ny: number, fallback: number): void {
  const at = (i: number, j: number) => (i >= 0 && j >= 0 && i < nx && j < ny ? mesh[j * nx + i]! : NaN);
  for (let pass = 0; pass < nx + ny; pass++) {
    let holes = 0;
    const next = mesh.slice();
    for (let j = 0; j < ny; j++) {
      for (let i = 0; i < nx; i++) {
        if (Number.isFinite(mesh[j * nx + i]!)) continue;
        let s = 0;
        let n = 0;
        for (const [di, dj] of [[1, 0], [-1, 0], [0, 1], [0, -1]] as const) {
          const a = at(i + di, j + dj);
          const b = at(i + 2 * di, j + 2 * dj);
          if (Number.isFinite(a) && Number.isFinite(b)) {
            s += 2 * a - b;
            n++;
          }
        }
        if (n === 0) {
          for (let dj = -1; dj <= 1; dj++) {
            for (let di = -1; di <= 1; di++) {
              const v = at(i + di, j + dj);
              if (Number.isFinite(v)) {
                s += v;
                n++;
              }
            }
          }
        }
        if (n > 0) next[j * nx + i] = s / n;
        else holes++;
      }
    }
    mesh.set(next);
    if (holes === 0) return;
  }
  for (let k = 0; k < mesh.length; k++) if (!Number.isFinite(mesh[k]!)) mesh[k] = fallback;
}

/**
 * Samples of one tile into `out`, each one's horizontal neighbour into `nbs`; returns the count.
 * Every rowStep-th row, every colStep-th pixel from a start that shifts by one per row (both
 * steps odd): ~1/step² of the pixels, visiting all four sites of a 2×2 Bayer cell equally (a
 * plain lattice with an even step would sample one colour only), and only a third of the rows,
 * which is what memory traffic is made of. (A function of its own, called per tile: V8 optimises
 * it after a few tiles, where the loop inside the once-per-frame caller ran unoptimised, boxing
 * every sample.)
 */
function sampleTile(data: Float32Array, width: number, x0: number, x1: number, y0: number, y1: number, rowStep: number, colStep: number, pair: number, out: Float32Array, nbs: Float32Array): number {
  let n = 0;
  for (let y = y0, k = 0; y < y1; y += rowStep, k++) {
    const row = y * width;
    for (let x = x0 + (k % colStep); x < x1; x += colStep) {
      const v = data[row + x]!;
      // The horizontal neighbour (pairDistance px away; leftward at the right edge).
      const xn = x + pair < width ? x + pair : x - pair;
      // (No neighbour: skipped. Written as `xn >= 0 ? data[…] : NaN`, the merge of a float load
      // with a NaN constant made V8 box every sample, ~16 MB of garbage per 2048×1536 frame.)
      if (xn < 0) continue;
      const u = data[row + xn]!;
      if (v === v && v !== Infinity && v !== -Infinity && u === u && u !== Infinity && u !== -Infinity) {
        out[n] = v;
        nbs[n++] = u;
      }
    }
  }
  return n;
}

/** Tiled background and noise model of `data` (width × height, row-major; one plane). */
export function estimateBackground(data: Float32Array, width: number, height: number, options: BackgroundOptions = {}): BackgroundModel {
  const o = { ...DEFAULTS, ...options };
  const nx = Math.max(1, Math.round(width / o.tileSize));
  const ny = Math.max(1, Math.round(height / o.tileSize));
  const xEdges = evenEdges(width, nx);
  const yEdges = evenEdges(height, ny);
  const step = Math.max(1, Math.floor(o.step));
  // Odd steps whose product is ≈ step²: 1 → 1×1, 2 → 1×3, 3 → 3×3, 4 → 3×5, 5 → 5×5, …
  const rowStep = step === 1 ? 1 : step % 2 === 1 ? step : step - 1;
  const colStep = step === 1 ? 1 : step % 2 === 1 ? step : step + 1;
  const maxTile = Math.ceil(width / nx) * Math.ceil(height / ny);
  const scratch = new Float32Array(Math.ceil(maxTile / (rowStep * colStep)) + Math.ceil(width / nx) + Math.ceil(height / ny) + 8);
  // The selections run in WebAssembly where it exists (select-wasm.ts: the same quickselect,
  // identical results, ~1.4× faster), on scratch arrays in its memory.
  const sel = selectKernels();
  const [work, dev] = sel ? selectScratch(sel, scratch.length) : [new Float32Array(scratch.length), new Float32Array(scratch.length)];
  const medianOf: MedianOf = sel ? (a, n) => sel.median(a.byteOffset, n) : (a, n) => medianInPlaceF32(a.subarray(0, n));
  const nbs = new Float32Array(scratch.length);
  const pair = Math.max(1, Math.floor(o.pairDistance));
  const rawLevel = new Float32Array(nx * ny);
  const rawNoise = new Float32Array(nx * ny);
  const minSamples = 16;
  for (let j = 0; j < ny; j++) {
    const y0 = yEdges[j]!;
    const y1 = yEdges[j + 1]!;
    for (let i = 0; i < nx; i++) {
      const x0 = xEdges[i]!;
      const x1 = xEdges[i + 1]!;
      const n = sampleTile(data, width, x0, x1, y0, y1, rowStep, colStep, pair, scratch, nbs);
      const k = j * nx + i;
      if (n < minSamples) {
        rawLevel[k] = NaN;
        rawNoise[k] = NaN;
        continue;
      }
      const [med, sigma] = tileStats(scratch, nbs, n, work, dev, o.clipSigma, o.clipRounds, o.firstClip !== 'all', medianOf);
      rawLevel[k] = med;
      rawNoise[k] = sigma;
    }
  }
  const finiteMedian = (m: Float32Array) => {
    const f = Float64Array.from(m).filter((v) => Number.isFinite(v));
    return f.length > 0 ? medianInPlace(f) : NaN;
  };
  // Holes first (so the filter sees a complete mesh), then the median filter.
  fillHoles(rawLevel, nx, ny, finiteMedian(rawLevel));
  fillHoles(rawNoise, nx, ny, finiteMedian(rawNoise));
  const half = Math.max(0, Math.floor(o.filterSize / 2));
  const level = half > 0 ? filterDetrended(rawLevel, nx, ny, half) : rawLevel.slice();
  // The noise follows the sky's (smooth) brightness: a robust quadratic surface averages all tiles'
  // scatter (each tile's MAD-σ is only good to ~7 %), where the mesh is large enough for one.
  const noise = half > 0 ? smoothNoise(rawNoise, nx, ny, half) : rawNoise.slice();
  const median = finiteMedian(level);
  const rms = finiteMedian(noise);
  return { width, height, nx, ny, xEdges, yEdges, level, noise, median, rms };
}

/** Tile-centre coordinate of tile i given edges (pixel centres are integers). */
function centre(edges: Int32Array, i: number): number {
  return (edges[i]! + edges[i + 1]! - 1) / 2;
}

/**
 * Interpolation position along one axis: index of the lower tile centre and the fraction
 * toward the next. Outside the outer centres the fraction goes below 0 or above 1 (linear
 * extrapolation); with one tile the fraction is 0.
 */
function axisPosition(edges: Int32Array, tiles: number, p: number): [number, number] {
  if (tiles === 1) return [0, 0];
  let i = 0;
  // Tiles are few (tens): a linear scan is cheaper than a search for the callers' row loops.
  while (i < tiles - 2 && p > centre(edges, i + 1)) i++;
  const c0 = centre(edges, i);
  const c1 = centre(edges, i + 1);
  return [i, (p - c0) / (c1 - c0)];
}

/** Index of the lower tile centre for `axisPosition` (scalar: the point evaluators allocate nothing). */
function axisIndex(edges: Int32Array, tiles: number, p: number): number {
  let i = 0;
  while (i < tiles - 2 && p > centre(edges, i + 1)) i++;
  return i;
}

/** Fraction toward the next tile centre for the index from `axisIndex` (as `axisPosition`). */
function axisFraction(edges: Int32Array, tiles: number, i: number, p: number): number {
  if (tiles === 1) return 0;
  const c0 = centre(edges, i);
  const c1 = centre(edges, i + 1);
  return (p - c0) / (c1 - c0);
}

function meshAt(model: BackgroundModel, mesh: Float32Array, x: number, y: number): number {
  const { nx, ny } = model;
  const i = nx === 1 ? 0 : axisIndex(model.xEdges, nx, x);
  const fx = axisFraction(model.xEdges, nx, i, x);
  const j = ny === 1 ? 0 : axisIndex(model.yEdges, ny, y);
  const fy = axisFraction(model.yEdges, ny, j, y);
  const i1 = Math.min(nx - 1, i + 1);
  const j1 = Math.min(ny - 1, j + 1);
  const a = mesh[j * nx + i]!;
  const b = mesh[j * nx + i1]!;
  const c = mesh[j1 * nx + i]!;
  const d = mesh[j1 * nx + i1]!;
  const top = a + (b - a) * fx;
  const bottom = c + (d - c) * fx;
  return top + (bottom - top) * fy;
}

/** Sky level at pixel (x, y) (0-based pixel centres). */
export function backgroundAt(model: BackgroundModel, x: number, y: number): number {
  return meshAt(model, model.level, x, y);
}

/** Per-pixel noise σ at pixel (x, y). */
export function noiseAt(model: BackgroundModel, x: number, y: number): number {
  return meshAt(model, model.noise, x, y);
}

/**
 * Per-row evaluator: `row(y, which, out)` fills out[0..width) with the level or noise of row y.
 * Interpolates along y on the mesh first (nx values), then along x, so a row costs O(width).
 */
export function rowEvaluator(model: BackgroundModel): (y: number, which: 'level' | 'noise', out: Float32Array) => void {
  const { nx, ny, width } = model;
  // Precomputed x interpolation: lower tile index and fraction per column.
  const xi = new Int32Array(width);
  const xf = new Float32Array(width);
  for (let x = 0; x < width; x++) {
    const [i, f] = axisPosition(model.xEdges, nx, x);
    xi[x] = i;
    xf[x] = f;
  }
  const column = new Float32Array(nx);
  return (y, which, out) => {
    const mesh = which === 'level' ? model.level : model.noise;
    const [j, fy] = axisPosition(model.yEdges, ny, y);
    const j1 = Math.min(ny - 1, j + 1);
    for (let i = 0; i < nx; i++) {
      const a = mesh[j * nx + i]!;
      column[i] = a + (mesh[j1 * nx + i]! - a) * fy;
    }
    if (nx === 1) {
      out.fill(column[0]!, 0, width);
      return;
    }
    for (let x = 0; x < width; x++) {
      const i = xi[x]!;
      const a = column[i]!;
      out[x] = a + (column[i + 1]! - a) * xf[x]!;
    }
  };
}

/**
 * Linear segments of one row: for segment s, columns [start[s], start[s+1]) take
 * value0[s] + slope[s]·(x − start[s]). Filled by `rowSegments`; lets hot loops evaluate the
 * model with one addition per pixel.
 */
export interface RowSegments {
  count: number;
  start: Int32Array;
  level0: Float64Array;
  levelSlope: Float64Array;
  noise0: Float64Array;
  noiseSlope: Float64Array;
}

/** Segment evaluator of a model: `fill(y, seg)` writes row y's level and noise as linear segments. */
export function rowSegments(model: BackgroundModel): { segments: RowSegments; fill: (y: number) => void } {
  const { nx, ny, width, xEdges, yEdges } = model;
  // Segment boundaries: the tile centres (rounded up to whole columns), plus 0 and width.
  const bounds: number[] = [0];
  for (let i = 1; i < nx - 1; i++) {
    const c = Math.ceil(centre(xEdges, i));
    if (c > bounds[bounds.length - 1]! && c < width) bounds.push(c);
  }
  bounds.push(width);
  const count = bounds.length - 1;
  const segments: RowSegments = {
    count,
    start: Int32Array.from(bounds),
    level0: new Float64Array(count),
    levelSlope: new Float64Array(count),
    noise0: new Float64Array(count),
    noiseSlope: new Float64Array(count),
  };
  const lev = new Float64Array(nx);
  const noi = new Float64Array(nx);
  // Per segment: lower tile index and the x of its centre (interpolation is linear between centres).
  const segTile = new Int32Array(count);
  for (let s = 0; s < count; s++) segTile[s] = axisPosition(xEdges, nx, bounds[s]!)[0];
  const fill = (y: number): void => {
    const [j, fy] = axisPosition(yEdges, ny, y);
    const j1 = Math.min(ny - 1, j + 1);
    for (let i = 0; i < nx; i++) {
      const a = model.level[j * nx + i]!;
      lev[i] = a + (model.level[j1 * nx + i]! - a) * fy;
      const b = model.noise[j * nx + i]!;
      noi[i] = b + (model.noise[j1 * nx + i]! - b) * fy;
    }
    for (let s = 0; s < count; s++) {
      const x0 = bounds[s]!;
      if (nx === 1) {
        segments.level0[s] = lev[0]!;
        segments.levelSlope[s] = 0;
        segments.noise0[s] = noi[0]!;
        segments.noiseSlope[s] = 0;
        continue;
      }
      const i = segTile[s]!;
      const c0 = centre(xEdges, i);
      const c1 = centre(xEdges, i + 1);
      const dl = (lev[i + 1]! - lev[i]!) / (c1 - c0);
      const dn = (noi[i + 1]! - noi[i]!) / (c1 - c0);
      segments.level0[s] = lev[i]! + dl * (x0 - c0);
      segments.levelSlope[s] = dl;
      segments.noise0[s] = noi[i]! + dn * (x0 - c0);
      segments.noiseSlope[s] = dn;
    }
  };
  return { segments, fill };
}

/** Full-resolution map of the level or the noise (width × height). */
export function renderBackground(model: BackgroundModel, which: 'level' | 'noise' = 'level'): Float32Array {
  const out = new Float32Array(model.width * model.height);
  const row = rowEvaluator(model);
  for (let y = 0; y < model.height; y++) row(y, which, out.subarray(y * model.width, (y + 1) * model.width));
  return out;
}
