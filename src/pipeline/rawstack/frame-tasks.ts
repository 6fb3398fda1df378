// Per-frame pixel work of REFERENCE_SELECTION and QUALITY_ANALYSIS, as self-contained tasks that
// run either on the main thread or in a worker thread (frame-workers.ts): each task reads ONE
// frame from disk, works on it and returns a small result (metrics, a trimmed star list, a
// correlation), so no more than one frame per running task is ever in memory.
//   measure  read plane 0 → detectStars (on the raw mosaic with `cfa` for OSC) → frameMetrics;
//            returns the brightest `maxStars` stars as packed (x, y, flux) triplets.
//   cc       read plane 0 → makeCcProxy → registrationCc against the reference proxy (shared
//            memory, built once per run by the caller) under the frame's registration matrix.
//   register registerStars(reference stars, frame stars) on packed star lists (no pixels):
//            REGISTRATION's matching, CPU-bound, so it runs on the workers too.
//   channels read plane 0 → measureChannels (CFA_CHANNEL_PREP's per-channel robust statistics;
//            OSC: by the frame's effective CFA phase from its own header).
// Invariants: a bad frame is a typed result ({ok: false, code, detail}), never an exception;
// exceptions mean bugs. Results are structured-clone friendly (typed arrays, plain objects).

import { frameMetrics, type FrameMetrics } from '../../algorithms/frame-metrics.js';
import { makeCcProxy, registrationCc, type CcProxy } from '../../algorithms/registration-cc.js';
import type { Affine } from '../../algorithms/affine.js';
import type { StarPoint } from '../../algorithms/match.js';
import { registerStars, type RegistrationResult } from '../../algorithms/registration.js';
import { detectStars } from '../../algorithms/stars.js';
import { FitsReader, isFitsError, keys, type FitsHeader } from '../../fits/index.js';
import { cfaPhase, type CfaPattern } from '../../cpu/debayer.js';
import { measureChannels, MONO_PHASES, phaseChannels, type FrameChannelStats } from './channel-stats.js';

export interface MeasureTask {
  kind: 'measure';
  file: string;
  /** The plane is a raw Bayer mosaic (OSC): detect on its luminance proxy, measure per site. */
  cfa: boolean;
  /** Stars returned (brightest first); the metrics use every detected star. */
  maxStars: number;
}

export interface MeasureOk {
  kind: 'measure';
  ok: true;
  metrics: FrameMetrics;
  /** Packed (x, y, flux) of the brightest stars, full-resolution frame pixels. */
  stars: Float64Array;
  /** Points refused as parts of long straight streaks (satellites, aircraft): the reference should not have any. */
  streaks: number;
  saturationLevel: number | null;
  saturationSource: string;
  gain: number | null;
  ms: { read: number; detect: number };
}

export interface MeasureFailure {
  kind: 'measure';
  ok: false;
  code: 'unreadable' | 'no_stars';
  detail: string;
  /** Present when the frame was read and measured but holds no star (background and noise are known). */
  metrics: FrameMetrics | null;
  ms: { read: number; detect: number };
}

export type MeasureResult = MeasureOk | MeasureFailure;

export interface CcTask {
  kind: 'cc';
  file: string;
  /** Frame pixel → reference pixel. */
  matrix: Affine;
  /** Proxy binning; even for mosaics so every proxy pixel mixes whole Bayer cells. */
  bin: number;
  reference: CcProxy;
}

export type CcTaskResult =
  | { kind: 'cc'; ok: true; cc: number; overlap: number; ms: { read: number; cc: number } }
  | { kind: 'cc'; ok: false; code: 'unreadable' | 'cc_failed'; detail: string; ms: { read: number; cc: number } };

export interface RegisterTask {
  kind: 'register';
  /** Packed (x, y, flux) star lists (packStars), full-resolution pixels, brightest first. */
  reference: Float64Array;
  stars: Float64Array;
}

export interface RegisterTaskResult {
  kind: 'register';
  result: RegistrationResult;
  ms: number;
}

export interface ChannelsTask {
  kind: 'channels';
  file: string;
  /** The session's frame size: a frame of another size is refused (`size_mismatch`). */
  width: number;
  height: number;
  /** OSC: the session's Bayer pattern, shifted per frame by its XBAYROFF/YBAYROFF/ROWORDER. Null: mono. */
  pattern: CfaPattern | null;
  channels: number;
}

export type ChannelsTaskResult =
  | { kind: 'channels'; ok: true; stats: FrameChannelStats; /** Effective CFA phase (OSC), else null. */ phase: CfaPattern | null; ms: { read: number; stats: number } }
  | { kind: 'channels'; ok: false; code: 'unreadable' | 'size_mismatch'; detail: string; ms: { read: number; stats: number } };

export type FrameTask = MeasureTask | CcTask | RegisterTask | ChannelsTask;
export type FrameTaskResult = MeasureResult | CcTaskResult | RegisterTaskResult | ChannelsTaskResult;

/** (x, y, flux) triplets of a star list, for tasks and results (exact: f64). */
export function packStars(stars: readonly StarPoint[]): Float64Array {
  const out = new Float64Array(3 * stars.length);
  stars.forEach((s, i) => out.set([s.x, s.y, s.flux], 3 * i));
  return out;
}

export function unpackStars(packed: Float64Array): StarPoint[] {
  const out: StarPoint[] = new Array(packed.length / 3);
  for (let i = 0; i < out.length; i++) out[i] = { x: packed[3 * i]!, y: packed[3 * i + 1]!, flux: packed[3 * i + 2]! };
  return out;
}

function registerFrame(task: RegisterTask): RegisterTaskResult {
  const t0 = performance.now();
  const result = registerStars(unpackStars(task.reference), unpackStars(task.stars));
  return { kind: 'register', result, ms: performance.now() - t0 };
}

export interface Plane {
  data: Float32Array;
  width: number;
  height: number;
  header: FitsHeader;
}

/** Plane 0 of a frame as float32 (lights here are mono or raw CFA: one plane). */
export async function readPlane(file: string): Promise<Plane> {
  const reader = await FitsReader.open(file);
  try {
    const band = await reader.readRows(0, reader.height, { planes: [0] });
    return { data: band.data, width: reader.width, height: reader.height, header: reader.header };
  } finally {
    await reader.close();
  }
}

/** The correlation proxy of a frame (QUALITY_ANALYSIS builds the reference's with this). */
export function ccProxyOf(plane: Plane, bin: number): CcProxy {
  return makeCcProxy(plane.data, plane.width, plane.height, { bin });
}

async function readOrFail(file: string): Promise<Plane | { error: string }> {
  try {
    return await readPlane(file);
  } catch (e) {
    if (isFitsError(e)) return { error: e.message };
    throw e;
  }
}

export async function measureFrame(task: MeasureTask): Promise<MeasureResult> {
  const t0 = performance.now();
  const plane = await readOrFail(task.file);
  const t1 = performance.now();
  if ('error' in plane) return { kind: 'measure', ok: false, code: 'unreadable', detail: plane.error, metrics: null, ms: { read: t1 - t0, detect: 0 } };
  // Header values beat guesses: SATURATE/DATAMAX instead of the plateau search, EGAIN for the
  // shot-noise term of the star SNRs. (GAIN is a camera setting, not e-/ADU.)
  const saturation = keys.saturationLevel(plane.header);
  const gain = keys.electronsPerAdu(plane.header);
  const detection = detectStars(plane.data, plane.width, plane.height, {
    cfa: task.cfa,
    ...(saturation !== undefined && saturation > 0 ? { saturationLevel: saturation } : {}),
    ...(gain !== undefined && gain > 0 ? { gain } : {}),
  });
  const ms = { read: t1 - t0, detect: performance.now() - t1 };
  if (!detection.ok) return { kind: 'measure', ok: false, code: 'no_stars', detail: `star detection failed (${detection.code}): ${detection.detail}`, metrics: null, ms };
  const metrics = frameMetrics(detection);
  if (detection.stars.length === 0) {
    const c = detection.counts;
    return { kind: 'measure', ok: false, code: 'no_stars', detail: `no star detected (${c.candidates} candidates above the threshold, ${c.hotPixels} hot pixels, ${c.streaks} streak points refused)`, metrics, ms };
  }
  const n = Math.min(task.maxStars, detection.stars.length);
  const stars = new Float64Array(3 * n);
  for (let i = 0; i < n; i++) {
    const s = detection.stars[i]!;
    stars[3 * i] = s.x;
    stars[3 * i + 1] = s.y;
    stars[3 * i + 2] = s.flux;
  }
  return {
    kind: 'measure',
    ok: true,
    metrics,
    stars,
    streaks: detection.counts.streaks,
    saturationLevel: Number.isFinite(detection.saturationLevel) ? detection.saturationLevel : null,
    saturationSource: detection.saturationSource,
    gain: gain ?? null,
    ms,
  };
}

export async function correlateFrame(task: CcTask): Promise<CcTaskResult> {
  const t0 = performance.now();
  const plane = await readOrFail(task.file);
  const t1 = performance.now();
  if ('error' in plane) return { kind: 'cc', ok: false, code: 'unreadable', detail: plane.error, ms: { read: t1 - t0, cc: 0 } };
  const proxy = ccProxyOf(plane, task.bin);
  const r = registrationCc(task.reference, proxy, task.matrix);
  const ms = { read: t1 - t0, cc: performance.now() - t1 };
  return r.ok ? { kind: 'cc', ok: true, cc: r.cc, overlap: r.overlap, ms } : { kind: 'cc', ok: false, code: 'cc_failed', detail: `${r.code}: ${r.detail}`, ms };
}

export async function channelStatsOf(task: ChannelsTask): Promise<ChannelsTaskResult> {
  const t0 = performance.now();
  let data: Float32Array;
  let phase: CfaPattern | null = null;
  let map: readonly number[] = MONO_PHASES;
  try {
    const reader = await FitsReader.open(task.file);
    try {
      if (reader.width !== task.width || reader.height !== task.height) {
        return { kind: 'channels', ok: false, code: 'size_mismatch', detail: `${task.file} is ${reader.width}x${reader.height}, expected ${task.width}x${task.height}`, ms: { read: performance.now() - t0, stats: 0 } };
      }
      if (task.pattern) {
        const off = keys.bayerOffset(reader.header);
        phase = cfaPhase(task.pattern, off.x, off.y, keys.rowOrder(reader.header), task.height);
        map = phaseChannels(phase);
      }
      data = (await reader.readRows(0, task.height, { planes: [0] })).data;
    } finally {
      await reader.close();
    }
  } catch (e) {
    // Only file problems are the frame's fault; anything else is a bug.
    if (!isFitsError(e)) throw e;
    return { kind: 'channels', ok: false, code: 'unreadable', detail: e.message, ms: { read: performance.now() - t0, stats: 0 } };
  }
  const t1 = performance.now();
  const stats = measureChannels(data, task.width, task.height, map, task.channels);
  return { kind: 'channels', ok: true, stats, phase, ms: { read: t1 - t0, stats: performance.now() - t1 } };
}

export async function runFrameTask(task: FrameTask): Promise<FrameTaskResult> {
  if (task.kind === 'register') return registerFrame(task);
  if (task.kind === 'channels') return channelStatsOf(task);
  return task.kind === 'measure' ? measureFrame(task) : correlateFrame(task);
}

/** Transferable buffers of a result (moved, not copied, back from a worker). */
export function transferables(result: FrameTaskResult): ArrayBuffer[] {
  return result.kind === 'measure' && result.ok && result.stars.buffer instanceof ArrayBuffer ? [result.stars.buffer] : [];
}
