// The local flattening of star detection's significance image (stars.ts, docs/star-detection.md):
// D = (filtered image − sky model)/noise is re-zeroed on blocks of ~32 full-resolution px, since
// the tiled sky model cannot follow the curvature of uncorrected vignetting under a bright sky,
// a dust shadow or a bright star's halo; and, for resampled images (stacks), divided by its
// measured spread (correlated noise). Pieces: BlockSampler collects block samples while
// significance() writes D; flattenSignificance turns them into block levels and lowers the
// per-row block maxima the candidate search skips by; Significance is how every reader sees D
// (level subtracted where it looks: D itself is never rewritten, a pass over every pixel cost as
// much as the matched filter).
// Invariants: D is never modified; results depend only on D (and the block geometry).

import { MAD_TO_SIGMA, medianInPlaceF32 } from './robust-stats.js';

/**
 * Samples of D for flattenSignificance, taken row by row as significance() writes D: on each
 * block (`block` px square, spread evenly) every stride-th pixel of every stride-th row
 * (≤ 64 values, stride = block / 8), and four pairs of points SPREAD_LAG px apart whose
 * differences measure D's spread.
 */
export class BlockSampler {
  readonly nx: number;
  readonly ny: number;
  readonly xe: Int32Array;
  readonly ye: Int32Array;
  readonly stride: number;
  /** Block medians (NaN: no sample), filled as each row of blocks completes. */
  readonly raw: Float32Array;
  readonly diffs: Float32Array;
  nDiff = 0;
  /** Samples of the current row of blocks, `cap` per block, and their counts. */
  private readonly cap: number;
  private readonly buf: Float32Array;
  private readonly fill: Int32Array;
  private readonly hist = new Int32Array(HIST_BINS + 2);
  /** Per row: its block row, or −1 when it holds no samples; and whether it holds spread pairs. */
  private readonly sampleRow: Int32Array;
  private readonly pairRow: Uint8Array;
  /** Per row: the block row it ends, or −1. */
  private readonly endRow: Int32Array;

  constructor(
    readonly w: number,
    readonly h: number,
    block: number,
  ) {
    this.nx = Math.max(1, Math.round(w / block));
    this.ny = Math.max(1, Math.round(h / block));
    this.xe = new Int32Array(this.nx + 1);
    this.ye = new Int32Array(this.ny + 1);
    for (let i = 0; i <= this.nx; i++) this.xe[i] = Math.round((i * w) / this.nx);
    for (let j = 0; j <= this.ny; j++) this.ye[j] = Math.round((j * h) / this.ny);
    this.stride = Math.max(1, Math.floor(block / 8));
    this.cap = Math.ceil(block / this.stride + 2) ** 2;
    this.buf = new Float32Array(this.cap * this.nx);
    this.fill = new Int32Array(this.nx);
    this.raw = new Float32Array(this.nx * this.ny).fill(NaN);
    this.diffs = new Float32Array(this.nx * this.ny * 4);
    this.sampleRow = new Int32Array(h).fill(-1);
    this.pairRow = new Uint8Array(h);
    this.endRow = new Int32Array(h).fill(-1);
    for (let j = 0; j < this.ny; j++) {
      this.endRow[this.ye[j + 1]! - 1] = j;
      for (let y = this.ye[j]! + (this.stride >> 1); y < this.ye[j + 1]!; y += this.stride) this.sampleRow[y] = j;
      for (let q = 0; q < 4; q++) {
        const y = this.ye[j]! + Math.floor(((2 * q + 1) * (this.ye[j + 1]! - this.ye[j]!)) / 8);
        if (y < h) this.pairRow[y] = 1;
      }
    }
  }

  /** Takes row y's samples from D (the row just written; rows come in order). */
  row(y: number, D: Float32Array): void {
    const o = y * this.w;
    const j = this.sampleRow[y]!;
    const { nx, xe, stride, cap, buf, fill } = this;
    if (j >= 0) {
      for (let i = 0; i < nx; i++) {
        const base = i * cap;
        let n = fill[i]!;
        for (let x = xe[i]! + (stride >> 1); x < xe[i + 1]!; x += stride) {
          const v = D[o + x]!;
          if (v === v && n < cap) buf[base + n++] = v;
        }
        fill[i] = n;
      }
    }
    if (this.pairRow[y]) {
      // Alternating between an eighth and five eighths into each block.
      const odd = (y & 1) === 1;
      for (let i = 0; i < nx && this.nDiff < this.diffs.length; i++) {
        const x = xe[i]! + Math.floor(((odd ? 5 : 1) * (xe[i + 1]! - xe[i]!)) / 8);
        if (x + SPREAD_LAG >= this.w) continue;
        const d = D[o + x]! - D[o + x + SPREAD_LAG]!;
        if (d === d) this.diffs[this.nDiff++] = Math.abs(d);
      }
    }
    // The last row of a row of blocks: its medians, and the buffers start over.
    const jb = this.endRow[y]!;
    if (jb >= 0) {
      for (let i = 0; i < nx; i++) {
        const n = fill[i]!;
        this.raw[jb * nx + i] = n > 0 ? histogramMedian(buf, i * cap, n, this.hist) : NaN;
      }
      fill.fill(0);
    }
  }
}

/**
 * Local re-zeroing of D ("detection on a locally flattened image"). The tiled sky model is
 * bilinear between tile centres ~64 px apart, so where the sky curves on that scale (the
 * vignetting of an uncalibrated light under a bright sky, the halo of a very bright star, a dust
 * shadow) D carries an offset of several σ over whole regions: noise peaks then clear the
 * threshold by the hundred, and stars in a shadow fall below it. D is cut into blocks of `block`
 * px; each block's level is the median of a sparse sample (≤ 64 values) of its D, lowered to the
 * median of its 3×3 block neighbourhood where that is lower (a block that a bright star's core
 * fills must not lift D around the star); the levels are interpolated bilinearly between block
 * centres (constant beyond the outer centres). D itself is not rewritten (a pass over every
 * pixel would cost as much as the matched filter): readers go through `Significance`, which
 * subtracts the level where they look, and the per-row block maxima of `blocks` are lowered by
 * each segment's smallest level so the candidate search still skips what stays below threshold.
 */
export function flattenSignificance(sampler: BlockSampler, blocks: SignificanceBlocks, rescale: boolean): FlattenGrid {
  const { nx, ny, xe, ye, raw, w, h } = sampler;
  const diffs = sampler.diffs;
  const nDiff = sampler.nDiff;
  // `rescale`: D is in units of the noise the sky model predicts for white pixel noise.
  // Interpolated images (a stack: debayered and resampled) have noise correlated over a few
  // pixels, which the matched filter does not average down: their D spreads by ~3 units and noise
  // bumps pass the threshold by the hundred. D is then divided by its measured spread when that
  // exceeds 1 (never multiplied). The spread comes from differences of D between points
  // SPREAD_LAG px apart. Only for images known to be resampled: in a crowded raw frame the stars
  // below the threshold spread those differences too (by ×2 on the generator's dense fields),
  // and dividing by that would lose real stars.
  const spread = nDiff >= 16 ? (MAD_TO_SIGMA * medianInPlaceF32(diffs.subarray(0, nDiff))) / Math.SQRT2 : 1;
  const inv = rescale && spread > 1 ? 1 / spread : 1;
  // Fill blocks without samples from the others (0 when none has any: D is already centred).
  let fallback = 0;
  {
    let m = 0;
    const finite = new Float32Array(nx * ny);
    for (let k = 0; k < raw.length; k++) if (raw[k] === raw[k]) finite[m++] = raw[k]!;
    if (m > 0) fallback = medianInPlaceF32(finite.subarray(0, m));
  }
  for (let k = 0; k < raw.length; k++) if (!(raw[k] === raw[k])) raw[k] = fallback;
  const level = new Float32Array(nx * ny);
  const nb = new Float32Array(9);
  for (let j = 0; j < ny; j++) {
    for (let i = 0; i < nx; i++) {
      let n = 0;
      for (let dj = -1; dj <= 1; dj++) for (let di = -1; di <= 1; di++) {
        const jj = j + dj;
        const ii = i + di;
        if (jj >= 0 && jj < ny && ii >= 0 && ii < nx) nb[n++] = raw[jj * nx + ii]!;
      }
      level[j * nx + i] = Math.min(raw[j * nx + i]!, selectLocal(nb, n >> 1, 0, n - 1));
    }
  }
  const [colLo, colT] = axisWeights(xe, nx, w);
  const [rowLo, rowT] = axisWeights(ye, ny, h);
  const { start, count, max } = blocks;
  const grid: FlattenGrid = { nx, ny, level, colLo, colT, rowLo, rowT, inv, minLevel: new Float32Array(ny * count) };
  // A lower bound of the level per band between block-centre rows and segment of `blocks`: the
  // smallest of the centre levels the bilinear interpolation mixes there. Each row's block
  // maximum of D, lowered by it (and rescaled), bounds the flattened D's.
  for (let j = 0; j < ny; j++) {
    const j1 = Math.min(ny - 1, j + 1);
    for (let k = 0; k < count; k++) {
      const i0 = colLo[start[k]!]!;
      const i1 = Math.min(nx - 1, colLo[start[k + 1]! - 1]! + 1);
      let m = Infinity;
      for (let i = i0; i <= i1; i++) m = Math.min(m, level[j * nx + i]!, level[j1 * nx + i]!);
      grid.minLevel[j * count + k] = m;
    }
  }
  for (let y = 0; y < h; y++) {
    const band = rowLo[y]! * count;
    for (let k = 0; k < count; k++) {
      const mx = (max[y * count + k]! - grid.minLevel[band + k]!) * inv;
      max[y * count + k] = mx + 1e-6 * Math.abs(mx);
    }
  }
  return grid;
}

/** Histogram of the block medians: HIST_BINS bins of HIST_WIDTH σ centred on 0, plus one overflow bin each side. */
const HIST_BINS = 64;
const HIST_WIDTH = 0.25;

/**
 * Median of a[o..o + n) from a histogram (linear within the median's bin: within a few 0.01 σ of
 * the exact median for ≤ 64 values of unit spread), at a fraction of a selection's cost (3000
 * blocks per 2048×1536 frame); the exact selection when the median falls outside ±8 σ.
 */
function histogramMedian(a: Float32Array, o: number, n: number, hist: Int32Array): number {
  hist.fill(0);
  const lo = -(HIST_BINS / 2) * HIST_WIDTH;
  for (let k = 0; k < n; k++) {
    const b = Math.floor((a[o + k]! - lo) / HIST_WIDTH);
    hist[b < 0 ? 0 : b >= HIST_BINS ? HIST_BINS + 1 : b + 1]!++;
  }
  const half = n / 2;
  let below = hist[0]!;
  if (below >= half) return selectLocal(a, o + (n >> 1), o, o + n - 1);
  for (let b = 1; b <= HIST_BINS; b++) {
    const c = hist[b]!;
    if (below + c >= half) return lo + (b - 1 + (half - below) / c) * HIST_WIDTH;
    below += c;
  }
  return selectLocal(a, o + (n >> 1), o, o + n - 1);
}

/**
 * The k-th smallest of a[lo..hi] (reorders that range): robust-stats' selection, copied so that
 * this caller's ranges and array sizes do not make the shared one polymorphic for the sky
 * model's ~3000 selections per frame (measured: +5 ms per 2048×1536 frame when shared).
 */
function selectLocal(a: Float32Array, k: number, lo: number, hi: number): number {
  while (hi > lo) {
    const mid = (lo + hi) >>> 1;
    let x = a[lo]!;
    let y = a[mid]!;
    const z = a[hi]!;
    if (x > y) {
      const t = x;
      x = y;
      y = t;
    }
    if (y > z) y = z;
    if (x > y) y = x;
    const pivot = y;
    let i = lo;
    let j = hi;
    while (i <= j) {
      while (a[i]! < pivot) i++;
      while (a[j]! > pivot) j--;
      if (i <= j) {
        const t = a[i]!;
        a[i] = a[j]!;
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j) hi = j;
    else if (k >= i) lo = i;
    else break;
  }
  return a[k]!;
}

/** The block levels of flattenSignificance with their interpolation weights (D units, before `inv`). */
export interface FlattenGrid {
  nx: number;
  ny: number;
  level: Float32Array;
  /** Per column / row: lower block-centre index and the weight of the next. */
  colLo: Int32Array;
  colT: Float32Array;
  rowLo: Int32Array;
  rowT: Float32Array;
  /** Rescale of the flattened D (1 unless the image is resampled). */
  inv: number;
  /** Lower bound of the level per band between block-centre rows (rowLo) and segment of the significance blocks. */
  minLevel: Float32Array;
}

/** The levels of row y interpolated at every block column (out[i]). */
export function rowLevels(f: FlattenGrid, y: number, out: Float64Array): void {
  const j = f.rowLo[y]!;
  const t = f.rowT[y]!;
  const j1 = Math.min(f.ny - 1, j + 1);
  for (let i = 0; i < f.nx; i++) {
    const a = f.level[j * f.nx + i]!;
    out[i] = a + (f.level[j1 * f.nx + i]! - a) * t;
  }
}

/** The level at column x of a row whose block-column levels are `row`. */
export function levelInRow(f: FlattenGrid, row: Float64Array, x: number): number {
  const i = f.colLo[x]!;
  const a = row[i]!;
  return f.nx === 1 ? a : a + (row[i + 1]! - a) * f.colT[x]!;
}

/**
 * The significance image as its readers see it: D, minus the flattening's level at the point and
 * times its rescale when there is a flattening (bilinear samples take the level at the nearest
 * pixel: it varies over tens of pixels).
 */
export class Significance {
  constructor(
    readonly D: Float32Array,
    readonly w: number,
    readonly h: number,
    readonly flat: FlattenGrid | null,
  ) {}

  /** Flattening level (D units, before the rescale) at pixel (x, y), clamped into the image; 0 without one. */
  level(x: number, y: number): number {
    const f = this.flat;
    if (!f) return 0;
    const ix = x < 0 ? 0 : x >= this.w ? this.w - 1 : x;
    const iy = y < 0 ? 0 : y >= this.h ? this.h - 1 : y;
    const i = f.colLo[ix]!;
    const tx = f.colT[ix]!;
    const j = f.rowLo[iy]!;
    const ty = f.rowT[iy]!;
    const i1 = Math.min(f.nx - 1, i + 1);
    const j1 = Math.min(f.ny - 1, j + 1);
    const L = f.level;
    const a = L[j * f.nx + i]! + (L[j * f.nx + i1]! - L[j * f.nx + i]!) * tx;
    const b = L[j1 * f.nx + i]! + (L[j1 * f.nx + i1]! - L[j1 * f.nx + i]!) * tx;
    return a + (b - a) * ty;
  }

  /** Flattened D at (x, y), bilinear. */
  at(x: number, y: number): number {
    const v = sampleD(this.D, this.w, this.h, x, y);
    const f = this.flat;
    return f ? (v - this.level(Math.round(x), Math.round(y))) * f.inv : v;
  }
}

/** Distance (detection-image px) of the point pairs whose D differences measure D's spread. */
const SPREAD_LAG = 8;

/** Per position along an axis cut at `edges` into n blocks: lower block-centre index and weight of the next. */
function axisWeights(edges: Int32Array, n: number, size: number): [Int32Array, Float32Array] {
  const lo = new Int32Array(size);
  const t = new Float32Array(size);
  if (n === 1) return [lo, t];
  const c = (i: number) => (edges[i]! + edges[i + 1]! - 1) / 2;
  for (let p = 0, i = 0; p < size; p++) {
    while (i < n - 2 && p > c(i + 1)) i++;
    lo[p] = i;
    t[p] = p <= c(i) ? 0 : p >= c(i + 1) ? 1 : (p - c(i)) / (c(i + 1) - c(i));
  }
  return [lo, t];
}


/** Maximum of D per row and column block: row y's block s spans x in [start[s], start[s+1]). */
export interface SignificanceBlocks {
  start: Int32Array;
  count: number;
  max: Float32Array;
}

/** Bilinear sample of D. */
export function sampleD(D: Float32Array, w: number, h: number, x: number, y: number): number {
  const x0 = Math.max(0, Math.min(w - 2, Math.floor(x)));
  const y0 = Math.max(0, Math.min(h - 2, Math.floor(y)));
  const fx = x - x0;
  const fy = y - y0;
  const o = y0 * w + x0;
  const a = D[o]!;
  const b = D[o + 1]!;
  const c = D[o + w]!;
  const d = D[o + w + 1]!;
  return (a + (b - a) * fx) * (1 - fy) + (c + (d - c) * fx) * fy;
}

