// Typed FITS failures. Every error names the file and carries one code from a closed union,
// so callers (scan, CLI, API) can branch on the code and show the message unchanged.

export type FitsErrorCode =
  | 'FITS_NOT_FOUND' // path does not exist
  | 'FITS_NOT_A_FILE' // path is a directory or special file
  | 'FITS_UNREADABLE' // permission or I/O error from the OS
  | 'FITS_EMPTY' // zero-length file
  | 'FITS_NOT_FITS' // first card is not SIMPLE (and not a known container)
  | 'FITS_NONSTANDARD' // SIMPLE = F
  | 'FITS_TRUNCATED_HEADER' // file ends inside a header block
  | 'FITS_MISSING_END' // header blocks end without an END card
  | 'FITS_BAD_CARD' // a header card is not printable ASCII or has a malformed keyword
  | 'FITS_MISSING_KEYWORD' // a mandatory keyword (BITPIX, NAXIS, NAXISn) is absent
  | 'FITS_BAD_KEYWORD_VALUE' // a mandatory or scaling keyword has a wrong type or value
  | 'FITS_BAD_BITPIX' // BITPIX not one of 8, 16, 32, 64, -32, -64
  | 'FITS_BAD_NAXIS' // NAXIS or NAXISn out of range
  | 'FITS_UNSUPPORTED_NAXIS' // NAXIS other than 2 or 3 for an image
  | 'FITS_NO_IMAGE' // no HDU holds an image (primary without data and no IMAGE or tile-compressed extension)
  | 'FITS_COMPRESSION_UNSUPPORTED' // tile-compression algorithm not read (HCOMPRESS_1, PLIO_1, an unknown ZCMPTYPE)
  | 'FITS_COMPRESSED_LAYOUT_UNSUPPORTED' // tiled image variant not read (64-bit integer tiles, tiles across planes, unknown ZQUANTIZ)
  | 'FITS_COMPRESSED_CORRUPT' // compressed data that cannot be decoded (bad gzip stream, tile of the wrong size, descriptor outside the heap)
  | 'FITS_RANDOM_GROUPS_UNSUPPORTED' // GROUPS = T
  | 'FITS_TRUNCATED_DATA' // file ends before the data array does
  | 'FITS_TOO_LARGE' // data array larger than this process can hold
  | 'FITS_ROW_RANGE' // a requested row/plane range lies outside the image
  | 'FITS_HEADER_NOT_READ' // the header of a reader re-opened from its image layout alone (FitsReader.reopenPlain) was asked for
  | 'FITS_BAD_IMAGE' // an image handed to the writer is inconsistent
  | 'FITS_BAD_HEADER' // a header card cannot be written (non-ASCII text, NaN value, over-long HIERARCH card)
  | 'FITS_WRITE_FAILED'; // the OS refused the write or rename

export class FitsError extends Error {
  override readonly name = 'FitsError';
  constructor(
    readonly code: FitsErrorCode,
    readonly file: string,
    detail: string,
  ) {
    super(`${file}: ${code}: ${detail}`);
  }
}

export function isFitsError(e: unknown): e is FitsError {
  return e instanceof FitsError;
}
