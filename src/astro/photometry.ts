// Aperture photometry of catalogue stars on a planar RGB image: centroid near the predicted
// position, aperture sum minus the annulus median sky per channel, radii scaled by the FWHM
// (the predecessor's auto_fwhm: r_ap = max(min_aperture, 1.8·FWHM), r_in = max(r_ap + 1, 3·FWHM),
// r_out = max(r_in + 2, 5·FWHM)).
//
// Centroids are found on the channel sum so all three channels share one aperture (colour ratios
// then carry no position error). Rejections are reported by reason so the diagnostics can say why
// few stars were usable; saturated and non-linear stars are refused (SaturationTest below),
// because a clipped core is clipped in every channel alike and pulls the star's colour to grey.

import { MAD_TO_SIGMA, medianInPlace } from '../algorithms/robust-stats.js';

export interface Planes {
  width: number;
  height: number;
  /** R, G, B planes, each width·height. */
  c: [Float32Array, Float32Array, Float32Array];
}

export interface Radii {
  aperture: number;
  inner: number;
  outer: number;
}

export function radiiFor(fwhm: number, minAperture: number): Radii {
  const aperture = Math.max(minAperture, 1.8 * fwhm);
  const inner = Math.max(aperture + 1, 3 * fwhm);
  const outer = Math.max(inner + 2, 5 * fwhm);
  return { aperture, inner, outer };
}

function median(v: number[]): number {
  if (v.length === 0) return NaN;
  const s = v.slice().sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

function quantileSorted(s: ArrayLike<number>, q: number): number {
  const p = q * (s.length - 1);
  const i = Math.floor(p);
  return i + 1 < s.length ? s[i]! + (s[i + 1]! - s[i]!) * (p - i) : s[i]!;
}

export interface ChannelStats {
  /** Sigma-clipped median (sky level). */
  sky: number;
  /** MAD sigma of the sky. */
  noise: number;
  /** Largest finite sample (saturation proxy). */
  max: number;
}

/** Sky level, noise and max of one plane from a strided sample, 3σ clipped (stars excluded). */
export function channelStats(plane: Float32Array, maxSamples = 100_000): ChannelStats {
  const stride = Math.max(1, Math.floor(plane.length / maxSamples));
  const sample = new Float64Array(Math.ceil(plane.length / stride));
  let m = 0;
  let max = -Infinity;
  for (let i = 0; i < plane.length; i++) {
    const x = plane[i]!;
    if (x - x !== 0) continue;
    if (x > max) max = x;
    if (i % stride === 0) sample[m++] = x;
  }
  if (m === 0) return { sky: NaN, noise: NaN, max: NaN };
  let v = sample.subarray(0, m);
  const scratch = new Float64Array(m);
  const medMad = (a: Float64Array): [number, number] => {
    const s = scratch.subarray(0, a.length);
    s.set(a);
    const med = medianInPlace(s);
    for (let i = 0; i < s.length; i++) s[i] = Math.abs(a[i]! - med);
    return [med, MAD_TO_SIGMA * medianInPlace(s)];
  };
  let [sky, noise] = medMad(v);
  for (let it = 0; it < 3 && noise > 0; it++) {
    const lo = sky - 3 * noise;
    const hi = sky + 3 * noise;
    let k = 0;
    for (let i = 0; i < v.length; i++) if (v[i]! >= lo && v[i]! <= hi) v[k++] = v[i]!;
    v = v.subarray(0, k);
    [sky, noise] = medMad(v);
  }
  return { sky, noise, max };
}

/** Sum of the three channels at pixel i (NaN when any is missing). */
const lum = (p: Planes, i: number) => p.c[0][i]! + p.c[1][i]! + p.c[2][i]!;

export interface Peak {
  x: number;
  y: number;
  /** Peak of the channel sum above the local sky, in units of the summed noise. */
  significance: number;
  /** Second-moment FWHM (px) of the channel sum around the peak. */
  fwhm: number;
  /** Brightest channel-sum sample (to tell saturated, flat-topped stars). */
  peak: number;
}

/**
 * Brightest pixel of the channel sum within `search` px of (x0, y0), refined to an intensity-
 * weighted centroid within `window` px, with a second-moment FWHM. null when out of bounds or flat.
 */
export function findPeak(p: Planes, x0: number, y0: number, search: number, window: number, lumNoise: number): Peak | null {
  const { width, height } = p;
  const ro = search + window + 6;
  if (x0 - ro < 0 || y0 - ro < 0 || x0 + ro >= width || y0 + ro >= height) return null;
  let best = -Infinity;
  let bx = 0;
  let by = 0;
  const s2 = search * search;
  for (let y = Math.floor(y0 - search); y <= Math.ceil(y0 + search); y++) {
    for (let x = Math.floor(x0 - search); x <= Math.ceil(x0 + search); x++) {
      if ((x - x0) ** 2 + (y - y0) ** 2 > s2) continue;
      const v = lum(p, y * width + x);
      if (v > best) {
        best = v;
        bx = x;
        by = y;
      }
    }
  }
  if (!(best > -Infinity)) return null;
  // Local sky of the sum: ring just outside the window around the peak.
  const ring: number[] = [];
  const r1 = window + 2;
  const r2 = window + 6;
  for (let y = by - r2; y <= by + r2; y++) {
    for (let x = bx - r2; x <= bx + r2; x++) {
      const d2 = (x - bx) ** 2 + (y - by) ** 2;
      if (d2 >= r1 * r1 && d2 <= r2 * r2) {
        const v = lum(p, y * width + x);
        if (v - v === 0) ring.push(v);
      }
    }
  }
  const sky = median(ring);
  let sw = 0;
  let sx = 0;
  let sy = 0;
  for (let y = by - window; y <= by + window; y++) {
    for (let x = bx - window; x <= bx + window; x++) {
      if ((x - bx) ** 2 + (y - by) ** 2 > window * window) continue;
      const w = lum(p, y * width + x) - sky;
      if (w > 0) {
        sw += w;
        sx += w * x;
        sy += w * y;
      }
    }
  }
  if (!(sw > 0)) return null;
  const cx = sx / sw;
  const cy = sy / sw;
  let mxx = 0;
  let myy = 0;
  let mxy = 0;
  for (let y = by - window; y <= by + window; y++) {
    for (let x = bx - window; x <= bx + window; x++) {
      if ((x - bx) ** 2 + (y - by) ** 2 > window * window) continue;
      const w = lum(p, y * width + x) - sky;
      if (w > 0) {
        mxx += w * (x - cx) ** 2;
        myy += w * (y - cy) ** 2;
        mxy += w * (x - cx) * (y - cy);
      }
    }
  }
  mxx /= sw;
  myy /= sw;
  mxy /= sw;
  const tr = (mxx + myy) / 2;
  const det = Math.sqrt(Math.max(0, ((mxx - myy) / 2) ** 2 + mxy * mxy));
  const fwhm = 2.3548 * Math.sqrt(Math.max(1e-6, Math.sqrt(Math.max(1e-12, (tr + det) * Math.max(tr - det, 1e-12)))));
  return { x: cx, y: cy, significance: (best - sky) / lumNoise, fwhm, peak: best };
}

export type RejectReason = 'edge' | 'no_data' | 'saturated' | 'nonlinear' | 'crowded_annulus' | 'low_snr' | 'few_sky_pixels';

export interface Measurement {
  flux: [number, number, number];
  sky: [number, number, number];
  snr: [number, number, number];
  /** Brightest aperture sample per channel (absolute level, sky included). */
  peak: [number, number, number];
}

/**
 * How aperture() tells saturated and non-linear stars (either makes colour ratios drift toward 1:
 * every channel's core is clipped at about the same level).
 * - `level[c]`: samples at or above it are in the sensor's non-linear range (from the SATURATE
 *   card, scaled by the caller); null when unknown.
 * - the channel maximum of the image (ChannelStats.max): a peak within 5 % of it may be clipped
 *   data (refused; `by: 'data_max'`).
 * - a flat top: more samples within PLATEAU_FRACTION of the peak than a star of this FWHM can
 *   have (a Gaussian has 2π·σ²·q of them within a fraction q of its peak, about one pixel for
 *   q = 2 % and FWHM 7 px) — a saturated core, wherever the flat field moved its clip level
 *   (`by: 'flat_top'`; tested only on stars 50 σ above the noise, where a profile is smooth).
 */
export interface SaturationTest {
  level: [number | null, number | null, number | null];
  fwhm: number;
}

/** Fraction below the peak that counts as the same level for the flat-top test. */
export const PLATEAU_FRACTION = 0.02;

/** Samples within PLATEAU_FRACTION of the peak that mark a flat top for a star of this FWHM. */
export function plateauLimit(fwhm: number): number {
  const sigma = fwhm / 2.3548;
  return Math.max(5, Math.ceil(3 + 3 * 2 * Math.PI * sigma * sigma * PLATEAU_FRACTION));
}

/** A refused star; saturated ones carry their peaks and what showed the clipping. */
export type ApertureResult = Measurement | { reject: RejectReason; peak?: [number, number, number]; by?: 'data_max' | 'flat_top' };

export const isMeasurement = (r: ApertureResult): r is Measurement => !('reject' in r);

/** Aperture photometry at (cx, cy); a reject reason (with the peaks for saturated stars) when the star is unusable. */
export function aperture(p: Planes, cx: number, cy: number, r: Radii, stats: ChannelStats[], minSnr: number, sat?: SaturationTest): ApertureResult {
  const { width, height } = p;
  const ro = r.outer;
  if (cx - ro < 0 || cy - ro < 0 || cx + ro >= width - 1 || cy + ro >= height - 1) return { reject: 'edge' };
  const ra2 = r.aperture * r.aperture;
  const ri2 = r.inner * r.inner;
  const ro2 = ro * ro;
  const sums = [0, 0, 0];
  let area = 0;
  const annMax = Math.ceil(Math.PI * (ro + 1.5) ** 2);
  const ann = [new Float64Array(annMax), new Float64Array(annMax), new Float64Array(annMax)];
  const annN = [0, 0, 0];
  const apMax = Math.ceil(Math.PI * (r.aperture + 1.5) ** 2);
  const ap = [new Float64Array(apMax), new Float64Array(apMax), new Float64Array(apMax)];
  const peak: [number, number, number] = [-Infinity, -Infinity, -Infinity];
  for (let y = Math.floor(cy - ro); y <= Math.ceil(cy + ro); y++) {
    for (let x = Math.floor(cx - ro); x <= Math.ceil(cx + ro); x++) {
      const d2 = (x - cx) ** 2 + (y - cy) ** 2;
      const i = y * width + x;
      if (d2 <= ra2) {
        for (let c = 0; c < 3; c++) {
          const v = p.c[c as 0 | 1 | 2][i]!;
          if (v - v !== 0) return { reject: 'no_data' };
          sums[c]! += v;
          ap[c]![area] = v;
          if (v > peak[c]!) peak[c] = v;
        }
        area++;
      } else if (d2 >= ri2 && d2 <= ro2) {
        for (let c = 0; c < 3; c++) {
          const v = p.c[c as 0 | 1 | 2][i]!;
          if (v - v === 0) ann[c]![annN[c]!++] = v;
        }
      }
    }
  }
  let atMax = false;
  for (let c = 0; c < 3; c++) {
    if (peak[c]! >= 0.95 * stats[c]!.max && stats[c]!.max > stats[c]!.sky) atMax = true;
    const lvl = sat?.level[c];
    if (!atMax && lvl !== null && lvl !== undefined && peak[c]! >= lvl) return { reject: 'nonlinear', peak };
  }
  if (annN.some((k) => k < 10)) return atMax ? { reject: 'saturated', peak, by: 'data_max' } : { reject: 'few_sky_pixels' };
  const flux: [number, number, number] = [0, 0, 0];
  const sky: [number, number, number] = [0, 0, 0];
  const snr: [number, number, number] = [0, 0, 0];
  for (let c = 0; c < 3; c++) {
    const s = ann[c]!.subarray(0, annN[c]!).sort();
    const med = quantileSorted(s, 0.5);
    const iqr = quantileSorted(s, 0.75) - quantileSorted(s, 0.25);
    // A clean annulus has IQR ≈ 1.35σ; a neighbour or nebula edge in it makes the sky unreliable.
    if (iqr > 4 * 1.349 * stats[c]!.noise) return atMax ? { reject: 'saturated', peak, by: 'data_max' } : { reject: 'crowded_annulus' };
    sky[c] = med;
    if (sat) {
      // Flat top: only tested on stars far above the noise, where a real profile is smooth.
      const amp = peak[c]! - med;
      if (amp > 50 * stats[c]!.noise) {
        const cut = peak[c]! - PLATEAU_FRACTION * amp;
        let n = 0;
        const a = ap[c]!;
        for (let k = 0; k < area; k++) if (a[k]! >= cut) n++;
        if (n >= plateauLimit(sat.fwhm)) return { reject: 'saturated', peak, by: 'flat_top' };
      }
    }
    flux[c] = sums[c]! - area * med;
    if (atMax) continue;
    const sigma = stats[c]!.noise * Math.sqrt(area + (area * area * Math.PI) / (2 * s.length));
    snr[c] = sigma > 0 ? flux[c]! / sigma : Infinity;
  }
  // At the image's maximum without a flat top (the brightest star of an unsaturated image is
  // there too): refused all the same, but it tells no clip level on its own (linearityTest).
  if (atMax) return { reject: 'saturated', peak, by: 'data_max' };
  if (snr.some((v) => !(v >= minSnr))) return { reject: 'low_snr' };
  return { flux, sky, snr, peak };
}

/** A star peaking at this fraction of its channel's clip level is in the non-linear range. */
export const NONLINEAR_FRACTION = 0.8;
/** Smallest relative peak deficit that counts as a flattened core (more when stars' peak shares spread more). */
export const MIN_PEAK_DEFICIT = 0.1;

export interface LinearityTest {
  /** Per measurement: clipped or non-linear (leave it out). */
  flags: boolean[];
  /** Median (peak − sky)/flux of the fainter half of the stars, or null with fewer than 6 stars. */
  typical_peak_share: number | null;
  /** Stars whose peak share fell below the cut (flattened cores). */
  flattened: number;
  /** Per channel: the clip level estimated from flat-topped and flattened stars, or null. */
  clip_level: [number | null, number | null, number | null];
}

/**
 * Which measured stars are non-linear, from the stars themselves (saturation is rarely a clean
 * flat top in a stack: dithers, seeing and the flat field move each frame's clip level):
 * 1. flattened cores, per channel: a PSF's peak is a fixed share of its flux, so a star of the
 *    brighter half whose (peak − sky)/flux in some channel is below that channel's share among
 *    the fainter half (certainly linear) by more than max(MIN_PEAK_DEFICIT, 4 robust σ of their
 *    spread) has a clipped core there (a faint star cannot clip where brighter ones do not;
 *    blends and odd shapes among the faint ones must not pass for saturation). Per channel,
 *    because a red or blue star clips in one channel first: summed over the channels its core
 *    would look almost whole while its colour is already pulled toward grey;
 * 2. the clip level per channel: the median peak of the flat-topped stars (`flatTops`, from
 *    aperture()), of the stars at the image maximum when there are two or more (`atMax`; the
 *    brightest star of any image peaks there, so one says nothing) and of the stars flattened in
 *    that channel — at least two, or one flat top, so one odd star cannot set it; every star
 *    peaking at NONLINEAR_FRACTION of it is non-linear too.
 * `typical_peak_share` reports the channel sum's share (the summary figure of the diagnostics).
 */
export function linearityTest(ms: readonly Pick<Measurement, 'flux' | 'sky' | 'peak'>[], flatTops: readonly [number, number, number][] = [], atMax: readonly [number, number, number][] = []): LinearityTest {
  const share = (m: Pick<Measurement, 'flux' | 'sky' | 'peak'>, c: number) => (m.flux[c]! > 0 ? (m.peak[c]! - m.sky[c]!) / m.flux[c]! : NaN);
  const sumShare = (m: Pick<Measurement, 'flux' | 'sky' | 'peak'>) => {
    const f = m.flux[0] + m.flux[1] + m.flux[2];
    return f > 0 ? (m.peak[0] - m.sky[0] + m.peak[1] - m.sky[1] + m.peak[2] - m.sky[2]) / f : NaN;
  };
  const order = ms.map((m, i) => ({ i, f: m.flux[0] + m.flux[1] + m.flux[2] })).filter((o) => Number.isFinite(sumShare(ms[o.i]!))).sort((a, b) => a.f - b.f);
  let typical: number | null = null;
  // flatIn[c][i]: star i's core is flattened in channel c.
  const flatIn = [0, 1, 2].map(() => ms.map(() => false));
  if (order.length >= 6) {
    const half = Math.ceil(order.length / 2);
    typical = median(order.slice(0, half).map((o) => sumShare(ms[o.i]!)));
    for (let c = 0; c < 3; c++) {
      const faint = order.slice(0, half).map((o) => share(ms[o.i]!, c)).filter(Number.isFinite);
      if (faint.length < 3) continue;
      const t = median(faint);
      if (!(t > 0)) continue;
      const spread = (1.4826 * median(faint.map((r) => Math.abs(r - t)))) / t;
      const cut = t * (1 - Math.max(MIN_PEAK_DEFICIT, 4 * spread));
      for (const o of order.slice(half)) if (share(ms[o.i]!, c) < cut) flatIn[c]![o.i] = true;
    }
  }
  const flat = ms.map((_, i) => flatIn.some((f) => f[i]));
  const level: [number | null, number | null, number | null] = [null, null, null];
  const common = [...flatTops, ...(atMax.length >= 2 ? atMax : [])];
  for (let c = 0; c < 3; c++) {
    const peaks = [...common.map((p) => p[c]!), ...ms.filter((_, i) => flatIn[c]![i]).map((m) => m.peak[c]!)];
    if (peaks.length >= 2 || flatTops.length === 1) level[c] = median(peaks);
  }
  const flags = ms.map((m, i) => flat[i]! || m.peak.some((v, c) => level[c] !== null && v >= NONLINEAR_FRACTION * level[c]!));
  return { flags, typical_peak_share: typical, flattened: flat.filter(Boolean).length, clip_level: level };
}
