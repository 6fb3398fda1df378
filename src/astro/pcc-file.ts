// Library entry points on files, used by the Raw Stack PCC phase and the REST API
// (POST /api/pcc/run, POST /api/pcc/apply):
// - runPccOnFile: photometric colour calibration of an RGB FITS that carries a TAN WCS, against a
//   star catalogue (catalog/: pcc.catalog_file, else the installed catalogue package), with the
//   catalogue's proper motions carried to the image's DATE-OBS; writes the calibrated image and,
//   when asked, the diagnostics JSON (also on failure, with the failure's code and message).
// - runStarWhiteOnFile: the non-photometric `pcc.fallback: star_white` white balance (star-white.ts)
//   for when runPccOnFile failed for lack of data (isDataLack); its diagnostics say so.
// - applyColorMatrixToFile: a 3×3 or diagonal matrix applied to an RGB FITS into a new file.
//
// Invariants: outputs are written atomically (writeFits / writeJsonAtomic); the input is never
// modified; every failure is a PccError with a code from PccErrorCode (FITS read errors become
// PCC_UNREADABLE with the FitsError as cause).

import { readFitsImage, writeFits, type FitsImage } from '../fits/index.js';
import { dateObs, saturationLevel } from '../fits/keys.js';
import { writeJsonAtomic } from '../pipeline/atomic.js';
import { chooseCatalog } from './catalog/find.js';
import { julianEpoch, type StarCatalog } from './catalog/types.js';
import { applyMatrix, isDiagonal, toMatrix3 } from './color-matrix.js';
import { isPccError, PccError, throwIfAborted, type PccErrorCode } from './pcc-errors.js';
import { resolveOptions, runPcc } from './pcc.js';
import type { CatalogQueryDiag, PccFileResult, PccOptions, PccResult } from './pcc-types.js';
import { runStarWhite, type StarWhiteResult } from './star-white.js';
import { angularSeparationDeg, TanWcs } from './wcs.js';

export { PccError, isPccError, type PccErrorCode } from './pcc-errors.js';
export type { CatalogQueryDiag, PccFileResult, PccOptions, PccResult } from './pcc-types.js';

async function readRgb(input: string): Promise<FitsImage> {
  let img: FitsImage;
  try {
    img = await readFitsImage(input);
  } catch (e) {
    throw new PccError('PCC_UNREADABLE', `${input}: ${(e as Error).message}`, undefined, { cause: e });
  }
  if (img.planes !== 3) throw new PccError('PCC_NOT_RGB', `${input} has ${img.planes} plane(s); an RGB image has 3`);
  return img;
}

async function write(output: string, img: FitsImage, data: Float32Array, history: string, wcs?: TanWcs): Promise<void> {
  const header = img.header.clone();
  if (wcs) wcs.writeTo(header);
  header.addHistory(history);
  try {
    await writeFits(output, { width: img.width, height: img.height, planes: 3, data }, { header });
  } catch (e) {
    throw new PccError('PCC_WRITE_FAILED', `${output}: ${(e as Error).message}`, undefined, { cause: e });
  }
}

/** The diagnostics object of pcc_diagnostics.json for a result or a failure. */
export function pccDiagnostics(r: { result?: PccResult; error?: PccError; input: string; output: string | null; catalog?: CatalogQueryDiag }): Record<string, unknown> {
  if (r.result) {
    const x = r.result;
    return {
      success: true,
      method: x.method,
      used_source: x.used_source,
      stars_in_field: x.stars_in_field,
      stars_matched: x.stars_matched,
      stars_used: x.stars_used,
      factors: { R: x.factors[0], G: x.factors[1], B: x.factors[2] },
      matrix: x.matrix,
      apply_mode: x.apply_mode,
      residual_rms: x.residual_rms,
      determinant: x.determinant,
      condition_number: x.condition_number,
      lines: x.lines,
      white_reference: x.white_reference,
      fwhm_px: x.fwhm_px,
      fwhm_source: x.fwhm_source,
      radii_px: x.radii_px,
      saturation: x.saturation,
      rejected: x.rejected,
      wcs_offset_px: x.wcs_offset_px,
      background_neutralization: { ...x.background_neutralization, output_background: Number.isFinite(x.background_neutralization.output_background) ? x.background_neutralization.output_background : null },
      ...(r.catalog ? { catalog: r.catalog } : {}),
      input: r.input,
      output: r.output,
      error: null,
      failure_reason: null,
      stars: x.stars,
    };
  }
  const e = r.error!;
  const d = e.diagnostics ?? {};
  return {
    success: false,
    method: 'photometric',
    used_source: d.used_source ?? null,
    stars_in_field: d.stars_in_field ?? 0,
    stars_matched: d.stars_matched ?? 0,
    stars_used: d.stars_used ?? 0,
    residual_rms: d.residual_rms ?? null,
    determinant: d.determinant ?? null,
    condition_number: d.condition_number ?? null,
    apply_mode: 'diagonal',
    ...(r.catalog ? { catalog: r.catalog } : {}),
    input: r.input,
    output: null,
    error: e.message,
    failure_reason: e.code,
    ...Object.fromEntries(Object.entries(d).filter(([k]) => !['used_source', 'stars_in_field', 'stars_matched', 'stars_used', 'residual_rms', 'determinant', 'condition_number'].includes(k))),
  };
}

export interface RunPccFileOptions {
  input: string;
  output: string;
  /** The catalogue to use; when absent, `catalogFile` (pcc.catalog_file), and when that is empty too, the installed package (catalog/find.ts). */
  catalog?: StarCatalog;
  catalogFile?: string;
  /** Where to write the diagnostics JSON (success and failure); none when absent. */
  diagnosticsFile?: string;
  /** How the diagnostics name the input and output (e.g. run-relative paths); default the paths. */
  diagnosticsNames?: { input: string; output: string };
  signal?: AbortSignal;
  config?: Partial<PccOptions>;
  /** WCS to use instead of the input header's (e.g. a solve not yet written into the file). */
  wcs?: TanWcs;
}

/** Julian epoch of the image from DATE-OBS (start of the first exposure), else J2000. */
function imageEpoch(img: FitsImage): { epoch: number; source: string } {
  const d = dateObs(img.header);
  const e = d ? julianEpoch(d.toISOString()) : null;
  return e === null ? { epoch: 2000, source: 'J2000 (no DATE-OBS)' } : { epoch: Math.round(e * 1000) / 1000, source: 'DATE-OBS' };
}

export async function runPccOnFile(opts: RunPccFileOptions): Promise<PccFileResult> {
  const names = opts.diagnosticsNames ?? { input: opts.input, output: opts.output };
  const writeDiag = async (d: Record<string, unknown>) => {
    if (!opts.diagnosticsFile) return;
    try {
      await writeJsonAtomic(opts.diagnosticsFile, d);
    } catch (e) {
      throw new PccError('PCC_WRITE_FAILED', `${opts.diagnosticsFile}: ${(e as Error).message}`, undefined, { cause: e });
    }
  };
  let catalogDiag: CatalogQueryDiag | undefined;
  try {
    const options = resolveOptions(opts.config);
    throwIfAborted(opts.signal);
    const img = await readRgb(opts.input);
    const wcs = opts.wcs ?? TanWcs.fromHeader(img.header);
    if (!wcs) throw new PccError('PCC_NO_WCS', `${opts.input} has no celestial TAN WCS in its header (plate-solve it first)`);
    const catalog = opts.catalog ?? (await chooseCatalog(opts.catalogFile ?? '')).catalog;
    if (!catalog) throw new PccError('PCC_NO_CATALOG', 'no star catalogue: pcc.catalog_file is empty and no catalogue package is installed (Debian: apt-get install kstars-data)');
    // Cone: field centre and the farthest corner, plus 5 %.
    const [ra0, dec0] = wcs.centre(img.width, img.height);
    let radius = 0;
    for (const [x, y] of [[0, 0], [img.width - 1, 0], [0, img.height - 1], [img.width - 1, img.height - 1]] as const) {
      const [ra, dec] = wcs.pixelToSky(x, y);
      radius = Math.max(radius, angularSeparationDeg(ra0, dec0, ra, dec));
    }
    radius *= 1.05;
    const ep = imageEpoch(img);
    const q = await catalog.query({ cone: { ra: ra0, dec: dec0, radius }, magMin: options.mag_bright_limit, magMax: options.mag_limit, epoch: ep.epoch, ...(opts.signal ? { signal: opts.signal } : {}) });
    catalogDiag = {
      ...catalog.describe(),
      query: { ra: Number(ra0.toFixed(6)), dec: Number(dec0.toFixed(6)), radius_deg: Number(radius.toFixed(4)), mag_min: options.mag_bright_limit, mag_max: options.mag_limit },
      read: q.read,
      rows_read: q.rows_read,
      stars_returned: q.stars.length,
      epoch: q.epoch,
      epoch_source: ep.source,
      proper_motion_applied: q.proper_motion_applied,
    };
    throwIfAborted(opts.signal);
    const sat = saturationLevel(img.header);
    const { result, data } = runPcc({ width: img.width, height: img.height, data: img.data, wcs, catalog: q.stars, source: catalog.id, options, saturation: sat ?? null, ...(opts.signal ? { signal: opts.signal } : {}) });
    throwIfAborted(opts.signal);
    const f = result.factors;
    await write(opts.output, img, data, `skystack PCC: factors R ${f[0].toFixed(5)} G ${f[1].toFixed(5)} B ${f[2].toFixed(5)}, ${result.stars_used} stars of ${catalog.id}, white ${result.white_reference.name}${result.background_neutralization.applied ? ', sky neutralised' : ''}`, opts.wcs);
    await writeDiag(pccDiagnostics({ result, input: names.input, output: names.output, catalog: catalogDiag }));
    return { output: opts.output, diagnosticsFile: opts.diagnosticsFile ?? null, result, catalog: catalogDiag };
  } catch (e) {
    // Anything but a PccError is a bug, not bad input: it goes up unchanged.
    if (!isPccError(e)) throw e;
    if (e.code !== 'PCC_WRITE_FAILED') await writeDiag(pccDiagnostics({ error: e, input: names.input, output: null, ...(catalogDiag ? { catalog: catalogDiag } : {}) }));
    throw e;
  }
}

/** Failures that mean "not enough data for a photometric calibration", after which pcc.fallback star_white may run. */
export const DATA_LACK_CODES: readonly PccErrorCode[] = ['PCC_NO_WCS', 'PCC_NO_CATALOG', 'PCC_NO_CATALOG_STARS', 'PCC_TOO_FEW_STARS'];
export const isDataLack = (code: PccErrorCode): boolean => DATA_LACK_CODES.includes(code);

export interface StarWhiteFileResult {
  output: string;
  diagnosticsFile: string | null;
  result: StarWhiteResult;
}

/**
 * The star_white fallback on a file, after PCC failed with `failure` (a data-lack code). The
 * diagnostics keep the PCC failure (success false, failure_reason) and add `method: star_white`
 * and the white balance; a failure of the fallback itself throws (its diagnostics then say both).
 */
export async function runStarWhiteOnFile(opts: { input: string; output: string; failure: { code: string; message: string; diagnostics?: Record<string, unknown> }; diagnosticsFile?: string; diagnosticsNames?: { input: string; output: string }; config?: Partial<PccOptions>; signal?: AbortSignal }): Promise<StarWhiteFileResult> {
  const names = opts.diagnosticsNames ?? { input: opts.input, output: opts.output };
  const base = { ...pccDiagnostics({ error: new PccError(opts.failure.code as PccErrorCode, opts.failure.message.replace(/^[A-Z_]+: /, ''), opts.failure.diagnostics), input: names.input, output: null }), method: 'star_white', photometric: false };
  const writeDiag = async (d: Record<string, unknown>) => {
    if (!opts.diagnosticsFile) return;
    try {
      await writeJsonAtomic(opts.diagnosticsFile, d);
    } catch (e) {
      throw new PccError('PCC_WRITE_FAILED', `${opts.diagnosticsFile}: ${(e as Error).message}`, undefined, { cause: e });
    }
  };
  try {
    const options = resolveOptions(opts.config);
    const img = await readRgb(opts.input);
    throwIfAborted(opts.signal);
    const { result, data } = runStarWhite({ width: img.width, height: img.height, data: img.data, options, saturation: saturationLevel(img.header) ?? null, ...(opts.signal ? { signal: opts.signal } : {}) });
    throwIfAborted(opts.signal);
    const f = result.factors;
    await write(opts.output, img, data, `skystack star_white (NOT photometric; PCC: ${opts.failure.code}): factors R ${f[0].toFixed(5)} G ${f[1].toFixed(5)} B ${f[2].toFixed(5)} from the median colour of ${result.stars_used} stars`);
    await writeDiag({
      ...base,
      output: names.output,
      note: 'non-photometric white balance: the median colour of the unsaturated stars was made neutral (pcc.fallback star_white); not a colour calibration',
      star_white: { ...result, background_neutralization: { ...result.background_neutralization, output_background: Number.isFinite(result.background_neutralization.output_background) ? result.background_neutralization.output_background : null } },
    });
    return { output: opts.output, diagnosticsFile: opts.diagnosticsFile ?? null, result };
  } catch (e) {
    if (!isPccError(e)) throw e;
    if (e.code !== 'PCC_WRITE_FAILED') await writeDiag({ ...base, star_white: { error: e.message, failure_reason: e.code, ...(e.diagnostics ?? {}) } });
    throw e;
  }
}

export async function applyColorMatrixToFile(opts: { input: string; output: string; matrix: number[][] | [number, number, number]; signal?: AbortSignal }): Promise<{ output: string; matrix: number[][] }> {
  const m = toMatrix3(opts.matrix);
  throwIfAborted(opts.signal);
  const img = await readRgb(opts.input);
  throwIfAborted(opts.signal);
  const n = img.width * img.height;
  const data = applyMatrix(img.data, n, m, opts.signal ? { signal: opts.signal } : {});
  throwIfAborted(opts.signal);
  const text = isDiagonal(m) ? `diagonal ${m[0][0]} ${m[1][1]} ${m[2][2]}` : m.map((r) => `[${r.join(' ')}]`).join(' ');
  await write(opts.output, img, data, `skystack colour matrix: ${text}`);
  return { output: opts.output, matrix: m.map((r) => [...r]) };
}
