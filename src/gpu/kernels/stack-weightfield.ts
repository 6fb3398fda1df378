// Wrapper for shaders/stack/stack_weightfield.wgsl: the weight-field stack of one band with the
// contract of src/cpu/stack-weightfield.ts (methods none, sigma, winsor), or with the
// noise-model bounds with that of src/cpu/reject-noise.ts's rejectNoiseModel given a field
// (rejectWeightfieldGpu). The band's frames, the per-frame normalisation, the tile table, the
// axis windows of the band (and for the noise model the per-frame σ²/K/α² and the per-pixel
// centre and sky) go up once; the mean, counts and per-frame rejection tallies come back.

import { noiseFrameParams, validateNoiseReject, type NoiseRejectParams, type NoiseRejectPixels } from '../../cpu/reject-noise.js';
import { winsorCorrection, type StackParams, type StackResult } from '../../cpu/stack.js';
import { AXIS_SLOTS, type WeightFieldRows } from '../../cpu/stack-weightfield.js';
import type { GpuContext } from '../context.js';
import { packUniform } from '../dispatch.js';
import { GpuError } from '../errors.js';

const WG = 64;

/** Workgroups as x × y within the per-dimension limit (the shader folds y back into the pixel index). */
function grid(groups: number): [number, number] {
  const x = Math.min(groups, 65535);
  return [x, Math.ceil(groups / x)];
}
const METHOD = { none: 0, sigma: 1, winsor: 2 } as const;
const NOISE_METHOD = { sigma: 3, winsor: 4 } as const;

export async function stackWeightfieldGpu(ctx: GpuContext, frames: Float32Array, p: StackParams, field: WeightFieldRows): Promise<StackResult> {
  if (p.method === 'median') throw new GpuError('BAD_ARGUMENT', 'stack_weightfield: median ignores weights; use the stack kernel');
  return run(ctx, frames, p, METHOD[p.method], field, null);
}

/**
 * The noise-model rejection with the field's weights (rejectNoiseModel(frames, p, px, field)'s
 * contract; p.weight is not used). A band with srcRows/srcRow0 is compacted to its rows here.
 */
export async function rejectWeightfieldGpu(ctx: GpuContext, frames: Float32Array, p: NoiseRejectParams, px: NoiseRejectPixels, field: WeightFieldRows): Promise<StackResult> {
  try {
    validateNoiseReject(p, frames.length, px);
  } catch (e) {
    throw new GpuError('BAD_ARGUMENT', (e as Error).message);
  }
  const { width: W, rows, frames: n } = p;
  const srcRows = p.srcRows ?? rows;
  const srcRow0 = p.srcRow0 ?? 0;
  let band = frames;
  if (srcRows !== rows || srcRow0 !== 0) {
    band = new Float32Array(n * rows * W);
    for (let f = 0; f < n; f++) band.set(frames.subarray((f * srcRows + srcRow0) * W, (f * srcRows + srcRow0 + rows) * W), f * rows * W);
  }
  const plane = rows * W;
  const { sigma2, poisson, alpha2 } = noiseFrameParams(p);
  const extra = new Float32Array(3 * n + 2 * plane);
  for (let f = 0; f < n; f++) {
    extra[f] = Number.isNaN(sigma2[f]!) ? -1 : sigma2[f]!;
    extra[n + f] = poisson[f]!;
    extra[2 * n + f] = alpha2[f]!;
  }
  if (px.centre) extra.set(px.centre.subarray(0, plane), 3 * n);
  else extra.fill(NaN, 3 * n, 3 * n + plane);
  extra.set(px.background.subarray(0, plane), 3 * n + plane);
  const stackParams: StackParams = { width: W, rows, frames: n, method: 'sigma', low: p.low, high: p.high, maxIters: p.maxIters, minFraction: p.minFraction, scale: p.scale, offset: p.offset, winsorK: p.winsorK };
  return run(ctx, band, stackParams, NOISE_METHOD[p.method], field, extra);
}

async function run(ctx: GpuContext, frames: Float32Array, p: StackParams, method: number, field: WeightFieldRows, extra: Float32Array | null): Promise<StackResult> {
  const { width: W, rows, frames: n } = p;
  if (frames.length < n * rows * W) throw new GpuError('BAD_ARGUMENT', `stack_weightfield: input holds ${frames.length} samples, need ${n} x ${rows} x ${W}`);
  const tiles = field.tilesX * field.tilesY;
  const aux = new Float32Array(2 * n + n * tiles + (W + rows) * AXIS_SLOTS * 2 + (extra?.length ?? 0));
  for (let f = 0; f < n; f++) {
    aux[f] = p.scale?.[f] ?? 1;
    aux[n + f] = p.offset?.[f] ?? 0;
  }
  aux.set(field.table.subarray(0, n * tiles), 2 * n);
  let o = 2 * n + n * tiles;
  for (const [axis, len] of [[field.cols, W], [field.rows, rows]] as const) {
    for (let i = 0; i < len * AXIS_SLOTS; i++) {
      aux[o++] = axis.tile[i]!;
      aux[o++] = axis.weight[i]!;
    }
  }
  if (extra) aux.set(extra, o);
  const kernel = await ctx.pipeline('stack_weightfield', { WG });
  const src = ctx.upload(frames.subarray(0, n * rows * W), undefined, 'weightfield-src');
  const auxBuf = ctx.upload(aux, undefined, 'weightfield-aux');
  const mean = ctx.storage(rows * W * 4, 'weightfield-mean');
  const count = ctx.storage(rows * W * 4, 'weightfield-count');
  const rejected = ctx.upload(new Uint32Array(2 * n), undefined, 'weightfield-rejected');
  try {
    const wk = p.winsorK ?? 1.5;
    const uniform = ctx.uniform(
      packUniform([
        ['u32', W],
        ['u32', rows],
        ['u32', n],
        ['u32', method],
        ['f32', p.low],
        ['f32', p.high],
        ['u32', p.maxIters],
        ['f32', p.minFraction],
        ['f32', wk],
        ['f32', winsorCorrection(wk)],
        ['u32', field.tilesX],
        ['u32', field.tilesY],
      ]),
    );
    ctx.retire(uniform);
    ctx.dispatch('stack_weightfield', kernel, ctx.bindGroup(kernel, [uniform, src, auxBuf, mean, count, rejected]), grid(Math.ceil((rows * W) / WG)));
    const m = await ctx.readFloat32(mean, rows * W);
    const c = new Uint32Array(rows * W);
    await ctx.readInto(count, c);
    const rej = new Uint32Array(2 * n);
    await ctx.readInto(rejected, rej);
    return { mean: m, count: c, rejectedLow: rej.slice(0, n), rejectedHigh: rej.slice(n) };
  } finally {
    for (const b of [src, auxBuf, mean, count, rejected]) ctx.pool.release(b);
  }
}
