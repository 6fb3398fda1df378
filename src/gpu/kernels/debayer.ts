// Wrapper for shaders/debayer/: bilinear.wgsl (any width), bilinear_vec4.wgsl (widths that are
// a multiple of 4) and mhc.wgsl (Malvar-He-Cutler). Owns their uniform layouts, the choice
// between the bilinear kernels and the dispatch math. Contracts and CFA phase rules:
// src/cpu/debayer.ts. The resident forms chain on device buffers (a band's mosaic in, three
// planes out); the host forms split an image whose planes exceed the storage-binding limit
// into bands with the method's halo rows each side.

import { resolveDebayer, type DebayerParams, type DebayerPlanes, type ResolvedDebayer } from '../../cpu/debayer.js';
import type { GpuContext, KernelPipeline } from '../context.js';
import { packUniform, type UniformField } from '../dispatch.js';
import { GpuError } from '../errors.js';

/** Workgroup size (invocations = 2x2 cells or 4x2 blocks); 32..256 were within noise on llvmpipe. */
const WG = 64;

export interface DebayerBuffers {
  r: GPUBuffer;
  g: GPUBuffer;
  b: GPUBuffer;
}

/** Resident parameters: the buffer does not tell its row count, so it is given. */
export interface DebayerResidentParams extends DebayerParams {
  /** Rows held in the mosaic buffer (owned rows plus available halo). */
  readRows: number;
}

export type DebayerMethod = 'bilinear' | 'mhc';

type DebayerKernelId = 'debayer_bilinear' | 'debayer_bilinear_vec4' | 'debayer_mhc';

/** Rows of context each side a method reads. */
const HALO: Record<DebayerMethod, number> = { bilinear: 1, mhc: 2 };

/**
 * Bilinear has a vec4 kernel (4 adjacent pixels per load and store, ~30% less CPU time on
 * llvmpipe) for rows that start on a vec4, i.e. widths divisible by 4; the scalar kernels take
 * any width.
 */
function kernelFor(method: DebayerMethod, width: number): DebayerKernelId {
  if (method === 'mhc') return 'debayer_mhc';
  return width % 4 === 0 ? 'debayer_bilinear_vec4' : 'debayer_bilinear';
}

function encode(ctx: GpuContext, id: DebayerKernelId, kernel: KernelPipeline, mosaic: GPUBuffer, out: DebayerBuffers, p: ResolvedDebayer, encoder?: GPUCommandEncoder): void {
  const bytes = (n: number) => n * 4;
  if (mosaic.size < bytes(p.readRows * p.width)) throw new GpuError('BAD_ARGUMENT', `debayer: mosaic buffer of ${mosaic.size} B holds less than ${p.readRows} rows of ${p.width}`);
  for (const [name, b] of Object.entries(out)) {
    if (b.size < bytes(p.rows * p.width)) throw new GpuError('BAD_ARGUMENT', `debayer: ${name} buffer of ${b.size} B holds less than ${p.rows} rows of ${p.width}`);
  }
  if (p.rows === 0) return;
  // First cell row: the red row at or above y0 (red rows have parity ry). Every kernel works on
  // (red row, blue row) pairs: the scalar ones on 2x2 cells starting at a red site, the vec4 one
  // on 4-column blocks.
  const cellY0 = p.y0 - ((p.y0 + p.ry) & 1);
  const cellRows = Math.ceil((p.y0 + p.rows - cellY0) / 2);
  const fields: UniformField[] = [
    ['u32', p.width],
    ['u32', p.height],
    ['u32', p.y0],
    ['u32', p.rows],
    ['u32', p.readY0],
    ['u32', p.readRows],
    ['u32', p.rx],
    ['i32', cellY0],
  ];
  let invocationsX: number;
  if (id === 'debayer_bilinear_vec4') {
    invocationsX = p.width / 4;
  } else {
    const cellsX = Math.ceil((p.width + p.rx) / 2);
    fields.push(['u32', cellsX]);
    invocationsX = cellsX;
  }
  const uniform = ctx.uniform(packUniform(fields));
  ctx.retire(uniform);
  const group = ctx.bindGroup(kernel, [uniform, mosaic, out.r, out.g, out.b]);
  ctx.dispatch(id, kernel, group, [Math.ceil(invocationsX / WG), cellRows], encoder);
}

async function resident(method: DebayerMethod, ctx: GpuContext, mosaic: GPUBuffer, out: DebayerBuffers, params: DebayerResidentParams, encoder?: GPUCommandEncoder): Promise<void> {
  const id = kernelFor(method, params.width);
  const kernel = await ctx.pipeline(id, { WG });
  encode(ctx, id, kernel, mosaic, out, resolveDebayer(params, params.readRows * params.width, HALO[method]), encoder);
}

async function hostToHost(method: DebayerMethod, ctx: GpuContext, input: Float32Array, params: DebayerParams): Promise<DebayerPlanes> {
  const halo = HALO[method];
  const p = resolveDebayer(params, input.length, halo);
  if (p.rows === 0) return { r: new Float32Array(0), g: new Float32Array(0), b: new Float32Array(0) };
  const id = kernelFor(method, p.width);
  const kernel = await ctx.pipeline(id, { WG });
  const W = p.width;
  // Owned rows per sub-band so that its input (with halo rows) fits one storage binding.
  const maxBinding = Math.min(ctx.limits.maxStorageBufferBindingSize, ctx.limits.maxBufferSize);
  const perBand = Math.floor(maxBinding / (W * 4)) - 2 * halo;
  if (perBand < 1) throw new GpuError('BINDING_TOO_LARGE', `debayer: a ${W}-pixel row with halo exceeds the ${maxBinding}-byte binding limit`);
  const single = perBand >= p.rows;
  const planes: DebayerPlanes | null = single ? null : { r: new Float32Array(p.rows * W), g: new Float32Array(p.rows * W), b: new Float32Array(p.rows * W) };
  for (let k = 0; k < p.rows; k += perBand) {
    const y0 = p.y0 + k;
    const rows = Math.min(perBand, p.rows - k);
    const readY0 = Math.max(p.readY0, y0 - halo);
    const readEnd = Math.min(p.readY0 + p.readRows, y0 + rows + halo);
    const mosaic = ctx.upload(input.subarray((readY0 - p.readY0) * W, (readEnd - p.readY0) * W));
    const bytes = rows * W * 4;
    const out = { r: ctx.storage(bytes, 'debayer_r'), g: ctx.storage(bytes, 'debayer_g'), b: ctx.storage(bytes, 'debayer_b') };
    try {
      encode(ctx, id, kernel, mosaic, out, { ...p, y0, rows, readY0, readRows: readEnd - readY0 });
      const r = await ctx.readFloat32(out.r, rows * W);
      const g = await ctx.readFloat32(out.g, rows * W);
      const b = await ctx.readFloat32(out.b, rows * W);
      if (!planes) return { r, g, b };
      planes.r.set(r, k * W);
      planes.g.set(g, k * W);
      planes.b.set(b, k * W);
    } finally {
      ctx.pool.release(mosaic);
      for (const buf of Object.values(out)) ctx.pool.release(buf);
    }
  }
  return planes!;
}

/**
 * Bilinear debayer of a device-resident band: `mosaic` holds rows readY0 .. readY0+readRows-1
 * (one halo row each side), the planes receive the owned rows (rows x width each). Encoded
 * into `encoder` when given.
 */
export function debayerBilinearResident(ctx: GpuContext, mosaic: GPUBuffer, out: DebayerBuffers, params: DebayerResidentParams, encoder?: GPUCommandEncoder): Promise<void> {
  return resident('bilinear', ctx, mosaic, out, params, encoder);
}

/** Bilinear, host to host: upload the band (shared memory allowed), debayer, read the planes back. */
export function debayerBilinearGpu(ctx: GpuContext, input: Float32Array, params: DebayerParams): Promise<DebayerPlanes> {
  return hostToHost('bilinear', ctx, input, params);
}

/** Malvar-He-Cutler on a device-resident band (two halo rows each side); see debayerBilinearResident. */
export function debayerMhcResident(ctx: GpuContext, mosaic: GPUBuffer, out: DebayerBuffers, params: DebayerResidentParams, encoder?: GPUCommandEncoder): Promise<void> {
  return resident('mhc', ctx, mosaic, out, params, encoder);
}

/** Malvar-He-Cutler, host to host. */
export function debayerMhcGpu(ctx: GpuContext, input: Float32Array, params: DebayerParams): Promise<DebayerPlanes> {
  return hostToHost('mhc', ctx, input, params);
}
