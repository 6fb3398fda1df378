// Typed getters for the header keys the pipeline reads. Capture programs disagree on names
// (EXPTIME vs EXPOSURE, CCD-TEMP vs SENSOR-T vs CCD_TEMP) and formats (sexagesimal or degree
// RA/DEC, quoted numbers); each getter accepts the variants seen in practice and returns
// undefined rather than guessing when a value is absent or unusable.

import type { FitsHeader } from './header.js';

export type BayerPattern = 'RGGB' | 'GBRG' | 'GRBG' | 'BGGR';
export const BAYER_PATTERNS: readonly BayerPattern[] = ['RGGB', 'GBRG', 'GRBG', 'BGGR'];

function firstNumber(h: FitsHeader, keys: string[]): number | undefined {
  for (const k of keys) {
    const v = h.getNumber(k);
    if (v !== undefined) return v;
  }
  return undefined;
}

function firstString(h: FitsHeader, keys: string[]): string | undefined {
  for (const k of keys) {
    const v = h.getString(k)?.trim();
    if (v !== undefined && v !== '') return v;
  }
  return undefined;
}

/** Exposure time in seconds. */
export const exposureSeconds = (h: FitsHeader) => firstNumber(h, ['EXPTIME', 'EXPOSURE', 'EXP_TIME']);
/** Sensor temperature in °C. */
export const sensorTemperature = (h: FitsHeader) => firstNumber(h, ['CCD-TEMP', 'SENSOR-T', 'CCD_TEMP', 'CCDTEMP', 'TEMPERAT', 'DET-TEMP']);
export const setTemperature = (h: FitsHeader) => firstNumber(h, ['SET-TEMP', 'SET_TEMP']);
/** The camera's gain *setting* as capture programs write it (e.g. 100 on a ZWO camera); not e-/ADU. */
export const gain = (h: FitsHeader) => firstNumber(h, ['GAIN']);
/** Conversion factor in electrons per ADU (EGAIN, the MaxIm DL / N.I.N.A. convention), when written. */
export const electronsPerAdu = (h: FitsHeader) => firstNumber(h, ['EGAIN', 'E-GAIN', 'GAINE']);
/** Saturation level in ADU when the writer recorded it (SATURATE, DATAMAX). */
export const saturationLevel = (h: FitsHeader) => firstNumber(h, ['SATURATE', 'DATAMAX', 'MAXDATA']);
export const filterName = (h: FitsHeader) => firstString(h, ['FILTER', 'FILTER1', 'FILT']);
export const objectName = (h: FitsHeader) => firstString(h, ['OBJECT']);
export const focalLengthMm = (h: FitsHeader) => firstNumber(h, ['FOCALLEN', 'FOCAL']);
/** Pixel size in µm, binning included (XPIXSZ already includes binning per the MaxIm DL convention). */
export const pixelSizeMicrons = (h: FitsHeader) => firstNumber(h, ['XPIXSZ', 'PIXSIZE1', 'PIXSIZE']);
export const imageType = (h: FitsHeader) => firstString(h, ['IMAGETYP', 'FRAME', 'FRAMETYP']);

/** DATE-OBS as a Date (UTC), accepting the date-only and no-zone forms FITS allows. */
export function dateObs(h: FitsHeader): Date | undefined {
  const text = firstString(h, ['DATE-OBS', 'DATE-BEG']);
  if (text === undefined) return undefined;
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : /[zZ]|[+-]\d{2}:?\d{2}$/.test(text) ? text : `${text}Z`;
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? undefined : d;
}

export function bayerPattern(h: FitsHeader): BayerPattern | undefined {
  for (const key of ['BAYERPAT', 'COLORTYP', 'CFA-PAT', 'CFAPAT']) {
    const v = h.getString(key)?.trim().toUpperCase();
    if (v !== undefined && (BAYER_PATTERNS as readonly string[]).includes(v)) return v as BayerPattern;
  }
  return undefined;
}

export function colorType(h: FitsHeader): string | undefined {
  return firstString(h, ['COLORTYP']);
}

/** CFA offsets: where the Bayer pattern starts relative to pixel (0, 0) (e.g. after cropping). */
export function bayerOffset(h: FitsHeader): { x: number; y: number } {
  return { x: h.getNumber('XBAYROFF') ?? h.getNumber('BAYOFFX') ?? 0, y: h.getNumber('YBAYROFF') ?? h.getNumber('BAYOFFY') ?? 0 };
}

/** `TOP-DOWN` means the first stored row is the top of the picture (affects the CFA phase). */
export function rowOrder(h: FitsHeader): 'TOP-DOWN' | 'BOTTOM-UP' | undefined {
  const v = h.getString('ROWORDER')?.trim().toUpperCase();
  return v === 'TOP-DOWN' || v === 'BOTTOM-UP' ? v : undefined;
}

/** Parses sexagesimal (`12 34 56.7`, `12:34:56.7`, `12h34m56s`) or decimal text. */
function parseSexagesimal(text: string): { value: number; sexagesimal: boolean } | undefined {
  const t = text.trim();
  if (/^[+-]?\d+(\.\d*)?$/.test(t)) return { value: Number(t), sexagesimal: false };
  const m = /^([+-]?)(\d+)[\s:hHdD°]+(\d+)[\s:mM']+(\d+(?:\.\d*)?)\s*[sS"]?$/.exec(t);
  if (!m) return undefined;
  const v = Number(m[2]) + Number(m[3]) / 60 + Number(m[4]) / 3600;
  return { value: m[1] === '-' ? -v : v, sexagesimal: true };
}

/** Pointing in degrees from RA/DEC (degrees) or OBJCTRA/OBJCTDEC (sexagesimal hours / degrees). */
export function pointing(h: FitsHeader): { ra: number; dec: number } | undefined {
  const raNum = h.getNumber('RA');
  const decNum = h.getNumber('DEC');
  if (raNum !== undefined && decNum !== undefined) return { ra: raNum, dec: decNum };
  const raText = h.getString('OBJCTRA') ?? h.getString('RA');
  const decText = h.getString('OBJCTDEC') ?? h.getString('DEC');
  if (raText === undefined || decText === undefined) return undefined;
  const ra = parseSexagesimal(raText);
  const dec = parseSexagesimal(decText);
  if (!ra || !dec) return undefined;
  return { ra: ra.sexagesimal ? ra.value * 15 : ra.value, dec: dec.value };
}

export interface WcsKeys {
  ctype: [string, string];
  crval: [number, number];
  crpix: [number, number];
  /** CD matrix in degrees per pixel; built from CDELT/CROTA2 or PC when CD is absent. */
  cd: [[number, number], [number, number]];
  equinox?: number;
}

/** The celestial WCS (TAN or other projection named in CTYPE) when the header holds one. */
export function wcs(h: FitsHeader): WcsKeys | undefined {
  const ctype1 = h.getString('CTYPE1')?.trim();
  const ctype2 = h.getString('CTYPE2')?.trim();
  const crval1 = h.getNumber('CRVAL1');
  const crval2 = h.getNumber('CRVAL2');
  const crpix1 = h.getNumber('CRPIX1');
  const crpix2 = h.getNumber('CRPIX2');
  if (!ctype1 || !ctype2 || crval1 === undefined || crval2 === undefined || crpix1 === undefined || crpix2 === undefined) return undefined;
  let cd: [[number, number], [number, number]];
  const cd11 = h.getNumber('CD1_1');
  if (cd11 !== undefined) {
    cd = [
      [cd11, h.getNumber('CD1_2') ?? 0],
      [h.getNumber('CD2_1') ?? 0, h.getNumber('CD2_2') ?? 0],
    ];
  } else {
    const cdelt1 = h.getNumber('CDELT1');
    const cdelt2 = h.getNumber('CDELT2');
    if (cdelt1 === undefined || cdelt2 === undefined) return undefined;
    const pc11 = h.getNumber('PC1_1');
    if (pc11 !== undefined) {
      cd = [
        [cdelt1 * pc11, cdelt1 * (h.getNumber('PC1_2') ?? 0)],
        [cdelt2 * (h.getNumber('PC2_1') ?? 0), cdelt2 * (h.getNumber('PC2_2') ?? 1)],
      ];
    } else {
      const rot = ((h.getNumber('CROTA2') ?? 0) * Math.PI) / 180;
      cd = [
        [cdelt1 * Math.cos(rot), -cdelt2 * Math.sin(rot)],
        [cdelt1 * Math.sin(rot), cdelt2 * Math.cos(rot)],
      ];
    }
  }
  const result: WcsKeys = { ctype: [ctype1, ctype2], crval: [crval1, crval2], crpix: [crpix1, crpix2], cd };
  const equinox = h.getNumber('EQUINOX');
  if (equinox !== undefined) result.equinox = equinox;
  return result;
}
