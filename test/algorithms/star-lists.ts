// Test helpers for registration: star lists derived from a fixture's truth.json (truth star
// positions mapped through a frame's transform, with centroid jitter that shrinks with flux,
// random dropouts, spurious stars and flux noise), and the true frame → reference matrix.
// Deterministic: every list comes from its own seed.

import type { Affine } from '../../src/algorithms/affine.js';
import { composeAffine, invertAffine } from '../../src/algorithms/affine.js';
import type { StarPoint } from '../../src/algorithms/match.js';
import type { Truth } from '../../fixtures/generator/index.js';
import { seededRandom } from '../helpers/tmp.js';

export interface ListOptions {
  seed: number;
  /** Fraction of the true stars left out at random. Default 0. */
  dropout?: number;
  /** Spurious stars added, as a fraction of the kept ones. Default 0. */
  spurious?: number;
  /** 1σ centroid jitter per axis (px) of the faintest catalogue star; brighter stars get
   * jitter · √(F_faint / F), never below 0.003 px. Default 0.05. */
  jitter?: number;
  /** Relative flux noise (1σ). Default 0.05. */
  fluxNoise?: number;
  /** Applied after the frame's truth transform (reference pixel → list pixel). */
  extra?: Affine;
  /** Frame size the stars must fall into (default: the truth's image). */
  width?: number;
  height?: number;
}

export function gaussian(random: () => number): number {
  let u = 0;
  while (u === 0) u = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** Total flux of a truth star over its channels (mono: l). */
export function starFlux(truth: Truth, i: number): number {
  const f = truth.stars[i]!.flux_e;
  let s = 0;
  for (const c of truth.channels) s += f[c] ?? 0;
  return s;
}

/** The truth transform of a frame (reference pixel → frame pixel) composed with `extra`. */
export function listTransform(truth: Truth, frame: number, extra?: Affine): Affine {
  const t = truth.frames[frame]!.transform as Affine;
  return extra ? composeAffine(extra, t) : t;
}

/** Star list of `frame` as a detector might report it (see ListOptions). */
export function truthStarList(truth: Truth, frame: number, options: ListOptions): StarPoint[] {
  const random = seededRandom(options.seed);
  const dropout = options.dropout ?? 0;
  const spurious = options.spurious ?? 0;
  const jitter = options.jitter ?? 0.05;
  const fluxNoise = options.fluxNoise ?? 0.05;
  const width = options.width ?? truth.image.width;
  const height = options.height ?? truth.image.height;
  const m = listTransform(truth, frame, options.extra);
  let faint = Infinity;
  for (let i = 0; i < truth.stars.length; i++) faint = Math.min(faint, starFlux(truth, i));
  const out: StarPoint[] = [];
  const fluxes: number[] = [];
  for (let i = 0; i < truth.stars.length; i++) {
    const s = truth.stars[i]!;
    const f = starFlux(truth, i);
    fluxes.push(f);
    // Draw every random number for every star so one star's fate does not shift the others'.
    const keep = random() >= dropout;
    const gx = gaussian(random);
    const gy = gaussian(random);
    const gf = gaussian(random);
    const x = m[0][0] * s.x + m[0][1] * s.y + m[0][2];
    const y = m[1][0] * s.x + m[1][1] * s.y + m[1][2];
    if (!keep || x < 0 || y < 0 || x > width - 1 || y > height - 1) continue;
    const sigma = Math.max(0.003, jitter * Math.sqrt(faint / f));
    out.push({ x: x + sigma * gx, y: y + sigma * gy, flux: f * (1 + fluxNoise * gf) });
  }
  const nSpurious = Math.round(out.length * spurious);
  for (let k = 0; k < nSpurious; k++) {
    const flux = fluxes[Math.floor(random() * fluxes.length)]! * (0.5 + random());
    out.push({ x: random() * (width - 1), y: random() * (height - 1), flux });
  }
  // Shuffle: registration must not rely on the order.
  for (let i = out.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [out[i], out[j]] = [out[j]!, out[i]!];
  }
  return out;
}

/**
 * True frame → reference matrix (the registration convention) when the lists were made with
 * listTransform(truth, frame, extraFrame) and listTransform(truth, reference, extraRef).
 */
export function trueMatrix(truth: Truth, frame: number, reference = 0, extraFrame?: Affine, extraRef?: Affine): Affine {
  const toFrame = listTransform(truth, frame, extraFrame);
  const toRef = listTransform(truth, reference, extraRef);
  return composeAffine(toRef, invertAffine(toFrame)!);
}

/** Rotation by `deg` and scale `s` (with an optional reflection first) about (cx, cy), then a shift. */
export function similarityAbout(deg: number, s: number, mirrored: boolean, cx: number, cy: number, dx = 0, dy = 0): Affine {
  const t = (deg * Math.PI) / 180;
  const c = s * Math.cos(t);
  const n = s * Math.sin(t);
  // R·diag(1, −1) for a reflection.
  const a = c;
  const b = mirrored ? n : -n;
  const d = n;
  const e = mirrored ? -c : c;
  return [
    [a, b, cx - a * cx - b * cy + dx],
    [d, e, cy - d * cx - e * cy + dy],
  ];
}
