// Compressed FITS as real tools write it: tile-compressed images made at test time by cfitsio's
// fpack from images this test writes (compared with the originals exactly where the compression is
// lossless, with funpack's own decompression exactly and with the original within half a
// quantization step where floats were quantized), gzip-compressed files made by gzip, and files
// made by astropy (fixtures/compressed/make_compressed.py, compared with astropy's own reading).
// Also: row-range reads decode only the tiles they need, gzip streams only restart on a backwards
// read, and unsupported or damaged files fail with their own codes.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { FitsError, FitsHeader, FitsReader, readFitsImage, readFitsNative, writeFits, type PixelArray } from '../../src/fits/index.js';
import { cfitsioMissing, fpack, funpack } from '../helpers/cfitsio-tools.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

// dist/test/fits/compressed.test.js -> <repo>/fixtures/compressed/
const FIXTURES = fileURLToPath(new URL('../../../fixtures/compressed/', import.meta.url));

const W = 50;
const H = 37;

function gaussian(rand: () => number): () => number {
  return () => {
    const u = Math.max(rand(), 1e-12);
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
  };
}

/** A sky-like uint16 frame: noise around 1000 ADU, a few stars, the extremes 0 and 65535. */
function u16Frame(seed: number, width = W, height = H, planes = 1): Uint16Array {
  const g = gaussian(seededRandom(seed));
  const data = new Uint16Array(width * height * planes);
  for (let i = 0; i < data.length; i++) data[i] = Math.max(0, Math.min(65535, Math.round(1000 + 30 * g())));
  for (let s = 0; s < 5; s++) data[(7 * s + 3) * width + 9 * s + 4] = 60000 - s;
  data[0] = 0;
  data[1] = 65535;
  return data;
}

function i32Frame(seed: number): Int32Array {
  const r = seededRandom(seed);
  return Int32Array.from({ length: W * H }, (_, i) => (i % 7 === 0 ? Math.round((r() - 0.5) * 4.2e9) : Math.round(100000 + 3000 * r())));
}

/** Float32 sky with NaN pixels and exact zeros (dither 2 keeps them). */
function f32Frame(seed: number): Float32Array {
  const g = gaussian(seededRandom(seed));
  const data = Float32Array.from({ length: W * H }, () => 100 + 3 * g());
  data[3 * W + 4] = NaN;
  data.fill(0, 5 * W, 5 * W + 9);
  return data;
}

function same(a: ArrayLike<number | bigint>, b: ArrayLike<number | bigint>, what: string): void {
  assert.is(a.length, b.length, `${what}: length`);
  for (let i = 0; i < a.length; i++) {
    const x = Number(a[i]);
    const y = Number(b[i]);
    if (!(Object.is(x, y) || (Number.isNaN(x) && Number.isNaN(y)))) assert.unreachable(`${what}: sample ${i} is ${x}, expected ${y}`);
  }
}

async function native(file: string): Promise<{ data: PixelArray; reader: { compression: string | null; storage: string; hdu: number } }> {
  const r = await readFitsNative(file);
  return { data: r.data, reader: { compression: r.layout.compression, storage: r.layout.storage, hdu: r.layout.hdu } };
}

/** Every access path gives the same physical rows: readRows, readRowsInto (with scratch, at an offset). */
async function checkRowPaths(file: string, what: string): Promise<void> {
  const whole = await readFitsImage(file);
  const reader = await FitsReader.open(file);
  try {
    const { width, height } = reader.layout;
    const scratch = { bytes: new Uint8Array(0) };
    for (const [y0, rows] of [[0, 1], [11, 7], [height - 3, 3], [0, height]] as const) {
      const band = await reader.readRows(y0, rows, { planes: [0] });
      same(band.data, whole.data.subarray(y0 * width, (y0 + rows) * width), `${what} readRows(${y0}, ${rows})`);
      const into = new Float32Array(rows * width + 5).fill(-1);
      await reader.readRowsInto(y0, rows, into, { at: 5, scratch });
      same(into.subarray(5), band.data, `${what} readRowsInto(${y0}, ${rows})`);
      assert.is(into[4], -1, `${what}: nothing written before 'at'`);
    }
  } finally {
    await reader.close();
  }
}

/** Where the heap of the first tile-compressed table starts (byte offset in the file). */
function heapStart(bytes: Uint8Array): number {
  const text = Buffer.from(bytes).toString('latin1');
  let pos = 0;
  for (let hdu = 0; hdu < 2; hdu++) {
    let end = pos;
    while (!text.slice(end, end + 80).startsWith('END     ')) end += 80;
    const header = text.slice(pos, end);
    pos = Math.ceil((end + 80) / 2880) * 2880;
    if (hdu === 1) {
      const num = (k: string) => Number(new RegExp(`${k.padEnd(8)}=\\s*(\\d+)`).exec(header)![1]);
      return pos + num('NAXIS1') * num('NAXIS2');
    }
  }
  throw new Error('unreachable');
}

async function expectCode(action: () => Promise<unknown>, code: string, what: string): Promise<void> {
  const err = await action().then(
    () => null,
    (e: unknown) => e,
  );
  assert.ok(err instanceof FitsError, `${what}: expected a FitsError ${code}, got ${String(err)}`);
  assert.is((err as FitsError).code, code, `${what}: ${(err as FitsError).message}`);
}

const needTools = (name: string, f: () => Promise<void>) =>
  test(name, async () => {
    if (cfitsioMissing) {
      console.log(`  skipped (${name.slice(0, 40)}…): ${cfitsioMissing}`);
      return;
    }
    await f();
  });

needTools('fpack RICE_1 (default row tiles): uint16 (BZERO 32768), int32, uint32 read back exactly, header restored', async () => {
  await withTempDir('fz-rice', async (dir) => {
    const header = new FitsHeader().set('EXPTIME', 120, { real: true }).set('BAYERPAT', 'RGGB').set('CCD-TEMP', -10.5);
    const cases: [string, PixelArray][] = [
      ['u16', u16Frame(1)],
      ['i32', i32Frame(2)],
      ['u32', Uint32Array.from(i32Frame(3), (v) => v >>> 0)],
    ];
    for (const [name, data] of cases) {
      const plain = join(dir, `${name}.fits`);
      await writeFits(plain, { width: W, height: H, data }, { header });
      const fz = fpack(plain, join(dir, `${name}.fz`));
      const got = await native(fz);
      assert.equal(got.reader, { compression: 'RICE_1', storage: (await native(plain)).reader.storage, hdu: 1 }, name);
      same(got.data, data, `${name}.fz`);
      const r = await FitsReader.open(fz);
      assert.is(r.header.get('EXPTIME'), 120);
      assert.is(r.header.get('BAYERPAT'), 'RGGB');
      assert.is(r.header.get('NAXIS1'), W);
      assert.is(r.header.get('BITPIX'), data instanceof Uint16Array ? 16 : 32);
      assert.not.ok(r.header.has('ZIMAGE') || r.header.has('TFORM1') || r.header.has('XTENSION'), 'no table keywords in the image header');
      await r.close();
      await checkRowPaths(fz, `${name}.fz`);
    }
  });
});

needTools('fpack GZIP_1 and GZIP_2 on float32 without quantization (-q 0): bit-exact, NaN kept', async () => {
  await withTempDir('fz-gzip', async (dir) => {
    const data = f32Frame(4);
    const plain = join(dir, 'f32.fits');
    await writeFits(plain, { width: W, height: H, data });
    for (const [flag, algorithm] of [['-g', 'GZIP_1'], ['-g2', 'GZIP_2']] as const) {
      const fz = fpack(plain, join(dir, `f32${flag}.fz`), [flag, '-q', '0']);
      const got = await native(fz);
      assert.is(got.reader.compression, algorithm);
      same(got.data, data, algorithm);
      await checkRowPaths(fz, algorithm);
    }
    // Integers through GZIP too (BYTEPIX of the image type): uint16 with GZIP_2's byte shuffle.
    const u16 = u16Frame(5);
    const plainU = join(dir, 'u16.fits');
    await writeFits(plainU, { width: W, height: H, data: u16 });
    same((await native(fpack(plainU, join(dir, 'u16g2.fz'), ['-g2']))).data, u16, 'uint16 GZIP_2');
  });
});

needTools('fpack quantized float32 (dither 1 RICE_1, dither 2 GZIP_2, no dither): equal to funpack exactly, within half a step of the original', async () => {
  await withTempDir('fz-quant', async (dir) => {
    const data = f32Frame(6);
    const plain = join(dir, 'f32.fits');
    await writeFits(plain, { width: W, height: H, data });
    // -q -2: an absolute quantization step of 2.0 ADU in every tile; -qN fixes the dither seed.
    const variants: [string, string[], string][] = [
      ['dither1', ['-q17', '-2'], 'SUBTRACTIVE_DITHER_1'],
      ['dither2', ['-g2', '-qz42', '-2'], 'SUBTRACTIVE_DITHER_2'],
      ['nodither', ['-q0', '-2'], 'NO_DITHER'],
    ];
    for (const [name, flags, method] of variants) {
      const fz = fpack(plain, join(dir, `${name}.fz`), flags);
      const text = (await readFile(fz)).toString('latin1');
      assert.ok(text.includes(`'${method}'`), `${name}: written as ${method}`);
      const mine = (await readFitsImage(fz)).data;
      const theirs = (await readFitsImage(funpack(fz, join(dir, `${name}.unpacked.fits`)))).data;
      same(mine, theirs, `${name} vs funpack`);
      let worst = 0;
      for (let i = 0; i < data.length; i++) {
        if (Number.isNaN(data[i]!)) {
          assert.ok(Number.isNaN(mine[i]!), `${name}: NaN kept at ${i}`);
          continue;
        }
        worst = Math.max(worst, Math.abs(mine[i]! - data[i]!));
      }
      assert.ok(worst <= 1.0 + 1e-4, `${name}: worst error ${worst} exceeds half the 2.0 step`);
      assert.ok(worst > 0.2, `${name}: worst error ${worst}: the data really were quantized`);
      if (method === 'SUBTRACTIVE_DITHER_2') for (let i = 5 * W; i < 5 * W + 9; i++) assert.is(mine[i], 0, `dither 2 keeps zero at ${i}`);
      await checkRowPaths(fz, name);
    }
  });
});

needTools('NOCOMPRESS (fpack -d), tiles of 16 x 5 with partial last tiles, one whole-image tile, a 3-plane cube: exact', async () => {
  await withTempDir('fz-tiles', async (dir) => {
    const data = u16Frame(7);
    const plain = join(dir, 'u16.fits');
    await writeFits(plain, { width: W, height: H, data });
    const variants: [string, string[], string][] = [
      ['nocompress', ['-d'], 'NOCOMPRESS'],
      ['rows5', ['-t', `${W},5`], 'RICE_1'],
      ['square', ['-t', '16,5'], 'RICE_1'],
      ['whole', ['-w'], 'RICE_1'],
      ['gzip-square', ['-g', '-t', '16,8'], 'GZIP_1'],
    ];
    for (const [name, flags, algorithm] of variants) {
      const fz = fpack(plain, join(dir, `${name}.fz`), flags);
      const got = await native(fz);
      assert.is(got.reader.compression, algorithm, name);
      same(got.data, data, name);
      await checkRowPaths(fz, name);
    }
    const cube = u16Frame(8, 30, 20, 3);
    const plainCube = join(dir, 'cube.fits');
    await writeFits(plainCube, { width: 30, height: 20, planes: 3, data: cube });
    const fzCube = fpack(plainCube, join(dir, 'cube.fz'));
    same((await native(fzCube)).data, cube, 'cube');
    const r = await FitsReader.open(fzCube);
    try {
      assert.equal([r.width, r.height, r.planes], [30, 20, 3]);
      const band = await r.readRows(4, 6, { planes: [2, 0] });
      same(band.data.subarray(0, 180), cube.subarray(2 * 600 + 120, 2 * 600 + 300), 'cube plane 2 rows 4..9');
      same(band.data.subarray(180), cube.subarray(120, 300), 'cube plane 0 rows 4..9');
    } finally {
      await r.close();
    }
  });
});

needTools('a row range in the middle of a tiled file decodes only the tiles holding it; a band cutting a tile row decodes it once', async () => {
  await withTempDir('fz-range', async (dir) => {
    const data = u16Frame(9, 64, 200);
    const plain = join(dir, 'u16.fits');
    await writeFits(plain, { width: 64, height: 200, data });
    const fz = fpack(plain, join(dir, 'rows8.fz'), ['-t', '64,8']);
    const r = await FitsReader.open(fz);
    try {
      const band = await r.readRows(100, 12); // rows 100..111: tile rows 12 (96..103) and 13 (104..111)
      same(band.data, data.subarray(100 * 64, 112 * 64), 'rows 100..111');
      assert.is(r.stats.tilesDecoded, 2, 'two of 25 tiles decoded');
      await r.readRows(112, 4); // first half of tile row 14
      await r.readRows(116, 4); // second half: the cached tile row serves it
      assert.is(r.stats.tilesDecoded, 3);
    } finally {
      await r.close();
    }
  });
});

needTools('an int16 image with BSCALE/BZERO compressed: physical values (float64) equal the plain file', async () => {
  await withTempDir('fz-scaled', async (dir) => {
    const header = new FitsHeader().set('SIMPLE', true).set('BITPIX', 16).set('NAXIS', 2).set('NAXIS1', W).set('NAXIS2', H).set('BSCALE', 0.25).set('BZERO', 1000.5, { real: true });
    const stored = Int16Array.from({ length: W * H }, (_, i) => ((i * 7919) % 60000) - 30000);
    const bytes = new Uint8Array(Math.ceil((W * H * 2) / 2880) * 2880);
    const view = new DataView(bytes.buffer);
    stored.forEach((v, i) => view.setInt16(2 * i, v));
    const plain = join(dir, 'scaled.fits');
    await writeFile(plain, Buffer.concat([header.toBytes(), bytes]));
    const fz = fpack(plain, join(dir, 'scaled.fz'));
    const a = await readFitsImage(plain, 'float64');
    const b = await readFitsImage(fz, 'float64');
    assert.is(b.layout.compression, 'RICE_1');
    assert.equal([b.layout.bscale, b.layout.bzero], [0.25, 1000.5]);
    same(b.data, a.data, 'physical values');
    assert.is(b.data[1], 1000.5 + 0.25 * stored[1]!);
  });
});

needTools('HCOMPRESS_1 and PLIO_1 files: FITS_COMPRESSION_UNSUPPORTED; truncated .fz: FITS_TRUNCATED_DATA; a damaged gzip tile: FITS_COMPRESSED_CORRUPT', async () => {
  await withTempDir('fz-bad', async (dir) => {
    const plain = join(dir, 'u16.fits');
    await writeFits(plain, { width: W, height: H, data: u16Frame(10) });
    for (const flag of ['-h', '-p']) {
      const fz = fpack(plain, join(dir, `x${flag}.fz`), [flag]);
      await expectCode(() => FitsReader.open(fz), 'FITS_COMPRESSION_UNSUPPORTED', flag);
    }
    const whole = await readFile(fpack(plain, join(dir, 'rice.fz')));
    const cut = join(dir, 'cut.fz');
    await writeFile(cut, whole.subarray(0, heapStart(whole) + 200));
    await expectCode(() => FitsReader.open(cut), 'FITS_TRUNCATED_DATA', 'fz cut inside its heap');

    const gz = Buffer.from(await readFile(fpack(plain, join(dir, 'g.fz'), ['-g'])));
    gz.fill(0x55, heapStart(gz) + 12, heapStart(gz) + 30); // inside tile 1's deflate data
    const damaged = join(dir, 'damaged.fz');
    await writeFile(damaged, gz);
    const r = await FitsReader.open(damaged);
    try {
      await expectCode(() => r.readRows(0, 1), 'FITS_COMPRESSED_CORRUPT', 'damaged tile 1');
      assert.is((await r.readRows(5, 3)).data.length, 3 * W, 'other tiles still read');
    } finally {
      await r.close();
    }
  });
});

test('.fits.gz (gzip tool, else zlib): uint16 and float32 read exactly; forward band reads inflate once, a backwards read restarts', async () => {
  await withTempDir('gz', async (dir) => {
    // 256 x 300: several 64 KiB inflate chunks, so a read behind the current one needs a restart.
    const u16 = u16Frame(11, 256, 300);
    const f32 = Float32Array.from(u16, (v, i) => v / 7 + (i % 3));
    for (const [name, data] of [
      ['u16', u16],
      ['f32', f32],
    ] as const) {
      const plain = join(dir, `${name}.fits`);
      await writeFits(plain, { width: 256, height: 300, data });
      const gz = `${plain}.gz`;
      const tool = spawnSync('gzip', ['-k', '-9', plain]);
      if (tool.error || tool.status !== 0) await writeFile(gz, gzipSync(await readFile(plain)));
      const got = await native(gz);
      assert.equal(got.reader.compression, 'gzip');
      same(got.data, data, name);
      await checkRowPaths(gz, name);
      const r = await FitsReader.open(gz);
      try {
        const out = new Float32Array(256 * 50);
        for (let y0 = 0; y0 < 300; y0 += 50) {
          await r.readRowsInto(y0, 50, out);
          same(out, Float32Array.from(data.subarray(y0 * 256, (y0 + 50) * 256)), `${name} band ${y0}`);
        }
        assert.is(r.stats.inflateStarts, 1, `${name}: header and six forward bands: one inflate`);
        await r.readRowsInto(10, 50, out);
        assert.is(r.stats.inflateStarts, 2, `${name}: a read behind the stream restarts it`);
        same(out, Float32Array.from(data.subarray(10 * 256, 60 * 256)), `${name} after restart`);
      } finally {
        await r.close();
      }
    }
  });
});

test('astropy files: an IMAGE extension after an empty primary (its keywords inherited), RICE_1 tiles, GZIP_2 int32, quantized floats', async () => {
  const cases: [string, string, string][] = [
    ['ext_image', 'uint16', 'null'],
    ['rice_u16_tiles', 'uint16', 'RICE_1'],
    ['gzip2_i32', 'int32', 'GZIP_2'],
    ['gzip1_f32_nodither', 'float32', 'GZIP_1'],
    ['rice_f32_dither2', 'float32', 'RICE_1'],
  ];
  for (const [name, storage, compression] of cases) {
    const file = join(FIXTURES, `${name}.fits`);
    const got = await native(file);
    const expected = await native(join(FIXTURES, `${name}.expected.fits`));
    assert.equal([got.reader.storage, String(got.reader.compression), got.reader.hdu], [storage, compression, 1], name);
    same(got.data, expected.data, name);
    await checkRowPaths(file, name);
  }
  const ext = await FitsReader.open(join(FIXTURES, 'ext_image.fits'));
  assert.is(ext.header.get('EXPTIME'), 30, 'EXPTIME from the primary header');
  assert.is(ext.header.get('EXTNAME'), 'SCI');
  await ext.close();
  const dither = await readFitsImage(join(FIXTURES, 'rice_f32_dither2.fits'));
  assert.equal(Array.from(dither.data.subarray(5 * W, 5 * W + 7)), [0, 0, 0, 0, 0, 0, 0]);
});

test.run();
