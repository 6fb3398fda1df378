// CALIBRATION (seed "Calibration", docs/ARCHITECTURE.md "Raw Stack decisions"): builds or loads the bias, dark, dark-flat and flat
// masters and writes every included light, calibrated, as float32 FITS to
// outputs/calibrated/cal_NNNNN.fit (NNNNN = frame index + 1, the light's 1-based position in
// input order; in the run's scratch folder instead when output.keep_calibrated_frames is false).
// Skipped (`not_configured`) when no calibration source is configured: lights pass
// on unchanged; `disabled` when sources are configured but every stage is switched off.
// Order and rules:
//   1. bias master (folder: sigma-clipped mean; or a master file);
//   2. dark groups by EXPTIME (and CCD-TEMP) when dark_auto_select, one dark for each light
//      (stages/calibration/dark-select.ts); only groups some light uses are combined; each dark master is
//      bias-corrected (dark − bias) when a bias exists, so it can be scaled by exposure (a dark
//      master file too, unless its header says it is: BIASCORR = T or CALSTAT with B);
//   3. dark-flat master (only with flats);
//   4. flat master from flats minus the dark-flat master (else the bias master), divided by
//      its median per CFA site (OSC) or overall (mono); a master flat file is taken as a
//      calibrated flat (as PixInsight and Siril write them) and only has the dark flats
//      subtracted when they are configured and its header does not say it is corrected;
//   5. per light: (light − bias − scale·dark) / flatN, NaN where the flat is dead; blank lights
//      (padding, constant) are excluded as `blank_frame`, a light that fails is excluded as
//      `calibration_failed`; the run goes on. On the TypeScript path each light is one frame
//      task (stages/calibration/light-task.ts: read, calibrate, write, then measure its stars and channel
//      statistics while it is in memory, handed on through frame.premeasured); on a GPU the
//      calibrate kernel runs with the masters resident and CFA_CHANNEL_PREP measures.
// Errors (`calibration_error`): a configured folder that is missing or holds no matching
// readable frame, an unreadable master file, any calibration frame or master whose size differs
// from the lights; `budget_error` when one band of a master's frames does not fit the budget.
// Run queue: when the flats folder's frames carry FILTER, one flat master per filter
// (master_flat_<filter>.fits; flats without FILTER make master_flat.fits for filters without
// their own), each light divided by its filter's; a filter without any flat is warned about
// (flat_missing_for_filter) and its lights are not flat-corrected.
// Writes: state.masters, frame.calibratedFile, frame.darkUsed, state.summaries.CALIBRATION and
// artifacts for the masters written (outputs/masters/master_{bias,dark_<exp>s,flat,darkflat}.fits).
// Parts: the plan from headers (calibration-sources.ts: step 2's dark selection, the run queue's
// flat groups), the masters (master-build.ts: steps 1–4), the lights (light-calibration.ts: 5).

import { mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { exposeGc } from '../../../cpu/worker-gc.js';
import { collectSharedPools } from '../../../cpu/worker-pool.js';
import { GpuError } from '../../../gpu/errors.js';
import { gpuFor } from '../../device-policy.js';
import { failed, ok, skipped, type PhaseContext } from '../../phase.js';
import { inRunFolder } from '../../run-folder.js';
import { CalibrationError, resolveStageSources } from '../../stages/calibration/masters.js';
import { active, planCalibrationSources } from '../calibration-sources.js';
import { calibrateLights } from '../light-calibration.js';
import { describeSource, MasterBuilder, type CalibrationProgress } from '../master-build.js';
import type { RawStackPhase, RawStackOutcome } from '../reasons.js';
import { includedFrames, type RawStackState } from '../state.js';

const MiB = 1024 * 1024;
/** The main thread's collector (null where the runtime refuses it). */
const collectGarbage = exposeGc();
const PHASE = 'CALIBRATION';

function median(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const n = v.length;
  return n === 0 ? NaN : n % 2 ? v[n >> 1]! : (v[n / 2 - 1]! + v[n / 2]!) / 2;
}

async function runCalibration(ctx: PhaseContext<RawStackState>): Promise<RawStackOutcome> {
  const { state } = ctx;
  const c = state.config;
  const lights = includedFrames(state);
  if (state.width === null || state.height === null || lights.length === 0) return skipped('prerequisite_failed', 'no usable lights from INPUT_SCAN');
  const width = state.width;
  const height = state.height;
  const workers = c.runtime_limits.parallel_workers;
  const budget = c.runtime_limits.memory_budget * MiB;
  const frameBytes = width * height * 4;

  // Sources: nothing to do, or switched off, ends the phase here.
  const sources = resolveStageSources(c);
  if (active(sources.darkflat) && !active(sources.flat)) ctx.warn('darkflat_without_flat', `${sources.darkflat.key} is configured but no flat is applied: dark flats are not used`);
  if (!active(sources.bias) && !active(sources.dark) && !active(sources.flat)) {
    const configured = Object.values(sources).filter((s) => s.kind !== 'none');
    const detail = { sources: Object.fromEntries(Object.entries(sources).map(([k, s]) => [k, describeSource(s)])) };
    state.summaries.CALIBRATION = { skipped: true, ...detail };
    if (configured.some((s) => s.kind === 'disabled')) {
      return skipped('disabled', 'calibration sources are configured but switched off (calibration.use_bias / use_dark / use_flat = false): lights pass on unchanged', detail);
    }
    return skipped('not_configured', 'no calibration folder or master file configured: lights pass on unchanged', detail);
  }
  const t0 = performance.now();
  const layout = state.folder.layout;
  const mastersDir = inRunFolder(state.folder, layout.masters);
  // output.keep_calibrated_frames = false: the frames live in the run's scratch folder, which the
  // run removes when it ends (pipeline/run.ts), so they cost disk only while the run needs them.
  const keepCalibrated = c.output.keep_calibrated_frames;
  const calDir = keepCalibrated ? inRunFolder(state.folder, layout.calibrated) : join(state.folder.scratchDir, 'calibrated');
  await mkdir(mastersDir, { recursive: true });
  await mkdir(calDir, { recursive: true });
  const stackGpuCtx = gpuFor(state.gpu, 'stack');

  // A. Headers only: list every folder, group the darks and pick one for each light.
  const plan = await planCalibrationSources(ctx, sources, lights, { width, height });

  // 1–4. Masters.
  const progress: CalibrationProgress = { done: 0, total: MasterBuilder.filesToCombine(plan) + lights.length };
  const masters = new MasterBuilder(ctx, plan, { phase: PHASE, width, height, cfa: state.colorMode === 'OSC', workers, budgetBytes: budget, mastersDir, mastersRel: (name) => `${layout.masters}/${name}`, gpu: stackGpuCtx, progress });
  await masters.buildBias();
  await masters.buildDarks();
  await masters.buildDarkflat();
  await masters.buildFlat();
  const levels = await masters.finish();
  const mastersMs = performance.now() - t0;

  // The masters' band buffers are dead: the device pool's (host memory on a software adapter)
  // and the host staging of every combine (up to the budget each). Released before the lights,
  // whose workers would otherwise add their frames on top of them (peak RSS).
  await state.gpu?.trim();
  collectGarbage?.();
  collectSharedPools();

  // 5. Lights, at most parallel_workers in flight and as many as the budget holds beside the masters.
  const heldBytes = masters.heldBytes;
  const perFrame = 3 * frameBytes;
  const lanes = Math.max(1, Math.min(workers, Math.floor((budget - heldBytes) / perFrame)));
  if (heldBytes + perFrame > budget) {
    ctx.warn('memory_budget', `the masters (${(heldBytes / MiB).toFixed(0)} MiB) and one light in flight need ${((heldBytes + perFrame) / MiB).toFixed(0)} MiB, above runtime_limits.memory_budget = ${c.runtime_limits.memory_budget} MiB`);
  }
  const calibrateGpu = gpuFor(state.gpu, 'calibrate');
  const t1 = performance.now();
  const tally = await calibrateLights(ctx, lights, plan, { width, height, calDir, calRel: layout.calibrated, lanes, gpu: calibrateGpu, masters, levels, progress });
  await Promise.all(masters.writes);
  const lightsMs = performance.now() - t1;

  const { calibrated, measured } = tally;
  const summary: Record<string, unknown> = {
    ...masters.details,
    frames_calibrated: calibrated,
    frames_failed: tally.failed,
    frames_blank: tally.blank,
    calibrated_dir: keepCalibrated ? layout.calibrated : null,
    calibrated_frames_kept: keepCalibrated,
    masters_dir: layout.masters,
    device: { stack: stackGpuCtx ? 'gpu' : 'cpu', calibrate: calibrateGpu ? 'gpu' : 'cpu' },
    // Lights whose stars and channel statistics were measured here (CFA_CHANNEL_PREP and
    // REFERENCE_SELECTION then read nothing for them).
    frames_measured: measured,
    timing_ms: {
      masters: Math.round(mastersMs),
      lights: Math.round(lightsMs),
      per_light: calibrated > 0 ? Math.round(lightsMs / calibrated) : null,
      ...(measured > 0 ? { light_steps_median: Object.fromEntries(Object.entries(tally.stepMs).map(([k, v]) => [k, Math.round(median(v))])) } : {}),
    },
  };
  state.summaries.CALIBRATION = summary;
  if (calibrated === 0) return failed('no_frames', `no light could be calibrated (${tally.failed} failed, ${tally.blank} blank)`, summary);
  return ok(summary);
}

export const calibrationPhase: RawStackPhase = {
  name: PHASE,
  optional: false,
  async run(ctx) {
    try {
      return await runCalibration(ctx);
    } catch (e) {
      if (e instanceof CalibrationError) return failed('calibration_error', e.message);
      if (e instanceof GpuError && e.code === 'BUDGET_TOO_SMALL') return failed('budget_error', e.message);
      throw e;
    }
  },
};
