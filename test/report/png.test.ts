import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { inflateSync } from 'node:zlib';
import { crc32, encodePng, filterScanlines } from '../../src/report/png.js';
import { autoStf, downscaleFits, renderPreview } from '../../src/report/preview.js';
import { mtf } from '../../src/cpu/stretch.js';
import { writeFits } from '../../src/fits/index.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

interface Chunk {
  type: string;
  body: Buffer;
  crc: number;
  crcOk: boolean;
}

function chunks(png: Buffer): Chunk[] {
  const out: Chunk[] = [];
  let o = 8;
  while (o < png.length) {
    const len = png.readUInt32BE(o);
    const type = png.toString('latin1', o + 4, o + 8);
    const body = png.subarray(o + 8, o + 8 + len);
    const crc = png.readUInt32BE(o + 8 + len);
    out.push({ type, body, crc, crcOk: crc === crc32(png.subarray(o + 4, o + 8 + len)) });
    o += 12 + len;
  }
  return out;
}

/** Undo the filters (any of the five) back to raw samples, as a PNG decoder does. */
function unfilter(f: Uint8Array, width: number, height: number, ch: number): Uint8Array {
  const stride = width * ch;
  const out = new Uint8Array(stride * height);
  for (let y = 0; y < height; y++) {
    const t = f[y * (stride + 1)]!;
    for (let i = 0; i < stride; i++) {
      const raw = f[y * (stride + 1) + 1 + i]!;
      const a = i >= ch ? out[y * stride + i - ch]! : 0;
      const b = y > 0 ? out[(y - 1) * stride + i]! : 0;
      const c = i >= ch && y > 0 ? out[(y - 1) * stride + i - ch]! : 0;
      const p = a + b - c;
      const pred = t === 0 ? 0 : t === 1 ? a : t === 2 ? b : t === 3 ? (a + b) >> 1 : Math.abs(p - a) <= Math.abs(p - b) && Math.abs(p - a) <= Math.abs(p - c) ? a : Math.abs(p - b) <= Math.abs(p - c) ? b : c;
      out[y * stride + i] = (raw + pred) & 0xff;
    }
  }
  return out;
}

test('crc32: the standard check value', () => {
  assert.is(crc32(new TextEncoder().encode('123456789')), 0xcbf43926);
  assert.is(crc32(new Uint8Array(0)), 0);
});

test('png RGB: signature, IHDR fields, chunk CRCs, IDAT inflates to the exact filtered scanlines and back to the pixels', () => {
  const rnd = seededRandom(7);
  const width = 37;
  const height = 11;
  const data = new Uint8Array(width * height * 3).map(() => Math.floor(rnd() * 256));
  const png = encodePng({ width, height, channels: 3, data });
  assert.equal([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const cs = chunks(png);
  assert.equal(cs.map((c) => c.type), ['IHDR', 'IDAT', 'IEND']);
  assert.ok(cs.every((c) => c.crcOk), 'every chunk CRC matches');
  const ihdr = cs[0]!.body;
  assert.is(ihdr.length, 13);
  assert.is(ihdr.readUInt32BE(0), width);
  assert.is(ihdr.readUInt32BE(4), height);
  assert.equal([...ihdr.subarray(8)], [8, 2, 0, 0, 0]);
  const inflated = inflateSync(cs[1]!.body);
  assert.equal(new Uint8Array(inflated), filterScanlines({ width, height, channels: 3, data }));
  assert.is(inflated.length, (width * 3 + 1) * height);
  assert.equal(unfilter(inflated, width, height, 3), data);
  assert.is(cs[2]!.body.length, 0);
});

test('png grey: colour type 0, round trip', () => {
  const data = Uint8Array.from({ length: 5 * 4 }, (_, i) => (i * 13) & 0xff);
  const png = encodePng({ width: 5, height: 4, channels: 1, data });
  const cs = chunks(png);
  assert.is(cs[0]!.body[9], 0);
  assert.equal(unfilter(inflateSync(cs[1]!.body), 5, 4, 1), data);
  assert.throws(() => encodePng({ width: 5, height: 4, channels: 3, data }), /need 60 bytes/);
});

test('auto STF: median lands at 0.25, shadows clip at median − 2.8σ', () => {
  const rnd = seededRandom(3);
  const v = new Float32Array(20000).map(() => 1000 + (rnd() + rnd() + rnd() - 1.5) * 20);
  v[0] = 60000; // a star: the highlights clip
  v[1] = NaN;
  const p = autoStf(v)!;
  const sorted = Float32Array.from(v.filter(Number.isFinite)).sort();
  const med = sorted[sorted.length >> 1]!;
  assert.ok(p.c0 < med && p.c0 > med - 100);
  assert.is(p.c1, 60000);
  assert.ok(Math.abs(mtf(p.m, (med - p.c0) / (p.c1 - p.c0)) - 0.25) < 1e-3);
  assert.is(autoStf(new Float32Array([NaN, NaN])), null);
});

test('downscale: box average over whole source pixels, NaN-aware, streamed bands match a direct average', async () => {
  await withTempDir('skystack-preview-', async (dir) => {
    const w = 1700;
    const hgt = 1250; // k = ceil(1700 / 800) = 3 → 566 × 416, last 2 columns / 2 rows dropped
    const data = new Float32Array(w * hgt * 3);
    for (let c = 0; c < 3; c++) for (let y = 0; y < hgt; y++) for (let x = 0; x < w; x++) data[(c * hgt + y) * w + x] = c * 1000 + x + y * 0.5;
    data[(0 * hgt + 0) * w + 0] = NaN; // box (0,0) of plane 0 averages 8 pixels
    for (let y = 3; y < 6; y++) for (let x = 3; x < 6; x++) data[y * w + x] = NaN; // box (1,1) plane 0 all NaN
    const file = join(dir, 'img.fits');
    await writeFits(file, { width: w, height: hgt, planes: 3, data });
    const ds = await downscaleFits(file, 800, [0, 1, 2]);
    assert.equal([ds.width, ds.height, ds.k], [566, 416, 3]);
    const direct = (c: number, ox: number, oy: number) => {
      let s = 0;
      let n = 0;
      for (let y = oy * 3; y < oy * 3 + 3; y++) for (let x = ox * 3; x < ox * 3 + 3; x++) {
        const v = data[(c * hgt + y) * w + x]!;
        if (Number.isFinite(v)) (s += v), n++;
      }
      return n ? s / n : NaN;
    };
    for (const [c, ox, oy] of [[0, 0, 0], [1, 10, 20], [2, 565, 415], [0, 300, 200]] as const) {
      assert.ok(Math.abs(ds.data[c]![oy * ds.width + ox]! - direct(c, ox, oy)) < 1e-3, `box ${c},${ox},${oy}`);
    }
    assert.ok(Number.isNaN(ds.data[0]![1 * ds.width + 1]!), 'an all-NaN box stays NaN');
    const p = await renderPreview(file);
    assert.equal([p.width, p.height, p.factor, p.stretch, p.mtf.length], [566, 416, 3, 'auto', 3]);
    const ihdr = chunks(p.png)[0]!.body;
    assert.equal([ihdr.readUInt32BE(0), ihdr.readUInt32BE(4), ihdr[9]], [566, 416, 2]);
    assert.ok(p.png.length < 1_500_000);
  });
});

test.run();
