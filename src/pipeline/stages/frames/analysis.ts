// Per-frame measurements on a plane that is already in memory, shared by every place that holds
// a frame's pixels:
//   measurePlane   star detection (stars.ts; OSC on the raw mosaic with `cfa`) → frame metrics
//                  and the brightest `maxStars` stars (REFERENCE_SELECTION's measure); without
//                  darks, after a cosmetic pass over a copy of the plane (hot/cold pixels);
//   channelsOfPlane per-channel robust statistics by the frame's effective CFA phase
//                  (CFA_CHANNEL_PREP's normalization inputs);
//   analyzePlane   both at once → a Premeasured record.
// Why one module: a calibrated frame is measured while CALIBRATION still holds it (the light task,
// stages/calibration/light-task.ts), and without calibration CFA_CHANNEL_PREP measures both on its one
// read, so CFA_CHANNEL_PREP and REFERENCE_SELECTION take the results from the frame record
// (premeasure.ts) instead of reading and decoding every frame again. A result is the same
// whichever place computed it (same functions, same inputs: the plane as written to disk and
// its header).
// Invariants: no exceptions for bad frames (typed results); results are structured-clone
// friendly (typed arrays, plain objects), star lists as packed f64 (x, y, flux) triplets.

import { frameMetrics, type FrameMetrics } from '../../../algorithms/frame-metrics.js';
import { detectStars, saturationPlateau } from '../../../algorithms/stars.js';
import { keys, type FitsHeader } from '../../../fits/index.js';
import type { CfaPattern } from '../../../cpu/debayer.js';
import { frameCfaPhase } from '../cfa-phase.js';
import { measureChannels, MONO_PHASES, phaseChannels, type FrameChannelStats } from './channel-stats.js';
import { cosmeticCorrect, estimateNoise } from '../stacking/cosmetic.js';

/** Stars kept per frame for registration (brightest first). */
export const MAX_STORED_STARS = 1500;
/** Numbers stored per star beside (x, y, flux): fwhm, eccentricity, peak. */
export const STAR_SHAPE_FIELDS = 3;

export interface Plane {
  data: Float32Array;
  width: number;
  height: number;
  header: FitsHeader;
}

export interface MeasureSpec {
  /** The plane is a raw Bayer mosaic (OSC): detect on its luminance proxy, measure per site. */
  cfa: boolean;
  /** Stars returned (brightest first); the metrics use every detected star. */
  maxStars: number;
  /**
   * Cosmetic pass before detection (no dark was applied, so hot pixels are still in the frame):
   * isolated hot and cold pixels replaced as STACKING's per-frame correction does
   * (stages/stacking/cosmetic.ts, threshold `sigma`). Null or absent: none.
   */
  cosmetic?: { sigma: number } | null;
}

export interface ChannelsSpec {
  /** The session's frame size: a frame of another size is refused (`size_mismatch`). */
  width: number;
  height: number;
  /** OSC: the session's Bayer pattern, shifted per frame by its XBAYROFF/YBAYROFF/ROWORDER. Null: mono. */
  pattern: CfaPattern | null;
  channels: number;
}

export interface MeasureOk {
  kind: 'measure';
  ok: true;
  metrics: FrameMetrics;
  /** Packed (x, y, flux) of the brightest stars, full-resolution frame pixels. */
  stars: Float64Array;
  /** Packed (fwhm, eccentricity, peak) of the same stars (STAR_SHAPE_FIELDS per star; local tile metrics). */
  shapes: Float64Array;
  /** Points refused as parts of long straight streaks (satellites, aircraft): the reference should not have any. */
  streaks: number;
  saturationLevel: number | null;
  saturationSource: string;
  gain: number | null;
  /** Pixels the cosmetic pass replaced (null: no pass). */
  cosmetic: CosmeticCounts | null;
  ms: { read: number; detect: number };
}

export interface CosmeticCounts {
  hot: number;
  cold: number;
}

export interface MeasureFailure {
  kind: 'measure';
  ok: false;
  code: 'unreadable' | 'no_stars';
  detail: string;
  /** The FitsError code when the file could not be read (for the frame event). */
  fitsCode?: string;
  /** Present when the frame was read and measured but holds no star (background and noise are known). */
  metrics: FrameMetrics | null;
  cosmetic: CosmeticCounts | null;
  ms: { read: number; detect: number };
}

export type MeasureResult = MeasureOk | MeasureFailure;

export type ChannelsTaskResult =
  | { kind: 'channels'; ok: true; stats: FrameChannelStats; /** Effective CFA phase (OSC), else null. */ phase: CfaPattern | null; ms: { read: number; stats: number } }
  | { kind: 'channels'; ok: false; code: 'unreadable' | 'size_mismatch'; detail: string; fitsCode?: string; ms: { read: number; stats: number } };

/** What to measure on a plane in memory; null parts are not measured. */
export interface AnalysisSpec {
  measure: MeasureSpec | null;
  channels: ChannelsSpec | null;
}

/**
 * Measurements of one frame made while its pixels were in memory for another purpose. `source`
 * is the file those pixels are (the frame's pixelSource when they were taken): a phase uses a
 * record only for that same file.
 */
export interface Premeasured {
  source: string;
  measure: MeasureResult | null;
  channels: ChannelsTaskResult | null;
}

/** `scratch`: memory the caller lends star detection for its significance image (DetectOptions.scratch). */
export function measurePlane(plane: Plane, spec: MeasureSpec, readMs: number, scratch?: Float32Array): MeasureResult {
  const t1 = performance.now();
  // Header values beat guesses: SATURATE/DATAMAX instead of the plateau search, EGAIN for the
  // shot-noise term of the star SNRs. (GAIN is a camera setting, not e-/ADU.)
  const saturation = keys.saturationLevel(plane.header);
  const gain = keys.electronsPerAdu(plane.header);
  let data = plane.data;
  let cosmetic: CosmeticCounts | null = null;
  if (spec.cosmetic) {
    const step = spec.cfa ? 2 : 1;
    const { width, height } = plane;
    const noise = estimateNoise(data, width, height, 0, step);
    // Saturated star cores stay as they are (their plateau tells the detector they saturate).
    const ceiling = saturation !== undefined && saturation > 0 ? saturation : (saturationPlateau(data) ?? Infinity);
    const fixed = cosmeticCorrect(data, { width, height, readY0: 0, y0: 0, y1: height, step, sigma: spec.cosmetic.sigma, noise, ceiling });
    data = fixed.data;
    cosmetic = { hot: fixed.hot, cold: fixed.cold };
  }
  const detection = detectStars(data, plane.width, plane.height, {
    cfa: spec.cfa,
    ...(saturation !== undefined && saturation > 0 ? { saturationLevel: saturation } : {}),
    ...(gain !== undefined && gain > 0 ? { gain } : {}),
    ...(scratch ? { scratch } : {}),
  });
  const ms = { read: readMs, detect: performance.now() - t1 };
  if (!detection.ok) return { kind: 'measure', ok: false, code: 'no_stars', detail: `star detection failed (${detection.code}): ${detection.detail}`, metrics: null, cosmetic, ms };
  const metrics = frameMetrics(detection);
  if (detection.stars.length === 0) {
    const c = detection.counts;
    return { kind: 'measure', ok: false, code: 'no_stars', detail: `no star detected (${c.candidates} candidates above the threshold, ${c.hotPixels + c.narrow} hot pixels, ${c.streaks} streak points, ${c.diffuse} diffuse maxima refused)`, metrics, cosmetic, ms };
  }
  const n = Math.min(spec.maxStars, detection.stars.length);
  const stars = new Float64Array(3 * n);
  const shapes = new Float64Array(STAR_SHAPE_FIELDS * n);
  for (let i = 0; i < n; i++) {
    const s = detection.stars[i]!;
    stars[3 * i] = s.x;
    stars[3 * i + 1] = s.y;
    stars[3 * i + 2] = s.flux;
    // A saturated star's shape is not its seeing: NaN, so tile statistics skip it.
    shapes[STAR_SHAPE_FIELDS * i] = s.saturated ? NaN : s.fwhm;
    shapes[STAR_SHAPE_FIELDS * i + 1] = s.saturated ? NaN : s.eccentricity;
    shapes[STAR_SHAPE_FIELDS * i + 2] = s.peak;
  }
  return {
    kind: 'measure',
    ok: true,
    metrics,
    stars,
    shapes,
    streaks: detection.counts.streaks,
    saturationLevel: Number.isFinite(detection.saturationLevel) ? detection.saturationLevel : null,
    saturationSource: detection.saturationSource,
    gain: gain ?? null,
    cosmetic,
    ms,
  };
}

/** The size check and CFA phase of a frame from its header. */
function channelsPhaseOf(header: FitsHeader, width: number, height: number, file: string, spec: ChannelsSpec): { ok: true; phase: CfaPattern | null } | { ok: false; detail: string } {
  if (width !== spec.width || height !== spec.height) return { ok: false, detail: `${file} is ${width}x${height}, expected ${spec.width}x${spec.height}` };
  if (!spec.pattern) return { ok: true, phase: null };
  return { ok: true, phase: frameCfaPhase(spec.pattern, header, spec.height) };
}

export function channelsOfPlane(plane: Plane, file: string, spec: ChannelsSpec, readMs: number): ChannelsTaskResult {
  const at = channelsPhaseOf(plane.header, plane.width, plane.height, file, spec);
  if (!at.ok) return { kind: 'channels', ok: false, code: 'size_mismatch', detail: at.detail, ms: { read: readMs, stats: 0 } };
  const t1 = performance.now();
  const stats = measureChannels(plane.data, spec.width, spec.height, at.phase ? phaseChannels(at.phase) : MONO_PHASES, spec.channels);
  return { kind: 'channels', ok: true, stats, phase: at.phase, ms: { read: readMs, stats: performance.now() - t1 } };
}

/**
 * Both measurements of one plane. Channel statistics first: a frame of the wrong size is not
 * measured for stars (its channels result says why; CFA_CHANNEL_PREP excludes it).
 */
export function analyzePlane(plane: Plane, source: string, spec: AnalysisSpec, readMs: number, scratch?: Float32Array): Premeasured {
  const channels = spec.channels ? channelsOfPlane(plane, source, spec.channels, readMs) : null;
  const measure = spec.measure && (!channels || channels.ok) ? measurePlane(plane, spec.measure, readMs, scratch) : null;
  return { source, measure, channels };
}

/** Transferable buffers of a premeasured record (the star list moves, it is not copied). */
export function premeasuredTransferables(p: Premeasured | null): ArrayBuffer[] {
  return p?.measure?.ok && p.measure.stars.buffer instanceof ArrayBuffer ? [p.measure.stars.buffer, ...(p.measure.shapes.buffer instanceof ArrayBuffer ? [p.measure.shapes.buffer] : [])] : [];
}
