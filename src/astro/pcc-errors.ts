// Typed failures of photometric colour calibration and of applying a colour matrix. Every error
// carries one code from a closed union so the pipeline phase, the REST API and tests can branch on
// it (map to skip reasons or HTTP statuses) and show the message unchanged.

export type PccErrorCode =
  | 'PCC_UNREADABLE' // the input image cannot be read as FITS (cause holds the FitsError)
  | 'PCC_NOT_RGB' // the input image does not have exactly three planes
  | 'PCC_NO_WCS' // the input header has no celestial TAN WCS
  | 'PCC_CATALOG_UNREADABLE' // the catalogue file is missing or unreadable
  | 'PCC_CATALOG_INVALID' // the catalogue CSV lacks a required column or has a malformed row
  | 'PCC_NO_CATALOG_STARS' // no catalogue star falls on the image within the magnitude limits
  | 'PCC_TOO_FEW_STARS' // fewer usable photometric stars than pcc.min_stars
  | 'PCC_BAD_RESIDUAL' // the colour fit's robust residual exceeds pcc.max_residual_rms
  | 'PCC_COMPRESSED_COLOURS' // a slope of image vs catalogue colour is below pcc.min_slope (colours squeezed toward grey)
  | 'PCC_INVERTED_COLOURS' // a slope of image vs catalogue colour is ≤ 0 (colours do not follow the catalogue)
  | 'PCC_NO_CATALOG' // pcc.catalog_file is empty and no catalogue package is installed
  | 'PCC_ILL_CONDITIONED' // the fitted factors are non-positive or their spread exceeds max_condition_number
  | 'PCC_BAD_WHITE_REFERENCE' // pcc.white_reference is neither a known spectral type, a B−V nor a temperature
  | 'PCC_BAD_MATRIX' // a matrix handed to applyColorMatrix is not 3×3 / 3 finite numbers
  | 'PCC_BAD_OPTIONS' // an option is out of range (e.g. negative aperture)
  | 'PCC_WRITE_FAILED' // the output or diagnostics could not be written
  | 'PCC_CANCELLED'; // the AbortSignal fired

export class PccError extends Error {
  override readonly name = 'PccError';
  constructor(
    readonly code: PccErrorCode,
    message: string,
    /** Diagnostics gathered before the failure (fit failures carry the measured stars). */
    readonly diagnostics?: Record<string, unknown>,
    options?: { cause?: unknown },
  ) {
    super(`${code}: ${message}`, options);
  }
}

export function isPccError(e: unknown): e is PccError {
  return e instanceof PccError;
}

export function throwIfAborted(signal: AbortSignal | undefined): void {
  if (signal?.aborted) throw new PccError('PCC_CANCELLED', 'cancelled');
}
