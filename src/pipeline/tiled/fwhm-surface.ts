// A frame's seeing as a smooth map: a low-order surface FWHM(x, y) fitted to all the frame's
// measured stars (reference-grid positions), evaluated at tile centres for the local weight L
// (docs/tiled-workflow.md "Weights"). One star's FWHM scatters by several per cent from noise;
// a tile's median over its few stars still scatters 3–5 % from frame to frame, while a surface
// over a hundred stars averages that down to ~1 %, so L can be steeper without turning noise
// into weight.
// Invariants:
// - Robust: iteratively reweighted least squares with Tukey's biweight (c = 4.685 × the robust
//   scale of the residuals), so blends, saturated remnants and cosmic hits do not tilt the map.
// - The model's order follows the star count (quadratic ≥ QUADRATIC_MIN stars, plane ≥ PLANE_MIN,
//   else the median as a constant; no stars: NaN everywhere).
// - Coordinates are normalised (centre and half-extent of the grid) so the normal equations stay
//   well conditioned; the coefficients are recorded in those units.
// - Evaluation is clamped to the range the fit takes at the stars used: no extrapolation beyond
//   what the stars support (a corner without stars gets the nearest supported value, not a
//   quadratic's runaway).
// - localFwhmAt (fwhm_map local, the default) adds the nearby stars' residual median, shrunk by a
//   prior, for what a low-order surface cannot follow (a soft patch a few tiles wide).

import { finiteMedian } from '../../algorithms/robust-stats.js';

export type SurfaceModel = 'quadratic' | 'plane' | 'constant' | 'none';

export interface FwhmSurface {
  model: SurfaceModel;
  /** Coefficients of 1, u, v, u², uv, v² (as many as the model has), u = (x − cx)/sx, v = (y − cy)/sy. */
  coefficients: number[];
  center: [number, number];
  scale: [number, number];
  stars: number;
  /** Stars with a non-zero final biweight. */
  inliers: number;
  /** Robust scale (1.4826·MAD) of the final residuals, px. */
  residual_sigma: number;
  /** The surface's range over the stars used: evaluation is clamped to it. */
  range: [number, number];
}

export const QUADRATIC_MIN = 30;
export const PLANE_MIN = 10;
const TUKEY_C = 4.685;
const ITERATIONS = 10;

function basis(model: SurfaceModel, u: number, v: number): number[] {
  if (model === 'quadratic') return [1, u, v, u * u, u * v, v * v];
  if (model === 'plane') return [1, u, v];
  return [1];
}

/** Solves the k × k system a·x = b (row-major) by Gaussian elimination with partial pivoting; null when singular. */
function solve(a: number[], b: number[], k: number): number[] | null {
  const m = a.slice();
  const r = b.slice();
  for (let c = 0; c < k; c++) {
    let p = c;
    for (let i = c + 1; i < k; i++) if (Math.abs(m[i * k + c]!) > Math.abs(m[p * k + c]!)) p = i;
    if (!(Math.abs(m[p * k + c]!) > 1e-12)) return null;
    if (p !== c) {
      for (let j = 0; j < k; j++) [m[c * k + j], m[p * k + j]] = [m[p * k + j]!, m[c * k + j]!];
      [r[c], r[p]] = [r[p]!, r[c]!];
    }
    for (let i = c + 1; i < k; i++) {
      const f = m[i * k + c]! / m[c * k + c]!;
      for (let j = c; j < k; j++) m[i * k + j]! -= f * m[c * k + j]!;
      r[i]! -= f * r[c]!;
    }
  }
  const x = new Array<number>(k).fill(0);
  for (let i = k - 1; i >= 0; i--) {
    let s = r[i]!;
    for (let j = i + 1; j < k; j++) s -= m[i * k + j]! * x[j]!;
    x[i] = s / m[i * k + i]!;
  }
  return x.every(Number.isFinite) ? x : null;
}

/**
 * Fits FWHM(x, y) to the stars (x, y on the grid of size width × height). `maxModel` caps the
 * order ('plane' or 'constant' for experiments and sparse fields).
 */
export function fitFwhmSurface(stars: readonly { x: number; y: number; fwhm: number }[], width: number, height: number, maxModel: SurfaceModel = 'quadratic'): FwhmSurface {
  const pts = stars.filter((s) => Number.isFinite(s.x) && Number.isFinite(s.y) && Number.isFinite(s.fwhm) && s.fwhm > 0);
  const center: [number, number] = [width / 2, height / 2];
  const scale: [number, number] = [Math.max(1, width / 2), Math.max(1, height / 2)];
  const n = pts.length;
  if (n === 0) return { model: 'none', coefficients: [], center, scale, stars: 0, inliers: 0, residual_sigma: NaN, range: [NaN, NaN] };
  const order: SurfaceModel[] = ['quadratic', 'plane', 'constant'];
  let model: SurfaceModel = n >= QUADRATIC_MIN ? 'quadratic' : n >= PLANE_MIN ? 'plane' : 'constant';
  if (order.indexOf(model) < order.indexOf(maxModel)) model = maxModel === 'none' ? 'constant' : maxModel;
  const uv = pts.map((p) => [(p.x - center[0]) / scale[0], (p.y - center[1]) / scale[1]] as const);
  const y = pts.map((p) => p.fwhm);
  const m0 = finiteMedian(y);
  const constant = (): FwhmSurface => {
    const sigma = 1.4826 * finiteMedian(y.map((v) => Math.abs(v - m0)));
    return { model: 'constant', coefficients: [m0], center, scale, stars: n, inliers: n, residual_sigma: sigma, range: [m0, m0] };
  };
  if (model === 'constant') return constant();
  const rows = uv.map(([u, v]) => basis(model, u, v));
  const k = rows[0]!.length;
  // Start from the median as the constant term: the first residuals already see outliers.
  let coef: number[] = [m0, ...new Array<number>(k - 1).fill(0)];
  let w = new Array<number>(n).fill(1);
  let sigma = NaN;
  for (let it = 0; it < ITERATIONS; it++) {
    const res = rows.map((r, i) => y[i]! - r.reduce((s, b, j) => s + b * coef[j]!, 0));
    sigma = 1.4826 * finiteMedian(res.map(Math.abs));
    // Stars that agree to within rounding: the current fit is exact enough.
    if (!(sigma > 1e-9)) break;
    w = res.map((r) => {
      const t = r / (TUKEY_C * sigma);
      return Math.abs(t) < 1 ? (1 - t * t) ** 2 : 0;
    });
    const a = new Array<number>(k * k).fill(0);
    const b = new Array<number>(k).fill(0);
    for (let i = 0; i < n; i++) {
      const r = rows[i]!;
      const wi = w[i]!;
      if (wi === 0) continue;
      for (let p = 0; p < k; p++) {
        b[p]! += wi * r[p]! * y[i]!;
        for (let q = 0; q < k; q++) a[p * k + q]! += wi * r[p]! * r[q]!;
      }
    }
    const next = solve(a, b, k);
    // Stars in a line or a clump cannot pin the surface: the constant is the honest answer.
    if (!next) return constant();
    const moved = next.reduce((s, c, j) => Math.max(s, Math.abs(c - coef[j]!)), 0);
    coef = next;
    if (moved < 1e-6 * Math.abs(m0)) break;
  }
  const used = rows.map((r, i) => (w[i]! > 0 ? r.reduce((s, b, j) => s + b * coef[j]!, 0) : NaN)).filter(Number.isFinite);
  const range: [number, number] = used.length ? [Math.min(...used), Math.max(...used)] : [m0, m0];
  return { model, coefficients: coef, center, scale, stars: n, inliers: w.filter((x) => x > 0).length, residual_sigma: sigma, range };
}

/** The surface at (x, y), clamped to its range over the stars; NaN for 'none'. */
export function evalFwhmSurface(s: FwhmSurface, x: number, y: number): number {
  if (s.model === 'none') return NaN;
  const u = (x - s.center[0]) / s.scale[0];
  const v = (y - s.center[1]) / s.scale[1];
  const f = basis(s.model, u, v).reduce((acc, b, j) => acc + b * s.coefficients[j]!, 0);
  return Math.min(s.range[1], Math.max(s.range[0], f));
}

/**
 * The surface plus what the stars near (x, y) add to it: the Gaussian-weighted median
 * (bandwidth `h`) of the stars' residuals from the surface, with `prior` weight at residual 0
 * (shrinks the term where few stars are near). A median, not the surface's Tukey weights: a soft
 * patch's stars are "outliers" to the low-order surface, and exactly what this term must follow;
 * a lone blend still moves a median little. The surface carries the tilt (and the edges, where a
 * plain kernel estimate leans inwards); the residual term a local patch the surface cannot.
 */
export function localFwhm(s: FwhmSurface, stars: readonly { x: number; y: number; fwhm: number }[], x: number, y: number, h: number, prior = 3): number {
  return localFwhmAt(s, stars, [[x, y]], h, prior)[0]!;
}

/** Cut-off of the kernel: beyond 4.3 h a star's weight is below 1e-4 and it is left out. */
const KERNEL_REACH = 4.3;

/**
 * localFwhm at many points: the residuals are computed once and the stars bucketed in cells of
 * the kernel's reach, so a point looks at the stars of its 3 × 3 cells only (a full frame's
 * thousands of tiles × thousands of stars stay cheap).
 */
export function localFwhmAt(s: FwhmSurface, stars: readonly { x: number; y: number; fwhm: number }[], points: readonly (readonly [number, number])[], h: number, prior = 3): number[] {
  if (s.model === 'none') return points.map(() => NaN);
  const reach = KERNEL_REACH * h;
  const inv = 1 / (2 * h * h);
  const cell = (v: number) => Math.floor(v / reach);
  const buckets = new Map<string, { x: number; y: number; r: number }[]>();
  for (const st of stars) {
    if (!(Number.isFinite(st.x) && Number.isFinite(st.y) && Number.isFinite(st.fwhm) && st.fwhm > 0)) continue;
    const key = `${cell(st.x)},${cell(st.y)}`;
    const e = { x: st.x, y: st.y, r: st.fwhm - evalFwhmSurface(s, st.x, st.y) };
    const b = buckets.get(key);
    if (b) b.push(e);
    else buckets.set(key, [e]);
  }
  return points.map(([x, y]) => {
    const base = evalFwhmSurface(s, x, y);
    const rw: [number, number][] = [[0, prior]];
    for (let j = cell(y) - 1; j <= cell(y) + 1; j++)
      for (let i = cell(x) - 1; i <= cell(x) + 1; i++)
        for (const st of buckets.get(`${i},${j}`) ?? []) {
          const w = Math.exp(-((st.x - x) ** 2 + (st.y - y) ** 2) * inv);
          if (w >= 1e-4) rw.push([st.r, w]);
        }
    rw.sort((a, b) => a[0] - b[0]);
    const half = rw.reduce((acc, [, w]) => acc + w, 0) / 2;
    let acc = 0;
    for (const [r, w] of rw) {
      acc += w;
      if (acc >= half) return base + r;
    }
    return base;
  });
}
