// The checks of a tiled stack (validation.json; docs/tiled-workflow.md "Validation"), pure
// functions of the stacked luminance and the tile grid:
// - FWHM: the stack's median star FWHM (star detection and frame metrics as for the frames)
//   against the seeing the grid was sized from: improvement = (F_seeing − F_out)/F_seeing · 100.
//   Saturated stars are left out as the frames' metrics leave them out: their flat-topped cores
//   measure wide (a clipped Orion field read +20 % over the frames' seeing with them), and the
//   stack has no plateau left to find them by after flats and normalization, so the level comes
//   from the reference frame's header (the calibrated SATURATE), with a margin (STACK_SATURATION_MARGIN).
// - Seams: for every interior tile boundary line (a tile's first column or row, and the one
//   after its last), the median |difference across the line| over the mean of the same at the
//   lines SEAM_OFFSET px either side (medians along the line, so stars crossing it do not count);
//   1 where the boundary is like its neighbourhood. Checked pooled over all boundary lines (one
//   line's median scatters by ~10 % on a small image); the maximum and 95th percentile over the
//   lines are reported beside it.
// No-data pixels (NaN) are left out of every mean; star detection sees them as the median.

import { frameMetrics } from '../../algorithms/frame-metrics.js';
import { medianInPlaceF32 } from '../../algorithms/robust-stats.js';
import { detectStars } from '../../algorithms/stars.js';
import type { TileGrid } from './tile-grid.js';

/** Even, so a line is compared with lines of its own parity (a debayered image alternates by column and row parity). */
export const SEAM_OFFSET = 4;

/** Median |I(p) − I(p − step)| along the line at `pos` (axis x: a column; y: a row), NaN-free pairs only (stars crossing the line do not count). */
function lineGradient(img: Float32Array, W: number, H: number, axis: 'x' | 'y', pos: number): number {
  const len = axis === 'x' ? H : W;
  // f64, as the differences of two f32 samples are exact there; a typed array's numeric sort is
  // ~10x a number[] sorted with a comparator, with the same order.
  const buf = new Float64Array(len);
  let n = 0;
  for (let i = 0; i < len; i++) {
    const a = axis === 'x' ? img[i * W + pos]! : img[pos * W + i]!;
    const b = axis === 'x' ? img[i * W + pos - 1]! : img[(pos - 1) * W + i]!;
    const v = Math.abs(a - b);
    if (Number.isFinite(v)) buf[n++] = v;
  }
  const d = buf.subarray(0, n).sort();
  return n ? d[n >> 1]! : NaN;
}

export interface SeamScore {
  lines: number;
  /** Σ over the boundary lines of their value over Σ of the lines beside them: the check. */
  pooled: number;
  /** Per line (noisy on small images: a line's median has a few % of scatter). */
  max: number;
  p95: number;
}

export function seamScore(img: Float32Array, W: number, H: number, g: TileGrid): SeamScore {
  const ratios: number[] = [];
  let atSum = 0;
  let besideSum = 0;
  const lines = (origins: number[], size: number, n: number) => [...new Set(origins.flatMap((o) => [o, o + size]))].filter((p) => p - SEAM_OFFSET >= 1 && p + SEAM_OFFSET < n);
  for (const [axis, origins, size, n] of [['x', g.originsX, g.sizeX, W], ['y', g.originsY, g.sizeY, H]] as const) {
    for (const p of lines(origins, size, n)) {
      const at = lineGradient(img, W, H, axis, p);
      const beside = 0.5 * (lineGradient(img, W, H, axis, p - SEAM_OFFSET) + lineGradient(img, W, H, axis, p + SEAM_OFFSET));
      if (Number.isFinite(at) && beside > 0) {
        ratios.push(at / beside);
        atSum += at;
        besideSum += beside;
      }
    }
  }
  ratios.sort((a, b) => a - b);
  return { lines: ratios.length, pooled: besideSum > 0 ? atSum / besideSum : NaN, max: ratios.length ? ratios[ratios.length - 1]! : NaN, p95: ratios.length ? ratios[Math.min(ratios.length - 1, Math.floor(0.95 * ratios.length))]! : NaN };
}

/**
 * The share of the reference's saturation level above which a stacked star counts as saturated:
 * registration's interpolation and the frames' normalization move a clipped core by a few per
 * cent, so a star that reaches 90 % of the level is not measured.
 */
export const STACK_SATURATION_MARGIN = 0.9;

/**
 * Median star FWHM of a plane (NaN pixels as the plane's median), NaN when no star is measured.
 * `saturationLevel`: stars reaching it are saturated (left out of the FWHM as in the frames'
 * metrics); without it the detector looks for a plateau.
 */
export function imageFwhm(img: Float32Array, W: number, H: number, saturationLevel?: number): { fwhm: number; stars: number } {
  // The fill for no-data pixels, by selection (sorting a whole frame's values took ~0.3 s, six
  // times the star detection itself), and only when there are any; plain loops, as a typed
  // array's filter and map with a callback took ~0.18 s on 768x576.
  let nan = 0;
  for (let i = 0; i < img.length; i++) if (!Number.isFinite(img[i]!)) nan++;
  const plane = img.slice();
  if (nan > 0) {
    const finite = new Float32Array(img.length - nan);
    let k = 0;
    for (let i = 0; i < img.length; i++) if (Number.isFinite(img[i]!)) finite[k++] = img[i]!;
    const med = finite.length ? medianInPlaceF32(finite) : 0;
    for (let i = 0; i < plane.length; i++) if (!Number.isFinite(plane[i]!)) plane[i] = med;
  }
  const det = detectStars(plane, W, H, saturationLevel !== undefined && saturationLevel > 0 ? { saturationLevel } : {});
  if (!det.ok) return { fwhm: NaN, stars: 0 };
  return { fwhm: frameMetrics(det).fwhm, stars: det.stars.length };
}

/** The luminance of a planar image: the plane itself, or the mean of R, G, B. */
export function luminance(data: Float32Array, W: number, H: number, planes: number): Float32Array {
  if (planes === 1) return data.subarray(0, W * H);
  const out = new Float32Array(W * H);
  for (let i = 0; i < W * H; i++) out[i] = (data[i]! + data[W * H + i]! + data[2 * W * H + i]!) / 3;
  return out;
}
