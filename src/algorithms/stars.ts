// Star detection and measurement on one image plane (mono) or one raw Bayer mosaic (OSC).
//
// Detection runs on the "detection image": the plane itself, or for a mosaic its luminance proxy
// (each 2×2 cell summed into one pixel, so every proxy pixel holds one site of each colour and
// stars look alike whatever their colour):
//   1. tiled background/noise model (background.ts); saturation level from the option or from a
//      plateau at the data maximum;
//   2. significance image D = (G ⊛ image − background)/(σ·√Σg²): a small Gaussian matched filter
//      G (FWHM 2 px; 1.5 px on the proxy) in units of its own noise; then re-zeroed locally on
//      32 px blocks (flattenSignificance): under a bright sky the tiled model cannot follow the
//      curvature of uncorrected vignetting and D would sit σ's high or low over whole regions.
//      `resampled` images (stacks) also divide D by its measured spread (correlated noise);
//   3. candidates: local maxima of D above `threshold` (5σ) in a 3×3 window;
//   4. hot pixels and cosmic-ray-like single-pixel peaks refused: a star's 8 neighbours carry a
//      sizeable share of its peak (mean/peak ≈ 0.5 at 2.5 px FWHM, ~0.15 on the proxy), a
//      single-pixel event's none; candidates below max(`minSharpness` (0.4) × the typical star's
//      ratio, 0.1) are refused unless their neighbours stand 5σ above their own colour's local
//      level (a hot pixel on a star, then masked), saturated candidates included;
//   5. points of long straight streaks (satellites, aircraft) refused: D stays high 24 and 48 px
//      away in two opposite directions, where even a trailed star has ended;
//   5b. maxima not above their own surroundings refused: D minus its median on a ring 2.5 rough
//      FWHMs out must reach the threshold (noise on a halo, a dust rim, vignetting residue);
//   6. deblending, most significant first: a fainter maximum within the reach of a brighter one
//      (where the brighter star's profile falls to the threshold, at least 1.5 FWHM) is a star of
//      its own only if D dips between them by max(`deblendContrast` σ, `deblendFraction` × its D)
//      (3σ, 20 %) — two maxima separated by a saddle; otherwise it is noise on the brighter star's
//      wing (or on a trail's ridge) and dropped.
// (docs/star-detection.md lists these rules and the measurement's with their reasons.)
//
// Measurement, always at full resolution, sized by the frame's FWHM scale (median moment FWHM of
// up to 25 bright stars):
//   - saturated stars centred on their clipped core (a core whose rim drops straight to the sky
//     is a saturated hot-pixel cluster, refused) and measured with window and aperture widened
//     by the core's diameter;
//   - sky per star from the tiled model plus the flattening's local level (or an annulus median,
//     `localBackground: 'annulus'`); on a mosaic each 2×2 site gets its own level (the proxy level split in the proportions of the
//     sites' frame-wide medians) and is divided by the star's own flux share on that site, which
//     turns every site into the same luminance PSF, so centroids carry no colour bias;
//   - centroid: iterative Gaussian-windowed centroid (σ_w = FWHM/2.3548), the SExtractor XWIN
//     fixed point Σ w·I·(x − c) = 0, unbiased for symmetric profiles (measured: ≤ 4e-3 px at FWHM
//     2 px, ≤ 5e-4 px at ≥ 2.5 px on noise-free pixel-integrated Moffat stars);
//   - shape from Gaussian-windowed second moments (window deconvolved, pixel variance removed);
//   - the `fitCount` (64) brightest unsaturated, unblended stars get an elliptical Moffat fit
//     (moffat-fit.ts, β free, pixel integration modelled), which gives FWHM major/minor,
//     eccentricity, angle and β; on a mosaic the site shares are then re-derived against the
//     fitted profile (twice) and the star re-centred and refitted, removing the ~1–2 % aliasing of
//     plain per-site sums. Other stars' moment FWHMs are scaled by the frame's median fit/moment
//     ratio (shape: 'moments'). Fewer than 5 unsaturated fits (a field of bright stars only): up
//     to 12 saturated stars, faintest first, are fitted with their clipped pixels masked;
//   - sources (SNR ≥ 10) narrower than 0.6 × the upper-quartile minor-axis moment FWHM are
//     refused: hot-pixel clusters, cosmic-ray tracks;
//   - flux: aperture sum (radius 2 × FWHM scale) minus the sky; peak above the sky;
//     SNR = flux / √(n_ap·σ² + flux/gain) (the shot term only when `gain` e-/ADU is given).
// Pixels nearer to a neighbouring star than to this one are masked out of its centroid, moments
// and flux; such stars are flagged `blended` (and not fitted).
//
// Coordinates: 0-based pixel centres of the full-resolution plane. A proxy pixel (xb, yb) covers
// full pixels 2xb, 2xb + 1, so its centre is at full x = 2·xb + 0.5 (`proxyToFull`).
// Invariants: the input is never modified; bad input is a typed failure, never an exception;
// allocation is O(pixels) once per call (the significance image) plus O(stars).

import { backgroundAt, estimateBackground, noiseAt, rowSegments, type BackgroundModel, type BackgroundOptions } from './background.js';
import { MoffatFitter, moffatUnit, type MoffatFit, type PatchView } from './moffat-fit.js';
import { medianInPlace } from './robust-stats.js';
import { BlockSampler, flattenSignificance, levelInRow, rowLevels, Significance, type SignificanceBlocks } from './significance-flatten.js';
import { significanceKernels, type SignificanceKernels } from './significance-wasm.js';

export interface Star {
  /** Centroid, full-resolution 0-based pixel coordinates. */
  x: number;
  y: number;
  /** Aperture sum minus local background (ADU; all sites together on a mosaic). */
  flux: number;
  /** Brightest pixel above the local background (ADU). */
  peak: number;
  /** Local background level (ADU; mean over the sites on a mosaic). */
  background: number;
  snr: number;
  /** √(major · minor), full-resolution px. */
  fwhm: number;
  fwhmMajor: number;
  fwhmMinor: number;
  /** √(1 − (minor/major)²): 0 round, → 1 a line. */
  eccentricity: number;
  /** Major-axis direction, degrees from +x toward +y, in [0, 180). */
  angle: number;
  /** Moffat β when the star was fitted, else null. */
  beta: number | null;
  /** 'fit': shape from the Moffat fit; 'moments': calibrated second moments. */
  shape: 'fit' | 'moments';
  /** A pixel of the star reaches the saturation level (its shape and flux are not trustworthy). */
  saturated: boolean;
  /** Another detected star is close enough that its pixels were masked. */
  blended: boolean;
}

export interface DetectOptions {
  /** The plane is a raw Bayer mosaic (any 2×2 pattern): detect on the binned proxy, measure per site. */
  cfa?: boolean;
  /** Detection threshold in σ of the matched-filtered image. Default 5. */
  threshold?: number;
  /** FWHM (detection-image px) of the Gaussian matched filter; 0 = none. Default 2 (mono), 1.5 (proxy). */
  filterFwhm?: number;
  /** ADU at which a pixel counts as saturated. Default: detected from a plateau at the data maximum, else none. */
  saturationLevel?: number;
  background?: BackgroundOptions;
  /** Keep at most this many stars (brightest first). Default 5000. */
  maxStars?: number;
  /** Moffat-fit this many of the brightest unsaturated, unblended stars. Default 64. */
  fitCount?: number;
  /** Hot-pixel test: minimum neighbour/peak ratio relative to the frame's typical star. Default 0.4. */
  minSharpness?: number;
  /** Deblending: minimum dip (σ) between two maxima to keep both. Default 3. */
  deblendContrast?: number;
  /** Deblending: minimum dip as a fraction of the fainter maximum's significance. Default 0.2. */
  deblendFraction?: number;
  /** Camera gain in e-/ADU for the shot-noise term of the SNR (omit: background-limited SNR). */
  gain?: number;
  /** Star's sky level from the tiled model (default) or from an annulus median around it. */
  localBackground?: 'model' | 'annulus';
  /** Block size (detection-image px) of the local re-zeroing of the significance image; 0 = none. Default 32 full-resolution px. */
  flattenBlock?: number;
  /**
   * The image was resampled (a stack: debayered, warped), so its noise is correlated over a few
   * pixels and the significance is rescaled by its measured spread. Default false (raw or
   * calibrated frames, whose pixel noise is white).
   */
  resampled?: boolean;
  /**
   * Memory for the significance image, the caller's and free for the call (its values are
   * overwritten; used when it holds at least the detection image's pixels): a frame worker lends
   * a buffer it holds anyway, sparing a fresh 12 MiB array per 2048×1536 frame (its page faults
   * cost ~8 ms of CPU where the allocator maps large blocks afresh). Never read, never kept.
   */
  scratch?: Float32Array;
}

export interface DetectionCounts {
  /** Local maxima above the threshold. */
  candidates: number;
  /** Refused as hot pixels / single-pixel events. */
  hotPixels: number;
  /** Dropped as part of a brighter star (no saddle). */
  merged: number;
  /** Dropped as points of a long straight streak (satellite, aircraft). */
  streaks: number;
  /** Not above their own surroundings: noise on a plateau (halo, dust shadow, vignetting residue). */
  diffuse: number;
  /** Narrower than the frame's PSF can make (hot-pixel clusters, cosmic rays). */
  narrow: number;
  /** Too close to the image border to measure. */
  edge: number;
  /** Centroid did not converge or no positive signal. */
  failed: number;
  /** Moffat fits that succeeded. */
  fitted: number;
}

export interface StarDetection {
  ok: true;
  /** Stars sorted by flux, brightest first. */
  stars: Star[];
  /** Full-resolution size of the measured plane. */
  width: number;
  height: number;
  cfa: boolean;
  /** Background model of the detection image (the proxy on a mosaic). */
  background: BackgroundModel;
  /** Global sky level and noise per full-resolution pixel (ADU). */
  backgroundMedian: number;
  backgroundRms: number;
  /** Saturation level used (Infinity when none), how it was found, and the share of pixels at/above it. */
  saturationLevel: number;
  saturationSource: 'option' | 'plateau' | 'none';
  saturatedFraction: number;
  /** Frame FWHM scale (px) that sized windows and apertures; aperture radius (px). */
  fwhmScale: number;
  apertureRadius: number;
  counts: DetectionCounts;
  /** Wall time of the stages (ms): saturation + background, matched filter, candidates + deblending + frame scale, measurement, fits. */
  timings: DetectionTimings;
}

export interface DetectionTimings {
  background: number;
  filter: number;
  candidates: number;
  measure: number;
  fit: number;
  total: number;
}

export type DetectionFailureCode = 'bad_input' | 'no_data' | 'no_noise';
export interface DetectionFailure {
  ok: false;
  code: DetectionFailureCode;
  detail: string;
}

const FWHM_PER_SIGMA = 2 * Math.sqrt(2 * Math.LN2);
/** √(x² + y²) for pixel offsets (no overflow guard needed): unlike Math.hypot, V8 inlines it without allocating. */
const dist2d = (x: number, y: number): number => Math.sqrt(x * x + y * y);
/** Neighbour/peak ratio below which a maximum has no PSF at all (a hot pixel or cosmic ray). */
const SURE_HOT_RATIO = 0.03;

/** Re-normalisation rounds of a mosaic star's sites against its own fitted profile (converges fast). */
const CFA_REFITS = 2;

/**
 * Luminance proxy of a Bayer mosaic: each 2×2 cell summed into one pixel of a half-size image
 * (an odd last row/column is dropped). Every proxy pixel holds one site of each colour, so stars
 * look the same whatever their colour. Proxy pixel (xb, yb) is centred at full (2xb + 0.5, 2yb + 0.5).
 */
export function luminanceProxy(cfa: Float32Array, width: number, height: number): { data: Float32Array; width: number; height: number } {
  const w = width >> 1;
  const h = height >> 1;
  const out = new Float32Array(w * h);
  for (let yb = 0; yb < h; yb++) {
    const r0 = 2 * yb * width;
    const r1 = r0 + width;
    const o = yb * w;
    for (let xb = 0; xb < w; xb++) {
      const x = 2 * xb;
      out[o + xb] = cfa[r0 + x]! + cfa[r0 + x + 1]! + cfa[r1 + x]! + cfa[r1 + x + 1]!;
    }
  }
  return { data: out, width: w, height: h };
}

/** Full-resolution coordinate of a proxy coordinate. */
export const proxyToFull = (b: number): number => 2 * b + 0.5;

/**
 * Saturation level: the option, else a plateau of ≥ 3 pixels within 0.2 % of the data maximum
 * (clipped pixels of a saturated core all read nearly the same value; an unsaturated star has one
 * brightest pixel, its neighbours well below it, shot noise alone spreading them by > 0.2 %).
 * A running scan: the common path is one comparison per pixel (`v < near`), so it rides along
 * with a pass that reads every pixel anyway. Values near the running maximum are counted and the
 * count restarts when the maximum jumps by more than the window, which counts the plateau
 * exactly when (as with real clipping) its values agree to within the window. Non-finite values
 * are counted as bad.
 */
interface SaturationScan {
  fixed: boolean;
  max: number;
  /** Values below this take the fast path. */
  near: number;
  count: number;
  bad: number;
}

const SATURATION_WINDOW = 2e-3;

function saturationScan(option: number | undefined): SaturationScan {
  const fixed = option !== undefined && Number.isFinite(option);
  return { fixed, max: -Infinity, near: fixed ? option : -Infinity, count: 0, bad: 0 };
}

/** Slow path of the scan, for a value with !(v < scan.near). */
function saturationSlow(scan: SaturationScan, v: number): void {
  if (!(v === v) || v === Infinity || v === -Infinity) {
    scan.bad++;
    return;
  }
  if (!scan.fixed && v > scan.max) {
    if (v * (1 - SATURATION_WINDOW) > scan.max) scan.count = 0;
    scan.max = v;
    scan.near = v * (1 - SATURATION_WINDOW);
  }
  scan.count++;
}

function saturationScanAll(data: Float32Array, scan: SaturationScan): void {
  let near = scan.near;
  for (let i = 0; i < data.length; i++) {
    const v = data[i]!;
    if (!(v < near)) {
      saturationSlow(scan, v);
      near = scan.near;
    }
  }
}

function saturationResult(scan: SaturationScan, total: number): { level: number; source: StarDetection['saturationSource']; fraction: number; finite: number } {
  const finite = total - scan.bad;
  if (scan.fixed) return { level: scan.near, source: 'option', fraction: finite > 0 ? scan.count / finite : 0, finite };
  if (scan.max > 0 && scan.count >= 3) return { level: scan.near, source: 'plateau', fraction: scan.count / finite, finite };
  return { level: Infinity, source: 'none', fraction: 0, finite };
}

/**
 * The saturation level of a plane as its plateau (≥ 3 pixels within 0.2 % of the maximum; see
 * `saturationScan`), or null when the plane has none. CALIBRATION records it on calibrated frames
 * whose light carries no SATURATE card: dividing by a flat turns the plateau into a slope.
 */
export function saturationPlateau(data: Float32Array): number | null {
  const scan = saturationScan(undefined);
  saturationScanAll(data, scan);
  const r = saturationResult(scan, data.length);
  return r.source === 'plateau' ? r.level : null;
}

/** Normalised 1-D Gaussian kernel for the given FWHM (radius round(2.5σ), at least 1). */
function gaussianKernel(fwhm: number): Float32Array {
  if (!(fwhm > 0)) return Float32Array.of(1);
  const sigma = fwhm / FWHM_PER_SIGMA;
  const r = Math.max(1, Math.round(2.5 * sigma));
  const k = new Float32Array(2 * r + 1);
  let s = 0;
  for (let i = -r; i <= r; i++) s += k[i + r] = Math.exp(-(i * i) / (2 * sigma * sigma));
  for (let i = 0; i < k.length; i++) k[i] = k[i]! / s;
  return k;
}

/**
 * Horizontal pass of one row: out[x] = Σ g_k·img[x + k], edges clamped, NaN → `fill(x)`.
 * Every pixel of the row also goes through the saturation scan, once.
 */
function filterRow(img: Float32Array, o: number, w: number, kernel: Float32Array, out: Float32Array, fill: (x: number) => number, scan: SaturationScan): void {
  const r = kernel.length >> 1;
  const at = (x: number): number => {
    const xx = x < 0 ? 0 : x >= w ? w - 1 : x;
    const v = img[o + xx]!;
    return v === v ? v : fill(xx);
  };
  let near = scan.near;
  if (r === 2 && w >= 3) {
    for (let x = 0; x < 3; x++) {
      const v = img[o + x]!;
      if (!(v < near)) {
        saturationSlow(scan, v);
        near = scan.near;
      }
    }
    // Sliding window in locals: one new load per pixel, symmetric taps paired.
    const k0 = kernel[2]!;
    const k1 = kernel[3]!;
    const k2 = kernel[4]!;
    let a = at(-2);
    let b = at(-1);
    let c = at(0);
    let d = at(1);
    let e = at(2);
    for (let x = 0; x < w; x++) {
      out[x] = k0 * c + k1 * (b + d) + k2 * (a + e);
      a = b;
      b = c;
      c = d;
      d = e;
      const n = x + 3;
      if (n < w) {
        const v = img[o + n]!;
        if (!(v < near)) {
          saturationSlow(scan, v);
          near = scan.near;
        }
        // (Not `v === v ? v : fill(n)`: merging a float with a call's result can make V8 box
        // every pixel's value; the NaN path is rare.)
        e = v;
        if (!(v === v)) e = fill(n);
      }
    }
    return;
  }
  for (let x = 0; x < w; x++) {
    const v = img[o + x]!;
    if (!(v < near)) {
      saturationSlow(scan, v);
      near = scan.near;
    }
  }
  for (let x = 0; x < w; x++) {
    let s = kernel[r]! * at(x);
    for (let k = 1; k <= r; k++) s += kernel[r + k]! * (at(x - k) + at(x + k));
    out[x] = s;
  }
}

/**
 * Significance image D = (G ⊛ image − background)/(σ·√Σg²) with a separable, symmetric Gaussian
 * G (edges clamped; NaN pixels count as background). G ⊛ background = background, as the model is
 * piecewise bilinear and G normalised and symmetric, so the background is subtracted after
 * filtering, evaluated incrementally along linear row segments (one addition per pixel). Rows are
 * filtered horizontally into a ring of 2r + 1 row buffers and combined vertically as soon as the
 * ring holds a row's neighbours: the only full-size allocation is D, every access is sequential.
 */
function significance(img: Float32Array, w: number, h: number, bg: BackgroundModel, kernel: Float32Array, scan: SaturationScan, sampler: BlockSampler | null, scratch?: Float32Array): { D: Float32Array; blocks: SignificanceBlocks } {
  const r = kernel.length >> 1;
  const simd = r === 2 && w >= 3 && wasmEnabled ? significanceKernels() : null;
  if (simd) return significanceSimd(img, w, h, bg, kernel, scan, sampler, simd, scratch);
  const n = 2 * r + 1;
  const { segments: seg, fill } = rowSegments(bg);
  const ring = Array.from({ length: n }, () => new Float32Array(w));
  const acc = new Float32Array(w);
  let g2 = 0;
  for (let k = 0; k < kernel.length; k++) g2 += kernel[k]! * kernel[k]!;
  // √(Σ over the 2-D kernel of g²) = Σ over the 1-D kernel of g².
  const norm = g2;
  const out = dBuffer(w * h, scratch);
  // Maximum of D per row and sky segment, for the candidate search to skip empty stretches.
  const blockMax = new Float32Array(h * seg.count);
  // Ring slot of (clamped) image row yy; rows are filtered once, in order.
  let filtered = -1;
  const slot = (yy: number): Float32Array => {
    const c = yy < 0 ? 0 : yy >= h ? h - 1 : yy;
    while (filtered < c) {
      filtered++;
      const fy = filtered;
      filterRow(img, fy * w, w, kernel, ring[fy % n]!, (x) => backgroundAt(bg, x, fy), scan);
    }
    return ring[c % n]!;
  };
  const k0 = kernel[r]!;
  const k1 = r >= 1 ? kernel[r + 1]! : 0;
  const k2 = r >= 2 ? kernel[r + 2]! : 0;
  for (let y = 0; y < h; y++) {
    // Fetch the farthest row first: the ring then holds exactly rows y − r … y + r.
    slot(y + r);
    if (r !== 2) {
      const c = slot(y);
      for (let x = 0; x < w; x++) acc[x] = k0 * c[x]!;
      for (let k = 1; k <= r; k++) {
        const a = slot(y - k);
        const b = slot(y + k);
        const kk = kernel[r + k]!;
        for (let x = 0; x < w; x++) acc[x] = acc[x]! + kk * (a[x]! + b[x]!);
      }
    }
    // (r = 2: the five rows of the fused vertical pass; else unused.)
    const b2 = r === 2 ? slot(y + 2) : acc;
    const b1 = r === 2 ? slot(y + 1) : acc;
    const c = r === 2 ? slot(y) : acc;
    const a1 = r === 2 ? slot(y - 1) : acc;
    const a2 = r === 2 ? slot(y - 2) : acc;
    fill(y);
    const o = y * w;
    // Per linear segment of the sky model: level and 1/noise advance by one addition per pixel
    // (1/σ interpolated linearly: σ varies by a few % across a tile, so this is exact to < 0.1 %).
    for (let s = 0; s < seg.count; s++) {
      const x0 = seg.start[s]!;
      const end = seg.start[s + 1]!;
      let lv = seg.level0[s]!;
      const dl = seg.levelSlope[s]!;
      const n0 = seg.noise0[s]! * norm;
      const n1 = (seg.noise0[s]! + seg.noiseSlope[s]! * (end - x0)) * norm;
      let inv = n0 > 0 ? 1 / n0 : 0;
      const dinv = end > x0 && n0 > 0 && n1 > 0 ? (1 / n1 - 1 / n0) / (end - x0) : 0;
      let mx = -Infinity;
      if (r === 2) {
        for (let x = x0; x < end; x++) {
          const v = (k0 * c[x]! + k1 * (a1[x]! + b1[x]!) + k2 * (a2[x]! + b2[x]!) - lv) * inv;
          out[o + x] = v;
          mx = v > mx ? v : mx;
          lv += dl;
          inv += dinv;
        }
      } else {
        for (let x = x0; x < end; x++) {
          const v = (acc[x]! - lv) * inv;
          out[o + x] = v;
          mx = v > mx ? v : mx;
          lv += dl;
          inv += dinv;
        }
      }
      // (D is stored as float32: the block maximum is kept a hair high, so no stored value
      // above a threshold can sit in a block whose maximum reads below it.)
      blockMax[y * seg.count + s] = mx + 1e-6 * Math.abs(mx);
    }
    // The flattening's samples of this row, while it is in cache.
    if (sampler) sampler.row(y, out);
  }
  return { D: out, blocks: { start: seg.start, count: seg.count, max: blockMax } };
}

/** D's memory: the caller's scratch when it is large enough, else a fresh array (see DetectOptions.scratch). */
function dBuffer(n: number, scratch: Float32Array | undefined): Float32Array {
  return scratch && scratch.length >= n ? scratch.subarray(0, n) : new Float32Array(n);
}

let wasmEnabled = true;

/**
 * Whether the significance image may use the WebAssembly SIMD kernels (significance-wasm.ts; on
 * by default where WebAssembly SIMD exists). Off runs the TypeScript reference: the differential
 * tests and the benches compare the two. Returns the previous setting.
 */
export function useSignificanceWasm(on: boolean): boolean {
  const was = wasmEnabled;
  wasmEnabled = on;
  return was;
}

/**
 * `significance` for the 5-tap kernel (r = 2, the detection default) with the row passes in
 * WebAssembly: the same values bit for bit (significance-wasm.ts states the contract). Each row
 * is copied into the module's memory with its clamped edges, filtered there into a ring of five
 * rows, and every output row combined there and copied into D. A row holding NaN is filtered by
 * the TypeScript `filterRow` (NaN filled from the sky), and the saturation scan runs over a row
 * in TypeScript only when a pixel of the row reaches the scan's window (most rows: none does).
 */
function significanceSimd(img: Float32Array, w: number, h: number, bg: BackgroundModel, kernel: Float32Array, scan: SaturationScan, sampler: BlockSampler | null, k: SignificanceKernels, scratch?: Float32Array): { D: Float32Array; blocks: SignificanceBlocks } {
  const n = 5;
  const { segments: seg, fill } = rowSegments(bg);
  let g2 = 0;
  for (let i = 0; i < kernel.length; i++) g2 += kernel[i]! * kernel[i]!;
  const norm = g2;
  const k0 = kernel[2]!;
  const k1 = kernel[3]!;
  const k2 = kernel[4]!;
  // Layout (f32 indices, 16-byte aligned): padded input row, five ring rows, one output row.
  const stride = (w + 4 + 3) & ~3;
  const inBase = 0;
  const ringBase = (i: number): number => stride * (1 + i);
  const outBase = stride * (1 + n);
  const bytes = stride * (2 + n) * 4;
  const pages = Math.ceil(bytes / 65536) - k.memory.buffer.byteLength / 65536;
  if (pages > 0) k.memory.grow(pages);
  const f32 = new Float32Array(k.memory.buffer);
  const ring = Array.from({ length: n }, (_, i) => f32.subarray(ringBase(i), ringBase(i) + w));
  const outRow = f32.subarray(outBase, outBase + w);
  const out = dBuffer(w * h, scratch);
  const blockMax = new Float32Array(h * seg.count);
  let filtered = -1;
  const slot = (yy: number): number => {
    const c = yy < 0 ? 0 : yy >= h ? h - 1 : yy;
    while (filtered < c) {
      filtered++;
      const fy = filtered;
      const o = fy * w;
      f32.set(img.subarray(o, o + w), inBase + 2);
      f32[inBase] = f32[inBase + 1] = img[o]!;
      f32[inBase + w + 2] = f32[inBase + w + 3] = img[o + w - 1]!;
      const i = fy % n;
      if (k.hpass(inBase * 4, ringBase(i) * 4, w, k0, k1, k2, scan.near) === 0) {
        if (hasNaN(img, o, w)) filterRow(img, o, w, kernel, ring[i]!, (x) => backgroundAt(bg, x, fy), scan);
        else scanRow(img, o, w, scan);
      }
    }
    return ringBase(c % n) * 4;
  };
  for (let y = 0; y < h; y++) {
    const b2 = slot(y + 2);
    const b1 = slot(y + 1);
    const c = slot(y);
    const a1 = slot(y - 1);
    const a2 = slot(y - 2);
    fill(y);
    for (let s = 0; s < seg.count; s++) {
      const x0 = seg.start[s]!;
      const end = seg.start[s + 1]!;
      const n0 = seg.noise0[s]! * norm;
      const n1 = (seg.noise0[s]! + seg.noiseSlope[s]! * (end - x0)) * norm;
      const inv = n0 > 0 ? 1 / n0 : 0;
      const dinv = end > x0 && n0 > 0 && n1 > 0 ? (1 / n1 - 1 / n0) / (end - x0) : 0;
      const mx = k.vpass(a2, a1, c, b1, b2, outBase * 4, x0, end, seg.level0[s]!, seg.levelSlope[s]!, inv, dinv, k0, k1, k2);
      blockMax[y * seg.count + s] = mx + 1e-6 * Math.abs(mx);
    }
    out.set(outRow, y * w);
    if (sampler) sampler.row(y, out);
  }
  return { D: out, blocks: { start: seg.start, count: seg.count, max: blockMax } };
}

/**
 * The significance image D of a plane and its per-row segment maxima (mono, default filter,
 * flattening samples not taken), by whichever implementation `useSignificanceWasm` selects: for
 * the differential tests and benches of the two.
 */
export function significanceImage(img: Float32Array, w: number, h: number, bg: BackgroundModel, filterFwhm = 2): { D: Float32Array; blocks: SignificanceBlocks; saturation: number } {
  const scan = saturationScan(undefined);
  const r = significance(img, w, h, bg, gaussianKernel(filterFwhm), scan, null);
  return { ...r, saturation: saturationResult(scan, w * h).level };
}

function hasNaN(img: Float32Array, o: number, w: number): boolean {
  for (let x = 0; x < w; x++) if (!(img[o + x] === img[o + x])) return true;
  return false;
}

/** The saturation scan over one row, in order (as `filterRow` runs it). */
function scanRow(img: Float32Array, o: number, w: number, scan: SaturationScan): void {
  let near = scan.near;
  for (let x = 0; x < w; x++) {
    const v = img[o + x]!;
    if (!(v < near)) {
      saturationSlow(scan, v);
      near = scan.near;
    }
  }
}

interface Candidate {
  /** Integer position of the maximum in the detection image. */
  ix: number;
  iy: number;
  d: number;
  /** Refined proxy/plane position (3×3 centroid) in full-resolution coordinates. */
  fx: number;
  fy: number;
  /** Brightest raw value above background nearby (detection image) and neighbour ratio. */
  rawPeak: number;
  ratio: number;
  /** Mean of the full-resolution peak's 8 neighbours above the sky (ADU) and that peak's index. */
  mean8: number;
  peakIndex: number;
  /** Full-resolution pixel index of a hot pixel on top of this star (masked when measuring), or −1. */
  spike: number;
  reach: number;
}

/**
 * Local maxima of D above `threshold` (3×3, ties resolved toward the first in raster order).
 * Only blocks whose maximum exceeds the threshold are scanned (most of a frame is sky).
 */
function localMaxima(sig: Significance, threshold: number, margin: number, blocks: SignificanceBlocks): Candidate[] {
  const { D, w, h, flat } = sig;
  const out: Candidate[] = [];
  const m = Math.max(1, margin);
  const y1 = h - m;
  const x1 = w - m;
  const nb = blocks.count;
  const row = flat ? new Float64Array(flat.nx) : null;
  for (let y = m; y < y1; y++) {
    const o = y * w;
    let rowDone = false;
    for (let b = 0; b < nb; b++) {
      if (!(blocks.max[y * nb + b]! > threshold)) continue;
      const xa = Math.max(m, blocks.start[b]!);
      const xb = Math.min(x1, blocks.start[b + 1]!);
      if (!flat) {
        scanMaxima(D, w, o, y, xa, xb, threshold, out);
        continue;
      }
      if (!rowDone) {
        rowLevels(flat, y, row!);
        rowDone = true;
      }
      // Raw values below threshold/inv + the segment's smallest level cannot pass.
      const floor = threshold / flat.inv + flat.minLevel[flat.rowLo[y]! * nb + b]!;
      for (let x = xa; x < xb; x++) {
        const v = D[o + x]!;
        if (!(v > floor)) continue;
        // (The local-maximum test on D itself: the level changes by ~1e-3 σ per pixel. It runs
        // first: most pixels above the floor are a star's slopes, not maxima, and the level's
        // interpolation cost as much as the test.)
        // (isLocalMax written out: a call that V8 does not inline boxes v, ~2 MB of garbage per frame.)
        const q = o + x;
        if (!(v > D[q - 1]! && v >= D[q + 1]! && v > D[q - w - 1]! && v > D[q - w]! && v > D[q - w + 1]! && v >= D[q + w - 1]! && v >= D[q + w]! && v >= D[q + w + 1]!)) continue;
        const d = (v - levelInRow(flat, row!, x)) * flat.inv;
        if (d > threshold) out.push(candidate(x, y, d));
      }
    }
  }
  return out;
}

const candidate = (x: number, y: number, d: number): Candidate => ({ ix: x, iy: y, d, fx: x, fy: y, rawPeak: 0, ratio: 0, mean8: 0, peakIndex: -1, spike: -1, reach: 0 });

/** v = D[o + x] is a 3×3 maximum (ties resolved toward the first in raster order). */
function isLocalMax(D: Float32Array, w: number, o: number, x: number, v: number): boolean {
  return (
    v > D[o + x - 1]! && v >= D[o + x + 1]! &&
    v > D[o - w + x - 1]! && v > D[o - w + x]! && v > D[o - w + x + 1]! &&
    v >= D[o + w + x - 1]! && v >= D[o + w + x]! && v >= D[o + w + x + 1]!
  );
}

/** The local maxima of row y (offset o) of D in columns [xa, xb) (see `localMaxima`). */
function scanMaxima(D: Float32Array, w: number, o: number, y: number, xa: number, xb: number, threshold: number, out: Candidate[]): void {
  for (let x = xa; x < xb; x++) {
    const v = D[o + x]!;
    if (!(v > threshold)) continue;
    if (isLocalMax(D, w, o, x, v)) out.push(candidate(x, y, v));
  }
}

/** Minimum of D along the segment between two maxima (0.5 px steps, end points excluded). */
function saddle(sig: Significance, a: Candidate, b: Candidate): number {
  const dx = b.ix - a.ix;
  const dy = b.iy - a.iy;
  const n = Math.max(2, Math.ceil(dist2d(dx, dy) * 2));
  let m = Infinity;
  for (let i = 1; i < n; i++) {
    const t = i / n;
    const v = sig.at(a.ix + dx * t, a.iy + dy * t);
    if (v < m) m = v;
  }
  return m;
}

const STREAK_STEPS = 64;

/**
 * Offsets (l1·cos a, l1·sin a) of the coarse streak directions a_k = 2πk/64, k < 32, and of their
 * opposites a_k + π, computed once per detection (the same expressions `onStreak` evaluated per
 * candidate, so the samples are the same).
 */
function streakOffsets(l1: number): Float64Array {
  const t = new Float64Array(STREAK_STEPS * 2);
  for (let k = 0; k < STREAK_STEPS / 2; k++) {
    const a = (k * 2 * Math.PI) / STREAK_STEPS;
    t[4 * k] = l1 * Math.cos(a);
    t[4 * k + 1] = l1 * Math.sin(a);
    t[4 * k + 2] = l1 * Math.cos(a + Math.PI);
    t[4 * k + 3] = l1 * Math.sin(a + Math.PI);
  }
  return t;
}

/**
 * Part of a long straight streak (satellite, aircraft, meteor)? True when, at two distances
 * `l1` and 2·`l1` from the maximum, D stays above max(threshold, 25 % of the maximum) in two
 * opposite directions: a star, even a trailed one shorter than l1, has fallen to the background
 * there in every direction. Samples outside the image count as passing only if the other three
 * of a direction pair's four samples pass (a streak leaving the frame).
 */
function onStreak(sig: Significance, c: Candidate, l1: number, threshold: number, offsets: Float64Array): boolean {
  const { w, h } = sig;
  const level = Math.max(threshold, 0.25 * c.d);
  const at = (angle: number, dist: number): number => {
    const x = c.ix + dist * Math.cos(angle);
    const y = c.iy + dist * Math.sin(angle);
    if (x < 0 || y < 0 || x > w - 1 || y > h - 1) return NaN;
    return sig.at(x, y);
  };
  const atOffset = (o: number): number => {
    const x = c.ix + offsets[o]!;
    const y = c.iy + offsets[o + 1]!;
    if (x < 0 || y < 0 || x > w - 1 || y > h - 1) return NaN;
    return sig.at(x, y);
  };
  const steps = STREAK_STEPS;
  let bestAngle = NaN;
  let best = -Infinity;
  for (let k = 0; k < steps / 2; k++) {
    const a = (k * 2 * Math.PI) / steps;
    const p = atOffset(4 * k);
    if (p < level) continue;
    const q = atOffset(4 * k + 2);
    const m = Math.min(p === p ? p : Infinity, q === q ? q : Infinity);
    if (m !== Infinity && m > best) {
      best = m;
      bestAngle = a;
    }
  }
  if (!(best >= level)) return false;
  // Refine around the best direction at twice the distance (the line is narrow there).
  for (let k = -4; k <= 4; k++) {
    const a = bestAngle + (k * Math.PI) / (steps * 2);
    const s = [at(a, l1), at(a + Math.PI, l1), at(a, 2 * l1), at(a + Math.PI, 2 * l1)];
    let pass = 0;
    let valid = 0;
    for (const v of s) {
      if (v !== v) continue;
      valid++;
      if (v >= level) pass++;
    }
    if (valid >= 3 && pass === valid) return true;
    // At the image border: one side of the line leaves the frame, the other runs on.
    if (valid === 2 && pass === 2 && ((s[0] === s[0] && s[2] === s[2]) || (s[1] === s[1] && s[3] === s[3]))) return true;
  }
  return false;
}

/** Indices 0 … n − 1 ordered by row (`y`, rounded), then `x`: the plane's memory order. */
function rasterOrder(n: number, y: (k: number) => number, x: (k: number) => number): Int32Array {
  const key = new Float64Array(n);
  const idx = new Int32Array(n);
  for (let k = 0; k < n; k++) {
    key[k] = Math.round(y(k)) * 1e6 + x(k);
    idx[k] = k;
  }
  return idx.sort((a, b) => key[a]! - key[b]! || a - b);
}

/** Spatial hash of accepted stars for neighbour queries. */
class Grid {
  private readonly cells = new Map<number, number[]>();
  constructor(private readonly cell: number) {}
  private key(cx: number, cy: number): number {
    return (cy + 1024) * 8192 + (cx + 1024);
  }
  add(id: number, x: number, y: number): void {
    const k = this.key(Math.floor(x / this.cell), Math.floor(y / this.cell));
    const list = this.cells.get(k);
    if (list) list.push(id);
    else this.cells.set(k, [id]);
  }
  near(x: number, y: number, r: number, out: number[]): number[] {
    out.length = 0;
    const c0 = Math.floor((x - r) / this.cell);
    const c1 = Math.floor((x + r) / this.cell);
    const r0 = Math.floor((y - r) / this.cell);
    const r1 = Math.floor((y + r) / this.cell);
    for (let cy = r0; cy <= r1; cy++) {
      for (let cx = c0; cx <= c1; cx++) {
        const list = this.cells.get(this.key(cx, cy));
        if (list) for (const id of list) out.push(id);
      }
    }
    return out;
  }
}

/**
 * Brightest pixel above the sky in [xa, xb] × [ya, yb] of `img`, the ratio of the mean of its
 * 8 neighbours to it (both above the sky), and the 3×3 centroid around it.
 */
function peakRatio(img: Float32Array, w: number, h: number, xa: number, xb: number, ya: number, yb: number, sky: readonly number[], sites: boolean): { peak: number; ratio: number; mean8: number; index: number; cx: number; cy: number } {
  // The sky is constant over these few pixels: one level per 2×2 site (or one for all).
  const levelAt = (x: number, y: number) => (sites ? sky[((y & 1) << 1) | (x & 1)]! : sky[0]!);
  let px = Math.max(0, xa);
  let py = Math.max(0, ya);
  let best = -Infinity;
  for (let y = Math.max(0, ya); y <= Math.min(h - 1, yb); y++) {
    for (let x = Math.max(0, xa); x <= Math.min(w - 1, xb); x++) {
      const v = img[y * w + x]! - levelAt(x, y);
      if (v > best) {
        best = v;
        px = x;
        py = y;
      }
    }
  }
  let s = 0;
  let n = 0;
  let sx = 0;
  let sy = 0;
  let sw = 0;
  for (let y = py - 1; y <= py + 1; y++) {
    for (let x = px - 1; x <= px + 1; x++) {
      if (x < 0 || y < 0 || x >= w || y >= h) continue;
      const v = img[y * w + x]! - levelAt(x, y);
      if (!(v === v)) continue;
      if (x !== px || y !== py) {
        s += v;
        n++;
      }
      const wv = Math.max(0, v);
      sx += wv * x;
      sy += wv * y;
      sw += wv;
    }
  }
  return {
    peak: best,
    ratio: best > 0 && n > 0 ? s / n / best : 0,
    mean8: n > 0 ? s / n : 0,
    index: py * w + px,
    cx: sw > 0 ? sx / sw : px,
    cy: sw > 0 ? sy / sw : py,
  };
}

/**
 * Mean excess of the 8 neighbours of (px, py) over their own site's local level: the median of
 * that site's pixels in the 7×7 window outside the inner 3×3 (one level on a plane). Distinguishes
 * a hot pixel on a star (its neighbours carry the star's light) from one on the sky. NaN when a
 * site has fewer than 3 ring pixels (at the border).
 */
function localExcess8(plane: Float32Array, width: number, height: number, px: number, py: number, cfa: boolean, ring: Float64Array[]): number {
  const n = [0, 0, 0, 0];
  for (let dy = -3; dy <= 3; dy++) {
    for (let dx = -3; dx <= 3; dx++) {
      if (Math.abs(dx) <= 1 && Math.abs(dy) <= 1) continue;
      const x = px + dx;
      const y = py + dy;
      if (x < 0 || y < 0 || x >= width || y >= height) continue;
      const v = plane[y * width + x]!;
      if (!(v === v)) continue;
      const site = cfa ? ((y & 1) << 1) | (x & 1) : 0;
      ring[site]![n[site]!++] = v;
    }
  }
  const level = [0, 0, 0, 0];
  for (let site = 0; site < (cfa ? 4 : 1); site++) {
    if (n[site]! < 3) return NaN;
    level[site] = medianInPlace(ring[site]!.subarray(0, n[site]!));
  }
  let sum = 0;
  let count = 0;
  for (let dy = -1; dy <= 1; dy++) {
    for (let dx = -1; dx <= 1; dx++) {
      if (dx === 0 && dy === 0) continue;
      const x = px + dx;
      const y = py + dy;
      if (x < 0 || y < 0 || x >= width || y >= height) continue;
      const v = plane[y * width + x]!;
      if (!(v === v)) continue;
      sum += v - level[cfa ? ((y & 1) << 1) | (x & 1) : 0]!;
      count++;
    }
  }
  return count > 0 ? sum / count : NaN;
}

/** Per-star measurement workspace (one allocation per detection call, reused for every star). */
class Workspace {
  readonly values: Float64Array;
  readonly raw: Float64Array;
  readonly wx: Float64Array;
  readonly wy: Float64Array;
  readonly ann: Float64Array[];
  readonly fitter = new MoffatFitter();
  readonly size: number;
  /** Per-call scratch of measureStar (sky per site, annulus counts, site scales): reset on use. */
  readonly bgSite = [0, 0, 0, 0];
  readonly annCounts = [0, 0, 0, 0];
  readonly siteScale = [1, 1, 1, 1];
  constructor(readonly radius: number, readonly annOut: number) {
    this.size = 2 * radius + 1;
    this.values = new Float64Array(this.size * this.size);
    this.raw = new Float64Array(this.size * this.size);
    this.wx = new Float64Array(this.size);
    this.wy = new Float64Array(this.size);
    const annSize = (2 * annOut + 1) ** 2;
    // Annulus samples per 2×2 site (used only with localBackground: 'annulus').
    this.ann = [0, 1, 2, 3].map(() => new Float64Array(annSize));
  }
}

interface Measured {
  x: number;
  y: number;
  flux: number;
  peak: number;
  background: number;
  noise: number;
  saturated: boolean;
  blended: boolean;
  mxx: number;
  myy: number;
  mxy: number;
  apertureN: number;
}

interface Geometry {
  /** Window σ for centroid and moments (px). */
  sigmaW: number;
  /** Patch radius (px) and annulus radii. */
  radius: number;
  annIn: number;
  annOut: number;
  aperture: number;
  /** Radius within which the CFA site ratios are taken (Gaussian weight σ). */
  normSigma: number;
  /** Half-size of the square fitted by the Moffat fit (px). */
  fitRadius: number;
}

function geometryFor(fwhm: number): Geometry {
  const f = Math.max(1, fwhm);
  const radius = Math.min(30, Math.max(5, Math.ceil(2 * f) + 1));
  const annIn = radius + 1;
  const annOut = annIn + Math.max(3, Math.ceil(f));
  const fitRadius = Math.min(radius, Math.max(4, Math.ceil(1.75 * f)));
  return { sigmaW: f / FWHM_PER_SIGMA, radius, annIn, annOut, aperture: 2 * f, normSigma: Math.max(1, f), fitRadius };
}

function medianOf(a: Float64Array, n: number): number {
  return n > 0 ? medianInPlace(a.subarray(0, n)) : NaN;
}

/** Site shares from Gaussian-weighted sums around (x0, y0); `scale` receives 1/share (mean share 1). */
function siteSharesBySums(ws: Workspace, size: number, px0: number, py0: number, x0: number, y0: number, sigma: number, scale: number[], level: number): void {
  const sums = [0, 0, 0, 0];
  const inv = 1 / (2 * sigma * sigma);
  for (let j = 0; j < size; j++) {
    const y = py0 + j;
    const wy = Math.exp(-((y - y0) ** 2) * inv);
    for (let i = 0; i < size; i++) {
      const v = ws.raw[j * size + i]!;
      if (v !== v) continue;
      const x = px0 + i;
      const site = ((y & 1) << 1) | (x & 1);
      // Clipped pixels would understate the brighter sites' shares.
      if (v + ws.bgSite[site]! >= level) continue;
      sums[site] = sums[site]! + v * wy * Math.exp(-((x - x0) ** 2) * inv);
    }
  }
  setScale(sums, scale);
}

/** 1/share per site from per-site amounts (shares clamped to [¼, 4] of the mean). */
function setScale(amounts: number[], scale: number[]): void {
  const mean = (amounts[0]! + amounts[1]! + amounts[2]! + amounts[3]!) / 4;
  if (!(mean > 0)) return;
  for (let s = 0; s < 4; s++) scale[s] = 1 / Math.min(4, Math.max(0.25, amounts[s]! / mean));
}

/**
 * Site shares by least squares against a fitted star model: per site, amplitude =
 * Σ v·m / Σ m² with m the unit Moffat profile (pixel-integrated) of `fit`. The model samples
 * exactly where the data sample the star, so the shares carry no aliasing. False when unusable.
 */
function siteSharesByFit(ws: Workspace, size: number, px0: number, py0: number, fit: MoffatFit, scale: number[], skip: Uint8Array | null): boolean {
  const vm = [0, 0, 0, 0];
  const mm = [0, 0, 0, 0];
  for (let j = 0; j < size; j++) {
    const y = py0 + j;
    for (let i = 0; i < size; i++) {
      const v = ws.raw[j * size + i]!;
      if (v !== v || (skip && skip[j * size + i])) continue;
      const x = px0 + i;
      const m = moffatUnit(fit, x, y);
      const site = ((y & 1) << 1) | (x & 1);
      vm[site] = vm[site]! + (v - fit.background) * m;
      mm[site] = mm[site]! + m * m;
    }
  }
  for (let s = 0; s < 4; s++) {
    if (!(mm[s]! > 0)) return false;
    vm[s] = vm[s]! / mm[s]!;
  }
  setScale(vm, scale);
  return true;
}

function applyScale(ws: Workspace, size: number, px0: number, py0: number, cfa: boolean, scale: number[]): void {
  if (!cfa) {
    ws.values.set(ws.raw);
    return;
  }
  for (let j = 0; j < size; j++) {
    const y = py0 + j;
    for (let i = 0; i < size; i++) {
      const k = j * size + i;
      const v = ws.raw[k]!;
      ws.values[k] = cfa ? v * scale[((y & 1) << 1) | ((px0 + i) & 1)]! : v;
    }
  }
}

/**
 * Gaussian window along one axis: out[i] = exp(−(p0 + i − c)²·inv2) for i in [i0, i1], by the
 * recurrence w_{i±1} = w_i·g, with g itself updated by a constant factor: a handful of exp calls
 * per row instead of one per pixel (relative error ~1e-14). It runs outward from the pixel
 * nearest the centre, so values shrink monotonically and can only underflow to 0, harmlessly.
 */
function gaussianWeights(out: Float64Array, i0: number, i1: number, p0: number, c: number, inv2: number): void {
  let ic = Math.round(c) - p0;
  if (ic < i0) ic = i0;
  else if (ic > i1) ic = i1;
  const d = p0 + ic - c;
  const wc = Math.exp(-d * d * inv2);
  const k = Math.exp(-2 * inv2);
  out[ic] = wc;
  // Right: w(d + 1) = w(d)·exp(−(2d + 1)·inv2).
  let w = wc;
  let g = Math.exp(-(2 * d + 1) * inv2);
  for (let i = ic + 1; i <= i1; i++) {
    w *= g;
    g *= k;
    out[i] = w;
  }
  // Left: w(d − 1) = w(d)·exp((2d − 1)·inv2).
  w = wc;
  g = Math.exp((2 * d - 1) * inv2);
  for (let i = ic - 1; i >= i0; i--) {
    w *= g;
    g *= k;
    out[i] = w;
  }
}

/**
 * Iterative Gaussian-windowed centroid (SExtractor XWIN): x ← x + 2·Σw·I·(x_i − x)/Σw·I until
 * the step is < 1e-5 px. Null when the windowed flux is not positive, it wanders more than
 * `maxShift` from the start, or it does not converge.
 */
function windowedCentroid(ws: Workspace, size: number, px0: number, py0: number, x0: number, y0: number, sigmaW: number, maxShift: number): { x: number; y: number } | null {
  const inv2 = 1 / (2 * sigmaW * sigmaW);
  let xc = x0;
  let yc = y0;
  const values = ws.values;
  const wx = ws.wx;
  const wy = ws.wy;
  // The window is negligible (< 3e-3) beyond 3.4σ: sum over that box only.
  const reach = 3.4 * sigmaW;
  for (let it = 0; it < 30; it++) {
    const i0 = Math.max(0, Math.floor(xc - reach) - px0);
    const i1 = Math.min(size - 1, Math.ceil(xc + reach) - px0);
    const j0 = Math.max(0, Math.floor(yc - reach) - py0);
    const j1 = Math.min(size - 1, Math.ceil(yc + reach) - py0);
    gaussianWeights(wx, i0, i1, px0, xc, inv2);
    gaussianWeights(wy, j0, j1, py0, yc, inv2);
    let sw = 0;
    let sx = 0;
    let sy = 0;
    for (let j = j0; j <= j1; j++) {
      const dy = py0 + j - yc;
      const wyj = wy[j]!;
      const o = j * size;
      for (let i = i0; i <= i1; i++) {
        const v = values[o + i]!;
        if (v !== v) continue;
        const wv = wx[i]! * wyj * v;
        sw += wv;
        sx += wv * (px0 + i - xc);
        sy += wv * dy;
      }
    }
    if (!(sw > 0)) return null;
    let ddx = (2 * sx) / sw;
    let ddy = (2 * sy) / sw;
    const step = dist2d(ddx, ddy);
    if (step > 1) {
      ddx /= step;
      ddy /= step;
    }
    xc += ddx;
    yc += ddy;
    if (dist2d(xc - x0, yc - y0) > maxShift) return null;
    if (step < 1e-5) return { x: xc, y: yc };
  }
  return null;
}

/**
 * Object second moments (px²) at (xc, yc): Gaussian-windowed moments M, the window deconvolved
 * as (M⁻¹ − W⁻¹)⁻¹ (exact for Gaussian stars), the pixel's 1/12 px² removed.
 */
function windowedMoments(ws: Workspace, size: number, px0: number, py0: number, xc: number, yc: number, sigmaW: number): { mxx: number; myy: number; mxy: number } {
  const inv2 = 1 / (2 * sigmaW * sigmaW);
  const values = ws.values;
  const wx = ws.wx;
  const wy = ws.wy;
  gaussianWeights(wx, 0, size - 1, px0, xc, inv2);
  gaussianWeights(wy, 0, size - 1, py0, yc, inv2);
  let sw = 0;
  let sxx = 0;
  let syy = 0;
  let sxy = 0;
  for (let j = 0; j < size; j++) {
    const dy = py0 + j - yc;
    const o = j * size;
    for (let i = 0; i < size; i++) {
      const v = values[o + i]!;
      if (v !== v) continue;
      const dx = px0 + i - xc;
      const wv = wx[i]! * wy[j]! * v;
      sw += wv;
      sxx += wv * dx * dx;
      syy += wv * dy * dy;
      sxy += wv * dx * dy;
    }
  }
  let mxx = sxx / sw;
  let myy = syy / sw;
  let mxy = sxy / sw;
  const det = mxx * myy - mxy * mxy;
  const w2 = 1 / (sigmaW * sigmaW);
  if (det > 0) {
    const a = myy / det - w2;
    const c = mxx / det - w2;
    const b = -mxy / det;
    const d2 = a * c - b * b;
    if (a > 0 && c > 0 && d2 > 0) {
      mxx = c / d2;
      myy = a / d2;
      mxy = -b / d2;
    } else {
      // Object too wide for the window to deconvolve: keep the windowed moments, doubled.
      mxx *= 2;
      myy *= 2;
      mxy *= 2;
    }
  }
  return { mxx: Math.max(0.05, mxx - 1 / 12), myy: Math.max(0.05, myy - 1 / 12), mxy };
}

/**
 * Each 2×2 site's share of the sky (median over a sparse grid of cells / mean of the four
 * medians): raw mosaics record the sky's colour, so the sites' levels differ by tens of per cent.
 */
function siteMedianShares(plane: Float32Array, width: number, height: number): number[] {
  const stride = 8;
  const n = Math.floor(height / 2 / stride + 1) * Math.floor(width / 2 / stride + 1);
  const buf = [0, 1, 2, 3].map(() => new Float64Array(n));
  let k = 0;
  for (let yb = 0; 2 * yb + 1 < height; yb += stride) {
    for (let xb = 0; 2 * xb + 1 < width; xb += stride) {
      const o = 2 * yb * width + 2 * xb;
      buf[0]![k] = plane[o]!;
      buf[1]![k] = plane[o + 1]!;
      buf[2]![k] = plane[o + width]!;
      buf[3]![k] = plane[o + width + 1]!;
      k++;
    }
  }
  const med = buf.map((b) => {
    const finite = b.subarray(0, k).filter((v) => v === v);
    return medianOf(finite, finite.length);
  });
  const mean = (med[0]! + med[1]! + med[2]! + med[3]!) / 4;
  return mean > 0 && med.every((m) => m > 0) ? med.map((m) => m / mean) : [1, 1, 1, 1];
}

/** Local sky of a star: per-site level (null: measure an annulus) and per-pixel noise. */
interface LocalBackground {
  level: number[] | null;
  noise: number;
}

/**
 * Measures one star at (x0, y0) (full resolution): local background per site, site
 * normalisation (mosaic), windowed centroid and moments. Leaves the normalised patch in
 * ws.values (NaN = masked or outside) for an optional fit. Returns null on failure.
 */
function measureStar(
  data: Float32Array,
  width: number,
  height: number,
  cfa: boolean,
  x0: number,
  y0: number,
  g: Geometry,
  ws: Workspace,
  neighbours: { x: number; y: number }[],
  saturation: number,
  local: LocalBackground,
  spike: number,
): { m: Measured; patch: PatchView } | null {
  const sites = cfa ? 4 : 1;
  const cx = Math.round(x0);
  const cy = Math.round(y0);
  const noise = local.noise;
  // 1. Background per site: from the model, or the median of an annulus around the star.
  const bgSite = ws.bgSite;
  bgSite.fill(0);
  if (local.level) {
    for (let s = 0; s < sites; s++) bgSite[s] = local.level[s]!;
  } else {
    const counts = ws.annCounts;
    counts.fill(0);
    const rin2 = g.annIn * g.annIn;
    const rout2 = g.annOut * g.annOut;
    for (let y = Math.max(0, cy - g.annOut); y <= Math.min(height - 1, cy + g.annOut); y++) {
      const dy = y - y0;
      const dy2 = dy * dy;
      // Only the two ring segments of this row: skip the inner disc.
      const half = Math.sqrt(Math.max(0, rout2 - dy2));
      const inner = rin2 > dy2 ? Math.sqrt(rin2 - dy2) : -1;
      const xa = Math.max(0, Math.ceil(x0 - half));
      const xb = Math.min(width - 1, Math.floor(x0 + half));
      for (let x = xa; x <= xb; x++) {
        if (inner >= 0 && Math.abs(x - x0) < inner) {
          x = Math.ceil(x0 + inner) - 1;
          continue;
        }
        const v = data[y * width + x]!;
        if (!(v === v) || v >= saturation) continue;
        const s = cfa ? ((y & 1) << 1) | (x & 1) : 0;
        ws.ann[s]![counts[s]!++] = v;
      }
    }
    for (let s = 0; s < sites; s++) {
      if (counts[s]! < 5) return null;
      bgSite[s] = medianOf(ws.ann[s]!, counts[s]!);
    }
  }

  // 2. Patch of background-subtracted raw values; neighbours' pixels and non-finite ones masked.
  const R = g.radius;
  const size = 2 * R + 1;
  const px0 = cx - R;
  const py0 = cy - R;
  let saturated = false;
  let blended = false;
  // Saturation counts within max(3 px, 1.2 FWHM) of the star: its own core, not a neighbour's.
  const satR2 = Math.max(3, 1.2 * g.sigmaW * FWHM_PER_SIGMA) ** 2;
  const raw = ws.raw;
  const bg0 = bgSite[0]!;
  const nNb = neighbours.length;
  for (let j = 0; j < size; j++) {
    const y = py0 + j;
    const o = j * size;
    if (y < 0 || y >= height) {
      raw.fill(NaN, o, o + size);
      continue;
    }
    const dy = y - y0;
    // Columns inside the plane; the rest of the row is outside.
    const ia = Math.max(0, -px0);
    const ib = Math.min(size - 1, width - 1 - px0);
    if (ia > 0) raw.fill(NaN, o, o + ia);
    if (ib < size - 1) raw.fill(NaN, o + ib + 1, o + size);
    const row = y * width;
    const siteRow = (y & 1) << 1;
    for (let i = ia; i <= ib; i++) {
      const x = px0 + i;
      const v = data[row + x]!;
      if (v >= saturation && (x - x0) * (x - x0) + dy * dy <= satR2) saturated = true;
      let masked = !(v === v) || row + x === spike;
      if (!masked && nNb > 0) {
        const d0 = (x - x0) * (x - x0) + dy * dy;
        for (let q = 0; q < nNb; q++) {
          const nb = neighbours[q]!;
          if ((x - nb.x) * (x - nb.x) + (y - nb.y) * (y - nb.y) < d0) {
            masked = true;
            blended = true;
            break;
          }
        }
      }
      // (Two stores, not `masked ? NaN : …`: a merge with the NaN constant can make V8 box the value.)
      if (masked) raw[o + i] = NaN;
      else raw[o + i] = v - (cfa ? bgSite[siteRow | (x & 1)]! : bg0);
    }
  }

  // 3–5. Site normalisation (mosaic), centroid, moments. (Weighted sums per site alias by
  // ~1–2 % on the 2 px lattice; fitted stars are re-normalised against their fitted model.)
  const scale = ws.siteScale;
  scale.fill(1);
  if (cfa) siteSharesBySums(ws, size, px0, py0, x0, y0, g.normSigma, scale, saturation);
  applyScale(ws, size, px0, py0, cfa, scale);
  const c = windowedCentroid(ws, size, px0, py0, x0, y0, g.sigmaW, Math.max(2, R / 2));
  if (!c) return null;
  const mom = windowedMoments(ws, size, px0, py0, c.x, c.y, g.sigmaW);
  const xc = c.x;
  const yc = c.y;
  const { mxx, myy, mxy } = mom;

  // 6. Aperture flux (raw, background-subtracted values; masked neighbour pixels excluded) and peak.
  const ap2 = g.aperture * g.aperture;
  let flux = 0;
  let nAp = 0;
  let peak = -Infinity;
  for (let j = 0; j < size; j++) {
    const dy = py0 + j - yc;
    for (let i = 0; i < size; i++) {
      const dx = px0 + i - xc;
      const r2 = dx * dx + dy * dy;
      const v = ws.raw[j * size + i]!;
      if (v !== v) continue;
      if (r2 <= ap2) {
        flux += v;
        nAp++;
      }
      if (r2 <= 2.25 && v > peak) peak = v;
    }
  }
  let bgMean = 0;
  for (let s = 0; s < sites; s++) bgMean += bgSite[s]!;
  bgMean /= sites;
  return {
    m: { x: xc, y: yc, flux, peak, background: bgMean, noise, saturated, blended, mxx, myy, mxy, apertureN: nAp },
    patch: { values: ws.values, size, x0: px0, y0: py0 },
  };
}

function momentShape(m: Measured): { major: number; minor: number; angle: number } {
  const tr = (m.mxx + m.myy) / 2;
  const disc = Math.sqrt(((m.mxx - m.myy) / 2) ** 2 + m.mxy * m.mxy);
  const l1 = tr + disc;
  const l2 = Math.max(1e-6, tr - disc);
  let angle = (0.5 * Math.atan2(2 * m.mxy, m.mxx - m.myy) * 180) / Math.PI;
  if (angle < 0) angle += 180;
  return { major: FWHM_PER_SIGMA * Math.sqrt(l1), minor: FWHM_PER_SIGMA * Math.sqrt(l2), angle };
}

const eccentricityOf = (major: number, minor: number) => (major > 0 ? Math.sqrt(Math.max(0, 1 - (minor / major) ** 2)) : 0);

/** Half-maximum regions larger than this (px; a 22 px FWHM) do not count toward the rough scale. */
const HALF_MAX_AREA_CAP = 400;
/** A half-maximum flood that reaches a pixel this many times the candidate's peak has left its star. */
const PEAK_CLIMB = 1.5;

/** Fewer unsaturated stars fitted than this: up to SATURATED_FIT_COUNT saturated ones (faintest first) are fitted too. */
const SATURATED_FIT_BELOW = 5;
/** Floor of the hot-pixel test's neighbour/peak ratio: a PSF of FWHM ≥ 1.5 px gives ≥ ~0.19 (mono), ≥ 0.27 on the generator's frames; hot pixels ≤ 0.11. */
const MIN_STAR_RATIO = 0.1;
const SATURATED_FIT_COUNT = 12;

/** Where measured: the geometry (frame scale, or widened for a saturated core) and the start position. */
interface MeasuredAt {
  g: Geometry;
  x: number;
  y: number;
}

/**
 * Pixels of the last measured patch (ws.raw, background-subtracted per site) that reach the
 * saturation level, as a mask over the patch; they carry no shape information.
 */
function saturatedMask(ws: Workspace, size: number, px0: number, py0: number, cfa: boolean, level: number): Uint8Array {
  const mask = new Uint8Array(size * size);
  for (let j = 0; j < size; j++) {
    for (let i = 0; i < size; i++) {
      const site = cfa ? (((py0 + j) & 1) << 1) | ((px0 + i) & 1) : 0;
      const v = ws.raw[j * size + i]!;
      if (v === v && v + ws.bgSite[site]! >= level) mask[j * size + i] = 1;
    }
  }
  return mask;
}

/** Narrow-source test: minimum SNR for a trustworthy shape, and the fraction of the upper-quartile minor-axis moment FWHM below which a source is not a star. */
const NARROW_SNR = 10;
const NARROW_FRACTION = 0.6;

/** Ring radius of the local-contrast test in rough FWHMs, and its number of samples. */
const RING_FWHM = 2.5;
const RING_SAMPLES = 16;
const RING_COS = Float64Array.from({ length: RING_SAMPLES }, (_, k) => Math.cos((2 * Math.PI * k) / RING_SAMPLES));
const RING_SIN = Float64Array.from({ length: RING_SAMPLES }, (_, k) => Math.sin((2 * Math.PI * k) / RING_SAMPLES));

/** Median of D sampled (bilinearly) on a circle of radius r around a candidate; points outside the image are skipped. */
function ringMedian(sig: Significance, c: Candidate, r: number, buf: Float64Array): number {
  const { w, h } = sig;
  let n = 0;
  for (let k = 0; k < RING_SAMPLES; k++) {
    const x = c.ix + r * RING_COS[k]!;
    const y = c.iy + r * RING_SIN[k]!;
    if (x < 0 || y < 0 || x > w - 1 || y > h - 1) continue;
    // Insertion into the sorted prefix (16 values: cheaper than a selection).
    const v = sig.at(x, y);
    let j = n++;
    while (j > 0 && buf[j - 1]! > v) {
      buf[j] = buf[j - 1]!;
      j--;
    }
    buf[j] = v;
  }
  if (n < RING_SAMPLES / 2) return 0;
  return n & 1 ? buf[n >> 1]! : 0.5 * (buf[(n >> 1) - 1]! + buf[n >> 1]!);
}

/** Largest saturated core followed (px): beyond it the star is measured from the core found so far. */
const CORE_CAP = 4096;
/**
 * Least mean height of a saturated core's rim (above the sky, as a share of the clipped level's):
 * a star's profile runs on just below the clip (≥ ~0.4 on the generator's frames), a saturated
 * hot-pixel cluster drops to the sky at once.
 */
const MIN_CORE_EDGE = 0.15;

/**
 * The saturated core around (x, y): pixels at or above `level`, 8-connected (on a mosaic the
 * sites of one colour touch only diagonally), grown from the brightest such pixel within 2 px.
 * Centroid (unweighted: every clipped pixel reads the same) and the diameter of the disc of the
 * same area; `edge`: the rim's mean height above the sky (`scene.skyOf`) as a share of the clipped
 * level's. Null when no pixel near (x, y) is saturated.
 */
function saturatedCore(plane: Float32Array, width: number, height: number, x: number, y: number, level: number, stack: number[], scene: DetectScene): { x: number; y: number; diameter: number; edge: number } | null {
  if (!(level < Infinity)) return null;
  let seed = -1;
  let best = -Infinity;
  const cx = Math.round(x);
  const cy = Math.round(y);
  for (let yy = Math.max(0, cy - 2); yy <= Math.min(height - 1, cy + 2); yy++) {
    for (let xx = Math.max(0, cx - 2); xx <= Math.min(width - 1, cx + 2); xx++) {
      const v = plane[yy * width + xx]!;
      if (v >= level && v > best) {
        best = v;
        seed = yy * width + xx;
      }
    }
  }
  if (seed < 0) return null;
  const seen = new Set<number>([seed]);
  const rim = new Set<number>();
  stack.length = 0;
  stack.push(seed);
  let n = 0;
  let sx = 0;
  let sy = 0;
  let edge = 0;
  let edgeRange = 0;
  while (stack.length > 0 && n < CORE_CAP) {
    const k = stack.pop()!;
    const px = k % width;
    const py = (k - px) / width;
    n++;
    sx += px;
    sy += py;
    for (let dy = -1; dy <= 1; dy++) {
      const ny = py + dy;
      if (ny < 0 || ny >= height) continue;
      for (let dx = -1; dx <= 1; dx++) {
        const nx = px + dx;
        if (nx < 0 || nx >= width) continue;
        const q = ny * width + nx;
        if (seen.has(q) || rim.has(q)) continue;
        const v = plane[q]!;
        if (v >= level) {
          seen.add(q);
          stack.push(q);
        } else if (v === v) {
          // A rim pixel: its height above the sky as a share of the clipped level's.
          rim.add(q);
          const sky = scene.skyOf(nx, ny);
          edge += v - sky;
          edgeRange += level - sky;
        }
      }
    }
  }
  return { x: sx / n, y: sy / n, diameter: 2 * Math.sqrt(n / Math.PI), edge: edgeRange > 0 ? edge / edgeRange : 1 };
}

/** Rough frame FWHM (detection-image px) from the half-maximum areas of bright candidates. */
function halfMaxScale(scene: DetectScene, cands: Candidate[]): number {
  const { data: img, width: w, height: h } = scene.det;
  const sizes: number[] = [];
  const stack: number[] = [];
  const seen = new Set<number>();
  for (const c of cands) {
    if (sizes.length >= 25) break;
    if (scene.isSaturatedCand(c) || c.rawPeak <= 0) continue;
    // Peak pixel: the brightest in 3×3 (as found by sharpness()).
    const px = Math.round(c.fx);
    const py = Math.round(c.fy);
    const b = scene.levelAt(px, py);
    const half = c.rawPeak / 2;
    stack.length = 0;
    seen.clear();
    stack.push(py * w + px);
    seen.add(py * w + px);
    // A region that climbs well above the candidate's own peak belongs to a brighter neighbour
    // (the candidate sits on its wing: beside a saturated star, the flood would measure that
    // star's half-maximum disc, not this candidate's).
    const ceiling = PEAK_CLIMB * c.rawPeak;
    let area = 0;
    let climbed = false;
    while (stack.length > 0 && area < HALF_MAX_AREA_CAP && !climbed) {
      const k = stack.pop()!;
      area++;
      const x = k % w;
      const y = (k - x) / w;
      const visit = (n: number) => {
        const v = img[n]! - b;
        if (!seen.has(n) && v >= half) {
          if (v > ceiling) climbed = true;
          seen.add(n);
          stack.push(n);
        }
      };
      if (x > 0) visit(k - 1);
      if (x < w - 1) visit(k + 1);
      if (y > 0) visit(k - w);
      if (y < h - 1) visit(k + w);
    }
    // A region that reaches the cap is no star (a streak, a nebula, a saturated blob).
    if (area < HALF_MAX_AREA_CAP && !climbed) sizes.push(2 * Math.sqrt(area / Math.PI));
  }
  if (sizes.length === 0) return NaN;
  sizes.sort((a, b) => a - b);
  return sizes[sizes.length >> 1]!;
}

/** A candidate accepted by deblending, at its full-resolution start position. */
interface Start {
  x: number;
  y: number;
  c: Candidate;
}

/** A measured star: its measurement, its fit (if any), its start's index and where it was measured. */
interface MeasuredStar {
  m: Measured;
  fit: MoffatFit | null;
  index: number;
  at: MeasuredAt;
}

/**
 * One frame's detection state, shared by detectStars' stages (the functions below it). Methods
 * and stage functions rather than closures inside one long function, for V8: a frame worker runs
 * detectStars once per light, and one function of ~500 lines with its helpers inlined took
 * 260–440 ms to optimise, again after every deoptimisation (a closure that is a new object on
 * each frame, an array of another shape), three times per worker and run; small functions
 * compile in milliseconds each and a deoptimisation costs only its own stage.
 */
class DetectScene {
  readonly scale: number;
  readonly local: LocalBackground;
  private readonly workspaces = new Map<number, Workspace>();

  constructor(
    readonly plane: Float32Array,
    readonly width: number,
    readonly height: number,
    readonly cfa: boolean,
    /** The detection image: the plane, or a mosaic's luminance proxy. */
    readonly det: { data: Float32Array; width: number; height: number },
    readonly bg: BackgroundModel,
    readonly sig: Significance,
    readonly flattened: boolean,
    /** √Σg² of the matched filter: a D offset of L is L·σ·kernelNorm of the detection image. */
    readonly kernelNorm: number,
    readonly sat: ReturnType<typeof saturationResult>,
    /** Each 2×2 site's share of the sky on a mosaic (the sky's colour), for per-site levels. */
    readonly siteShare: number[],
    useAnnulus: boolean,
  ) {
    this.scale = cfa ? 2 : 1;
    this.local = { level: useAnnulus ? null : [0, 0, 0, 0], noise: 0 };
  }

  levelAt(x: number, y: number): number {
    return backgroundAt(this.bg, x, y);
  }

  /** Per-pixel noise at a full-resolution position (a proxy pixel sums four: half its σ each). */
  pixelNoise(x: number, y: number): number {
    return this.cfa ? 0.5 * noiseAt(this.bg, (x - 0.5) / 2, (y - 0.5) / 2) : noiseAt(this.bg, x, y);
  }

  /**
   * The model's sky corrected by the flattening's level there (the model is bilinear between
   * tiles ~64 px apart; under uncorrected vignetting it is off by σ's near the corners, enough to
   * turn a faint star's flux negative).
   */
  skyAt(xd: number, yd: number): number {
    return backgroundAt(this.bg, xd, yd) + (this.flattened ? this.sig.level(Math.round(xd), Math.round(yd)) * noiseAt(this.bg, xd, yd) * this.kernelNorm : 0);
  }

  /**
   * Local sky of a star. 'model': the tiled model (on a mosaic, the proxy level shared among the
   * sites in the proportions of their frame-wide medians, i.e. the sky's colour); 'annulus': a
   * median per site around the star (slower; better over nebulosity finer than the tiles).
   * One object, rewritten by each call.
   */
  localAt(x: number, y: number): LocalBackground {
    const local = this.local;
    local.noise = this.pixelNoise(x, y);
    if (local.level) {
      if (this.cfa) {
        const l = this.skyAt((x - 0.5) / 2, (y - 0.5) / 2) / 4;
        for (let q = 0; q < 4; q++) local.level[q] = l * this.siteShare[q]!;
      } else local.level[0] = this.skyAt(x, y);
    }
    return local;
  }

  /** The sky of one full-resolution pixel (its own site's level on a mosaic). */
  skyOf(x: number, y: number): number {
    const cfa = this.cfa;
    const l = this.localAt(x, y).level;
    return l ? l[cfa ? ((y & 1) << 1) | (x & 1) : 0]! : backgroundAt(this.bg, cfa ? (x - 0.5) / 2 : x, cfa ? (y - 0.5) / 2 : y) / (cfa ? 4 : 1);
  }

  /** Whether a candidate's peak cell touches a pixel at the saturation level. */
  isSaturatedCand(c: Candidate): boolean {
    const level = this.sat.level;
    if (level === Infinity) return false;
    const { plane, width, height, scale } = this;
    const x0 = Math.round(c.fx) * scale;
    const y0 = Math.round(c.fy) * scale;
    for (let y = Math.max(0, y0 - 1); y <= Math.min(height - 1, y0 + scale); y++) {
      for (let x = Math.max(0, x0 - 1); x <= Math.min(width - 1, x0 + scale); x++) if (plane[y * width + x]! >= level) return true;
    }
    return false;
  }

  /** The workspace of a measurement geometry (one per window and annulus size). */
  workspaceFor(g: Geometry): Workspace {
    const key = g.radius * 1000 + g.annOut;
    let ws = this.workspaces.get(key);
    if (!ws) this.workspaces.set(key, (ws = new Workspace(g.radius, g.annOut)));
    return ws;
  }

  measure(x: number, y: number, g: Geometry, ws: Workspace, neighbours: { x: number; y: number }[], spike: number): ReturnType<typeof measureStar> {
    return measureStar(this.plane, this.width, this.height, this.cfa, x, y, g, ws, neighbours, this.sat.level, this.localAt(x, y), spike);
  }
}

/** Detects and measures the stars of one plane (mono) or raw mosaic (`cfa: true`). */
export function detectStars(data: Float32Array, width: number, height: number, options: DetectOptions = {}): StarDetection | DetectionFailure {
  if (!(Number.isInteger(width) && Number.isInteger(height) && width > 0 && height > 0) || data.length < width * height) {
    return { ok: false, code: 'bad_input', detail: `plane of ${data.length} values does not hold ${width}×${height}` };
  }
  const cfa = options.cfa ?? false;
  if (cfa && (width < 8 || height < 8)) return { ok: false, code: 'bad_input', detail: 'mosaic smaller than 8×8' };
  const threshold = options.threshold ?? 5;
  const maxStars = options.maxStars ?? 5000;
  const fitCount = options.fitCount ?? 64;
  const minSharp = options.minSharpness ?? 0.4;
  const dContrast = options.deblendContrast ?? 3;
  const dFraction = options.deblendFraction ?? 0.2;
  const plane = data.length === width * height ? data : data.subarray(0, width * height);
  const t0 = performance.now();
  const timings: DetectionTimings = { background: 0, filter: 0, candidates: 0, measure: 0, fit: 0, total: 0 };

  // Saturation: a running scan over every pixel of the plane, fused into the matched filter's
  // pass on a mono plane (a separate pass on a mosaic, whose filter runs on the proxy).
  const scan = saturationScan(options.saturationLevel);
  if (cfa) saturationScanAll(plane, scan);

  // Detection image.
  const det = cfa ? luminanceProxy(plane, width, height) : { data: plane, width, height };
  const scale = cfa ? 2 : 1;
  const { width: w, height: h } = det;
  const bg = estimateBackground(det.data, w, h, options.background);
  if (!Number.isFinite(bg.median)) return { ok: false, code: 'no_data', detail: 'no finite pixel' };
  if (!(bg.rms > 0)) return { ok: false, code: 'no_noise', detail: 'background noise is zero: a constant or synthetic noiseless image' };
  const t1 = performance.now();
  timings.background = t1 - t0;
  const kernel = gaussianKernel(options.filterFwhm ?? (cfa ? 1.5 : 2));
  const flattenBlock = options.flattenBlock ?? Math.max(8, Math.round(32 / scale));
  const sampler = flattenBlock > 0 ? new BlockSampler(w, h, flattenBlock) : null;
  const { D, blocks } = significance(det.data, w, h, bg, kernel, cfa ? saturationScan(undefined) : scan, sampler, options.scratch);
  const flat = sampler ? flattenSignificance(sampler, blocks, options.resampled ?? false) : null;
  const sig = new Significance(D, w, h, flat);
  let kernelNorm = 0;
  for (let k = 0; k < kernel.length; k++) kernelNorm += kernel[k]! * kernel[k]!;
  const sat = saturationResult(scan, width * height);
  const siteShare = cfa ? siteMedianShares(plane, width, height) : [1, 1, 1, 1];
  const scene = new DetectScene(plane, width, height, cfa, det, bg, sig, flat !== null, kernelNorm, sat, siteShare, options.localBackground === 'annulus');
  const t2 = performance.now();
  timings.filter = t2 - t1;

  const counts: DetectionCounts = { candidates: 0, hotPixels: 0, merged: 0, streaks: 0, diffuse: 0, narrow: 0, edge: 0, failed: 0, fitted: 0 };
  let cands = localMaxima(sig, threshold, 1, blocks);
  counts.candidates = cands.length;
  refinePeaks(scene, cands);
  cands.sort((a, b) => b.d - a.d);
  cands = rejectStreaks(scene, rejectHotPixels(scene, cands, minSharp, counts), threshold, counts);

  // Frame scale, first rough (half-maximum areas), used for the deblending reach.
  const rough = halfMaxScale(scene, cands);
  const roughDet = Number.isFinite(rough) ? Math.max(1, rough) : 2.5 / scale;
  cands = rejectDiffuse(scene, cands, roughDet, threshold, counts);
  const accepted = deblend(scene, cands, roughDet, threshold, dContrast, dFraction, counts);

  // Full-resolution start positions.
  const starts: Start[] = accepted.map((c) => ({ x: cfa ? proxyToFull(c.fx) : c.fx, y: cfa ? proxyToFull(c.fy) : c.fy, c }));
  let fwhmScale = frameFwhmScale(scene, starts, roughDet * scale);
  if (!(fwhmScale > 0.5)) fwhmScale = 2.5;
  const geo = geometryFor(fwhmScale);
  const t3 = performance.now();
  timings.candidates = t3 - t2;

  const measured = measureStarts(scene, starts, geo, fwhmScale, counts);
  const t4 = performance.now();
  timings.measure = t4 - t3;
  // Brightest first. Two candidates whose centroids converged onto the same star (a maximum on a
  // star's wing that survived deblending) keep only the brighter.
  measured.sort((a, b) => b.m.flux - a.m.flux);
  dropDuplicates(measured, fwhmScale, counts);
  fitBrightest(scene, measured, starts, fitCount, geo, counts);
  const t5 = performance.now();
  timings.fit = t5 - t4;
  const stars = starList(measured, momentToFitRatio(measured), options.gain, maxStars, counts);
  return {
    ok: true,
    stars,
    width,
    height,
    cfa,
    background: bg,
    backgroundMedian: cfa ? bg.median / 4 : bg.median,
    backgroundRms: cfa ? bg.rms / 2 : bg.rms,
    saturationLevel: sat.level,
    saturationSource: sat.source,
    saturatedFraction: sat.fraction,
    fwhmScale,
    apertureRadius: geo.aperture,
    counts,
    timings: { ...timings, total: performance.now() - t0 },
  };
}

/**
 * Peak and 3×3 centroid of each candidate on the detection image (a better start than the
 * integer maximum); the neighbour ratio always at full resolution, where a hot pixel is one pixel
 * of the plane (on the proxy it is diluted into a cell and stars are undersampled). In raster
 * order (as localMaxima found them): neighbouring candidates then share cached rows.
 */
function refinePeaks(scene: DetectScene, cands: Candidate[]): void {
  const { det, plane, width, height, cfa, siteShare } = scene;
  const skyDet = [0];
  const skyFull = [0, 0, 0, 0];
  for (const c of cands) {
    skyDet[0] = scene.levelAt(c.ix, c.iy);
    const d = peakRatio(det.data, det.width, det.height, c.ix - 1, c.ix + 1, c.iy - 1, c.iy + 1, skyDet, false);
    c.rawPeak = d.peak;
    c.fx = d.cx;
    c.fy = d.cy;
    if (cfa) for (let q = 0; q < 4; q++) skyFull[q] = (skyDet[0]! / 4) * siteShare[q]!;
    const f = cfa ? peakRatio(plane, width, height, 2 * c.ix - 1, 2 * c.ix + 2, 2 * c.iy - 1, 2 * c.iy + 2, skyFull, true) : d;
    c.ratio = f.ratio;
    c.mean8 = f.mean8;
    c.peakIndex = f.index;
  }
}

/**
 * Hot pixels: a neighbour/peak ratio far below the typical star's. The typical ratio comes from
 * the most significant 50 candidates, leaving out those with (almost) no light in their
 * neighbours: under clouds the brightest hot pixels can outnumber the stars at the top of the
 * list, and they must not set the norm. Returns the candidates kept, in their order.
 */
function rejectHotPixels(scene: DetectScene, cands: Candidate[], minSharp: number, counts: DetectionCounts): Candidate[] {
  const { plane, width, height, cfa } = scene;
  const ratios: number[] = [];
  for (const c of cands) {
    if (ratios.length >= 50) break;
    if (!scene.isSaturatedCand(c) && c.rawPeak > 0 && c.ratio > SURE_HOT_RATIO) ratios.push(c.ratio);
  }
  ratios.sort((a, b) => a - b);
  const typicalRatio = ratios.length >= 5 ? ratios[ratios.length >> 1]! : cfa ? 0.3 : 0.45;
  const minRatio = Math.max(minSharp * typicalRatio, MIN_STAR_RATIO);
  const notHot: Candidate[] = [];
  const ringScratch = [new Float64Array(40), new Float64Array(40), new Float64Array(40), new Float64Array(40)];
  for (const c of cands) {
    if (c.rawPeak <= 0) {
      counts.hotPixels++;
      continue;
    }
    if (c.ratio < minRatio) {
      // A single-pixel spike — unless its neighbours stand clearly above the sky on their own
      // (5σ for their mean): then it is a hot pixel or cosmic ray on a star, and the star stays
      // with that pixel masked. Saturated candidates too: a hot pixel saturates in a long
      // exposure, while a saturated star's neighbours are bright (or clipped) themselves.
      const px = c.peakIndex % width;
      const py = (c.peakIndex - px) / width;
      const sigma8 = scene.pixelNoise(px, py) / Math.sqrt(8);
      // The neighbours' excess over their own colour's level right around them (the frame-wide
      // sky model can be off by a few σ per site on a raw mosaic under vignetting).
      if (!(localExcess8(plane, width, height, px, py, cfa, ringScratch) >= 5 * sigma8)) {
        counts.hotPixels++;
        continue;
      }
      if (!scene.isSaturatedCand(c)) c.spike = c.peakIndex;
    }
    notHot.push(c);
  }
  return notHot;
}

/** Points of long straight streaks refused; tested in raster order (its samples of D then hit cached rows), kept in brightness order. */
function rejectStreaks(scene: DetectScene, notHot: Candidate[], threshold: number, counts: DetectionCounts): Candidate[] {
  const streakDistance = Math.max(6, 24 / scene.scale);
  const streakTable = streakOffsets(streakDistance);
  const streak = new Uint8Array(notHot.length);
  const streakOrder = rasterOrder(notHot.length, (k) => notHot[k]!.iy, (k) => notHot[k]!.ix);
  for (let q = 0; q < streakOrder.length; q++) {
    const k = streakOrder[q]!;
    streak[k] = onStreak(scene.sig, notHot[k]!, streakDistance, threshold, streakTable) ? 1 : 0;
  }
  const kept: Candidate[] = [];
  for (let k = 0; k < notHot.length; k++) {
    if (streak[k]) counts.streaks++;
    else kept.push(notHot[k]!);
  }
  return kept;
}

/**
 * A star stands above its own surroundings: D at the maximum minus the median of D on a ring
 * RING_FWHM rough FWHMs out (where a PSF has fallen to < 1 % of its peak) must still reach the
 * threshold. Noise peaks on a plateau (a bright star's halo, a dust shadow's rim, residual
 * vignetting, nebulosity) have the plateau all round them and fail. In raster order (the samples
 * then hit cached rows of D), kept in brightness order.
 */
function rejectDiffuse(scene: DetectScene, cands: Candidate[], roughDet: number, threshold: number, counts: DetectionCounts): Candidate[] {
  const ringR = Math.max(3, RING_FWHM * roughDet);
  const ring = new Float64Array(RING_SAMPLES);
  const diffuse = new Uint8Array(cands.length);
  const order = rasterOrder(cands.length, (k) => cands[k]!.iy, (k) => cands[k]!.ix);
  for (let q = 0; q < order.length; q++) {
    const c = cands[order[q]!]!;
    if (c.d - ringMedian(scene.sig, c, ringR, ring) < threshold) diffuse[order[q]!] = 1;
  }
  const kept: Candidate[] = [];
  for (let k = 0; k < cands.length; k++) {
    if (diffuse[k]) counts.diffuse++;
    else kept.push(cands[k]!);
  }
  return kept;
}

/** Deblending by saddles, brightest first; sets each accepted candidate's reach. */
function deblend(scene: DetectScene, cands: Candidate[], roughDet: number, threshold: number, dContrast: number, dFraction: number, counts: DetectionCounts): Candidate[] {
  const alphaDet = roughDet / (2 * Math.sqrt(2 ** (1 / 3) - 1));
  const grid = new Grid(16);
  const accepted: Candidate[] = [];
  const nearIds: number[] = [];
  const maxReach = 60;
  // The largest reach accepted so far bounds the neighbour query.
  let widest = 0;
  for (const c of cands) {
    let absorbed = false;
    grid.near(c.ix, c.iy, widest, nearIds);
    for (const id of nearIds) {
      const a = accepted[id]!;
      const dist = dist2d(a.ix - c.ix, a.iy - c.iy);
      if (dist > a.reach) continue;
      const s = saddle(scene.sig, a, c);
      const dip = c.d - s;
      if (dip < Math.max(dContrast, dFraction * c.d)) {
        absorbed = true;
        break;
      }
    }
    if (absorbed) {
      counts.merged++;
      continue;
    }
    // Reach: where a Moffat (β = 3) of this significance falls to the threshold, plus a margin,
    // and at least 1.5 FWHM (closer maxima are not two resolved stars).
    c.reach = Math.min(maxReach, Math.max(1.5 * roughDet, alphaDet * Math.sqrt(Math.max(0, Math.cbrt(c.d / threshold) - 1)) + 2));
    widest = Math.max(widest, c.reach);
    grid.add(accepted.length, c.ix, c.iy);
    accepted.push(c);
  }
  return accepted;
}

/**
 * Frame FWHM scale: windowed moments of up to 25 bright unsaturated stars, with the rough scale
 * as window; the median of their √(major·minor) FWHM then sizes every window and aperture (on a
 * trailed frame that covers the trails). `roughFull` where fewer than 3 stars measure.
 */
function frameFwhmScale(scene: DetectScene, starts: Start[], roughFull: number): number {
  const g0 = geometryFor(roughFull);
  const ws0 = new Workspace(g0.radius, g0.annOut);
  const round: number[] = [];
  const all: number[] = [];
  for (const s of starts) {
    if (all.length >= 25) break;
    if (scene.isSaturatedCand(s.c)) continue;
    const r = scene.measure(s.x, s.y, g0, ws0, [], s.c.spike);
    if (!r || r.m.saturated) continue;
    const ms = momentShape(r.m);
    const size = Math.sqrt(ms.major * ms.minor);
    all.push(size);
    // Round ones set the scale unless most are elongated (a trailed frame): remnants of a
    // streak must not.
    if (eccentricityOf(ms.major, ms.minor) < 0.8) round.push(size);
  }
  const pick = round.length >= 0.4 * all.length ? round : all;
  if (pick.length < 3) return roughFull;
  pick.sort((a, b) => a - b);
  return pick[pick.length >> 1]!;
}

/**
 * Measures every start away from the border, in raster order (neighbouring stars share cached
 * rows of the plane); returns them in the starts' order. A saturated core is a plateau on which
 * the frame-scale window has no gradient to follow: such a star is centred from its core and
 * measured with window and aperture widened by the core's diameter (its shape is never used:
 * saturated stars stay out of the shape metrics).
 */
function measureStarts(scene: DetectScene, starts: Start[], geo: Geometry, fwhmScale: number, counts: DetectionCounts): MeasuredStar[] {
  const { plane, width, height, sat } = scene;
  const ws = scene.workspaceFor(geo);
  const border = Math.ceil(1.3 * fwhmScale) + 1;
  const fullGrid = new Grid(16);
  for (let i = 0; i < starts.length; i++) fullGrid.add(i, starts[i]!.x, starts[i]!.y);
  const neighbourIds: number[] = [];
  const neighbours: { x: number; y: number }[] = [];
  const coreScratch: number[] = [];
  const byIndex: (MeasuredStar | null)[] = new Array<MeasuredStar | null>(starts.length).fill(null);
  const measureOrder = rasterOrder(starts.length, (k) => starts[k]!.y, (k) => starts[k]!.x);
  for (let q = 0; q < measureOrder.length; q++) {
    const i = measureOrder[q]!;
    const s = starts[i]!;
    if (s.x < border || s.y < border || s.x > width - 1 - border || s.y > height - 1 - border) {
      counts.edge++;
      continue;
    }
    neighbours.length = 0;
    fullGrid.near(s.x, s.y, geo.radius * 1.5, neighbourIds);
    for (const id of neighbourIds) {
      if (id === i) continue;
      const o = starts[id]!;
      if (dist2d(o.x - s.x, o.y - s.y) < geo.radius * 1.5) neighbours.push({ x: o.x, y: o.y });
    }
    let g = geo;
    let wsStar = ws;
    let sx = s.x;
    let sy = s.y;
    if (scene.isSaturatedCand(s.c)) {
      const core = saturatedCore(plane, width, height, s.x, s.y, sat.level, coreScratch, scene);
      if (core && core.edge < MIN_CORE_EDGE) {
        // Clipped pixels with the sky right beside them: a hot-pixel cluster that saturated.
        counts.hotPixels++;
        continue;
      }
      if (core) {
        sx = core.x;
        sy = core.y;
        g = geometryFor(fwhmScale + core.diameter);
        wsStar = scene.workspaceFor(g);
      }
    }
    const r = scene.measure(sx, sy, g, wsStar, neighbours, s.c.spike);
    if (!r || !(r.m.flux > 0)) {
      counts.failed++;
      continue;
    }
    byIndex[i] = { m: r.m, fit: null, index: i, at: { g, x: sx, y: sy } };
  }
  const measured: MeasuredStar[] = [];
  for (const b of byIndex) if (b) measured.push(b);
  return measured;
}

/** Of two measurements closer than half the frame scale (brightest first), only the first stays. */
function dropDuplicates(measured: MeasuredStar[], fwhmScale: number, counts: DetectionCounts): void {
  const same = Math.max(1, 0.5 * fwhmScale);
  const seen = new Grid(16);
  const nearIds: number[] = [];
  const unique: MeasuredStar[] = [];
  for (const e of measured) {
    if (seen.near(e.m.x, e.m.y, same, nearIds).some((id) => dist2d(unique[id]!.m.x - e.m.x, unique[id]!.m.y - e.m.y) < same)) {
      counts.merged++;
      continue;
    }
    seen.add(unique.length, e.m.x, e.m.y);
    unique.push(e);
  }
  measured.length = 0;
  measured.push(...unique);
}

/**
 * Fits the brightest unsaturated, unblended stars (re-extracting their patch). A frame with
 * fewer than SATURATED_FIT_BELOW such stars (a wide field of only bright stars) fits its
 * brightest saturated ones too, their clipped pixels left out: the Moffat profile of the
 * unclipped wings still measures the seeing (on the generator's wide fields within ~30 % of the
 * true FWHM, and rising with it), where moments of a clipped core would measure its brightness.
 */
function fitBrightest(scene: DetectScene, measured: MeasuredStar[], starts: Start[], fitCount: number, geo: Geometry, counts: DetectionCounts): void {
  const fitQueue: number[] = [];
  for (let q = 0; q < measured.length && fitQueue.length < fitCount; q++) {
    const e = measured[q]!;
    if (!e.m.saturated && !e.m.blended) fitQueue.push(q);
  }
  const state: FitScratch = { values: new Float64Array((2 * geo.fitRadius + 1) ** 2), siteScale: [1, 1, 1, 1] };
  for (const q of fitQueue) fitOne(scene, measured[q]!, starts, state, counts);
  if (fitCount > 0 && counts.fitted < SATURATED_FIT_BELOW) {
    // Faintest saturated first: the smaller the clipped core, the more of the profile is left.
    let added = 0;
    for (let q = measured.length - 1; q >= 0 && added < SATURATED_FIT_COUNT; q--) {
      const e = measured[q]!;
      if (e.m.saturated && !e.m.blended) {
        fitOne(scene, e, starts, state, counts);
        added++;
      }
    }
  }
}

/** Fit buffers shared by a frame's fits: the fitted patch (grown as needed) and the CFA site scales. */
interface FitScratch {
  values: Float64Array;
  siteScale: number[];
}

/** The central fs × fs of a measured patch (clipped pixels NaN) into `out`. */
function extractFitPatch(out: Float64Array, fs: number, off: number, ps: number, values: ArrayLike<number>, clipped: Uint8Array | null): void {
  for (let j = 0; j < fs; j++) {
    for (let i = 0; i < fs; i++) {
      const k = (j + off) * ps + i + off;
      out[j * fs + i] = clipped && clipped[k] ? NaN : values[k]!;
    }
  }
}

/** Re-measures one star and fits a Moffat to the central (2·fitRadius + 1)² of its patch; a sane fit is kept on the entry. */
function fitOne(scene: DetectScene, e: MeasuredStar, starts: Start[], state: FitScratch, counts: DetectionCounts): void {
  const { cfa, sat } = scene;
  const s = starts[e.index]!;
  const g = e.at.g;
  const wsFit = scene.workspaceFor(g);
  const r = scene.measure(e.at.x, e.at.y, g, wsFit, [], s.c.spike);
  if (!r) return;
  // The core and inner wings hold nearly all the information on width and β, at a fraction of
  // the cost of the whole patch.
  const fr = g.fitRadius;
  const fs = 2 * fr + 1;
  const off = g.radius - fr;
  if (state.values.length < fs * fs) state.values = new Float64Array(fs * fs);
  const fitValuesStar = state.values;
  const { size: ps, x0: px0, y0: py0 } = r.patch;
  const clipped = e.m.saturated ? saturatedMask(wsFit, ps, px0, py0, cfa, sat.level) : null;
  extractFitPatch(fitValuesStar, fs, off, ps, r.patch.values, clipped);
  const fitPatch: PatchView = { values: fitValuesStar, size: fs, x0: px0 + off, y0: py0 + off };
  let fit = wsFit.fitter.fit(fitPatch, { x: r.m.x, y: r.m.y, amplitude: Math.max(r.m.peak, 1e-9), mxx: r.m.mxx, myy: r.m.myy, mxy: r.m.mxy });
  for (let round = 0; round < CFA_REFITS && cfa && fit.ok && siteSharesByFit(wsFit, ps, px0, py0, fit, state.siteScale, clipped); round++) {
    // Re-normalise the sites against the fitted profile, then re-centre and refit.
    applyScale(wsFit, ps, px0, py0, true, state.siteScale);
    const c = windowedCentroid(wsFit, ps, px0, py0, r.m.x, r.m.y, g.sigmaW, 1);
    if (c) {
      e.m.x = c.x;
      e.m.y = c.y;
    }
    extractFitPatch(fitValuesStar, fs, off, ps, r.patch.values, clipped);
    const refit = wsFit.fitter.fit(fitPatch, { x: fit.x, y: fit.y, amplitude: fit.amplitude, mxx: r.m.mxx, myy: r.m.myy, mxy: r.m.mxy }, 40, fit);
    if (refit.ok) fit = refit;
  }
  const sane = fit.ok && dist2d(fit.x - r.m.x, fit.y - r.m.y) < 1.5 && fit.beta >= 0.8 && fit.fwhmMinor > 0.3 && fit.fwhmMajor < 4 * g.radius;
  if (sane) {
    e.fit = fit;
    counts.fitted++;
  }
}

/** Calibration of moment FWHMs to the fits: the median fit/moment ratio over the fitted unsaturated stars (1 below 3 fits). */
function momentToFitRatio(measured: MeasuredStar[]): number {
  const ratiosFit: number[] = [];
  for (const e of measured) {
    if (!e.fit || e.m.saturated) continue;
    const ms = momentShape(e.m);
    ratiosFit.push(Math.sqrt(e.fit.fwhmMajor * e.fit.fwhmMinor) / Math.sqrt(ms.major * ms.minor));
  }
  ratiosFit.sort((a, b) => a - b);
  return ratiosFit.length >= 3 ? ratiosFit[ratiosFit.length >> 1]! : 1;
}

/**
 * The stars (brightest first, at most maxStars), less the narrow sources: among sources bright
 * enough for a trustworthy shape (SNR ≥ NARROW_SNR), a minor-axis moment FWHM below
 * NARROW_FRACTION of those sources' upper quartile is a hot-pixel cluster or a cosmic-ray track
 * (2×2 and 1×2 clusters measure 0.4–0.55 of a 2.5 px star's; real stars of that SNR stay above
 * ~0.9 of the median on the generator's frames). Moments, not fits: a fit of a blended or odd
 * star can come out narrow where its moments do not.
 */
function starList(measured: MeasuredStar[], momentToFit: number, gain: number | undefined, maxStars: number, counts: DetectionCounts): Star[] {
  const all: Star[] = [];
  // Minor-axis FWHM from the calibrated moments of every star (fitted or not), for the narrow test.
  const momentMinor: number[] = [];
  for (const e of measured) {
    const m = e.m;
    let major: number;
    let minor: number;
    let angle: number;
    const ms = momentShape(m);
    momentMinor.push(ms.minor * momentToFit);
    if (e.fit) {
      major = e.fit.fwhmMajor;
      minor = e.fit.fwhmMinor;
      angle = e.fit.angle;
    } else {
      major = ms.major * momentToFit;
      minor = ms.minor * momentToFit;
      angle = ms.angle;
    }
    const variance = m.apertureN * m.noise * m.noise + (gain && gain > 0 ? Math.max(0, m.flux) / gain : 0);
    all.push({
      x: m.x,
      y: m.y,
      flux: m.flux,
      peak: m.peak,
      background: m.background,
      snr: variance > 0 ? m.flux / Math.sqrt(variance) : Infinity,
      fwhm: Math.sqrt(major * minor),
      fwhmMajor: major,
      fwhmMinor: minor,
      eccentricity: eccentricityOf(major, minor),
      angle,
      beta: e.fit ? e.fit.beta : null,
      shape: e.fit ? 'fit' : 'moments',
      saturated: m.saturated,
      blended: m.blended,
    });
  }
  const shapes: number[] = [];
  for (let k = 0; k < all.length; k++) {
    const st = all[k]!;
    if (!st.saturated && st.snr >= NARROW_SNR && Number.isFinite(momentMinor[k]!)) shapes.push(momentMinor[k]!);
  }
  shapes.sort((a, b) => a - b);
  // Relative to the upper quartile: where clusters outnumber the bright stars they pull a median down.
  const narrowBelow = shapes.length >= 5 ? NARROW_FRACTION * shapes[Math.floor(0.75 * (shapes.length - 1))]! : 0;
  const stars: Star[] = [];
  for (let k = 0; k < all.length; k++) {
    const st = all[k]!;
    // Saturated sources too: a saturated star's clipped core and wings measure wider than any
    // unsaturated star, a hot-pixel cluster clipped at the same level stays a pixel or two.
    if (st.snr >= NARROW_SNR && momentMinor[k]! < narrowBelow) {
      counts.narrow++;
      if (st.shape === 'fit') counts.fitted--;
      continue;
    }
    if (stars.length < maxStars) stars.push(st);
  }
  return stars;
}
