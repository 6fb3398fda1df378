// Opt-in GPU timing of compute passes, for benchmarks: while a PassTimer is attached to a
// GpuContext (`ctx.timer`), every pass that ctx.dispatch() encodes writes its begin and end
// timestamps into the timer's query set; collect() reads them back as per-pass durations.
// Needs the adapter's 'timestamp-query' feature (device.ts requests it when offered); nothing
// in the pipeline attaches a timer, so runs never pay for it.
// Invariants: slots are handed out in order and not reused before collect(); passes beyond the
// capacity run untimed and are counted in `untimed`, so a reader knows when a sum is partial.

/** One timed pass: the label it was dispatched with (the kernel id) and its GPU duration. */
export interface PassTime {
  label: string;
  ns: number;
}

export interface PassTimes {
  passes: PassTime[];
  /** Passes whose stamps were missing, zero or out of order (left out of `passes`). */
  invalid: number;
  /** First begin to last end of the valid passes (ms): GPU time including the gaps between passes. */
  spanMs: number;
  /** Passes encoded while the timer was full (not timed at all). */
  untimed: number;
  /**
   * Largest power of two dividing every stamp (ns): Dawn quantizes timestamps unless its
   * timestamp_quantization toggle is off, and a coarse grain bounds how short a pass can be timed.
   */
  granularityNs: number;
}

/** Durations of passes from resolved stamps (begin, end per pass, in order of `labels`). */
export function passDurations(stamps: ArrayLike<bigint>, labels: readonly string[], untimed = 0): PassTimes {
  const passes: PassTime[] = [];
  let invalid = 0;
  let bits = 0n;
  let first: bigint | null = null;
  let last: bigint | null = null;
  for (let i = 0; i < labels.length; i++) {
    const begin = stamps[2 * i];
    const end = stamps[2 * i + 1];
    // end = begin is a real reading for a pass shorter than a quantized grain.
    if (begin === undefined || end === undefined || begin === 0n || end < begin) {
      invalid++;
      continue;
    }
    bits |= begin | end;
    if (first === null || begin < first) first = begin;
    if (last === null || end > last) last = end;
    passes.push({ label: labels[i]!, ns: Number(end - begin) });
  }
  const spanMs = first === null || last === null ? 0 : Number(last - first) / 1e6;
  let granularityNs = 0;
  if (bits !== 0n) {
    granularityNs = 1;
    while ((bits & 1n) === 0n && granularityNs < 2 ** 40) {
      bits >>= 1n;
      granularityNs *= 2;
    }
  }
  return { passes, invalid, spanMs, untimed, granularityNs };
}

/** Total GPU time of the passes, in milliseconds. */
export function totalMs(times: PassTimes): number {
  return times.passes.reduce((s, p) => s + p.ns, 0) / 1e6;
}

/** Bytes of one resolved timestamp (u64 nanoseconds). Resolves go to offset 0, which meets the 256-byte alignment rule. */
const STAMP_BYTES = 8;

export class PassTimer {
  private readonly querySet: GPUQuerySet;
  private readonly resolve: GPUBuffer;
  private readonly read: GPUBuffer;
  private labels: string[] = [];
  private overflow = 0;

  /** Whether `device` can record pass timestamps. */
  static supported(device: GPUDevice): boolean {
    return device.features.has('timestamp-query');
  }

  /** `capacity`: passes timed between two collect() calls (two queries each). */
  constructor(
    private readonly device: GPUDevice,
    readonly capacity = 2048,
  ) {
    this.querySet = device.createQuerySet({ type: 'timestamp', count: 2 * capacity, label: 'pass timer' });
    const bytes = 2 * capacity * STAMP_BYTES;
    this.resolve = device.createBuffer({ size: bytes, usage: GPUBufferUsage.QUERY_RESOLVE | GPUBufferUsage.COPY_SRC, label: 'pass timer resolve' });
    this.read = device.createBuffer({ size: bytes, usage: GPUBufferUsage.MAP_READ | GPUBufferUsage.COPY_DST, label: 'pass timer read' });
  }

  /** Passes recorded since the last collect(). */
  get recorded(): number {
    return this.labels.length;
  }

  /** The timestampWrites for the next pass, or undefined once the timer is full. */
  writes(label: string): GPUComputePassTimestampWrites | undefined {
    if (this.labels.length >= this.capacity) {
      this.overflow++;
      return undefined;
    }
    const i = this.labels.length;
    this.labels.push(label);
    return { querySet: this.querySet, beginningOfPassWriteIndex: 2 * i, endOfPassWriteIndex: 2 * i + 1 };
  }

  /**
   * Reads the durations of every pass recorded since the last collect() and starts over. Call
   * after the passes were submitted: its own submit is queued behind them.
   */
  async collect(): Promise<PassTimes> {
    const labels = this.labels;
    const untimed = this.overflow;
    this.labels = [];
    this.overflow = 0;
    if (labels.length === 0) return passDurations([], [], untimed);
    const bytes = 2 * labels.length * STAMP_BYTES;
    const encoder = this.device.createCommandEncoder({ label: 'pass timer collect' });
    encoder.resolveQuerySet(this.querySet, 0, 2 * labels.length, this.resolve, 0);
    encoder.copyBufferToBuffer(this.resolve, 0, this.read, 0, bytes);
    this.device.queue.submit([encoder.finish()]);
    await this.read.mapAsync(GPUMapMode.READ, 0, bytes);
    try {
      return passDurations(new BigUint64Array(this.read.getMappedRange(0, bytes).slice(0)), labels, untimed);
    } finally {
      this.read.unmap();
    }
  }

  destroy(): void {
    this.querySet.destroy();
    this.resolve.destroy();
    this.read.destroy();
  }
}
