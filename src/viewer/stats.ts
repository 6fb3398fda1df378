// Channel statistics for the viewer and the export, gathered while the image streams past once:
// exact finite min and max over every sample, and median, MAD and a histogram from a strided
// sample (every `stride`-th sample of the plane in storage order, at most SAMPLE_TARGET values),
// which is plenty for a screen stretch and keeps memory flat whatever the image size.
// Invariant: non-finite samples are never counted.

import { MAD_TO_SIGMA, medianInPlace, selectInPlace } from '../algorithms/robust-stats.js';
import type { ChannelStats } from '../shared/stretch-math.js';

export const SAMPLE_TARGET = 1_000_000;
export const HISTOGRAM_BINS = 1024;

export interface Histogram {
  /**
   * Left edge of bin 0 (the channel's min) and right edge of the last bin: the top of the
   * channel's core, max(p99.9, median + 12σ) capped at the max, so the sky and the faint signal
   * get the bins rather than a few bright stars; samples above are counted in `above`.
   */
  lo: number;
  hi: number;
  counts: number[];
  above: number;
}

export interface ChannelSummary extends ChannelStats {
  histogram: Histogram;
  /** Samples the median, MAD and histogram were taken from. */
  sampled: number;
}

export class ChannelAccumulator {
  private min = Infinity;
  private max = -Infinity;
  private count = 0;
  private seen = 0;
  private readonly sample: Float32Array;
  private taken = 0;
  readonly stride: number;

  /** `total`: samples of the plane that will be added (sets the stride). */
  constructor(total: number, target = SAMPLE_TARGET) {
    this.stride = Math.max(1, Math.floor(total / target));
    this.sample = new Float32Array(Math.ceil(total / this.stride));
  }

  /** Adds `n` consecutive samples of the plane (storage order) from `data[at..]`. */
  add(data: Float32Array, at = 0, n = data.length - at): void {
    let next = (this.stride - (this.seen % this.stride)) % this.stride;
    for (let i = 0; i < n; i++) {
      const v = data[at + i]!;
      if (v - v === 0) {
        if (v < this.min) this.min = v;
        if (v > this.max) this.max = v;
        this.count++;
        if (i === next && this.taken < this.sample.length) this.sample[this.taken++] = v;
      }
      if (i === next) next += this.stride;
    }
    this.seen += n;
  }

  finish(bins = HISTOGRAM_BINS): ChannelSummary {
    const s = this.sample.subarray(0, this.taken);
    const counts = new Array<number>(bins).fill(0);
    if (this.count === 0 || s.length === 0) {
      return { count: this.count, min: this.count ? this.min : NaN, max: this.count ? this.max : NaN, median: NaN, mad: NaN, histogram: { lo: 0, hi: 1, counts, above: 0 }, sampled: 0 };
    }
    const work = Float64Array.from(s);
    const median = medianInPlace(work);
    const p999 = selectInPlace(work, Math.min(work.length - 1, Math.floor(0.999 * work.length)));
    for (let i = 0; i < work.length; i++) work[i] = Math.abs(s[i]! - median);
    const mad = medianInPlace(work);
    const lo = this.min;
    let hi = Math.min(this.max, Math.max(p999, median + 12 * MAD_TO_SIGMA * mad));
    if (!(hi > lo)) hi = this.max > lo ? this.max : lo + 1;
    const width = (hi - lo) / bins;
    let above = 0;
    for (let i = 0; i < s.length; i++) {
      const v = s[i]!;
      if (v > hi) above++;
      else counts[Math.min(bins - 1, Math.max(0, Math.floor((v - lo) / width)))]!++;
    }
    return { count: this.count, min: this.min, max: this.max, median, mad, histogram: { lo, hi, counts, above }, sampled: s.length };
  }
}
