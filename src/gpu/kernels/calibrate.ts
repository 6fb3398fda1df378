// Wrapper for shaders/calibrate/calibrate.wgsl: owns its uniform layout, the dummy binding for
// absent masters and the dispatch math. Contract: src/cpu/calibrate.ts.
// The kernel reads and writes whole vec4s, so every buffer must hold ceil(count / 4) * 16
// bytes; pooled buffers (ctx.upload / ctx.storage, rounded to 256 B) always do.

import { resolveCalibrate, type CalibrateParams, type CalibrationMasters } from '../../cpu/calibrate.js';
import type { GpuContext } from '../context.js';
import { grid1d, packUniform } from '../dispatch.js';
import { GpuError } from '../errors.js';

/** Workgroup size in invocations (vec4s). */
const WG = 64;

export interface CalibrationMasterBuffers {
  bias?: GPUBuffer;
  dark?: GPUBuffer;
  flat?: GPUBuffer;
}

/** One 16-byte buffer per context bound in place of absent masters (never read). */
const dummies = new WeakMap<GpuContext, GPUBuffer>();
function dummy(ctx: GpuContext): GPUBuffer {
  let b = dummies.get(ctx);
  if (!b) dummies.set(ctx, (b = ctx.storage(16, 'calibrate_absent_master')));
  return b;
}

/** Calibrates `count` device-resident pixels of `light` into `out` (may not alias `light`). */
export async function calibrateResident(ctx: GpuContext, light: GPUBuffer, masters: CalibrationMasterBuffers, out: GPUBuffer, count: number, params: CalibrateParams = {}, encoder?: GPUCommandEncoder): Promise<void> {
  if (!Number.isInteger(count) || count < 0) throw new GpuError('BAD_ARGUMENT', `calibrate: count ${count} must be a non-negative integer`);
  const p = resolveCalibrate(count, {}, params);
  const count4 = Math.ceil(count / 4);
  const need = count4 * 16;
  for (const [name, b] of Object.entries({ light, out, ...masters })) {
    if (b && b.size < need) throw new GpuError('BAD_ARGUMENT', `calibrate: ${name} buffer of ${b.size} B is smaller than ${need} B (${count} pixels as whole vec4s)`);
  }
  // WebGPU forbids binding one buffer as read-only and writable in a dispatch; say so plainly
  // instead of leaving a validation error on the device.
  if ([light, masters.bias, masters.dark, masters.flat].includes(out)) throw new GpuError('BAD_ARGUMENT', 'calibrate: out must not be an input buffer (no in-place calibration on the device)');
  if (count === 0) return;
  const kernel = await ctx.pipeline('calibrate', { WG });
  const grid = grid1d(count4, WG, ctx.limits.maxComputeWorkgroupsPerDimension);
  const flags = (masters.bias ? 1 : 0) | (masters.dark ? 2 : 0) | (masters.flat ? 4 : 0);
  const uniform = ctx.uniform(
    packUniform([
      ['u32', count4],
      ['u32', grid.gridX],
      ['u32', flags],
      ['f32', p.darkScale],
      ['f32', p.flatFloor],
      ['f32', p.pedestal],
    ]),
  );
  ctx.retire(uniform);
  const none = dummy(ctx);
  const group = ctx.bindGroup(kernel, [uniform, light, masters.bias ?? none, masters.dark ?? none, masters.flat ?? none, out]);
  ctx.dispatch('calibrate', kernel, group, grid.workgroups, encoder);
}

/** Host to host: upload light and masters (shared memory allowed), calibrate, read back. */
export async function calibrateGpu(ctx: GpuContext, light: Float32Array, masters: CalibrationMasters = {}, params: CalibrateParams = {}): Promise<Float32Array> {
  resolveCalibrate(light.length, masters, params);
  const held: GPUBuffer[] = [];
  const up = (a: Float32Array) => {
    const b = ctx.upload(a);
    held.push(b);
    return b;
  };
  try {
    const lightBuf = up(light);
    const bufs: CalibrationMasterBuffers = {};
    if (masters.bias) bufs.bias = up(masters.bias);
    if (masters.dark) bufs.dark = up(masters.dark);
    if (masters.flat) bufs.flat = up(masters.flat);
    const out = ctx.storage(light.length * 4, 'calibrated');
    held.push(out);
    await calibrateResident(ctx, lightBuf, bufs, out, light.length, params);
    return await ctx.readFloat32(out, light.length);
  } finally {
    for (const b of held) ctx.pool.release(b);
  }
}
