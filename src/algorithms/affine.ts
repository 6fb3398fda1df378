// 2×3 affine transforms of pixel coordinates for registration: apply, invert, compose,
// weighted least-squares fits (full affine, similarity, mirrored similarity), residuals,
// a frame-wide mapping-error measure and a decomposition for reports.
//
// Convention (the contract of the pipeline's registration.json): a matrix
// [[a, b, c], [d, e, f]] maps a pixel (x, y) of the FRAME to the REFERENCE pixel
// (a·x + b·y + c, d·x + e·y + f); coordinates are 0-based, x = column, y = row, (0, 0) the
// centre of the first stored pixel.
//
// Invariants:
// - Fits accumulate in f64 around the weighted centroids of both point sets, so the normal
//   equations stay well conditioned for coordinates in the thousands (no x² ~ 1e7 sums).
// - Fits never throw: a degenerate configuration (all points collinear, zero total weight,
//   fewer points than parameters) returns null.
// - No per-point allocation: point sets are structure-of-arrays of Float64Array, subsets are
//   index arrays.

export type Affine = [[number, number, number], [number, number, number]];

export const IDENTITY: Readonly<Affine> = Object.freeze([
  [1, 0, 0],
  [0, 1, 0],
]) as Readonly<Affine>;

export function identity(): Affine {
  return [
    [1, 0, 0],
    [0, 1, 0],
  ];
}

/** Pairs of points: source (x, y) in the frame, destination (u, v) in the reference, weight w. */
export interface PointPairs {
  n: number;
  x: Float64Array;
  y: Float64Array;
  u: Float64Array;
  v: Float64Array;
  /** Relative weights (inverse variances); all 1 when uniform. */
  w: Float64Array;
}

export function makePointPairs(n: number): PointPairs {
  return { n, x: new Float64Array(n), y: new Float64Array(n), u: new Float64Array(n), v: new Float64Array(n), w: new Float64Array(n).fill(1) };
}

export function applyAffine(m: Readonly<Affine>, x: number, y: number): [number, number] {
  return [m[0][0] * x + m[0][1] * y + m[0][2], m[1][0] * x + m[1][1] * y + m[1][2]];
}

/** Determinant of the linear part; negative for a mirror image. */
export function determinant(m: Readonly<Affine>): number {
  return m[0][0] * m[1][1] - m[0][1] * m[1][0];
}

/** Inverse transform, or null when the linear part is singular. */
export function invertAffine(m: Readonly<Affine>): Affine | null {
  const [[a, b, c], [d, e, f]] = m;
  const det = a * e - b * d;
  const scale = Math.max(Math.abs(a), Math.abs(b), Math.abs(d), Math.abs(e));
  if (!Number.isFinite(det) || Math.abs(det) <= 1e-14 * scale * scale) return null;
  const ia = e / det;
  const ib = -b / det;
  const id = -d / det;
  const ie = a / det;
  return [
    [ia, ib, -(ia * c + ib * f)],
    [id, ie, -(id * c + ie * f)],
  ];
}

/** outer ∘ inner: the transform that applies `inner` first, then `outer`. */
export function composeAffine(outer: Readonly<Affine>, inner: Readonly<Affine>): Affine {
  const [[a, b, c], [d, e, f]] = outer;
  const [[p, q, r], [s, t, u]] = inner;
  return [
    [a * p + b * s, a * q + b * t, a * r + b * u + c],
    [d * p + e * s, d * q + e * t, d * r + e * u + f],
  ];
}

/** Iterates over a subset (index list) or over all n pairs. */
function count(p: PointPairs, subset: ArrayLike<number> | undefined, subsetLength: number | undefined): number {
  return subset ? (subsetLength ?? subset.length) : p.n;
}

interface Moments {
  sw: number;
  mx: number;
  my: number;
  mu: number;
  mv: number;
  /** Weighted central second moments of the sources, and source × destination cross terms. */
  sxx: number;
  sxy: number;
  syy: number;
  sxu: number;
  sxv: number;
  syu: number;
  syv: number;
  /** Destination second moments (for similarity fits). */
  suu: number;
  svv: number;
}

function moments(p: PointPairs, subset?: ArrayLike<number>, subsetLength?: number): Moments | null {
  const n = count(p, subset, subsetLength);
  let sw = 0;
  let mx = 0;
  let my = 0;
  let mu = 0;
  let mv = 0;
  for (let k = 0; k < n; k++) {
    const i = subset ? subset[k]! : k;
    const w = p.w[i]!;
    sw += w;
    mx += w * p.x[i]!;
    my += w * p.y[i]!;
    mu += w * p.u[i]!;
    mv += w * p.v[i]!;
  }
  if (!(sw > 0)) return null;
  mx /= sw;
  my /= sw;
  mu /= sw;
  mv /= sw;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  let sxu = 0;
  let sxv = 0;
  let syu = 0;
  let syv = 0;
  let suu = 0;
  let svv = 0;
  for (let k = 0; k < n; k++) {
    const i = subset ? subset[k]! : k;
    const w = p.w[i]!;
    const x = p.x[i]! - mx;
    const y = p.y[i]! - my;
    const u = p.u[i]! - mu;
    const v = p.v[i]! - mv;
    sxx += w * x * x;
    sxy += w * x * y;
    syy += w * y * y;
    sxu += w * x * u;
    sxv += w * x * v;
    syu += w * y * u;
    syv += w * y * v;
    suu += w * u * u;
    svv += w * v * v;
  }
  return { sw, mx, my, mu, mv, sxx, sxy, syy, sxu, sxv, syu, syv, suu, svv };
}

/**
 * Smallest / largest eigenvalue of the sources' weighted scatter matrix: 0 when the points
 * are collinear (or coincide), 1 for an isotropic spread. A cheap degeneracy test.
 */
export function spreadRatio(p: PointPairs, subset?: ArrayLike<number>, subsetLength?: number): number {
  const m = moments(p, subset, subsetLength);
  if (!m) return 0;
  const tr = m.sxx + m.syy;
  const det = m.sxx * m.syy - m.sxy * m.sxy;
  const disc = Math.sqrt(Math.max(0, (tr * tr) / 4 - det));
  const hi = tr / 2 + disc;
  const lo = tr / 2 - disc;
  return hi > 0 ? Math.max(0, lo) / hi : 0;
}

/** Relative eigenvalue floor below which a fit counts as degenerate (collinear points). */
const DEGENERATE_SPREAD = 1e-9;

/**
 * Weighted least-squares affine transform taking (x, y) to (u, v). Needs ≥ 3 non-collinear
 * points; exact for noise-free data.
 */
export function fitAffine(p: PointPairs, subset?: ArrayLike<number>, subsetLength?: number): Affine | null {
  if (count(p, subset, subsetLength) < 3) return null;
  const m = moments(p, subset, subsetLength);
  if (!m) return null;
  const det = m.sxx * m.syy - m.sxy * m.sxy;
  const tr = m.sxx + m.syy;
  // det / tr² ≈ λmin/λmax for an elongated scatter: collinear sets fail here.
  if (!(tr > 0) || det <= DEGENERATE_SPREAD * tr * tr) return null;
  // [sxx sxy; sxy syy] · [a; b] = [sxu; syu], likewise for the second row.
  const a = (m.syy * m.sxu - m.sxy * m.syu) / det;
  const b = (m.sxx * m.syu - m.sxy * m.sxu) / det;
  const d = (m.syy * m.sxv - m.sxy * m.syv) / det;
  const e = (m.sxx * m.syv - m.sxy * m.sxv) / det;
  return [
    [a, b, m.mu - a * m.mx - b * m.my],
    [d, e, m.mv - d * m.mx - e * m.my],
  ];
}

/**
 * Weighted least-squares similarity (rotation, uniform scale, shift); with `mirrored` the
 * rotation follows a reflection (determinant < 0). Needs ≥ 2 distinct points.
 */
export function fitSimilarity(p: PointPairs, mirrored = false, subset?: ArrayLike<number>, subsetLength?: number): Affine | null {
  if (count(p, subset, subsetLength) < 2) return null;
  const m = moments(p, subset, subsetLength);
  if (!m) return null;
  const s = m.sxx + m.syy;
  if (!(s > 0)) return null;
  if (!mirrored) {
    // u = α x − β y, v = β x + α y (centred).
    const alpha = (m.sxu + m.syv) / s;
    const beta = (m.sxv - m.syu) / s;
    return [
      [alpha, -beta, m.mu - alpha * m.mx + beta * m.my],
      [beta, alpha, m.mv - beta * m.mx - alpha * m.my],
    ];
  }
  // u = α x + β y, v = β x − α y (centred).
  const alpha = (m.sxu - m.syv) / s;
  const beta = (m.syu + m.sxv) / s;
  return [
    [alpha, beta, m.mu - alpha * m.mx - beta * m.my],
    [beta, -alpha, m.mv - beta * m.mx + alpha * m.my],
  ];
}

/** Squared residual distances |m(x, y) − (u, v)|² into `out` (indexed like the pairs). */
export function squaredResiduals(m: Readonly<Affine>, p: PointPairs, out: Float64Array, subset?: ArrayLike<number>, subsetLength?: number): void {
  const [[a, b, c], [d, e, f]] = m;
  const n = count(p, subset, subsetLength);
  for (let k = 0; k < n; k++) {
    const i = subset ? subset[k]! : k;
    const x = p.x[i]!;
    const y = p.y[i]!;
    const du = a * x + b * y + c - p.u[i]!;
    const dv = d * x + e * y + f - p.v[i]!;
    out[i] = du * du + dv * dv;
  }
}

/** Unweighted RMS residual distance in pixels. */
export function rmsResidual(m: Readonly<Affine>, p: PointPairs, subset?: ArrayLike<number>, subsetLength?: number): number {
  const [[a, b, c], [d, e, f]] = m;
  const n = count(p, subset, subsetLength);
  if (n === 0) return NaN;
  let sum = 0;
  for (let k = 0; k < n; k++) {
    const i = subset ? subset[k]! : k;
    const x = p.x[i]!;
    const y = p.y[i]!;
    const du = a * x + b * y + c - p.u[i]!;
    const dv = d * x + e * y + f - p.v[i]!;
    sum += du * du + dv * dv;
  }
  return Math.sqrt(sum / n);
}

/**
 * RMS over the frame of the distance between the mappings `a` and `b`: evaluated on a
 * `grid`×`grid` lattice of cell centres covering [−0.5, width − 0.5] × [−0.5, height − 0.5].
 * This is the registration error measure of the accuracy bars.
 */
export function mappingRms(a: Readonly<Affine>, b: Readonly<Affine>, width: number, height: number, grid = 32): number {
  let sum = 0;
  for (let j = 0; j < grid; j++) {
    const y = ((j + 0.5) / grid) * height - 0.5;
    for (let i = 0; i < grid; i++) {
      const x = ((i + 0.5) / grid) * width - 0.5;
      const [ax, ay] = applyAffine(a, x, y);
      const [bx, by] = applyAffine(b, x, y);
      sum += (ax - bx) ** 2 + (ay - by) ** 2;
    }
  }
  return Math.sqrt(sum / (grid * grid));
}

export interface AffineParts {
  /** Rotation of the frame's x axis in the reference, degrees in (−180, 180]. */
  rotation_deg: number;
  /** Length scale along the frame's x axis, and along its y axis (perpendicular part). */
  scale_x: number;
  scale_y: number;
  /** √|det|: the area scale as a length. */
  scale: number;
  /** Shear (dimensionless, 0 for a similarity). */
  shear: number;
  /** True when the transform contains a reflection (det < 0). */
  flip: boolean;
  tx: number;
  ty: number;
}

/**
 * Decomposition linear = R(θ) · [[sx, k·sy], [0, ±sy]] (a QR factorisation with sx, sy > 0;
 * the lower-right sign is − for a flip): rotation θ, axis scales, shear k, reflection.
 */
export function decomposeAffine(m: Readonly<Affine>): AffineParts {
  const [[a, b, c], [d, e, f]] = m;
  const sx = Math.hypot(a, d);
  const theta = Math.atan2(d, a);
  const cos = Math.cos(theta);
  const sin = Math.sin(theta);
  // R(−θ) · second column = [k·sy', sy'] where sy' carries the flip's sign.
  const r12 = cos * b + sin * e;
  const r22 = -sin * b + cos * e;
  const det = a * e - b * d;
  const sy = Math.abs(r22);
  let rotation = (theta * 180) / Math.PI;
  if (rotation <= -180) rotation += 360;
  return {
    rotation_deg: rotation,
    scale_x: sx,
    scale_y: sy,
    scale: Math.sqrt(Math.abs(det)),
    shear: sy > 0 ? r12 / sy : 0,
    flip: det < 0,
    tx: c,
    ty: f,
  };
}
