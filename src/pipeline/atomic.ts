// Atomic file writes: a temporary name in the same folder, fsync, rename. Readers see the old
// file or the complete new one, never a half-written file presented as good.

import { open, rename, unlink } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { randomBytes } from 'node:crypto';

export async function writeFileAtomic(file: string, data: string | Uint8Array): Promise<void> {
  const tmp = join(dirname(file), `.${basename(file)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`);
  const fh = await open(tmp, 'wx');
  try {
    await fh.writeFile(data);
    await fh.sync();
    await fh.close();
    await rename(tmp, file);
  } catch (e) {
    await fh.close().catch(() => undefined);
    await unlink(tmp).catch(() => undefined);
    throw e;
  }
}

export function writeJsonAtomic(file: string, value: unknown): Promise<void> {
  return writeFileAtomic(file, JSON.stringify(value, null, 2) + '\n');
}
