// Wrappers for shaders/warp/bilinear.wgsl, shaders/warp/lanczos3.wgsl (2-D Lanczos-3) and
// shaders/warp/lanczos3_rows.wgsl + lanczos3_cols.wgsl (separable Lanczos-3, two passes):
// uniform layouts, dispatch math, the choice of the Lanczos path (separable where
// separableValid(), i.e. near-identity transforms; else the 2-D kernel's shape) and the
// source-band check. The contract
// (geometry, NaN and deringing rules, fixed-point displacement) is defined by the TypeScript reference
// in src/cpu/warp.ts.
// Invariants: a dispatch never reads outside the bound buffers (indices are clamped in WGSL);
// the source band covers sourceRowsFor() of the output band (refused otherwise, as in the
// reference); the grouped Lanczos shape is only used for transforms it is valid for.

import { CLAMP_CODE, FIX, SNAP, checkBandCoverage, resolveWarpParams, separableRowDisplacement, separableRows, separableValid, sourceRowsFor, type WarpKernel, type WarpParams } from '../../cpu/warp.js';
import type { GridGeometry } from '../../algorithms/local-normalization.js';
import { LN_EXTRA_PIECES, lnColumnTable, lnColumnTableFloats, lnRowTable } from '../../cpu/ln-apply.js';
import type { GpuContext } from '../context.js';
import { packUniform, type UniformField } from '../dispatch.js';
import { GpuError } from '../errors.js';
import type { KernelId } from '../registry.js';

export { sourceRowsFor } from '../../cpu/warp.js';
export type { Affine, WarpClamp, WarpKernel, WarpParams } from '../../cpu/warp.js';

/**
 * Workgroup sizes and bilinear pixels per invocation, measured on llvmpipe (4096×2048, median of
 * 5): bilinear 4 px × WG 256; Lanczos grouped WG 64 / 128 / 256
 * = 142 / 144 / 151 ms, one-pixel WG 64 / 128 / 256 = 258 / 241 / 236 ms (differences near noise).
 * Groups of 8 (2048×1536 calibrated frame, 0.3° rotation, best process CPU of 5–7 on a loaded
 * machine): WG 16 / 32 / 64 / 128 / 256 = 92 / 92 / 89 / 82–90 / 82–84 ms; groups of 4 at WG 64
 * took 100–108 ms.
 */
const BILINEAR = { id: 'warp_bilinear' as KernelId, WG: 256, PX: 4 };
const LANCZOS = { id: 'warp_lanczos3' as KernelId, WG_GROUP: { 4: 64, 8: 128 }, WG_SINGLE: 256 };
const SEPARABLE = { rows: 'warp_lanczos3_rows' as KernelId, cols: 'warp_lanczos3_cols' as KernelId, WG_ROWS: 64, WG_COLS: 64, GROUP: 8 };

/**
 * Lanczos kernel shape: `group` 8 or 4 = that many adjacent output pixels share one 7×14 or
 * 7×10 source window (on llvmpipe group 4 is about 1.7× faster than one pixel per invocation,
 * group 8 ~10 % less CPU again), 1 = one pixel per invocation. `flip` takes each group right to
 * left (mirrored x, e.g. a meridian flip). The grouped shapes do the same arithmetic per pixel
 * (exact positions, same weights and summation order); results agree to f32 rounding (the
 * driver may schedule the arithmetic differently per shape: 1 ulp seen on llvmpipe).
 */
export interface LanczosShape {
  group: 1 | 4 | 8;
  flip: boolean;
}

/**
 * The fastest valid Lanczos shape for a transform (`widest`: the largest group to consider).
 * A grouped shape needs the footprints of its GROUP adjacent output pixels to lie within one
 * source column and one source row of each other: over GROUP − 1 pixel steps the (exact,
 * fixed-point) displacement moves by (GROUP − 1)·|a00 ∓ 1| and (GROUP − 1)·|a10|, which must
 * stay below 1 (less the 2^-20 snapping on each side).
 */
export function lanczosShape(params: WarpParams, widest: 4 | 8 = 8): LanczosShape {
  const { q } = resolveWarpParams(params).disp;
  for (const group of [8, 4] as const) {
    if (group > widest) continue;
    const step = (v: number) => (group - 1) * Math.abs(v / FIX) + 2 * SNAP < 1;
    if (step(q[3]) && step(q[0])) return { group, flip: false };
    if (step(q[3]) && step(q[0] + 2 * FIX)) return { group, flip: true };
  }
  return { group: 1, flip: false };
}

/** A fixed-point coefficient as the (hi: i32, lo: u32) words of the WGSL `Fix` (value = hi·2^32 + lo). */
function words(v: number): UniformField[] {
  const hi = Math.floor(v / FIX);
  return [
    ['i32', hi],
    ['u32', v - hi * FIX],
  ];
}

/**
 * Whether the separable column pass can fuse `ln`: it interpolates a group's 8 rows from their
 * linear pieces of the grid's y axis and assumes at most two (one node row inside the group), so
 * node rows must be at least a group apart (grids finer than that take the 2-D kernel).
 */
export function separableLnValid(ln: WarpLn | null): boolean {
  return !ln || ln.grid.ny === 1 || Math.fround(ln.grid.dy) >= SEPARABLE.GROUP;
}

/**
 * The shader's LN override: 0 off; 1 when a group's pixels span at most two node intervals
 * (node spacing >= GROUP: over GROUP − 1 pixels the node coordinate moves by < 1), so the group
 * loads its three nodes once; 2 (finer grids, or one pixel per invocation) looks up each pixel's.
 */
export function lnMode(ln: WarpLn | null, group: number): 0 | 1 | 2 {
  if (!ln) return 0;
  return group > 1 && Math.fround(ln.grid.dx) >= group ? 1 : 2;
}

function uniformBlock(params: WarpParams, flip: boolean, ln: WarpLn | null = null, rows: { row0: number; rows: number } | null = null): Uint8Array {
  const { disp, clamp, minWeight } = resolveWarpParams(params);
  return packUniform([
    ...disp.q.flatMap(words),
    ['f32', minWeight],
    ['u32', CLAMP_CODE[clamp]],
    ['u32', params.width],
    ['u32', params.y0],
    ['u32', params.rows],
    ['u32', params.srcWidth],
    ['u32', params.srcHeight],
    ['u32', params.srcY0],
    ['u32', params.srcRows],
    ['u32', flip ? 1 : 0],
    // Lanczos' local-normalization fields (the bilinear struct ends before them).
    ['u32', ln?.grid.nx ?? 1],
    ['u32', rows?.rows ?? 1],
    ['u32', rows?.row0 ?? 0],
    ['u32', 0],
    ['f32', ln?.grid.x0 ?? 0],
    ['f32', ln?.grid.dx ?? 1],
    ['f32', 0],
    ['f32', 0],
  ]);
}

/**
 * Local normalization fused into the Lanczos warp's store: the frame's model on its grid and a
 * device buffer of at least lnTableBytes() for the band, into which the warp writes the table
 * its kernel reads (queue order: the write lands before the dispatch; the buffer may be reused
 * by the next call recorded after this one's submit). The 2-D kernel reads the model interpolated
 * to each output row (src/cpu/ln-apply.ts lnRowTable; shaders/warp/lanczos3.wgsl, LN = 1, 2), the
 * separable column pass the straight lines along each column (lnColumnTable). Same result as the
 * warp followed by lnApply of the band, to f32 rounding.
 */
export interface WarpLn {
  grid: GridGeometry;
  /** One frame's (a, b) per node, row-major: nx × ny × 2 (a frame's slice of packLnCoefficients). */
  coefficients: ArrayLike<number>;
  table: GPUBuffer;
}

/** Bytes of the table a warp of `rows` output rows, `width` wide, writes (either kernel's). */
export function lnTableBytes(grid: GridGeometry, rows: number, width: number): number {
  return 4 * Math.max(rows * grid.nx * 2, lnColumnTableFloats(grid, rows, width));
}

/**
 * A linear bound of lnTableBytes for the band planner: at most `fixed` + rows·width·`perPixel`
 * bytes for a band of any rows (the row table's rows·nx·8, the column table's pieces, at most
 * rows/dy + 1 + LN_EXTRA_PIECES of width·16 bytes: lnMaxPieces).
 */
export function lnTableBound(grid: GridGeometry, width: number): { fixed: number; perPixel: number } {
  return { fixed: (1 + LN_EXTRA_PIECES) * width * 16, perPixel: (8 * grid.nx) / width + 16 / Math.fround(grid.dy) };
}

/** Host scratch for the tables, one per context (written to the device at once, then reused). */
const lnHost = new WeakMap<GpuContext, Float32Array>();

function lnHostScratch(ctx: GpuContext, floats: number): Float32Array {
  let a = lnHost.get(ctx);
  if (!a || a.length < floats) lnHost.set(ctx, (a = new Float32Array(floats)));
  return a;
}

/** Writes the 2-D kernel's row table for the output band; returns its (row0, rows). */
function writeLnRows(ctx: GpuContext, params: WarpParams, ln: WarpLn): { row0: number; rows: number } {
  const table = lnRowTable(ln.grid, ln.coefficients, params.y0, params.rows, lnHostScratch(ctx, params.rows * ln.grid.nx * 2));
  ctx.write(ln.table, table);
  return { row0: params.y0, rows: params.rows };
}

/** Writes the separable column pass's column table for the output band; returns its pieces. */
function writeLnColumns(ctx: GpuContext, params: WarpParams, ln: WarpLn): { firstPiece: number; pieces: number } {
  const t = lnColumnTable(ln.grid, ln.coefficients, params.y0, params.rows, lnHostScratch(ctx, lnColumnTableFloats(ln.grid, params.rows, params.width)));
  ctx.write(ln.table, t.table);
  return { firstPiece: t.firstPiece, pieces: t.pieces };
}

export interface WarpGpuOptions {
  /**
   * Lanczos only: force the one-pixel shape, groups of at most 4, the 2-D kernel's best shape
   * ('2d') or the separable two-pass kernels ('separable', refused where separableValid() is
   * false) (tests, benchmarks); default ('auto') picks the separable path where it is valid, else
   * lanczosShape().
   */
  lanczosShape?: 'auto' | 'group4' | 'single' | '2d' | 'separable';
  /** Lanczos only: local normalization applied as each output value is stored (WarpLn). */
  ln?: WarpLn | null;
  /**
   * Host to host only: the array the output rows are read back into (at least rows × width
   * values; the result is a view of it), e.g. a frame's slot of a host band, instead of a fresh
   * array per call (STACKING with the stack on the host warps every frame of every band).
   */
  into?: Float32Array;
}

function coverage(kernel: WarpKernel, params: WarpParams): void {
  try {
    checkBandCoverage(kernel, params);
  } catch (e) {
    throw new GpuError('BAD_ARGUMENT', (e as Error).message);
  }
}

function checkLn(id: KernelId, params: WarpParams, ln: WarpLn): void {
  if (ln.grid.width !== params.width) throw new GpuError('BAD_ARGUMENT', `${id}: local-normalization grid of width ${ln.grid.width} for an output of width ${params.width}`);
  if (ln.coefficients.length < ln.grid.nx * ln.grid.ny * 2) throw new GpuError('BAD_ARGUMENT', `${id}: ${ln.coefficients.length} local-normalization coefficients for ${ln.grid.nx}×${ln.grid.ny} nodes`);
  const need = lnTableBytes(ln.grid, params.rows, params.width);
  if (ln.table.size < need) throw new GpuError('BAD_ARGUMENT', `${id}: local-normalization table buffer of ${ln.table.size} bytes, the band needs ${need}`);
}

/** Where a warp writes: a whole buffer, or a range of one (e.g. a frame's slot of a band). */
export type WarpTarget = GPUBuffer | { buffer: GPUBuffer; offset: number; size: number };

/** The separable kernels' uniform block (lanczos3_rows.wgsl's Params). */
function separableUniform(params: WarpParams, irows: number, ln: WarpLn | null, cols: { firstPiece: number; pieces: number } | null): Uint8Array {
  const { disp, clamp, minWeight } = resolveWarpParams(params);
  return packUniform([
    ...disp.q.flatMap(words),
    ...separableRowDisplacement(params.affine).flatMap(words),
    ['i32', 0],
    ['u32', 0],
    ['f32', minWeight],
    ['u32', CLAMP_CODE[clamp]],
    ['u32', params.width],
    ['u32', params.y0],
    ['u32', params.rows],
    ['u32', params.srcWidth],
    ['u32', params.srcHeight],
    ['u32', params.srcY0],
    ['u32', params.srcRows],
    ['u32', irows],
    ['u32', ln?.grid.nx ?? 1],
    ['u32', ln?.grid.ny ?? 1],
    ['i32', cols?.firstPiece ?? 0],
    ['u32', cols?.pieces ?? 1],
    ['f32', ln?.grid.x0 ?? 0],
    ['f32', ln?.grid.dx ?? 1],
    ['f32', ln?.grid.y0 ?? 0],
    ['f32', ln?.grid.dy ?? 1],
  ]);
}

/**
 * The separable path's intermediate planes, one pair per context, grown when a band needs more
 * and otherwise reused by every call: dispatches run in submission order, so calls recorded into
 * one encoder (a frame's channels) can share it. (Pooled pairs retired at each submit held one
 * pair per channel of a frame and one set per band height.)
 */
const scratch = new WeakMap<GpuContext, { inter: GPUBuffer; aux: GPUBuffer; bytes: number }>();

function scratchFor(ctx: GpuContext, bytes: number): { inter: GPUBuffer; aux: GPUBuffer } {
  const have = scratch.get(ctx);
  if (have && have.bytes >= bytes) return have;
  if (have) {
    ctx.retire(have.inter);
    ctx.retire(have.aux);
  }
  const next = { inter: ctx.storage(bytes, 'warp intermediate'), aux: ctx.storage(bytes, 'warp intermediate aux'), bytes };
  scratch.set(ctx, next);
  return next;
}

function separableFits(ctx: GpuContext, params: WarpParams): boolean {
  return separableRows(params.affine, params.rows) * params.width * 4 <= Math.min(ctx.limits.maxStorageBufferBindingSize, ctx.limits.maxBufferSize);
}

/**
 * The separable Lanczos-3 path (src/cpu/warp.ts warpLanczos3Separable): the row pass into the
 * context's intermediate planes (scratchFor: irows × width words each), then the column pass
 * into `out`.
 */
async function warpSeparable(ctx: GpuContext, src: GPUBuffer, out: WarpTarget, params: WarpParams, ln: WarpLn | null, encoder?: GPUCommandEncoder): Promise<void> {
  const irows = separableRows(params.affine, params.rows);
  const planeBytes = irows * params.width * 4;
  if (planeBytes > Math.min(ctx.limits.maxStorageBufferBindingSize, ctx.limits.maxBufferSize)) throw new GpuError('BAD_ARGUMENT', `${SEPARABLE.rows}: intermediate of ${planeBytes} bytes exceeds the storage binding limit`);
  const rowsPipe = await ctx.pipeline(SEPARABLE.rows, { WG: SEPARABLE.WG_ROWS });
  const colsPipe = await ctx.pipeline(SEPARABLE.cols, { WG: SEPARABLE.WG_COLS, LN: ln ? 1 : 0 });
  const uniform = ctx.uniform(separableUniform(params, irows, ln, ln ? writeLnColumns(ctx, params, ln) : null));
  const { inter, aux } = scratchFor(ctx, planeBytes);
  const own = encoder ?? ctx.device.createCommandEncoder({ label: 'warp separable' });
  ctx.dispatch(SEPARABLE.rows, rowsPipe, ctx.bindGroup(rowsPipe, [uniform, src, inter, aux]), [Math.ceil(params.width / (SEPARABLE.GROUP * SEPARABLE.WG_ROWS)), irows], own);
  ctx.dispatch(SEPARABLE.cols, colsPipe, ctx.bindGroup(colsPipe, [uniform, inter, aux, out, ln ? ln.table : inter]), [Math.ceil(params.width / SEPARABLE.WG_COLS), Math.ceil(((params.y0 % SEPARABLE.GROUP) + params.rows) / SEPARABLE.GROUP)], own);
  ctx.retire(uniform);
  if (!encoder) ctx.submit(own);
}

async function warpResident(kernel: WarpKernel, ctx: GpuContext, src: GPUBuffer, out: WarpTarget, params: WarpParams, encoder?: GPUCommandEncoder, options: WarpGpuOptions = {}, checked = false): Promise<void> {
  resolveWarpParams(params);
  if (!checked) coverage(kernel, params);
  if (params.rows === 0) return;
  const srcBytes = params.srcRows * params.srcWidth * 4;
  const outBytes = params.rows * params.width * 4;
  const id = kernel === 'bilinear' ? BILINEAR.id : LANCZOS.id;
  if (src.size < Math.max(srcBytes, 4)) throw new GpuError('BAD_ARGUMENT', `${id}: source buffer has ${src.size} bytes, the band needs ${srcBytes}`);
  const outSize = 'buffer' in out ? Math.min(out.size, out.buffer.size - out.offset) : out.size;
  if (outSize < outBytes) throw new GpuError('BAD_ARGUMENT', `${id}: output range has ${outSize} bytes, the band needs ${outBytes}`);
  let overrides: Record<string, number>;
  let perInvocation: number;
  let flip = false;
  if (kernel === 'bilinear') {
    overrides = { WG: BILINEAR.WG, PX: BILINEAR.PX };
    perInvocation = BILINEAR.PX * BILINEAR.WG;
  } else {
    const mode = options.lanczosShape ?? 'auto';
    const ln = options.ln ?? null;
    if (mode === 'separable' && !separableValid(params)) throw new GpuError('BAD_ARGUMENT', `${id}: the separable path does not apply to [${params.affine.join(', ')}]`);
    if (mode === 'separable' && !separableLnValid(ln)) throw new GpuError('BAD_ARGUMENT', `${id}: the separable path's fused local normalization needs node rows at least ${SEPARABLE.GROUP} px apart (grid dy ${ln!.grid.dy})`);
    // (An intermediate plane past the binding limit, rows + ~8 of the output's width, takes the 2-D kernel.)
    if (mode === 'separable' || (mode === 'auto' && separableValid(params) && separableLnValid(ln) && separableFits(ctx, params))) {
      if (ln) checkLn(id, params, ln);
      return warpSeparable(ctx, src, out, params, ln, encoder);
    }
    const shape: LanczosShape = options.lanczosShape === 'single' ? { group: 1, flip: false } : lanczosShape(params, options.lanczosShape === 'group4' ? 4 : 8);
    const WG = shape.group === 1 ? LANCZOS.WG_SINGLE : LANCZOS.WG_GROUP[shape.group];
    overrides = { WG, GROUP: shape.group, LN: lnMode(options.ln ?? null, shape.group) };
    perInvocation = shape.group * WG;
    flip = shape.flip;
  }
  const pipeline = await ctx.pipeline(id, overrides);
  if (options.ln && kernel !== 'lanczos3') throw new GpuError('BAD_ARGUMENT', `${id}: local normalization is fused into the Lanczos warp only`);
  const ln = options.ln ?? null;
  if (ln) checkLn(id, params, ln);
  const uniform = ctx.uniform(uniformBlock(params, flip, ln, ln ? writeLnRows(ctx, params, ln) : null));
  ctx.retire(uniform);
  const workgroups: [number, number] = [Math.ceil(params.width / perInvocation), params.rows];
  // Lanczos' binding 3 (the table) is statically used, so it is always bound: the source stands in when LN = 0 (never read).
  const bindings = kernel === 'lanczos3' ? [uniform, src, out, ln ? ln.table : src] : [uniform, src, out];
  ctx.dispatch(id, pipeline, ctx.bindGroup(pipeline, bindings), workgroups, encoder);
}

/**
 * Bilinear warp of the output band (params.y0, params.rows) from the resident source band
 * `src` (params.srcRows rows from params.srcY0, covering sourceRowsFor()) into `out`
 * (rows × width f32; a buffer or a range of one, its offset a multiple of
 * minStorageBufferOffsetAlignment), encoded into `encoder` if given.
 */
export function warpBilinearResident(ctx: GpuContext, src: GPUBuffer, out: WarpTarget, params: WarpParams, encoder?: GPUCommandEncoder): Promise<void> {
  return warpResident('bilinear', ctx, src, out, params, encoder);
}

/** Lanczos-3 warp of a resident band; see warpBilinearResident. */
export function warpLanczos3Resident(ctx: GpuContext, src: GPUBuffer, out: WarpTarget, params: WarpParams, encoder?: GPUCommandEncoder, options?: WarpGpuOptions): Promise<void> {
  // (options.ln: local normalization fused into the store, WarpLn.)
  return warpResident('lanczos3', ctx, src, out, params, encoder, options);
}

/**
 * Host to host: warps the output band from the host source band `src`. When the source rows
 * an output band needs exceed the storage-binding limit, the output is processed in smaller
 * bands, each uploading only the source rows it needs.
 */
async function warpHost(kernel: WarpKernel, ctx: GpuContext, src: Float32Array, params: WarpParams, options?: WarpGpuOptions): Promise<Float32Array> {
  resolveWarpParams(params);
  if (src.length < params.srcRows * params.srcWidth) throw new GpuError('BAD_ARGUMENT', `warp_${kernel}: source holds ${src.length} values, the band needs ${params.srcRows * params.srcWidth}`);
  coverage(kernel, params);
  const { width, srcWidth } = params;
  const n = params.rows * width;
  if (options?.into && options.into.length < n) throw new GpuError('BAD_ARGUMENT', `warp_${kernel}: output array holds ${options.into.length} values, the band needs ${n}`);
  const result = options?.into ? options.into.subarray(0, n) : new Float32Array(n);
  const maxBinding = Math.min(ctx.limits.maxStorageBufferBindingSize, ctx.limits.maxBufferSize);
  const end = params.y0 + params.rows;
  let y = params.y0;
  let step = params.rows;
  while (y < end) {
    const rows = Math.min(step, end - y);
    const need = sourceRowsFor(params.affine, y, rows, width, params.srcHeight, kernel);
    if ((need.rows * srcWidth * 4 > maxBinding || rows * width * 4 > maxBinding) && rows > 1) {
      step = Math.ceil(rows / 2);
      continue;
    }
    // Rows a sub-band reads lie inside the whole band's covered rows (the extremes of an affine
    // map are at the corners; sourceRowsFor's guard row absorbs f32 rounding inside), so the
    // sub-band's own range is intersected with the supplied rows instead of being re-checked.
    const s0 = Math.max(need.y0, params.srcY0);
    const s1 = Math.min(need.y0 + need.rows, params.srcY0 + params.srcRows);
    const srcRows = Math.max(0, s1 - s0);
    const band: WarpParams = { ...params, y0: y, rows, srcY0: srcRows > 0 ? s0 : params.srcY0, srcRows };
    const offset = (band.srcY0 - params.srcY0) * srcWidth;
    // A band that maps entirely outside the source still needs a (tiny) buffer to bind.
    const input = ctx.upload(srcRows > 0 ? src.subarray(offset, offset + srcRows * srcWidth) : new Float32Array(1));
    const out = ctx.storage(rows * width * 4, 'warped');
    try {
      await warpResident(kernel, ctx, input, out, band, undefined, options, true);
      await ctx.readInto(out, result.subarray((y - params.y0) * width, (y - params.y0 + rows) * width));
    } finally {
      ctx.pool.release(input);
      ctx.pool.release(out);
    }
    y += rows;
  }
  return result;
}

/** Host to host bilinear warp of one output band (the source band as a host array). */
export function warpBilinearGpu(ctx: GpuContext, src: Float32Array, params: WarpParams, options?: Pick<WarpGpuOptions, 'into'>): Promise<Float32Array> {
  return warpHost('bilinear', ctx, src, params, options);
}

/** Host to host Lanczos-3 warp of one output band (the source band as a host array). */
export function warpLanczos3Gpu(ctx: GpuContext, src: Float32Array, params: WarpParams, options?: WarpGpuOptions): Promise<Float32Array> {
  return warpHost('lanczos3', ctx, src, params, options);
}
