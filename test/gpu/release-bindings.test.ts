// The binding release (shaders/device/release_bindings.wgsl, src/gpu/kernels/release-bindings.ts)
// against its TypeScript reference: every storage binding point of the device gets its own
// marker word; the template expands to the device's slot count. And what GpuContext.trim uses it
// for on Dawn's OpenGL ES backend: a destroyed buffer that a dispatch left bound is only freed
// once the binding points are rebound, so trim() must return its memory at once.
import * as assert from 'uvu/assert';
import { test } from 'uvu';
import { exposeGc } from '../../src/cpu/worker-gc.js';
import { scatterNanResident } from '../../src/gpu/kernels/premask.js';
import { expandReleaseBindings, releaseBindings, releaseBindingSlots, releaseBindingsMarks } from '../../src/gpu/kernels/release-bindings.js';
import { loadShader } from '../../src/gpu/shaders.js';
import { gpu, gpuTest } from '../helpers/gpu.js';

const MiB = 1024 * 1024;

test('releaseBindingsMarks: slot k holds marker + k (u32, wrapping)', () => {
  assert.equal(Array.from(releaseBindingsMarks(100, 3)), [101, 102, 103]);
  assert.equal(Array.from(releaseBindingsMarks(0xffffffff, 2)), [0, 1]);
});

test('expandReleaseBindings: S storage bindings, each stored to once; the markers are required', () => {
  const code = expandReleaseBindings(loadShader('device/release_bindings.wgsl'), 5);
  for (let k = 1; k <= 5; k++) {
    assert.match(code, new RegExp(`@binding\\(${k}\\) var<storage, read_write> slot_${k}: array<u32>;`));
    assert.is(code.split(`slot_${k}[0] = params.marker + ${k}u;`).length, 2, `slot ${k} is stored to exactly once`);
  }
  assert.not.match(code, /@binding\(6\)/);
  assert.not.match(code, /^\s*\/\/@(SLOTS|MARKS)$/m);
  assert.is(expandReleaseBindings(loadShader('device/release_bindings.wgsl'), 1).includes('slot_2'), false);
  assert.throws(() => expandReleaseBindings('fn main() {}', 3), /SLOTS or \/\/@MARKS/);
});

test('releaseBindingSlots: the per-stage storage limit, at least 1, at most 64', () => {
  assert.is(releaseBindingSlots({ maxStorageBuffersPerShaderStage: 16 }), 16);
  assert.is(releaseBindingSlots({ maxStorageBuffersPerShaderStage: 0 }), 1);
  assert.is(releaseBindingSlots({ maxStorageBuffersPerShaderStage: 1000 }), 64);
});

gpuTest('release_bindings: every storage binding point of the device stores its reference word', async () => {
  const ctx = gpu.ctx!;
  const slots = releaseBindingSlots(ctx.limits);
  assert.is(slots, Math.min(64, ctx.limits.maxStorageBuffersPerShaderStage));
  const before = ctx.dispatches.get('release_bindings') ?? 0;
  const got = await releaseBindings(ctx, { marker: 7000, readMarks: true });
  assert.is(ctx.dispatches.get('release_bindings'), before + 1, 'the kernel ran on the device');
  assert.equal(Array.from(got!), Array.from(releaseBindingsMarks(7000, slots)));
  assert.is(await releaseBindings(ctx), null, 'without readMarks nothing is read back');
});

// The memory effect is the software adapter's (device memory is this process's memory there).
const softwareGl = gpu.ctx?.info.backend === 'opengles' ? gpuTest : test.skip;

softwareGl('GpuContext.trim: a destroyed buffer a dispatch left bound is returned at once (OpenGL ES backend)', async () => {
  const ctx = gpu.ctx!;
  await ctx.trim();
  const inUse = ctx.pool.stats.inUseBytes; // other files' buffers (one process, one device)
  const bytes = 96 * MiB;
  // Earlier files' garbage released first, so no sweep shrinks RSS while the buffer is measured.
  exposeGc()?.();
  await new Promise((r) => setTimeout(r, 50));
  const rss0 = process.memoryUsage.rss();
  const big = ctx.storage(bytes, 'big');
  const indices = ctx.upload(new Uint32Array([0, 1, 2, 3]));
  // Bind it (one store of four NaN is enough: the binding is what holds it).
  const encoder = ctx.device.createCommandEncoder();
  await scatterNanResident(ctx, indices, 4, big, bytes / 4, encoder);
  ctx.submit(encoder);
  await ctx.done();
  const rss1 = process.memoryUsage.rss();
  assert.ok(rss1 - rss0 > 0.8 * bytes, `the buffer is resident (+${((rss1 - rss0) / MiB).toFixed(0)} MiB)`);
  ctx.pool.release(big);
  ctx.pool.release(indices);
  await ctx.trim();
  await ctx.done();
  const rss2 = process.memoryUsage.rss();
  assert.ok(rss1 - rss2 > 0.8 * bytes, `trim returned ${((rss1 - rss2) / MiB).toFixed(0)} of ${bytes / MiB} MiB`);
  assert.is(ctx.pool.stats.inUseBytes, inUse, 'the dispatch returned its buffers to the pool');
});

test.run();
