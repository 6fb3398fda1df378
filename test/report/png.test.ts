import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { decode } from 'fast-png';
import { encodePng } from '../../src/report/png.js';
import { autoStf, downscaleFits, renderPreview } from '../../src/report/preview.js';
import { mtf } from '../../src/cpu/stretch.js';
import { FitsHeader, writeFits } from '../../src/fits/index.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

/** Chunk types in order (the structure a browser reads). */
function chunkTypes(png: Buffer): string[] {
  const out: string[] = [];
  for (let o = 8; o < png.length; o += 12 + png.readUInt32BE(o)) out.push(png.toString('latin1', o + 4, o + 8));
  return out;
}

test('png RGB: signature, 8-bit truecolour, decodes (fast-png, an independent decoder) to the exact samples; same bytes every time', async () => {
  const rnd = seededRandom(7);
  const width = 37;
  const height = 11;
  const data = new Uint8Array(width * height * 3).map(() => Math.floor(rnd() * 256));
  const png = await encodePng({ width, height, channels: 3, data });
  assert.equal([...png.subarray(0, 8)], [0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  const types = chunkTypes(png);
  assert.is(types[0], 'IHDR');
  assert.is(types[types.length - 1], 'IEND');
  assert.ok(types.includes('IDAT'));
  assert.not.ok(types.some((t) => ['gAMA', 'iCCP', 'sRGB', 'tEXt'].includes(t)), `no colour or text chunks: ${types.join(' ')}`);
  const d = decode(png);
  assert.equal([d.width, d.height, d.depth, d.channels], [width, height, 8, 3]);
  assert.equal(new Uint8Array(d.data), data);
  assert.equal(await encodePng({ width, height, channels: 3, data }), png);
});

test('png grey: colour type 0, round trip; wrong sizes refused', async () => {
  const data = Uint8Array.from({ length: 5 * 4 }, (_, i) => (i * 13) & 0xff);
  const png = await encodePng({ width: 5, height: 4, channels: 1, data });
  assert.is(png[25], 0); // IHDR colour type
  const d = decode(png);
  assert.equal([d.channels, d.depth], [1, 8]);
  assert.equal(new Uint8Array(d.data), data);
  try {
    await encodePng({ width: 5, height: 4, channels: 3, data });
    assert.unreachable('short data');
  } catch (e) {
    assert.match((e as Error).message, /need 60 bytes/);
  }
  try {
    await encodePng({ width: 0, height: 4, channels: 1, data });
    assert.unreachable('no width');
  } catch (e) {
    assert.match((e as Error).message, /bad size/);
  }
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
    const d = decode(p.png);
    assert.equal([d.width, d.height, d.channels], [566, 416, 3]);
    assert.ok(p.png.length < 1_500_000);
  });
});

test('preview orientation as the viewer and export show it: bottom-up FITS rows flipped, ROWORDER TOP-DOWN kept', async () => {
  await withTempDir('skystack-preview-', async (dir) => {
    const w = 64;
    const hgt = 48;
    // File rows 0..7 bright, the rest a dim ramp: the bright band is the picture's bottom when the
    // rows count bottom-up (FITS' default), its top when the header says TOP-DOWN.
    const data = new Float32Array(w * hgt);
    for (let y = 0; y < hgt; y++) for (let x = 0; x < w; x++) data[y * w + x] = y < 8 ? 1 : 0.1 + x / 1000;
    for (const order of [null, 'BOTTOM-UP', 'TOP-DOWN'] as const) {
      const file = join(dir, `o-${order ?? 'none'}.fits`);
      const header = new FitsHeader();
      if (order) header.set('ROWORDER', order);
      await writeFits(file, { width: w, height: hgt, planes: 1, data }, { header });
      const p = await renderPreview(file, { stretch: 'none' });
      const d = decode(p.png);
      const px = (x: number, y: number) => d.data[y * d.width + x]!;
      const topDown = order === 'TOP-DOWN';
      assert.is(p.flipped, !topDown, String(order));
      assert.is(px(10, topDown ? 0 : hgt - 1), 255, `${order}: the bright file rows where the viewer shows them`);
      assert.is.not(px(10, topDown ? hgt - 1 : 0), 255, `${order}: the other end is dim`);
    }
  });
});

test.run();
