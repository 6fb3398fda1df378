// Wrapper for shaders/stack/gather_window.wgsl: a column window of a band of frame slots
// (frames x slotRows x width f32 on the device) packed into frames x rows x cols, so the host
// pre-mask can bring back a window of every frame instead of whole rows. Contract and TypeScript
// reference: src/cpu/gather-window.ts (bit-identical; test/gpu/gather-window.test.ts).
// Invariants: a slot band larger than one storage binding (1000 frames x 2048 px x 20 rows is
// 164 MB, llvmpipe binds 128 MiB) is bound as consecutive frame ranges, each binding starting at
// an aligned offset at or before its first frame's window and ending at its last frame's; the
// dispatch math (frame ranges, the folded grid) lives here only.

import type { GpuContext } from '../context.js';
import { grid1d, packUniform } from '../dispatch.js';
import { GpuError } from '../errors.js';
import { checkWindow, type WindowSpec } from '../../cpu/gather-window.js';

const WG = 64;
/** vec4s per invocation of gather_window_vec4. */
const VEC_PER = 4;

/**
 * Encodes the window `spec` of `src` (its first spec.frames x slotRows x width f32) into `dst`
 * from element 0. `maxBindingBytes`: the largest source binding (default the adapter's; tests force
 * smaller ones, as a band plan over several frame ranges does).
 */
export async function gatherWindowResident(ctx: GpuContext, src: GPUBuffer, spec: WindowSpec, dst: GPUBuffer, encoder: GPUCommandEncoder, maxBindingBytes = ctx.limits.maxStorageBufferBindingSize): Promise<void> {
  checkWindow(spec, Math.floor(src.size / 4), Math.floor(dst.size / 4));
  const { frames: N, slotRows, width: W, y0, rows, x0, cols } = spec;
  if (N === 0 || rows === 0 || cols === 0) return;
  const dstBytes = 4 * N * rows * cols;
  // The packed window is one binding of the adapter's (the host pre-mask sizes it in MiB);
  // `maxBindingBytes` bounds the source ranges only.
  if (dstBytes > ctx.limits.maxStorageBufferBindingSize) throw new GpuError('BINDING_TOO_LARGE', `gather_window: a target of ${dstBytes} B exceeds one binding of ${ctx.limits.maxStorageBufferBindingSize} B`);
  // Four columns per invocation where every offset is whole vec4s (a multiple-of-4 width and
  // window): ~4x the scalar kernel's throughput on llvmpipe.
  const v = W % 4 === 0 && x0 % 4 === 0 && cols % 4 === 0 ? 4 : 1;
  const id = v === 4 ? 'gather_window_vec4' : 'gather_window';
  const kernel = await ctx.pipeline(id, v === 4 ? { WG, PER: VEC_PER } : { WG });
  const alignElems = Math.max(1, ctx.limits.minStorageBufferOffsetAlignment / 4);
  const frameElems = slotRows * W;
  const span = (rows - 1) * W + x0 + cols; // elements from a frame's window row 0, column 0 to its end
  const maxElems = Math.floor(maxBindingBytes / 4);
  // Frames per binding: the range's elements from its aligned start must fit the binding.
  let per = Math.max(1, Math.min(N, Math.floor((maxElems - alignElems - span) / frameElems) + 1));
  const fits = (n: number) => alignElems - 1 + (n - 1) * frameElems + span <= maxElems;
  while (per > 1 && !fits(per)) per--;
  if (!fits(per)) throw new GpuError('BINDING_TOO_LARGE', `gather_window: one frame's window (${4 * span} B) exceeds one binding of ${maxBindingBytes} B`);
  for (let f0 = 0; f0 < N; f0 += per) {
    const n = Math.min(per, N - f0);
    const base = (f0 * slotRows + y0) * W;
    const start = Math.floor(base / alignElems) * alignElems;
    const end = base + (n - 1) * frameElems + span;
    const total = v === 4 ? n * rows * Math.ceil(cols / 4 / VEC_PER) : n * rows * cols;
    const g = grid1d(total, WG, ctx.limits.maxComputeWorkgroupsPerDimension);
    // Counts and offsets in the kernel's units (f32, or vec4 of them: all multiples of 4 then,
    // start too as alignElems is).
    const uniform = ctx.uniform(
      packUniform([
        ['u32', cols / v],
        ['u32', rows],
        ['u32', n],
        ['u32', x0 / v],
        ['u32', (base - start) / v],
        ['u32', frameElems / v],
        ['u32', W / v],
        ['u32', (f0 * rows * cols) / v],
        ['u32', total],
        ['u32', g.gridX],
      ]),
    );
    ctx.retire(uniform);
    const size = 4 * (Math.ceil((end - start) / v) * v);
    const group = ctx.bindGroup(kernel, [uniform, { buffer: src, offset: 4 * start, size }, { buffer: dst, offset: 0, size: dstBytes }]);
    ctx.dispatch(id, kernel, group, g.workgroups, encoder);
  }
}
