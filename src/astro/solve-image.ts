// Plate solving a FITS image as a library call (the ASTROMETRY phase and, later, the REST API):
// luminance of the image (mean of the planes of an RGB cube, or the one plane), star detection
// (src/algorithms/stars.ts), one detection per star cluster, header hints, then plateSolve.
// `prepareImageSolve` is split out so a caller can record what went into a failed solve.

import { join } from 'node:path';
import { detectStars } from '../algorithms/stars.js';
import { readFitsImage, writeFits, type FitsImage } from '../fits/index.js';
import { headerHints, solveHints, type HeaderHints } from './hints.js';
import { plateSolve, type SolveInput, type SolveResult, type SolverConfig, type SolverLookup } from './solve.js';
import type { SolveHints } from './solver-types.js';
import type { XyStar } from './xylist.js';

/** Stars detected on the luminance for the solver (brightest first). */
export const DETECT_MAX_STARS = 2000;
/** Detections closer than max(DEDUP_MIN_PX, DEDUP_FWHM · FWHM) to a brighter one are dropped. */
export const DEDUP_MIN_PX = 6;
export const DEDUP_FWHM = 3;

/**
 * The detections the solver gets: brightest first, each at least `radius` px from every
 * brighter one kept. Saturated disks and bright halos give the detector many maxima (flagged
 * blended) around one star; keeping only the brightest of each cluster leaves one position per
 * star, which is what quad matching needs.
 */
export function solverStars(stars: readonly XyStar[], radius: number): XyStar[] {
  const sorted = stars.filter((s) => Number.isFinite(s.x) && Number.isFinite(s.y) && s.flux > 0).sort((a, b) => b.flux - a.flux);
  const cell = Math.max(1, radius);
  const grid = new Map<string, XyStar[]>();
  const kept: XyStar[] = [];
  const r2 = radius * radius;
  for (const s of sorted) {
    const cx = Math.floor(s.x / cell);
    const cy = Math.floor(s.y / cell);
    let near = false;
    for (let dy = -1; dy <= 1 && !near; dy++) {
      for (let dx = -1; dx <= 1 && !near; dx++) {
        for (const k of grid.get(`${cx + dx},${cy + dy}`) ?? []) if ((k.x - s.x) ** 2 + (k.y - s.y) ** 2 < r2) near = true;
      }
    }
    if (near) continue;
    const star = { x: s.x, y: s.y, flux: s.flux };
    kept.push(star);
    const key = `${cx},${cy}`;
    const list = grid.get(key);
    if (list) list.push(star);
    else grid.set(key, [star]);
  }
  return kept;
}

/** Mean of the planes; NaN where any plane has no data (warp borders). */
export function luminanceOf(img: FitsImage): Float32Array {
  const n = img.width * img.height;
  const out = new Float32Array(n);
  for (let p = 0; p < img.planes; p++) for (let i = 0; i < n; i++) out[i] = out[i]! + img.data[p * n + i]! / img.planes;
  return out;
}

export interface PreparedSolve {
  width: number;
  height: number;
  stars: XyStar[];
  hints: SolveHints;
  hintSource: HeaderHints['source'];
  detection: { background: number; noise: number; fwhm_px: number } | { failure: string; detail: string };
  detectMs: number;
  /** The plateSolve input for this image (ASTAP gets the luminance as a float32 FITS). */
  input(timeoutS: number, signal?: AbortSignal): SolveInput;
}

export function prepareImageSolve(img: FitsImage, searchRadiusDeg: number): PreparedSolve {
  const started = Date.now();
  const { width, height } = img;
  const lum = luminanceOf(img);
  // A stack is resampled: its noise is correlated, and unscaled it yields hundreds of noise "stars".
  const det = detectStars(lum, width, height, { maxStars: DETECT_MAX_STARS, fitCount: 0, resampled: true });
  const stars = det.ok ? solverStars(det.stars, Math.max(DEDUP_MIN_PX, DEDUP_FWHM * det.fwhmScale)) : [];
  const hh = headerHints(img.header, width, height);
  const hints = solveHints(hh, searchRadiusDeg);
  return {
    width,
    height,
    stars,
    hints,
    hintSource: hh.source,
    detection: det.ok ? { background: det.backgroundMedian, noise: det.backgroundRms, fwhm_px: det.fwhmScale } : { failure: det.code, detail: det.detail },
    detectMs: Date.now() - started,
    input: (timeoutS, signal) => ({
      width,
      height,
      stars,
      hints,
      timeoutS,
      ...(signal ? { signal } : {}),
      writeImage: async (dir) => {
        const file = join(dir, 'luminance.fits');
        await writeFits(file, { width, height, data: Float32Array.from(lum, (v) => (Number.isFinite(v) ? v : 0)) });
        return file;
      },
    }),
  };
}

export interface FileSolveConfig extends SolverConfig {
  search_radius: number;
  timeout_s: number;
}

/** Reads `file`, detects its stars and solves it; throws SolveError (see solve.ts) on failure. */
export async function solveFitsFile(file: string, cfg: FileSolveConfig, opts: { signal?: AbortSignal; lookups?: SolverLookup[] } = {}): Promise<{ result: SolveResult; prepared: PreparedSolve }> {
  const img = await readFitsImage(file);
  const prepared = prepareImageSolve(img, cfg.search_radius);
  const result = await plateSolve(cfg, prepared.input(cfg.timeout_s, opts.signal), opts.lookups);
  return { result, prepared };
}
