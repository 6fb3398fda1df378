// Messages between the server and its viewer worker threads (service.ts ↔ worker.ts). Pixel work
// (pyramid builds, HMS-look tiles, pixel reads, exports) runs in the workers so the server's event
// loop stays free; files arrive as paths the server already confined (a /proc/self/fd/N path
// of a descriptor it opened and checked, where the system has one).

import type { RenderOptions } from './export.js';
import type { ExportFormat } from './export.js';
import type { PyramidMeta } from './pyramid.js';

export type WorkerRequest =
  | { op: 'prepare'; source: string; dir: string; rel: string; size: number; mtimeMs: number }
  | { op: 'pixel'; source: string; x: number; y: number }
  | { op: 'look'; dir: string; meta: PyramidMeta; level: number; tx: number; ty: number; diag: string | null; config: string | null }
  | { op: 'export'; source: string; format: ExportFormat; options: Omit<RenderOptions, 'hms'>; diag: string | null; config: string | null };

export interface PixelResult {
  x: number;
  y: number;
  /** Physical value per plane (BZERO/BSCALE applied, double precision); null for NaN/BLANK. */
  values: (number | null)[];
  /** Degrees, when the header has a TAN WCS. */
  ra: number | null;
  dec: number | null;
}

export interface ExportResult {
  bytes: Uint8Array;
  levels: unknown;
  hms: string | null;
}

/** Closed set of failures a worker reports (FITS read errors carry their own FITS_* code). */
export type ViewerErrorCode = 'FITS' | 'CACHE_REFUSED' | 'OUT_OF_RANGE' | 'NOT_RGB' | 'BAD_OPTION' | 'UNSUPPORTED_FORMAT' | 'CHANNEL_OUT_OF_RANGE' | 'WORKER_FAILED' | 'INTERNAL';

export interface WorkerFailure {
  code: ViewerErrorCode;
  message: string;
  /** The FITS error code for code FITS. */
  fits_code?: string;
}

export type WorkerReply = { id: number; ok: true; result: unknown } | { id: number; ok: false; error: WorkerFailure };

export class ViewerError extends Error {
  constructor(
    readonly code: ViewerErrorCode,
    message: string,
    readonly fitsCode?: string,
  ) {
    super(message);
  }
}
