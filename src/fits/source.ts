// Where a FITS reader's bytes come from: the file itself (positional reads on one handle) or,
// for a gzip-compressed file, its decompressed stream (compressed/gzip-source.ts). Both answer
// "bytes at this position of the FITS byte stream"; the HDU walk and the pixel decoders above
// them do not know which one they read.
// Invariants: read() never returns more than asked, returns fewer only at the end of the
// stream, and turns every OS error into a FitsError naming the file.

import type { FileHandle } from 'node:fs/promises';
import { FitsError } from './errors.js';

export interface ByteSource {
  /** Length of the FITS byte stream when known without reading it (plain files); undefined for gzip. */
  readonly size: number | undefined;
  /** True for the file itself: positional reads cost no more backwards than forwards. */
  readonly random: boolean;
  /** Fills `into` from `position`; returns the bytes read (fewer only where the stream ends). */
  read(into: Uint8Array, position: number): Promise<number>;
  close(): Promise<void>;
}

export function osError(e: unknown, file: string): FitsError {
  const code = (e as NodeJS.ErrnoException)?.code;
  if (code === 'ENOENT') return new FitsError('FITS_NOT_FOUND', file, 'no such file');
  if (code === 'EISDIR') return new FitsError('FITS_NOT_A_FILE', file, 'is a directory');
  return new FitsError('FITS_UNREADABLE', file, `${code ?? 'I/O error'}: ${(e as Error)?.message ?? String(e)}`);
}

/** Reads until `into` is full or the file ends; OS errors stay raw (callers wrap them). */
export async function readExactly(fh: FileHandle, into: Uint8Array, position: number): Promise<number> {
  let done = 0;
  while (done < into.byteLength) {
    const { bytesRead } = await fh.read(into, done, into.byteLength - done, position + done);
    if (bytesRead === 0) break;
    done += bytesRead;
  }
  return done;
}

/** The file's own bytes. Concurrent reads are safe (positional reads share no cursor). */
export class FileSource implements ByteSource {
  readonly random = true;
  constructor(
    private readonly fh: FileHandle,
    readonly size: number,
    private readonly file: string,
  ) {}

  async read(into: Uint8Array, position: number): Promise<number> {
    try {
      return await readExactly(this.fh, into, position);
    } catch (e) {
      throw osError(e, this.file);
    }
  }

  async close(): Promise<void> {
    await this.fh.close().catch(() => undefined);
  }
}
