// Celestial WCS for the gnomonic (TAN) projection, optionally with SIP distortion, as written by
// astrometry.net, ASTAP and most capture software.
//
// Pixel coordinates here are 0-based image coordinates (x = column, y = row of the FITS array in
// storage order), the convention of every other module; FITS CRPIX is 1-based, so the conversion
// adds one. World coordinates are degrees (RA, Dec), J2000/ICRS. The projection uses the FITS
// default native longitude of the celestial pole (LONPOLE = 180°), which is what the standard
// gnomonic formulas below encode.
import { FitsHeader } from '../fits/header.js';
import { wcs as readWcsKeys, type WcsKeys } from '../fits/keys.js';

const DEG = Math.PI / 180;

/** SIP polynomial coefficients: a[p][q] multiplies u^p v^q (u, v relative to CRPIX, in pixels). */
export interface SipCoefficients {
  a: number[][];
  b: number[][];
  /** Inverse polynomials when the header carries them (AP_ORDER / BP_ORDER). */
  ap?: number[][];
  bp?: number[][];
}

export interface TanWcsParams {
  crval: [number, number];
  /** 1-based reference pixel, as in the FITS header. */
  crpix: [number, number];
  /** Degrees per pixel. */
  cd: [[number, number], [number, number]];
  sip?: SipCoefficients;
}

export class TanWcs {
  readonly crval: [number, number];
  readonly crpix: [number, number];
  readonly cd: [[number, number], [number, number]];
  readonly sip: SipCoefficients | undefined;
  private readonly inv: [[number, number], [number, number]];

  constructor(p: TanWcsParams) {
    this.crval = [p.crval[0], p.crval[1]];
    this.crpix = [p.crpix[0], p.crpix[1]];
    this.cd = [[p.cd[0][0], p.cd[0][1]], [p.cd[1][0], p.cd[1][1]]];
    this.sip = p.sip;
    const det = this.cd[0][0] * this.cd[1][1] - this.cd[0][1] * this.cd[1][0];
    if (!Number.isFinite(det) || det === 0) throw new RangeError('WCS CD matrix is singular');
    this.inv = [
      [this.cd[1][1] / det, -this.cd[0][1] / det],
      [-this.cd[1][0] / det, this.cd[0][0] / det],
    ];
  }

  /** The TAN WCS of a header, or undefined when it holds none or a projection other than TAN. */
  static fromHeader(h: FitsHeader): TanWcs | undefined {
    const keys = readWcsKeys(h);
    if (!keys || !isTan(keys)) return undefined;
    const params: TanWcsParams = { crval: keys.crval, crpix: keys.crpix, cd: keys.cd };
    const sip = keys.ctype[0].endsWith('-SIP') ? readSip(h) : undefined;
    if (sip) params.sip = sip;
    return new TanWcs(params);
  }

  /** Builds a north-up-ish WCS from centre, scale (arcsec/px), rotation (deg) and parity. */
  static fromCentre(opts: {
    ra: number;
    dec: number;
    width: number;
    height: number;
    scaleArcsec: number;
    rotationDeg?: number;
    /** true for the usual sky view (east left when north is up); false for a mirrored image. */
    eastLeft?: boolean;
  }): TanWcs {
    const s = opts.scaleArcsec / 3600;
    const t = (opts.rotationDeg ?? 0) * DEG;
    const cdelt1 = opts.eastLeft === false ? s : -s;
    const cdelt2 = s;
    return new TanWcs({
      crval: [opts.ra, opts.dec],
      crpix: [(opts.width + 1) / 2, (opts.height + 1) / 2],
      cd: [
        [cdelt1 * Math.cos(t), -cdelt2 * Math.sin(t)],
        [cdelt1 * Math.sin(t), cdelt2 * Math.cos(t)],
      ],
    });
  }

  /** Pixel (0-based) → [ra, dec] degrees. RA is wrapped to [0, 360). */
  pixelToSky(x: number, y: number): [number, number] {
    let u = x + 1 - this.crpix[0];
    let v = y + 1 - this.crpix[1];
    if (this.sip) {
      const du = evalPoly(this.sip.a, u, v);
      const dv = evalPoly(this.sip.b, u, v);
      u += du;
      v += dv;
    }
    const xi = (this.cd[0][0] * u + this.cd[0][1] * v) * DEG;
    const eta = (this.cd[1][0] * u + this.cd[1][1] * v) * DEG;
    const ra0 = this.crval[0] * DEG;
    const dec0 = this.crval[1] * DEG;
    const den = Math.cos(dec0) - eta * Math.sin(dec0);
    const ra = ra0 + Math.atan2(xi, den);
    const dec = Math.atan2(Math.sin(dec0) + eta * Math.cos(dec0), Math.hypot(xi, den));
    return [wrap360(ra / DEG), dec / DEG];
  }

  /** [ra, dec] degrees → pixel (0-based); undefined for points on the far hemisphere. */
  skyToPixel(ra: number, dec: number): [number, number] | undefined {
    const ra0 = this.crval[0] * DEG;
    const dec0 = this.crval[1] * DEG;
    const a = ra * DEG;
    const d = dec * DEG;
    const cosc = Math.sin(dec0) * Math.sin(d) + Math.cos(dec0) * Math.cos(d) * Math.cos(a - ra0);
    if (cosc <= 1e-9) return undefined;
    const xi = (Math.cos(d) * Math.sin(a - ra0)) / cosc / DEG;
    const eta = ((Math.cos(dec0) * Math.sin(d) - Math.sin(dec0) * Math.cos(d) * Math.cos(a - ra0)) / cosc) / DEG;
    let u = this.inv[0][0] * xi + this.inv[0][1] * eta;
    let v = this.inv[1][0] * xi + this.inv[1][1] * eta;
    if (this.sip) [u, v] = this.undistort(u, v);
    return [u + this.crpix[0] - 1, v + this.crpix[1] - 1];
  }

  /** Mean pixel scale in arcseconds per pixel. */
  get pixelScaleArcsec(): number {
    const det = this.cd[0][0] * this.cd[1][1] - this.cd[0][1] * this.cd[1][0];
    return Math.sqrt(Math.abs(det)) * 3600;
  }

  /** CROTA2-equivalent rotation in degrees, in (−180, 180]. */
  get rotationDeg(): number {
    // CD1_2 = −CDELT2·sin θ and CD2_2 = CDELT2·cos θ whatever the parity (CDELT2 > 0).
    return Math.atan2(-this.cd[0][1], this.cd[1][1]) / DEG;
  }

  /** −1 for the usual sky view (det CD < 0: east left with north up), +1 for a mirrored image. */
  get parity(): 1 | -1 {
    const det = this.cd[0][0] * this.cd[1][1] - this.cd[0][1] * this.cd[1][0];
    return det < 0 ? -1 : 1;
  }

  /** Sky position of the image centre for an image of this size. */
  centre(width: number, height: number): [number, number] {
    return this.pixelToSky((width - 1) / 2, (height - 1) / 2);
  }

  /** Field of view in degrees (width, height) for an image of this size. */
  fieldDeg(width: number, height: number): [number, number] {
    const s = this.pixelScaleArcsec / 3600;
    return [width * s, height * s];
  }

  /** Writes the WCS cards (replacing any earlier celestial WCS) into a header. */
  writeTo(h: FitsHeader): FitsHeader {
    for (const key of WCS_KEYS) h.delete(key);
    for (const key of [...h.cards.map((c) => c.key)]) if (/^(A|B|AP|BP)_(\d+_\d+|ORDER)$/.test(key)) h.delete(key);
    const sipSuffix = this.sip ? '-SIP' : '';
    h.set('CTYPE1', `RA---TAN${sipSuffix}`, { comment: 'gnomonic projection' });
    h.set('CTYPE2', `DEC--TAN${sipSuffix}`, { comment: 'gnomonic projection' });
    h.set('CUNIT1', 'deg');
    h.set('CUNIT2', 'deg');
    h.set('EQUINOX', 2000, { real: true });
    h.set('RADESYS', 'ICRS');
    h.set('CRVAL1', this.crval[0], { real: true, comment: 'RA at reference pixel [deg]' });
    h.set('CRVAL2', this.crval[1], { real: true, comment: 'Dec at reference pixel [deg]' });
    h.set('CRPIX1', this.crpix[0], { real: true, comment: 'reference pixel (1-based)' });
    h.set('CRPIX2', this.crpix[1], { real: true, comment: 'reference pixel (1-based)' });
    h.set('CD1_1', this.cd[0][0], { real: true });
    h.set('CD1_2', this.cd[0][1], { real: true });
    h.set('CD2_1', this.cd[1][0], { real: true });
    h.set('CD2_2', this.cd[1][1], { real: true });
    if (this.sip) {
      writePoly(h, 'A', this.sip.a);
      writePoly(h, 'B', this.sip.b);
      if (this.sip.ap) writePoly(h, 'AP', this.sip.ap);
      if (this.sip.bp) writePoly(h, 'BP', this.sip.bp);
    }
    return h;
  }

  /** The WCS as plain header cards (key → value), e.g. for a JSON diagnostic. */
  toCards(): Record<string, string | number> {
    const h = this.writeTo(new FitsHeader());
    const out: Record<string, string | number> = {};
    for (const c of h.cards) if (typeof c.value === 'string' || typeof c.value === 'number') out[c.key] = c.value;
    return out;
  }

  /** Inverse SIP: AP/BP when present, then Newton refinement against the forward polynomials. */
  private undistort(uPrime: number, vPrime: number): [number, number] {
    const sip = this.sip!;
    let u = uPrime;
    let v = vPrime;
    if (sip.ap && sip.bp) {
      u = uPrime + evalPoly(sip.ap, uPrime, vPrime);
      v = vPrime + evalPoly(sip.bp, uPrime, vPrime);
    }
    for (let i = 0; i < 20; i++) {
      const fu = u + evalPoly(sip.a, u, v) - uPrime;
      const fv = v + evalPoly(sip.b, u, v) - vPrime;
      if (Math.abs(fu) < 1e-10 && Math.abs(fv) < 1e-10) break;
      const h = 1e-3;
      const j11 = 1 + (evalPoly(sip.a, u + h, v) - evalPoly(sip.a, u - h, v)) / (2 * h);
      const j12 = (evalPoly(sip.a, u, v + h) - evalPoly(sip.a, u, v - h)) / (2 * h);
      const j21 = (evalPoly(sip.b, u + h, v) - evalPoly(sip.b, u - h, v)) / (2 * h);
      const j22 = 1 + (evalPoly(sip.b, u, v + h) - evalPoly(sip.b, u, v - h)) / (2 * h);
      const det = j11 * j22 - j12 * j21;
      if (det === 0) break;
      u -= (j22 * fu - j12 * fv) / det;
      v -= (-j21 * fu + j11 * fv) / det;
    }
    return [u, v];
  }
}

const WCS_KEYS = [
  'CTYPE1', 'CTYPE2', 'CUNIT1', 'CUNIT2', 'CRVAL1', 'CRVAL2', 'CRPIX1', 'CRPIX2',
  'CD1_1', 'CD1_2', 'CD2_1', 'CD2_2', 'CDELT1', 'CDELT2', 'CROTA1', 'CROTA2',
  'PC1_1', 'PC1_2', 'PC2_1', 'PC2_2', 'LONPOLE', 'LATPOLE',
];

function isTan(k: WcsKeys): boolean {
  return /^RA--?-TAN(-SIP)?$/.test(k.ctype[0]) && /^DEC-?-TAN(-SIP)?$/.test(k.ctype[1]);
}

function readPoly(h: FitsHeader, name: string): number[][] | undefined {
  const order = h.getNumber(`${name}_ORDER`);
  if (order === undefined || !Number.isInteger(order) || order < 0 || order > 9) return undefined;
  const poly: number[][] = [];
  for (let p = 0; p <= order; p++) {
    const row: number[] = [];
    for (let q = 0; q <= order - p; q++) row.push(h.getNumber(`${name}_${p}_${q}`) ?? 0);
    poly.push(row);
  }
  return poly;
}

function readSip(h: FitsHeader): SipCoefficients | undefined {
  const a = readPoly(h, 'A');
  const b = readPoly(h, 'B');
  if (!a || !b) return undefined;
  const sip: SipCoefficients = { a, b };
  const ap = readPoly(h, 'AP');
  const bp = readPoly(h, 'BP');
  if (ap && bp) {
    sip.ap = ap;
    sip.bp = bp;
  }
  return sip;
}

function writePoly(h: FitsHeader, name: string, poly: number[][]): void {
  h.set(`${name}_ORDER`, poly.length - 1);
  poly.forEach((row, p) => row.forEach((c, q) => {
    if (c !== 0) h.set(`${name}_${p}_${q}`, c, { real: true });
  }));
}

function evalPoly(poly: number[][], u: number, v: number): number {
  let sum = 0;
  let up = 1;
  for (let p = 0; p < poly.length; p++) {
    const row = poly[p]!;
    let vq = 1;
    for (let q = 0; q < row.length; q++) {
      sum += row[q]! * up * vq;
      vq *= v;
    }
    up *= u;
  }
  return sum;
}

function wrap360(deg: number): number {
  const r = deg % 360;
  return r < 0 ? r + 360 : r;
}

/** Great-circle separation in degrees. */
export function angularSeparationDeg(ra1: number, dec1: number, ra2: number, dec2: number): number {
  const d1 = dec1 * DEG;
  const d2 = dec2 * DEG;
  const s = Math.sin((d2 - d1) / 2) ** 2 + Math.cos(d1) * Math.cos(d2) * Math.sin(((ra2 - ra1) * DEG) / 2) ** 2;
  return (2 * Math.asin(Math.min(1, Math.sqrt(s)))) / DEG;
}
