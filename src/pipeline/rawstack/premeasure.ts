// Hand-over of per-frame measurements between phases (main thread side of stages/frames/analysis.ts):
// CALIBRATION (light task) or CFA_CHANNEL_PREP (analyze task) measure a frame's stars and channel
// statistics while its pixels are in memory and park them on the frame record; CFA_CHANNEL_PREP
// and REFERENCE_SELECTION take them instead of reading the frame again.
// Invariants: a record is used only for the file it was measured on (the frame's current
// pixelSource), and each part is taken at most once (then dropped, so a long run does not keep
// star lists twice); the specs are the single definition of what those phases measure.

import type { CfaPattern } from '../../cpu/debayer.js';
import { MAX_STORED_STARS, type AnalysisSpec, type ChannelsSpec, type ChannelsTaskResult, type MeasureResult, type MeasureSpec } from '../stages/frames/analysis.js';
import { pixelSource, type FrameRecord, type RawStackState } from './state.js';

/**
 * Whether the lights get a cosmetic pass (hot and cold pixels) before star detection and
 * stacking: no dark was applied (none configured, or CALIBRATION did not run) and
 * calibration.cosmetic_without_darks is on. A dark removes hot pixels itself.
 */
export function cosmeticWithoutDarks(state: RawStackState): { sigma: number } | null {
  const c = state.config.calibration;
  return c.cosmetic_without_darks && state.masters.dark === null ? { sigma: c.cosmetic_without_darks_sigma } : null;
}

/** What REFERENCE_SELECTION measures on every frame. */
export function measureSpecOf(state: RawStackState): MeasureSpec {
  return { cfa: state.colorMode === 'OSC', maxStars: MAX_STORED_STARS, cosmetic: cosmeticWithoutDarks(state) };
}

/** What CFA_CHANNEL_PREP measures on every frame (null before INPUT_SCAN fixed the frame size). */
export function channelsSpecOf(state: RawStackState): ChannelsSpec | null {
  if (state.width === null || state.height === null) return null;
  const osc = state.colorMode === 'OSC';
  return { width: state.width, height: state.height, pattern: osc ? ((state.bayer ?? 'RGGB') as CfaPattern) : null, channels: osc ? 3 : 1 };
}

export function analysisSpecOf(state: RawStackState): AnalysisSpec {
  return { measure: measureSpecOf(state), channels: channelsSpecOf(state) };
}

function current(frame: FrameRecord) {
  const p = frame.premeasured;
  return p && p.source === pixelSource(frame) ? p : null;
}

/** The frame's channel statistics measured earlier on its current pixels, taken (null: none). */
export function takeChannels(frame: FrameRecord): ChannelsTaskResult | null {
  const p = current(frame);
  if (!p?.channels) return null;
  const r = p.channels;
  p.channels = null;
  return r;
}

/** The frame's star measurement made earlier on its current pixels, taken (null: none). */
export function takeMeasure(frame: FrameRecord): MeasureResult | null {
  const p = current(frame);
  const r = p?.measure ?? null;
  frame.premeasured = null;
  return r;
}
