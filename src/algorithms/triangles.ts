// Triangles of a star list and their similarity invariants, for triangle-similarity matching
// (Groth 1986; Valdes et al. 1995): every triangle of the given stars, described by its side
// ratios (invariant under shift, rotation, uniform scale and reflection), its orientation
// (which flips under a reflection), its size and the direction of its longest side (which
// together give the similarity transform between two matched triangles).
//
// Invariants:
// - Vertices are named canonically by the side opposite them: sides a ≥ b ≥ c, vertex A is
//   opposite a, B opposite b, C opposite c; so a = |BC|, b = |CA|, c = |AB|. Two similar
//   triangles therefore list corresponding stars in the same vertex slots (unless two sides
//   are nearly equal; such ambiguous matches are filtered later by transform consistency).
// - Triangles whose shortest side is below `minSide`, or that are nearly flat, are skipped:
//   their ratios or orientation are dominated by centroid noise.
// - indexTriangles puts a set into a grid over the invariant plane for tolerance lookups.
// - Deterministic: enumeration in index order, stable counting sort into the grid.

export interface TriangleSet {
  count: number;
  /** Invariants: b/a (in (0.5, 1]) and c/a (in (0, 1]), with a ≥ b ≥ c. */
  ba: Float64Array;
  ca: Float64Array;
  /** Vertex indices into the point list given to buildTriangles. */
  A: Int32Array;
  B: Int32Array;
  C: Int32Array;
  /** +1 when A→B→C runs counter-clockwise in (x, y), −1 when clockwise. */
  orient: Int8Array;
  /** Length of the longest side, a = |BC|. */
  a: Float64Array;
  /** Direction of the vector B→C, radians. */
  angle: Float64Array;
  /** Centroid of the three vertices. */
  cx: Float64Array;
  cy: Float64Array;
}

export interface TriangleOptions {
  /** Shortest allowed side in pixels. Default 4. */
  minSide?: number;
  /** Smallest allowed height over the longest side, relative to it (flatness). Default 0.02. */
  minHeight?: number;
}

/** Most points buildTriangles uses (the first ones given). */
export const MAX_POINTS = 200;

/** All usable triangles of the points (xs[i], ys[i]), i < n (in enumeration order). */
export function buildTriangles(xs: ArrayLike<number>, ys: ArrayLike<number>, nIn: number, options: TriangleOptions = {}): TriangleSet {
  // C(n, 3) grows fast: 200 points already give 1.3 M triangles.
  const n = Math.min(nIn, MAX_POINTS);
  const minSide = options.minSide ?? 4;
  const minHeight = options.minHeight ?? 0.02;
  const cap = (n * (n - 1) * (n - 2)) / 6;
  const ba = new Float64Array(cap);
  const ca = new Float64Array(cap);
  const A = new Int32Array(cap);
  const B = new Int32Array(cap);
  const C = new Int32Array(cap);
  const orient = new Int8Array(cap);
  const aLen = new Float64Array(cap);
  const angle = new Float64Array(cap);
  const centreX = new Float64Array(cap);
  const centreY = new Float64Array(cap);
  // Pairwise distances once (n ≤ a few hundred).
  const dist = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const dx = xs[j]! - xs[i]!;
      const dy = ys[j]! - ys[i]!;
      const d = Math.sqrt(dx * dx + dy * dy);
      dist[i * n + j] = d;
      dist[j * n + i] = d;
    }
  }
  let t = 0;
  for (let i = 0; i < n; i++) {
    for (let j = i + 1; j < n; j++) {
      const dij = dist[i * n + j]!;
      if (dij < minSide) continue;
      for (let k = j + 1; k < n; k++) {
        const djk = dist[j * n + k]!;
        const dik = dist[i * n + k]!;
        if (djk < minSide || dik < minSide) continue;
        // Side opposite i is |jk|, opposite j is |ik|, opposite k is |ij|.
        let pa = i;
        let la = djk;
        let pb = j;
        let lb = dik;
        let pc = k;
        let lc = dij;
        // Sort (vertex, opposite side) by side length, descending: a ≥ b ≥ c.
        let tp: number;
        let tl: number;
        if (lb > la) {
          tp = pa; pa = pb; pb = tp;
          tl = la; la = lb; lb = tl;
        }
        if (lc > la) {
          tp = pa; pa = pc; pc = tp;
          tl = la; la = lc; lc = tl;
        }
        if (lc > lb) {
          tp = pb; pb = pc; pc = tp;
          tl = lb; lb = lc; lc = tl;
        }
        const bx = xs[pb]!;
        const by = ys[pb]!;
        const cx = xs[pc]!;
        const cy = ys[pc]!;
        const ax = xs[pa]!;
        const ay = ys[pa]!;
        const cross = (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);
        // Height over the longest side = |cross| / a.
        if (Math.abs(cross) < minHeight * la * la) continue;
        ba[t] = lb / la;
        ca[t] = lc / la;
        A[t] = pa;
        B[t] = pb;
        C[t] = pc;
        orient[t] = cross > 0 ? 1 : -1;
        aLen[t] = la;
        angle[t] = Math.atan2(cy - by, cx - bx);
        centreX[t] = (ax + bx + cx) / 3;
        centreY[t] = (ay + by + cy) / 3;
        t++;
      }
    }
  }
  return {
    count: t,
    ba: ba.slice(0, t),
    ca: ca.slice(0, t),
    A: A.slice(0, t),
    B: B.slice(0, t),
    C: C.slice(0, t),
    orient: orient.slice(0, t),
    a: aLen.slice(0, t),
    angle: angle.slice(0, t),
    cx: centreX.slice(0, t),
    cy: centreY.slice(0, t),
  };
}

/**
 * A grid over the invariant plane (b/a, c/a) ⊂ [0.5, 1] × [0, 1] with square cells of side
 * `cell`: all triangles within `cell` of a query point lie in the 3×3 cells around it, so a
 * lookup costs a handful of comparisons instead of a scan.
 */
export interface TriangleIndex {
  cell: number;
  nb: number;
  nc: number;
  /** Triangles of cell k are items[start[k] … start[k+1]), in ascending triangle order. */
  start: Int32Array;
  items: Int32Array;
}

export function indexTriangles(set: TriangleSet, cell: number): TriangleIndex {
  const nb = Math.max(1, Math.ceil(0.5 / cell));
  const nc = Math.max(1, Math.ceil(1 / cell));
  const cellOf = (t: number) => {
    const i = Math.min(nb - 1, Math.max(0, Math.floor((set.ba[t]! - 0.5) / cell)));
    const j = Math.min(nc - 1, Math.max(0, Math.floor(set.ca[t]! / cell)));
    return i * nc + j;
  };
  // Counting sort by cell: stable, so each cell lists its triangles in index order.
  const start = new Int32Array(nb * nc + 1);
  for (let t = 0; t < set.count; t++) start[cellOf(t) + 1]!++;
  for (let k = 0; k < nb * nc; k++) start[k + 1]! += start[k]!;
  const fill = start.slice(0, nb * nc);
  const items = new Int32Array(set.count);
  for (let t = 0; t < set.count; t++) items[fill[cellOf(t)]!++] = t;
  return { cell, nb, nc, start, items };
}
