// State clustering and synthetic frames as weight tables (docs/tiled-workflow.md "Clustering").
// Per frame the state vector [G, mean_t L, var_t L, background, noise], each standardised
// (z-score; 0 where the spread is 0); K = clip(⌊N/10⌋, range); deterministic k-means: the first
// centre is the middle frame, each further one the frame farthest from the centres so far
// (ties: lowest index), 20 Lloyd iterations; a cluster left empty switches to equal-count bins by
// G ("quantile"). A synthetic frame k is the tile-weighted mean of its frames; the stack blends
// them with w_k = exp(Q_k), Q_k = median over its frames of clip(ln G_f, ±3). Both reduce to one
// weight table (nothing is written as an image): ω_ft = (w_k/Σw) · W_ft / Σ_{g∈k} W_gt.

export interface ClusterInput {
  g: number[];
  /** frames × tiles normalised table (W/D per tile). */
  table: Float32Array;
  tiles: number;
  l: Float64Array | null;
  background: number[];
  noise: number[];
}

export interface Clusters {
  k: number;
  method: 'kmeans' | 'quantile';
  labels: number[];
  sizes: number[];
  features: string[];
  standardized: number[][];
}

const FEATURES = ['global_weight', 'local_mean', 'local_var', 'background', 'noise'];

function standardize(cols: number[][]): number[][] {
  return cols.map((c) => {
    const v = c.map((x) => (Number.isFinite(x) ? x : 0));
    const m = v.reduce((a, b) => a + b, 0) / v.length;
    const sd = Math.sqrt(v.reduce((a, b) => a + (b - m) ** 2, 0) / v.length);
    return v.map((x) => (sd > 0 ? (x - m) / sd : 0));
  });
}

export function clusterFrames(inp: ClusterInput, range: [number, number]): Clusters {
  const n = inp.g.length;
  const T = inp.tiles;
  const lm: number[] = [];
  const lv: number[] = [];
  for (let f = 0; f < n; f++) {
    let s = 0;
    let s2 = 0;
    for (let t = 0; t < T; t++) {
      const l = inp.l ? inp.l[f * T + t]! : 1;
      s += l;
      s2 += l * l;
    }
    lm.push(s / T);
    lv.push(s2 / T - (s / T) ** 2);
  }
  const cols = standardize([inp.g, lm, lv, inp.background, inp.noise]);
  const x = Array.from({ length: n }, (_, f) => cols.map((c) => c[f]!));
  const k = Math.max(1, Math.min(n, Math.min(range[1], Math.max(range[0], Math.floor(n / 10)))));
  const d2 = (a: number[], b: number[]) => a.reduce((s, v, i) => s + (v - b[i]!) ** 2, 0);
  const centres: number[][] = [x[n >> 1]!.slice()];
  while (centres.length < k) {
    let best = -1;
    let bestD = -1;
    for (let f = 0; f < n; f++) {
      const d = Math.min(...centres.map((c) => d2(x[f]!, c)));
      if (d > bestD) {
        bestD = d;
        best = f;
      }
    }
    centres.push(x[best]!.slice());
  }
  let labels = new Array(n).fill(0);
  for (let it = 0; it < 20; it++) {
    labels = x.map((p) => {
      let b = 0;
      for (let c = 1; c < k; c++) if (d2(p, centres[c]!) < d2(p, centres[b]!)) b = c;
      return b;
    });
    for (let c = 0; c < k; c++) {
      const members = x.filter((_, f) => labels[f] === c);
      if (members.length) centres[c] = members[0]!.map((_, i) => members.reduce((a, m) => a + m[i]!, 0) / members.length);
    }
  }
  let method: Clusters['method'] = 'kmeans';
  let sizes = Array.from({ length: k }, (_, c) => labels.filter((l) => l === c).length);
  if (sizes.some((s) => s === 0)) {
    method = 'quantile';
    const order = inp.g.map((g, f) => [g, f] as const).sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    order.forEach(([, f], r) => (labels[f] = Math.min(k - 1, Math.floor((r * k) / n))));
    sizes = Array.from({ length: k }, (_, c) => labels.filter((l) => l === c).length);
  }
  return { k, method, labels, sizes, features: FEATURES, standardized: x };
}

/** The blended table of the clusters' synthetic frames; `weighting` global drops L inside a cluster. */
export function clusterTable(inp: ClusterInput, c: Clusters, weighting: 'global' | 'tile_weighted'): { table: Float32Array; clusterWeights: number[]; clusterQuality: number[] } {
  const n = inp.g.length;
  const T = inp.tiles;
  const quality = Array.from({ length: c.k }, (_, k) => {
    const v = inp.g.filter((_, f) => c.labels[f] === k).map((g) => Math.min(3, Math.max(-3, Math.log(g)))).sort((a, b) => a - b);
    const m = v.length;
    return m === 0 ? -3 : m % 2 ? v[m >> 1]! : 0.5 * (v[m / 2 - 1]! + v[m / 2]!);
  });
  const wk = quality.map((q) => Math.exp(q));
  const present = wk.filter((_, k) => c.sizes[k]! > 0).reduce((a, b) => a + b, 0);
  const table = new Float32Array(n * T);
  for (let t = 0; t < T; t++) {
    const within = new Float64Array(c.k);
    const w = (f: number) => (weighting === 'global' ? inp.g[f]! : inp.table[f * T + t]!);
    for (let f = 0; f < n; f++) within[c.labels[f]!]! += w(f);
    for (let f = 0; f < n; f++) {
      const k = c.labels[f]!;
      table[f * T + t] = ((wk[k]! / present) * w(f)) / within[k]!;
    }
  }
  return { table, clusterWeights: wk.map((v) => v / present), clusterQuality: quality };
}
