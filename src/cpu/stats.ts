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

/** Rows of one Bayer group: the first row and the first column of that phase (step 2). */
interface Walk {
  groups: number;
  /** Column step (1 whole, 2 Bayer). */
  step: number;
  /** Group of (row parity p, first column c) for the frame offsets. */
  group(y: number, c: number): number;
  /** First columns to walk in a row. */
  starts: number[];
}

function walkFor(params: StatsParams): Walk {
  if (params.mode === 'whole') return { groups: 1, step: 1, group: () => 0, starts: [0] };
  const px = (params.x0 ?? 0) & 1;
  const py = (params.y0 ?? 0) & 1;
  return { groups: 4, step: 2, group: (y, c) => (((y + py) & 1) << 1) | ((c + px) & 1), starts: [0, 1] };
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

/**
 * Exact keys of the lower and upper middle ranks per group, by two 16-bit radix levels.
 * `keysOfRow(y, row)` fills `row` (Uint32Array, `width` long) with the keys of image row y and
 * returns it, with 0 marking a skipped (non-finite) sample: real keys of finite values are
 * never 0 (key 0 would be the bits of -NaN).
 */
function selectMiddles(walk: Walk, width: number, height: number, counts: number[], keysOfRow: (y: number) => Uint32Array): { lo: number[]; hi: number[] } {
  const G = walk.groups;
  const BINS = 65536;
  const hist = new Uint32Array(G * BINS);
  for (let y = 0; y < height; y++) {
    const keys = keysOfRow(y);
    for (const c of walk.starts) {
      const base = walk.group(y, c) * BINS;
      for (let x = c; x < width; x += walk.step) {
        const k = keys[x]!;
        if (k !== 0) hist[base + (k >>> 16)]!++;
      }
    }
  }
  const ranks: [number, number][] = counts.map((n) => [(n - 1) >>> 1, n >>> 1]);
  // Level 1: top 16 bits of each middle rank; two slots per group (merged when equal).
  const top: [number, number][] = [];
  const rest: [number, number][] = [];
  for (let g = 0; g < G; g++) {
    if (counts[g] === 0) {
      top.push([-1, -1]);
      rest.push([0, 0]);
      continue;
    }
    const [b0, r0] = locate(hist, g * BINS, BINS, ranks[g]![0]);
    const [b1, r1] = locate(hist, g * BINS, BINS, ranks[g]![1]);
    top.push([b0, b1]);
    rest.push([r0, r1]);
  }
  // Level 2: low 16 bits inside the chosen top bins.
  const hist2 = new Uint32Array(G * 2 * BINS);
  for (let y = 0; y < height; y++) {
    const keys = keysOfRow(y);
    for (const c of walk.starts) {
      const g = walk.group(y, c);
      const [t0, t1] = top[g]!;
      if (t0 < 0) continue;
      const base0 = g * 2 * BINS;
      const base1 = base0 + BINS;
      for (let x = c; x < width; x += walk.step) {
        const k = keys[x]!;
        if (k === 0) continue;
        const t = k >>> 16;
        if (t === t0) hist2[base0 + (k & 0xffff)]!++;
        else if (t === t1) hist2[base1 + (k & 0xffff)]!++;
      }
    }
  }
  const lo: number[] = [];
  const hi: number[] = [];
  for (let g = 0; g < G; g++) {
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

/**
 * Statistics of a `width x height` f32 image (row-major, `data` may be longer): one result
 * for mode 'whole', four (Bayer phases (y & 1) * 2 + (x & 1)) for 'bayer'.
 */
export function imageStats(data: Float32Array, params: StatsParams): PlaneStats[] {
  const { width, height } = params;
  checkDims(data.length, width, height);
  const walk = walkFor(params);
  const G = walk.groups;
  const bits = new Uint32Array(data.buffer, data.byteOffset, width * height);
  const counts = new Array<number>(G).fill(0);
  const sums = new Array<number>(G).fill(0);
  const kmin = new Array<number>(G).fill(0xffffffff);
  const kmax = new Array<number>(G).fill(0);
  const row = new Uint32Array(width);
  // Value keys, one row at a time; pass 1 of the first level also gathers count/min/max/sum.
  let first = true;
  const valueKeys = (y: number): Uint32Array => {
    const o = y * width;
    for (let x = 0; x < width; x++) {
      const b = bits[o + x]!;
      row[x] = (b & EXP_MASK) === EXP_MASK ? 0 : (b ^ ((b >> 31) | SIGN)) >>> 0;
    }
    if (first) {
      for (const c of walk.starts) {
        const g = walk.group(y, c);
        let n = 0;
        let s = 0;
        let lo = kmin[g]!;
        let hi = kmax[g]!;
        for (let x = c; x < width; x += walk.step) {
          const k = row[x]!;
          if (k === 0) continue;
          n++;
          s += data[o + x]!;
          if (k < lo) lo = k;
          if (k > hi) hi = k;
        }
        counts[g] = counts[g]! + n;
        sums[g] = sums[g]! + s;
        kmin[g] = lo;
        kmax[g] = hi;
      }
      if (y === height - 1) first = false;
    }
    return row;
  };
  const med = selectMiddles(walk, width, height, counts, valueKeys);
  // Deviation keys from each group's f32 centre; d >= 0 so key = bits | 2^31 (never 0).
  const centers = med.lo.map((lo, g) => deviationCenter(lo, med.hi[g]!));
  const dev = new Float32Array(width);
  const devBits = new Uint32Array(dev.buffer);
  const deviationKeys = (y: number): Uint32Array => {
    const o = y * width;
    for (const c of walk.starts) {
      const m = centers[walk.group(y, c)]!;
      for (let x = c; x < width; x += walk.step) dev[x] = Math.abs(data[o + x]! - m);
    }
    for (let x = 0; x < width; x++) {
      const b = bits[o + x]!;
      row[x] = (b & EXP_MASK) === EXP_MASK ? 0 : (devBits[x]! | SIGN) >>> 0;
    }
    return row;
  };
  const mad = selectMiddles(walk, width, height, counts, deviationKeys);
  return counts.map((count, g) =>
    finishStats({
      count,
      min: count ? keyValue(kmin[g]!) : NaN,
      max: count ? keyValue(kmax[g]!) : NaN,
      sum: sums[g]!,
      medianLo: med.lo[g]!,
      medianHi: med.hi[g]!,
      madLo: mad.lo[g]!,
      madHi: mad.hi[g]!,
    }),
  );
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
