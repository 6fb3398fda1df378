// Open FITS readers for STACKING's band loop: every band reads a few rows of every frame, so
// readers stay open across bands, but a 1000-frame run must not hold 1000 file descriptors. An
// LRU keeps at most `capacity` files open (default 64; two descriptors each once readRowsInto
// has read them, far below the usual 1024 fd limit) and closes the least recently used one
// when another is needed.
// Invariants: a reader handed out by get() stays open until the promise chain that uses it has
// finished (readers in use are never evicted: `busy` counts), closeAll() closes everything and is
// idempotent; a failed open is not cached (the next get() retries and reports the error again).
// readRowsInto reads rows into a caller's buffer (the band loop recycles a few), so a band of
// 30 frames does not leave 30 dead row arrays for the garbage collector: on a 2048-wide frame
// they were ~2 MB each and tens of MB of them were alive at STACKING's peak RSS.

import { open, type FileHandle } from 'node:fs/promises';
import { FitsError, FitsReader } from '../../fits/index.js';
import { decodeSamples, nativeIsPhysicalFloat32 } from '../../fits/samples.js';

interface Entry {
  reader: Promise<FitsReader>;
  /** A second handle for readRowsInto (FitsReader keeps its own private), opened on first use. */
  fh: Promise<FileHandle> | null;
  busy: number;
}

export class ReaderCache {
  private readonly open = new Map<string, Entry>();
  /** Opens performed (for diagnostics: with an LRU smaller than the frame count, > frames). */
  opens = 0;

  constructor(readonly capacity = 64) {}

  /** Runs `f` with the open reader of `file` (opened on demand). */
  async use<T>(file: string, f: (reader: FitsReader) => Promise<T>): Promise<T> {
    let entry = this.open.get(file);
    if (entry) {
      // Move to the most-recent end of the Map's insertion order.
      this.open.delete(file);
      this.open.set(file, entry);
    } else {
      await this.evict();
      this.opens++;
      const reader = FitsReader.open(file);
      entry = { reader, fh: null, busy: 0 };
      this.open.set(file, entry);
      reader.catch(() => {
        if (this.open.get(file) === entry) this.open.delete(file);
      });
    }
    entry.busy++;
    try {
      return await f(await entry.reader);
    } finally {
      entry.busy--;
    }
  }

  /**
   * Rows [y0, y0 + rows) of plane 0 as physical float32 values, decoded in place into `target`
   * (returns a view of it) when the file stores plain float32 samples and `target` holds them;
   * otherwise (scaled or integer data, too small a target) a fresh array from readRows.
   */
  async readRowsInto(file: string, y0: number, rows: number, target: Float32Array): Promise<Float32Array> {
    return this.use(file, async (reader) => {
      const { width, height, dataOffset } = reader.layout;
      const n = rows * width;
      if (!nativeIsPhysicalFloat32(reader.layout) || n > target.length || !Number.isInteger(y0) || !Number.isInteger(rows) || y0 < 0 || rows < 0 || y0 + rows > height) {
        return (await reader.readRows(y0, rows, { planes: [0] })).data;
      }
      const entry = this.open.get(file)!;
      const bytes = new Uint8Array(target.buffer, target.byteOffset, 4 * n);
      let done = 0;
      try {
        if (!entry.fh) {
          entry.fh = open(file, 'r');
          // A failed open is not kept: the next read retries (and reports it again).
          entry.fh.catch(() => {
            if (this.open.get(file) === entry) entry.fh = null;
          });
        }
        const fh = await entry.fh;
        while (done < bytes.byteLength) {
          const { bytesRead } = await fh.read(bytes, done, bytes.byteLength - done, dataOffset + 4 * y0 * width + done);
          if (bytesRead === 0) break;
          done += bytesRead;
        }
      } catch (e) {
        // The same error type as the reader's own reads (STACKING reports FitsError as a frame's
        // input error, anything else as a bug).
        const code = (e as NodeJS.ErrnoException)?.code;
        throw new FitsError(code === 'ENOENT' ? 'FITS_NOT_FOUND' : 'FITS_UNREADABLE', file, `${code ?? 'I/O error'}: ${(e as Error)?.message ?? String(e)}`);
      }
      if (done < bytes.byteLength) throw new FitsError('FITS_TRUNCATED_DATA', file, `file ended while reading pixel data (got ${done} of ${bytes.byteLength} bytes)`);
      return decodeSamples(bytes, 'float32', 4) as Float32Array;
    });
  }

  private async evict(): Promise<void> {
    if (this.open.size < this.capacity) return;
    for (const [file, entry] of this.open) {
      if (entry.busy > 0) continue;
      this.open.delete(file);
      await closeEntry(entry);
      if (this.open.size < this.capacity) return;
    }
  }

  async closeAll(): Promise<void> {
    const entries = [...this.open.values()];
    this.open.clear();
    await Promise.all(entries.map(closeEntry));
  }
}

async function closeEntry(e: Entry): Promise<void> {
  await Promise.all([e.reader.then((r) => r.close()).catch(() => undefined), e.fh?.then((h) => h.close()).catch(() => undefined)]);
}
