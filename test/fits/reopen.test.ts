// FitsReader.reopenPlain: a plain file opened again from the layout an earlier reader recorded
// reads the same physical values without its header; a file that changed since (size, mtime),
// a compressed file and a missing one are refused or fail as a full open would.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { FitsReader, isFitsError, writeFits } from '../../src/fits/index.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

const W = 13;
const H = 9;

/** Rows of `file` through a full open. */
async function rowsOf(file: string, y0: number, rows: number): Promise<Float32Array> {
  const r = await FitsReader.open(file);
  try {
    return (await r.readRows(y0, rows)).data;
  } finally {
    await r.close();
  }
}

test('reopenPlain: the same rows as a full open (float32 and unsigned 16-bit with BZERO), no header', async () => {
  await withTempDir('reopen', async (dir) => {
    const rnd = seededRandom(34);
    const f32 = join(dir, 'f32.fits');
    const u16 = join(dir, 'u16.fits');
    await writeFits(f32, { width: W, height: H, data: Float32Array.from({ length: W * H }, () => (rnd() < 0.05 ? NaN : 1000 * rnd() - 200)) });
    await writeFits(u16, { width: W, height: H, data: Uint16Array.from({ length: W * H }, () => Math.floor(65535 * rnd())) });
    for (const file of [f32, u16]) {
      const full = await FitsReader.open(file);
      const known = full.plainReopen;
      assert.ok(known, `${file}: a plain file records its layout`);
      const want = await full.readRows(2, 5);
      await full.close();
      const again = await FitsReader.reopenPlain(file, known!);
      assert.ok(again, 'an unchanged file re-opens');
      try {
        assert.is(again!.width, W);
        const got = await again!.readRows(2, 5);
        assert.equal(Array.from(got.data).map(String), Array.from(want.data).map(String));
        const into = new Float32Array(W * 3);
        await again!.readRowsInto(6, 3, into);
        assert.equal(Array.from(into).map(String), Array.from(await rowsOf(file, 6, 3)).map(String));
        let err: unknown = null;
        try {
          void again!.header;
        } catch (e) {
          err = e;
        }
        assert.ok(isFitsError(err) && err.code === 'FITS_HEADER_NOT_READ', `header of a re-opened reader: ${String(err)}`);
        assert.ok(again!.plainReopen, 'a re-opened reader records its layout too');
      } finally {
        await again!.close();
      }
    }
  });
});

test('reopenPlain: a changed file is refused (null), a missing one fails as open does, compressed files record nothing', async () => {
  await withTempDir('reopen-changed', async (dir) => {
    const file = join(dir, 'a.fits');
    await writeFits(file, { width: W, height: H, data: new Float32Array(W * H).fill(1) });
    const r = await FitsReader.open(file);
    const known = r.plainReopen!;
    await r.close();
    // Rewritten (writeFits replaces the file by rename) with the same size: another inode.
    await writeFits(file, { width: W, height: H, data: new Float32Array(W * H).fill(2) });
    assert.is(await FitsReader.reopenPlain(file, known), null, 'replaced, same size: the caller opens it in full');
    const same = await FitsReader.open(file);
    const sameKnown = same.plainReopen!;
    await same.close();
    assert.ok(await FitsReader.reopenPlain(file, sameKnown).then((r) => r?.close().then(() => true)), 'unchanged since: re-opens');
    assert.is(await FitsReader.reopenPlain(file, { ...sameKnown, size: sameKnown.size + 2880 }), null, 'another size: refused');
    assert.is(await FitsReader.reopenPlain(file, { ...sameKnown, mtimeMs: sameKnown.mtimeMs - 1000 }), null, 'another modification time: refused');
    await rm(file);
    const err = await FitsReader.reopenPlain(file, sameKnown).catch((e: unknown) => e);
    assert.ok(isFitsError(err) && err.code === 'FITS_NOT_FOUND', `missing: ${String(err)}`);
    // gzip: the inflate stream is the reader's state; nothing to re-open from.
    const plain = join(dir, 'b.fits');
    await writeFits(plain, { width: W, height: H, data: new Float32Array(W * H).fill(3) });
    await writeFile(join(dir, 'b.fits.gz'), gzipSync(await readFile(plain)));
    const gz = await FitsReader.open(join(dir, 'b.fits.gz'));
    assert.is(gz.plainReopen, null);
    assert.ok(gz.header.getNumber('NAXIS1') === W, 'a full open keeps its header');
    await gz.close();
  });
});

test.run();
