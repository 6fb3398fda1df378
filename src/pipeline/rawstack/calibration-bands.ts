// Band I/O of master combining (calibration-masters.ts combineFrames): a calibration file's rows
// decoded straight into the caller's array with the offset master subtracted in the same pass,
// the robust level of a decoded frame, and the device side of a band stack whose buffers
// outlive one master.
// Why not FitsReader.readRows: it allocates a fresh float array per call (then copied into the
// band and subtracted in two more passes); here the raw bytes go into one reused buffer and are
// decoded once into their final place, with the same arithmetic (decodeSamples + toPhysical,
// then f32(value - offset)), so masters are bit-identical to the old path.
// Invariants: a DeviceBandStack's rejected tallies accumulate over every band it stacks; its
// buffers come from the context's pool and go back with release() (same sizes next master:
// reused, not re-created).

import { open } from 'node:fs/promises';
import { medianInPlace } from '../../algorithms/robust-stats.js';
import { FitsError, FitsReader, type StorageKind } from '../../fits/index.js';
import type { ImageLayout } from '../../fits/layout.js';
import { decodeSamples, toPhysical } from '../../fits/samples.js';
import type { StackParams } from '../../cpu/stack.js';
import type { GpuContext } from '../../gpu/context.js';
import { stackResident } from '../../gpu/kernels/stack.js';

/** Layout of a calibration file, validated once (header parse) and reused for every band. */
export async function fileLayout(file: string): Promise<ImageLayout> {
  const reader = await FitsReader.open(file);
  await reader.close();
  return reader.layout;
}

/** Storage kinds whose decoded values can never be NaN (integers, unless BLANK is set). */
function integerStorage(storage: StorageKind): boolean {
  return storage !== 'float32' && storage !== 'float64';
}

/**
 * Reads rows [y0, y0 + rows) of plane 0 of `file` into out[at ..], as physical f32 values minus
 * `subtract[y0 * width ..]` when given. `raw` is reusable scratch of at least rows × width ×
 * bytesPerSample bytes (a larger one is allocated when it is short). `subtractHasNaN = false`
 * (the caller checked the offset master once) skips counting NaN results where none can occur.
 * Returns the NaN samples written (no data: BLANK, NaN pixels, NaN in the offset master).
 */
export async function readBandInto(
  file: string,
  layout: ImageLayout,
  y0: number,
  rows: number,
  out: Float32Array,
  at: number,
  subtract: Float32Array | null | undefined,
  raw: { bytes: Uint8Array },
  subtractHasNaN = true,
): Promise<number> {
  const { width, bytesPerSample } = layout;
  const count = rows * width;
  const length = count * bytesPerSample;
  if (raw.bytes.byteLength < length) raw.bytes = new Uint8Array(length);
  const bytes = raw.bytes.subarray(0, length);
  const position = layout.dataOffset + y0 * width * bytesPerSample;
  let got = 0;
  const fh = await open(file, 'r');
  try {
    while (got < length) {
      const { bytesRead } = await fh.read(bytes, got, length - got, position + got);
      if (bytesRead === 0) break;
      got += bytesRead;
    }
  } finally {
    await fh.close();
  }
  if (got < length) throw new FitsError('FITS_TRUNCATED_DATA', file, `file ended while reading pixel data (got ${got} of ${length} bytes)`);
  if (layout.storage === 'uint16' && layout.blank === undefined) {
    // Camera frames: unsigned 16-bit. The value is the byte-swapped word with its sign bit
    // flipped (what decodeSamples + toPhysical compute): both done on whole buffers (the flip
    // two samples per 32-bit word), then converted by the typed-array copy, which is several
    // times faster than a per-sample loop.
    Buffer.from(bytes.buffer, bytes.byteOffset, length).swap16();
    flipSignBits16(bytes, count);
    const words = new Uint16Array(bytes.buffer, bytes.byteOffset, count);
    if (subtract) return subtractHasNaN ? minusCountNaN(words, out, at, count, subtract, y0 * width) : minus(words, out, at, count, subtract, y0 * width);
    out.set(words, at);
    return 0;
  }
  toPhysical(decodeSamples(bytes, layout.storage, bytesPerSample), layout, out, at);
  if (subtract) return subtractCountNaN(out, at, count, subtract, y0 * width);
  return integerStorage(layout.storage) && layout.blank === undefined ? 0 : countNaN(out, at, count);
}

/** XORs 0x8000 into `count` native-order 16-bit words (`bytes` 4-byte aligned, as fresh buffers are). */
function flipSignBits16(bytes: Uint8Array, count: number): void {
  const pairs = count >>> 1;
  const w = new Uint32Array(bytes.buffer, bytes.byteOffset, pairs);
  for (let i = 0; i < pairs; i++) w[i] = w[i]! ^ 0x80008000;
  if (count & 1) {
    const last = new Uint16Array(bytes.buffer, bytes.byteOffset + 2 * (count - 1), 1);
    last[0] = last[0]! ^ 0x8000;
  }
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
