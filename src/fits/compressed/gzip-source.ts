// The decompressed bytes of a gzip-compressed FITS file (.fits.gz, .fit.gz) as a ByteSource.
// gzip cannot be entered in the middle, so one inflate stream is kept per reader and read
// forwards: a read ahead of the stream's position inflates and drops the bytes in between, a
// read behind it restarts the stream from the file's first byte. The pipeline reads lights
// front to back (header, then row bands in order), so a whole pass costs one inflate.
// Memory: the current 64 KiB output chunk plus the stream's own buffers, whatever the file size.
// File descriptors: one while a stream is open (each start opens the file anew: a stream's
// handle closes with it), none once the reader is closed.
// Invariants: reads are serialised (the stream has one cursor); a stream that fails (truncated
// file, corrupt data) fails every later read with the same FitsError until it is restarted by a
// read behind it, which fails again the same way.

import { createReadStream } from 'node:fs';
import type { Readable } from 'node:stream';
import { createGunzip } from 'node:zlib';
import { FitsError, isFitsError } from '../errors.js';
import { osError, type ByteSource } from '../source.js';

const CHUNK = 64 * 1024;

export class GzipSource implements ByteSource {
  readonly size = undefined;
  readonly random = false;
  private stream: Readable | null = null;
  private raw: Readable | null = null;
  private chunks: AsyncIterator<Buffer> | null = null;
  private chunk: Buffer = Buffer.alloc(0);
  /** Stream position of chunk[0]. */
  private chunkStart = 0;
  private ended = false;
  private failure: FitsError | null = null;
  private queue: Promise<unknown> = Promise.resolve();
  /** Times the stream was (re)started: tests check that forward reads never restart it. */
  starts = 0;

  constructor(private readonly file: string) {}

  read(into: Uint8Array, position: number): Promise<number> {
    const run = this.queue.then(() => this.readNow(into, position));
    this.queue = run.catch(() => undefined);
    return run;
  }

  private stop(): void {
    this.raw?.destroy();
    this.stream?.destroy();
    this.raw = null;
    this.stream = null;
    this.chunks = null;
  }

  private restart(): void {
    this.stop();
    const raw = createReadStream(this.file, { highWaterMark: CHUNK });
    const gunzip = createGunzip({ chunkSize: CHUNK });
    raw.on('error', (e) => gunzip.destroy(e));
    raw.pipe(gunzip);
    this.raw = raw;
    this.stream = gunzip;
    this.chunks = gunzip[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
    this.chunk = Buffer.alloc(0);
    this.chunkStart = 0;
    this.ended = false;
    this.failure = null;
    this.starts++;
  }

  private async readNow(into: Uint8Array, position: number): Promise<number> {
    if (this.chunks === null || position < this.chunkStart) this.restart();
    let done = 0;
    while (done < into.byteLength) {
      const at = position + done;
      const offset = at - this.chunkStart;
      if (offset < this.chunk.length) {
        const n = Math.min(into.byteLength - done, this.chunk.length - offset);
        into.set(this.chunk.subarray(offset, offset + n), done);
        done += n;
        continue;
      }
      if (this.failure) throw this.failure;
      if (this.ended) break;
      let next: IteratorResult<Buffer>;
      try {
        next = await this.chunks!.next();
      } catch (e) {
        this.failure = this.describe(e);
        throw this.failure;
      }
      this.chunkStart += this.chunk.length;
      if (next.done) {
        this.chunk = Buffer.alloc(0);
        this.ended = true;
      } else this.chunk = next.value;
    }
    return done;
  }

  private describe(e: unknown): FitsError {
    if (isFitsError(e)) return e;
    const err = e as NodeJS.ErrnoException;
    if (err?.code === 'Z_BUF_ERROR' || /unexpected end of file/i.test(err?.message ?? '')) {
      return new FitsError('FITS_TRUNCATED_DATA', this.file, 'gzip stream ends early (the file is truncated)');
    }
    if (typeof err?.code === 'string' && err.code.startsWith('Z_')) {
      return new FitsError('FITS_COMPRESSED_CORRUPT', this.file, `gzip data cannot be decompressed: ${err.message}`);
    }
    return osError(e, this.file);
  }

  async close(): Promise<void> {
    this.stop();
  }
}
