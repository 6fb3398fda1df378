// Opt-in pass timing (src/gpu/timer.ts and the hook in GpuContext.dispatch): stamp arithmetic,
// slot hand-out and overflow on a stand-in device, the timestampWrites dispatch() attaches
// only while a timer is set, the extra Dawn flags acquireDevice() takes, and — where the adapter has timestamp queries (a hardware GPU;
// llvmpipe's GL ES path has none) — real pass durations beside unchanged kernel output.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { calibrate } from '../../src/cpu/calibrate.js';
import { GpuContext } from '../../src/gpu/context.js';
import { acquireDevice, type DeviceInfo } from '../../src/gpu/device.js';
import type { GpuError } from '../../src/gpu/errors.js';
import { calibrateResident } from '../../src/gpu/kernels/calibrate.js';
import { PassTimer, passDurations, totalMs } from '../../src/gpu/timer.js';
import { gpu } from '../helpers/gpu.js';

// WebGPU's buffer usage bits, for the stand-in device where Dawn's globals are absent.
const g = globalThis as unknown as { GPUBufferUsage?: Record<string, number> };
g.GPUBufferUsage ??= { MAP_READ: 0x1, MAP_WRITE: 0x2, COPY_SRC: 0x4, COPY_DST: 0x8, INDEX: 0x10, VERTEX: 0x20, UNIFORM: 0x40, STORAGE: 0x80, INDIRECT: 0x100, QUERY_RESOLVE: 0x200 };

test('passDurations: end − begin per pass, bad pairs counted apart, span and grain of the stamps', () => {
  const stamps = [1_000_000n, 1_250_000n, 2_000_000n, 2_000_000n, 0n, 5n, 3_000_000n, 3_500_000n, 4_000_000n, 3_900_000n];
  const t = passDurations(stamps, ['a', 'b', 'c', 'd', 'e'], 2);
  assert.equal(t.passes, [
    { label: 'a', ns: 250_000 },
    { label: 'b', ns: 0 },
    { label: 'd', ns: 500_000 },
  ]);
  assert.is(t.invalid, 2, 'a zero begin stamp and an end before its begin');
  assert.is(t.untimed, 2);
  assert.is(totalMs(t), 0.75);
  assert.is(t.spanMs, 2.5, 'first begin (1.0 ms) to last valid end (3.5 ms)');
  // The valid stamps' lowest set bit: 1 250 000 = 2^4 · 78 125, the others have more factors of 2.
  assert.is(t.granularityNs, 16);
  assert.is(passDurations([65536n * 3n, 65536n * 7n], ['q']).granularityNs, 65536, 'quantized stamps show a 65536 ns grain');
  assert.equal(passDurations([], []), { passes: [], invalid: 0, spanMs: 0, untimed: 0, granularityNs: 0 });
  assert.is(passDurations([10n], ['missing end']).invalid, 1);
});

/** A stand-in device recording the objects a PassTimer and dispatch() create. */
function standIn() {
  const created: { querySets: GPUQuerySetDescriptor[]; buffers: GPUBufferDescriptor[]; passes: GPUComputePassDescriptor[] } = { querySets: [], buffers: [], passes: [] };
  const pass = { setPipeline() {}, setBindGroup() {}, dispatchWorkgroups() {}, end() {} };
  const encoder = { beginComputePass: (d: GPUComputePassDescriptor) => (created.passes.push(d), pass) } as unknown as GPUCommandEncoder;
  const device = {
    lost: new Promise(() => {}),
    addEventListener() {},
    limits: { maxComputeWorkgroupsPerDimension: 65535 },
    features: new Set(['timestamp-query']),
    createQuerySet: (d: GPUQuerySetDescriptor) => (created.querySets.push(d), { destroy() {} }),
    createBuffer: (d: GPUBufferDescriptor) => (created.buffers.push(d), { destroy() {} }),
  } as unknown as GPUDevice;
  return { device, encoder, created };
}

test('PassTimer hands out consecutive slot pairs and counts passes past its capacity', () => {
  const { device, created } = standIn();
  assert.ok(PassTimer.supported(device));
  const timer = new PassTimer(device, 2);
  assert.is(created.querySets[0]!.count, 4);
  assert.is(created.querySets[0]!.type, 'timestamp');
  assert.equal(created.buffers.map((b) => b.size), [32, 32]);
  const a = timer.writes('a')!;
  const b = timer.writes('b')!;
  assert.equal([a.beginningOfPassWriteIndex, a.endOfPassWriteIndex, b.beginningOfPassWriteIndex, b.endOfPassWriteIndex], [0, 1, 2, 3]);
  assert.is(timer.writes('c'), undefined, 'full');
  assert.is(timer.recorded, 2);
});

test('dispatch() attaches timestampWrites only while a timer is set', () => {
  const { device, encoder, created } = standIn();
  const info = { preference: 'gpu', kind: 'gpu', adapter: 'stand-in', backend: 'default', featureLevel: 'core', attempts: [] } as DeviceInfo;
  const ctx = new GpuContext({} as GPU, device, info);
  const kernel = { pipeline: {} as GPUComputePipeline, layout: {} as GPUBindGroupLayout };
  ctx.dispatch('calibrate', kernel, {} as GPUBindGroup, [4], encoder);
  ctx.timer = new PassTimer(device, 1);
  ctx.dispatch('stack', kernel, {} as GPUBindGroup, [4], encoder);
  ctx.dispatch('stack', kernel, {} as GPUBindGroup, [4], encoder);
  ctx.timer = null;
  ctx.dispatch('calibrate', kernel, {} as GPUBindGroup, [4], encoder);
  assert.equal(
    created.passes.map((p) => [p.label, p.timestampWrites?.beginningOfPassWriteIndex ?? null]),
    [
      ['calibrate', null],
      ['stack', 0],
      ['stack', null], // the timer was full
      ['calibrate', null],
    ],
  );
});

(gpu.ctx ? test : test.skip)('acquireDevice passes extra Dawn flags to every attempt (a malformed one fails each; the bench\'s toggle opens a device)', async () => {
  const path = gpu.info.kind === 'gpu' ? 'gpu' : 'software';
  try {
    await acquireDevice(path, { dawnFlags: ['not-a-key-value-flag'] });
    assert.unreachable('a malformed flag should fail every attempt');
  } catch (e) {
    assert.is((e as GpuError).code, 'NO_ADAPTER');
    assert.match((e as Error).message, /<key>=<value>/);
  }
  const { acquired, info } = await acquireDevice(path, { dawnFlags: ['disable-dawn-features=timestamp_quantization'] });
  assert.is(info.kind, path);
  acquired!.device.destroy();
});

const timestamps = gpu.ctx?.device.features.has('timestamp-query') ?? false;
if (!timestamps) console.log(`  [gpu] pass-timing test on a real device SKIPPED: ${gpu.ctx ? `adapter "${gpu.info.adapter}" has no timestamp-query feature` : 'no adapter'}`);

(timestamps ? test : test.skip)('a timed calibrate pass on the device: one duration, output unchanged', async () => {
  const ctx = gpu.ctx!;
  const n = 1 << 18;
  const light = Float32Array.from({ length: n }, (_, i) => 1000 + (i % 977));
  const bias = Float32Array.from({ length: n }, (_, i) => 100 + (i % 13));
  const want = calibrate(light, { bias }, {});
  const bufs = { light: ctx.upload(light), bias: ctx.upload(bias), out: ctx.storage(n * 4) };
  ctx.timer = new PassTimer(ctx.device, 8);
  try {
    const encoder = ctx.device.createCommandEncoder();
    await calibrateResident(ctx, bufs.light, { bias: bufs.bias }, bufs.out, n, {}, encoder);
    ctx.submit(encoder);
    const times = await ctx.timer.collect();
    assert.is(times.passes.length, 1);
    assert.is(times.passes[0]!.label, 'calibrate');
    assert.ok(times.passes[0]!.ns > 0 && times.passes[0]!.ns < 1e9, `${times.passes[0]!.ns} ns`);
    assert.is(times.invalid + times.untimed, 0);
    const got = await ctx.readFloat32(bufs.out, n);
    let bad = 0;
    for (let i = 0; i < n; i++) if (got[i] !== want[i]) bad++;
    assert.is(bad, 0);
  } finally {
    ctx.timer.destroy();
    ctx.timer = null;
    for (const b of Object.values(bufs)) ctx.pool.release(b);
  }
});

test.run();
