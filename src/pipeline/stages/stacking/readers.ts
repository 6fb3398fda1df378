// Open FITS readers for STACKING's band loop: every band reads a few rows of every frame, so
// readers stay open across bands, but a 1000-frame run must not hold 1000 file descriptors. An
// LRU keeps at most `capacity` files open (default 64, one descriptor each, far below the usual
// 1024 fd limit) and closes the least recently used one when another is needed. An open reader
// also keeps what makes the next band cheap: a gzip file's inflate position, a tiled file's
// decoded tile row. With more frames than `capacity` the bands' cyclic order misses every time,
// so a plain file's image layout is remembered when its reader is closed, and the file is opened
// again from it (FitsReader.reopenPlain: one open and one stat, no header read or parse; ~0.2-
// 0.3 ms less per frame and band, bench/RESULTS.md 2026-12-08); a reader re-opened that way has
// no header, so the header is read through the first use() of a file (STACKING's setup does).
// A layout costs ~1 KiB, against ~16 KiB for a reader kept open with its parsed header.
// Invariants: a reader handed out by get() stays open until the promise chain that uses it has
// finished (readers in use are never evicted: `busy` counts), closeAll() closes everything and is
// idempotent; a failed open is not cached (the next get() retries and reports the error again).
// readRowsInto reads rows into a caller's buffer (the band loop recycles a few), so a band of
// 30 frames does not leave 30 dead row arrays for the garbage collector: on a 2048-wide frame
// they were ~2 MB each and tens of MB of them were alive at STACKING's peak RSS. Integer and
// compressed files decode through scratch buffers the cache recycles (one per read in flight).

import { FitsReader, type PlainReopen, type RowScratch } from '../../../fits/index.js';

interface Entry {
  reader: Promise<FitsReader>;
  busy: number;
}

export class ReaderCache {
  private readonly open = new Map<string, Entry>();
  /** Opens performed (for diagnostics: with an LRU smaller than the frame count, > frames). */
  opens = 0;
  /** Of those, the ones tried from a remembered layout (a changed file then opens in full). */
  reopens = 0;
  /** Image layouts of plain files whose readers were closed, by file. */
  private readonly known = new Map<string, PlainReopen>();

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
      const known = this.known.get(file);
      if (known) this.reopens++;
      const reader = known ? FitsReader.reopenPlain(file, known).then((r) => r ?? FitsReader.open(file)) : FitsReader.open(file);
      entry = { reader, busy: 0 };
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
   * Rows [y0, y0 + rows) of plane 0 as physical float32 values, decoded into `target` (returns a
   * view of it): plain float32 files straight into its memory, other kinds (integers, gzip,
   * tiles) through a recycled scratch buffer. A target too small for the rows: a fresh array.
   */
  async readRowsInto(file: string, y0: number, rows: number, target: Float32Array): Promise<Float32Array> {
    return this.use(file, async (reader) => {
      const n = rows * reader.width;
      if (!(n <= target.length)) return (await reader.readRows(y0, rows, { planes: [0] })).data;
      const scratch = this.scratch.pop() ?? { bytes: new Uint8Array(0) };
      try {
        await reader.readRowsInto(y0, rows, target, { scratch });
      } finally {
        this.scratch.push(scratch);
      }
      return target.subarray(0, n);
    });
  }

  /** Scratch buffers of integer and compressed reads, one per read in flight at most. */
  private readonly scratch: RowScratch[] = [];

  private async evict(): Promise<void> {
    if (this.open.size < this.capacity) return;
    for (const [file, entry] of this.open) {
      if (entry.busy > 0) continue;
      this.open.delete(file);
      await closeEntry(entry, (k) => this.known.set(file, k));
      if (this.open.size < this.capacity) return;
    }
  }

  async closeAll(): Promise<void> {
    const entries = [...this.open.values()];
    this.open.clear();
    this.scratch.length = 0;
    this.known.clear();
    await Promise.all(entries.map((e) => closeEntry(e)));
  }
}

/** Closes the entry's reader; `remember` receives a plain file's layout for reopenPlain. */
async function closeEntry(e: Entry, remember?: (known: PlainReopen) => void): Promise<void> {
  await e.reader
    .then((r) => {
      const k = r.plainReopen;
      if (k && remember) remember(k);
      return r.close();
    })
    .catch(() => undefined);
}
