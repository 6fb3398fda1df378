// Library entry points on files, used by the Raw Stack PCC phase and the REST API
// (POST /api/pcc/run, POST /api/pcc/apply):
// - runPccOnFile: photometric colour calibration of an RGB FITS that carries a TAN WCS, against a
//   local CSV catalogue (catalog-csv.ts); writes the calibrated image and, when asked, the
//   diagnostics JSON (also on failure, with the failure's code and message).
// - applyColorMatrixToFile: a 3×3 or diagonal matrix applied to an RGB FITS into a new file.
//
// Invariants: outputs are written atomically (writeFits / writeJsonAtomic); the input is never
// modified; every failure is a PccError with a code from PccErrorCode (FITS read errors become
// PCC_UNREADABLE with the FitsError as cause).

import { readFitsImage, writeFits, type FitsImage } from '../fits/index.js';
import { writeJsonAtomic } from '../pipeline/atomic.js';
import { readCatalogCsv } from './catalog-csv.js';
import { applyMatrix, isDiagonal, toMatrix3 } from './color-matrix.js';
import { isPccError, PccError, throwIfAborted } from './pcc-errors.js';
import { resolveOptions, runPcc } from './pcc.js';
import type { PccFileResult, PccOptions, PccResult } from './pcc-types.js';
import { angularSeparationDeg, TanWcs } from './wcs.js';

export { PccError, isPccError, type PccErrorCode } from './pcc-errors.js';
export type { PccFileResult, PccOptions, PccResult } from './pcc-types.js';

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
export function pccDiagnostics(r: { result?: PccResult; error?: PccError; input: string; output: string | null }): Record<string, unknown> {
  if (r.result) {
    const x = r.result;
    return {
      success: true,
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
      radii_px: x.radii_px,
      wcs_offset_px: x.wcs_offset_px,
      background_neutralization: { ...x.background_neutralization, output_background: Number.isFinite(x.background_neutralization.output_background) ? x.background_neutralization.output_background : null },
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
    used_source: d.used_source ?? null,
    stars_in_field: d.stars_in_field ?? 0,
    stars_matched: d.stars_matched ?? 0,
    stars_used: d.stars_used ?? 0,
    residual_rms: d.residual_rms ?? null,
    determinant: d.determinant ?? null,
    condition_number: d.condition_number ?? null,
    apply_mode: 'diagonal',
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
  catalogFile: string;
  /** Where to write the diagnostics JSON (success and failure); none when absent. */
  diagnosticsFile?: string;
  /** How the diagnostics name the input and output (e.g. run-relative paths); default the paths. */
  diagnosticsNames?: { input: string; output: string };
  signal?: AbortSignal;
  config?: Partial<PccOptions>;
  /** WCS to use instead of the input header's (e.g. a solve not yet written into the file). */
  wcs?: TanWcs;
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
  try {
    const options = resolveOptions(opts.config);
    throwIfAborted(opts.signal);
    const img = await readRgb(opts.input);
    const wcs = opts.wcs ?? TanWcs.fromHeader(img.header);
    if (!wcs) throw new PccError('PCC_NO_WCS', `${opts.input} has no celestial TAN WCS in its header (plate-solve it first)`);
    // Cone: field centre and the farthest corner, plus 5 %.
    const [ra0, dec0] = wcs.centre(img.width, img.height);
    let radius = 0;
    for (const [x, y] of [[0, 0], [img.width - 1, 0], [0, img.height - 1], [img.width - 1, img.height - 1]] as const) {
      const [ra, dec] = wcs.pixelToSky(x, y);
      radius = Math.max(radius, angularSeparationDeg(ra0, dec0, ra, dec));
    }
    radius *= 1.05;
    const cat = await readCatalogCsv(
      opts.catalogFile,
      (s) => s.mag >= options.mag_bright_limit && s.mag <= options.mag_limit && angularSeparationDeg(ra0, dec0, s.ra, s.dec) <= radius,
      opts.signal,
    );
    throwIfAborted(opts.signal);
    const { result, data } = runPcc({ width: img.width, height: img.height, data: img.data, wcs, catalog: cat.stars, source: `catalog_file:${opts.catalogFile}`, options, ...(opts.signal ? { signal: opts.signal } : {}) });
    throwIfAborted(opts.signal);
    const f = result.factors;
    await write(opts.output, img, data, `skystack PCC: factors R ${f[0].toFixed(5)} G ${f[1].toFixed(5)} B ${f[2].toFixed(5)}, ${result.stars_used} stars, white ${result.white_reference.name}${result.background_neutralization.applied ? ', sky neutralised' : ''}`, opts.wcs);
    await writeDiag(pccDiagnostics({ result, input: names.input, output: names.output }));
    return { output: opts.output, diagnosticsFile: opts.diagnosticsFile ?? null, result };
  } catch (e) {
    // Anything but a PccError is a bug, not bad input: it goes up unchanged.
    if (!isPccError(e)) throw e;
    if (e.code !== 'PCC_WRITE_FAILED') await writeDiag(pccDiagnostics({ error: e, input: names.input, output: null }));
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
