// The viewer's tile pyramid (src/viewer/pyramid.ts, tiles.ts, cache.ts): tiles hold the FITS
// values (as half floats) in display order for both row orders, each level is the NaN-aware 2×2
// mean of the one above, the statistics are exact where they must be (min, max) and the sample's
// where they may be (median, MAD), the tile scale keeps large integers in range, the cache is
// reused only for the same source, and a planted link refuses the cache folder.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { mkdir, readdir, stat, symlink, utimes, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FitsHeader, readFitsImage, writeFits } from '../../src/fits/index.js';
import { fromHalf, toHalf } from '../../src/shared/half-float.js';
import { CacheRefused, cacheKey, ensureCacheDir } from '../../src/viewer/cache.js';
import { buildPyramid, cachedMeta, halve, idealScale, levelName, scaleUnfit } from '../../src/viewer/pyramid.js';
import { decodeTile, readLevelPlanes, readTileBytes } from '../../src/viewer/tiles.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

const W = 601;
const H = 300;

/** A 3-plane image where every value says where it is: p·1e6 + y·1000 + x (plus NaNs). */
function planarImage(): Float32Array {
  const d = new Float32Array(3 * W * H);
  for (let p = 0; p < 3; p++) for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) d[(p * H + y) * W + x] = p * 1000 + y + x / 1000;
  d[(0 * H + 5) * W + 7] = NaN;
  d[(1 * H + 6) * W + 8] = NaN;
  return d;
}

async function build(dir: string, file: string) {
  const s = await stat(file);
  const cache = join(dir, 'cache');
  await mkdir(cache, { recursive: true });
  const meta = await buildPyramid({ source: file, dir: cache, rel: 'x.fits', size: s.size, mtimeMs: s.mtimeMs });
  return { meta, cache };
}

for (const order of [null, 'BOTTOM-UP', 'TOP-DOWN'] as const) {
  test(`level 0 holds the FITS values in display order (ROWORDER ${order ?? 'absent'}), NaN kept, padding NaN`, async () => {
    await withTempDir('pyr-order', async (dir) => {
      const data = planarImage();
      const header = new FitsHeader();
      if (order) header.set('ROWORDER', order);
      const file = join(dir, 'x.fits');
      await writeFits(file, { width: W, height: H, planes: 3, data }, { header });
      const { meta, cache } = await build(dir, file);
      const flipped = order !== 'TOP-DOWN';
      assert.is(meta.flipped, flipped);
      assert.is(meta.row_order, order);
      assert.is(meta.channels, 3);
      assert.is(meta.scale, 1);
      assert.equal(meta.levels.map((g) => [g.width, g.height]), [[601, 300], [301, 150], [151, 75]]);
      // Tile (2, 1) covers display columns 512..600 and rows 256..299 (the rest is padding).
      const tile = decodeTile(await readTileBytes(cache, meta, 0, 2, 1), meta);
      const T = 256;
      for (const [dx, dy] of [[0, 0], [88, 43], [10, 20]] as const) {
        const x = 512 + dx;
        const yDisplay = 256 + dy;
        const yFits = flipped ? H - 1 - yDisplay : yDisplay;
        for (let c = 0; c < 3; c++) assert.is(tile[(c * T + dy) * T + dx], fromHalf(toHalf(data[(c * H + yFits) * W + x]!)), `c${c} x${x} y${yDisplay}`);
      }
      assert.ok(Number.isNaN(tile[(0 * T + 0) * T + 89]!), 'padding right of the image');
      assert.ok(Number.isNaN(tile[(0 * T + 44) * T + 0]!), 'padding below the image');
      // The NaN pixel lands where the row order puts it.
      const t0 = decodeTile(await readTileBytes(cache, meta, 0, 0, flipped ? 1 : 0), meta);
      const yd = flipped ? H - 1 - 5 - 256 : 5;
      assert.ok(Number.isNaN(t0[(0 * T + yd) * T + 7]!));
    });
  });
}

test('each level is the NaN-aware 2×2 mean of the level above; odd edges average what they have', async () => {
  await withTempDir('pyr-levels', async (dir) => {
    const data = planarImage();
    const file = join(dir, 'x.fits');
    const header = new FitsHeader();
    header.set('ROWORDER', 'TOP-DOWN');
    await writeFits(file, { width: W, height: H, planes: 3, data }, { header });
    const { meta, cache } = await build(dir, file);
    const l0 = await readLevelPlanes(cache, meta, 0);
    const l1 = await readLevelPlanes(cache, meta, 1);
    const g1 = meta.levels[1]!;
    for (const [x, y] of [[0, 0], [3, 2], [4, 3], [300, 149], [150, 75]] as const) {
      for (let c = 0; c < 3; c++) {
        const vals = [
          [2 * x, 2 * y],
          [2 * x + 1, 2 * y],
          [2 * x, 2 * y + 1],
          [2 * x + 1, 2 * y + 1],
        ]
          .filter(([xx, yy]) => xx! < W && yy! < H)
          .map(([xx, yy]) => l0[c]![yy! * W + xx!]!)
          .filter((v) => !Number.isNaN(v));
        const want = vals.reduce((a, v) => a + v, 0) / vals.length;
        const got = l1[c]![y * g1.width + x]!;
        // Means of half values stored as half again: within half precision of the value.
        assert.ok(Math.abs(got - want) <= Math.abs(want) * 2 ** -10, `c${c} (${x}, ${y}): ${got} vs ${want}`);
      }
    }
    // halve() itself: an all-NaN block stays NaN, a partial one averages its finite samples.
    const src = Float32Array.from([NaN, NaN, 5, NaN, NaN, NaN, 7, 9, 11]); // 3×3, one channel, stride 3 rows
    const out = halve(src, 3, 3, 1, 2, 3);
    assert.ok(Number.isNaN(out[0]!), 'all-NaN block');
    assert.equal(Array.from(out.slice(1)), [5, 8, 11]);
  });
});

test('statistics: exact min and max, median and MAD of the values, histogram of the core range', async () => {
  await withTempDir('pyr-stats', async (dir) => {
    const rnd = seededRandom(3);
    const w = 300;
    const h = 200;
    const data = new Float32Array(w * h).map(() => 500 + 20 * (rnd() + rnd() + rnd() - 1.5));
    data[12345] = 60000;
    data[7] = -3;
    const file = join(dir, 'mono.fits');
    await writeFits(file, { width: w, height: h, data });
    const { meta } = await build(dir, file);
    const s = meta.stats[0]!;
    assert.is(meta.channels, 1);
    assert.is(s.min, -3);
    assert.is(s.max, 60000);
    assert.is(s.count, w * h);
    const sorted = Float64Array.from(data).sort();
    const median = (sorted[w * h / 2 - 1]! + sorted[w * h / 2]!) / 2;
    assert.ok(Math.abs(s.median - median) < 1e-3, `${s.median} vs ${median}`);
    assert.ok(s.mad > 5 && s.mad < 15, String(s.mad));
    assert.is(s.histogram.lo, -3);
    assert.ok(s.histogram.hi < 1000, `core ends below the bright outlier: ${s.histogram.hi}`);
    assert.is(s.histogram.above, 1);
    assert.is(s.histogram.counts.reduce((a, c) => a + c, 0) + s.histogram.above, w * h);
  });
});

test('tile scale: integers up to 65535 keep full precision, huge floats are scaled into the half range', async () => {
  assert.is(idealScale(65535), 2);
  assert.is(idealScale(1), 2 ** -15);
  assert.ok(scaleUnfit(4e9, 1));
  assert.not.ok(scaleUnfit(65535, 1)); // the top clips to Inf (white), no rebuild for it
  assert.ok(scaleUnfit(1e-5, 1));
  await withTempDir('pyr-scale', async (dir) => {
    const u16 = new Uint16Array(64 * 64).map((_, i) => (i * 37) % 65536);
    u16[63 * 64 + 13] = 65535;
    const f1 = join(dir, 'u16.fits');
    await writeFits(f1, { width: 64, height: 64, data: u16 });
    const a = await build(join(dir, 'a'), f1);
    assert.is(a.meta.scale, 2);
    const ta = decodeTile(await readTileBytes(a.cache, a.meta, 0, 0, 0), a.meta);
    const back = (await readFitsImage(f1)).data;
    // Display row 0 is the last FITS row (no ROWORDER): value 65535 at the top is still finite.
    for (const x of [0, 13, 63]) {
      const v = back[63 * 64 + x]!;
      assert.ok(Math.abs(ta[x]! - v) <= v * 2 ** -11, `${ta[x]} vs ${v}`);
    }
    const big = new Float32Array(32 * 32).map((_, i) => i * 1e6);
    const f2 = join(dir, 'big.fits');
    await writeFits(f2, { width: 32, height: 32, data: big });
    const b = await build(join(dir, 'b'), f2);
    assert.is(b.meta.scale, idealScale(1023e6));
    const tb = decodeTile(await readTileBytes(b.cache, b.meta, 0, 0, 0), b.meta);
    assert.ok(Number.isFinite(tb[5]!) && Math.abs(tb[5]! - 31 * 32e6 - 5e6) < 1e6 * 2, String(tb[5]));
  });
});

test('cache: meta matches the source size and mtime; a changed or truncated cache is not used', async () => {
  await withTempDir('pyr-cache', async (dir) => {
    const file = join(dir, 'x.fits');
    await writeFits(file, { width: 40, height: 30, data: new Float32Array(1200).fill(1) });
    const { cache } = await build(dir, file);
    const s = await stat(file);
    assert.ok(await cachedMeta(cache, { size: s.size, mtimeMs: s.mtimeMs }));
    assert.is(await cachedMeta(cache, { size: s.size, mtimeMs: s.mtimeMs + 1000 }), null);
    assert.is(await cachedMeta(cache, { size: s.size + 2880, mtimeMs: s.mtimeMs }), null);
    await writeFile(join(cache, levelName(0)), 'short');
    assert.is(await cachedMeta(cache, { size: s.size, mtimeMs: s.mtimeMs }), null);
    // Nothing is left under a temporary name.
    assert.equal((await readdir(cache)).filter((n) => n.endsWith('.tmp')), []);
    await utimes(file, new Date(), new Date());
  });
});

test('cache folder: created under .cache/viewer/<key>; a planted link anywhere on the way is refused', async () => {
  await withTempDir('pyr-dir', async (dir) => {
    const run = join(dir, 'run');
    const outside = join(dir, 'outside');
    await mkdir(run);
    await mkdir(outside);
    const d = await ensureCacheDir(run, 'outputs/a.fits');
    assert.is(d, join(run, '.cache', 'viewer', cacheKey('outputs/a.fits')));
    assert.ok(existsSync(d));
    const run2 = join(dir, 'run2');
    await mkdir(run2);
    await symlink(outside, join(run2, '.cache'));
    try {
      await ensureCacheDir(run2, 'outputs/a.fits');
      assert.unreachable('a linked .cache must be refused');
    } catch (e) {
      assert.instance(e, CacheRefused);
    }
    assert.equal(await readdir(outside), []);
    const run3 = join(dir, 'run3');
    await mkdir(join(run3, '.cache'), { recursive: true });
    await symlink(outside, join(run3, '.cache', 'viewer'));
    try {
      await ensureCacheDir(run3, 'outputs/a.fits');
      assert.unreachable('a linked viewer folder must be refused');
    } catch (e) {
      assert.instance(e, CacheRefused);
    }
    assert.equal(await readdir(outside), []);
  });
});

test.run();
