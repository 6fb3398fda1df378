// TypeScript reference for shaders/stats/tile_metrics.wgsl: per rectangle of one plane, the
// sums the tiled workflow's STRUCTURE measure is made of (docs/tiled-workflow.md "Local metrics").
// For every pixel p = (x, y) of the rectangle whose neighbours (x + s, y) and (x, y + s) are also
// inside it (s = `step`: 1 for mono, 2 on a Bayer mosaic so that only sites of one colour are
// differenced) and all three are finite:
//   count += 1;  sum += I(p);  energy += ((I(x+s, y) − I(p))² + (I(x, y+s) − I(p))²) / 2.
// Output per rectangle r: [count, mean = sum/count, E = energy/count] (NaN mean and E when
// count = 0). For white noise of variance σ², E = 2σ²: E/σ² measures structure (sharp stars,
// nebula edges) relative to the noise and does not reward noise itself.
// Rectangles are clipped to the plane by the caller. Sums in f64 here, f32 partial sums per
// invocation and workgroup on the device.

export interface TileMetricsParams {
  width: number;
  height: number;
  step: 1 | 2;
  /** Rectangles as [x, y, w, h] quadruples. */
  rects: Int32Array;
}

export const TILE_METRICS_FIELDS = 3;

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
      }
    }
    out[3 * r] = count;
    out[3 * r + 1] = count > 0 ? sum / count : NaN;
    out[3 * r + 2] = count > 0 ? energy / count : NaN;
  }
  return out;
}
