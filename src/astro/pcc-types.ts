// Options and results of photometric colour calibration, shared by the library (pcc.ts,
// pcc-file.ts), the Raw Stack PCC phase and the REST API. Option names are the `pcc.*` config
// keys (src/config/rawstack.ts), so a config block passes straight through.

import type { RawStackConfig } from '../config/rawstack.js';
import type { CatalogInfo } from './catalog/types.js';

/** The `pcc.*` keys that steer the calibration (catalog_file and the import-only `enabled` excluded). */
export type PccOptions = Omit<RawStackConfig['pcc'], 'enabled' | 'catalog_file'>;

export interface WhiteReference {
  /** As configured: a spectral type ("G2V"), a B−V ("0.65") or a temperature ("5800K"). */
  name: string;
  bv: number | null;
  teff: number;
  /** Expected linear RGB of that star (sum-normalised). */
  rgb: [number, number, number];
}

/** One catalogue star measured on the image (the star colour plot's data). */
export interface PccStar {
  ra: number;
  dec: number;
  mag: number;
  bv: number | null;
  teff: number;
  x: number;
  y: number;
  /** Background-subtracted aperture fluxes R, G, B. */
  flux: [number, number, number];
  /** Image R/G and B/G. */
  image_rg: number;
  image_bg: number;
  /** Catalogue R/G and B/G relative to the white reference (1 = white reference colour). */
  catalog_rg: number;
  catalog_bg: number;
  /** false when left out of the fit. */
  used: boolean;
  /** Why a measured star was left out: non-linear peak, non-positive flux ratio or the fit's outlier clip. */
  excluded?: 'nonlinear' | 'bad_ratio' | 'outlier';
}

export interface ChannelLine {
  /** ln(image ratio) = intercept + slope · ln(catalogue ratio) (Siegel repeated median, pcc-fit.ts). */
  intercept: number;
  slope: number;
  /** Image ratio at the white reference (exp(intercept)). */
  at_white: number;
  /** Robust (MAD) σ of the stars' ln residuals about the line (≈ relative scatter). */
  residual_rms: number;
  /** true when the catalogue colours spread too little to fit a slope and 1 was assumed. */
  slope_fixed: boolean;
}

export interface BackgroundNeutralization {
  applied: boolean;
  /** Per-channel sky level of the input (sigma-clipped median). */
  input_background: [number, number, number];
  /** Common sky level of the output (the scaled sky of G). */
  output_background: number;
}

/** How the stars' saturation was judged (photometry.ts aperture() and linearityTest). */
export interface SaturationInfo {
  /** SATURATE (or DATAMAX) of the input header, or null. */
  header_level: number | null;
  /** Stars refused for a flat top, and for a peak at the image's channel maximum. */
  flat_tops: number;
  at_image_max: number;
  /** Stars whose peak share of their flux fell below the typical star's (clipped cores). */
  flattened_cores: number;
  /** Median (peak − sky)/flux of the fainter half of the measured stars. */
  typical_peak_share: number | null;
  /** Per channel: the clip level estimated from those stars, or null. */
  clip_level: [number | null, number | null, number | null];
  /** Stars peaking at this fraction of the clip level (or of SATURATE) are non-linear and left out. */
  nonlinear_fraction: number;
}

export type FwhmSource = 'stack_stars' | 'stack_scale' | 'catalog_probe' | 'fallback';

export interface PccResult {
  success: true;
  method: 'photometric';
  used_source: string;
  stars_in_field: number;
  stars_matched: number;
  stars_used: number;
  /** Diagonal factors R, G, B (max 1: no channel is amplified). */
  factors: [number, number, number];
  matrix: number[][];
  apply_mode: 'diagonal';
  residual_rms: number;
  determinant: number;
  condition_number: number;
  lines: { rg: ChannelLine; bg: ChannelLine };
  white_reference: WhiteReference;
  fwhm_px: number;
  /** Where fwhm_px came from; `fallback` = a fixed guess (nothing could be measured). */
  fwhm_source: FwhmSource;
  radii_px: { aperture: number; inner: number; outer: number };
  saturation: SaturationInfo;
  /** Measured catalogue stars refused, by reason. */
  rejected: Record<string, number>;
  wcs_offset_px: [number, number];
  background_neutralization: BackgroundNeutralization;
  stars: PccStar[];
}

export interface PccFileResult {
  output: string;
  diagnosticsFile: string | null;
  result: PccResult;
  /** The catalogue used and what its query read (pcc_diagnostics.json `catalog`). */
  catalog: CatalogQueryDiag;
}

/** The catalogue part of the diagnostics: what was read, from where, for which epoch. */
export type CatalogQueryDiag = CatalogInfo & { query: { ra: number; dec: number; radius_deg: number; mag_min: number; mag_max: number }; read: string; rows_read: number; stars_returned: number; epoch: number; epoch_source: string; proper_motion_applied: number };
