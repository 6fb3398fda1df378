// Applying the masters to one light (CALIBRATION): out = (light − bias − darkScale·dark) / flatN,
// NaN where the normalised flat is dead (≤ DEFAULT_FLAT_FLOOR), with the calibrate kernel in
// WGSL (masters uploaded once and kept resident on the device, one light up and one result down
// per frame; the TypeScript path is CALIBRATION's light task, stages/calibration/light-task.ts); and the header of
// the calibrated frame (the light's cards plus CALIBRAT, BIASCORR, DARKCORR, FLATCORR, DARKSEL,
// DARKSCAL and HISTORY; SATURATE/DATAMAX moved to the calibrated scale, or SATURATE from the
// light's saturation plateau when it has no such card).
// Invariant: the masters are never modified; a calibrator holds device buffers only between
// its creation and dispose().

import { DEFAULT_FLAT_FLOOR } from '../../../cpu/calibrate.js';
import type { FitsHeader } from '../../../fits/index.js';
import type { GpuContext } from '../../../gpu/context.js';
import { calibrateResident, type CalibrationMasterBuffers } from '../../../gpu/kernels/calibrate.js';

export interface AppliedMasters {
  bias: Float32Array | null;
  /** Normalised flat (median 1 per CFA site). */
  flat: Float32Array | null;
  /** Bias-corrected (when a bias exists) dark master per dark group id. */
  darks: Map<number, Float32Array>;
  /** Run queue with per-filter flats: normalised flat per flat key (calibrate's flatKey). */
  flats?: Map<string, Float32Array>;
}

/** The calibrate kernel with the masters resident on one device (the GPU path of CALIBRATION). */
export class FrameCalibrator {
  private readonly buffers = new Map<string, GPUBuffer>();

  constructor(
    readonly masters: AppliedMasters,
    readonly gpu: GpuContext,
  ) {}

  private resident(key: string, data: Float32Array): GPUBuffer {
    let b = this.buffers.get(key);
    if (!b) this.buffers.set(key, (b = this.gpu.upload(data)));
    return b;
  }

  /**
   * Calibrates `light` and returns a new array with the result. `flatKey`: per-filter flats
   * (masters.flats; null = no flat for this light); absent: the one flat (masters.flat).
   */
  async calibrate(light: Float32Array, darkGroup: number | null, darkScale: number, flatKey?: string | null): Promise<Float32Array> {
    const dark = darkGroup !== null ? this.masters.darks.get(darkGroup) : undefined;
    if (darkGroup !== null && !dark) throw new Error(`no dark master for group ${darkGroup}`);
    const flat = flatKey === undefined ? this.masters.flat : flatKey === null ? null : (this.masters.flats?.get(flatKey) ?? null);
    if (typeof flatKey === 'string' && !flat) throw new Error(`no flat master for ${flatKey}`);
    const flatId = flatKey === undefined ? 'flat' : `flat:${flatKey}`;
    const params = { darkScale, flatFloor: DEFAULT_FLAT_FLOOR };
    const ctx = this.gpu;
    const bufs: CalibrationMasterBuffers = {};
    if (this.masters.bias) bufs.bias = this.resident('bias', this.masters.bias);
    if (flat) bufs.flat = this.resident(flatId, flat);
    if (dark) bufs.dark = this.resident(`dark${darkGroup}`, dark);
    const lightBuf = ctx.upload(light);
    const out = ctx.storage(light.length * 4, 'calibrated');
    try {
      await calibrateResident(ctx, lightBuf, bufs, out, light.length, params);
      return await ctx.readFloat32(out, light.length);
    } finally {
      ctx.pool.release(lightBuf);
      ctx.pool.release(out);
    }
  }

  dispose(): void {
    for (const b of this.buffers.values()) this.gpu.pool.release(b);
    this.buffers.clear();
  }
}

export interface CalibratedHeaderInfo {
  bias: string | null;
  dark: string | null;
  darkScale: number;
  flat: string | null;
  /** Median bias and (scaled) dark levels and the flat's high quantile, to move the saturation level. */
  biasLevel: number;
  darkLevel: number;
  flatHigh: number;
}

const SATURATION_KEYS = ['SATURATE', 'DATAMAX', 'MAXDATA'];

/**
 * The light's header with the calibration provenance cards. `plateau`: the light's saturation
 * plateau (stars.ts saturationPlateau), recorded as SATURATE when the light has no saturation
 * card, since calibration turns the plateau into a slope the detector cannot find again.
 */
export function calibratedHeader(light: FitsHeader, info: CalibratedHeaderInfo, plateau: number | null = null): FitsHeader {
  const h = light.clone();
  h.set('CALIBRAT', true, { comment: 'calibrated by skystack' });
  h.set('BIASCORR', info.bias !== null, { comment: 'bias subtracted' });
  h.set('DARKCORR', info.dark !== null, { comment: 'dark subtracted' });
  h.set('FLATCORR', info.flat !== null, { comment: 'divided by the normalised flat' });
  h.set('DARKSEL', info.dark ?? 'none', { comment: 'dark master used' });
  if (info.dark !== null) h.set('DARKSCAL', Number(info.darkScale.toFixed(6)), { real: true, comment: 'factor on the dark master (exposure ratio)' });
  // A raw saturation level means nothing after calibration; the lowest calibrated value a
  // saturated pixel can take is (level − bias − dark) / (brightest flat), which keeps
  // "saturated" meaning "at or above this" for star detection on the calibrated frame.
  const move = (v: number) => Number(((v - info.biasLevel - info.darkLevel) / Math.max(info.flatHigh, 1e-6)).toFixed(3));
  let recorded = false;
  for (const key of SATURATION_KEYS) {
    const v = h.getNumber(key);
    if (v === undefined) continue;
    h.set(key, move(v), { real: true });
    recorded = true;
  }
  if (!recorded && plateau !== null && Number.isFinite(plateau)) h.set('SATURATE', move(plateau), { real: true, comment: 'saturation plateau of the light, calibrated' });
  if (info.bias !== null) h.addHistory(`skystack CALIBRATION: bias ${info.bias} subtracted`);
  if (info.dark !== null) h.addHistory(`skystack CALIBRATION: dark ${info.dark} x ${info.darkScale.toFixed(4)} subtracted`);
  if (info.flat !== null) h.addHistory(`skystack CALIBRATION: divided by flat ${info.flat} (median 1 per CFA site)`);
  return h;
}
