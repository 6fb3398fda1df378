// Wrapper for shaders/stack/stack.wgsl: expands its template for the frame count, builds and
// caches the pipeline, packs the uniform block (header + 12 bytes of scale/offset/weight per
// frame) and owns the dispatch math. Two shapes from the one source:
// - resident (N <= RESIDENT_MAX_FRAMES): frame loops unrolled, samples held in registers;
// - streaming (larger N): loops kept, samples re-read from storage on every pass, so any N the
//   uniform and storage-binding limits allow stays exact (slower, but no private array).
// Invariant: the rejected-count buffer is only ever added to, so a caller can zero it once and
// run every band of an image into it.
// A band larger than one storage binding is bound as several frame ranges (src-ranges.ts; the
// extra windows at bindings 5..), so the rejection stays global over all N frames.
//
// Why this file compiles the module itself: GpuContext.pipeline() loads shader files verbatim and
// caches by kernel id + overrides; a templated source needs its own cache key. Bind groups,
// dispatch accounting (`ctx.dispatches.get('stack')`) and uniforms still go through the context.

import { frameParams, METHOD_CODE, validateStackParams, winsorCorrection, type StackParams, type StackResult } from '../../cpu/stack.js';
import { planBands } from '../band-planner.js';
import type { BindingResource, GpuContext, KernelPipeline } from '../context.js';
import { packUniform } from '../dispatch.js';
import { GpuError } from '../errors.js';
import { expandSrcRanges, extraSrcBindings, maxSrcRanges, splitSrc, STACK_OTHER_STORAGE, type SrcRanges } from './src-ranges.js';

/** Invocations per workgroup (32..256 measured within +-5% on llvmpipe). */
export const STACK_WG = 64;
/**
 * Largest N compiled with unrolled frame loops and register-held samples. On llvmpipe the
 * resident shape ran N=48 at ~3.9x, N=128 at ~3.2x the streaming one; its compile time grows
 * with N (about 1.4 s at 48, 5.5 s at 128 on a cold Mesa shader cache).
 */
export const RESIDENT_MAX_FRAMES = 128;
/** Header of the uniform block in bytes (9 scalars padded to the 16-byte array alignment). */
const HEADER_BYTES = 48;

export interface StackShape {
  /** Samples held in registers with unrolled frame loops (else re-read per pass). */
  resident: boolean;
  /** Pixels per invocation. */
  k: 2 | 4;
  /** Invocations per workgroup. */
  wg: number;
  /** Band rows per invocation (tallies are flushed once per invocation). */
  rpi: number;
}

/**
 * The measured-fastest shape for N frames on llvmpipe (K = 4 beat K = 2 at N = 16, 48, 64 and
 * 128; RPI 2 is within noise of 1 and ahead of 3-4). Not yet measured on a hardware GPU, where
 * N x K registers per invocation may favour the streaming shape earlier.
 */
export function stackShape(frames: number): StackShape {
  const resident = frames <= RESIDENT_MAX_FRAMES;
  return { resident, k: 4, wg: STACK_WG, rpi: resident ? 2 : 1 };
}

/** Most frames one dispatch takes: 12 uniform bytes per frame, one tally slot per frame. */
export function maxStackFrames(limits: GPUSupportedLimits): number {
  const vec4s = Math.floor((limits.maxUniformBufferBindingSize - HEADER_BYTES) / 16);
  const byUniform = Math.floor((vec4s * 4) / 3);
  const byWorkgroup = Math.floor(limits.maxComputeWorkgroupStorageSize / 4);
  return Math.max(1, Math.min(byUniform, byWorkgroup));
}

/**
 * Expands the template of stack.wgsl (see its head comment): replaces `@template NAME` lines and,
 * when resident, unrolls `// @unroll` ... `} // @end-unroll` loops N times.
 */
export function expandStackTemplate(source: string, n: number, shape: Pick<StackShape, 'resident' | 'k' | 'rpi'>, vectorIo: boolean): string {
  const k = shape.k;
  const lanes = Array.from({ length: k }, (_, l) => (l === 0 ? 'src[i]' : `src[i + ${l}u]`)).join(', ');
  const values: Record<string, string> = {
    N: `const N: u32 = ${n}u;`,
    RESIDENT: `const RESIDENT: bool = ${shape.resident};`,
    NV: `const NV: u32 = ${shape.resident ? n : 1}u;`,
    VF: `alias VF = vec${shape.k}<f32>;`,
    VU: `alias VU = vec${shape.k}<u32>;`,
    VB: `alias VB = vec${shape.k}<bool>;`,
    K: `const K: u32 = ${shape.k}u;`,
    RPI: `const RPI: u32 = ${shape.rpi}u;`,
    SRC_T: `alias SRC_T = ${vectorIo ? 'VF' : 'f32'};`,
    MEAN_T: `alias MEAN_T = ${vectorIo ? 'VF' : 'f32'};`,
    COUNT_T: `alias COUNT_T = ${vectorIo ? 'VU' : 'u32'};`,
    LOAD: vectorIo ? 'let r = src[i / K];' : `let r = VF(${lanes});`,
    STORE: vectorIo
      ? 'if (inrow[0]) { mean_out[i / K] = mean; count_out[i / K] = count; }'
      : 'for (var l = 0u; l < K; l++) { if (inrow[l]) { mean_out[i + l] = mean[l]; count_out[i + l] = count[l]; } }',
  };
  const seen = new Set<string>();
  let lines = source.split('\n').map((line) => {
    const m = /^(\s*).*?(\/\/ @template (\w+).*)$/.exec(line);
    if (!m || line.trimStart().startsWith('//')) return line;
    const name = m[3]!;
    const value = values[name];
    if (value === undefined) throw new GpuError('SHADER_INVALID', `stack.wgsl: unknown template name ${name}`);
    seen.add(name);
    return `${m[1]}${value} ${m[2]}`;
  });
  for (const name of Object.keys(values)) if (!seen.has(name)) throw new GpuError('SHADER_INVALID', `stack.wgsl: template line ${name} missing`);
  if (shape.resident) lines = unrollLoops(lines, { N: n, RPI: shape.rpi });
  return lines.join('\n');
}

const UNROLL_OPEN = /^(\s*)for \(var (\w+) = 0u; \2 < (N|RPI); \2\+\+\) \{ \/\/ @unroll\s*$/;
const UNROLL_CLOSE = /^\s*\} \/\/ @end-unroll\s*$/;

/**
 * Repeats each `for (var i = 0u; i < N; i++) { // @unroll` (or `i < RPI`) loop up to its matching
 * `} // @end-unroll` N (RPI) times with i replaced by a literal (also used by reject-noise.ts).
 */
export function unrollLoops(lines: string[], counts: Record<'N' | 'RPI', number>, file = 'stack.wgsl'): string[] {
  const out: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const open = UNROLL_OPEN.exec(lines[i]!);
    if (!open) {
      if (UNROLL_CLOSE.test(lines[i]!)) throw new GpuError('SHADER_INVALID', `${file}:${i + 1}: @end-unroll without @unroll`);
      out.push(lines[i]!);
      continue;
    }
    let depth = 1;
    let j = i + 1;
    for (; j < lines.length; j++) {
      if (UNROLL_OPEN.test(lines[j]!)) depth++;
      else if (UNROLL_CLOSE.test(lines[j]!) && --depth === 0) break;
    }
    if (j === lines.length) throw new GpuError('SHADER_INVALID', `${file}:${i + 1}: @unroll without @end-unroll`);
    const [, indent, index, bound] = open;
    const n = counts[bound as 'N' | 'RPI'];
    const body = unrollLoops(lines.slice(i + 1, j), counts, file);
    const ident = new RegExp(`(?<![\\w.])${index}(?!\\w)`, 'g');
    for (let f = 0; f < n; f++) {
      out.push(`${indent}{`);
      for (const line of body) out.push(line.replace(ident, `${f}u`));
      out.push(`${indent}}`);
    }
    i = j;
  }
  return out;
}

/**
 * The stack pipeline for N frames, method and shape (cached per context). `vectorIo` (one
 * vector access per K pixels) needs width % K == 0 so every row starts on a vector boundary.
 */
export function stackPipeline(ctx: GpuContext, n: number, method: StackParams['method'], shape: StackShape, vectorIo: boolean, ranges: Pick<SrcRanges, 'count' | 'framesPerRange' | 'alignElems'> = ONE_RANGE): Promise<KernelPipeline> {
  const split = ranges.count > 1 ? `,ranges=${ranges.count}x${ranges.framesPerRange}/${ranges.alignElems}` : '';
  const key = `N=${n},resident=${shape.resident},K=${shape.k},RPI=${shape.rpi},vectorIo=${vectorIo}${split}`;
  return ctx.pipeline('stack', { WG: shape.wg, METHOD: METHOD_CODE[method] }, { key, transform: (source) => expandSrcRanges(expandStackTemplate(source, n, shape, vectorIo), ranges, STACK_SRC_BINDING, 'VF', 'stack.wgsl'), extraBindings: extraSrcBindings(ranges.count) });
}

const ONE_RANGE = { count: 1, framesPerRange: 0, alignElems: 1 };
/** Binding of the stack kernel's second source window (bindings 1-4 are taken). */
const STACK_SRC_BINDING = 5;

/** The uniform block: header, then scale[N], offset[N], weight[N] as f32 in vec4 slots. */
export function packStackUniform(p: StackParams, rowOffset: number, layout: SrcLayout = { rows: p.rows, row0: 0 }): Uint8Array {
  const n = p.frames;
  const { scale, offset, weight } = frameParams(p);
  const header = packUniform([
    ['u32', p.width],
    ['u32', p.rows],
    ['u32', rowOffset],
    ['u32', p.maxIters],
    ['f32', p.low],
    ['f32', p.high],
    ['f32', p.minFraction],
    ['f32', p.winsorK ?? 1.5],
    ['f32', winsorCorrection(p.winsorK ?? 1.5)],
    ['u32', layout.rows],
    ['u32', layout.row0],
  ]);
  if (header.byteLength !== HEADER_BYTES) throw new Error('stack: uniform header layout changed');
  const slots = Math.ceil((3 * n) / 4) * 4;
  const bytes = new Uint8Array(HEADER_BYTES + slots * 4);
  bytes.set(header);
  const table = new Float32Array(bytes.buffer, HEADER_BYTES, slots);
  table.set(scale, 0);
  table.set(offset, n);
  table.set(weight, 2 * n);
  return bytes;
}

/**
 * Where the stacked rows sit in `src`: each frame holds `rows` rows there and the band's rows are
 * rows `row0 .. row0 + params.rows` of them (default: a compact band, rows = params.rows, row0 = 0).
 * Lets STACKING stack the owned rows of its work slots (halo rows around them) in place.
 */
export interface SrcLayout {
  rows: number;
  row0: number;
}

export interface StackGpuOptions {
  /** Override the measured shape (tests and benchmarks). */
  shape?: Partial<StackShape>;
  /** stackGpu only: at most this many rows per band (tests of the band loop). */
  bandRows?: number;
  /** stackResident only: the band's rows inside larger frame slots. */
  layout?: SrcLayout;
  /** stackResident only: the storage-binding size the source windows must fit (tests force several ranges with it). */
  maxBindingBytes?: number;
}

/**
 * Stacks one band held on the device. `src` holds N x rows x width f32 (frame-major); `mean`
 * (f32) and `count` (u32) receive rows x width values; `rejected` (2N u32: low then high per
 * frame) is ADDED to. Encoded into `encoder` when given (submit it yourself), else submitted.
 */
export async function stackResident(
  ctx: GpuContext,
  src: BindingResource,
  mean: BindingResource,
  count: BindingResource,
  rejected: BindingResource,
  params: StackParams,
  encoder?: GPUCommandEncoder,
  options: StackGpuOptions = {},
): Promise<void> {
  validateStackParams(params);
  const n = params.frames;
  const max = maxStackFrames(ctx.limits);
  if (n > max) throw new GpuError('BAD_ARGUMENT', `stack: ${n} frames exceed the ${max} one dispatch can take (uniform and workgroup limits)`);
  const shape: StackShape = { ...stackShape(n), ...options.shape };
  if (shape.resident && n > 4 * RESIDENT_MAX_FRAMES) throw new GpuError('BAD_ARGUMENT', `stack: resident shape for ${n} frames would not compile in reasonable time`);
  if (shape.wg * shape.k * shape.rpi >= 65536) throw new GpuError('BAD_ARGUMENT', 'stack: WG * K * RPI must stay below 65536 (packed tallies)');
  const layout = options.layout ?? { rows: params.rows, row0: 0 };
  if (!(Number.isInteger(layout.rows) && Number.isInteger(layout.row0) && layout.row0 >= 0 && layout.row0 + params.rows <= layout.rows)) {
    throw new GpuError('BAD_ARGUMENT', `stack: band rows ${layout.row0}..${layout.row0 + params.rows} outside the ${layout.rows} rows per frame of src`);
  }
  const maxBinding = options.maxBindingBytes ?? ctx.limits.maxStorageBufferBindingSize;
  const ranges = splitSrc(src, n, layout.rows * params.width, maxBinding, ctx.limits.minStorageBufferOffsetAlignment, maxSrcRanges(ctx.limits, STACK_OTHER_STORAGE));
  const kernel = await stackPipeline(ctx, n, params.method, shape, params.width % shape.k === 0, ranges);
  const maxGroups = ctx.limits.maxComputeWorkgroupsPerDimension;
  const groupsX = Math.ceil(Math.ceil(params.width / shape.k) / shape.wg);
  if (groupsX > maxGroups) throw new GpuError('BAD_ARGUMENT', `stack: width ${params.width} needs ${groupsX} workgroups per row, over ${maxGroups}`);
  const own = encoder ?? ctx.device.createCommandEncoder({ label: 'stack' });
  // Rows beyond the per-dimension limit go into further dispatches with a row offset.
  const rowsPerDispatch = maxGroups * shape.rpi;
  for (let row0 = 0; row0 < params.rows; row0 += rowsPerDispatch) {
    const uniform = ctx.uniform(packStackUniform(params, row0, layout));
    ctx.retire(uniform);
    const group = ctx.bindGroup(kernel, ranges.count === 1 ? [uniform, src, mean, count, rejected] : [uniform, ranges.windows[0]!, mean, count, rejected, ...ranges.windows.slice(1)]);
    ctx.dispatch('stack', kernel, group, [groupsX, Math.ceil(Math.min(rowsPerDispatch, params.rows - row0) / shape.rpi)], own);
  }
  if (!encoder) ctx.submit(own);
}

/**
 * Host to host: stacks `frames` (frame-major N x rows x width f32) in bands that fit the
 * storage-binding limit, with exact per-pixel rejection over all N frames.
 */
export async function stackGpu(ctx: GpuContext, frames: Float32Array, params: StackParams, options: StackGpuOptions = {}): Promise<StackResult> {
  validateStackParams(params, frames.length);
  const { width, rows, frames: n } = params;
  const plan = planBands({
    width,
    height: rows,
    frames: n,
    bytesPerPixel: 4,
    outputBytesPerPixel: 8,
    haloRows: 0,
    budgetBytes: Math.min(ctx.pool.limitBytes, ctx.limits.maxBufferSize),
    maxBindingBytes: ctx.limits.maxStorageBufferBindingSize,
    minRows: 1,
  });
  const rowsPerBand = Math.min(plan.rowsPerBand, options.bandRows ?? Infinity);
  const plane = width * rows;
  const mean = new Float32Array(plane);
  const count = new Uint32Array(plane);
  const bandPixels = rowsPerBand * width;
  const src = ctx.storage(n * bandPixels * 4, 'stack frames');
  const meanBuf = ctx.storage(bandPixels * 4, 'stack mean');
  const countBuf = ctx.storage(bandPixels * 4, 'stack count');
  const rejected = ctx.storage(2 * n * 4, 'stack rejected');
  // Both outputs go to mappable staging buffers in the band's own submit, and are read straight
  // from the mapped ranges: one submit and one host copy per output and band.
  const stagingUsage = GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST;
  const meanStage = ctx.pool.acquire(bandPixels * 4, stagingUsage, 'stack mean readback');
  const countStage = ctx.pool.acquire(bandPixels * 4, stagingUsage, 'stack count readback');
  try {
    ctx.write(rejected, new Uint32Array(2 * n));
    for (let y0 = 0; y0 < rows; y0 += rowsPerBand) {
      const bandRows = Math.min(rowsPerBand, rows - y0);
      const pixels = bandRows * width;
      for (let f = 0; f < n; f++) {
        const from = f * plane + y0 * width;
        ctx.write(src, frames.subarray(from, from + pixels), f * pixels * 4);
      }
      const encoder = ctx.device.createCommandEncoder({ label: 'stack band' });
      await stackResident(ctx, src, meanBuf, countBuf, rejected, { ...params, rows: bandRows }, encoder, options);
      encoder.copyBufferToBuffer(meanBuf, 0, meanStage, 0, pixels * 4);
      encoder.copyBufferToBuffer(countBuf, 0, countStage, 0, pixels * 4);
      ctx.submit(encoder);
      await Promise.all([meanStage.mapAsync(GPUMapMode.READ, 0, pixels * 4), countStage.mapAsync(GPUMapMode.READ, 0, pixels * 4)]);
      mean.set(new Float32Array(meanStage.getMappedRange(0, pixels * 4)), y0 * width);
      count.set(new Uint32Array(countStage.getMappedRange(0, pixels * 4)), y0 * width);
      meanStage.unmap();
      countStage.unmap();
    }
    const tallies = new Uint32Array(await ctx.readback(rejected, 2 * n * 4));
    return { mean, count, rejectedLow: tallies.slice(0, n), rejectedHigh: tallies.slice(n) };
  } finally {
    for (const b of [src, meanBuf, countBuf, rejected, meanStage, countStage]) ctx.pool.release(b);
  }
}
