// Small synthetic sky images for the local-normalization and rejection tests: point-sampled
// Moffat (β = 3) stars with a per-position FWHM, any background function, a transmission
// function, seeded Gaussian noise. Independent of the fixture generator (which renders whole
// FITS sessions), so these tests can build exactly the case they need in memory.

import { seededRandom } from './tmp.js';

export interface SkyStar {
  x: number;
  y: number;
  /** Total flux (ADU). */
  flux: number;
}

export interface SceneOptions {
  width: number;
  height: number;
  stars: readonly SkyStar[];
  /** FWHM (px) of a star centred at (x, y). */
  fwhm: (x: number, y: number) => number;
  background: (x: number, y: number) => number;
  /** Multiplies the star light at (x, y) (transparency, vignetting); default 1. */
  transmission?: (x: number, y: number) => number;
  /** Gaussian noise σ (ADU) and its seed; 0 for none. */
  noise: number;
  seed: number;
}

/** Normal deviates from a seeded uniform source (Box–Muller). */
export function gaussian(rnd: () => number): () => number {
  let spare: number | null = null;
  return () => {
    if (spare !== null) {
      const s = spare;
      spare = null;
      return s;
    }
    const u = Math.max(rnd(), 1e-300);
    const v = rnd();
    const r = Math.sqrt(-2 * Math.log(u));
    spare = r * Math.sin(2 * Math.PI * v);
    return r * Math.cos(2 * Math.PI * v);
  };
}

/** Moffat β = 3 profile normalised to unit flux, at distance² d2 for FWHM f. */
export function moffat(d2: number, fwhm: number): number {
  const alpha = fwhm / (2 * Math.sqrt(2 ** (1 / 3) - 1));
  const t = 1 + d2 / (alpha * alpha);
  return 2 / (Math.PI * alpha * alpha) / (t * t * t);
}

export function renderScene(o: SceneOptions): Float32Array {
  const { width: W, height: H } = o;
  const img = new Float32Array(W * H);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) img[y * W + x] = o.background(x, y);
  for (const s of o.stars) {
    const f = o.fwhm(s.x, s.y);
    const t = o.transmission ? o.transmission(s.x, s.y) : 1;
    const r = Math.ceil(8 * f);
    for (let y = Math.max(0, Math.floor(s.y - r)); y <= Math.min(H - 1, Math.ceil(s.y + r)); y++) {
      for (let x = Math.max(0, Math.floor(s.x - r)); x <= Math.min(W - 1, Math.ceil(s.x + r)); x++) {
        img[y * W + x] = img[y * W + x]! + s.flux * t * moffat((x - s.x) ** 2 + (y - s.y) ** 2, f);
      }
    }
  }
  if (o.noise > 0) {
    const g = gaussian(seededRandom(o.seed));
    for (let i = 0; i < img.length; i++) img[i] = img[i]! + o.noise * g();
  }
  return img;
}

/** Random stars over the image (seeded): fluxes log-uniform in [fMin, fMax]. */
export function randomStars(n: number, width: number, height: number, fMin: number, fMax: number, seed: number): SkyStar[] {
  const rnd = seededRandom(seed);
  return Array.from({ length: n }, () => ({ x: rnd() * (width - 1), y: rnd() * (height - 1), flux: fMin * Math.exp(rnd() * Math.log(fMax / fMin)) }));
}

/**
 * Random stars with a sky-like brightness distribution (seeded): N(> F) ∝ F^−0.875, i.e. star
 * counts rising by 10^0.35 per magnitude as in the fixture generator's catalogue, between fMin
 * and fMax (many faint stars, few bright ones).
 */
export function skyLikeStars(n: number, width: number, height: number, fMin: number, fMax: number, seed: number): SkyStar[] {
  const rnd = seededRandom(seed);
  const out: SkyStar[] = [];
  while (out.length < n) {
    const x = rnd() * (width - 1);
    const y = rnd() * (height - 1);
    const flux = fMin * Math.max(rnd(), 1e-12) ** (-1 / 0.875);
    if (flux <= fMax) out.push({ x, y, flux });
  }
  return out;
}
