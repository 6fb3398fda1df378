// Wrappers for shaders/decode/{int16,int32,float32}.wgsl: own their uniform layouts and
// dispatch math. Input is the file's raw sample bytes, uploaded unchanged, so the host does no
// per-sample work. int32/float32 read 4 words per invocation (vec4 loads: see vec4-binding.ts).

import type { DecodeParams } from '../../cpu/decode.js';
import type { GpuContext } from '../context.js';
import { grid1d, packUniform } from '../dispatch.js';
import type { BindingResource } from '../context.js';
import { vec4Binding } from './vec4-binding.js';

const WG = 64;

/** Decodes `params.count` int16 samples held in `words` into `out` (f32), encoded into `encoder` if given. */
export async function decodeInt16Resident(ctx: GpuContext, words: GPUBuffer, out: GPUBuffer, params: DecodeParams, encoder?: GPUCommandEncoder): Promise<void> {
  const kernel = await ctx.pipeline('decode_int16', { WG });
  const grid = grid1d(Math.ceil(params.count / 2), WG, ctx.limits.maxComputeWorkgroupsPerDimension);
  const uniform = ctx.uniform(
    packUniform([
      ['u32', params.count],
      ['u32', params.blank === undefined ? 0 : 1],
      ['i32', params.blank ?? 0],
      ['u32', grid.gridX],
      ['f32', params.bscale],
      ['f32', params.bzero],
    ]),
  );
  ctx.retire(uniform);
  ctx.dispatch('decode_int16', kernel, ctx.bindGroup(kernel, [uniform, words, out]), grid.workgroups, encoder);
}

/** Host to host: upload raw bytes, decode, read back. */
export async function decodeInt16Gpu(ctx: GpuContext, bytes: Uint8Array, params: DecodeParams): Promise<Float32Array> {
  const words = ctx.upload(bytes.subarray(0, params.count * 2));
  const out = ctx.storage(params.count * 4, 'decoded');
  try {
    await decodeInt16Resident(ctx, words, out, params);
    return await ctx.readFloat32(out, params.count);
  } finally {
    ctx.pool.release(words);
    ctx.pool.release(out);
  }
}

/** Decodes `params.count` big-endian int32 samples held in `words` into `out` (f32). */
export async function decodeInt32Resident(ctx: GpuContext, words: BindingResource, out: BindingResource, params: DecodeParams, encoder?: GPUCommandEncoder): Promise<void> {
  const kernel = await ctx.pipeline('decode_int32', { WG });
  const grid = grid1d(Math.ceil(params.count / 4), WG, ctx.limits.maxComputeWorkgroupsPerDimension);
  const uniform = ctx.uniform(
    packUniform([
      ['u32', params.count],
      ['u32', params.blank === undefined ? 0 : 1],
      ['i32', params.blank ?? 0],
      ['u32', grid.gridX],
      ['f32', params.bscale],
      ['f32', params.bzero],
      ['f32', Math.fround(params.bscale) * 65536],
    ]),
  );
  ctx.retire(uniform);
  ctx.dispatch('decode_int32', kernel, ctx.bindGroup(kernel, [uniform, vec4Binding(words, params.count, 'decode_int32'), out]), grid.workgroups, encoder);
}

/** Decodes `params.count` big-endian IEEE singles held in `words` into `out` (BLANK does not apply). */
export async function decodeFloat32Resident(ctx: GpuContext, words: BindingResource, out: BindingResource, params: DecodeParams, encoder?: GPUCommandEncoder): Promise<void> {
  const kernel = await ctx.pipeline('decode_float32', { WG });
  const grid = grid1d(Math.ceil(params.count / 4), WG, ctx.limits.maxComputeWorkgroupsPerDimension);
  const scaled = Math.fround(params.bscale) !== 1 || Math.fround(params.bzero) !== 0;
  const uniform = ctx.uniform(
    packUniform([
      ['u32', params.count],
      ['u32', scaled ? 1 : 0],
      ['u32', grid.gridX],
      ['f32', params.bscale],
      ['f32', params.bzero],
    ]),
  );
  ctx.retire(uniform);
  ctx.dispatch('decode_float32', kernel, ctx.bindGroup(kernel, [uniform, vec4Binding(words, params.count, 'decode_float32'), out]), grid.workgroups, encoder);
}

async function decode32Gpu(ctx: GpuContext, bytes: Uint8Array, params: DecodeParams, run: typeof decodeInt32Resident): Promise<Float32Array> {
  const words = ctx.upload(bytes.subarray(0, params.count * 4));
  const out = ctx.storage(params.count * 4, 'decoded');
  try {
    await run(ctx, words, out, params);
    return await ctx.readFloat32(out, params.count);
  } finally {
    ctx.pool.release(words);
    ctx.pool.release(out);
  }
}

/** Host to host: upload raw BITPIX 32 bytes, decode, read back. */
export function decodeInt32Gpu(ctx: GpuContext, bytes: Uint8Array, params: DecodeParams): Promise<Float32Array> {
  return decode32Gpu(ctx, bytes, params, decodeInt32Resident);
}

/** Host to host: upload raw BITPIX -32 bytes, decode, read back. */
export function decodeFloat32Gpu(ctx: GpuContext, bytes: Uint8Array, params: DecodeParams): Promise<Float32Array> {
  return decode32Gpu(ctx, bytes, params, decodeFloat32Resident);
}
