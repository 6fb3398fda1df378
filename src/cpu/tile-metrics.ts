// TypeScript reference for shaders/stats/tile_metrics.wgsl: per rectangle of one plane, the
// sums the tiled workflow's STRUCTURE measure is made of (docs/tiled-workflow.md "Local metrics").
// For every pixel p = (x, y) of the rectangle whose neighbours (x + s, y) and (x, y + s) are also
// inside it (s = `step`: 1 for mono, 2 on a Bayer mosaic so that only sites of one colour are
// differenced) and all three are finite:
//   count += 1;  sum += I(p);  energy += ((I(x+s, y) − I(p))² + (I(x, y+s) − I(p))²) / 2;
//   and when I(p) ≤ bgCut (sky, not stars): bgCount += 1; bgSum += I(p).
// Output per rectangle r: [count, mean = sum/count, E = energy/count, bgCount,
// background = bgSum/bgCount] (NaN means when their count is 0). For white noise of variance
// σ², E = 2σ²: E/σ² measures structure (sharp stars, nebula edges) relative to the noise and
// does not reward noise itself. The caller sets bgCut to the frame's sky + 3σ, so the
// background is the tile's sky without its stars.
// Rectangles are clipped to the plane by the caller. Sums in f64 here, f32 partial sums per
// invocation and workgroup on the device.

export interface TileMetricsParams {
  width: number;
  height: number;
  step: 1 | 2;
  /** Rectangles as [x, y, w, h] quadruples. */
  rects: Int32Array;
  /** Samples at or below this count as sky for the background. */
  bgCut: number;
}

export const TILE_METRICS_FIELDS = 5;

export function tileMetrics(plane: Float32Array, p: TileMetricsParams): Float64Array {
  const { width: W, step: s, rects } = p;
  const n = rects.length / 4;
  const out = new Float64Array(TILE_METRICS_FIELDS * n);
  for (let r = 0; r < n; r++) {
    const x0 = rects[4 * r]!;
    const y0 = rects[4 * r + 1]!;
    const x1 = x0 + rects[4 * r + 2]! - s;
    const y1 = y0 + rects[4 * r + 3]! - s;
    let count = 0;
    let sum = 0;
    let energy = 0;
    let bgCount = 0;
    let bgSum = 0;
    const cut = Math.fround(p.bgCut);
    for (let y = y0; y < y1; y++) {
      const row = y * W;
      for (let x = x0; x < x1; x++) {
        const v = plane[row + x]!;
        const dx = plane[row + x + s]! - v;
        const dy = plane[row + s * W + x]! - v;
        if (!(Number.isFinite(v) && Number.isFinite(dx) && Number.isFinite(dy))) continue;
        count++;
        sum += v;
        energy += 0.5 * (dx * dx + dy * dy);
        if (v <= cut) {
          bgCount++;
          bgSum += v;
        }
      }
    }
    const o = TILE_METRICS_FIELDS * r;
    out[o] = count;
    out[o + 1] = count > 0 ? sum / count : NaN;
    out[o + 2] = count > 0 ? energy / count : NaN;
    out[o + 3] = bgCount;
    out[o + 4] = bgCount > 0 ? bgSum / bgCount : NaN;
  }
  return out;
}
