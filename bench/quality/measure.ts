// Measurements of a stacked plane against the generator's truth, for the stacking-quality bench:
// per-region FWHM (Moffat fits of isolated, unsaturated stars), background noise (robust σ in
// star-free 32 × 32 blocks, over the field and in its corners), photometric scatter (aperture
// photometry against the truth fluxes, zero point removed), the residual of the satellite
// trails along their centre lines and of the cosmic-ray hits. Positions come from the truth:
// a reference-grid star (x, y) lies at transform_ref(x, y) in the stack (the pipeline stacks in
// its reference frame's pixel grid).

import type { Truth, TruthFrame } from '../../fixtures/generator/index.js';
import { applyAffine, invertAffine } from '../../fixtures/generator/index.js';
import { MoffatFitter } from '../../src/algorithms/moffat-fit.js';
import { MAD_TO_SIGMA, medianInPlace } from '../../src/algorithms/robust-stats.js';

export interface RefStar {
  id: number;
  x: number;
  y: number;
  mag: number;
  /** Electrons in the measured channel in one nominal light (truth flux_e). */
  flux: number;
  usable: boolean;
}

const median = (v: number[]) => (v.length ? medianInPlace(Float64Array.from(v)) : NaN);
const robustSigma = (v: number[]) => {
  const m = median(v);
  return median(v.map((x) => Math.abs(x - m))) * MAD_TO_SIGMA;
};

/** Truth stars in the stack's pixel grid; `usable`: isolated, unsaturated, inside, bright enough. */
export function referenceStars(truth: Truth, refIndex: number, channel: string, W: number, H: number, minFlux: number): RefStar[] {
  const t = truth.frames[refIndex]!.transform;
  const sat = truth.sensor.saturation_e;
  const all = truth.stars.map((s) => {
    const [x, y] = applyAffine(t, s.x, s.y);
    return { id: s.id, x, y, mag: s.mag, flux: s.flux_e[channel]!, peak: s.peak_e, saturated: s.saturated };
  });
  return all.map((s) => {
    const inside = s.x > 30 && s.y > 30 && s.x < W - 31 && s.y < H - 31;
    // The sharpest frames put up to ~2× the reference's peak into a pixel.
    const unsaturated = !s.saturated && 2 * s.peak < 0.6 * sat;
    const isolated = all.every((o) => o.id === s.id || Math.hypot(o.x - s.x, o.y - s.y) > 24 || o.flux < 0.02 * s.flux);
    return { id: s.id, x: s.x, y: s.y, mag: s.mag, flux: s.flux, usable: inside && unsaturated && isolated && s.flux >= minFlux };
  });
}

export interface Region {
  name: string;
  contains: (x: number, y: number) => boolean;
}

/** Left and right thirds, the soft patch (within its σ), and the rest. */
export function regions(truth: Truth, W: number): Region[] {
  const patch = truth.options.seeing?.patches[0] ?? null;
  const inPatch = (x: number, y: number) => (patch ? Math.hypot(x - patch.x, y - patch.y) < patch.sigma_px : false);
  return [
    { name: 'left', contains: (x, y) => x < W / 3 && !inPatch(x, y) },
    { name: 'centre', contains: (x, y) => x >= W / 3 && x <= (2 * W) / 3 && !inPatch(x, y) },
    { name: 'right', contains: (x, y) => x > (2 * W) / 3 && !inPatch(x, y) },
    ...(patch ? [{ name: 'patch', contains: inPatch }] : []),
  ];
}

function annulusMedian(img: Float32Array, W: number, H: number, x: number, y: number, r0: number, r1: number): number {
  const v: number[] = [];
  for (let py = Math.floor(y - r1); py <= Math.ceil(y + r1); py++) {
    for (let px = Math.floor(x - r1); px <= Math.ceil(x + r1); px++) {
      if (px < 0 || py < 0 || px >= W || py >= H) continue;
      const d = Math.hypot(px - x, py - y);
      const val = img[py * W + px]!;
      if (d >= r0 && d < r1 && val === val) v.push(val);
    }
  }
  return median(v);
}

const fitter = new MoffatFitter();

/** FWHM (px, mean of the axes) of each usable star, NaN where the fit fails. */
export function starFwhm(img: Float32Array, W: number, H: number, stars: RefStar[]): Map<number, number> {
  const out = new Map<number, number>();
  const half = 10;
  const size = 2 * half + 1;
  for (const s of stars) {
    if (!s.usable) continue;
    const bg = annulusMedian(img, W, H, s.x, s.y, 14, 22);
    const x0 = Math.round(s.x) - half;
    const y0 = Math.round(s.y) - half;
    const values = new Float64Array(size * size);
    for (let j = 0; j < size; j++) for (let i = 0; i < size; i++) values[j * size + i] = img[(y0 + j) * W + x0 + i]! - bg;
    const m = (2.7 / 2.3548) ** 2;
    const fit = fitter.fit({ values, size, x0, y0 }, { x: s.x, y: s.y, amplitude: Math.max(values[half * size + half]!, 1e-6), mxx: m, myy: m, mxy: 0 });
    out.set(s.id, fit.ok ? (fit.fwhmMajor + fit.fwhmMinor) / 2 : NaN);
  }
  return out;
}

/** Aperture flux (radius 12 px, sky: annulus median 18–26 px) of each usable star. */
export function starFlux(img: Float32Array, W: number, H: number, stars: RefStar[]): Map<number, number> {
  const out = new Map<number, number>();
  const r = 12;
  for (const s of stars) {
    if (!s.usable) continue;
    const bg = annulusMedian(img, W, H, s.x, s.y, 18, 26);
    let sum = 0;
    let bad = false;
    for (let py = Math.floor(s.y - r); py <= Math.ceil(s.y + r); py++) {
      for (let px = Math.floor(s.x - r); px <= Math.ceil(s.x + r); px++) {
        if (Math.hypot(px - s.x, py - s.y) >= r) continue;
        const v = img[py * W + px]!;
        if (v !== v) bad = true;
        sum += v - bg;
      }
    }
    out.set(s.id, bad ? NaN : sum);
  }
  return out;
}

/** Robust scatter (mag) of −2.5·log10(measured / truth flux) about its median, and the stars used. */
export function photometricScatter(flux: Map<number, number>, stars: RefStar[]): { scatter: number; n: number } {
  const d: number[] = [];
  for (const s of stars) {
    const f = flux.get(s.id);
    if (f === undefined || !(f > 0)) continue;
    d.push(-2.5 * Math.log10(f / s.flux));
  }
  return { scatter: robustSigma(d), n: d.length };
}

/** Mask of pixels near stars (radius growing with brightness), trails and the frame borders. */
export function skyMask(W: number, H: number, stars: RefStar[], trails: [number, number, number, number][], count: Uint32Array, minCount: number): Uint8Array {
  const m = new Uint8Array(W * H);
  for (const s of stars) {
    const r = Math.min(48, 5 + 3 * Math.max(0, 17.5 - s.mag));
    for (let y = Math.max(0, Math.floor(s.y - r)); y <= Math.min(H - 1, Math.ceil(s.y + r)); y++) {
      for (let x = Math.max(0, Math.floor(s.x - r)); x <= Math.min(W - 1, Math.ceil(s.x + r)); x++) if ((x - s.x) ** 2 + (y - s.y) ** 2 <= r * r) m[y * W + x] = 1;
    }
  }
  for (const [x0, y0, x1, y1] of trails) {
    const len = Math.hypot(x1 - x0, y1 - y0);
    for (let t = 0; t <= len; t += 0.5) {
      const cx = x0 + ((x1 - x0) * t) / len;
      const cy = y0 + ((y1 - y0) * t) / len;
      for (let y = Math.max(0, Math.floor(cy - 12)); y <= Math.min(H - 1, Math.ceil(cy + 12)); y++) for (let x = Math.max(0, Math.floor(cx - 12)); x <= Math.min(W - 1, Math.ceil(cx + 12)); x++) m[y * W + x] = 1;
    }
  }
  for (let i = 0; i < W * H; i++) if (count[i]! < minCount) m[i] = 1;
  return m;
}

/**
 * Robust background σ: median over star-free 32 × 32 blocks (whole field, and corner blocks) of
 * the blocks' robust σ about a least-squares plane (a block's gradient is not noise: the stacks
 * compared here differ in their large-scale background).
 */
export function backgroundNoise(img: Float32Array, W: number, H: number, mask: Uint8Array): { all: number; corners: number } {
  const all: number[] = [];
  const corners: number[] = [];
  for (let by = 0; by + 32 <= H; by += 32) {
    for (let bx = 0; bx + 32 <= W; bx += 32) {
      const xs: number[] = [];
      const ys: number[] = [];
      const vs: number[] = [];
      for (let y = by; y < by + 32; y++) {
        for (let x = bx; x < bx + 32; x++) {
          const v = img[y * W + x]!;
          if (mask[y * W + x] || v !== v) continue;
          xs.push(x - bx - 15.5);
          ys.push(y - by - 15.5);
          vs.push(v);
        }
      }
      if (vs.length < 400) continue;
      // Plane through the block (sums about the block centre), then the residuals' robust σ.
      let sxx = 0;
      let syy = 0;
      let sxy = 0;
      let sx = 0;
      let sy = 0;
      let sv = 0;
      let sxv = 0;
      let syv = 0;
      const n = vs.length;
      for (let k = 0; k < n; k++) {
        const x = xs[k]!;
        const y = ys[k]!;
        const v = vs[k]!;
        sx += x;
        sy += y;
        sv += v;
        sxx += x * x;
        syy += y * y;
        sxy += x * y;
        sxv += x * v;
        syv += y * v;
      }
      const mx = sx / n;
      const my = sy / n;
      const mv = sv / n;
      const cxx = sxx / n - mx * mx;
      const cyy = syy / n - my * my;
      const cxy = sxy / n - mx * my;
      const cxv = sxv / n - mx * mv;
      const cyv = syv / n - my * mv;
      const det = cxx * cyy - cxy * cxy;
      const gx = det > 0 ? (cxv * cyy - cyv * cxy) / det : 0;
      const gy = det > 0 ? (cyv * cxx - cxv * cxy) / det : 0;
      const s = robustSigma(vs.map((v, k) => v - mv - gx * (xs[k]! - mx) - gy * (ys[k]! - my)));
      all.push(s);
      const cx = bx + 16;
      const cy = by + 16;
      if ((cx < W / 5 || cx > (4 * W) / 5) && (cy < H / 5 || cy > (4 * H) / 5)) corners.push(s);
    }
  }
  return { all: median(all), corners: median(corners) };
}

/** Trails of the satellite frames among `frames`, in the stack's grid: [x0, y0, x1, y1]. */
export function trailsInReference(truth: Truth, refIndex: number, frames: number[]): [number, number, number, number][] {
  const toRef = truth.frames[refIndex]!.transform;
  return frames
    .map((i) => truth.frames[i]!)
    .filter((f): f is TruthFrame & { satellite: NonNullable<TruthFrame['satellite']> } => f.satellite !== null)
    .map((f) => {
      const back = invertAffine(f.transform);
      const [ax, ay] = applyAffine(toRef, ...applyAffine(back, f.satellite.x0, f.satellite.y0));
      const [bx, by] = applyAffine(toRef, ...applyAffine(back, f.satellite.x1, f.satellite.y1));
      return [ax, ay, bx, by];
    });
}

function bilinear(img: Float32Array, W: number, H: number, x: number, y: number): number {
  const i = Math.floor(x);
  const j = Math.floor(y);
  if (i < 0 || j < 0 || i + 1 >= W || j + 1 >= H) return NaN;
  const tx = x - i;
  const ty = y - j;
  const p = (a: number, b: number) => img[b * W + a]!;
  return (1 - ty) * ((1 - tx) * p(i, j) + tx * p(i + 1, j)) + ty * ((1 - tx) * p(i, j + 1) + tx * p(i + 1, j + 1));
}

/**
 * Mean residual along the trails' centre lines (mean of the line and ±1 px) above the local sky
 * (median of the samples 8–16 px to either side), in units of `sigma`; points near stars or
 * borders skipped. Returns the worst trail's residual and the points measured.
 */
export function trailResidual(img: Float32Array, W: number, H: number, trails: [number, number, number, number][], starMask: Uint8Array, sigma: number): { worst: number; mean: number; points: number } {
  let worst = 0;
  let total = 0;
  let points = 0;
  for (const [x0, y0, x1, y1] of trails) {
    const len = Math.hypot(x1 - x0, y1 - y0);
    const ux = (x1 - x0) / len;
    const uy = (y1 - y0) / len;
    const res: number[] = [];
    for (let t = 0; t <= len; t += 1) {
      const cx = x0 + ux * t;
      const cy = y0 + uy * t;
      if (cx < 20 || cy < 20 || cx > W - 21 || cy > H - 21) continue;
      // Stars near the line (the sky mask minus the trail itself): skip.
      let nearStar = false;
      for (const d of [-16, -8, 0, 8, 16]) {
        const px = Math.round(cx - uy * d);
        const py = Math.round(cy + ux * d);
        if (starMask[py * W + px]) nearStar = true;
      }
      if (nearStar) continue;
      const on = [-1, 0, 1].map((d) => bilinear(img, W, H, cx - uy * d, cy + ux * d));
      const side: number[] = [];
      for (const d of [8, 10, 12, 14, 16]) for (const sgn of [-1, 1]) side.push(bilinear(img, W, H, cx - uy * d * sgn, cy + ux * d * sgn));
      if (on.some((v) => v !== v) || side.some((v) => v !== v)) continue;
      res.push((on[0]! + on[1]! + on[2]!) / 3 - median(side));
    }
    if (res.length === 0) continue;
    const m = res.reduce((a, b) => a + b, 0) / res.length / sigma;
    worst = Math.max(worst, m);
    total += m * res.length;
    points += res.length;
  }
  return { worst, mean: points ? total / points : NaN, points };
}

/** Mean residual at the cosmic-ray hits (the pixel above its 3–6 px annulus), in units of `sigma`. */
export function cosmicResidual(img: Float32Array, W: number, H: number, truth: Truth, refIndex: number, frames: number[], starMask: Uint8Array, sigma: number): { mean: number; hits: number } {
  const toRef = truth.frames[refIndex]!.transform;
  const res: number[] = [];
  for (const i of frames) {
    const f = truth.frames[i]!;
    if (!f.cosmic_rays) continue;
    const back = invertAffine(f.transform);
    for (const [x, y] of f.cosmic_rays) {
      const [rx, ry] = applyAffine(toRef, ...applyAffine(back, x, y));
      const px = Math.round(rx);
      const py = Math.round(ry);
      if (px < 8 || py < 8 || px >= W - 8 || py >= H - 8 || starMask[py * W + px]) continue;
      const v = img[py * W + px]!;
      if (v !== v) continue;
      res.push((v - annulusMedian(img, W, H, px, py, 3, 6)) / sigma);
    }
  }
  return { mean: res.length ? res.reduce((a, b) => a + b, 0) / res.length : NaN, hits: res.length };
}

export { median, robustSigma };

/**
 * The median over a region's stars of a measure in stack c over the same in stack b, star by star, and its standard error
 * from a seeded bootstrap over the stars. Two stacks of the same frames share most of each star's
 * noise, so the paired ratio resolves differences far smaller than the two regions' medians'
 * own scatter; the tiled bench judges "softer" against this error.
 */
export function pairedRatio(c: Map<number, number>, b: Map<number, number>, ids: readonly number[], resamples = 400): { ratio: number; se: number; stars: number } {
  const v: number[] = [];
  for (const id of ids) {
    const x = c.get(id);
    const y = b.get(id);
    if (x !== undefined && y !== undefined && Number.isFinite(x) && Number.isFinite(y) && y > 0) v.push(x / y);
  }
  if (v.length === 0) return { ratio: NaN, se: NaN, stars: 0 };
  let seed = 0x9e3779b9;
  const rand = () => {
    // mulberry32: a fixed sequence, so the same stacks give the same error.
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
  const meds: number[] = [];
  for (let k = 0; k < resamples; k++) meds.push(median(v.map(() => v[Math.floor(rand() * v.length)]!)));
  const mean = meds.reduce((a, x) => a + x, 0) / meds.length;
  const se = Math.sqrt(meds.reduce((a, x) => a + (x - mean) ** 2, 0) / Math.max(1, meds.length - 1));
  return { ratio: median(v), se, stars: v.length };
}

/** Cosmic-ray hits of `frames` in the stack's grid. */
export function cosmicInReference(truth: Truth, refIndex: number, frames: number[]): [number, number][] {
  const toRef = truth.frames[refIndex]!.transform;
  const out: [number, number][] = [];
  for (const i of frames) {
    const f = truth.frames[i]!;
    if (!f.cosmic_rays) continue;
    const back = invertAffine(f.transform);
    for (const [x, y] of f.cosmic_rays) out.push(applyAffine(toRef, ...applyAffine(back, x, y)));
  }
  return out;
}

/**
 * Marks stars unusable for FWHM and photometry when a cosmic-ray hit lies within `rHit` px or a
 * trail within `rTrail` px: the no-rejection stack carries those defects, which would measure
 * the defect, not the rejection's effect on the star.
 */
export function excludeNearDefects(stars: RefStar[], hits: [number, number][], trails: [number, number, number, number][], rHit: number, rTrail: number): void {
  for (const s of stars) {
    if (!s.usable) continue;
    if (hits.some(([x, y]) => Math.abs(x - s.x) < rHit && Math.abs(y - s.y) < rHit && Math.hypot(x - s.x, y - s.y) < rHit)) s.usable = false;
    for (const [x0, y0, x1, y1] of trails) {
      const len = Math.hypot(x1 - x0, y1 - y0);
      const d = Math.abs((x1 - x0) * (y0 - s.y) - (x0 - s.x) * (y1 - y0)) / len;
      if (d < rTrail) s.usable = false;
    }
  }
}
