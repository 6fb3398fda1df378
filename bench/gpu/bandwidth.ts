// Device memory bandwidth for the GPU bench, measured on the device under test with three
// simple probes over buffers far larger than any cache:
//   copy   a WGSL kernel copying vec4<f32> (bytes read + written) — the reference the kernels'
//          fractions are taken of, like a device-to-device copy in CUDA terms;
//   read   a WGSL kernel summing vec4<f32> (bytes read), each invocation a strided run;
//   copyBufferToBuffer  the API's own copy (wall time only: timestamps exist for passes).
// The copy kernel's output is checked against its input (its TypeScript reference is the
// identity), so a kernel that wrote nothing cannot report a bandwidth.

import type { GpuContext } from '../../src/gpu/context.js';
import { grid1d } from '../../src/gpu/dispatch.js';
import { gbPerSecond } from './model.js';
import { timeBatches, type BatchOptions } from './timing.js';

const WG = 256;
/** vec4s each invocation of the read probe sums (strided by the grid, so loads stay coalesced). */
const READ_ITEMS = 8;

const COPY_WGSL = /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let i = g.x + g.y * nw.x * ${WG}u;
  if (i < arrayLength(&dst)) { dst[i] = src[i]; }
}`;

const READ_WGSL = /* wgsl */ `
@group(0) @binding(0) var<storage, read> src: array<vec4<f32>>;
@group(0) @binding(1) var<storage, read_write> dst: array<vec4<f32>>;
@compute @workgroup_size(${WG})
fn main(@builtin(global_invocation_id) g: vec3u, @builtin(num_workgroups) nw: vec3u) {
  let threads = nw.x * nw.y * ${WG}u;
  let i = g.x + g.y * nw.x * ${WG}u;
  let n = arrayLength(&src);
  var s = vec4<f32>(0.0);
  for (var k = 0u; k < ${READ_ITEMS}u; k++) {
    let j = i + k * threads;
    if (j < n) { s += src[j]; }
  }
  // Never true for the probe's data; keeps the loads from being optimised away.
  if (s.x == -1.0) { dst[i % arrayLength(&dst)] = s; }
}`;

export interface BandwidthRow {
  probe: 'copy kernel' | 'read kernel' | 'copyBufferToBuffer';
  /** Bytes one repetition moves (read + written). */
  bytes: number;
  ms: number;
  timing: 'timestamp' | 'wall';
  gbs: number;
  reps: number;
}

/** Probe buffer size: `wanted` bytes, within the binding and buffer limits, a multiple of 16. */
export function probeBytes(ctx: GpuContext, wanted: number): number {
  const limit = Math.min(ctx.limits.maxStorageBufferBindingSize, ctx.limits.maxBufferSize, wanted);
  return Math.floor(limit / 16) * 16;
}

export async function measureBandwidth(ctx: GpuContext, options: { bytes: number; batch: BatchOptions }): Promise<BandwidthRow[]> {
  const { device } = ctx;
  const bytes = probeBytes(ctx, options.bytes);
  const n4 = bytes / 16;
  const usage = GPUBufferUsage.STORAGE | GPUBufferUsage.COPY_SRC | GPUBufferUsage.COPY_DST;
  const src = device.createBuffer({ size: bytes, usage, label: 'bandwidth src' });
  const dst = device.createBuffer({ size: bytes, usage, label: 'bandwidth dst' });
  const small = device.createBuffer({ size: 4096, usage, label: 'bandwidth sink' });
  try {
    // Distinct non-zero values everywhere (zeros can hide unwritten outputs), written in chunks.
    const chunk = new Float32Array(1 << 20);
    for (let i = 0; i < chunk.length; i++) chunk[i] = 1 + (i % 9973) * 0.5;
    for (let off = 0; off < bytes; off += chunk.byteLength) device.queue.writeBuffer(src, off, chunk, 0, Math.min(chunk.length, (bytes - off) / 4));
    const pipeline = (code: string, label: string) => device.createComputePipeline({ label, layout: 'auto', compute: { module: device.createShaderModule({ code, label }), entryPoint: 'main' } });
    const copy = pipeline(COPY_WGSL, 'bandwidth copy');
    const read = pipeline(READ_WGSL, 'bandwidth read');
    const max = ctx.limits.maxComputeWorkgroupsPerDimension;
    const pass = (p: GPUComputePipeline, out: GPUBuffer, invocations: number, label: string) => {
      const group = device.createBindGroup({ layout: p.getBindGroupLayout(0), entries: [{ binding: 0, resource: { buffer: src } }, { binding: 1, resource: { buffer: out } }] });
      const grid = grid1d(invocations, WG, max);
      return async (encoder: GPUCommandEncoder) => {
        const timestampWrites = ctx.timer?.writes(label);
        const cp = encoder.beginComputePass(timestampWrites ? { label, timestampWrites } : { label });
        cp.setPipeline(p);
        cp.setBindGroup(0, group);
        cp.dispatchWorkgroups(grid.workgroups[0], grid.workgroups[1]);
        cp.end();
      };
    };
    const rows: BandwidthRow[] = [];
    const copyRep = pass(copy, dst, n4, 'bandwidth copy');
    const t = await timeBatches(ctx, copyRep, options.batch);
    await checkCopy(ctx, src, dst, bytes);
    rows.push({ probe: 'copy kernel', bytes: 2 * bytes, ms: t.ms, timing: t.timing, gbs: gbPerSecond(2 * bytes, t.ms), reps: t.reps });
    const r = await timeBatches(ctx, pass(read, small, Math.ceil(n4 / READ_ITEMS), 'bandwidth read'), options.batch);
    rows.push({ probe: 'read kernel', bytes, ms: r.ms, timing: r.timing, gbs: gbPerSecond(bytes, r.ms), reps: r.reps });
    const api = await timeBatches(ctx, async (encoder) => encoder.copyBufferToBuffer(src, 0, dst, 0, bytes), { ...options.batch, selfSubmit: false });
    rows.push({ probe: 'copyBufferToBuffer', bytes: 2 * bytes, ms: api.wallMs, timing: 'wall', gbs: gbPerSecond(2 * bytes, api.wallMs), reps: api.reps });
    return rows;
  } finally {
    src.destroy();
    dst.destroy();
    small.destroy();
  }
}

/** The copy kernel's output equals its input at the start, the middle and the end. */
async function checkCopy(ctx: GpuContext, src: GPUBuffer, dst: GPUBuffer, bytes: number): Promise<void> {
  const span = Math.min(bytes, 1 << 16);
  for (const offset of [0, Math.floor(bytes / 2 / 16) * 16, bytes - span]) {
    const [a, b] = await Promise.all([ctx.readback(src, span, offset), ctx.readback(dst, span, offset)]);
    const x = new Uint32Array(a);
    const y = new Uint32Array(b);
    for (let i = 0; i < x.length; i++) {
      if (x[i] !== y[i]) throw new Error(`bandwidth copy kernel: output differs from input at byte ${offset + 4 * i}`);
    }
  }
}
