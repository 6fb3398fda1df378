// Arithmetic of the GPU bench (`npm run bench -- gpu`), kept free of I/O so it is unit-tested:
// bytes each kernel must move, throughput as a fraction of the measured device bandwidth,
// how many repetitions go into one timed submit, and the idle-CPU reading.
// Convention (as for a device-to-device copy): bandwidth counts bytes read plus bytes written,
// and a kernel's bytes are the fewest it must move (each input read once, each output written
// once), so a fraction of 1 means the kernel ran at the copy kernel's speed.

/**
 * `stream`: one pass with a few operations per byte, so memory bandwidth bounds it (goal
 * ≥ STREAM_GOAL of the copy kernel); `compute`: arithmetic, several passes or scattered
 * access by design (reported, no goal).
 */
export type KernelClass = 'stream' | 'compute';

export const STREAM_GOAL = 0.5;

/** Bytes per second in GB/s (1e9) from bytes moved in `ms` milliseconds. */
export function gbPerSecond(bytes: number, ms: number): number {
  if (!(ms > 0) || !(bytes >= 0)) return NaN;
  return bytes / (ms / 1000) / 1e9;
}

/** `gbs` as a fraction of the reference bandwidth; null without a usable reference. */
export function fractionOf(gbs: number, referenceGbs: number | null | undefined): number | null {
  if (!referenceGbs || !(referenceGbs > 0) || !Number.isFinite(gbs)) return null;
  return gbs / referenceGbs;
}

/**
 * Repetitions for one timed submit: enough that the batch lasts about `targetMs` (so submit and
 * completion latency, and a coarse timestamp grain, are small beside it), at least 1, at most
 * `maxReps`.
 */
export function repsFor(oneRepMs: number, targetMs: number, maxReps: number): number {
  const cap = Math.max(1, Math.floor(maxReps));
  if (!(oneRepMs > 0)) return cap;
  return Math.min(cap, Math.max(1, Math.round(targetMs / oneRepMs)));
}

export function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

/** Byte models: the fewest bytes one repetition moves. `px`: pixels of one plane. */
export const bytesOf = {
  /** Raw samples of `sampleBytes` in, f32 out. */
  decode: (px: number, sampleBytes: number) => px * (sampleBytes + 4),
  /** Light, bias, dark, flat in, f32 out. */
  calibrate: (px: number) => px * 5 * 4,
  /** One read of the plane (the reductions' partials are negligible). */
  reduce: (px: number) => px * 4,
  /** Mosaic in, three planes out. */
  debayer: (px: number) => px * 4 * 4,
  /** Source read once (the ideal gather), output written. */
  warp: (px: number) => px * 2 * 4,
  /** N frames in, mean (f32) and count (u32) out. */
  stack: (px: number, frames: number) => px * (4 * frames + 8),
  /** Per plane: in and out. */
  stretch: (px: number, planes: number) => px * planes * 2 * 4,
  /**
   * Pre-mask chain on a band of N frames: flag reads the samples and the median and writes one
   * mask byte per sample; apply reads samples and mask bytes and writes the compacted samples.
   */
  premask: (px: number, frames: number) => px * (frames * (4 + 1 + 4 + 1 + 4) + 4),
  /** Index read, one f32 written per index. */
  scatter: (indices: number) => indices * 8,
};

export interface IdleSample {
  wallMs: number;
  cpuMs: number;
}

/** Busy cores during an idle wait (process CPU time over wall time): ~1 means one core spinning. */
export function busyCores(s: IdleSample): number {
  return s.wallMs > 0 ? s.cpuMs / s.wallMs : NaN;
}

/** An idle reading above this many busy cores is flagged (a thread polling the device). */
export const IDLE_SPIN_CORES = 0.5;
