// TypeScript reference for shaders/stats/tile_metrics.wgsl: per rectangle of one plane, what the
// tiled workflow's STRUCTURE measure is made of (docs/tiled-workflow.md "Weights").
// For every pixel p = (x, y) of the rectangle whose neighbours (x + s, y) and (x, y + s) are also
// inside it (s = `step`: 1 for mono, 2 on a Bayer mosaic so that only sites of one colour are
// differenced) and all three are finite:
//   count += 1;  sum += I(p);  e(p) = ((I(x+s, y) − I(p))² + (I(x, y+s) − I(p))²) / 2 goes into
//   the rectangle's histogram; and when I(p) ≤ bgCut (sky, not stars): bgCount += 1; bgSum += I(p).
// E is the `quantile` of e over the rectangle, read from that histogram, not the mean of e: a hot
// pixel, cosmic ray or short trail moves only the few samples it covers, so it cannot dominate E
// unless it covers more than (1 − quantile) of the rectangle (STRUCTURE_QUANTILE says why 0.9).
// Histogram (the kernel's exact contract, so the two agree to rounding): v = f32(e · f32(1/unit))
// (unit: the frame's σ², so the bins sit at fixed multiples of the noise); bin = the top bits of
// v's f32 pattern, i.e. its octave and SUB_LOG2 bits of mantissa (2^SUB_LOG2 bins per octave,
// linear inside an octave), counted from 2^LOG2_MIN, clamped to [0, BINS − 1] (zero and anything
// below 2^LOG2_MIN land in bin 0, whose lower edge is 0; anything above the range in the top bin,
// so E saturates at 2^(LOG2_MIN + BINS/2^SUB_LOG2)·unit). With t = f32(quantile · count), E is
// inside the first bin b whose cumulative count exceeds t, linearly interpolated between its
// edges: lo_b + (t − before_b)/count_b · (hi_b − lo_b), divided by f32(1/unit).
// For white noise of variance σ², e/σ² = 1.5·z₁² + 0.5·z₂² (z standard normal; the two
// differences share I(p)), whose mean is 2 and 90th percentile ≈ 4.74, whatever σ: E/σ² measures
// structure relative to the noise and does not reward noise itself.
// Output per rectangle r: [count, mean = sum/count, E, bgCount, background = bgSum/bgCount]
// (NaN when its count is 0). The caller sets bgCut to the frame's sky + 3σ, so the background is
// the tile's sky without its stars. Rectangles are clipped to the plane by the caller. e in f32
// like the kernel; sums and the interpolation in f64 here, f32 on the device.

export interface TileMetricsParams {
  width: number;
  height: number;
  step: 1 | 2;
  /** Rectangles as [x, y, w, h] quadruples. */
  rects: Int32Array;
  /** Samples at or below this count as sky for the background. */
  bgCut: number;
  /** The unit of the histogram's range (the frame's σ²); not finite or ≤ 0: 1. */
  unit?: number;
  /** Which quantile of e is E; default STRUCTURE_QUANTILE. */
  quantile?: number;
}

export const TILE_METRICS_FIELDS = 5;

/**
 * The quantile of e that E is. The median of e is noise wherever structure covers under half of
 * the tile (e/σ² ≈ 1.39 in every frame: no ranking left), so E must sit high; but it must stay
 * below 1 − (the share of the tile an artefact covers): a 64-px trail 3 px wide covers 5 % of a
 * 64×64 tile, a hot pixel or cosmic ray well under 1 %. At 0.9 both leave E within a bin or two
 * of the clean frame's, and on extended structure (nebulosity, a dense faint star field) E still
 * falls with the seeing (test/pipeline/tiled-method.test.ts measures both).
 */
export const STRUCTURE_QUANTILE = 0.9;

/** Histogram shape, the kernel's override constants: 2^3 bins per octave, 32 octaves from 2^−10·unit. */
export const HIST = { BINS: 256, SUB_LOG2: 3, LOG2_MIN: -10 } as const;

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);
const fr = Math.fround;

/** The histogram bin of v ≥ 0 (f32): its octave and top mantissa bits, from 2^LOG2_MIN. */
export function histBin(v: number): number {
  if (!(v > 0)) return 0;
  f32[0] = v;
  const b = (u32[0]! >>> (23 - HIST.SUB_LOG2)) - ((127 + HIST.LOG2_MIN) << HIST.SUB_LOG2);
  return Math.min(HIST.BINS - 1, Math.max(0, b));
}

/** The lower edge of bin b (bin 0: 0). */
export function histEdge(b: number): number {
  if (b <= 0) return 0;
  u32[0] = (b + ((127 + HIST.LOG2_MIN) << HIST.SUB_LOG2)) << (23 - HIST.SUB_LOG2);
  return f32[0]!;
}

/** The quantile of a histogram with `n` samples (NaN when empty), in bin-edge units. */
export function histQuantile(hist: Uint32Array, n: number, quantile: number): number {
  if (n === 0) return NaN;
  const t = fr(fr(quantile) * n);
  let before = 0;
  for (let b = 0; b < hist.length; b++) {
    const c = hist[b]!;
    if (before + c > t) {
      const lo = histEdge(b);
      return lo + ((t - before) / c) * (histEdge(b + 1) - lo);
    }
    before += c;
  }
  return histEdge(hist.length);
}

export function tileMetrics(plane: Float32Array, p: TileMetricsParams): Float64Array {
  const { width: W, step: s, rects } = p;
  const n = rects.length / 4;
  const out = new Float64Array(TILE_METRICS_FIELDS * n);
  const unit = p.unit !== undefined && Number.isFinite(p.unit) && p.unit > 0 ? p.unit : 1;
  const inv = fr(1 / unit);
  const q = p.quantile ?? STRUCTURE_QUANTILE;
  const hist = new Uint32Array(HIST.BINS);
  for (let r = 0; r < n; r++) {
    const x0 = rects[4 * r]!;
    const y0 = rects[4 * r + 1]!;
    const x1 = x0 + rects[4 * r + 2]! - s;
    const y1 = y0 + rects[4 * r + 3]! - s;
    let count = 0;
    let sum = 0;
    let bgCount = 0;
    let bgSum = 0;
    hist.fill(0);
    const cut = fr(p.bgCut);
    for (let y = y0; y < y1; y++) {
      const row = y * W;
      for (let x = x0; x < x1; x++) {
        const v = plane[row + x]!;
        const dx = fr(plane[row + x + s]! - v);
        const dy = fr(plane[row + s * W + x]! - v);
        if (!(Number.isFinite(v) && Number.isFinite(dx) && Number.isFinite(dy))) continue;
        count++;
        sum += v;
        const e = fr(0.5 * fr(fr(dx * dx) + fr(dy * dy)));
        hist[histBin(fr(e * inv))]!++;
        if (v <= cut) {
          bgCount++;
          bgSum += v;
        }
      }
    }
    const o = TILE_METRICS_FIELDS * r;
    out[o] = count;
    out[o + 1] = count > 0 ? sum / count : NaN;
    out[o + 2] = count > 0 ? histQuantile(hist, count, q) / inv : NaN;
    out[o + 3] = bgCount;
    out[o + 4] = bgCount > 0 ? bgSum / bgCount : NaN;
  }
  return out;
}
