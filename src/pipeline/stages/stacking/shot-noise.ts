// The noise-model rejection's shot-noise term K_f (src/cpu/reject-noise.ts: τ_f² = σ_f² + K_f·S
// + (α_f·S)²) from the camera's conversion factor. A calibrated frame's signal of S_raw ADU
// holds S_raw·g electrons (g in e-/ADU), whose Poisson variance is S_raw·g e-², i.e. S_raw/g
// ADU²; after normalisation v' = scale·v + offset the signal is S = scale·S_raw and the
// variance scale²·S_raw/g = (scale/g)·S, so K_f = scale_f / g_f per channel.
// Where g comes from: the light's EGAIN header (MaxIm DL / N.I.N.A.; GAIN is the camera's
// setting, not e-/ADU), read by the stacking setup (SetupFrame.gain). Without it K_f = 0: the
// bound then holds the sky noise and the seeing term only, which above a few ADU of signal
// dominates the shot noise anyway. Calibration (bias and dark subtracted, flat normalised to 1)
// keeps the ADU scale of the light, so its g applies. An interpolated (debayered) or averaged
// (superpixel green) channel has less shot noise than one site: K_f is then an upper bound and
// the bound errs on the side of keeping samples.

import type { StackFrame } from './plan.js';

/** K_f per channel of a frame: scale / gain, 0 without a gain. */
export function shotNoiseK(f: Pick<StackFrame, 'scale' | 'gain'>): number[] {
  const g = f.gain;
  return f.scale.map((s) => (g !== undefined && g !== null && g > 0 && Number.isFinite(g) && Number.isFinite(s) && s > 0 ? s / g : 0));
}

/** What the shot-noise term used, for stacking_diagnostics.json. */
export interface ShotNoiseRecord {
  /** 'EGAIN': from the frames' headers (frames without one: K = 0); 'none': no frame had one. */
  source: 'EGAIN' | 'none';
  frames_with_gain: number;
  /** The gains found (e-/ADU), distinct values, ascending. */
  gains: number[];
}

export function shotNoiseSource(frames: readonly Pick<StackFrame, 'gain'>[]): ShotNoiseRecord {
  const gains = frames.map((f) => f.gain).filter((g): g is number => typeof g === 'number' && g > 0 && Number.isFinite(g));
  return { source: gains.length > 0 ? 'EGAIN' : 'none', frames_with_gain: gains.length, gains: [...new Set(gains)].sort((a, b) => a - b) };
}
