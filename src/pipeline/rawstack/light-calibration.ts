// CALIBRATION's lights: each included light gets its dark (and exposure scale), its flat (per
// filter in a run queue) and a calibrated header with provenance, and is written as
// cal_NNNNN.fit, at most `lanes` in flight. Blank lights (padding, constant) are excluded as
// `blank_frame`, a light that fails as `calibration_failed` (its frame event carries the FITS
// error code when it could not be read); the run goes on.
// - TypeScript path: each light is one frame task on the frame workers (stages/calibration/
//   light-task.ts: read, calibrate, write, then measure its stars and channel statistics while it
//   is in memory, handed on through frame.premeasured); the masters go to the workers once, in
//   shared memory.
// - GPU path (the calibrate kernel placed on the device): the masters stay resident, lights are
//   read and written here, and CFA_CHANNEL_PREP measures them.

import { readdir, unlink } from 'node:fs/promises';
import { join } from 'node:path';
import { saturationPlateau } from '../../algorithms/stars.js';
import { DEFAULT_FLAT_FLOOR } from '../../cpu/calibrate.js';
import { toShared } from '../../cpu/worker-pool.js';
import { isFitsError, isPartialWrite, readFitsImage, writeFits } from '../../fits/index.js';
import type { GpuContext } from '../../gpu/context.js';
import { GpuError } from '../../gpu/errors.js';
import { calibratedFrameName } from '../../shared/run-layout.js';
import { forEachLimit } from '../concurrency.js';
import { CancelledError, type PhaseContext } from '../phase.js';
import { calibratedHeader, FrameCalibrator, type CalibratedHeaderInfo } from '../stages/calibration/apply.js';
import type { CalibrateLightResult } from '../stages/calibration/light-task.js';
import { detectBlank } from '../stages/frames/channel-stats.js';
import { FrameWorkers, mapFrames } from '../stages/frames/workers.js';
import type { CalibrationSources } from './calibration-sources.js';
import type { CalibrationProgress, MasterBuilder } from './master-build.js';
import { analysisSpecOf } from './premeasure.js';
import { exclude, type FrameRecord, type RawStackState } from './state.js';

export interface LightTally {
  calibrated: number;
  failed: number;
  blank: number;
  /** Lights whose stars and channel statistics were measured here (TypeScript path). */
  measured: number;
  /** Per-light step times on the frame workers (TypeScript path). */
  stepMs: { read: number[]; calibrate: number[]; write: number[]; analyze: number[] };
}

export interface LightOptions {
  width: number;
  height: number;
  /** Where cal_NNNNN.fit go, absolute, and as the frame events name it. */
  calDir: string;
  calRel: string;
  lanes: number;
  /** The calibrate kernel's device context (device-policy.ts), null for the TypeScript path. */
  gpu: GpuContext | null;
  masters: MasterBuilder;
  levels: { biasLevel: number; flatTop: number };
  progress: CalibrationProgress;
}

export async function calibrateLights(ctx: PhaseContext<RawStackState>, lights: readonly FrameRecord[], plan: CalibrationSources, o: LightOptions): Promise<LightTally> {
  const { masters } = o;
  const tally: LightTally = { calibrated: 0, failed: 0, blank: 0, measured: 0, stepMs: { read: [], calibrate: [], write: [], analyze: [] } };

  // What each light gets: its dark (and scale), its flat (per-filter flats: by key; null = none)
  // and the provenance cards of its calibrated header.
  const planOf = (frame: FrameRecord) => {
    const sel = plan.selections.get(frame.index) ?? null;
    const group = sel ? plan.groups.find((g) => g.id === sel.groupId)! : null;
    const scale = sel?.scale ?? 1;
    const flatKey = plan.flatGroups ? (plan.lightFlatKey.get(frame.index) ?? null) : undefined;
    const name = calibratedFrameName(frame.index);
    const header: CalibratedHeaderInfo = {
      bias: masters.biasName,
      dark: group?.name ?? null,
      darkScale: scale,
      flat: flatKey === undefined ? masters.flatName : flatKey === null ? null : (masters.flatNames.get(flatKey) ?? null),
      biasLevel: o.levels.biasLevel,
      darkLevel: sel ? (masters.darkLevels.get(sel.groupId) ?? 0) * scale : 0,
      flatHigh: o.levels.flatTop,
    };
    return { sel, group, scale, flatKey, name, file: join(o.calDir, name), header };
  };
  type LightPlan = ReturnType<typeof planOf>;
  const onCalibrated = (frame: FrameRecord, p: LightPlan) => {
    frame.calibratedFile = p.file;
    frame.darkUsed = p.group?.name ?? null;
    tally.calibrated++;
    ctx.frame(frame.index, frame.name, 'ok', undefined, { calibrated: `${o.calRel}/${p.name}`, ...(p.group ? { dark: p.group.name, dark_scale: Number(p.scale.toFixed(6)) } : {}) });
  };
  /** fitsCode: the light could not be read; its frame event carries that specific code. */
  const onExcluded = (frame: FrameRecord, code: 'blank_frame' | 'calibration_failed', detail: string, fitsCode?: string) => {
    if (code === 'blank_frame') tally.blank++;
    else tally.failed++;
    exclude(frame, code, detail);
    ctx.frame(frame.index, frame.name, 'excluded', fitsCode ?? code, fitsCode ? { detail, exclusion: code } : { detail });
  };
  const step = () => ctx.progress(++o.progress.done, o.progress.total, 'lights');

  if (!o.gpu) {
    // TypeScript path: each light is read, calibrated, written and measured (stars, channel
    // statistics: premeasure.ts) on a frame worker, so the main thread only dispatches and the
    // calibrated frame is never read back by CFA_CHANNEL_PREP or REFERENCE_SELECTION.
    const shared = (m: Float32Array | null) => (m ? toShared(m) : null);
    const sBias = shared(masters.bias);
    const sFlat = shared(masters.flat);
    const sDarks = new Map([...masters.darks].map(([k, v]) => [k, toShared(v)] as const));
    const sFlats = new Map([...masters.flats].map(([k, v]) => [k, toShared(v)] as const));
    const spec = analysisSpecOf(ctx.state);
    const frameWorkers = new FrameWorkers(o.lanes);
    const plans = new Map<number, LightPlan>();
    try {
      await mapFrames(
        lights,
        o.lanes,
        ctx.signal,
        (frame) => {
          const p = planOf(frame);
          plans.set(frame.index, p);
          const lightFlat = p.flatKey === undefined ? sFlat : p.flatKey === null ? null : (sFlats.get(p.flatKey) ?? null);
          return frameWorkers.run({
            kind: 'calibrate',
            file: frame.file,
            out: p.file,
            width: o.width,
            height: o.height,
            bias: sBias,
            dark: p.sel ? (sDarks.get(p.sel.groupId) ?? null) : null,
            flat: lightFlat,
            darkScale: p.scale,
            flatFloor: DEFAULT_FLAT_FLOOR,
            header: p.header,
            analysis: spec,
          }) as Promise<CalibrateLightResult>;
        },
        (frame, r) => {
          if (r.ok) {
            onCalibrated(frame, plans.get(frame.index)!);
            frame.premeasured = r.premeasured;
            tally.measured++;
            for (const k of Object.keys(tally.stepMs) as (keyof LightTally['stepMs'])[]) tally.stepMs[k].push(r.ms[k]);
          } else onExcluded(frame, r.code, r.detail, r.fitsCode);
          step();
        },
      );
    } finally {
      await frameWorkers.close();
      // A worker terminated mid-write (cancel, error) leaves writeFits' temporary file behind:
      // the folder keeps only finished frames.
      for (const name of await readdir(o.calDir).catch(() => [] as string[])) {
        if (isPartialWrite(name)) await unlink(join(o.calDir, name)).catch(() => undefined);
      }
    }
    return tally;
  }

  const { width, height } = o;
  const calibrator = new FrameCalibrator({ bias: masters.bias, flat: masters.flat, darks: masters.darks, ...(plan.flatGroups ? { flats: masters.flats } : {}) }, o.gpu);
  try {
    await forEachLimit(lights, o.lanes, async (frame: FrameRecord) => {
      ctx.checkCancelled();
      const p = planOf(frame);
      try {
        const image = await readFitsImage(frame.file, 'float32');
        if (image.width !== width || image.height !== height || image.planes !== 1) throw new Error(`is ${image.width}x${image.height}x${image.planes}, expected ${width}x${height}x1`);
        const check = detectBlank(image.data, width, height);
        if (check.blank) return onExcluded(frame, 'blank_frame', check.detail!);
        ctx.checkCancelled();
        const plateau = saturationPlateau(image.data);
        const out = await calibrator.calibrate(image.data, p.sel ? p.sel.groupId : null, p.scale, p.flatKey);
        await writeFits(p.file, { width, height, data: out }, { header: calibratedHeader(image.header, p.header, plateau), durable: false });
        onCalibrated(frame, p);
      } catch (e) {
        if (e instanceof CancelledError || e instanceof GpuError) throw e;
        onExcluded(frame, 'calibration_failed', e instanceof Error ? e.message : String(e), isFitsError(e) ? e.code : undefined);
      } finally {
        step();
      }
    });
  } finally {
    calibrator.dispose();
  }
  return tally;
}
