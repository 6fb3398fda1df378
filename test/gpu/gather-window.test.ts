// STACKING's column-window gather (shaders/stack/gather_window.wgsl) against its TypeScript
// reference (src/cpu/gather-window.ts) on seeded bands: bit-identical (NaN payloads included),
// windows at the band's edges, odd widths whose frame slices are not binding-aligned, and a band
// larger than the (forced small) binding, gathered over several frame ranges.
import * as assert from 'uvu/assert';
import { test } from 'uvu';
import { gatherWindow, type WindowSpec } from '../../src/cpu/gather-window.js';
import { gatherWindowResident } from '../../src/gpu/kernels/gather-window.js';
import { gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

function seededBand(frames: number, slotRows: number, width: number, seed: number): Float32Array {
  const rnd = seededRandom(seed);
  const band = Float32Array.from({ length: frames * slotRows * width }, () => 1000 * rnd() - 100);
  // A few NaN with distinct payloads and infinities: copies must move bits, not values.
  const bits = new Uint32Array(band.buffer);
  for (let k = 0; k < 40; k++) bits[Math.floor(rnd() * bits.length)] = 0x7fc00000 + k;
  band[3] = Infinity;
  band[band.length - 2] = -Infinity;
  return band;
}

test('gatherWindow: each frame row of the window lands at (f·rows + r)·cols, nothing else written', () => {
  const s: WindowSpec = { frames: 3, slotRows: 5, width: 7, y0: 1, rows: 3, x0: 2, cols: 4 };
  const src = Float32Array.from({ length: 3 * 5 * 7 }, (_, i) => i);
  const dst = new Float32Array(3 * 3 * 4 + 2).fill(-1);
  gatherWindow(src, s, dst);
  // Frame 1, window row 2 = slot row 3, columns 2..5: elements (1·5 + 3)·7 + 2 … + 5.
  assert.equal(Array.from(dst.subarray((1 * 3 + 2) * 4, (1 * 3 + 2) * 4 + 4)), [58, 59, 60, 61]);
  assert.equal(Array.from(dst.subarray(0, 4)), [9, 10, 11, 12]);
  assert.equal(Array.from(dst.subarray(36)), [-1, -1]);
  assert.throws(() => gatherWindow(src, { ...s, x0: 4 }, dst), /outside/);
  assert.throws(() => gatherWindow(src, { ...s, rows: 5 }, dst), /outside/);
  assert.throws(() => gatherWindow(src, s, new Float32Array(10)), /target/);
});

const cases: (WindowSpec & { seed: number; maxBinding?: number })[] = [
  { frames: 9, slotRows: 12, width: 101, y0: 0, rows: 12, x0: 0, cols: 37, seed: 1 }, // left edge, odd width
  { frames: 9, slotRows: 12, width: 101, y0: 2, rows: 8, x0: 64, cols: 37, seed: 2 }, // right edge, owned rows only
  { frames: 1, slotRows: 4, width: 64, y0: 0, rows: 4, x0: 0, cols: 64, seed: 3 }, // the whole slot
  { frames: 40, slotRows: 7, width: 93, y0: 0, rows: 7, x0: 30, cols: 21, seed: 4, maxBinding: 8192 }, // frame ranges (unaligned slices)
  { frames: 17, slotRows: 5, width: 256, y0: 1, rows: 3, x0: 200, cols: 56, seed: 5, maxBinding: 4 * 5 * 256 + 512 }, // one frame per range (vec4)
  { frames: 30, slotRows: 6, width: 128, y0: 0, rows: 6, x0: 60, cols: 68, seed: 6, maxBinding: 4 * 6 * 128 * 7 }, // vec4, frame ranges, right edge
  { frames: 5, slotRows: 3, width: 100, y0: 0, rows: 3, x0: 12, cols: 18, seed: 7 }, // vec4 width, a window of 18 columns: scalar
];

for (const c of cases) {
  gpuTest(`gather_window ${c.frames} x ${c.slotRows} x ${c.width}, rows ${c.y0}+${c.rows}, cols ${c.x0}+${c.cols}${c.maxBinding ? `, bindings of ${c.maxBinding} B` : ''}: bit-identical to the reference`, async () => {
    const ctx = gpu.ctx!;
    const band = seededBand(c.frames, c.slotRows, c.width, c.seed);
    const want = gatherWindow(band, c, new Float32Array(c.frames * c.rows * c.cols));
    const src = ctx.upload(band);
    const dst = ctx.storage(4 * want.length);
    // Whole vec4s (width, first column and window width multiples of 4) take the vec4 kernel.
    const id = c.width % 4 === 0 && c.x0 % 4 === 0 && c.cols % 4 === 0 ? 'gather_window_vec4' : 'gather_window';
    const before = ctx.dispatches.get(id) ?? 0;
    try {
      const encoder = ctx.device.createCommandEncoder();
      await gatherWindowResident(ctx, src, c, dst, encoder, c.maxBinding);
      ctx.submit(encoder);
      const got = await ctx.readFloat32(dst, want.length);
      assert.equal(Array.from(new Uint32Array(got.buffer, got.byteOffset, got.length)), Array.from(new Uint32Array(want.buffer)));
      const ran = (ctx.dispatches.get(id) ?? 0) - before;
      assert.ok(c.maxBinding ? ran > 1 : ran === 1, `${ran} dispatches of ${id}`);
    } finally {
      ctx.pool.release(src);
      ctx.pool.release(dst);
    }
  });
}

async function rejectsWith(p: Promise<unknown>, pattern: RegExp): Promise<void> {
  const error = await p.then(
    () => null,
    (e: unknown) => e as Error,
  );
  assert.ok(error, 'rejected');
  assert.match(error!.message, pattern);
}

gpuTest('gather_window: a window outside the band or a one-frame window beyond the binding is refused, not dispatched', async () => {
  const ctx = gpu.ctx!;
  const src = ctx.storage(4 * 2 * 4 * 64);
  const dst = ctx.storage(4 * 2 * 4 * 64);
  try {
    const encoder = ctx.device.createCommandEncoder();
    await rejectsWith(gatherWindowResident(ctx, src, { frames: 2, slotRows: 4, width: 64, y0: 0, rows: 4, x0: 1, cols: 64 }, dst, encoder), /outside/);
    await rejectsWith(gatherWindowResident(ctx, src, { frames: 2, slotRows: 4, width: 64, y0: 0, rows: 4, x0: 0, cols: 64 }, dst, encoder, 512), /exceeds one binding/);
  } finally {
    ctx.pool.release(src);
    ctx.pool.release(dst);
  }
});

test.run();
