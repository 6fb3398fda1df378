// Star-based registration of one frame onto the reference: triangle matching with voting
// (match.ts) → RANSAC on the candidate pairs (ransac.ts) → re-matching of ALL stars under the
// transform → weighted least squares with iterative outlier clipping. The last two steps are
// what brings the error down to ~0.01 px: the brightest 40 stars (60 in a second attempt
// when the first finds no match) find the transform, the hundreds of fainter ones pin it
// down. Typical cost: 10–20 ms for two lists of 500–1500 stars on the 2-core machine.
//
// Output: a 2×3 matrix mapping FRAME pixel coordinates to REFERENCE pixel coordinates
// (affine.ts has the convention), or a typed failure. Never throws for a bad frame.
//
// Invariants:
// - Deterministic (seeded RANSAC, stable orderings): same inputs → same bits.
// - Model: affine when at least `affineMinMatches` stars pair up and they are spread in 2D,
//   otherwise a similarity (rotation + uniform scale + shift, mirrored when the matcher found a
//   reflection).
// - Weights: inverse variance of the pair's centroid errors, from each star's `sigma` when all
//   stars of both lists carry one, else from flux (σ² ∝ flux^−1.5 relative to the list's
//   median flux, with a floor so a few bright, possibly saturated stars cannot dominate).
// - A result is accepted only when enough stars pair up: at least `minMatches`, and at least
//   `minMatchFraction` of the stars that the transform puts inside both frames' star areas —
//   which rejects chance alignments of unrelated fields.

import { decomposeAffine, determinant, fitAffine, fitSimilarity, invertAffine, makePointPairs, rmsResidual, spreadRatio, type Affine, type PointPairs } from './affine.js';
import { matchStars, type MatchOptions, type StarPoint } from './match.js';
import { ransac, type TransformModel } from './ransac.js';

export type { StarPoint } from './match.js';
export type { Affine } from './affine.js';

export interface RegistrationOptions extends MatchOptions {
  /** 'auto' (default): affine when enough matches, else similarity. */
  model?: 'auto' | TransformModel;
  /** Fewest paired stars for an affine fit under 'auto'. Default 6. */
  affineMinMatches?: number;
  /** RANSAC inlier threshold on the candidate pairs, pixels. Default 2. */
  ransacThresholdPx?: number;
  /** Radius for pairing all stars under the transform, pixels. Default 2. */
  matchRadiusPx?: number;
  /** Outlier clipping: residual distance > clipSigma × the robust RMS distance. Default 3. */
  clipSigma?: number;
  /** Fewest stars in each list. Default 6. */
  minStars?: number;
  /** Fewest paired stars in the final fit. Default 4. */
  minMatches?: number;
  /** Fewest paired stars as a fraction of the stars expected in the overlap. Default 0.1. */
  minMatchFraction?: number;
  /** Largest accepted RMS residual of the final fit, pixels. Default 1. */
  maxResidualPx?: number;
  /** 'flux' (default) or 'uniform' weights in the final fit. */
  weighting?: 'flux' | 'uniform';
  /** RANSAC seed. Default 1. */
  seed?: number;
}

export type RegistrationFailureCode = 'too_few_stars' | 'no_match' | 'degenerate' | 'residual_too_large';

export interface RegistrationFailure {
  ok: false;
  code: RegistrationFailureCode;
  detail: string;
}

export interface RegistrationSuccess {
  ok: true;
  /** Frame pixel → reference pixel. */
  matrix: Affine;
  model: TransformModel;
  mirrored: boolean;
  /** Stars paired under the final transform (within matchRadiusPx). */
  matched: number;
  /** Pairs kept after outlier clipping, used by the final fit. */
  inliers: number;
  /** Unweighted RMS residual distance of the inliers, pixels. */
  residual_rms_px: number;
  /** For reports: from decomposeAffine(matrix). */
  rotation_deg: number;
  scale: number;
  /** Candidate pairs from triangle voting, and how many RANSAC kept. */
  candidates: number;
  ransac_inliers: number;
}

export type RegistrationResult = RegistrationSuccess | RegistrationFailure;

interface Resolved {
  model: 'auto' | TransformModel;
  affineMinMatches: number;
  ransacThresholdPx: number;
  matchRadiusPx: number;
  clipSigma: number;
  minStars: number;
  minMatches: number;
  minMatchFraction: number;
  maxResidualPx: number;
  weighting: 'flux' | 'uniform';
  seed: number;
}

/**
 * Flux model of a centroid's variance, relative to a median-flux star of the same list:
 * (flux / median)^−VARIANCE_POWER + VARIANCE_FLOOR. Shot-noise-limited centroids have
 * power 1, sky-limited ones 2; 1.5 did best on detections from the fixtures (mono and OSC)
 * and costs nothing on pure shot noise. The floor (5 % of a median star's variance) stands
 * for the errors that do not shrink with flux (pixel phase, PSF asymmetry, saturation).
 */
const VARIANCE_POWER = 1.5;
const VARIANCE_FLOOR = 0.05;
/** Collinearity limit of a whole star list (λmin/λmax of its scatter). */
const COLLINEAR_SPREAD = 1e-6;
/** Below this spread of the paired stars an affine fit is not trusted (similarity instead). */
const AFFINE_MIN_SPREAD = 1e-3;

/** Finite stars of a list, as parallel arrays plus relative variances. */
interface StarArrays {
  n: number;
  /** Index into the caller's list. */
  index: Int32Array;
  x: Float64Array;
  y: Float64Array;
  /** Relative centroid variance (flux model) or absolute σ² when every star has a sigma. */
  variance: Float64Array;
  hasSigma: boolean;
}

/** Whether every finite star of the list carries a usable `sigma`. */
function allHaveSigma(stars: readonly StarPoint[]): boolean {
  let any = false;
  for (const s of stars) {
    if (!(Number.isFinite(s.x) && Number.isFinite(s.y))) continue;
    if (!(typeof s.sigma === 'number' && Number.isFinite(s.sigma) && s.sigma > 0)) return false;
    any = true;
  }
  return any;
}

function toArrays(stars: readonly StarPoint[], useSigma: boolean): StarArrays {
  const keep: number[] = [];
  for (let i = 0; i < stars.length; i++) {
    const s = stars[i]!;
    if (Number.isFinite(s.x) && Number.isFinite(s.y)) keep.push(i);
  }
  const n = keep.length;
  const out: StarArrays = { n, index: Int32Array.from(keep), x: new Float64Array(n), y: new Float64Array(n), variance: new Float64Array(n), hasSigma: useSigma };
  const fluxes: number[] = [];
  for (let k = 0; k < n; k++) {
    const s = stars[keep[k]!]!;
    out.x[k] = s.x;
    out.y[k] = s.y;
    if (Number.isFinite(s.flux) && s.flux > 0) fluxes.push(s.flux);
  }
  fluxes.sort((a, b) => a - b);
  const median = fluxes.length ? fluxes[fluxes.length >> 1]! : 1;
  for (let k = 0; k < n; k++) {
    const s = stars[keep[k]!]!;
    if (out.hasSigma) {
      out.variance[k] = s.sigma! * s.sigma!;
    } else {
      const rel = Number.isFinite(s.flux) && s.flux > 0 ? s.flux / median : 1e-3;
      out.variance[k] = Math.max(rel, 1e-3) ** -VARIANCE_POWER + VARIANCE_FLOOR;
    }
  }
  return out;
}

function listSpread(s: StarArrays): number {
  const p: PointPairs = { n: s.n, x: s.x, y: s.y, u: s.x, v: s.y, w: new Float64Array(s.n).fill(1) };
  return spreadRatio(p);
}

/** Uniform grid over the reference stars for radius queries. */
class StarGrid {
  readonly cell: number;
  readonly x0: number;
  readonly y0: number;
  readonly nx: number;
  readonly ny: number;
  readonly head: Int32Array;
  readonly next: Int32Array;

  constructor(
    readonly xs: Float64Array,
    readonly ys: Float64Array,
    n: number,
    cell: number,
  ) {
    let minX = Infinity;
    let minY = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    for (let i = 0; i < n; i++) {
      minX = Math.min(minX, xs[i]!);
      maxX = Math.max(maxX, xs[i]!);
      minY = Math.min(minY, ys[i]!);
      maxY = Math.max(maxY, ys[i]!);
    }
    // About one star per cell (a grid of query-radius cells over a 2048 px frame was 350 k
    // cells to clear per frame for 1500 stars; answers do not depend on the cell size, ties go
    // to the lowest index), at most 16 radii wide for clustered lists, and the cell count
    // capped for sparse lists spread over a huge area.
    const span = Math.max(maxX - minX, maxY - minY, 1);
    const perStar = Math.sqrt((Math.max(maxX - minX, 1) * Math.max(maxY - minY, 1)) / Math.max(n, 1));
    this.cell = Math.max(cell, Math.min(perStar, 16 * cell), span / 1024);
    this.x0 = minX;
    this.y0 = minY;
    this.nx = Math.floor((maxX - minX) / this.cell) + 1;
    this.ny = Math.floor((maxY - minY) / this.cell) + 1;
    this.head = new Int32Array(this.nx * this.ny).fill(-1);
    this.next = new Int32Array(n);
    // Insert in reverse so each cell lists stars in ascending index order.
    for (let i = n - 1; i >= 0; i--) {
      const c = Math.floor((ys[i]! - minY) / this.cell) * this.nx + Math.floor((xs[i]! - minX) / this.cell);
      this.next[i] = this.head[c]!;
      this.head[c] = i;
    }
  }

  /** Nearest star within `radius` of (x, y), or −1. */
  nearest(x: number, y: number, radius: number): number {
    const r2max = radius * radius;
    const cx0 = Math.max(0, Math.floor((x - radius - this.x0) / this.cell));
    const cx1 = Math.min(this.nx - 1, Math.floor((x + radius - this.x0) / this.cell));
    const cy0 = Math.max(0, Math.floor((y - radius - this.y0) / this.cell));
    const cy1 = Math.min(this.ny - 1, Math.floor((y + radius - this.y0) / this.cell));
    let best = -1;
    let bestD = r2max;
    for (let cy = cy0; cy <= cy1; cy++) {
      for (let cx = cx0; cx <= cx1; cx++) {
        for (let i = this.head[cy * this.nx + cx]!; i >= 0; i = this.next[i]!) {
          const d = (this.xs[i]! - x) ** 2 + (this.ys[i]! - y) ** 2;
          if (d <= bestD) {
            if (d === bestD && best >= 0 && i > best) continue;
            bestD = d;
            best = i;
          }
        }
      }
    }
    return best;
  }
}

/**
 * Pairs every frame star with the nearest reference star within `radius` under `m`; each
 * reference star keeps only its closest frame star. Fills `pairs` (frame → reference).
 */
function pairAll(m: Affine, ref: StarArrays, frame: StarArrays, grid: StarGrid, radius: number, pairs: PointPairs, refOf: Int32Array, frameOf: Int32Array): number {
  const [[a, b, c], [d, e, f]] = m;
  const owner = new Int32Array(ref.n).fill(-1);
  const ownerD = new Float64Array(ref.n);
  for (let j = 0; j < frame.n; j++) {
    const u = a * frame.x[j]! + b * frame.y[j]! + c;
    const v = d * frame.x[j]! + e * frame.y[j]! + f;
    const r = grid.nearest(u, v, radius);
    if (r < 0) continue;
    const dist = (ref.x[r]! - u) ** 2 + (ref.y[r]! - v) ** 2;
    const o = owner[r]!;
    if (o < 0 || dist < ownerD[r]!) {
      owner[r] = j;
      ownerD[r] = dist;
    }
  }
  let n = 0;
  for (let r = 0; r < ref.n; r++) {
    const j = owner[r]!;
    if (j < 0) continue;
    pairs.x[n] = frame.x[j]!;
    pairs.y[n] = frame.y[j]!;
    pairs.u[n] = ref.x[r]!;
    pairs.v[n] = ref.y[r]!;
    refOf[n] = r;
    frameOf[n] = j;
    n++;
  }
  pairs.n = n;
  return n;
}

function setWeights(pairs: PointPairs, ref: StarArrays, frame: StarArrays, refOf: Int32Array, frameOf: Int32Array, weighting: 'flux' | 'uniform'): void {
  for (let k = 0; k < pairs.n; k++) {
    pairs.w[k] = weighting === 'uniform' ? 1 : 1 / (ref.variance[refOf[k]!]! + frame.variance[frameOf[k]!]!);
  }
}

/** χ²₂ median: for 2D Gaussian residuals, median(|r|²) = 2 ln 2 · σ² per axis. */
const CHI2_2_MEDIAN = 2 * Math.LN2;

interface ClippedFit {
  matrix: Affine;
  inliers: Int32Array;
  count: number;
}

/**
 * Weighted fit with iterative clipping: residuals normalised by their weights, robust σ from
 * their median, pairs beyond clipSigma × the RMS distance dropped, until nothing changes.
 */
function clippedFit(pairs: PointPairs, model: TransformModel, mirrored: boolean, clipSigma: number, minCount: number): ClippedFit | null {
  const fit = (subset: Int32Array, len: number) => (model === 'affine' ? fitAffine(pairs, subset, len) : fitSimilarity(pairs, mirrored, subset, len));
  let subset = new Int32Array(pairs.n);
  for (let i = 0; i < pairs.n; i++) subset[i] = i;
  let len = pairs.n;
  let matrix = fit(subset, len);
  if (!matrix) return null;
  const z = new Float64Array(pairs.n);
  const scratch = new Float64Array(pairs.n);
  for (let iter = 0; iter < 10; iter++) {
    const [[a, b, c], [d, e, f]] = matrix;
    let wMean = 0;
    for (let k = 0; k < len; k++) wMean += pairs.w[subset[k]!]!;
    wMean /= len;
    for (let i = 0; i < pairs.n; i++) {
      const du = a * pairs.x[i]! + b * pairs.y[i]! + c - pairs.u[i]!;
      const dv = d * pairs.x[i]! + e * pairs.y[i]! + f - pairs.v[i]!;
      z[i] = ((du * du + dv * dv) * pairs.w[i]!) / wMean;
    }
    for (let k = 0; k < len; k++) scratch[k] = z[subset[k]!]!;
    const sorted = scratch.subarray(0, len).sort();
    const sigma2 = Math.max(sorted[len >> 1]! / CHI2_2_MEDIAN, 1e-12);
    // |r| > clipSigma · (RMS distance = σ√2)  ⇔  z > 2 · clipSigma² · σ².
    const limit = 2 * clipSigma * clipSigma * sigma2;
    const next = new Int32Array(pairs.n);
    let nLen = 0;
    for (let i = 0; i < pairs.n; i++) if (z[i]! <= limit) next[nLen++] = i;
    if (nLen < minCount) break;
    const same = nLen === len && next.subarray(0, nLen).every((v, k) => v === subset[k]);
    if (same) break;
    const refit = fit(next, nLen);
    if (!refit) break;
    subset = next;
    len = nLen;
    matrix = refit;
  }
  return { matrix, inliers: subset.slice(0, len), count: len };
}

/** How many stars of each list the transform puts inside the other list's star area. */
function expectedOverlap(m: Affine, ref: StarArrays, frame: StarArrays): number {
  const box = (s: StarArrays) => {
    let x0 = Infinity;
    let y0 = Infinity;
    let x1 = -Infinity;
    let y1 = -Infinity;
    for (let i = 0; i < s.n; i++) {
      x0 = Math.min(x0, s.x[i]!);
      x1 = Math.max(x1, s.x[i]!);
      y0 = Math.min(y0, s.y[i]!);
      y1 = Math.max(y1, s.y[i]!);
    }
    return [x0, y0, x1, y1] as const;
  };
  const inside = (m2: Affine, from: StarArrays, to: StarArrays) => {
    const [x0, y0, x1, y1] = box(to);
    let k = 0;
    for (let i = 0; i < from.n; i++) {
      const u = m2[0][0] * from.x[i]! + m2[0][1] * from.y[i]! + m2[0][2];
      const v = m2[1][0] * from.x[i]! + m2[1][1] * from.y[i]! + m2[1][2];
      if (u >= x0 && u <= x1 && v >= y0 && v <= y1) k++;
    }
    return k;
  };
  const inv = invertAffine(m);
  const a = inside(m, frame, ref);
  const b = inv ? inside(inv, ref, frame) : ref.n;
  return Math.min(a, b);
}

function resolve(o: RegistrationOptions): Resolved {
  return {
    model: o.model ?? 'auto',
    affineMinMatches: o.affineMinMatches ?? 6,
    ransacThresholdPx: o.ransacThresholdPx ?? 2,
    matchRadiusPx: o.matchRadiusPx ?? 2,
    clipSigma: o.clipSigma ?? 3,
    minStars: o.minStars ?? 6,
    minMatches: o.minMatches ?? 4,
    minMatchFraction: o.minMatchFraction ?? 0.1,
    maxResidualPx: o.maxResidualPx ?? 1,
    weighting: o.weighting ?? 'flux',
    seed: o.seed ?? 1,
  };
}

/**
 * Registers `frame` onto `reference`: the returned matrix maps frame pixel coordinates to
 * reference pixel coordinates.
 */
export function registerStars(reference: readonly StarPoint[], frame: readonly StarPoint[], options: RegistrationOptions = {}): RegistrationResult {
  const o = resolve(options);
  // σ-based weights only when both lists carry σ for every star (else the units would mix).
  const useSigma = allHaveSigma(reference) && allHaveSigma(frame);
  const ref = toArrays(reference, useSigma);
  const frm = toArrays(frame, useSigma);
  if (ref.n < o.minStars || frm.n < o.minStars) {
    return { ok: false, code: 'too_few_stars', detail: `${ref.n} reference and ${frm.n} frame stars; need at least ${o.minStars} in each` };
  }
  const spreadR = listSpread(ref);
  const spreadF = listSpread(frm);
  if (spreadR < COLLINEAR_SPREAD || spreadF < COLLINEAR_SPREAD) {
    return { ok: false, code: 'degenerate', detail: `stars lie on a line (spread ratio reference ${spreadR.toExponential(2)}, frame ${spreadF.toExponential(2)})` };
  }
  // When many stars are missing from either list the brightest N may share too few stars;
  // a second attempt with 1.5× as many triangle stars usually settles it (the number of
  // triangles grows with N³, so the small first attempt is the common case).
  const baseStars = options.maxStars ?? 40;
  const attempts = [baseStars];
  const more = Math.round(1.5 * baseStars);
  if (Math.max(ref.n, frm.n) > baseStars) attempts.push(more);
  let failure: RegistrationFailure | null = null;
  for (const maxStars of attempts) {
    const result = attempt(reference, frame, ref, frm, { ...options, maxStars }, o);
    if (result.ok) return result;
    // Only a failed match is worth retrying; a residual or geometry problem would repeat.
    failure = result;
    if (result.code !== 'no_match') break;
  }
  return failure!;
}

function attempt(reference: readonly StarPoint[], frame: readonly StarPoint[], ref: StarArrays, frm: StarArrays, matchOptions: MatchOptions, o: Resolved): RegistrationResult {
  const match = matchStars(reference, frame, matchOptions);
  if (!match.ok) return { ok: false, code: match.code, detail: match.detail };
  // Candidate pairs in the finite-star arrays' index space (matchStars returns caller indices).
  const refPos = new Int32Array(reference.length).fill(-1);
  for (let k = 0; k < ref.n; k++) refPos[ref.index[k]!] = k;
  const frmPos = new Int32Array(frame.length).fill(-1);
  for (let k = 0; k < frm.n; k++) frmPos[frm.index[k]!] = k;
  const cand = makePointPairs(match.count);
  for (let k = 0; k < match.count; k++) {
    const r = refPos[match.ref[k]!]!;
    const f = frmPos[match.frame[k]!]!;
    cand.x[k] = frm.x[f]!;
    cand.y[k] = frm.y[f]!;
    cand.u[k] = ref.x[r]!;
    cand.v[k] = ref.y[r]!;
  }
  const useAffine = o.model === 'affine' || (o.model === 'auto' && match.count >= o.affineMinMatches);
  let found = ransac(cand, { model: useAffine ? 'affine' : 'similarity', mirrored: match.mirrored, thresholdPx: o.ransacThresholdPx, seed: o.seed, minInliers: useAffine ? 4 : 3 });
  // A few candidates with an unlucky spread: the similarity needs fewer of them.
  if (!found && useAffine && o.model === 'auto') {
    found = ransac(cand, { model: 'similarity', mirrored: match.mirrored, thresholdPx: o.ransacThresholdPx, seed: o.seed, minInliers: 3 });
  }
  if (!found) {
    return { ok: false, code: 'no_match', detail: `${match.count} candidate pairs from ${match.triangle_votes} consistent triangles, but no transform explains ${useAffine ? 4 : 3} of them within ${o.ransacThresholdPx} px` };
  }

  // Pair all stars under the transform, fit with clipping, and once more with the refined one.
  const grid = new StarGrid(ref.x, ref.y, ref.n, Math.max(o.matchRadiusPx, 1));
  const cap = Math.min(ref.n, frm.n);
  const pairs = makePointPairs(cap);
  const refOf = new Int32Array(cap);
  const frameOf = new Int32Array(cap);
  let matrix = found.matrix;
  const mirrored = determinant(matrix) < 0;
  let fit: ClippedFit | null = null;
  let model: TransformModel = 'similarity';
  let matched = 0;
  for (let round = 0; round < 3; round++) {
    matched = pairAll(matrix, ref, frm, grid, o.matchRadiusPx, pairs, refOf, frameOf);
    if (matched < o.minMatches) break;
    setWeights(pairs, ref, frm, refOf, frameOf, o.weighting);
    model = o.model === 'similarity' ? 'similarity' : o.model === 'affine' || matched >= o.affineMinMatches ? 'affine' : 'similarity';
    if (model === 'affine' && o.model === 'auto' && spreadRatio(pairs) < AFFINE_MIN_SPREAD) model = 'similarity';
    const next = clippedFit(pairs, model, mirrored, o.clipSigma, Math.max(o.minMatches, model === 'affine' ? 3 : 2));
    if (!next) {
      return { ok: false, code: 'degenerate', detail: `the ${matched} paired stars do not determine ${model === 'affine' ? 'an affine transform' : 'a similarity'}` };
    }
    fit = next;
    matrix = next.matrix;
  }
  if (!fit || matched < o.minMatches) {
    return { ok: false, code: 'no_match', detail: `only ${matched} stars pair up within ${o.matchRadiusPx} px under the matched transform (need ${o.minMatches})` };
  }
  const expected = expectedOverlap(matrix, ref, frm);
  if (fit.count < o.minMatches || fit.count < o.minMatchFraction * expected) {
    return { ok: false, code: 'no_match', detail: `${fit.count} stars pair up of ${expected} expected in the overlap (need ${Math.max(o.minMatches, Math.ceil(o.minMatchFraction * expected))})` };
  }
  const rms = rmsResidual(matrix, pairs, fit.inliers);
  if (!(rms <= o.maxResidualPx)) {
    return { ok: false, code: 'residual_too_large', detail: `RMS residual ${rms.toFixed(3)} px > ${o.maxResidualPx} px over ${fit.count} stars` };
  }
  const parts = decomposeAffine(matrix);
  const [sMin, sMax] = matchOptions.scaleRange ?? [0.8, 1.25];
  if (!(parts.scale >= sMin && parts.scale <= sMax) || Math.abs(parts.shear) > 0.2 || Math.abs(Math.log(parts.scale_x / parts.scale_y)) > 0.2) {
    return { ok: false, code: 'degenerate', detail: `implausible transform: scale ${parts.scale.toFixed(4)}, axis ratio ${(parts.scale_x / parts.scale_y).toFixed(4)}, shear ${parts.shear.toFixed(4)}` };
  }
  return {
    ok: true,
    matrix,
    model,
    mirrored,
    matched,
    inliers: fit.count,
    residual_rms_px: rms,
    rotation_deg: parts.rotation_deg,
    scale: parts.scale,
    candidates: match.count,
    ransac_inliers: found.inliers.length,
  };
}
