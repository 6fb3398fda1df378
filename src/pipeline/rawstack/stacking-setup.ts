// STACKING setup: everything the band loop needs per frame, computed once before the first band
// (small per-frame records, no pixel data kept; the engine's record is stages/stacking/plan.ts).
// Per frame: the warp matrix (reference pixel → frame pixel, the inverse of REGISTRATION's
// frame → reference matrix; identity for the reference), the effective CFA pattern of its stored
// pixel (0, 0) (the run's Bayer pattern shifted by the light's XBAYROFF/YBAYROFF/ROWORDER), the
// per-channel normalisation (stages/stacking/normalization.ts), the weight and, when per-frame cosmetic
// correction is on, its pixel noise per CFA phase (from a central strip of rows).
// Frames that cannot be stacked are excluded here with a reason and the run goes on: no usable
// registration matrix while other frames have one (registration_failed), a pixel source that
// cannot be opened (unreadable) or has another size (size_mismatch).

import { identity, invertAffine, type Affine } from '../../algorithms/affine.js';
import type { CfaPattern } from '../../cpu/debayer.js';
import { frameCfaPhase } from '../stages/cfa-phase.js';
import { sourceRowsFor, type WarpKernel } from '../../cpu/warp.js';
import { isFitsError, keys, readFitsHeader, type FitsHeader } from '../../fits/index.js';
import { forEachLimit } from '../concurrency.js';
import type { PhaseContext } from '../phase.js';
import { estimateNoise } from '../stages/stacking/cosmetic.js';
import { measureChannels, normalizationFor, statsOf, type ChannelStats, type NormalizationMode } from '../stages/stacking/normalization.js';
import { toCells, type StackFrame } from '../stages/stacking/plan.js';
import { groupReference, type FilterGroup } from './queue.js';
import type { ReaderCache } from '../stages/stacking/readers.js';
import { exclude, pixelSource, type FrameRecord, type RawStackState } from './state.js';

/** A stacked frame as Raw Stack sets it up: the engine's record plus the frame it came from. */
export interface SetupFrame extends StackFrame {
  record: FrameRecord;
}

export interface StackSetup {
  frames: SetupFrame[];
  reference: FrameRecord;
  referenceHeader: FitsHeader;
  channels: 1 | 3;
  /** Output (and warp source) size: the frames' size, or half of it for superpixel. */
  width: number;
  height: number;
  /** The frames' own size. */
  frameWidth: number;
  frameHeight: number;
  /** 2 for superpixel OSC (each 2×2 Bayer cell becomes one RGB pixel), else 1. */
  binning: 1 | 2;
  normalizationSource: 'state' | 'measured' | 'mixed';
  /** Frames stacked unregistered (identity) because REGISTRATION left no matrix at all. */
  unregistered: boolean;
}

export class SetupError extends Error {
  constructor(
    readonly reason: 'no_frames' | 'input_error',
    message: string,
  ) {
    super(message);
  }
}

const flat = (m: Affine): number[] => [m[0][0], m[0][1], m[0][2], m[1][0], m[1][1], m[1][2]];

/**
 * Builds the per-frame records. `needNoise`: measure each frame's pixel noise (per-frame
 * cosmetic correction, the pre-mask).
 */
export async function prepareFrames(ctx: PhaseContext<RawStackState>, readers: ReaderCache, kernel: WarpKernel, needNoise: boolean, superpixel: boolean, group: FilterGroup | null = null): Promise<StackSetup> {
  const { state } = ctx;
  const c = state.config;
  const W = state.width;
  const H = state.height;
  if (W === null || H === null) throw new SetupError('input_error', 'image size unknown: INPUT_SCAN did not complete');
  const osc = state.colorMode === 'OSC';
  const binning: 1 | 2 = osc && superpixel ? 2 : 1;
  const OW = Math.floor(W / binning);
  const OH = Math.floor(H / binning);
  if (OW < 1 || OH < 1) throw new SetupError('input_error', `frames of ${W}x${H} are too small for superpixel debayering`);
  const channels: 1 | 3 = osc ? 3 : 1;
  let included = (group ? group.frames : state.frames).filter((f) => f.status === 'included');
  if (included.length === 0) throw new SetupError('no_frames', `no included frames to stack${group?.filter ? ` for filter ${group.filter}` : ''}`);
  // Run queue: the photometric (and header) reference of a filter is its group reference; the
  // geometry is always the common reference's, through the registration matrices.
  let reference = group ? groupReference(state, included) : state.referenceIndex !== null ? state.frames[state.referenceIndex] : undefined;
  if (!reference || reference.status !== 'included') {
    const was = reference ? `reference frame ${reference.index} is excluded` : 'no reference frame was selected';
    reference = included[0]!;
    ctx.warn('stacking_reference', `${was}; normalising and stacking onto frame ${reference.index} (${reference.name})`);
  }

  // Registration matrices.
  const anyMatrix = included.some((f) => f !== reference && f.registration?.matrix);
  const unregistered = !anyMatrix && included.length > 1;
  if (unregistered) ctx.warn('unregistered', 'no frame carries a registration matrix: stacking the frames unaligned (identity transforms)');
  const toFrame = new Map<FrameRecord, number[]>();
  for (const f of included) {
    let m: Affine | null;
    // The reference's own matrix is the identity; a fallback reference (the selected one was
    // excluded) or a queue group's reference keeps its matrix onto the common reference.
    if (unregistered) m = identity();
    else if (f.registration?.ok !== false && f.registration?.matrix) m = invertAffine(f.registration.matrix);
    else if (f === reference) m = identity();
    else m = null;
    if (m === null) {
      exclude(f, 'registration_failed', f.registration?.matrix ? 'registration matrix is singular' : 'no registration matrix');
      ctx.frame(f.index, f.name, 'excluded', 'registration_failed');
      continue;
    }
    if (binning === 2) m = toCells(m);
    try {
      sourceRowsFor(flat(m), 0, 1, OW, OH, kernel); // validates the warp's coefficient range
    } catch (e) {
      exclude(f, 'registration_failed', `matrix outside the warp's range: ${(e as Error).message}`);
      ctx.frame(f.index, f.name, 'excluded', 'registration_failed');
      continue;
    }
    toFrame.set(f, flat(m));
  }

  // Headers (CFA phase, provenance) and pixel-source checks, parallel_workers at a time.
  const headers = new Map<FrameRecord, FitsHeader>();
  const patterns = new Map<FrameRecord, CfaPattern | null>();
  await forEachLimit([...toFrame.keys()], c.runtime_limits.parallel_workers, async (f) => {
    ctx.checkCancelled();
    try {
      const source = pixelSource(f);
      const ok = await readers.use(source, async (r) => {
        if (r.width !== W || r.height !== H) {
          exclude(f, 'size_mismatch', `${source} is ${r.width}x${r.height}, the run's frames are ${W}x${H}`);
          return false;
        }
        if (source === f.file) headers.set(f, r.header);
        return true;
      });
      if (!ok) {
        ctx.frame(f.index, f.name, 'excluded', 'size_mismatch');
        return;
      }
      if (!headers.has(f)) headers.set(f, (await readFitsHeader(f.file)).header);
    } catch (e) {
      exclude(f, 'unreadable', `cannot open for stacking: ${(e as Error).message}`);
      ctx.frame(f.index, f.name, 'excluded', isFitsError(e) ? e.code : 'unreadable', { exclusion: 'unreadable', detail: (e as Error).message });
      return;
    }
    const h = headers.get(f)!;
    if (osc) {
      const base = state.bayer;
      if (!base) throw new SetupError('input_error', 'OSC frames without a Bayer pattern');
      patterns.set(f, frameCfaPhase(base, h, H));
    } else patterns.set(f, null);
  });
  ctx.checkCancelled();
  included = included.filter((f) => f.status === 'included' && toFrame.has(f));
  if (included.length === 0) throw new SetupError('no_frames', 'none of the included frames can be stacked');
  if (reference.status !== 'included') throw new SetupError('input_error', `the reference frame ${reference.name} cannot be read for stacking`);

  // Normalisation statistics: from CFA_CHANNEL_PREP when every frame has them, else measured here.
  const hasStats = (f: FrameRecord) => Array.isArray(f.normalization) && f.normalization.length === channels && f.normalization.every((n) => Number.isFinite(n.location) && Number.isFinite(n.spread));
  const missing = included.filter((f) => !hasStats(f));
  const stats = new Map<FrameRecord, ChannelStats[]>();
  for (const f of included) if (hasStats(f)) stats.set(f, f.normalization!.map(statsOf));
  // With normalization none only the reference's level is needed (the pre-mask's L).
  const toMeasure = c.stacking.normalization !== 'none' ? missing : missing.filter((f) => f === reference);
  if (toMeasure.length > 0) {
    let done = 0;
    await forEachLimit(toMeasure, c.runtime_limits.parallel_workers, async (f) => {
      ctx.checkCancelled();
      const s = await readers.use(pixelSource(f), (r) => measureChannels(r, patterns.get(f) ?? null));
      stats.set(f, s);
      ctx.progress(++done, toMeasure.length, 'normalization statistics');
    });
  }
  const normalizationSource = missing.length === 0 ? 'state' : missing.length === included.length ? 'measured' : 'mixed';
  const mode = c.stacking.normalization as NormalizationMode;
  const nan: ChannelStats = { location: NaN, spread: NaN, median: NaN };
  const refStats = stats.get(reference) ?? Array.from({ length: channels }, () => nan);

  // Weights.
  const uniform = c.stacking.weighting === 'uniform';
  const noWeight = included.filter((f) => !(typeof f.weight === 'number' && Number.isFinite(f.weight) && f.weight >= 0));
  if (!uniform && noWeight.length > 0) ctx.warn('weights_missing', `${noWeight.length} frame(s) carry no quality weight; they are stacked with weight 1`);

  const frames: SetupFrame[] = [];
  const fallbacks: string[] = [];
  for (const f of included) {
    const s = stats.get(f) ?? Array.from({ length: channels }, () => nan);
    const so = s.map((cs, ch) => (f === reference ? { scale: 1, offset: 0 } : normalizationFor(mode, cs, refStats[ch]!)));
    for (const x of so) if ('fallback' in x && x.fallback) fallbacks.push(`${f.name}: ${x.fallback}`);
    // Record what is applied (the report and registration of the contract read these).
    f.normalization = s.map((cs, ch) => ({ location: cs.location, spread: cs.spread, median: cs.median, scale: so[ch]!.scale, offset: so[ch]!.offset }));
    const info = f.info;
    frames.push({
      slot: frames.length,
      record: f,
      source: pixelSource(f),
      toFrame: toFrame.get(f)!,
      pattern: patterns.get(f) ?? null,
      stats: s,
      scale: so.map((x) => x.scale),
      offset: so.map((x) => x.offset),
      weight: uniform ? 1 : typeof f.weight === 'number' && Number.isFinite(f.weight) && f.weight >= 0 ? f.weight : 1,
      noise: null,
      exposure: info?.exptime ?? (headers.get(f) ? (keys.exposureSeconds(headers.get(f)!) ?? null) : null),
      dateObs: info?.dateObs ?? (headers.get(f) ? (keys.dateObs(headers.get(f)!)?.toISOString() ?? null) : null),
      gain: egainOf(headers.get(f)),
    });
  }
  if (fallbacks.length > 0) ctx.warn('normalization_fallback', `normalisation fell back to scale 1 for ${fallbacks.length} channel(s): ${fallbacks.slice(0, 3).join('; ')}${fallbacks.length > 3 ? '; …' : ''}`);
  if (frames.every((f) => f.weight === 0)) throw new SetupError('no_frames', 'every included frame has weight 0');

  // Noise per CFA phase (per-frame cosmetic correction, pre-mask): a fixed central strip, so the
  // value (hence every decision made with it) does not depend on the band plan.
  if (needNoise) {
    const strip = Math.min(H, 64);
    const y0 = Math.max(0, Math.floor((H - strip) / 2) & ~1);
    await forEachLimit(frames, c.runtime_limits.parallel_workers, async (sf) => {
      ctx.checkCancelled();
      const band = await readers.use(sf.source, (r) => r.readRows(y0, Math.min(strip, H - y0), { planes: [0] }));
      sf.noise = estimateNoise(band.data, W, band.rows, y0, osc ? 2 : 1);
    });
  }
  return {
    frames,
    reference,
    referenceHeader: headers.get(reference)!,
    channels,
    width: OW,
    height: OH,
    frameWidth: W,
    frameHeight: H,
    binning,
    normalizationSource,
    unregistered,
  };
}

/** A header's EGAIN (electrons per ADU) when it is a usable positive number, else null. */
export function egainOf(h: FitsHeader | undefined): number | null {
  const g = h ? keys.electronsPerAdu(h) : undefined;
  return g !== undefined && Number.isFinite(g) && g > 0 ? g : null;
}
