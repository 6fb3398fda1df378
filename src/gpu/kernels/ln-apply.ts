// Wrapper for shaders/stack/ln_apply.wgsl (local normalization of a band in place): uniform
// layout, argument checks and the dispatch math. Contract and TypeScript reference:
// src/cpu/ln-apply.ts. The coefficient table (packLnCoefficients) is small (8 B per node and
// frame: 120 frames of a 16 × 12 grid are 184 KiB), so a caller uploads it once per channel and
// reuses it for every band.

import { validateLnApply, type LnApplyParams } from '../../cpu/ln-apply.js';
import type { BindingResource, GpuContext } from '../context.js';
import { packUniform } from '../dispatch.js';
import { GpuError } from '../errors.js';

/** Invocations per workgroup. */
export const LN_APPLY_WG = 64;

export type LnApplyLayout = Omit<LnApplyParams, 'coefficients'>;

function check(p: LnApplyLayout & { coefficients?: Float32Array }): void {
  try {
    validateLnApply({ ...p, coefficients: p.coefficients ?? new Float32Array(p.frames * p.grid.nx * p.grid.ny * 2) });
  } catch (e) {
    throw new GpuError('BAD_ARGUMENT', (e as Error).message);
  }
}

/**
 * Encodes the normalisation of the band held in `band` (f32, frame-major, `srcRows` rows per
 * frame) with the coefficients in `coef` (frames × ny × nx vec2<f32>) into `encoder`, or
 * submits it when no encoder is given.
 */
export async function lnApplyResident(ctx: GpuContext, band: BindingResource, coef: BindingResource, p: LnApplyLayout, encoder?: GPUCommandEncoder): Promise<void> {
  check(p);
  const max = ctx.limits.maxComputeWorkgroupsPerDimension;
  const groupsX = Math.ceil(p.width / LN_APPLY_WG);
  if (groupsX > max) throw new GpuError('BAD_ARGUMENT', `ln_apply: ${p.width} px wide needs ${groupsX} workgroups per row, over ${max}`);
  const kernel = await ctx.pipeline('ln_apply', { WG: LN_APPLY_WG });
  const own = encoder ?? ctx.device.createCommandEncoder({ label: 'ln_apply' });
  const srcRows = p.srcRows ?? p.rows;
  const srcRow0 = p.srcRow0 ?? 0;
  for (let rowBase = 0; rowBase < p.rows; rowBase += max) {
    const uniform = ctx.uniform(
      packUniform([
        ['u32', p.width],
        ['u32', p.rows],
        ['u32', p.frames],
        ['u32', p.y0],
        ['u32', p.grid.nx],
        ['u32', p.grid.ny],
        ['u32', srcRows],
        ['u32', srcRow0],
        ['f32', p.grid.x0],
        ['f32', p.grid.y0],
        ['f32', p.grid.dx],
        ['f32', p.grid.dy],
        ['u32', rowBase],
        ['u32', 0],
        ['u32', 0],
        ['u32', 0],
      ]),
    );
    ctx.retire(uniform);
    ctx.dispatch('ln_apply', kernel, ctx.bindGroup(kernel, [uniform, band, coef]), [groupsX, Math.min(max, p.rows - rowBase)], own);
  }
  if (!encoder) ctx.submit(own);
}

/** Host to host: a normalised copy of `band` (which is left unchanged). */
export async function lnApplyGpu(ctx: GpuContext, band: Float32Array, p: LnApplyParams): Promise<Float32Array> {
  validateLnApply(p, band.length);
  const bandBuf = ctx.upload(band);
  const coefBuf = ctx.upload(p.coefficients.subarray(0, p.frames * p.grid.nx * p.grid.ny * 2));
  try {
    await lnApplyResident(ctx, bandBuf, coefBuf, p);
    return await ctx.readFloat32(bandBuf, band.length);
  } finally {
    ctx.pool.release(bandBuf);
    ctx.pool.release(coefBuf);
  }
}
