// Band I/O of master combining (stages/calibration/masters.ts combineFrames): a calibration file's rows
// decoded straight into the caller's array with the offset master subtracted in the same pass,
// the robust level of a decoded frame, and the device side of a band stack whose buffers
// outlive one master.
// Reading goes through FitsReader's row-range reads (readNativeRows / readRowsInto), so plain,
// gzip and tile-compressed calibration files are read alike. Why not FitsReader.readRows: it
// allocates a fresh float array per call (then copied into the band and subtracted in two more
// passes); here the samples are decoded in one reused buffer and written once into their final
// place, with the same arithmetic (native samples → physical, then f32(value - offset)), so
// masters are bit-identical to a readRows-based path.
// Invariants: a DeviceBandStack's rejected tallies accumulate over every band it stacks; its
// buffers come from the context's pool and go back with release() (same sizes next master:
// reused, not re-created).

import { medianInPlace } from '../../../algorithms/robust-stats.js';
import type { FitsReader, RowScratch, StorageKind } from '../../../fits/index.js';
import type { StackParams } from '../../../cpu/stack.js';
import type { GpuContext } from '../../../gpu/context.js';
import { stackResident } from '../../../gpu/kernels/stack.js';

/** Storage kinds whose decoded values can never be NaN (integers, unless BLANK is set). */
function integerStorage(storage: StorageKind): boolean {
  return storage !== 'float32' && storage !== 'float64';
}

/**
 * Reads rows [y0, y0 + rows) of plane 0 of `reader`'s image into out[at ..], as physical f32
 * values minus `subtract[y0 * width ..]` when given. `raw` is reusable scratch (grown when short).
 * `subtractHasNaN = false` (the caller checked the offset master once) skips counting NaN
 * results where none can occur.
 * Returns the NaN samples written (no data: BLANK, NaN pixels, NaN in the offset master).
 */
export async function readBandInto(
  reader: FitsReader,
  y0: number,
  rows: number,
  out: Float32Array,
  at: number,
  subtract: Float32Array | null | undefined,
  raw: RowScratch,
  subtractHasNaN = true,
): Promise<number> {
  const { layout } = reader;
  const { width } = layout;
  const count = rows * width;
  if (layout.storage === 'uint16' && layout.blank === undefined) {
    // Camera frames: unsigned 16-bit words are the values; with an offset master the
    // subtraction is the conversion's only pass.
    const words = (await reader.readNativeRows(y0, rows, { scratch: raw })) as Uint16Array;
    if (subtract) return subtractHasNaN ? minusCountNaN(words, out, at, count, subtract, y0 * width) : minus(words, out, at, count, subtract, y0 * width);
    out.set(words, at);
    return 0;
  }
  await reader.readRowsInto(y0, rows, out, { at, scratch: raw });
  if (subtract) return subtractCountNaN(out, at, count, subtract, y0 * width);
  return integerStorage(layout.storage) && layout.blank === undefined ? 0 : countNaN(out, at, count);
}

/** out[at + i] = f32(words[i] − sub[from + i]) (an integer below 2^16 is exact in f32). */
function minus(words: Uint16Array, out: Float32Array, at: number, n: number, sub: Float32Array, from: number): number {
  for (let i = 0; i < n; i++) out[at + i] = words[i]! - sub[from + i]!;
  return 0;
}

/** minus() that also counts NaN results (an offset master with NaN pixels). */
function minusCountNaN(words: Uint16Array, out: Float32Array, at: number, n: number, sub: Float32Array, from: number): number {
  let nan = 0;
  for (let i = 0; i < n; i++) {
    const v = words[i]! - sub[from + i]!;
    out[at + i] = v;
    if (v !== v) nan++;
  }
  return nan;
}

/** out[at + i] = f32(out[at + i] − sub[from + i]); returns how many results are NaN. */
function subtractCountNaN(out: Float32Array, at: number, n: number, sub: Float32Array, from: number): number {
  let nan = 0;
  for (let i = 0; i < n; i++) {
    const v = out[at + i]! - sub[from + i]!;
    out[at + i] = v;
    if (v !== v) nan++;
  }
  return nan;
}

/** Whether `a` holds a NaN (an offset master's dead pixels); `includes` finds NaN (SameValueZero), natively. */
export function hasNaN(a: Float32Array): boolean {
  return a.includes(NaN);
}

function countNaN(a: Float32Array, at: number, n: number): number {
  let nan = 0;
  for (let i = at, e = at + n; i < e; i++) if (a[i] !== a[i]) nan++;
  return nan;
}

/**
 * First rows of the 8 strips of 2 rows spread over the image (fewer on short images) whose
 * median is a flat's level; the same strips whether read from the file or from decoded data.
 */
export function levelStrips(height: number): { y0: number; rows: number }[] {
  const strips = Math.min(8, Math.max(1, height >> 1));
  const out: { y0: number; rows: number }[] = [];
  for (let s = 0; s < strips; s++) {
    const y0 = Math.max(0, Math.min(height - 2, Math.floor(((s + 0.5) * height) / strips) & ~1));
    out.push({ y0, rows: Math.min(2, height - y0) });
  }
  return out;
}

/** Median of the finite samples of the level strips of a whole decoded frame at data[at ..]. */
export function stripLevel(data: Float32Array, at: number, width: number, height: number): number {
  const strips = levelStrips(height);
  const values = new Float32Array(strips.reduce((a, s) => a + s.rows, 0) * width);
  let k = 0;
  for (const s of strips) {
    for (let i = at + s.y0 * width, e = i + s.rows * width; i < e; i++) {
      const v = data[i]!;
      if (Number.isFinite(v)) values[k++] = v;
    }
  }
  return medianInPlace(values.subarray(0, k));
}

/**
 * Device buffers for stacking bands of up to `slots` frames × `bandPixels`: frames are written
 * one by one into their slot (no host copy of the whole band), the mean is read back straight
 * into the master. The count output stays on the device: the caller knows the valid samples
 * from decoding (valid = survivors + rejected, so survivors are not needed).
 */
export class DeviceBandStack {
  private readonly src: GPUBuffer;
  private readonly mean: GPUBuffer;
  private readonly count: GPUBuffer;
  private readonly rejected: GPUBuffer;
  private readonly stage: GPUBuffer;

  constructor(
    private readonly ctx: GpuContext,
    readonly slots: number,
    readonly bandPixels: number,
    private readonly frames: number,
  ) {
    this.src = ctx.storage(slots * bandPixels * 4, 'master band frames');
    this.mean = ctx.storage(bandPixels * 4, 'master band mean');
    this.count = ctx.storage(bandPixels * 4, 'master band count');
    this.rejected = ctx.storage(Math.max(2 * slots, 4) * 4, 'master band rejected');
    this.stage = ctx.pool.acquire(bandPixels * 4, GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, 'master band readback');
    ctx.write(this.rejected, new Uint32Array(2 * frames));
  }

  /** Frame `f` of a band of `pixels` samples per frame (queue-ordered after earlier submits). */
  upload(f: number, data: Float32Array, pixels: number): void {
    this.ctx.write(this.src, data.subarray(0, pixels), f * pixels * 4);
  }

  /** Stacks the uploaded band and writes its mean to into[at .. at + rows × width). */
  async stack(params: StackParams, into: Float32Array, at: number): Promise<void> {
    const pixels = params.rows * params.width;
    const encoder = this.ctx.device.createCommandEncoder({ label: 'master band' });
    await stackResident(this.ctx, { buffer: this.src, size: params.frames * pixels * 4 }, this.mean, this.count, this.rejected, params, encoder);
    encoder.copyBufferToBuffer(this.mean, 0, this.stage, 0, pixels * 4);
    this.ctx.submit(encoder);
    await this.stage.mapAsync(GPUMapMode.READ, 0, pixels * 4);
    into.set(new Float32Array(this.stage.getMappedRange(0, pixels * 4)), at);
    this.stage.unmap();
  }

  /** Rejected samples over every band so far: low per frame, then high per frame. */
  async tallies(): Promise<Uint32Array> {
    return new Uint32Array(await this.ctx.readback(this.rejected, 2 * this.frames * 4));
  }

  release(): void {
    for (const b of [this.src, this.mean, this.count, this.rejected, this.stage]) this.ctx.pool.release(b);
  }
}
