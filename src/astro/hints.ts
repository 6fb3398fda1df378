// Solve hints from a FITS header (what capture software writes): the field centre from an
// existing celestial WCS, else RA/DEC (degrees) or OBJCTRA/OBJCTDEC (sexagesimal); the pixel
// scale from an existing WCS, else 206.265 · XPIXSZ[µm] / FOCALLEN[mm] arcsec/px. XPIXSZ is
// taken as the binned pixel size (the FITS/SBIG convention N.I.N.A. and SharpCap follow), so
// XBINNING is not applied again; a wrong scale hint only costs the hinted attempt.

import type { FitsHeader } from '../fits/header.js';
import { focalLengthMm, pixelSizeMicrons, pointing } from '../fits/keys.js';
import type { SolveHints } from './solver-types.js';
import { TanWcs } from './wcs.js';

/** Default relative tolerance of a header scale hint (±10 %). */
export const SCALE_TOLERANCE = 0.1;

export interface HeaderHints {
  ra?: number;
  dec?: number;
  scaleArcsec?: number;
  /** Where each hint came from, for the diagnostics. */
  source: { centre: 'wcs' | 'ra_dec' | null; scale: 'wcs' | 'focallen_xpixsz' | null };
}

export function headerHints(h: FitsHeader, width: number, height: number): HeaderHints {
  const out: HeaderHints = { source: { centre: null, scale: null } };
  const wcs = TanWcs.fromHeader(h);
  if (wcs) {
    const [ra, dec] = wcs.centre(width, height);
    Object.assign(out, { ra, dec, scaleArcsec: wcs.pixelScaleArcsec });
    out.source = { centre: 'wcs', scale: 'wcs' };
    return out;
  }
  const p = pointing(h);
  if (p && Number.isFinite(p.ra) && Number.isFinite(p.dec) && Math.abs(p.dec) <= 90) {
    out.ra = ((p.ra % 360) + 360) % 360;
    out.dec = p.dec;
    out.source.centre = 'ra_dec';
  }
  const f = focalLengthMm(h);
  const px = pixelSizeMicrons(h);
  if (f !== undefined && px !== undefined && f > 0 && px > 0) {
    out.scaleArcsec = (206.264806 * px) / f;
    out.source.scale = 'focallen_xpixsz';
  }
  return out;
}

/**
 * Radius of the hinted attempt when astrometry.search_radius is 180 (its default, "the whole
 * sky"): the whole sky is searched anyway by the position-blind fallback, so the first attempt
 * can look near the header pointing, which is much faster when the pointing is right.
 */
export const DEFAULT_HINT_RADIUS_DEG = 10;

/** SolveHints for the solvers from header hints and the configured search radius. */
export function solveHints(h: HeaderHints, searchRadiusDeg: number, scaleTolerance = SCALE_TOLERANCE): SolveHints {
  const out: SolveHints = { scaleTolerance, radiusDeg: searchRadiusDeg >= 180 ? DEFAULT_HINT_RADIUS_DEG : searchRadiusDeg };
  if (h.ra !== undefined && h.dec !== undefined) {
    out.ra = h.ra;
    out.dec = h.dec;
  }
  if (h.scaleArcsec !== undefined) out.scaleArcsec = h.scaleArcsec;
  return out;
}
