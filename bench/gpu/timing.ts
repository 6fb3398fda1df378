// Timing of device work for the GPU bench: one "repetition" is encoded (or submitted) K times
// and the batch is submitted once, so submit and completion latency spread over K. With the
// adapter's timestamp queries (ctx.timer, src/gpu/timer.ts) the per-repetition time is the sum
// of the passes' GPU durations; without, it is the wall time from submit to
// onSubmittedWorkDone. K is chosen from a warm-up repetition so a batch lasts about targetMs.

import type { GpuContext } from '../../src/gpu/context.js';
import { totalMs } from '../../src/gpu/timer.js';
import { median, repsFor } from './model.js';

export interface BatchOptions {
  /** Milliseconds one timed batch should last. */
  targetMs: number;
  /** Most repetitions in one batch. */
  maxReps: number;
  /** Timed batches; the median is reported. */
  samples: number;
  /**
   * The repetition submits its own work (and may wait for readbacks): the wall clock then starts
   * before the first repetition instead of at the batch's submit.
   */
  selfSubmit?: boolean;
}

export interface BatchTiming {
  /** Milliseconds per repetition: GPU pass time where timestamps exist, else wall. */
  ms: number;
  timing: 'timestamp' | 'wall';
  /** Wall milliseconds per repetition (always measured). */
  wallMs: number;
  /** First pass begin to last pass end per repetition (timestamps only, else null): includes the gaps between passes. */
  spanMs: number | null;
  /** Repetitions per batch. */
  reps: number;
  /** Passes per repetition (timestamp timing only, else null). */
  passes: number | null;
  /** Timestamp grain seen (ns), null without timestamps. */
  granularityNs: number | null;
}

/** A repetition encodes its passes into `encoder` (or submits its own, see selfSubmit). */
export type Rep = (encoder: GPUCommandEncoder) => Promise<void>;

interface OneBatch {
  gpuMs: number | null;
  spanMs: number | null;
  wallMs: number;
  passes: number;
  granularityNs: number;
}

async function batch(ctx: GpuContext, rep: Rep, reps: number, selfSubmit: boolean): Promise<OneBatch> {
  const timer = ctx.timer;
  if (timer) await timer.collect(); // start from an empty timer
  const encoder = ctx.device.createCommandEncoder({ label: 'bench batch' });
  let t0 = performance.now();
  for (let i = 0; i < reps; i++) await rep(encoder);
  if (!selfSubmit) t0 = performance.now();
  ctx.submit(encoder);
  await ctx.done();
  const wallMs = performance.now() - t0;
  if (!timer) return { gpuMs: null, spanMs: null, wallMs, passes: 0, granularityNs: 0 };
  const times = await timer.collect();
  const usable = times.untimed === 0 && times.invalid === 0 && times.passes.length > 0;
  return { gpuMs: usable ? totalMs(times) : null, spanMs: usable ? times.spanMs : null, wallMs, passes: times.passes.length, granularityNs: times.granularityNs };
}

/** Warm-up (pipelines compiled, pool filled), then `samples` batches of K repetitions. */
export async function timeBatches(ctx: GpuContext, rep: Rep, options: BatchOptions): Promise<BatchTiming> {
  const selfSubmit = options.selfSubmit ?? false;
  const warm = await batch(ctx, rep, 1, selfSubmit);
  let maxReps = options.maxReps;
  if (ctx.timer && warm.passes > 0) maxReps = Math.min(maxReps, Math.floor(ctx.timer.capacity / warm.passes));
  const reps = repsFor(warm.gpuMs ?? warm.wallMs, options.targetMs, maxReps);
  const runs: OneBatch[] = [];
  for (let s = 0; s < options.samples; s++) runs.push(await batch(ctx, rep, reps, selfSubmit));
  const wallMs = median(runs.map((r) => r.wallMs)) / reps;
  const stamped = runs.every((r) => r.gpuMs !== null);
  return {
    ms: stamped ? median(runs.map((r) => r.gpuMs!)) / reps : wallMs,
    timing: stamped ? 'timestamp' : 'wall',
    wallMs,
    spanMs: stamped ? median(runs.map((r) => r.spanMs!)) / reps : null,
    reps,
    passes: stamped ? runs[0]!.passes / reps : null,
    granularityNs: stamped ? Math.min(...runs.map((r) => r.granularityNs)) : null,
  };
}
