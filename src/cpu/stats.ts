// TypeScript reference for shaders/stats/*: NaN-aware statistics of an f32 image with the
// kernels' exact contract, fast enough to be the CPU fallback.
// Contract (whole image, each Bayer phase, or each T x T tile):
//   finite samples only (NaN and ±Inf are skipped); count, min, max exact; mean = sum / count;
//   median = mean of the lower and upper middle order statistics (exact, not binned);
//   MAD = the same of the deviations d = fround(|x − c|) with c = fround(median) (one f32
//   rounding, as the kernels compute it); sigma = 1.482602… · MAD.
// Against the exact selection reference (src/algorithms/robust-stats.ts `planeStats`): count,
// min, max and median are identical; the mean differs only in summation order; sigma is
// identical when c equals the median (odd count or equal middles) and otherwise within
// 1.4826 · (ulp(median)/2 + 2 ulp(MAD)) (the f32 centre moves every deviation by ≤ ulp/2).
// Method: radix selection on order-preserving u32 keys of the f32 bits (negative x → ~bits,
// else bits | 2^31): a 65536-bin histogram of the top 16 key bits locates the bin of each
// middle rank, a second histogram of the low 16 bits inside that bin gives the exact key.
// Tiles use exact selection on a per-tile scratch copy (small sets; same results).
// Invariant: inputs are never modified; scratch is O(width) for whole/Bayer and O(T²) for tiles.

import { MAD_TO_SIGMA, selectInPlace, type PlaneStats } from '../algorithms/robust-stats.js';

export type StatsMode = 'whole' | 'bayer';

export interface StatsParams {
  width: number;
  height: number;
  /** 'whole': one result; 'bayer': four, for phase (y & 1) * 2 + (x & 1). */
  mode: StatsMode;
  /** Frame coordinates of sample (0, 0) (band start, CFA origin); only their parities matter. */
  x0?: number;
  y0?: number;
}

export interface TileStatsParams {
  width: number;
  height: number;
  /** Tile edge T in pixels (1..4096); edge tiles are clipped to the image. */
  tile: number;
}

/** Per-tile statistics in row-major tile order (index ty * tilesX + tx). */
export interface TileStats {
  tile: number;
  tilesX: number;
  tilesY: number;
  count: Float64Array;
  min: Float64Array;
  max: Float64Array;
  mean: Float64Array;
  median: Float64Array;
  sigma: Float64Array;
}

/** The raw order statistics the kernels produce, before the f64 finishing step. */
export interface RawStats {
  count: number;
  min: number;
  max: number;
  /** Sum of the finite samples (f64 here; f32 partials folded in f64 on the GPU path). */
  sum: number;
  medianLo: number;
  medianHi: number;
  madLo: number;
  madHi: number;
}

/** Record length of one tile in the kernels' output: count, min, max, sum, medLo, medHi, madLo, madHi. */
export const TILE_RECORD = 8;

export const EMPTY_STATS: PlaneStats = Object.freeze({ count: 0, min: NaN, max: NaN, mean: NaN, median: NaN, sigma: NaN });

/** Finishing step shared by every path: mean, median and sigma formed in f64. */
export function finishStats(r: RawStats): PlaneStats {
  if (r.count === 0) return { ...EMPTY_STATS };
  return {
    count: r.count,
    min: r.min,
    max: r.max,
    mean: r.sum / r.count,
    median: (r.medianLo + r.medianHi) / 2,
    sigma: MAD_TO_SIGMA * ((r.madLo + r.madHi) / 2),
  };
}

/** The f32 centre the deviations are taken from (both paths round the f64 median once). */
export function deviationCenter(medianLo: number, medianHi: number): number {
  return Math.fround((medianLo + medianHi) / 2);
}

const EXP_MASK = 0x7f800000;
const SIGN = 0x80000000;
const keyBuf = new Uint32Array(1);
const keyF32 = new Float32Array(keyBuf.buffer);

/** Order-preserving u32 key of an f32 bit pattern. */
export function orderKey(bits: number): number {
  return (bits ^ ((bits >> 31) | SIGN)) >>> 0;
}

/** The f32 value of an order key. */
export function keyValue(key: number): number {
  keyBuf[0] = key & SIGN ? key & 0x7fffffff : ~key;
  return keyF32[0]!;
}

/** Key of an f32 value (as held in a Float32Array). */
export function valueKey(v: number): number {
  keyF32[0] = v;
  return orderKey(keyBuf[0]!);
}

function checkDims(length: number, width: number, height: number): void {
  if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) throw new RangeError(`stats: bad size ${width}x${height}`);
  if (length < width * height) throw new RangeError(`stats: ${length} samples < ${width}x${height}`);
}

/**
 * A run of samples of one group: indices start, start + step, ... below end. The whole image
 * is one run; Bayer phases are two runs (step 2) per row. Each pass walks every run with a
 * tight monomorphic loop, which is what keeps the TypeScript path fast.
 */
interface Run {
  start: number;
  end: number;
  step: number;
  group: number;
}

function runsFor(params: StatsParams): { groups: number; runs: Run[] } {
  const { width, height } = params;
  if (params.mode === 'whole') return { groups: 1, runs: [{ start: 0, end: width * height, step: 1, group: 0 }] };
  const px = (params.x0 ?? 0) & 1;
  const py = (params.y0 ?? 0) & 1;
  const runs: Run[] = [];
  for (let y = 0; y < height; y++) {
    for (let c = 0; c < Math.min(2, width); c++) {
      runs.push({ start: y * width + c, end: (y + 1) * width, step: 2, group: (((y + py) & 1) << 1) | ((c + px) & 1) });
    }
  }
  return { groups: 4, runs };
}

/** Finds the bin of `rank` in hist[base .. base + bins): returns [bin, rank inside the bin]. */
function locate(hist: Uint32Array, base: number, bins: number, rank: number): [number, number] {
  let r = rank;
  for (let b = 0; b < bins; b++) {
    const c = hist[base + b]!;
    if (r < c) return [b, r];
    r -= c;
  }
  throw new Error('stats: rank beyond histogram (internal error)');
}

const BINS = 65536;

/** Pass 1 over a run: count, f64 sum, min/max keys into acc[4g..4g+3], top-16-bit histogram. */
function valuePass(bits: Uint32Array, data: Float32Array, r: Run, acc: Float64Array, hist: Uint32Array): void {
  const base = r.group * BINS;
  let n = 0;
  let sum = 0;
  let lo = acc[4 * r.group + 2]!;
  let hi = acc[4 * r.group + 3]!;
  for (let i = r.start; i < r.end; i += r.step) {
    const b = bits[i]!;
    if ((b & EXP_MASK) === EXP_MASK) continue;
    const k = (b ^ ((b >> 31) | SIGN)) >>> 0;
    n++;
    sum += data[i]!;
    if (k < lo) lo = k;
    if (k > hi) hi = k;
    hist[base + (k >>> 16)]!++;
  }
  acc[4 * r.group] = acc[4 * r.group]! + n;
  acc[4 * r.group + 1] = acc[4 * r.group + 1]! + sum;
  acc[4 * r.group + 2] = lo;
  acc[4 * r.group + 3] = hi;
}

/** Pass 2 over a run: low-16-bit histograms of keys whose top 16 bits are t0 (or else t1). */
function valuePass2(bits: Uint32Array, r: Run, t0: number, t1: number, hist2: Uint32Array): void {
  const base0 = r.group * 2 * BINS;
  const base1 = base0 + BINS;
  for (let i = r.start; i < r.end; i += r.step) {
    const b = bits[i]!;
    if ((b & EXP_MASK) === EXP_MASK) continue;
    const k = (b ^ ((b >> 31) | SIGN)) >>> 0;
    const t = k >>> 16;
    if (t === t0) hist2[base0 + (k & 0xffff)]!++;
    else if (t === t1) hist2[base1 + (k & 0xffff)]!++;
  }
}

const CHUNK = 4096;

/**
 * Deviation passes over a run, in chunks: d = fround(|x - c|) is written to a Float32Array so
 * its bits can be read (d >= 0, so key = bits | 2^31). Level 1 (t0 < 0) histograms the top 16
 * key bits; level 2 the low 16 bits of keys whose top bits are t0 (or else t1).
 */
function deviationPass(bits: Uint32Array, data: Float32Array, r: Run, c: number, scratch: Float32Array, scratchBits: Uint32Array, hist: Uint32Array, t0: number, t1: number): void {
  for (let s = r.start; s < r.end; s += CHUNK * r.step) {
    const e = Math.min(r.end, s + CHUNK * r.step);
    let m = 0;
    for (let i = s; i < e; i += r.step) {
      if ((bits[i]! & EXP_MASK) === EXP_MASK) continue;
      scratch[m++] = Math.abs(data[i]! - c);
    }
    if (t0 < 0) {
      const base = r.group * BINS;
      for (let j = 0; j < m; j++) hist[base + ((scratchBits[j]! >>> 16) | 0x8000)]!++;
    } else {
      const base0 = r.group * 2 * BINS;
      const base1 = base0 + BINS;
      for (let j = 0; j < m; j++) {
        const k = scratchBits[j]!;
        const t = (k >>> 16) | 0x8000;
        if (t === t0) hist[base0 + (k & 0xffff)]!++;
        else if (t === t1) hist[base1 + (k & 0xffff)]!++;
      }
    }
  }
}

/** Top bins (and the ranks left inside them) of the two middle ranks per group. */
function middleBins(groups: number, counts: number[], hist: Uint32Array): { top: [number, number][]; rest: [number, number][] } {
  const top: [number, number][] = [];
  const rest: [number, number][] = [];
  for (let g = 0; g < groups; g++) {
    const n = counts[g]!;
    if (n === 0) {
      top.push([-1, -1]);
      rest.push([0, 0]);
      continue;
    }
    const [b0, r0] = locate(hist, g * BINS, BINS, (n - 1) >>> 1);
    const [b1, r1] = locate(hist, g * BINS, BINS, n >>> 1);
    top.push([b0, b1]);
    rest.push([r0, r1]);
  }
  return { top, rest };
}

/** The two middle values per group from the level-2 histograms of their top bins. */
function middleValues(groups: number, top: [number, number][], rest: [number, number][], hist2: Uint32Array): { lo: number[]; hi: number[] } {
  const lo: number[] = [];
  const hi: number[] = [];
  for (let g = 0; g < groups; g++) {
    const [t0, t1] = top[g]!;
    if (t0 < 0) {
      lo.push(NaN);
      hi.push(NaN);
      continue;
    }
    const [l0] = locate(hist2, g * 2 * BINS, BINS, rest[g]![0]);
    const [l1] = locate(hist2, g * 2 * BINS + (t1 === t0 ? 0 : BINS), BINS, rest[g]![1]);
    lo.push(keyValue(((t0 << 16) | l0) >>> 0));
    hi.push(keyValue(((t1 << 16) | l1) >>> 0));
  }
  return { lo, hi };
}

/** Exact keys of the two middle ranks per group from a level-1 histogram and a level-2 pass. */
function resolveMiddles(groups: number, counts: number[], hist: Uint32Array, level2: (top: [number, number][], hist2: Uint32Array) => void): { lo: number[]; hi: number[] } {
  const { top, rest } = middleBins(groups, counts, hist);
  const hist2 = new Uint32Array(groups * 2 * BINS);
  level2(top, hist2);
  return middleValues(groups, top, rest, hist2);
}

/** resolveMiddles with an asynchronous level-2 pass into shared memory (worker pool). */
async function resolveMiddlesAsync(groups: number, counts: number[], hist: Uint32Array, level2: (top: [number, number][], hist2: Uint32Array) => Promise<void>): Promise<{ lo: number[]; hi: number[] }> {
  const { top, rest } = middleBins(groups, counts, hist);
  const hist2 = new Uint32Array(new SharedArrayBuffer(groups * 2 * BINS * 4));
  await level2(top, hist2);
  return middleValues(groups, top, rest, hist2);
}

/**
 * Statistics of a `width x height` f32 image (row-major, `data` may be longer): one result
 * for mode 'whole', four (Bayer phases (y & 1) * 2 + (x & 1)) for 'bayer'.
 */
export function imageStats(data: Float32Array, params: StatsParams): PlaneStats[] {
  const { G, runs, bits, acc, hist, counts, med } = valueStats(data, params);
  // Deviation keys from each group's f32 centre.
  const centers = med.lo.map((lo, g) => deviationCenter(lo, med.hi[g]!));
  const scratch = new Float32Array(CHUNK);
  const scratchBits = new Uint32Array(scratch.buffer);
  hist.fill(0);
  for (const r of runs) if (counts[r.group]) deviationPass(bits, data, r, centers[r.group]!, scratch, scratchBits, hist, -1, -1);
  const mad = resolveMiddles(G, counts, hist, (top, hist2) => {
    for (const r of runs) {
      const [t0, t1] = top[r.group]!;
      if (t0 >= 0) deviationPass(bits, data, r, centers[r.group]!, scratch, scratchBits, hist2, t0, t1);
    }
  });
  return counts.map((count, g) =>
    finishStats({
      count,
      min: count ? keyValue(acc[4 * g + 2]!) : NaN,
      max: count ? keyValue(acc[4 * g + 3]!) : NaN,
      sum: acc[4 * g + 1]!,
      medianLo: med.lo[g]!,
      medianHi: med.hi[g]!,
      madLo: mad.lo[g]!,
      madHi: mad.hi[g]!,
    }),
  );
}

/**
 * Medians only (the `median` of imageStats, bit for bit: the same two value passes, without the
 * two deviation passes), for callers that need a level and not a spread (calibration masters).
 */
export function imageMedians(data: Float32Array, params: StatsParams): number[] {
  const { counts, med } = valueStats(data, params);
  return counts.map((count, g) => (count === 0 ? NaN : (med.lo[g]! + med.hi[g]!) / 2));
}

/** The value passes shared by imageStats and imageMedians: counts, sums, extremes and medians per group. */
function valueStats(data: Float32Array, params: StatsParams) {
  const { width, height } = params;
  checkDims(data.length, width, height);
  const { groups: G, runs } = runsFor(params);
  const bits = new Uint32Array(data.buffer, data.byteOffset, width * height);
  // acc per group: count, sum, min key, max key.
  const acc = new Float64Array(4 * G);
  for (let g = 0; g < G; g++) acc[4 * g + 2] = 0xffffffff;
  const hist = new Uint32Array(G * BINS);
  for (const r of runs) valuePass(bits, data, r, acc, hist);
  const counts = Array.from({ length: G }, (_, g) => acc[4 * g]!);
  const med = resolveMiddles(G, counts, hist, (top, hist2) => {
    for (const r of runs) {
      const [t0, t1] = top[r.group]!;
      if (t0 >= 0) valuePass2(bits, r, t0, t1, hist2);
    }
  });
  return { G, runs, bits, acc, hist, counts, med };
}

/** Arguments of the pooled median passes (medianRowsPass); arrays in shared memory. */
export interface MedianPassArgs {
  data: Float32Array;
  width: number;
  height: number;
  mode: StatsMode;
  x0: number;
  y0: number;
  /** 1: top-16-bit histograms (G × BINS); 2: low-16-bit histograms of the two middle bins (G × 2 × BINS). */
  pass: 1 | 2;
  /** Pass 2: per group the top bins of the lower and upper middle rank (-1: group empty). */
  top: [number, number][];
  /** Shared histograms the chunk's own are added to (atomically). */
  hist: Uint32Array;
}

/**
 * One median pass over rows [start, end) (a worker-pool kernel): the same valuePass /
 * valuePass2 as imageMedians over the runs of those rows, into a local histogram that is then
 * added to the shared one. Counts add up the same in any split, so the medians are identical.
 */
export function medianRowsPass(a: MedianPassArgs, start: number, end: number): void {
  if (end <= start) return;
  const rows = end - start;
  const band = a.data.subarray(start * a.width, end * a.width);
  const bits = new Uint32Array(band.buffer, band.byteOffset, rows * a.width);
  const { groups, runs } = runsFor({ width: a.width, height: rows, mode: a.mode, x0: a.x0, y0: a.y0 + start });
  const local = new Uint32Array(a.hist.length);
  if (a.pass === 1) {
    const acc = new Float64Array(4 * groups);
    for (let g = 0; g < groups; g++) acc[4 * g + 2] = 0xffffffff;
    for (const r of runs) valuePass(bits, band, r, acc, local);
  } else {
    for (const r of runs) {
      const [t0, t1] = a.top[r.group]!;
      if (t0 >= 0) valuePass2(bits, r, t0, t1, local);
    }
  }
  const shared = a.hist.buffer instanceof SharedArrayBuffer;
  for (let i = 0; i < local.length; i++) {
    const c = local[i]!;
    if (c === 0) continue;
    if (shared) Atomics.add(a.hist, i, c);
    else a.hist[i]! += c;
  }
}

/** A pool that runs row-range kernels (src/cpu/worker-pool.ts WorkerPool, or a test double). */
export interface RowPool {
  run<A>(kernel: { module: string; name: string }, args: A, start: number, end: number, options?: { minChunk?: number; chunksPerWorker?: number }): Promise<void>;
}

const MEDIAN_KERNEL = { module: import.meta.url, name: 'medianRowsPass' };

/**
 * imageMedians on a worker pool (`data` in shared memory): both value passes split by rows
 * across the workers, the bins located here. Identical results; the caller's thread is free
 * while the workers count (the masters of CALIBRATION overlap it with reading the next set).
 */
export async function imageMediansPooled(pool: RowPool, data: Float32Array, params: StatsParams): Promise<number[]> {
  const { width, height } = params;
  checkDims(data.length, width, height);
  const G = params.mode === 'whole' ? 1 : 4;
  const base = { data, width, height, mode: params.mode, x0: params.x0 ?? 0, y0: params.y0 ?? 0 };
  const hist = new Uint32Array(new SharedArrayBuffer(G * BINS * 4));
  const opts = { minChunk: 64, chunksPerWorker: 1 };
  await pool.run(MEDIAN_KERNEL, { ...base, pass: 1, top: [], hist } satisfies MedianPassArgs, 0, height, opts);
  const counts = Array.from({ length: G }, (_, g) => {
    let n = 0;
    for (let b = g * BINS; b < (g + 1) * BINS; b++) n += hist[b]!;
    return n;
  });
  let top: [number, number][] = [];
  const med = await resolveMiddlesAsync(G, counts, hist, async (t, hist2) => {
    top = t;
    await pool.run(MEDIAN_KERNEL, { ...base, pass: 2, top, hist: hist2 } satisfies MedianPassArgs, 0, height, opts);
  });
  return counts.map((count, g) => (count === 0 ? NaN : (med.lo[g]! + med.hi[g]!) / 2));
}

/** Raw statistics of a finite-value scratch set (reorders it): exact middles, f32-centred MAD. */
export function rawStatsOfSet(values: Float32Array, sum: number, min: number, max: number): RawStats {
  const n = values.length;
  if (n === 0) return { count: 0, min: NaN, max: NaN, sum: 0, medianLo: NaN, medianHi: NaN, madLo: NaN, madHi: NaN };
  const middles = (a: Float32Array): [number, number] => {
    const upper = selectInPlace(a, n >>> 1);
    if (n % 2 === 1) return [upper, upper];
    let lower = -Infinity;
    for (let i = 0; i < n >>> 1; i++) if (a[i]! > lower) lower = a[i]!;
    return [lower, upper];
  };
  const [medianLo, medianHi] = middles(values);
  const c = deviationCenter(medianLo, medianHi);
  for (let i = 0; i < n; i++) values[i] = Math.abs(values[i]! - c);
  const [madLo, madHi] = middles(values);
  return { count: n, min, max, sum, medianLo, medianHi, madLo, madHi };
}

export function tileGrid(width: number, height: number, tile: number): { tilesX: number; tilesY: number } {
  if (!Number.isInteger(tile) || tile < 1 || tile > 4096) throw new RangeError(`stats: tile ${tile} must be an integer in 1..4096`);
  return { tilesX: Math.ceil(width / tile), tilesY: Math.ceil(height / tile) };
}

/** Allocates an empty per-tile result. */
export function newTileStats(tile: number, tilesX: number, tilesY: number): TileStats {
  const n = tilesX * tilesY;
  return {
    tile,
    tilesX,
    tilesY,
    count: new Float64Array(n),
    min: new Float64Array(n),
    max: new Float64Array(n),
    mean: new Float64Array(n),
    median: new Float64Array(n),
    sigma: new Float64Array(n),
  };
}

export function setTile(out: TileStats, i: number, s: PlaneStats): void {
  out.count[i] = s.count;
  out.min[i] = s.min;
  out.max[i] = s.max;
  out.mean[i] = s.mean;
  out.median[i] = s.median;
  out.sigma[i] = s.sigma;
}

/** Statistics of every T x T tile (edge tiles clipped), each exactly as imageStats of that tile alone. */
export function tileStats(data: Float32Array, params: TileStatsParams): TileStats {
  const { width, height, tile } = params;
  checkDims(data.length, width, height);
  const { tilesX, tilesY } = tileGrid(width, height, tile);
  const out = newTileStats(tile, tilesX, tilesY);
  const scratch = new Float32Array(Math.min(tile, width) * Math.min(tile, height));
  for (let ty = 0; ty < tilesY; ty++) {
    for (let tx = 0; tx < tilesX; tx++) {
      const x0 = tx * tile;
      const y0 = ty * tile;
      const x1 = Math.min(x0 + tile, width);
      const y1 = Math.min(y0 + tile, height);
      let n = 0;
      let sum = 0;
      let min = Infinity;
      let max = -Infinity;
      for (let y = y0; y < y1; y++) {
        const o = y * width;
        for (let x = x0; x < x1; x++) {
          const v = data[o + x]!;
          if (v - v !== 0) continue; // NaN or ±Inf
          scratch[n++] = v;
          sum += v;
          if (v < min) min = v;
          if (v > max) max = v;
        }
      }
      setTile(out, ty * tilesX + tx, finishStats(rawStatsOfSet(scratch.subarray(0, n), sum, min, max)));
    }
  }
  return out;
}
