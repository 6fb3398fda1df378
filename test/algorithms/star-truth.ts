// Test helpers for star detection: truth stars in a frame's pixel coordinates with their
// expected peak (ADU), nearest-neighbour matching of detections to the truth, and small stats.
// Written from docs/fixtures.md (no generator internals), so the tests check pixels against the
// truth rather than the generator against itself.

import type { Truth, TruthFrame } from '../../fixtures/generator/index.js';
import type { Star } from '../../src/algorithms/stars.js';

export interface FrameStar {
  id: number;
  x: number;
  y: number;
  /** Expected brightest pixel of the star alone in this frame (ADU above the sky). */
  peakAdu: number;
  /** Total electrons over all channels (one nominal light, transparency 1). */
  flux: number;
  saturated: boolean;
}

export function mapPoint(m: TruthFrame['transform'], x: number, y: number): [number, number] {
  return [m[0][0] * x + m[0][1] * y + m[0][2], m[1][0] * x + m[1][1] * y + m[1][2]];
}

/** Vignetting part of the optical flat (dust ignored: ≤ 12 % in small rings). */
export function vignetting(truth: Truth, x: number, y: number): number {
  if (!truth.optics.enabled) return 1;
  const v = truth.optics.vignetting;
  const rho = Math.hypot(x - v.axis_x, y - v.axis_y);
  return (1 + (rho / v.r0_px) ** 2) ** -2;
}

/**
 * Truth stars of one frame. The expected peak scales the reference frame's `peak_e` by the
 * frame's transparency, the PSF's peak ∝ FWHM⁻², and the vignetting (the sub-pixel phase moves it
 * by ~±10 %, which the callers' margins absorb).
 */
export function frameStars(truth: Truth, frameIndex: number): FrameStar[] {
  const frame = truth.frames[frameIndex]!;
  const ref = truth.frames[0]!;
  const gain = truth.sensor.gain_e_per_adu;
  return truth.stars.map((s) => {
    const [x, y] = mapPoint(frame.transform, s.x, s.y);
    const flux = Object.values(s.flux_e).reduce((a, b) => a + b, 0);
    const peakE = s.peak_e * frame.transparency * (ref.fwhm_px / frame.fwhm_px) ** 2 * vignetting(truth, x, y);
    return { id: s.id, x, y, peakAdu: peakE / gain, flux, saturated: s.saturated };
  });
}

/** Spatial index over points for nearest-neighbour queries. */
export class PointIndex<T extends { x: number; y: number }> {
  private readonly cells = new Map<string, T[]>();
  constructor(
    points: readonly T[],
    private readonly cell = 8,
  ) {
    for (const p of points) {
      const k = `${Math.floor(p.x / cell)},${Math.floor(p.y / cell)}`;
      const list = this.cells.get(k);
      if (list) list.push(p);
      else this.cells.set(k, [p]);
    }
  }
  /** Points within `r` of (x, y), nearest first. */
  within(x: number, y: number, r: number): { p: T; d: number }[] {
    const out: { p: T; d: number }[] = [];
    const c = this.cell;
    for (let gy = Math.floor((y - r) / c); gy <= Math.floor((y + r) / c); gy++) {
      for (let gx = Math.floor((x - r) / c); gx <= Math.floor((x + r) / c); gx++) {
        for (const p of this.cells.get(`${gx},${gy}`) ?? []) {
          const d = Math.hypot(p.x - x, p.y - y);
          if (d <= r) out.push({ p, d });
        }
      }
    }
    return out.sort((a, b) => a.d - b.d);
  }
  nearest(x: number, y: number, r: number): { p: T; d: number } | null {
    return this.within(x, y, r)[0] ?? null;
  }
}

export function median(values: number[]): number {
  const v = values.filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const n = v.length;
  if (n === 0) return NaN;
  return n % 2 ? v[n >> 1]! : (v[n / 2 - 1]! + v[n / 2]!) / 2;
}

export function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

/** Detections with no truth star within `radius`: false detections. */
export function falseDetections(stars: readonly Star[], truthIndex: PointIndex<FrameStar>, radius: number): Star[] {
  return stars.filter((s) => truthIndex.nearest(s.x, s.y, radius) === null);
}
