// Triangle-similarity star matching with transform voting (Valdes et al. 1995, as in Siril's
// global star alignment and astroalign): candidate star correspondences between a reference
// list and a frame list, without any prior knowledge of the transform — any rotation angle
// (meridian flips included), mirror images, scale changes of a few percent, and lists in which
// half or more of the stars have no partner.
//
// Method:
// 1. Take the N brightest stars of each list (by flux; the lists need not be sorted).
// 2. Build all their triangles (triangles.ts) and pair every frame triangle with every
//    reference triangle whose side ratios agree within `tolerance` (looked up in a grid over
//    the invariant plane; the tolerance is halved while the lookup work would exceed a fixed
//    budget, which bounds the time on pathological fields).
// 3. Each triangle pair implies a similarity: rotation, scale, handedness and a shift. True
//    pairs agree on one transform, chance pairs scatter, so a histogram over (rotation, log
//    scale, mirrored) peaks at the truth (a Hough transform; it is what makes the method
//    robust to many unmatched and spurious stars). When few stars are shared, chance pairs
//    can pile up as high elsewhere, so the 8 strongest blocks are each tested for a common
//    shift too (where each pair's similarity takes a fixed anchor point of the frame): the
//    block with the largest cluster of agreeing pairs wins, and only that cluster goes on.
// 4. The winning triangle pairs vote for their three vertex correspondences; a one-to-one
//    assignment by descending votes (≥ 10 % of the top vote) gives the candidate pairs.
//
// Invariants:
// - Deterministic: no randomness, stable orderings with index tie-breaks.
// - Failures are data: { ok: false, code, detail }, never exceptions.
// - The candidate pairs may still hold a few wrong ones; RANSAC (ransac.ts) removes them.

import { buildTriangles, indexTriangles, type TriangleIndex, type TriangleSet } from './triangles.js';

/** The minimal star record registration needs. */
export interface StarPoint {
  x: number;
  y: number;
  flux: number;
  /** Optional 1σ centroid uncertainty per axis in pixels (weights the final fit when given). */
  sigma?: number;
  /** Optional shape of the star where measured (NaN for saturated stars): FWHM (px), eccentricity, peak above background. */
  fwhm?: number;
  eccentricity?: number;
  peak?: number;
}

export interface MatchOptions {
  /** Brightest stars of each list used for triangles. Default 40. */
  maxStars?: number;
  /** Tolerance of the side-ratio invariants. Default 0.005. */
  tolerance?: number;
  /** Allowed frame → reference scale range. Default [0.8, 1.25]. */
  scaleRange?: [number, number];
  /** Consider mirror images (reflections). Default true. */
  allowMirror?: boolean;
  /** Shortest triangle side in pixels. Default 4. */
  minSide?: number;
}

export interface MatchPairs {
  ok: true;
  /** Candidate correspondences: indices into the reference and frame lists, best first. */
  ref: Int32Array;
  frame: Int32Array;
  votes: Int32Array;
  count: number;
  /** Similarity at the histogram peak (frame → reference). */
  mirrored: boolean;
  rotation_deg: number;
  scale: number;
  /** Triangle pairs consistent with the peak, and all triangle pairs with matching ratios. */
  triangle_votes: number;
  triangle_pairs: number;
  stars_used: [number, number];
}

export type MatchFailureCode = 'too_few_stars' | 'no_match';

export interface MatchFailure {
  ok: false;
  code: MatchFailureCode;
  detail: string;
}

/** Indices of the finite stars, brightest first (index tie-break). */
export function brightestFirst(stars: readonly StarPoint[]): Int32Array {
  const idx: number[] = [];
  for (let i = 0; i < stars.length; i++) {
    const s = stars[i]!;
    if (Number.isFinite(s.x) && Number.isFinite(s.y)) idx.push(i);
  }
  const flux = (i: number) => {
    const f = stars[i]!.flux;
    return Number.isFinite(f) ? f : -Infinity;
  };
  idx.sort((p, q) => flux(q) - flux(p) || p - q);
  return Int32Array.from(idx);
}

const TWO_PI = 2 * Math.PI;
/** Histogram bins: 1° in rotation, 0.01 in ln(scale). */
const ANGLE_BINS = 360;
const LOG_SCALE_BIN = 0.01;
/** Consistency window around a histogram block's centre. */
const ANGLE_WINDOW = (1.5 * Math.PI) / 180;
const LOG_SCALE_WINDOW = 0.015;
/** Histogram blocks tested for a common translation. */
const MAX_BLOCKS = 8;
/** Cell of the translation test, pixels (3×3 cells are searched). */
const TRANSLATION_CELL = 16;

/** Budget of reference triangles inspected per match (a few tens of ms). */
const MAX_INSPECTIONS = 3_000_000;
const MIN_TOLERANCE = 0.0005;

/** Reference triangles in the 3×3 grid cells around each frame triangle, summed. */
function inspectionCount(ft: TriangleSet, index: TriangleIndex): number {
  const { cell, nb, nc, start } = index;
  let work = 0;
  for (let t = 0; t < ft.count; t++) {
    const bi = Math.floor((ft.ba[t]! - 0.5) / cell);
    const ci = Math.floor(ft.ca[t]! / cell);
    for (let i = Math.max(0, bi - 1); i <= Math.min(nb - 1, bi + 1); i++) {
      const j0 = Math.max(0, ci - 1);
      const j1 = Math.min(nc - 1, ci + 1);
      if (j0 <= j1) work += start[i * nc + j1 + 1]! - start[i * nc + j0]!;
    }
  }
  return work;
}

/** Growable parallel arrays of triangle pairs. */
class PairList {
  n = 0;
  frameTri = new Int32Array(16384);
  refTri = new Int32Array(16384);
  theta = new Float64Array(16384);
  logScale = new Float64Array(16384);
  mirror = new Uint8Array(16384);

  push(ft: number, rt: number, theta: number, logScale: number, mirror: number): void {
    if (this.n === this.frameTri.length) {
      const grow = <T extends Int32Array | Float64Array | Uint8Array>(a: T): T => {
        const b = new (a.constructor as new (n: number) => T)(a.length * 2);
        b.set(a);
        return b;
      };
      this.frameTri = grow(this.frameTri);
      this.refTri = grow(this.refTri);
      this.theta = grow(this.theta);
      this.logScale = grow(this.logScale);
      this.mirror = grow(this.mirror);
    }
    const i = this.n++;
    this.frameTri[i] = ft;
    this.refTri[i] = rt;
    this.theta[i] = theta;
    this.logScale[i] = logScale;
    this.mirror[i] = mirror;
  }
}

function subsetCoords(stars: readonly StarPoint[], order: Int32Array, n: number): [Float64Array, Float64Array] {
  const xs = new Float64Array(n);
  const ys = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    const s = stars[order[i]!]!;
    xs[i] = s.x;
    ys[i] = s.y;
  }
  return [xs, ys];
}

/** Wraps an angle in (−4π, 4π) to [0, 2π) (branches, not the slow float `%`). */
function wrap(t: number): number {
  while (t < 0) t += TWO_PI;
  while (t >= TWO_PI) t -= TWO_PI;
  return t;
}

/** |a − b| on the circle, for angles in [0, 2π). */
function angleDistance(a: number, b: number): number {
  const d = Math.abs(a - b);
  return d > Math.PI ? TWO_PI - d : d;
}

/**
 * Candidate star correspondences between `reference` and `frame`. In stages, each its own
 * function (similarPairs, histogramBlocks, consistentPairs, assignVotes): a registration worker
 * runs this once per frame, and as one long function V8 re-optimised all of it after each
 * deoptimisation of any part (~50 ms per compile, ~11 times per worker and run).
 */
export function matchStars(reference: readonly StarPoint[], frame: readonly StarPoint[], options: MatchOptions = {}): MatchPairs | MatchFailure {
  const maxStars = Math.max(3, Math.floor(options.maxStars ?? 40));
  const tolerance = options.tolerance ?? 0.005;
  const [sMin, sMax] = options.scaleRange ?? [0.8, 1.25];
  const allowMirror = options.allowMirror ?? true;
  const refOrder = brightestFirst(reference);
  const frameOrder = brightestFirst(frame);
  const nR = Math.min(maxStars, refOrder.length);
  const nF = Math.min(maxStars, frameOrder.length);
  if (nR < 3 || nF < 3) {
    return { ok: false, code: 'too_few_stars', detail: `need ≥ 3 stars in each list for triangles (reference ${refOrder.length}, frame ${frameOrder.length})` };
  }
  const [rx, ry] = subsetCoords(reference, refOrder, nR);
  const [fx, fy] = subsetCoords(frame, frameOrder, nF);
  const triOptions = options.minSide !== undefined ? { minSide: options.minSide } : {};
  const rt: TriangleSet = buildTriangles(rx, ry, nR, triOptions);
  const ft: TriangleSet = buildTriangles(fx, fy, nF, triOptions);
  if (rt.count === 0 || ft.count === 0) {
    return { ok: false, code: 'no_match', detail: `no usable triangles (reference ${rt.count}, frame ${ft.count}): stars too close together or collinear` };
  }

  // 2. Triangle pairs with matching invariants and an admissible scale.
  const pairs = similarPairs(rt, ft, tolerance, sMin, sMax, allowMirror);
  if (pairs.n === 0) {
    return { ok: false, code: 'no_match', detail: `no triangle of the frame (${ft.count}) resembles one of the reference (${rt.count})` };
  }

  // 3. Hough histogram over (mirror, rotation, log scale). Its strongest blocks (3×3 bin
  //    sums) are the candidate transforms; chance pairs can still pile up in a block when few
  //    stars are shared, so each block is then tested for a common translation as well.
  const lnMin = Math.log(sMin);
  const hist = histogramBlocks(pairs, lnMin, Math.log(sMax));
  const best = consistentPairs(pairs, hist, lnMin, rt, ft, fx, fy, nF);
  if (best.members.length === 0) {
    return { ok: false, code: 'no_match', detail: `${pairs.n} similar triangle pairs but none consistent with one transform` };
  }
  const bestMembers = best.members;
  // The transform estimate: circular mean rotation and mean log scale of the consistent pairs.
  let sc = 0;
  let sn = 0;
  let sl = 0;
  for (const i of bestMembers) {
    sc += Math.cos(pairs.theta[i]!);
    sn += Math.sin(pairs.theta[i]!);
    sl += pairs.logScale[i]!;
  }
  const peakTheta = wrap(Math.atan2(sn, sc));
  const peakLs = sl / bestMembers.length;

  // 4. Votes of the consistent triangle pairs for their vertex correspondences.
  const out = assignVotes(pairs, bestMembers, rt, ft, nR, nF, refOrder, frameOrder);
  let rotation = (peakTheta * 180) / Math.PI;
  if (rotation > 180) rotation -= 360;
  return {
    ok: true,
    ref: Int32Array.from(out.ref),
    frame: Int32Array.from(out.frame),
    votes: Int32Array.from(out.votes),
    count: out.ref.length,
    mirrored: best.mirror === 1,
    rotation_deg: rotation,
    scale: Math.exp(peakLs),
    triangle_votes: bestMembers.length,
    triangle_pairs: pairs.n,
    stars_used: [nR, nF],
  };
}

/**
 * Frame/reference triangle pairs whose shape invariants agree within the tolerance and whose
 * size ratio is an admissible scale. The work is the number of reference triangles inspected
 * near each frame triangle. Star fields whose triangles crowd into one part of the invariant
 * plane (trailed or doubled stars, regular patterns) can make it explode, so the tolerance is
 * halved until the count — cheap to know from the grid — fits the budget.
 */
function similarPairs(rt: TriangleSet, ft: TriangleSet, tolerance: number, sMin: number, sMax: number, allowMirror: boolean): PairList {
  const pairs = new PairList();
  let tol = tolerance;
  let index = indexTriangles(rt, tol);
  for (;;) {
    const work = inspectionCount(ft, index);
    if (work <= MAX_INSPECTIONS || tol <= MIN_TOLERANCE) break;
    tol = Math.max(MIN_TOLERANCE, tol / 2);
    index = indexTriangles(rt, tol);
  }
  const { nb: nBa, nc: nCa, start, items } = index;
  for (let t = 0; t < ft.count; t++) {
    const ba = ft.ba[t]!;
    const ca = ft.ca[t]!;
    const aF = ft.a[t]!;
    const oF = ft.orient[t]!;
    const angF = ft.angle[t]!;
    const bi = Math.floor((ba - 0.5) / tol);
    const ci = Math.floor(ca / tol);
    for (let i = Math.max(0, bi - 1); i <= Math.min(nBa - 1, bi + 1); i++) {
      for (let j = Math.max(0, ci - 1); j <= Math.min(nCa - 1, ci + 1); j++) {
        const k = i * nCa + j;
        for (let q = start[k]!; q < start[k + 1]!; q++) {
          const r = items[q]!;
          if (Math.abs(rt.ba[r]! - ba) > tol || Math.abs(rt.ca[r]! - ca) > tol) continue;
          const aR = rt.a[r]!;
          if (aR < sMin * aF || aR > sMax * aF) continue;
          const ls = Math.log(aR / aF);
          const mirror = rt.orient[r]! !== oF ? 1 : 0;
          if (mirror && !allowMirror) continue;
          // Frame → reference rotation: plain, or after the reflection y → −y.
          const theta = mirror ? wrap(rt.angle[r]! + angF) : wrap(rt.angle[r]! - angF);
          pairs.push(t, r, theta, ls, mirror);
        }
      }
    }
  }
  return pairs;
}

/** The pairs' Hough histogram: pairs listed by bin, and the strongest blocks. */
interface PairHistogram {
  /** Log-scale bins. */
  nS: number;
  /** Pairs by bin: byBin[binStart[b] .. binStart[b + 1]) (ascending pair index within a bin). */
  binStart: Int32Array;
  byBin: Int32Array;
  /** Top blocks (3×3 bin sums), strongest first (lowest bin on ties), at least 3 bins apart. */
  blocks: number[];
}

function histogramBlocks(pairs: PairList, lnMin: number, lnMax: number): PairHistogram {
  const nS = Math.max(1, Math.ceil((lnMax - lnMin) / LOG_SCALE_BIN));
  const hist = new Int32Array(2 * ANGLE_BINS * nS);
  const binOfPair = new Int32Array(pairs.n);
  for (let i = 0; i < pairs.n; i++) {
    const angleBin = Math.min(ANGLE_BINS - 1, Math.floor((pairs.theta[i]! / TWO_PI) * ANGLE_BINS));
    const scaleBin = Math.min(nS - 1, Math.max(0, Math.floor((pairs.logScale[i]! - lnMin) / LOG_SCALE_BIN)));
    const bin = (pairs.mirror[i]! * ANGLE_BINS + angleBin) * nS + scaleBin;
    binOfPair[i] = bin;
    hist[bin]!++;
  }
  // Counting sort, so that a block visits only its neighbourhood's pairs.
  const binStart = new Int32Array(hist.length + 1);
  for (let b = 0; b < hist.length; b++) binStart[b + 1] = binStart[b]! + hist[b]!;
  const binFill = binStart.slice(0, hist.length);
  const byBin = new Int32Array(pairs.n);
  for (let i = 0; i < pairs.n; i++) byBin[binFill[binOfPair[i]!]!++] = i;
  const blockSum = new Int32Array(hist.length);
  for (let m = 0; m < 2; m++) {
    for (let a = 0; a < ANGLE_BINS; a++) {
      for (let s = 0; s < nS; s++) {
        if (hist[(m * ANGLE_BINS + a) * nS + s] === 0) continue;
        let sum = 0;
        for (let da = -1; da <= 1; da++) {
          const aa = (a + da + ANGLE_BINS) % ANGLE_BINS;
          for (let ds = -1; ds <= 1; ds++) {
            const ss = s + ds;
            if (ss >= 0 && ss < nS) sum += hist[(m * ANGLE_BINS + aa) * nS + ss]!;
          }
        }
        blockSum[(m * ANGLE_BINS + a) * nS + s] = sum;
      }
    }
  }
  // Repeated arg-max with suppression of the neighbourhood already taken.
  const blocks: number[] = [];
  while (blocks.length < MAX_BLOCKS) {
    let top = 0;
    let topBin = -1;
    for (let b = 0; b < blockSum.length; b++) {
      if (blockSum[b]! > top) {
        top = blockSum[b]!;
        topBin = b;
      }
    }
    if (topBin < 0) break;
    blocks.push(topBin);
    const m = Math.floor(topBin / (ANGLE_BINS * nS));
    const a = Math.floor(topBin / nS) % ANGLE_BINS;
    const s = topBin % nS;
    for (let da = -2; da <= 2; da++) {
      const aa = (a + da + ANGLE_BINS) % ANGLE_BINS;
      for (let ds = -2; ds <= 2; ds++) {
        if (s + ds >= 0 && s + ds < nS) blockSum[(m * ANGLE_BINS + aa) * nS + s + ds] = 0;
      }
    }
  }
  return { nS, binStart, byBin, blocks };
}

/** The translation cell key of pair i's anchor image. */
function cellKey(qx: Float64Array, qy: Float64Array, i: number): number {
  return Math.floor(qx[i]! / TRANSLATION_CELL) * 1e6 + Math.floor(qy[i]! / TRANSLATION_CELL);
}

/**
 * Of the histogram's blocks, the pairs that also agree on the translation: where each triangle
 * pair's own similarity takes a fixed anchor point of the frame (the centre of its star subset),
 * pairs of one true transform land within a few pixels; the block whose densest 3×3 cell
 * neighbourhood of anchor images holds the most pairs wins. Empty members: no block.
 */
function consistentPairs(pairs: PairList, hist: PairHistogram, lnMin: number, rt: TriangleSet, ft: TriangleSet, fx: Float64Array, fy: Float64Array, nF: number): { members: number[]; mirror: number } {
  const { nS, binStart, byBin } = hist;
  let ax0 = Infinity;
  let ax1 = -Infinity;
  let ay0 = Infinity;
  let ay1 = -Infinity;
  for (let i = 0; i < nF; i++) {
    ax0 = Math.min(ax0, fx[i]!);
    ax1 = Math.max(ax1, fx[i]!);
    ay0 = Math.min(ay0, fy[i]!);
    ay1 = Math.max(ay1, fy[i]!);
  }
  const anchorX = (ax0 + ax1) / 2;
  const anchorY = (ay0 + ay1) / 2;
  // Anchor images, computed only for the pairs inside a tested block.
  const qx = new Float64Array(pairs.n);
  const qy = new Float64Array(pairs.n);
  const members: number[] = [];
  let bestScore = 0;
  let bestMembers: number[] = [];
  let bestMirror = 0;
  for (const b of hist.blocks) {
    const m = Math.floor(b / (ANGLE_BINS * nS));
    const theta0 = ((Math.floor(b / nS) % ANGLE_BINS) + 0.5) / ANGLE_BINS * TWO_PI;
    const ls0 = lnMin + ((b % nS) + 0.5) * LOG_SCALE_BIN;
    members.length = 0;
    // The window (±1.5 bins in rotation and log scale around the block centre) lies within
    // the ±2 bins around the block's bin.
    const a0 = Math.floor(b / nS) % ANGLE_BINS;
    const s0 = b % nS;
    for (let da = -2; da <= 2; da++) {
      const aa = (a0 + da + ANGLE_BINS) % ANGLE_BINS;
      for (let ds = Math.max(-2, -s0); ds <= Math.min(2, nS - 1 - s0); ds++) {
        const bin = (m * ANGLE_BINS + aa) * nS + s0 + ds;
        for (let q = binStart[bin]!; q < binStart[bin + 1]!; q++) {
          const i = byBin[q]!;
          if (angleDistance(pairs.theta[i]!, theta0) > ANGLE_WINDOW) continue;
          if (Math.abs(pairs.logScale[i]! - ls0) > LOG_SCALE_WINDOW) continue;
          const t = pairs.frameTri[i]!;
          const r = pairs.refTri[i]!;
          const s = Math.exp(pairs.logScale[i]!);
          const c = s * Math.cos(pairs.theta[i]!);
          const n = s * Math.sin(pairs.theta[i]!);
          const dx = anchorX - ft.cx[t]!;
          const dy = pairs.mirror[i] ? ft.cy[t]! - anchorY : anchorY - ft.cy[t]!;
          qx[i] = rt.cx[r]! + c * dx - n * dy;
          qy[i] = rt.cy[r]! + n * dx + c * dy;
          members.push(i);
        }
      }
    }
    if (members.length <= bestScore) continue;
    const densest = densestCell(members, qx, qy);
    if (densest.count > bestScore) {
      const kx = Math.round(densest.key / 1e6);
      const ky = densest.key - kx * 1e6;
      bestScore = densest.count;
      bestMirror = m;
      bestMembers = [];
      for (const i of members) {
        const k = cellKey(qx, qy, i);
        const ix = Math.round(k / 1e6);
        if (Math.abs(ix - kx) <= 1 && Math.abs(k - ix * 1e6 - ky) <= 1) bestMembers.push(i);
      }
    }
  }
  return { members: bestMembers, mirror: bestMirror };
}

/** The TRANSLATION_CELL cell whose 3×3 neighbourhood holds the most anchor images (lowest key on ties), and that count. */
function densestCell(members: number[], qx: Float64Array, qy: Float64Array): { key: number; count: number } {
  const cells = new Map<number, number>();
  for (const i of members) {
    const k = cellKey(qx, qy, i);
    cells.set(k, (cells.get(k) ?? 0) + 1);
  }
  let top = -1;
  let topKey = 0;
  for (const i of members) {
    const k = cellKey(qx, qy, i);
    let sum = 0;
    for (let d = -1; d <= 1; d++) for (let e = -1; e <= 1; e++) sum += cells.get(k + d * 1e6 + e) ?? 0;
    if (sum > top || (sum === top && k < topKey)) {
      top = sum;
      topKey = k;
    }
  }
  return { key: topKey, count: top };
}

/**
 * Star correspondences from the consistent triangle pairs' votes, one-to-one by descending
 * votes. A true pair collects votes from most triangles through its star, a chance pair from a
 * handful: cells need ≥ 10 % of the top vote (and ≥ 2); single votes only if too few cells
 * qualify. Indices are the callers' (through the brightness orders).
 */
function assignVotes(pairs: PairList, members: number[], rt: TriangleSet, ft: TriangleSet, nR: number, nF: number, refOrder: Int32Array, frameOrder: Int32Array): { ref: number[]; frame: number[]; votes: number[] } {
  const votes = new Int32Array(nR * nF);
  for (const i of members) {
    const t = pairs.frameTri[i]!;
    const r = pairs.refTri[i]!;
    votes[rt.A[r]! * nF + ft.A[t]!]!++;
    votes[rt.B[r]! * nF + ft.B[t]!]!++;
    votes[rt.C[r]! * nF + ft.C[t]!]!++;
  }
  let maxVotes = 0;
  for (let c = 0; c < votes.length; c++) if (votes[c]! > maxVotes) maxVotes = votes[c]!;
  const minVotes = Math.max(2, Math.floor(0.1 * maxVotes));
  const cells: number[] = [];
  for (let c = 0; c < votes.length; c++) if (votes[c]! >= minVotes) cells.push(c);
  if (cells.length < 3) {
    cells.length = 0;
    for (let c = 0; c < votes.length; c++) if (votes[c]! >= 1) cells.push(c);
  }
  cells.sort((p, q) => votes[q]! - votes[p]! || p - q);
  const usedR = new Uint8Array(nR);
  const usedF = new Uint8Array(nF);
  const out = { ref: [] as number[], frame: [] as number[], votes: [] as number[] };
  for (const c of cells) {
    const r = Math.floor(c / nF);
    const f = c - r * nF;
    if (usedR[r] || usedF[f]) continue;
    usedR[r] = 1;
    usedF[f] = 1;
    out.ref.push(refOrder[r]!);
    out.frame.push(frameOrder[f]!);
    out.votes.push(votes[c]!);
  }
  return out;
}
