// CALIBRATION's per-light work as one frame task (runs on a frame worker, or on the main thread
// with one worker): read the light → blank check → (light − bias − scale·dark) / flatN in place
// (cpu/calibrate.ts, the TypeScript reference of the calibrate kernel) → write
// outputs/calibrated/cal_NNNNN.fit (atomic) → measure the calibrated plane while it is still in
// memory (stages/frames/analysis.ts: channel statistics and stars), so CFA_CHANNEL_PREP and
// REFERENCE_SELECTION do not read and decode the frame again.
// The masters arrive in shared memory (one copy for every worker); the calibrated header is
// built here from the light's own header (FitsHeader does not cross threads).
// Invariants: the light's file is never modified; a light that cannot be read, has the wrong size
// or cannot be written is a typed `calibration_failed` result, a blank one `blank_frame`; the
// calibrated file exists only when the result is ok.

import { calibrate } from '../../../cpu/calibrate.js';
import { isMainThread } from 'node:worker_threads';
import { FitsReader, isFitsError, writeFits, type FitsErrorCode, type FitsHeader } from '../../../fits/index.js';
import { calibratedHeader, type CalibratedHeaderInfo } from './apply.js';
import { saturationPlateau } from '../../../algorithms/stars.js';
import { detectBlank } from '../frames/channel-stats.js';
import { analyzePlane, premeasuredTransferables, type AnalysisSpec, type Premeasured } from '../frames/analysis.js';

export interface CalibrateLightTask {
  kind: 'calibrate';
  /** The light as found by INPUT_SCAN, and the calibrated file to write. */
  file: string;
  out: string;
  width: number;
  height: number;
  /** Shared-memory masters of this light (null: that stage is not applied). */
  bias: Float32Array | null;
  dark: Float32Array | null;
  flat: Float32Array | null;
  darkScale: number;
  flatFloor: number;
  header: CalibratedHeaderInfo;
  analysis: AnalysisSpec;
}

export type CalibrateLightResult =
  | { kind: 'calibrate'; ok: true; premeasured: Premeasured; ms: { read: number; calibrate: number; write: number; analyze: number } }
  /** fitsCode: the light could not be read (the FitsError's code, for the frame event). */
  | { kind: 'calibrate'; ok: false; code: 'blank_frame' | 'calibration_failed'; detail: string; fitsCode?: FitsErrorCode };

const message = (e: unknown) => (e instanceof Error ? e.message : String(e));

/**
 * A frame worker's light and raw-byte buffers, reused by its next light (tasks run one at a time
 * per worker): two frame-sized allocations less per light, which the worker's collector would
 * otherwise have to find. On the main thread (one worker) nothing is kept between lights.
 */
let reusable: { light: Float32Array; raw: { bytes: Uint8Array } } | null = null;

export async function calibrateLight(task: CalibrateLightTask): Promise<CalibrateLightResult> {
  const t0 = performance.now();
  const { width, height } = task;
  // A frame worker runs one task at a time (FrameWorkers), so its buffers are free here.
  const keep = !isMainThread;
  let lightHeader: FitsHeader;
  let data: Float32Array;
  try {
    const reader = await FitsReader.open(task.file);
    try {
      const { layout } = reader;
      lightHeader = reader.header;
      if (layout.width !== width || layout.height !== height || layout.planes !== 1) {
        return { kind: 'calibrate', ok: false, code: 'calibration_failed', detail: `is ${layout.width}x${layout.height}x${layout.planes}, expected ${width}x${height}x1` };
      }
      const bufs = keep && reusable?.light.length === width * height ? reusable : { light: new Float32Array(width * height), raw: { bytes: new Uint8Array(0) } };
      if (keep) reusable = bufs;
      data = bufs.light;
      // Decoded straight into the light buffer (same values as readFitsImage).
      await reader.readRowsInto(0, height, data, { scratch: bufs.raw });
    } finally {
      await reader.close();
    }
  } catch (e) {
    return { kind: 'calibrate', ok: false, code: 'calibration_failed', detail: message(e), ...(isFitsError(e) ? { fitsCode: e.code } : {}) };
  }
  return await calibrateDecoded(task, data, lightHeader, t0, keep ? reusable!.raw : null);
}

/**
 * `raw`: the worker's raw-byte buffer, free once the light is decoded; star detection borrows it
 * (grown to a float32 plane, 12 MiB at 2048×1536) for its significance image instead of mapping a
 * fresh array per light. Measured: CALIBRATION's peak and CPU in bench/RESULTS.md (issue 22, det22).
 */
async function calibrateDecoded(task: CalibrateLightTask, data: Float32Array, lightHeader: FitsHeader, t0: number, raw: { bytes: Uint8Array } | null = null): Promise<CalibrateLightResult> {
  const { width, height } = task;
  const check = detectBlank(data, width, height);
  if (check.blank) return { kind: 'calibrate', ok: false, code: 'blank_frame', detail: check.detail! };
  const t1 = performance.now();
  const plateau = saturationPlateau(data);
  calibrate(data, { ...(task.bias ? { bias: task.bias } : {}), ...(task.dark ? { dark: task.dark } : {}), ...(task.flat ? { flat: task.flat } : {}) }, { darkScale: task.darkScale, flatFloor: task.flatFloor }, data);
  const header = calibratedHeader(lightHeader, task.header, plateau);
  const t2 = performance.now();
  try {
    // Not flushed: an intermediate the run regenerates (writeFits `durable`).
    await writeFits(task.out, { width, height, data }, { header, durable: false });
  } catch (e) {
    return { kind: 'calibrate', ok: false, code: 'calibration_failed', detail: `cannot write ${task.out}: ${message(e)}` };
  }
  const t3 = performance.now();
  // The plane as written: float32 values and the calibrated header (saturation moved).
  let scratch: Float32Array | undefined;
  if (raw) {
    if (raw.bytes.byteLength < width * height * 4) raw.bytes = new Uint8Array(width * height * 4);
    scratch = new Float32Array(raw.bytes.buffer, raw.bytes.byteOffset, width * height);
  }
  const premeasured = analyzePlane({ data, width, height, header }, task.out, task.analysis, t1 - t0, scratch);
  return { kind: 'calibrate', ok: true, premeasured, ms: { read: t1 - t0, calibrate: t2 - t1, write: t3 - t2, analyze: performance.now() - t3 } };
}

export function calibrateLightTransferables(r: CalibrateLightResult): ArrayBuffer[] {
  return r.ok ? premeasuredTransferables(r.premeasured) : [];
}
