import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile, readdir } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { FitsHeader, FitsReader, isPartialWrite, partialWriteName, readFitsImage, readFitsNative, writeFits, type PixelArray } from '../../src/fits/index.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

type Maker = { name: string; bitpix: number; make: (n: number, rnd: () => number) => PixelArray };

// Values span each type's full range, extremes included, so sign-bit flips and byte swaps are exercised.
const makers: Maker[] = [
  { name: 'uint8', bitpix: 8, make: (n, r) => Uint8Array.from({ length: n }, (_, i) => (i === 0 ? 0 : i === 1 ? 255 : Math.floor(r() * 256))) },
  { name: 'int8', bitpix: 8, make: (n, r) => Int8Array.from({ length: n }, (_, i) => (i === 0 ? -128 : i === 1 ? 127 : Math.floor(r() * 256) - 128)) },
  { name: 'int16', bitpix: 16, make: (n, r) => Int16Array.from({ length: n }, (_, i) => (i === 0 ? -32768 : i === 1 ? 32767 : Math.floor(r() * 65536) - 32768)) },
  { name: 'uint16', bitpix: 16, make: (n, r) => Uint16Array.from({ length: n }, (_, i) => (i === 0 ? 0 : i === 1 ? 65535 : Math.floor(r() * 65536))) },
  { name: 'int32', bitpix: 32, make: (n, r) => Int32Array.from({ length: n }, (_, i) => (i === 0 ? -2147483648 : i === 1 ? 2147483647 : Math.floor(r() * 2 ** 32) - 2 ** 31)) },
  { name: 'uint32', bitpix: 32, make: (n, r) => Uint32Array.from({ length: n }, (_, i) => (i === 0 ? 0 : i === 1 ? 4294967295 : Math.floor(r() * 2 ** 32))) },
  {
    name: 'int64',
    bitpix: 64,
    make: (n, r) => BigInt64Array.from({ length: n }, (_, i) => (i === 0 ? -(2n ** 63n) : i === 1 ? 2n ** 63n - 1n : BigInt(Math.floor(r() * 2 ** 53)) * 1021n - 2n ** 60n)),
  },
  { name: 'uint64', bitpix: 64, make: (n, r) => BigUint64Array.from({ length: n }, (_, i) => (i === 0 ? 0n : i === 1 ? 2n ** 64n - 1n : BigInt(Math.floor(r() * 2 ** 53)) * 2047n)) },
  {
    name: 'float32',
    bitpix: -32,
    make: (n, r) => Float32Array.from({ length: n }, (_, i) => [NaN, Infinity, -Infinity, -0, 1.4e-45, 3.4028234e38][i] ?? (r() - 0.5) * 1e6),
  },
  { name: 'float64', bitpix: -64, make: (n, r) => Float64Array.from({ length: n }, (_, i) => [NaN, -Infinity, 5e-324, -0][i] ?? (r() - 0.5) * 1e300 * r()) },
];

function sameBits(a: PixelArray, b: PixelArray): boolean {
  if (a.constructor !== b.constructor || a.length !== b.length) return false;
  const x = new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
  const y = new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  return x.every((v, i) => v === y[i]);
}

for (const maker of makers) {
  for (const planes of [1, 3]) {
    test(`round trip ${maker.name} NAXIS ${planes === 1 ? 2 : 3}`, async () => {
      await withTempDir('rt', async (dir) => {
        const width = 13;
        const height = 7;
        const data = maker.make(width * height * planes, seededRandom(maker.bitpix * 10 + planes));
        const file = join(dir, `${maker.name}.fits`);
        await writeFits(file, { width, height, planes, data });
        const bytes = await readFile(file);
        assert.is(bytes.length % 2880, 0, 'file is whole 2880-byte blocks');
        const back = await readFitsNative(file);
        assert.is(back.layout.bitpix, maker.bitpix);
        assert.equal(back.layout.axes, planes === 1 ? [width, height] : [width, height, planes]);
        assert.is(back.data.constructor, data.constructor);
        assert.ok(sameBits(back.data, data), 'stored values identical bit for bit');
        // No temp file remains beside the output.
        assert.equal(await readdir(dir), [`${maker.name}.fits`]);
      });
    });
  }
}

test('a write without the flush (durable: false) stores the same bytes and leaves no temp file', async () => {
  await withTempDir('rt', async (dir) => {
    const data = makers.find((m) => m.name === 'float32')!.make(64 * 48, seededRandom(5));
    await writeFits(join(dir, 'a.fits'), { width: 64, height: 48, data });
    await writeFits(join(dir, 'b.fits'), { width: 64, height: 48, data }, { durable: false });
    assert.ok((await readFile(join(dir, 'a.fits'))).equals(await readFile(join(dir, 'b.fits'))));
    assert.equal((await readdir(dir)).sort(), ['a.fits', 'b.fits']);
  });
});

test('temporary write names are recognised, finished files are not', () => {
  const tmp = partialWriteName('/runs/x/outputs/calibrated/cal_00003.fit');
  assert.ok(tmp.startsWith('/runs/x/outputs/calibrated/.cal_00003.fit.'));
  assert.ok(isPartialWrite(basename(tmp)));
  for (const name of ['cal_00003.fit', '.hidden', 'cal_00003.fit.tmp', '.cal_00003.fit.12.xyz.tmp']) assert.not.ok(isPartialWrite(name), name);
});

test('uint16 physical values are exact in float32 (int16 + 32768 convention)', async () => {
  await withTempDir('u16', async (dir) => {
    const data = Uint16Array.from({ length: 64 * 3 }, (_, i) => (i * 1031) % 65536);
    data[5] = 65535;
    const file = join(dir, 'u16.fits');
    await writeFits(file, { width: 64, height: 3, data });
    const reader = await FitsReader.open(file);
    await reader.close();
    const header = reader.header;
    assert.is(header.get('BZERO'), 32768);
    assert.is(header.get('BITPIX'), 16);
    const image = await readFitsImage(file);
    for (let i = 0; i < data.length; i++) assert.is(image.data[i], data[i]);
  });
});

test('header order, long strings, HIERARCH and commentary survive a round trip', async () => {
  await withTempDir('hdr', async (dir) => {
    const long = 'A long observer note that runs well past the sixty-eight characters a single card can hold, with a quote (\') inside and more text after it to need a third card.';
    const h = new FitsHeader();
    h.set('OBJECT', 'M 42', { comment: 'target' });
    h.set('EXPTIME', 120, { real: true, comment: '[s]' });
    h.addHistory('first history line');
    h.set('NOTE', long, { comment: 'continued' });
    h.set('ESO DET DIT', 1.5, { hierarch: true });
    h.addComment('a comment between cards');
    h.set('FLAG', false);
    h.set('BIGINT', 12345678901234567890n);
    h.set('TINY', 1.25e-30);
    h.addHistory('second history line');
    const file = join(dir, 'h.fits');
    await writeFits(file, { width: 2, height: 2, data: new Float32Array(4) }, { header: h });
    const r = await FitsReader.open(file);
    await r.close();
    const keys = r.header.cards.map((c) => c.key);
    assert.equal(keys, ['SIMPLE', 'BITPIX', 'NAXIS', 'NAXIS1', 'NAXIS2', 'OBJECT', 'EXPTIME', 'HISTORY', 'NOTE', 'ESO DET DIT', 'COMMENT', 'FLAG', 'BIGINT', 'TINY', 'HISTORY']);
    assert.is(r.header.get('NOTE'), long);
    assert.is(r.header.card('NOTE')!.raw!.length, 3, 'long string spans three cards');
    assert.is(r.header.get('ESO DET DIT'), 1.5);
    assert.ok(r.header.card('ESO DET DIT')!.hierarch);
    assert.is(r.header.get('EXPTIME'), 120);
    assert.ok(r.header.card('EXPTIME')!.real, 'EXPTIME stays a real');
    assert.is(r.header.card('EXPTIME')!.comment, '[s]');
    assert.is(r.header.get('FLAG'), false);
    assert.is(r.header.get('BIGINT'), 12345678901234567890n);
    assert.is(r.header.get('TINY'), 1.25e-30);
    assert.equal(r.header.commentary('HISTORY'), ['first history line', 'second history line']);

    // A second write of the read header reproduces the header bytes exactly (raw cards kept).
    const file2 = join(dir, 'h2.fits');
    await writeFits(file2, { width: 2, height: 2, data: new Float32Array(4) }, { header: r.header });
    const [a, b] = [await readFile(file), await readFile(file2)];
    assert.is(Buffer.compare(a, b), 0);
  });
});

test('carried-over header: structural and checksum cards are replaced, others kept', async () => {
  await withTempDir('carry', async (dir) => {
    const src = join(dir, 'src.fits');
    const h = new FitsHeader();
    h.set('BAYERPAT', 'RGGB');
    h.set('CHECKSUM', 'abcdefgh');
    h.set('DATASUM', '123');
    await writeFits(src, { width: 4, height: 2, data: new Uint16Array(8) }, { header: h });
    const read = await FitsReader.open(src);
    await read.close();
    const out = join(dir, 'out.fits');
    await writeFits(out, { width: 4, height: 2, planes: 3, data: new Float32Array(24) }, { header: read.header });
    const r2 = await FitsReader.open(out);
    await r2.close();
    assert.is(r2.header.get('BITPIX'), -32);
    assert.is(r2.header.get('NAXIS'), 3);
    assert.not.ok(r2.header.has('BZERO'), 'no BZERO for float data');
    assert.not.ok(r2.header.has('CHECKSUM'));
    assert.not.ok(r2.header.has('DATASUM'));
    assert.is(r2.header.get('BAYERPAT'), 'RGGB');
  });
});

test('row-range reads equal the matching rows of a full read, for every plane selection', async () => {
  await withTempDir('rows', async (dir) => {
    const width = 37;
    const height = 29;
    const planes = 3;
    const rnd = seededRandom(7);
    const data = Int16Array.from({ length: width * height * planes }, () => Math.floor(rnd() * 65536) - 32768);
    const file = join(dir, 'rows.fits');
    await writeFits(file, { width, height, planes, data });
    const full = await readFitsImage(file, 'float64');
    const reader = await FitsReader.open(file);
    try {
      for (const [y0, rows] of [[0, 1], [0, height], [5, 9], [height - 1, 1], [13, 0]] as const) {
        for (const sel of [undefined, [2], [1, 0]]) {
          const band = await reader.readRows(y0, rows, { dtype: 'float64', ...(sel ? { planes: sel } : {}) });
          const planeList = sel ?? [0, 1, 2];
          assert.equal(band.planes, planeList);
          planeList.forEach((p, i) => {
            const expected = full.data.subarray((p * height + y0) * width, (p * height + y0 + rows) * width);
            const got = band.data.subarray(i * rows * width, (i + 1) * rows * width);
            assert.equal(Array.from(got), Array.from(expected), `plane ${p} rows ${y0}+${rows}`);
          });
        }
      }
    } finally {
      await reader.close();
    }
  });
});

test.run();
