// Expected star colour, camera independent: B−V → effective temperature (Ballesteros 2012) →
// blackbody (Planck) spectrum → CIE 1931 XYZ (the multi-lobe analytic fit of the colour matching
// functions by Wyman, Sloan & Shirley 2013) → linear sRGB (D65 primaries), sum-normalised.
// Ratios R/G and B/G are what PCC compares, so the normalisation does not matter; linear sRGB is
// the target space, so a G2V star calibrated to neutral looks white on an sRGB display.
//
// White reference (docs/ARCHITECTURE.md "Raw Stack decisions"): a spectral type from the table below, a bare number read as B−V,
// or a temperature written "5778K".

import { PccError } from './pcc-errors.js';
import type { WhiteReference } from './pcc-types.js';

/** Ballesteros (2012): T = 4600 K · (1/(0.92·BV + 1.7) + 1/(0.92·BV + 0.62)). */
export function bvToTeff(bv: number): number {
  const b = Math.min(Math.max(bv, -0.4), 2.5);
  return 4600 * (1 / (0.92 * b + 1.7) + 1 / (0.92 * b + 0.62));
}

function lobe(l: number, mu: number, s1: number, s2: number): number {
  const t = (l - mu) / (l < mu ? s1 : s2);
  return Math.exp(-0.5 * t * t);
}

/** CIE 1931 2° colour matching functions (Wyman et al. 2013 multi-lobe fit), λ in nm. */
export function cieXyzBar(l: number): [number, number, number] {
  const x = 1.056 * lobe(l, 599.8, 37.9, 31.0) + 0.362 * lobe(l, 442.0, 16.0, 26.7) - 0.065 * lobe(l, 501.1, 20.4, 26.2);
  const y = 0.821 * lobe(l, 568.8, 46.9, 40.5) + 0.286 * lobe(l, 530.9, 16.3, 31.1);
  const z = 1.217 * lobe(l, 437.0, 11.8, 36.0) + 0.681 * lobe(l, 459.0, 26.0, 13.8);
  return [x, y, z];
}

const C2_NM_K = 1.4387769e7; // second radiation constant hc/k in nm·K

const LAMBDA_STEP = 2;
const LAMBDAS = Array.from({ length: (830 - 360) / LAMBDA_STEP + 1 }, (_, i) => 360 + i * LAMBDA_STEP);
/** The colour matching functions tabulated once at LAMBDAS (the per-star work is the Planck term). */
const CMF = LAMBDAS.map(cieXyzBar);

/** Linear sRGB of a blackbody at `teff` kelvin, sum-normalised (each channel ≥ 1e-6). */
export function blackbodyRgb(teff: number): [number, number, number] {
  let X = 0;
  let Y = 0;
  let Z = 0;
  for (let i = 0; i < LAMBDAS.length; i++) {
    const l = LAMBDAS[i]!;
    const planck = 1 / (l ** 5 * Math.expm1(C2_NM_K / (l * teff)));
    const [xb, yb, zb] = CMF[i]!;
    X += planck * xb;
    Y += planck * yb;
    Z += planck * zb;
  }
  const r = 3.2404542 * X - 1.5371385 * Y - 0.4985314 * Z;
  const g = -0.969266 * X + 1.8760108 * Y + 0.041556 * Z;
  const b = 0.0556434 * X - 0.2040259 * Y + 1.0572252 * Z;
  const c = [r, g, b].map((v) => Math.max(v, 0));
  const s = c[0]! + c[1]! + c[2]!;
  return [Math.max(c[0]! / s, 1e-6), Math.max(c[1]! / s, 1e-6), Math.max(c[2]! / s, 1e-6)];
}

/** Expected linear RGB of a catalogue star (teff wins when given, else from B−V). */
export function starTeff(bv: number | null, teff: number | null): number {
  if (teff !== null && teff > 0) return teff;
  return bvToTeff(bv ?? 0.65);
}

/** Main-sequence (V) B−V by spectral type (Schmidt-Kaler / Allen's Astrophysical Quantities). */
const DWARF_BV: Record<string, number> = {
  O5V: -0.33, B0V: -0.3, B5V: -0.17, A0V: 0.0, A5V: 0.15, F0V: 0.3, F5V: 0.44, G0V: 0.58, G2V: 0.65, G5V: 0.68, K0V: 0.81, K5V: 1.15, M0V: 1.4, M5V: 1.64,
};

export function whiteReference(spec: string): WhiteReference {
  const name = spec.trim();
  const key = name.toUpperCase().replace(/\s+/g, '');
  let bv: number | null = null;
  let teff: number;
  const kelvin = /^(\d+(?:\.\d+)?)K$/.exec(key);
  if (DWARF_BV[key] !== undefined) {
    bv = DWARF_BV[key]!;
    teff = bvToTeff(bv);
  } else if (kelvin) {
    teff = Number(kelvin[1]);
    if (!(teff >= 1000 && teff <= 50000)) throw new PccError('PCC_BAD_WHITE_REFERENCE', `white reference temperature ${teff} K outside 1000..50000 K`);
  } else if (/^[+-]?\d*\.?\d+$/.test(key) && Number.isFinite(Number(key))) {
    bv = Number(key);
    if (bv < -0.4 || bv > 2.5) throw new PccError('PCC_BAD_WHITE_REFERENCE', `white reference B−V ${bv} outside −0.4..2.5`);
    teff = bvToTeff(bv);
  } else {
    throw new PccError('PCC_BAD_WHITE_REFERENCE', `white reference "${spec}" is not a spectral type (${Object.keys(DWARF_BV).join(', ')}), a B−V number or a temperature like 5778K`);
  }
  return { name, bv, teff, rgb: blackbodyRgb(teff) };
}
