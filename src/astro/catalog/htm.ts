// Hierarchical Triangular Mesh (HTM, Kunszt/Szalay/Thakar), as KStars indexes its star files:
// the sphere is an octahedron of 8 spherical triangles, each split into 4 by its edge midpoints,
// `level` times. A triangle's id is its parent's id · 4 + child number; the 8 roots are 8..15
// (S0..S3, N0..N3); KStars numbers the trixels of a level from 0 (id − 8·4^level).
//
// Root vertices and the child rule are the published HTM convention: vertices v0 = +z,
// v1 = +x, v2 = +y, v3 = −x, v4 = −y, v5 = −z; roots S0 (v1 v5 v2), S1 (v2 v5 v3), S2 (v3 v5 v4),
// S3 (v4 v5 v1), N0 (v1 v0 v4), N1 (v4 v0 v3), N2 (v3 v0 v2), N3 (v2 v0 v1); a triangle (a, b, c)
// with midpoints w0 = |b + c|, w1 = |a + c|, w2 = |a + b| has children 0 (a w2 w1), 1 (b w0 w2),
// 2 (c w1 w0), 3 (w0 w1 w2). Triangles are counter-clockwise seen from outside, so a point p is
// inside when (a × b)·p, (b × c)·p and (c × a)·p are all ≥ 0.

import { unitVector, type Cone } from './types.js';

type V3 = [number, number, number];

const V: V3[] = [
  [0, 0, 1],
  [1, 0, 0],
  [0, 1, 0],
  [-1, 0, 0],
  [0, -1, 0],
  [0, 0, -1],
];
const ROOTS: [number, number, number][] = [
  [1, 5, 2],
  [2, 5, 3],
  [3, 5, 4],
  [4, 5, 1],
  [1, 0, 4],
  [4, 0, 3],
  [3, 0, 2],
  [2, 0, 1],
];

const cross = (a: V3, b: V3): V3 => [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]];
const dot = (a: V3, b: V3) => a[0] * b[0] + a[1] * b[1] + a[2] * b[2];
function mid(a: V3, b: V3): V3 {
  const s: V3 = [a[0] + b[0], a[1] + b[1], a[2] + b[2]];
  const n = Math.sqrt(dot(s, s));
  return [s[0] / n, s[1] / n, s[2] / n];
}

/** Tolerance of the inside test, so points on an edge belong to a triangle (first match wins). */
const EPS = 1e-15;

function inside(p: V3, a: V3, b: V3, c: V3): boolean {
  return dot(cross(a, b), p) >= -EPS && dot(cross(b, c), p) >= -EPS && dot(cross(c, a), p) >= -EPS;
}

function children(a: V3, b: V3, c: V3): [V3, V3, V3][] {
  const w0 = mid(b, c);
  const w1 = mid(a, c);
  const w2 = mid(a, b);
  return [
    [a, w2, w1],
    [b, w0, w2],
    [c, w1, w0],
    [w0, w1, w2],
  ];
}

/** Number of trixels of a level (8·4^level). */
export const trixelCount = (level: number): number => 8 * 4 ** level;

/** KStars trixel number (0 … 8·4^level − 1) of the point (ra, dec) in degrees. */
export function trixelOf(ra: number, dec: number, level: number): number {
  const p = unitVector(ra, dec);
  let r = ROOTS.findIndex(([i, j, k]) => inside(p, V[i]!, V[j]!, V[k]!));
  if (r < 0) r = 0; // unreachable for a unit vector; keeps the type total
  let [a, b, c] = ROOTS[r]!.map((i) => V[i]!) as [V3, V3, V3];
  let id = 8 + r;
  for (let l = 0; l < level; l++) {
    const ch = children(a, b, c);
    let k = ch.findIndex(([x, y, z]) => inside(p, x, y, z));
    if (k < 0) k = 3; // rounding at a shared edge: the central child touches all three others
    id = id * 4 + k;
    [a, b, c] = ch[k]!;
  }
  return id - trixelCount(level);
}

/**
 * Trixels of `level` that may overlap the cone, ascending. Conservative: a triangle is kept when
 * its bounding cap (centre = normalised vertex sum, radius = farthest vertex) meets the cone, so
 * the list can hold a few trixels that only come near it; callers filter stars by the cone.
 */
export function trixelsInCone(cone: Cone, level: number): number[] {
  const c = unitVector(cone.ra, cone.dec);
  const r = (Math.min(180, cone.radius) * Math.PI) / 180;
  const out: number[] = [];
  const visit = (a: V3, b: V3, cc: V3, id: number, l: number): void => {
    const m = mid(mid(a, b), cc); // any interior point works as the cap centre; this one is cheap
    const cap = Math.max(...[a, b, cc].map((v) => Math.acos(Math.min(1, Math.max(-1, dot(m, v))))));
    const d = Math.acos(Math.min(1, Math.max(-1, dot(m, c))));
    if (d > r + cap + 1e-12) return;
    if (l === level) {
      out.push(id - trixelCount(level));
      return;
    }
    children(a, b, cc).forEach(([x, y, z], k) => visit(x, y, z, id * 4 + k, l + 1));
  };
  ROOTS.forEach(([i, j, k], n) => visit(V[i]!, V[j]!, V[k]!, 8 + n, 0));
  return out.sort((p, q) => p - q);
}
