// A stack kernel's source band bound as several frame ranges (stack.wgsl, reject_noise.wgsl).
// Exact global rejection needs every frame's sample of a pixel in one invocation, and the band
// (N frames x rows x width f32, frame-major) is one buffer; when it is larger than one storage
// binding (llvmpipe: 128 MiB, e.g. 1000 frames x 2048 px x 16 rows) it is bound as R windows of
// that buffer, each holding whole frames: frames [k·F, (k+1)·F) in window k (F = frames per
// range). The kernel picks the window of frame f by comparing f with k·F (constants after
// unrolling; a short if chain in the streaming shape) and indexes it from the window's first
// element E_k = alignDown(k·F·src_rows·width, A), A the offset alignment in f32 elements.
// Invariants: R = 1 leaves the shader source and its bindings exactly as written (no cost where
// one binding suffices); the windows cover the band's frames in order, each within the binding
// limit; the shader's E_k and the wrapper's window offsets are the same formula.

import type { BindingResource } from '../context.js';
import { GpuError } from '../errors.js';

/** Most source windows a kernel takes (each is a storage binding of its own). */
export const MAX_SRC_RANGES = 8;

export interface SrcRanges {
  /** Windows (R >= 1) and whole frames per window (the last may hold fewer). */
  count: number;
  framesPerRange: number;
  /** The offset alignment in f32 elements (window starts are multiples of it). */
  alignElems: number;
  windows: { buffer: GPUBuffer; offset: number; size: number }[];
}

/** Storage bindings of the stack kernel besides its source windows (mean, count, rejected). */
export const STACK_OTHER_STORAGE = 3;
/** Storage bindings of reject_noise besides its source windows (frame table, centre, background, mean, count, rejected). */
export const REJECT_OTHER_STORAGE = 6;

/** Windows every stack kernel (stack, reject_noise) can take under `limits`: what a band plan may count on. */
export function stackSrcRanges(limits: Pick<GPUSupportedLimits, 'maxStorageBuffersPerShaderStage'>): number {
  return maxSrcRanges(limits, Math.max(STACK_OTHER_STORAGE, REJECT_OTHER_STORAGE));
}

/** Most windows a kernel with `otherStorage` further storage bindings can take under `limits`. */
export function maxSrcRanges(limits: Pick<GPUSupportedLimits, 'maxStorageBuffersPerShaderStage'>, otherStorage: number): number {
  return Math.max(1, Math.min(MAX_SRC_RANGES, limits.maxStorageBuffersPerShaderStage - otherStorage));
}

/**
 * Splits `src` (frames x frameElems f32 from its offset) into the fewest windows of at most
 * `maxBinding` bytes holding whole frames (at most `maxRanges`). `align`: the binding offset
 * alignment in bytes (minStorageBufferOffsetAlignment); `src`'s offset must be a multiple of it.
 */
export function splitSrc(src: BindingResource, frames: number, frameElems: number, maxBinding: number, align: number, maxRanges: number): SrcRanges {
  const isBinding = typeof (src as { buffer?: unknown }).buffer === 'object';
  const buffer = isBinding ? (src as { buffer: GPUBuffer }).buffer : (src as GPUBuffer);
  const base = isBinding ? ((src as { offset?: number }).offset ?? 0) : 0;
  const bytes = frames * frameElems * 4;
  const alignElems = Math.max(1, align / 4);
  if (bytes <= maxBinding) return { count: 1, framesPerRange: frames, alignElems, windows: [{ buffer, offset: base, size: (isBinding ? (src as { size?: number }).size : undefined) ?? bytes }] };
  if (base % align !== 0) throw new GpuError('BAD_ARGUMENT', `source band at offset ${base} is not aligned to ${align} B: it cannot be bound as frame ranges`);
  for (let r = 2; r <= maxRanges; r++) {
    const per = Math.ceil(frames / r);
    // A window starts up to alignElems - 1 elements before its first frame.
    if (per * frameElems * 4 + (alignElems - 1) * 4 > maxBinding) continue;
    const count = Math.ceil(frames / per);
    const windows = Array.from({ length: count }, (_, k) => {
      const start = windowStart(k, per, frameElems, alignElems);
      const end = Math.min(frames, (k + 1) * per) * frameElems;
      return { buffer, offset: base + start * 4, size: (end - start) * 4 };
    });
    return { count, framesPerRange: per, alignElems, windows };
  }
  throw new GpuError('BINDING_TOO_LARGE', `a band of ${frames} frames x ${frameElems * 4} B needs more than ${maxRanges} storage bindings of ${maxBinding} B`);
}

/** The bind group layout entries the rewrite adds (bindings firstBinding..). */
export function extraSrcBindings(count: number): GPUBufferBindingType[] {
  return Array.from({ length: count - 1 }, () => 'read-only-storage' as const);
}

/** First element of window k (the shader's E_k). */
export function windowStart(k: number, framesPerRange: number, frameElems: number, alignElems: number): number {
  return Math.floor((k * framesPerRange * frameElems) / alignElems) * alignElems;
}

/**
 * Rewrites a stack kernel's source for R windows: the `src` declaration at binding 1 gets
 * R - 1 siblings src1.. at bindings firstBinding.., and the one line that loads frame f's
 * samples at element i (`let NAME = EXPR;` with `src[` in EXPR) becomes a choice of window by
 * f. Both kernels name the frame `f`, the element `i`, and the frame's rows params.src_rows.
 */
export function expandSrcRanges(source: string, ranges: Pick<SrcRanges, 'count' | 'framesPerRange' | 'alignElems'>, firstBinding: number, type: string, file: string): string {
  if (ranges.count === 1) return source;
  const lines = source.split('\n');
  const decl = lines.findIndex((l) => /^@group\(0\) @binding\(1\) var<storage, read> src: array<.+>;/.test(l));
  const loads = lines.flatMap((l, at) => (/^\s*let \w+ = .*\bsrc\[.*;/.test(l) ? [at] : []));
  if (decl < 0 || loads.length !== 1) throw new GpuError('SHADER_INVALID', `${file}: the src declaration or its one load line is not where frame ranges expect them`);
  const elem = /array<.+>/.exec(lines[decl]!)![0];
  const extra = Array.from({ length: ranges.count - 1 }, (_, k) => `@group(0) @binding(${firstBinding + k}) var<storage, read> src${k + 1}: ${elem};`);
  const at = loads[0]!;
  const m = /^(\s*)let (\w+) = (.*);(.*)$/.exec(lines[at]!)!;
  const [, indent, name, expr] = m;
  const F = ranges.framesPerRange;
  const A = ranges.alignElems;
  const body = [`${indent}var ${name}: ${type};`];
  for (let k = 0; k < ranges.count; k++) {
    const e = k === 0 ? expr! : expr!.replace(/\bsrc\[/g, `src${k}[`).replace(/(?<![\w.])i(?!\w)/g, 'j');
    const head = k === 0 ? `if (f < ${F}u) {` : k < ranges.count - 1 ? `} else if (f < ${(k + 1) * F}u) {` : '} else {';
    body.push(`${indent}${head}`);
    if (k > 0) body.push(`${indent}  let j = i - ((${k * F}u * params.src_rows * params.width) / ${A}u) * ${A}u;`);
    body.push(`${indent}  ${name} = ${e};`);
  }
  body.push(`${indent}}`);
  lines.splice(at, 1, ...body);
  lines.splice(decl + 1, 0, ...extra);
  return lines.join('\n');
}
