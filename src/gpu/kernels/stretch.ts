// Wrappers for shaders/stretch/{mtf,asinh}.wgsl: own the uniform layouts and dispatch math.
// Both kernels read inputs as vec4 (widened bindings, see vec4-binding.ts) and write f32.
// The host-to-host forms upload each plane (in chunks that fit one storage binding), run the
// kernel and read the results back; the resident forms chain on device buffers.

import { asinhCurve, checkMtf, type AsinhParams, type MtfParams } from '../../cpu/stretch.js';
import type { BindingResource, GpuContext } from '../context.js';
import { grid1d, packUniform } from '../dispatch.js';
import { GpuError } from '../errors.js';
import { vec4Binding } from './vec4-binding.js';

const WG = 64;

/** MTF with clipping on `count` samples of one plane (`input` → `output`). */
export async function stretchMtfResident(ctx: GpuContext, input: BindingResource, output: BindingResource, count: number, p: MtfParams, encoder?: GPUCommandEncoder): Promise<void> {
  checkMtf(p);
  const kernel = await ctx.pipeline('stretch_mtf', { WG });
  const grid = grid1d(Math.ceil(count / 4), WG, ctx.limits.maxComputeWorkgroupsPerDimension);
  const uniform = ctx.uniform(
    packUniform([
      ['u32', count],
      ['u32', grid.gridX],
      ['f32', p.c0],
      ['f32', 1 / (p.c1 - p.c0)],
      ['f32', p.m],
      ['f32', p.m - 1],
      ['f32', 2 * p.m - 1],
    ]),
  );
  ctx.retire(uniform);
  ctx.dispatch('stretch_mtf', kernel, ctx.bindGroup(kernel, [uniform, vec4Binding(input, count, 'stretch_mtf'), output]), grid.workgroups, encoder);
}

/** Options of the host-to-host forms. */
export interface StretchHostOptions {
  /** Samples per upload chunk (default and maximum: what one storage binding holds). */
  chunkSamples?: number;
}

/** Samples per chunk: one plane chunk must fit a storage binding; multiples of 64 keep it vec4-whole. */
function chunkSamples(ctx: GpuContext, options: StretchHostOptions): number {
  const limit = Math.floor(ctx.limits.maxStorageBufferBindingSize / 4 / 64) * 64;
  const wanted = options.chunkSamples ?? limit;
  return Math.max(64, Math.min(limit, Math.floor(wanted / 64) * 64));
}

/** Host to host: each plane with its own parameters. */
export async function stretchMtfGpu(ctx: GpuContext, planes: Float32Array[], params: MtfParams[], options: StretchHostOptions = {}): Promise<Float32Array[]> {
  if (planes.length !== params.length) throw new GpuError('BAD_ARGUMENT', `stretch_mtf: ${planes.length} planes but ${params.length} parameter sets`);
  const chunk = chunkSamples(ctx, options);
  const results: Float32Array[] = [];
  for (let c = 0; c < planes.length; c++) {
    const plane = planes[c]!;
    // One chunk (the usual case): the read-back array is the result, no extra copy.
    let result: Float32Array | null = null;
    for (let start = 0; start < plane.length; start += chunk) {
      const part = plane.subarray(start, Math.min(plane.length, start + chunk));
      const input = ctx.upload(part);
      const output = ctx.storage(part.byteLength, 'mtf-out');
      try {
        await stretchMtfResident(ctx, input, output, part.length, params[c]!);
        const got = await ctx.readFloat32(output, part.length);
        if (part.length === plane.length) result = got;
        else (result ??= new Float32Array(plane.length)).set(got, start);
      } finally {
        ctx.pool.release(input);
        ctx.pool.release(output);
      }
    }
    results.push(result ?? new Float32Array(0));
  }
  return results;
}

type Planes = [BindingResource, BindingResource, BindingResource];

/** The HMS per-pixel stretch of `count` pixels: R, G, B inputs → R, G, B outputs. */
export async function stretchAsinhResident(ctx: GpuContext, inputs: Planes, outputs: Planes, count: number, p: AsinhParams, encoder?: GPUCommandEncoder): Promise<void> {
  const c = asinhCurve(p);
  const kernel = await ctx.pipeline('stretch_asinh', { WG });
  const grid = grid1d(Math.ceil(count / 4), WG, ctx.limits.maxComputeWorkgroupsPerDimension);
  const shadow = p.shadowConvergence ?? 0;
  const uniform = ctx.uniform(
    packUniform([
      ['u32', count],
      ['u32', grid.gridX],
      ['u32', p.colorGrip < 1 || shadow > 0 ? 1 : 0],
      ['u32', 0],
      ['f32', p.weights[0]],
      ['f32', p.weights[1]],
      ['f32', p.weights[2]],
      ['f32', 0],
      ['f32', p.anchor],
      ['f32', c.d],
      ['f32', c.b],
      ['f32', c.sb],
      ['f32', c.bsb],
      ['f32', c.norm],
      ['f32', p.convergencePower],
      ['f32', p.colorGrip],
      ['f32', shadow],
      ['f32', p.pedestal ?? 0],
    ]),
  );
  ctx.retire(uniform);
  const ins = inputs.map((r) => vec4Binding(r, count, 'stretch_asinh'));
  ctx.dispatch('stretch_asinh', kernel, ctx.bindGroup(kernel, [uniform, ...ins, ...outputs]), grid.workgroups, encoder);
}

/** Host to host: three planes of equal length. */
export async function stretchAsinhGpu(
  ctx: GpuContext,
  r: Float32Array,
  g: Float32Array,
  b: Float32Array,
  p: AsinhParams,
  options: StretchHostOptions = {},
): Promise<[Float32Array, Float32Array, Float32Array]> {
  const n = r.length;
  if (g.length !== n || b.length !== n) throw new GpuError('BAD_ARGUMENT', 'stretch_asinh: planes differ in length');
  if (n === 0) return [new Float32Array(0), new Float32Array(0), new Float32Array(0)];
  const chunk = chunkSamples(ctx, options);
  // One chunk (the usual case): the read-back arrays are the results, no extra copy.
  let out: Float32Array[] | null = null;
  for (let start = 0; start < n; start += chunk) {
    const end = Math.min(n, start + chunk);
    const ins = [r, g, b].map((plane) => ctx.upload(plane.subarray(start, end)));
    const outs = [0, 1, 2].map(() => ctx.storage((end - start) * 4, 'asinh-out'));
    try {
      await stretchAsinhResident(ctx, ins as Planes, outs as Planes, end - start, p);
      const got = await Promise.all(outs.map((o) => ctx.readFloat32(o, end - start)));
      if (end - start === n) out = got;
      else {
        out ??= [new Float32Array(n), new Float32Array(n), new Float32Array(n)];
        for (let c = 0; c < 3; c++) out[c]!.set(got[c]!, start);
      }
    } finally {
      for (const buf of [...ins, ...outs]) ctx.pool.release(buf);
    }
  }
  return out as [Float32Array, Float32Array, Float32Array];
}
