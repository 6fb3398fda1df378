// Wrapper for shaders/stack/reject_noise.wgsl (rejection with noise-model and seeing bounds):
// the per-frame table, uniform layout, argument checks, dispatch math, and the expansion of the
// shader's template per frame count (samples held in registers up to REJECT_RESIDENT_MAX_FRAMES, with
// the stack kernel's unroller). Contract and TypeScript reference: src/cpu/reject-noise.ts.
// Invariant: the rejected-count buffer is only ever added to, so a caller zeroes it once and
// runs every band of an image into it (as with the stack kernel).
// A band larger than one storage binding is bound as several frame ranges (src-ranges.ts; the
// extra windows at bindings 8..), so the rejection stays global over all N frames.

import { frameParams, type StackResult } from '../../cpu/stack.js';
import { noiseFrameParams, validateNoiseReject, type NoiseRejectParams, type NoiseRejectPixels } from '../../cpu/reject-noise.js';
import type { BindingResource, GpuContext, ShaderVariant } from '../context.js';
import { packUniform } from '../dispatch.js';
import { GpuError } from '../errors.js';
import { RESIDENT_MAX_FRAMES, unrollLoops } from './stack.js';
import { expandSrcRanges, extraSrcBindings, maxSrcRanges, REJECT_OTHER_STORAGE, splitSrc, type SrcRanges } from './src-ranges.js';

export const REJECT_NOISE_WG = 64;
const METHOD: Record<NoiseRejectParams['method'], number> = { sigma: 0, winsor: 1 };

/** Per-frame table (two vec4 per frame: scale, offset, weight, σ² (−1: never reject); K, α², 0, 0). */
export function packRejectFrames(p: NoiseRejectParams): Float32Array {
  const { scale, offset, weight } = frameParams({ ...p, method: 'sigma' });
  const { sigma2, poisson, alpha2 } = noiseFrameParams(p);
  const out = new Float32Array(8 * p.frames);
  for (let f = 0; f < p.frames; f++) {
    out.set([scale[f]!, offset[f]!, weight[f]!, Number.isNaN(sigma2[f]!) ? -1 : sigma2[f]!, poisson[f]!, alpha2[f]!, 0, 0], 8 * f);
  }
  return out;
}

/**
 * Where every row starts on a 4-sample boundary (width % 4 = 0, so every frame's and band row's
 * first sample does too, and no lane lies past a row end) the band is declared array<vec4<f32>>
 * and each invocation reads a sample's 4 lanes with one load instead of four (on llvmpipe each
 * lane's load is a scalar step: the kernel's time beyond its transfers fell ~20 %, bench/RESULTS.md).
 * Same values.
 */
const SRC_SCALAR = '@group(0) @binding(1) var<storage, read> src: array<f32>;';
const LOAD_SCALAR = 'let raw = VF(src[i], src[select(i, i + 1u, inrow.y)], src[select(i, i + 2u, inrow.z)], src[select(i, i + 3u, inrow.w)]);';

/**
 * Largest N compiled resident (frame loops unrolled, samples in registers). On llvmpipe, 29 ×
 * 2048 × 128 samples, 3 iterations: 39–43 ms CPU per dispatch resident against 53–54 streaming
 * (both with the table in the uniform; 72–75 before either). The price is compile time, once
 * per frame count while Mesa's shader cache keeps it: cold ~0.64 s at 16 frames, 1.26 s at 29,
 * 3.5 s at 64, 9.7 s at 120, against ~0.15 s streaming (bench/RESULTS.md, "issue 18 cost,
 * part 3"). The stack kernel's bound, so both kernels switch shape at the same N.
 */
export const REJECT_RESIDENT_MAX_FRAMES = RESIDENT_MAX_FRAMES;

/** Which shape a dispatch compiles: `auto` (rejectResident), or one forced (tests, benches). */
export type RejectShape = 'auto' | 'resident' | 'streaming';

/**
 * Whether `auto` compiles N frames resident: on a hardware GPU up to REJECT_RESIDENT_MAX_FRAMES.
 * On a software adapter (llvmpipe) never: there the resident shape saves ~13 ms a band (~0.15 s
 * a 30-frame run) but costs 1.3 s of compile at 29 frames on a cold shader cache, paid again for
 * every new frame count, so a CPU-only user would lose time on most runs.
 */
export function rejectResident(ctx: Pick<GpuContext, 'info'>, n: number, shape: RejectShape = 'auto'): boolean {
  if (shape !== 'auto') return shape === 'resident' && n <= REJECT_RESIDENT_MAX_FRAMES;
  return ctx.info.kind === 'gpu' && n <= REJECT_RESIDENT_MAX_FRAMES;
}

/**
 * The shader for N frames (see its head comment): template lines set, frame loops unrolled
 * when `resident` (only up to REJECT_RESIDENT_MAX_FRAMES), the frame table read from the uniform
 * where `tableInUniform` (required when resident), the vector band load where `vectorSrc`.
 */
export function expandRejectNoiseTemplate(source: string, n: number, vectorSrc: boolean, tableInUniform = true, resident = n <= REJECT_RESIDENT_MAX_FRAMES): string {
  if (resident && n > REJECT_RESIDENT_MAX_FRAMES) throw new GpuError('BAD_ARGUMENT', `reject_noise: a resident shape for ${n} frames would not compile in reasonable time`);
  if (resident && !tableInUniform) throw new GpuError('BAD_ARGUMENT', 'reject_noise: a resident shape reads its frame table from the uniform');
  const values: Record<string, string> = {
    N: `const N: u32 = ${n}u;`,
    RESIDENT: `const RESIDENT: bool = ${resident};`,
    NV: `const NV: u32 = ${resident ? n : 1}u;`,
    NFU: `const NFU: u32 = ${tableInUniform ? 2 * n : 1}u;`,
    TABLE_U: `const TABLE_U: bool = ${tableInUniform};`,
  };
  const seen = new Set<string>();
  let lines = source.split('\n').map((line) => {
    const m = /^(\s*).*?(\/\/ @template (\w+).*)$/.exec(line);
    if (!m || line.trimStart().startsWith('//')) return line;
    const value = values[m[3]!];
    if (value === undefined) throw new GpuError('SHADER_INVALID', `reject_noise.wgsl: unknown template name ${m[3]}`);
    seen.add(m[3]!);
    return `${m[1]}${value} ${m[2]}`;
  });
  for (const name of Object.keys(values)) if (!seen.has(name)) throw new GpuError('SHADER_INVALID', `reject_noise.wgsl: template line ${name} missing`);
  if (resident) lines = unrollLoops(lines, { N: n, RPI: 1 }, 'reject_noise.wgsl');
  let out = lines.join('\n');
  if (vectorSrc) {
    if (!out.includes(SRC_SCALAR) || !out.includes(LOAD_SCALAR)) throw new GpuError('SHADER_INVALID', 'reject_noise.wgsl: the src declaration or the sample load is not where the vector variant expects it');
    out = out.replace(SRC_SCALAR, '@group(0) @binding(1) var<storage, read> src: array<vec4<f32>>;').replace(LOAD_SCALAR, 'let raw = src[i >> 2u];');
  }
  return out;
}

/** Binding of the kernel's second source window (bindings 1-7 are taken). */
const REJECT_SRC_BINDING = 8;

function variant(n: number, vectorSrc: boolean, tableInUniform: boolean, resident: boolean, ranges: Pick<SrcRanges, 'count' | 'framesPerRange' | 'alignElems'>): ShaderVariant {
  const split = ranges.count > 1 ? `,ranges=${ranges.count}x${ranges.framesPerRange}/${ranges.alignElems}` : '';
  return {
    key: `N=${n},vector-src=${vectorSrc},table-u=${tableInUniform},resident=${resident}${split}`,
    transform: (source) => expandSrcRanges(expandRejectNoiseTemplate(source, n, vectorSrc, tableInUniform, resident), ranges, REJECT_SRC_BINDING, 'VF', 'reject_noise.wgsl'),
    extraBindings: extraSrcBindings(ranges.count),
  };
}

/** Uniform header bytes before the frame table (12 scalars). */
const HEADER_BYTES = 48;

/** Whether the frame table (32 bytes a frame) fits the uniform binding beside the header. */
export function rejectTableInUniform(frames: number, limits: GPUSupportedLimits): boolean {
  return HEADER_BYTES + 32 * frames <= limits.maxUniformBufferBindingSize;
}

function check(p: NoiseRejectParams): void {
  try {
    validateNoiseReject(p);
  } catch (e) {
    throw new GpuError('BAD_ARGUMENT', (e as Error).message);
  }
}

/**
 * Encodes rejection and combination of the band in `src` into `encoder` (or submits it):
 * `frames` holds packRejectFrames(p); `centre` and `background` rows × width f32; `mean`,
 * `count` receive rows × width values; `rejected` (2N u32) is added to.
 */
export async function rejectNoiseResident(
  ctx: GpuContext,
  src: BindingResource,
  frames: BindingResource,
  centre: BindingResource,
  background: BindingResource,
  mean: BindingResource,
  count: BindingResource,
  rejected: BindingResource,
  p: NoiseRejectParams,
  encoder?: GPUCommandEncoder,
  shape: RejectShape = 'auto',
  /** The storage-binding size the source windows must fit (tests force several ranges with it). */
  maxBindingBytes = ctx.limits.maxStorageBufferBindingSize,
): Promise<void> {
  check(p);
  const max = ctx.limits.maxComputeWorkgroupsPerDimension;
  // Four pixels per invocation (the shader's vec4 lanes).
  const groupsX = Math.ceil(Math.ceil(p.width / 4) / REJECT_NOISE_WG);
  if (groupsX > max) throw new GpuError('BAD_ARGUMENT', `reject_noise: width ${p.width} needs ${groupsX} workgroups per row, over ${max}`);
  // The shader reads the frame table from the uniform where it fits (see its Params): packed
  // here from p, the same values the caller put in `frames`. Resident shapes (N <= 128) always fit.
  const tableU = rejectTableInUniform(p.frames, ctx.limits);
  const table = new Uint8Array(tableU ? packRejectFrames(p).buffer : new ArrayBuffer(16));
  const ranges = splitSrc(src, p.frames, (p.srcRows ?? p.rows) * p.width, maxBindingBytes, ctx.limits.minStorageBufferOffsetAlignment, maxSrcRanges(ctx.limits, REJECT_OTHER_STORAGE));
  const kernel = await ctx.pipeline('reject_noise', { WG: REJECT_NOISE_WG, METHOD: METHOD[p.method] }, variant(p.frames, p.width % 4 === 0, tableU, tableU && rejectResident(ctx, p.frames, shape), ranges));
  const own = encoder ?? ctx.device.createCommandEncoder({ label: 'reject_noise' });
  for (let rowBase = 0; rowBase < p.rows; rowBase += max) {
    const header = packUniform([
        ['u32', p.width],
        ['u32', p.rows],
        ['u32', p.frames],
        ['u32', p.maxIters],
        ['f32', p.low],
        ['f32', p.high],
        ['f32', p.minFraction],
        ['f32', p.winsorK ?? 1.5],
        ['u32', p.srcRows ?? p.rows],
        ['u32', p.srcRow0 ?? 0],
        ['u32', rowBase],
        ['u32', 0],
      ]);
    const block = new Uint8Array(header.byteLength + table.byteLength);
    block.set(header);
    block.set(table, header.byteLength);
    const uniform = ctx.uniform(block);
    ctx.retire(uniform);
    const bindings = ranges.count === 1 ? [uniform, src, frames, centre, background, mean, count, rejected] : [uniform, ranges.windows[0]!, frames, centre, background, mean, count, rejected, ...ranges.windows.slice(1)];
    ctx.dispatch('reject_noise', kernel, ctx.bindGroup(kernel, bindings), [groupsX, Math.min(max, p.rows - rowBase)], own);
  }
  if (!encoder) ctx.submit(own);
}

/** Host to host, one band (bound as several frame ranges where it exceeds maxBindingBytes): the reference's result from the device. */
export async function rejectNoiseGpu(ctx: GpuContext, band: Float32Array, p: NoiseRejectParams, px: NoiseRejectPixels, shape: RejectShape = 'auto', maxBindingBytes = ctx.limits.maxStorageBufferBindingSize): Promise<StackResult> {
  validateNoiseReject(p, band.length, px);
  if (band.byteLength > ctx.limits.maxBufferSize) throw new GpuError('BAD_ARGUMENT', `reject_noise: band of ${band.byteLength} B exceeds one buffer`);
  const plane = p.width * p.rows;
  const held: GPUBuffer[] = [];
  const keep = (b: GPUBuffer) => (held.push(b), b);
  try {
    const src = keep(ctx.upload(band));
    const frames = keep(ctx.upload(packRejectFrames(p)));
    const centre = keep(ctx.upload(px.centre ? px.centre.subarray(0, plane) : new Float32Array(plane).fill(NaN)));
    const background = keep(ctx.upload(px.background.subarray(0, plane)));
    const mean = keep(ctx.storage(plane * 4, 'reject mean'));
    const count = keep(ctx.storage(plane * 4, 'reject count'));
    const rejected = keep(ctx.upload(new Uint32Array(2 * p.frames)));
    await rejectNoiseResident(ctx, src, frames, centre, background, mean, count, rejected, p, undefined, shape, maxBindingBytes);
    const m = await ctx.readFloat32(mean, plane);
    const c = new Uint32Array(await ctx.readback(count, plane * 4));
    const tallies = new Uint32Array(await ctx.readback(rejected, 2 * p.frames * 4));
    return { mean: m, count: c, rejectedLow: tallies.slice(0, p.frames), rejectedHigh: tallies.slice(p.frames) };
  } finally {
    for (const b of held) ctx.pool.release(b);
  }
}
