// RANSAC for 2D transforms on candidate point pairs: repeatedly fits a minimal sample (3
// pairs for an affine, 2 for a similarity), counts the pairs it explains within a pixel
// threshold, keeps the best hypothesis and refits it on its inliers.
//
// Invariants:
// - Deterministic: the sampler is a seeded PRNG (mulberry32) — the same pairs and seed give
//   the same result on every run and machine.
// - Adaptive stopping: the iteration budget shrinks to log(1 − confidence) / log(1 − wᵐ) as
//   the best inlier fraction w grows, never beyond maxIterations.
// - Degenerate samples (three nearly collinear points) are skipped, not fitted.
// - Returns null (never throws) when no hypothesis reaches the minimal inlier count.

import { fitAffine, fitSimilarity, type Affine, type PointPairs } from './affine.js';

export type TransformModel = 'affine' | 'similarity';

export interface RansacOptions {
  model: TransformModel;
  /** Similarity only: fit with a reflection. */
  mirrored?: boolean;
  /** Inlier threshold on the residual distance, pixels. Default 1.5. */
  thresholdPx?: number;
  /** Default 2000. */
  maxIterations?: number;
  /** Stopping confidence of having drawn one all-inlier sample. Default 0.999. */
  confidence?: number;
  /** PRNG seed. Default 1. */
  seed?: number;
  /** A hypothesis needs this many inliers to count. Default: the sample size + 1. */
  minInliers?: number;
}

export interface RansacResult {
  matrix: Affine;
  /** Indices (into the pairs) of the inliers of the refitted transform. */
  inliers: Int32Array;
  iterations: number;
}

/** mulberry32: small, fast, deterministic 32-bit generator; uniform in [0, 1). */
export function mulberry32(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** Indices of the pairs within `threshold` of the transform; returns their count. */
function collectInliers(m: Affine, p: PointPairs, thr2: number, out: Int32Array): { count: number; cost: number } {
  const [[a, b, c], [d, e, f]] = m;
  let count = 0;
  let cost = 0;
  for (let i = 0; i < p.n; i++) {
    const x = p.x[i]!;
    const y = p.y[i]!;
    const du = a * x + b * y + c - p.u[i]!;
    const dv = d * x + e * y + f - p.v[i]!;
    const r2 = du * du + dv * dv;
    // MSAC-style cost: inliers by their residual, outliers by the threshold.
    if (r2 <= thr2) {
      out[count++] = i;
      cost += r2;
    } else {
      cost += thr2;
    }
  }
  return { count, cost };
}

export function ransac(p: PointPairs, options: RansacOptions): RansacResult | null {
  const sampleSize = options.model === 'affine' ? 3 : 2;
  if (p.n < sampleSize) return null;
  const thr = options.thresholdPx ?? 1.5;
  const thr2 = thr * thr;
  const maxIterations = options.maxIterations ?? 2000;
  const confidence = options.confidence ?? 0.999;
  const minInliers = options.minInliers ?? sampleSize + 1;
  const mirrored = options.mirrored ?? false;
  const random = mulberry32(options.seed ?? 1);
  const sample = new Int32Array(sampleSize);
  const scratch = new Int32Array(p.n);
  let bestInliers = new Int32Array(p.n);
  let bestCount = 0;
  let bestCost = Infinity;
  let budget = maxIterations;
  let it = 0;
  const fit = (subset: Int32Array, len: number): Affine | null =>
    options.model === 'affine' ? fitAffine(p, subset, len) : fitSimilarity(p, mirrored, subset, len);

  // With very few pairs, try every sample exhaustively instead of drawing.
  const exhaustive = sampleSize === 3 ? (p.n * (p.n - 1) * (p.n - 2)) / 6 <= maxIterations : (p.n * (p.n - 1)) / 2 <= maxIterations;
  const consider = (m: Affine | null) => {
    if (!m) return;
    const { count, cost } = collectInliers(m, p, thr2, scratch);
    if (count > bestCount || (count === bestCount && cost < bestCost)) {
      bestCount = count;
      bestCost = cost;
      bestInliers.set(scratch.subarray(0, count));
    }
  };
  if (exhaustive) {
    for (let i = 0; i < p.n; i++) {
      for (let j = i + 1; j < p.n; j++) {
        if (sampleSize === 2) {
          sample[0] = i;
          sample[1] = j;
          consider(fit(sample, 2));
          it++;
          continue;
        }
        for (let k = j + 1; k < p.n; k++) {
          if (!wellSpread(p, i, j, k)) continue;
          sample[0] = i;
          sample[1] = j;
          sample[2] = k;
          consider(fit(sample, 3));
          it++;
        }
      }
    }
  } else {
    while (it < budget) {
      it++;
      // Distinct random indices.
      for (let s = 0; s < sampleSize; s++) {
        let idx: number;
        do {
          idx = Math.floor(random() * p.n);
        } while (sample.subarray(0, s).includes(idx));
        sample[s] = idx;
      }
      if (sampleSize === 3 && !wellSpread(p, sample[0]!, sample[1]!, sample[2]!)) continue;
      const before = bestCount;
      consider(fit(sample, sampleSize));
      if (bestCount > before) {
        const w = bestCount / p.n;
        const needed = Math.log(1 - confidence) / Math.log(Math.max(1e-12, 1 - w ** sampleSize));
        budget = Math.min(maxIterations, Math.ceil(Number.isFinite(needed) ? needed : maxIterations));
      }
    }
  }
  if (bestCount < minInliers) return null;
  // Refit on the inliers, then take the inliers of the refit (one pass usually suffices).
  let matrix = fit(bestInliers, bestCount);
  if (!matrix) return null;
  for (let pass = 0; pass < 2; pass++) {
    const { count } = collectInliers(matrix, p, thr2, scratch);
    if (count < minInliers) break;
    const refit = fit(scratch, count);
    if (!refit) break;
    matrix = refit;
    bestInliers = scratch.slice(0, count);
    bestCount = count;
  }
  return { matrix, inliers: bestInliers.slice(0, bestCount), iterations: it };
}

/** False when the three source points are nearly collinear (their triangle is too flat). */
function wellSpread(p: PointPairs, i: number, j: number, k: number): boolean {
  const x0 = p.x[i]!;
  const y0 = p.y[i]!;
  const ax = p.x[j]! - x0;
  const ay = p.y[j]! - y0;
  const bx = p.x[k]! - x0;
  const by = p.y[k]! - y0;
  const cross = Math.abs(ax * by - ay * bx);
  const longest = Math.max(ax * ax + ay * ay, bx * bx + by * by, (bx - ax) ** 2 + (by - ay) ** 2);
  // Height over the longest side ≥ 5 % of its length.
  return cross >= 0.05 * longest;
}
