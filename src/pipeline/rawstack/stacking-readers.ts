// Open FITS readers for STACKING's band loop: every band reads a few rows of every frame, so
// readers stay open across bands, but a 1000-frame run must not hold 1000 file descriptors. An
// LRU keeps at most `capacity` readers open (default 64, far below the usual 1024 fd limit) and
// closes the least recently used one when another is needed.
// Invariants: a reader handed out by get() stays open until the promise chain that uses it has
// finished (readers in use are never evicted: `busy` counts), closeAll() closes everything and is
// idempotent; a failed open is not cached (the next get() retries and reports the error again).

import { FitsReader } from '../../fits/index.js';

interface Entry {
  reader: Promise<FitsReader>;
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

  private async evict(): Promise<void> {
    if (this.open.size < this.capacity) return;
    for (const [file, entry] of this.open) {
      if (entry.busy > 0) continue;
      this.open.delete(file);
      await entry.reader.then((r) => r.close()).catch(() => undefined);
      if (this.open.size < this.capacity) return;
    }
  }

  async closeAll(): Promise<void> {
    const entries = [...this.open.values()];
    this.open.clear();
    await Promise.all(entries.map((e) => e.reader.then((r) => r.close()).catch(() => undefined)));
  }
}
