// A cheap content identity of a file the later phases of a run read (calibrated frames, masters,
// artifacts): its size and a SHA-256 over sampled blocks (the first and last 64 KiB and 14
// evenly spaced 64 KiB blocks between them; the whole file when it is smaller than that). It
// catches a truncated, replaced or rewritten file and costs at most ~1 MiB of reading per file,
// so a dry run of a run with hundreds of calibrated frames stays fast. It does not prove that
// no byte changed between samples (docs/tiled-workflow.md "Resume").

import { createHash } from 'node:crypto';
import { open, stat } from 'node:fs/promises';

export interface FileIdentity {
  /** Relative to the run folder (`/`-separated) or absolute for files outside it. */
  path: string;
  size: number;
  /** SHA-256 of the sampled blocks, prefixed with the sampling scheme. */
  hash: string;
}

const BLOCK = 64 * 1024;
const INNER = 14;

/** The identity of the file at `abs`, or null when it is not a readable regular file. */
export async function fileIdentity(abs: string, path = abs): Promise<FileIdentity | null> {
  const st = await stat(abs).catch(() => null);
  if (!st?.isFile()) return null;
  const fh = await open(abs, 'r').catch(() => null);
  if (!fh) return null;
  try {
    const h = createHash('sha256');
    h.update(`s1:${st.size}:`);
    const buf = Buffer.alloc(BLOCK);
    const readAt = async (pos: number) => {
      const { bytesRead } = await fh.read(buf, 0, Math.min(BLOCK, st.size - pos), pos);
      h.update(buf.subarray(0, bytesRead));
    };
    if (st.size <= BLOCK * (INNER + 2)) {
      for (let pos = 0; pos < st.size; pos += BLOCK) await readAt(pos);
    } else {
      const span = st.size - BLOCK;
      for (let i = 0; i <= INNER + 1; i++) await readAt(Math.floor((span * i) / (INNER + 1)));
    }
    return { path, size: st.size, hash: `s1-${h.digest('hex')}` };
  } finally {
    await fh.close();
  }
}

/** Whether the file at `abs` still has `id` (same size and sampled hash). */
export async function identityHolds(abs: string, id: FileIdentity): Promise<boolean> {
  const now = await fileIdentity(abs, id.path);
  return now !== null && now.size === id.size && now.hash === id.hash;
}
