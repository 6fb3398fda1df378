// Unit tests of STACKING's helpers: normalisation formulas, the band plan's memory model (1000
// frames need no more than 20 apart from thinner bands), the reader LRU, cosmetic correction on
// planes and on Bayer mosaics (hot/cold pixels replaced, stars untouched), the pre-mask.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import { isFitsError, writeFits } from '../../src/fits/index.js';
import { cosmeticCorrect, estimateNoise } from '../../src/pipeline/stages/stacking/cosmetic.js';
import { normalizationFor } from '../../src/pipeline/stages/stacking/normalization.js';
import { compactOwned, premaskApply, premaskFlag, premaskScreen, GROW } from '../../src/cpu/premask.js';
import { ReaderCache } from '../../src/pipeline/stages/stacking/readers.js';
import { planStackBands, rangesBindingBytes, STACK_WORKING_SET_BYTES, STACK_WORKING_SET_MIN_ROWS, stackWorkingSet, toCells, type StackFrame } from '../../src/pipeline/stages/stacking/plan.js';
import { splitSrc } from '../../src/gpu/kernels/src-ranges.js';
import { lnTableBound, lnTableBytes } from '../../src/gpu/kernels/warp.js';
import { lnColumnTable } from '../../src/cpu/ln-apply.js';
import { stackRows, superpixelRows } from '../../src/pipeline/stages/stacking/row-kernels.js';
import { PREMASK_CHUNK_BYTES, PREMASK_WINDOW_HALO, PREMASK_WINDOWS_ABOVE_BYTES, premaskChunking } from '../../src/pipeline/stages/stacking/slots.js';
import { stack } from '../../src/cpu/stack.js';
import { phaseChannels } from '../../src/pipeline/stages/frames/channel-stats.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

test('normalisation: the four modes apply their own formula relative to the reference', () => {
  const ref = { location: 1000, spread: 20, median: 1000 };
  const f = { location: 1100, spread: 25, median: 1100 };
  assert.equal(normalizationFor('none', f, ref), { scale: 1, offset: 0 });
  assert.equal(normalizationFor('background', f, ref), { scale: 1, offset: -100 });
  const m = normalizationFor('median', f, ref);
  assert.ok(Math.abs(m.scale - 1000 / 1100) < 1e-12 && m.offset === 0);
  const a = normalizationFor('addscale', f, ref);
  assert.ok(Math.abs(a.scale - 0.8) < 1e-12);
  assert.ok(Math.abs(1100 * a.scale + a.offset - 1000) < 1e-9, 'location maps onto the reference location');
  // Degenerate statistics fall back instead of producing NaN or infinite scales.
  const bad = normalizationFor('addscale', { location: 1100, spread: 0, median: 1100 }, ref);
  assert.is(bad.scale, 1);
  assert.ok(bad.fallback);
  assert.is(normalizationFor('median', { location: 0, spread: 1, median: 0 }, ref).scale, 1);
});

function frames(n: number, rotationDeg = 0.3): StackFrame[] {
  const t = (rotationDeg * Math.PI) / 180;
  return Array.from({ length: n }, (_, i) => ({
    slot: i,
    source: '',
    toFrame: [Math.cos(t), -Math.sin(t), 5, Math.sin(t), Math.cos(t), -3],
    pattern: null,
    stats: [],
    scale: [1, 1, 1],
    offset: [0, 0, 0],
    weight: 1,
    noise: null,
    exposure: 120,
    dateObs: null,
  }));
}

test('band plan: fits the budget; 1000 frames need no more memory than 20 apart from thinner bands', () => {
  const budget = 2048 * 1024 * 1024;
  const plan = (n: number) =>
    planStackBands({ width: 2048, height: 1536, frameWidth: 2048, frameHeight: 1536, binning: 1, frames: frames(n), channels: 3, kernel: 'lanczos3', prefetch: 2, readHalo: 1, haloRows: GROW, extraBytesPerFramePixel: 5, budgetBytes: budget, maxBindingBytes: null });
  const p20 = plan(20);
  const p1000 = plan(1000);
  for (const p of [p20, p1000]) assert.ok(p.bytesPerBand + p.scratchBytes <= budget, `${p.bytesPerBand} + ${p.scratchBytes}`);
  assert.is(p20.bands.length, 1);
  assert.ok(p1000.bands.length > 10);
  assert.ok(p1000.rowsPerBand < p20.rowsPerBand);
  // The reserve besides the bands does not grow with the frame count (the tallies' 8 bytes per frame and channel aside).
  assert.ok(p1000.scratchBytes - p20.scratchBytes <= 980 * 3 * 8, `${p20.scratchBytes} vs ${p1000.scratchBytes}`);
  // Halo rows: every band reads its owned rows plus GROW each side (inside the image).
  for (const b of p1000.bands) {
    assert.is(b.readY0, Math.max(0, b.y0 - GROW));
    assert.is(b.readY0 + b.readRows, Math.min(1536, b.y0 + b.rows + GROW));
  }
  // Too small a budget is refused with the planner's message.
  assert.throws(
    () => planStackBands({ width: 2048, height: 1536, frameWidth: 2048, frameHeight: 1536, binning: 1, frames: frames(1000), channels: 3, kernel: 'lanczos3', prefetch: 2, readHalo: 1, haloRows: GROW, extraBytesPerFramePixel: 5, budgetBytes: 64 * 1024 * 1024, maxBindingBytes: null }),
    (e: Error) => /memory budget 64\.0 MiB .*raise runtime_limits\.memory_budget to at least \d+ MiB/.test(e.message),
  );
  // A device binding limit caps the band height.
  const bound = planStackBands({ width: 2048, height: 1536, frameWidth: 2048, frameHeight: 1536, binning: 1, frames: frames(30), channels: 3, kernel: 'lanczos3', prefetch: 2, readHalo: 1, haloRows: 0, extraBytesPerFramePixel: 0, budgetBytes: budget, maxBindingBytes: 128 * 1024 * 1024 });
  assert.is(bound.limitedBy, 'binding');
  assert.ok(30 * (bound.rowsPerBand + 0) * 2048 * 4 <= 128 * 1024 * 1024);
});

test('band plan: with the working-set target (device stacks), 1000 frames hold about what 30 do; 1000 × 1024 px stays on a 128 MiB binding', () => {
  const MiB = 1024 * 1024;
  const plan = (n: number, width: number, height: number, binding: number | null) =>
    planStackBands({ width, height, frameWidth: width, frameHeight: height, binning: 1, frames: frames(n), channels: 1, kernel: 'lanczos3', prefetch: 2, readHalo: 3, haloRows: GROW, extraBytesPerFramePixel: binding === null ? 1 : 5, extraBytesPerPixel: Math.ceil(n / 4), budgetBytes: 1024 * MiB, workingSetBytes: STACK_WORKING_SET_BYTES, maxBindingBytes: binding });
  // Frames' band slices as planned (slots and pre-mask bytes per frame pixel).
  const slices = (p: ReturnType<typeof plan>, n: number, width: number, x: number) => p.maxWorkRows * n * width * (4 + x);
  for (const binding of [null, 128 * MiB]) {
    const x = binding === null ? 1 : 5;
    const p30 = plan(30, 1024, 768, binding);
    const p1000 = plan(1000, 1024, 768, binding);
    // At most the target, or the working set's minimum band where that is more.
    const floor = (STACK_WORKING_SET_MIN_ROWS + 2 * GROW) * 1000 * 1024 * (4 + x);
    assert.ok(slices(p1000, 1000, 1024, x) <= Math.max(STACK_WORKING_SET_BYTES, floor), `${binding}: ${slices(p1000, 1000, 1024, x)}`);
    assert.ok(slices(p30, 30, 1024, x) <= STACK_WORKING_SET_BYTES);
    assert.ok(p1000.bytesPerBand + p1000.scratchBytes < 512 * MiB, `${p1000.bytesPerBand}`);
  }
  // On the device: 1000 frames × 1024 px × 4 B of slots would allow 28 rows under 128 MiB (the
  // pre-mask's 5 B are not in that binding); the working set's floor, 16 rows, is what sizes them.
  const dev = plan(1000, 1024, 768, 128 * MiB);
  assert.equal([dev.rowsPerBand, dev.limitedBy], [STACK_WORKING_SET_MIN_ROWS, 'working-set']);
  assert.ok(1000 * dev.maxWorkRows * 1024 * 4 <= 128 * MiB);
  // 2048 px: 12 rows would fit, under STACK_BINDING_MIN_ROWS: refused (the caller stacks on the host).
  assert.throws(() => plan(1000, 2048, 1536, 128 * MiB), (e: Error) => /storage-binding limit/.test(e.message));
});

test('band plan: the working set grows with the width beyond 2048 px only (16 OSC frames of 6248 px: 18 bands, not 57)', () => {
  const MiB = 1024 * 1024;
  assert.is(stackWorkingSet(1024), STACK_WORKING_SET_BYTES);
  assert.is(stackWorkingSet(2048), STACK_WORKING_SET_BYTES);
  assert.is(stackWorkingSet(4096), 2 * STACK_WORKING_SET_BYTES);
  // osc-large on llvmpipe's 128 MiB binding, host pre-mask (5 B) beside the device stack.
  const osc = (target: number) =>
    planStackBands({ width: 6248, height: 4176, frameWidth: 6248, frameHeight: 4176, binning: 1, frames: frames(16), channels: 3, kernel: 'lanczos3', prefetch: 2, readHalo: 3, haloRows: GROW, extraBytesPerFramePixel: 5, extraBytesPerPixel: 4, budgetBytes: 1024 * MiB, workingSetBytes: target, maxBindingBytes: 128 * MiB });
  const before = osc(STACK_WORKING_SET_BYTES);
  const after = osc(stackWorkingSet(6248));
  assert.is(before.bands.length, 57);
  assert.is(after.bands.length, 18);
  assert.ok(after.maxWorkRows * 16 * 6248 * 17 <= stackWorkingSet(6248));
});

test('band plan: slots bound as frame ranges (stack kernels, src-ranges.ts) put 1000 × 2048 px on the device, every window within the binding', () => {
  const MiB = 1024 * 1024;
  const binding = 128 * MiB;
  const ranges = 8; // llvmpipe: 16 storage bindings per stage, reject_noise takes 6 besides its windows
  const plan = (n: number, width: number, height: number) =>
    planStackBands({ width, height, frameWidth: width, frameHeight: height, binning: 1, frames: frames(n), channels: 1, kernel: 'lanczos3', prefetch: 2, readHalo: 3, haloRows: GROW, extraBytesPerFramePixel: 5, extraBytesPerPixel: Math.ceil(n / 4), budgetBytes: 1024 * MiB, workingSetBytes: STACK_WORKING_SET_BYTES, maxBindingBytes: binding, bindingRanges: ranges, maxBufferBytes: 2048 * MiB, bindingAlign: 256 });
  for (const [n, width, height] of [[1000, 2048, 1536], [1000, 1024, 768], [30, 2048, 1536]] as const) {
    const p = plan(n, width, height);
    // The working set (down to its 16-row floor), not the binding, sizes these bands now.
    assert.ok(p.rowsPerBand >= STACK_WORKING_SET_MIN_ROWS, `${n} x ${width}: ${p.rowsPerBand} rows`);
    if (n === 1000 && width === 2048) assert.is(p.rowsPerBand, STACK_WORKING_SET_MIN_ROWS);
    const slot = p.maxWorkRows * width * 4;
    const split = splitSrc({ buffer: {} as GPUBuffer, offset: 0, size: n * slot }, n, slot / 4, binding, 256, ranges);
    assert.ok(split.count <= ranges);
    for (const w of split.windows) assert.ok(w.size <= binding, `window of ${w.size} B`);
    // The windows cover the band without gaps: from 0 to its end, each starting where (or, by the alignment, just before) the last ended.
    if (split.count > 1) {
      assert.is(split.windows[0]!.offset, 0);
      const last = split.windows[split.count - 1]!;
      assert.is(last.offset + last.size, n * slot);
      for (let k = 1; k < split.count; k++) {
        const end = split.windows[k - 1]!.offset + split.windows[k - 1]!.size;
        assert.ok(split.windows[k]!.offset <= end && end - split.windows[k]!.offset < 256, `window ${k}`);
      }
    }
  }
  // One binding of 1000 × 2048 px leaves 12 rows: refused as before (the caller stacks on the host).
  assert.is(rangesBindingBytes(binding, 1000, 1), binding);
  assert.throws(() => planStackBands({ width: 2048, height: 1536, frameWidth: 2048, frameHeight: 1536, binning: 1, frames: frames(1000), channels: 1, kernel: 'lanczos3', prefetch: 2, readHalo: 3, haloRows: GROW, extraBytesPerFramePixel: 5, budgetBytes: 1024 * MiB, workingSetBytes: STACK_WORKING_SET_BYTES, maxBindingBytes: binding }), (e: Error) => /storage-binding limit/.test(e.message));
});

test('band plan: the device Lanczos warp\'s local-normalization table stays within the linear bound the plan reserves (lnTableBound), for any band rows and grid', () => {
  for (const g of [
    { width: 2048, height: 1536, nx: 16, ny: 12, x0: 63.5, y0: 63.5, dx: 128, dy: 128 },
    { width: 6248, height: 4176, nx: 16, ny: 11, x0: 194.75, y0: 189.3, dx: 390.5, dy: 379.6 },
    { width: 320, height: 240, nx: 16, ny: 12, x0: 9.5, y0: 9.5, dx: 20, dy: 20 },
    { width: 300, height: 64, nx: 40, ny: 9, x0: 3.25, y0: 3.1, dx: 7.5, dy: 7.1 },
    { width: 97, height: 120, nx: 5, ny: 1, x0: 9.5, y0: 59.5, dx: 19.4, dy: 120 },
  ]) {
    const bound = lnTableBound(g, g.width);
    for (const rows of [1, 7, 8, 16, 33, 100, 238, g.height]) {
      const need = lnTableBytes(g, rows, g.width);
      assert.ok(need <= bound.fixed + rows * g.width * bound.perPixel, `${g.width}×${g.height}, ${rows} rows: ${need} B over the bound`);
      // Every band of those rows really fits the size lnTableBytes gives.
      for (const y0 of [0, Math.floor((g.height - rows) / 2), g.height - rows]) assert.ok(lnColumnTable(g, new Float32Array(g.nx * g.ny * 2), y0, rows).table.length * 4 <= need);
    }
  }
});

test('host pre-mask chunks: row chunks up to 32 MiB (30 and 120 frames of 2048 px as before), column windows of ~8 MiB for 1000 frames; forced shapes', () => {
  const bytes = (frames: number, c: ReturnType<typeof premaskChunking>, workRows: number, width = 2048) =>
    4 * frames * (c.rows !== null ? (c.rows + 4) * width : workRows * Math.min(width, c.cols + 2 * PREMASK_WINDOW_HALO));
  // 30 frames, one 238-row band: 30 owned rows per chunk (8 MiB).
  assert.equal(premaskChunking(30, 2048, 242, 238), { rows: 30, cols: null });
  // 120 frames: the 8-row floor, 11.8 MB, still under the window threshold.
  const c120 = premaskChunking(120, 2048, 140, 136);
  assert.equal(c120, { rows: 8, cols: null });
  assert.ok(bytes(120, c120, 140) <= PREMASK_WINDOWS_ABOVE_BYTES);
  // 1000 frames of 16-row bands: windows of 96 owned columns, every work row, within 8 MiB.
  const c1000 = premaskChunking(1000, 2048, 20, 16);
  assert.equal(c1000, { rows: null, cols: 96 });
  assert.ok(bytes(1000, c1000, 20) <= PREMASK_CHUNK_BYTES, `${bytes(1000, c1000, 20)} B`);
  assert.ok(4 * 1000 * 12 * 2048 > PREMASK_WINDOWS_ABOVE_BYTES, 'the row chunk it replaces is over the threshold');
  // A band whose owned rows all fit one chunk stays rows whatever the frame count.
  assert.equal(premaskChunking(1000, 2048, 8, 4), { rows: 4, cols: null });
  // Forced shapes (tests of the stacking engine), clamped to the band.
  assert.equal(premaskChunking(30, 320, 50, 46, 5, null), { rows: 5, cols: null });
  assert.equal(premaskChunking(30, 320, 50, 46, null, 37), { rows: null, cols: 37 });
  assert.equal(premaskChunking(30, 320, 50, 46, null, 1000), { rows: null, cols: 320 });
  // So many frames that even the window floor is over the chunk bytes: 32 columns.
  assert.equal(premaskChunking(100000, 2048, 20, 16), { rows: null, cols: 32 });
});

test('reader cache: at most `capacity` files open, every read right, LRU reuse', async () => {
  await withTempDir('readers', async (dir) => {
    const files: string[] = [];
    for (let i = 0; i < 5; i++) {
      const file = join(dir, `f${i}.fits`);
      await writeFits(file, { width: 4, height: 3, data: new Float32Array(12).fill(i) });
      files.push(file);
    }
    const cache = new ReaderCache(2);
    for (let round = 0; round < 2; round++) {
      for (let i = 0; i < 5; i++) {
        const rows = await cache.use(files[i]!, (r) => r.readRows(1, 1));
        assert.equal(Array.from(rows.data), [i, i, i, i]);
      }
    }
    assert.is(cache.opens, 10, 'five files through two slots reopen each round');
    assert.is(cache.reopens, 5, 'the second round opens them from their remembered layouts');
    await cache.use(files[4]!, async () => undefined);
    assert.is(cache.opens, 10, 'the most recent file is still open');
    // A file rewritten meanwhile (another size) is opened in full and read as it is now.
    await writeFits(files[0]!, { width: 4, height: 4, data: new Float32Array(16).fill(7) });
    const rows = await cache.use(files[0]!, (r) => r.readRows(3, 1));
    assert.equal(Array.from(rows.data), [7, 7, 7, 7]);
    assert.is(cache.reopens, 6, 'counted as a re-open attempt');
    const header = await cache.use(files[0]!, async (r) => r.header.getNumber('NAXIS2'));
    assert.is(header, 4, 'a full open has its header');
    await cache.closeAll();
    let failed = false;
    await cache.use(join(dir, 'missing.fits'), async () => undefined).catch(() => (failed = true));
    assert.ok(failed, 'a missing file fails');
  });
});

test('reader cache: readRowsInto decodes rows into the caller buffer (float32 in place, integers through scratch)', async () => {
  await withTempDir('readers-into', async (dir) => {
    const W = 5;
    const H = 7;
    const values = Float32Array.from({ length: W * H }, (_, i) => (i % 3 === 0 ? NaN : i * 1.5 - 7));
    const f32 = join(dir, 'f32.fits');
    const u16 = join(dir, 'u16.fits');
    await writeFits(f32, { width: W, height: H, data: values });
    await writeFits(u16, { width: W, height: H, data: Uint16Array.from({ length: W * H }, (_, i) => 60000 + i) });
    const cache = new ReaderCache(1); // two files through one slot: reopens, closes both handles
    const target = new Float32Array(4 * W + 3).fill(-1);
    for (let round = 0; round < 2; round++) {
      const got = await cache.readRowsInto(f32, 2, 4, target);
      assert.is(got.buffer, target.buffer, 'float32 rows land in the caller buffer');
      assert.is(got.length, 4 * W);
      const want = await cache.use(f32, (r) => r.readRows(2, 4));
      assert.equal(Array.from(got).map(String), Array.from(want.data).map(String));
      const ints = await cache.readRowsInto(u16, 1, 2, target);
      assert.is(ints.buffer, target.buffer, 'integer data is decoded into the caller buffer too');
      assert.equal(Array.from(ints), Array.from({ length: 2 * W }, (_, i) => 60000 + W + i));
    }
    const small = await cache.readRowsInto(f32, 0, H, target);
    assert.is.not(small.buffer, target.buffer, 'rows beyond the target: a fresh array');
    assert.equal(Array.from(small).map(String), Array.from(values).map(String));
    let failed = false;
    await cache.readRowsInto(f32, 5, 4, target).catch(() => (failed = true));
    assert.ok(failed, 'rows outside the image fail');
    await cache.closeAll();
    // A file removed before its first read: a FitsError, and the failed open is not kept.
    const gone = new ReaderCache(4);
    await rm(f32);
    const err = await gone.readRowsInto(f32, 0, 2, target).catch((e: unknown) => e);
    assert.ok(isFitsError(err) && err.code === 'FITS_NOT_FOUND', `missing file: ${String(err)}`);
    await gone.closeAll();
  });
});

/** A plane with a gradient sky, Gaussian-ish stars (FWHM ~2.5 px), noise, hot and cold pixels. */
function scene(W: number, H: number, cfa: boolean) {
  const rnd = seededRandom(7);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const data = new Float32Array(W * H);
  const colour = (x: number, y: number) => (cfa ? [1, 0.8, 0.8, 0.5][((y & 1) << 1) | (x & 1)]! : 1);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) data[y * W + x] = (500 + 0.2 * x) * colour(x, y) + 10 * gauss();
  const stars: [number, number, number][] = [];
  for (let k = 0; k < 40; k++) {
    const sx = 8 + rnd() * (W - 16);
    const sy = 8 + rnd() * (H - 16);
    const peak = 200 + rnd() * 5000;
    stars.push([sx, sy, peak]);
    for (let y = Math.floor(sy) - 6; y <= Math.floor(sy) + 6; y++) {
      for (let x = Math.floor(sx) - 6; x <= Math.floor(sx) + 6; x++) {
        const r2 = (x - sx) ** 2 + (y - sy) ** 2;
        data[y * W + x]! += peak * colour(x, y) * Math.exp(-r2 / (2 * 1.06 ** 2));
      }
    }
  }
  const clean = data.slice();
  const defects: { x: number; y: number; hot: boolean }[] = [];
  for (let k = 0; k < 30; k++) {
    const x = 4 + Math.floor(rnd() * (W - 8));
    const y = 4 + Math.floor(rnd() * (H - 8));
    if (stars.some(([sx, sy]) => Math.hypot(sx - x, sy - y) < 8) || defects.some((d) => Math.abs(d.x - x) < 4 && Math.abs(d.y - y) < 4)) continue;
    const hot = k % 3 !== 0;
    data[y * W + x] = hot ? data[y * W + x]! + 300 + rnd() * 3000 : data[y * W + x]! - 200;
    defects.push({ x, y, hot });
  }
  return { data, clean, stars, defects };
}

for (const cfa of [false, true]) {
  test(`cosmetic correction (${cfa ? 'Bayer mosaic, same-colour neighbours' : 'plane'}): hot and cold pixels replaced, stars untouched`, () => {
    const W = 160;
    const H = 120;
    const { data, clean, stars, defects } = scene(W, H, cfa);
    const step = cfa ? 2 : 1;
    const noise = estimateNoise(data, W, H, 0, step);
    for (const s of noise) assert.ok(s > 7 && s < 13, `noise ${noise}`);
    const r = cosmeticCorrect(data, { width: W, height: H, readY0: 0, y0: 0, y1: H, step, sigma: 5, noise });
    for (const d of defects) {
      const i = d.y * W + d.x;
      assert.ok(Math.abs(r.data[i]! - clean[i]!) < 60, `${d.hot ? 'hot' : 'cold'} pixel at ${d.x},${d.y}: ${data[i]} -> ${r.data[i]} (clean ${clean[i]})`);
    }
    assert.is(r.hot, defects.filter((d) => d.hot).length);
    assert.is(r.cold, defects.filter((d) => !d.hot).length);
    for (const [sx, sy] of stars) {
      for (let y = Math.floor(sy) - 3; y <= Math.floor(sy) + 3; y++) {
        for (let x = Math.floor(sx) - 3; x <= Math.floor(sx) + 3; x++) {
          if (defects.some((d) => d.x === x && d.y === y)) continue;
          assert.is(r.data[y * W + x], data[y * W + x], `star pixel ${x},${y} changed`);
        }
      }
    }
    // The input is untouched, and a band gives the same pixels as the whole image.
    assert.not.equal(Array.from(r.data), Array.from(data));
    const y0 = 40;
    const band = data.subarray((y0 - 3) * W, (y0 + 20 + 3) * W);
    const rb = cosmeticCorrect(band, { width: W, height: H, readY0: y0 - 3, y0, y1: y0 + 20, step, sigma: 5, noise });
    assert.equal(Array.from(rb.data.subarray(3 * W, 23 * W)), Array.from(r.data.subarray(y0 * W, (y0 + 20) * W)));
  });
}

test('pre-mask: a trail in one frame is masked with its wings, noise and stars are kept, keep rule', () => {
  const W = 64;
  const R = 20;
  const N = 5;
  const rnd = seededRandom(3);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const band = new Float32Array(N * R * W);
  const median = new Float32Array(R * W).fill(100);
  for (let f = 0; f < N; f++) for (let i = 0; i < R * W; i++) band[f * R * W + i] = 100 + 5 * gauss();
  // A horizontal trail along row 10 of frame 2 (Gaussian cross-section, sigma 1.1 px).
  for (let y = 0; y < R; y++) for (let x = 0; x < W; x++) band[2 * R * W + y * W + x]! += 4000 * Math.exp(-((y - 10) ** 2) / (2 * 1.1 ** 2));
  // A star present in every frame (peaks differing by 20 %), at (40, 4).
  for (let f = 0; f < N; f++) band[f * R * W + 4 * W + 40]! += 2000 * (0.9 + 0.05 * f);
  median[4 * W + 40] = 100 + 2000;
  const mask = new Uint8Array(N * R * W);
  const rejected = new Uint32Array(2 * N);
  const counts = new BigUint64Array(2);
  const args = { band, median, mask, width: W, rows: R, frames: N, scale: [1, 1, 1, 1, 1], offset: [0, 0, 0, 0, 0], sigma: [5, 5, 5, 5, 5], kLow: 3, kHigh: 3, level: 100, minFraction: 0.4, ownedY0: 2, ownedRows: 16, rejected, counts };
  premaskFlag(args, 0, N);
  premaskApply(args, 0, R);
  // Trail rows 6..14 of frame 2 masked over the owned rows (core ±3 px seeds, grown by 2).
  for (let y = 7; y <= 13; y++) for (let x = 0; x < W; x++) assert.ok(Number.isNaN(band[2 * R * W + y * W + x]!), `trail pixel ${x},${y}`);
  assert.ok(rejected[N + 2]! >= 7 * W, `high tally of frame 2: ${rejected[N + 2]}`);
  // Rows outside the owned range are not touched (they belong to the neighbouring band).
  assert.not.ok(Number.isNaN(band[2 * R * W + 1 * W + 5]!));
  // The star survives in every frame; other frames keep (nearly) all samples.
  for (let f = 0; f < N; f++) assert.not.ok(Number.isNaN(band[f * R * W + 4 * W + 40]!), `star in frame ${f}`);
  for (const f of [0, 1, 3, 4]) assert.ok(rejected[f]! + rejected[N + f]! < 10, `frame ${f}: ${rejected[f]} + ${rejected[N + f]}`);
  assert.is(Number(counts[1]), Array.from(rejected).reduce((a, b) => a + b, 0));
  const compact = compactOwned(band, W, R, N, 2, 16);
  assert.is(compact.length, N * 16 * W);
  assert.ok(Number.isNaN(compact[2 * 16 * W + (10 - 2) * W]!));
});

/**
 * The pre-mask rule without the f64 screen or the sparse apply: every sample through the f32
 * chain, every owned pixel's keep rule. The shipped premaskFlag/premaskApply must match it exactly.
 */
function premaskPlain(a: Parameters<typeof premaskFlag>[0]): void {
  const f32 = Math.fround;
  const { width: W, rows: R, frames: N, band, median: M, mask } = a;
  const plane = W * R;
  for (let f = 0; f < N; f++) {
    const sig = a.sigma[f]!;
    if (!(sig > 0)) continue;
    const sc = f32(a.scale[f]!);
    const of = f32(a.offset[f]!);
    const hi = f32(a.kHigh * sig);
    const lo = f32(a.kLow * sig);
    const strong: number[] = [];
    for (let i = 0; i < plane; i++) {
      const t = f32(f32(0.5) * f32(Math.abs(f32(M[i]! - f32(a.level)))));
      const d = f32(f32(band[f * plane + i]! * sc + of) - M[i]!);
      const th = f32(hi + t);
      const tl = f32(lo + t);
      if (d > th) (mask[f * plane + i] = d > 2 * th ? 5 : 1), d > 2 * th && strong.push(i);
      else if (-d > tl) (mask[f * plane + i] = -d > 2 * tl ? 6 : 2), -d > 2 * tl && strong.push(i);
    }
    for (const i of strong) {
      const y = Math.floor(i / W);
      const x = i % W;
      const tag = mask[f * plane + i] === 5 ? 3 : 4;
      for (let yy = Math.max(0, y - GROW); yy <= Math.min(R - 1, y + GROW); yy++)
        for (let xx = Math.max(0, x - GROW); xx <= Math.min(W - 1, x + GROW); xx++) if (mask[f * plane + yy * W + xx] === 0) mask[f * plane + yy * W + xx] = tag;
    }
  }
  for (let k = a.ownedY0 * W; k < (a.ownedY0 + a.ownedRows) * W; k++) {
    let nv = 0;
    let nm = 0;
    for (let f = 0; f < N; f++) {
      const v = band[f * plane + k]!;
      if (v !== v) continue;
      nv++;
      if (mask[f * plane + k]) nm++;
    }
    if (!(nm > 0 && nv - nm >= Math.max(1, Math.ceil(f32(nv * f32(a.minFraction)))))) continue;
    for (let f = 0; f < N; f++) {
      const t = mask[f * plane + k]!;
      if (!t || band[f * plane + k] !== band[f * plane + k]) continue;
      band[f * plane + k] = NaN;
      if (t === 1 || t === 3 || t === 5) a.rejected[N + f]!++;
      else a.rejected[f]!++;
      a.counts[1]!++;
    }
  }
}

test('pre-mask: the f64 screen and the sparse apply give exactly the plain f32 rule (samples a few ulps either side of the thresholds)', () => {
  const W = 61;
  const R = 23;
  const N = 9;
  const plane = W * R;
  const rnd = seededRandom(41);
  const f32 = Math.fround;
  const scale = Array.from({ length: N }, () => 0.8 + 0.4 * rnd());
  const offset = Array.from({ length: N }, () => 200 * (rnd() - 0.5));
  const sigma = Array.from({ length: N }, (_, f) => (f === 4 ? 0 : 3 + 10 * rnd()));
  const median = Float32Array.from({ length: plane }, (_, i) => (i % 37 === 0 ? NaN : 500 + (i % 11 === 0 ? 20000 * rnd() : 300 * rnd())));
  const level = 600;
  const band = new Float32Array(N * plane);
  for (let f = 0; f < N; f++) {
    const sc = f32(scale[f]!);
    const of = f32(offset[f]!);
    for (let i = 0; i < plane; i++) {
      const m = median[i]!;
      const t = f32(f32(0.5) * f32(Math.abs(f32(m - level))));
      const th = f32(f32(3 * sigma[f]!) + t);
      // Aim at the high or low threshold (or its double), then step a few f32 ulps either way.
      const target = [th, -th, 2 * th, -2 * th, 0.3 * th][Math.floor(rnd() * 5)]!;
      let v = f32(((Number.isNaN(m) ? 500 : m) + target - of) / sc);
      const steps = Math.floor(rnd() * 7) - 3;
      for (let s = 0; s < Math.abs(steps); s++) v = f32(v + Math.sign(steps) * Math.abs(v) * 2 ** -23);
      band[f * plane + i] = rnd() < 0.02 ? NaN : v;
    }
  }
  const mk = (b: Float32Array) => ({ band: b, median, mask: new Uint8Array(N * plane), width: W, rows: R, frames: N, scale, offset, sigma, kLow: 3, kHigh: 3, level, minFraction: 0.3, ownedY0: 3, ownedRows: 17, rejected: new Uint32Array(2 * N), counts: new BigUint64Array(2) });
  const want = mk(band.slice());
  premaskPlain(want);
  const got = mk(band.slice());
  premaskFlag(got, 0, 5);
  premaskFlag(got, 5, N);
  premaskApply(got, 0, R);
  let seeds = 0;
  for (let i = 0; i < want.mask.length; i++) if (want.mask[i] === 1 || want.mask[i] === 2) seeds++;
  assert.ok(seeds > 1000, `the data put samples at the thresholds: ${seeds} weak seeds`);
  assert.equal(Array.from(got.mask), Array.from(want.mask));
  assert.ok(got.band.every((v, i) => Object.is(v, want.band[i])), 'pre-masked bands differ');
  assert.equal(Array.from(got.rejected), Array.from(want.rejected));
  assert.is(got.counts[1], want.counts[1]);
  // The screen made once from every frame (premaskScreen, in two row ranges), read by flag calls
  // over frame ranges: the same mask and result.
  const shared = { ...mk(band.slice()), screen: new Float32Array(plane) };
  premaskScreen(shared, 0, 10);
  premaskScreen(shared, 10, R);
  premaskFlag(shared, 0, 3);
  premaskFlag(shared, 3, N);
  premaskApply(shared, 0, R);
  assert.equal(Array.from(shared.mask), Array.from(want.mask));
  assert.ok(shared.band.every((v, i) => Object.is(v, want.band[i])), 'pre-masked bands differ (shared screen)');
  assert.equal(Array.from(shared.rejected), Array.from(want.rejected));
});

test('stackRows: tiles of whole rows or of column blocks (many frames) give the whole-band result', () => {
  for (const [N, W, R] of [
    [7, 50, 9],
    [600, 2000, 3],
  ] as const) {
    const rnd = seededRandom(N);
    const band = Float32Array.from({ length: N * R * W }, () => (rnd() < 0.01 ? 5000 : 100 + 10 * rnd()));
    const scale = Array.from({ length: N }, () => 0.9 + 0.2 * rnd());
    const offset = Array.from({ length: N }, () => rnd());
    const weight = Array.from({ length: N }, () => 0.5 + rnd());
    const p = { width: W, rows: R, frames: N, method: 'sigma' as const, low: 2.5, high: 2.5, maxIters: 3, minFraction: 0.4, scale, offset, weight };
    const want = stack(band, p);
    const mean = new Float32Array(R * W);
    const rejected = new Uint32Array(2 * N);
    const counts = new BigUint64Array(2);
    stackRows({ ...p, band, mean, rejected, counts }, 0, 1);
    stackRows({ ...p, band, mean, rejected, counts }, 1, R);
    assert.ok(mean.every((v, i) => Object.is(v, want.mean[i])), `N=${N}: means differ`);
    assert.equal(Array.from(rejected), [...want.rejectedLow, ...want.rejectedHigh]);
    assert.is(Number(counts[0]), want.count.reduce((a, b) => a + b, 0));
  }
});

test('superpixel cells: R and B as measured, G the mean of the two greens (NaN-aware), every pattern', () => {
  const W = 6;
  const rows = 4;
  const input = Float32Array.from({ length: W * rows }, (_, i) => i + 1);
  input[2 * W + 1] = NaN;
  for (const pattern of ['RGGB', 'GBRG', 'GRBG', 'BGGR'] as const) {
    const r = new Float32Array(3 * 2);
    const g = new Float32Array(3 * 2);
    const b = new Float32Array(3 * 2);
    superpixelRows({ input, frameWidth: W, readY0: 0, phases: phaseChannels(pattern), width: 3, srcY0: 0, r, g, b }, 0, 2);
    const site = (ch: string, u: number, v: number) => {
      const k = pattern.indexOf(ch);
      return input[(2 * v + (k >> 1)) * W + 2 * u + (k & 1)]!;
    };
    for (let v = 0; v < 2; v++) {
      for (let u = 0; u < 3; u++) {
        assert.ok(Object.is(r[v * 3 + u], site('R', u, v)), `${pattern} R ${u},${v}`);
        assert.ok(Object.is(b[v * 3 + u], site('B', u, v)), `${pattern} B ${u},${v}`);
        const k1 = pattern.indexOf('G');
        const k2 = pattern.lastIndexOf('G');
        const g1 = input[(2 * v + (k1 >> 1)) * W + 2 * u + (k1 & 1)]!;
        const g2 = input[(2 * v + (k2 >> 1)) * W + 2 * u + (k2 & 1)]!;
        const want = Number.isNaN(g1) ? g2 : Number.isNaN(g2) ? g1 : Math.fround(0.5 * (g1 + g2));
        assert.ok(Object.is(g[v * 3 + u], want), `${pattern} G ${u},${v}: ${g[v * 3 + u]} vs ${want}`);
      }
    }
  }
});

test('superpixel matrices: a frame pixel p maps to cell (p − 0.5) / 2 consistently', () => {
  const m: [[number, number, number], [number, number, number]] = [
    [Math.cos(0.01), -Math.sin(0.01), 7.3],
    [Math.sin(0.01), Math.cos(0.01), -4.1],
  ];
  const h = toCells(m);
  for (const [x, y] of [
    [0, 0],
    [100, 50],
    [511, 383],
  ] as const) {
    const full = [m[0][0] * x + m[0][1] * y + m[0][2], m[1][0] * x + m[1][1] * y + m[1][2]];
    const u = (x - 0.5) / 2;
    const v = (y - 0.5) / 2;
    const cell = [h[0][0] * u + h[0][1] * v + h[0][2], h[1][0] * u + h[1][1] * v + h[1][2]];
    assert.ok(Math.abs(cell[0]! - (full[0]! - 0.5) / 2) < 1e-12 && Math.abs(cell[1]! - (full[1]! - 0.5) / 2) < 1e-12);
  }
});

test.run();
