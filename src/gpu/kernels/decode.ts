// Wrapper for shaders/decode/int16.wgsl: owns its uniform layout and dispatch math.
// Input is the file's raw sample bytes, uploaded unchanged, so the host does no per-sample work.

import type { DecodeParams } from '../../cpu/decode.js';
import type { GpuContext } from '../context.js';
import { grid1d, packUniform } from '../dispatch.js';

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
