// The tiled workflow's weights (docs/tiled-workflow.md "Weights"): pure functions of per-frame
// and per-tile measurements.
//   z(x) = (x − median) / max(1.4826·MAD, floor): a robust z-score whose scale has a floor, so a
//     sequence of nearly equal frames (uniform seeing) does not blow measurement noise up to
//     unit-variance scores; the floor is Z_FLOOR of the median or, for backgrounds, the median
//     frame noise (a quarter of it for a tile's sky, a mean over many samples).
//   G_f = exp(k · clip(Q_f, clamp)),
//     Q_f = [wb·(−z(B)) + wn·(−z(σ)) + wt·z(T) + wf·(−z(FWHM))] / (wb + wn + wt + wf)
//     with B the sky background, σ the pixel noise, T the transparency (median star flux), FWHM
//     the median star FWHM. A frame missing a measurement takes the clamp's low end for that term.
//   L_ft = exp(clip(Q_ft, clamp)), per tile across the frames:
//     STAR tile (median star count over frames ≥ star_min_count):
//       Q = wf·(−z(FWHM)) + wr·z(roundness) + wc·z(contrast)
//       (FWHM's floor is LocalSettings.fwhmFloor: LOCAL_Z_FLOOR or SURFACE_Z_FLOOR when the tile's
//       FWHM comes from the frame's fitted seeing map, fwhm-surface.ts, whose estimate is far less
//       noisy than a tile's star median)
//       or, with a FWHM penalty a > 0 (LocalSettings.fwhmPenalty, local_metrics.star_mode.
//       fwhm_penalty), the FWHM term is −a · shrink(ln(F_ft / median_f F_ft)), shrink(x) =
//       sign(x)·max(0, |x| − d) with d = LocalSettings.fwhmDeadband (the seeing map's frame-to-frame
//       scatter: differences that small are not acted on), F_ft the tile's FWHM over the
//       frame's own reference seeing (LOCAL_METRICS: a low quantile of its tile FWHMs, its sharp
//       part): a fixed power law, L ∝ F_ft^−a, where a z-score's scale grows with the very
//       spread it measures (a tile where half the frames are 1.8× soft gets z ≈ ±0.7 whatever the
//       factor). Where seeing is flat across the field every frame's F_ft in a tile is the same
//       (within the deadband), the term is 0 and W = G; with G
//       Raw Stack's quality weight (global_metrics.mode quality) that is Raw Stack's weighting.
//     STRUCTURE tile: Q = wm·z(E/σ²) − wb·z(B); an E/σ² above ARTEFACT_FACTOR × the tile's median
//       over the frames is an artefact (a satellite or plane trail, a cosmic-ray cluster), not
//       detail, and counts as no usable measurement
//     A frame without a usable measurement in the tile (no star measured there, no pixel) gets
//     Q = clamp low, the lowest weight, never the highest.
//   W_ft = G_f · L_ft; per tile D_t = Σ_f W_ft, table_ft = W_ft / D_t, N_eff,t = D_t² / Σ_f W_ft².

import { finiteMedian } from '../../algorithms/robust-stats.js';

/**
 * The z-score's scale floor, relative to the median: quality differences below ~25 % count less
 * than a full unit. Measured on generated sessions (docs/tiled-workflow.md "Weights"): at 0.25 a
 * uniform-seeing control stacks within 2 % of the uniform stack's FWHM and 5 % of its noise,
 * while a half-field 1.8× seeing difference still sharpens that half by ~10 %; 0.05 cost up to
 * 30 % more noise on the control for nothing.
 */
export const Z_FLOOR = 0.25;

/**
 * The FWHM z-score's floor when a tile's FWHM is read off the frame's fitted seeing surface
 * (local_metrics.star_mode.fwhm_map surface or plane): the surface over all the
 * frame's stars scatters ~1–2 % frame to frame where a tile's star median scatters 3–5 %, so a
 * lower floor lets L follow field-dependent seeing. Measured (bench/RESULTS.md, "a seeing map per
 * frame"): quadratic at 0.08 sharpens the tilted side of swap-halves from 0.957–0.971× to
 * 0.939–0.954× the uniform stack at +10 % noise and keeps the control within 2 % / 5 %; a plane
 * at 0.12 gets 0.943–0.962× at +8 %.
 */
export const SURFACE_Z_FLOOR = 0.08;

/**
 * The floor with fwhm_map local (the default): the surface plus the nearby stars' residual
 * median, noisier than the surface alone (its residual term rests on ~20 stars). Measured
 * (bench/RESULTS.md, same section): at 0.10 the tilted side of swap-halves reaches 0.940–0.958×
 * (was 0.957–0.971×), the drifting patch's row 0.934–0.962× (was 0.945–0.965×), at +9 % noise
 * (was +5 %); the control stays at 0.989–0.994× FWHM and +2 % noise.
 */
export const LOCAL_Z_FLOOR = 0.1;

/**
 * A STRUCTURE tile's E/σ² this many times the frames' median is an artefact, not detail. Measured
 * on generated sessions (mono and OSC, with and without flats) when E was a mean: seeing and
 * transparency moved a frame's E/σ² to at most ~1.2× the median at the 90th percentile, a
 * satellite trail through the tile to 30–600×; without the rule the trail frame took the highest
 * L (the clamp) along its trail. E is now the 90th percentile of the tile (cpu/tile-metrics.ts),
 * which a trail moves by its pixel share only: it reaches 3× when an artefact covers more than
 * about a tenth of the tile, so the rule is kept for those (docs/tiled-workflow.md "Weights").
 */
export const ARTEFACT_FACTOR = 3;

/**
 * An E/σ² above this many times what the frame shows in its typical tile (its median, over the
 * tiles, of E/σ² over the tile's median across frames) is an artefact too. Seeing moves a frame's
 * structure coherently over the field; a satellite or plane trail moves one tile. With E the 90th
 * percentile a trail across a sparse tile reads only ~2× the tile's median (a satellite frame of
 * a 10-frame OSC session without flats took L ≈ 18 in the tile its trail crossed, N_eff 2.1 of
 * 10), under ARTEFACT_FACTOR; against the frame's own typical ratio it stands out.
 */
export const LOCAL_ARTEFACT_FACTOR = 1.5;

/** Robust z-scores (NaN stays NaN); `floor` bounds the scale from below. */
export function robustZ(values: readonly number[], floor: number): number[] {
  const m = finiteMedian([...values]);
  const mad = finiteMedian(values.filter(Number.isFinite).map((x) => Math.abs(x - m)));
  const scale = Math.max(1.4826 * (Number.isFinite(mad) ? mad : 0), floor, 1e-12);
  return values.map((x) => (Number.isFinite(x) ? (x - m) / scale : NaN));
}

const relFloor = (values: readonly number[]) => Z_FLOOR * Math.abs(finiteMedian([...values]));
const clip = (x: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, x));

export interface FrameQuality {
  background: number;
  noise: number;
  transparency: number;
  fwhm: number;
}

export interface GlobalSettings {
  weights: { background: number; noise: number; transparency: number; fwhm: number };
  clamp: [number, number];
  weight_exponent_scale: number;
}

export interface GlobalWeights {
  q: number[];
  g: number[];
  z: { background: number[]; noise: number[]; transparency: number[]; fwhm: number[] };
  /** The weights actually used (normalised to sum 1). */
  weights: GlobalSettings['weights'];
}

export function globalWeights(frames: readonly FrameQuality[], s: GlobalSettings): GlobalWeights {
  const col = (k: keyof FrameQuality) => frames.map((f) => f[k]);
  const noiseMedian = finiteMedian(col('noise'));
  const z = {
    background: robustZ(col('background'), Number.isFinite(noiseMedian) ? noiseMedian : 0),
    noise: robustZ(col('noise'), relFloor(col('noise'))),
    transparency: robustZ(col('transparency'), relFloor(col('transparency'))),
    fwhm: robustZ(col('fwhm'), relFloor(col('fwhm'))),
  };
  const w = s.weights;
  const sum = w.background + w.noise + w.transparency + w.fwhm;
  const weights = { background: w.background / sum, noise: w.noise / sum, transparency: w.transparency / sum, fwhm: w.fwhm / sum };
  const [lo, hi] = s.clamp;
  const term = (v: number) => (Number.isFinite(v) ? v : lo);
  const q = frames.map((_, i) =>
    weights.background * term(-z.background[i]!) + weights.noise * term(-z.noise[i]!) + weights.transparency * term(z.transparency[i]!) + weights.fwhm * term(-z.fwhm[i]!),
  );
  const g = q.map((x) => Math.exp(s.weight_exponent_scale * clip(x, lo, hi)));
  return { q, g, z, weights };
}

/** One frame's measurements in one tile (NaN: not measured). */
export interface TileMeasure {
  stars: number;
  fwhm: number;
  roundness: number;
  contrast: number;
  /** Structure measure E/σ² and the tile's background. */
  structure: number;
  background: number;
}

export interface LocalSettings {
  star_min_count: number;
  star: { fwhm: number; roundness: number; contrast: number };
  /** The FWHM z-score's floor relative to the median (default Z_FLOOR); lower when the tile FWHM is a fitted surface's. */
  fwhmFloor?: number;
  /** With a value a > 0 the FWHM term is −a·shrink(ln(F / median over frames)) (F: the tile's FWHM relative to the frame's own sharp part) instead of wf·(−z(FWHM)). */
  fwhmPenalty?: number;
  /** Penalty law: |ln F| below this counts as 0 (and above it, less this): the seeing map's measurement noise. */
  fwhmDeadband?: number;
  structure: { metric_weight: number; background_weight: number };
  clamp: [number, number];
}

export type TileType = 'STAR' | 'STRUCTURE';

export interface LocalWeights {
  types: TileType[];
  /** frames × tiles, frame-major. */
  q: Float64Array;
  l: Float64Array;
}

/** L per frame and tile; `m[f][t]` the measurements. */
export function localWeights(m: readonly (readonly TileMeasure[])[], tiles: number, s: LocalSettings, frameNoise: readonly number[]): LocalWeights {
  const n = m.length;
  const [lo, hi] = s.clamp;
  const q = new Float64Array(n * tiles);
  const l = new Float64Array(n * tiles);
  const types: TileType[] = [];
  const noiseMedian = finiteMedian([...frameNoise]);
  // Each frame's typical structure ratio over the field (LOCAL_ARTEFACT_FACTOR).
  const tileMedianE = Array.from({ length: tiles }, (_, t) => finiteMedian(m.map((row) => row[t]!.structure)));
  const typicalRatio = m.map((row) => finiteMedian(row.map((c, t) => (tileMedianE[t]! > 0 ? c.structure / tileMedianE[t]! : NaN))));
  for (let t = 0; t < tiles; t++) {
    const at = (k: keyof TileMeasure) => m.map((row) => row[t]![k]);
    const starCount = finiteMedian(at('stars'));
    const type: TileType = s.star_min_count > 0 && starCount >= s.star_min_count ? 'STAR' : 'STRUCTURE';
    types.push(type);
    let qt: number[];
    if (type === 'STAR') {
      const fw = at('fwhm');
      const ro = at('roundness');
      const co = at('contrast');
      const zf = robustZ(fw, (s.fwhmFloor ?? Z_FLOOR) * Math.abs(finiteMedian(fw)));
      const zr = robustZ(ro, relFloor(ro));
      const zc = robustZ(co, relFloor(co));
      const w = s.star;
      const pen = s.fwhmPenalty ?? 0;
      const fwMedian = finiteMedian(fw.filter((x) => x > 0));
      const dead = s.fwhmDeadband ?? 0;
      const shrink = (x: number) => Math.sign(x) * Math.max(0, Math.abs(x) - dead);
      const fwhmTerm = (f: number) => (pen > 0 ? (fw[f]! > 0 ? -pen * shrink(Math.log(fw[f]! / fwMedian)) : NaN) : w.fwhm * -zf[f]!);
      qt = m.map((row, f) => (row[t]!.stars > 0 && Number.isFinite(fwhmTerm(f)) ? fwhmTerm(f) + w.roundness * (Number.isFinite(zr[f]!) ? zr[f]! : 0) + w.contrast * (Number.isFinite(zc[f]!) ? zc[f]! : 0) : lo));
    } else {
      const raw = at('structure');
      const eMedian = finiteMedian(raw);
      const artefact = (x: number, f: number) => Number.isFinite(eMedian) && eMedian > 0 && (x > ARTEFACT_FACTOR * eMedian || (typicalRatio[f]! > 0 && x > LOCAL_ARTEFACT_FACTOR * typicalRatio[f]! * eMedian));
      const e = raw.map((x, f) => (artefact(x, f) ? NaN : x));
      const b = at('background');
      const ze = robustZ(e, relFloor(e));
      // A tile's sky is a mean over thousands of samples: a quarter of the pixel noise is a real difference.
      const zb = robustZ(b, Number.isFinite(noiseMedian) ? 0.25 * noiseMedian : 0);
      const w = s.structure;
      qt = m.map((_, f) => (Number.isFinite(ze[f]!) && Number.isFinite(zb[f]!) ? w.metric_weight * ze[f]! - w.background_weight * zb[f]! : lo));
    }
    for (let f = 0; f < n; f++) {
      q[f * tiles + t] = qt[f]!;
      l[f * tiles + t] = Math.exp(clip(qt[f]!, lo, hi));
    }
  }
  return { types, q, l };
}

export interface TileTable {
  /** frames × tiles normalised weights (each tile's column sums to 1). */
  table: Float32Array;
  /** Per tile: D_t = Σ_f W_ft and N_eff. */
  weightSum: number[];
  nEff: number[];
}

/** W = G·L normalised per tile. `l` null: global weights only (L = 1). */
export function tileTable(g: readonly number[], l: Float64Array | null, tiles: number): TileTable {
  const n = g.length;
  const table = new Float32Array(n * tiles);
  const weightSum: number[] = [];
  const nEff: number[] = [];
  for (let t = 0; t < tiles; t++) {
    let s = 0;
    let s2 = 0;
    for (let f = 0; f < n; f++) {
      const w = g[f]! * (l ? l[f * tiles + t]! : 1);
      s += w;
      s2 += w * w;
    }
    for (let f = 0; f < n; f++) table[f * tiles + t] = (g[f]! * (l ? l[f * tiles + t]! : 1)) / s;
    weightSum.push(s);
    nEff.push(s2 > 0 ? (s * s) / s2 : 0);
  }
  return { table, weightSum, nEff };
}
