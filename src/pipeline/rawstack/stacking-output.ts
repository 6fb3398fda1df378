// STACKING's image output: final cosmetic correction and the FITS header with provenance
// (docs/ARCHITECTURE.md "Raw Stack decisions"). The stacked image is in the reference frame's geometry and, after normalisation,
// in its photometric scale, so the header starts from the reference light's header with every
// card kept (unknown ones too) and then:
//   NCOMBINE  number of stacked frames
//   EXPTIME   total exposure of the stacked frames, seconds (sum of their EXPTIMEs)
//   LIVETIME  the same total (the key several tools read for integration time)
//   SUBEXP    mean single-frame exposure, seconds (the per-frame value EXPTIME held before);
//             EXPOSURE, which tools read as a synonym of EXPTIME, is removed so the two cannot
//             disagree
//   DATE-OBS  start of the earliest stacked frame; DATE-END end of the latest (start + exposure)
//   removed:  BAYERPAT, XBAYROFF, YBAYROFF, COLORTYP (and CFA-PAT, CFAPAT, BAYOFFX, BAYOFFY) on
//             debayered RGB output; DATAMIN/DATAMAX (no longer describe the data); checksums
//   superpixel: XBINNING/YBINNING and pixel sizes doubled, WCS moved to the cell grid
//   HISTORY   one line per phase that ran before (status and key parameters), then STACKING's
//             parameters.
// Structural cards (BITPIX, NAXISn, BZERO, ...) come from the data (src/fits/write.ts).
// Also the parts of stacking_diagnostics.json built from the engine's tallies and the band plan
// (per-frame rows, rejection totals, the plan).

import { basename } from 'node:path';
import type { FitsHeader } from '../../fits/index.js';
import type { PhaseOutcome } from '../phase.js';
import { runRelative, type RunFolder } from '../run-folder.js';
import { cosmeticCorrect, estimateNoise } from '../stages/stacking/cosmetic.js';
import { GROW as PREMASK_GROW } from '../../cpu/premask.js';
import type { EngineTotals } from '../stages/stacking/engine.js';
import type { StackPlan } from '../stages/stacking/plan.js';
import type { PremaskChunks } from '../stages/stacking/slots.js';
import type { StackSetup } from './stacking-setup.js';
import type { RawStackState } from './state.js';
import { SKYSTACK_VERSION } from '../../version.js';

const CFA_KEYS = ['BAYERPAT', 'XBAYROFF', 'YBAYROFF', 'COLORTYP', 'CFA-PAT', 'CFAPAT', 'BAYOFFX', 'BAYOFFY'];
const STALE_KEYS = ['DATAMIN', 'DATAMAX', 'EXPOSURE', 'CHECKSUM', 'DATASUM'];

/**
 * Adds `text` as HISTORY cards of at most 72 characters, broken after "; " or a space, later
 * lines indented by two spaces, so a reader sees whole words.
 */
function addHistory(h: FitsHeader, text: string): void {
  let rest = text;
  let first = true;
  while (rest.length > 0) {
    const room = first ? 72 : 70;
    let line = rest;
    if (rest.length > room) {
      const cut = Math.max(rest.lastIndexOf('; ', room - 1) + 1, rest.lastIndexOf(' ', room));
      const at = cut > room / 2 ? cut : room;
      line = rest.slice(0, at);
    }
    rest = rest.slice(line.length).trimStart();
    h.addHistory((first ? '' : '  ') + line.trimEnd());
    first = false;
  }
}

/** FITS date text (UTC, no zone suffix, millisecond precision) of an ISO instant. */
const fitsDate = (ms: number) => new Date(ms).toISOString().replace(/Z$/, '');

export interface StackParameters {
  method: string;
  low: number;
  high: number;
  maxIters: number;
  minFraction: number;
  normalization: string;
  /** Rejection bounds of sigma/winsor (noise_model with its seeing tolerance, or sample); null for median/none. */
  bounds: string | null;
  localNormalization: boolean;
  weighting: string;
  kernel: string;
  cfaMode: string | null;
  cosmetic: string;
}

function phaseHistory(state: RawStackState, setup: StackSetup, phase: string, outcome: PhaseOutcome): string {
  const status = outcome.status === 'ok' ? 'ok' : `${outcome.status} (${outcome.reason})`;
  const frames = state.frames;
  const n = (pred: (f: (typeof frames)[number]) => boolean) => frames.filter(pred).length;
  let detail = '';
  switch (phase) {
    case 'INPUT_SCAN':
      detail = state.queue
        ? `${frames.length} lights of ${state.queue.filter((e) => e.active).length} run queue entries (this stack: filter ${setup.reference.filter ?? '?'}), ${setup.width}x${setup.height} ${state.colorMode ?? ''}${state.bayer ? ` ${state.bayer}` : ''}`
        : `${frames.length} lights "${state.config.pattern}", ${setup.width}x${setup.height} ${state.colorMode ?? ''}${state.bayer ? ` ${state.bayer}` : ''}`;
      break;
    case 'CALIBRATION': {
      const m = state.masters;
      const name = (p: string | null) => (p ? basename(p) : 'none');
      detail = `bias ${name(m.bias)}, dark ${name(m.dark)}, flat ${name(m.flat)}, darkflat ${name(m.darkflat)}`;
      break;
    }
    case 'CFA_CHANNEL_PREP':
      detail = `${setup.channels === 3 ? 'R,G,B' : 'mono'} statistics for normalization`;
      break;
    case 'REFERENCE_SELECTION':
      detail = `frame ${setup.reference.index} ${setup.reference.name} (${state.referenceStrategy ?? state.config.registration_reference})`;
      break;
    case 'REGISTRATION':
      detail = `affine, ${n((f) => f.registration?.ok === true)} of ${frames.length} frames registered`;
      break;
    case 'QUALITY_ANALYSIS':
      detail = `metrics of ${n((f) => f.metrics !== null)} frames`;
      break;
    case 'FRAME_FILTERING':
      detail = `mode ${state.config.quality_filter.mode}, ${n((f) => f.status === 'included')} of ${frames.length} frames kept`;
      break;
  }
  return `${phase}: ${status}${detail ? `; ${detail}` : ''}`;
}

/**
 * Header cards of a 2×2-binned image (superpixel): binning and pixel size doubled (XPIXSZ already
 * includes binning, the MaxIm DL convention), WCS reference pixel and scale moved to cells:
 * cell (u, v) covers pixels 2u, 2u + 1, so 1-based CRPIX c becomes (c + 0.5) / 2.
 */
function binCards(h: FitsHeader, b: number): void {
  for (const k of ['XBINNING', 'YBINNING']) h.set(k, (h.getNumber(k) ?? 1) * b, { comment: 'binning (superpixel debayer doubles it)' });
  for (const k of ['XPIXSZ', 'YPIXSZ', 'PIXSIZE1', 'PIXSIZE2']) {
    const v = h.getNumber(k);
    if (v !== undefined) h.set(k, v * b, { real: true });
  }
  for (const k of ['CRPIX1', 'CRPIX2']) {
    const v = h.getNumber(k);
    if (v !== undefined) h.set(k, (v + 0.5) / b, { real: true });
  }
  for (const k of ['CDELT1', 'CDELT2', 'CD1_1', 'CD1_2', 'CD2_1', 'CD2_2']) {
    const v = h.getNumber(k);
    if (v !== undefined) h.set(k, v * b, { real: true });
  }
}

export function stackHeader(state: RawStackState, setup: StackSetup, outcomes: ReadonlyMap<string, PhaseOutcome>, p: StackParameters): FitsHeader {
  const h = setup.referenceHeader.clone();
  if (setup.channels === 3) for (const k of CFA_KEYS) h.delete(k);
  if (setup.binning !== 1) binCards(h, setup.binning);
  for (const k of STALE_KEYS) h.delete(k);
  const frames = setup.frames;
  const exposures = frames.map((f) => f.exposure).filter((e): e is number => e !== null && Number.isFinite(e));
  h.set('NCOMBINE', frames.length, { comment: 'number of stacked frames' });
  if (exposures.length > 0) {
    const total = exposures.reduce((a, b) => a + b, 0);
    h.set('EXPTIME', total, { real: true, comment: '[s] total exposure of the stacked frames' });
    h.set('LIVETIME', total, { real: true, comment: '[s] total exposure of the stacked frames' });
    h.set('SUBEXP', total / exposures.length, { real: true, comment: '[s] mean single-frame exposure' });
  }
  const starts = frames
    .map((f) => ({ t: f.dateObs ? Date.parse(f.dateObs) : NaN, e: f.exposure ?? 0 }))
    .filter((s) => Number.isFinite(s.t));
  if (starts.length > 0) {
    h.set('DATE-OBS', fitsDate(Math.min(...starts.map((s) => s.t))), { comment: 'start of the earliest stacked frame (UTC)' });
    h.set('DATE-END', fitsDate(Math.max(...starts.map((s) => s.t + s.e * 1000))), { comment: 'end of the latest stacked frame (UTC)' });
  }
  addHistory(h, `skystack ${SKYSTACK_VERSION} Raw Stack run ${state.runId}`);
  // The phases that ended before STACKING, in run order (the outcomes' insertion order).
  for (const [phase, outcome] of outcomes) {
    if (phase === 'STACKING') break;
    addHistory(h, phaseHistory(state, setup, phase, outcome));
  }
  addHistory(
    h,
    `STACKING: ${frames.length} frames onto frame ${setup.reference.index}; rejection ${p.method} low ${p.low} high ${p.high} max_iters ${p.maxIters} min_fraction ${p.minFraction}${p.bounds ? ` bounds ${p.bounds}` : ''}; normalization ${p.normalization}${p.localNormalization ? ' + local' : ''}; weighting ${p.weighting}; warp ${p.kernel}${p.cfaMode ? `; debayer ${p.cfaMode}` : ''}; cosmetic ${p.cosmetic}`,
  );
  return h;
}

/**
 * Final cosmetic correction of the stacked planes (planar C × H × W, in place): per plane,
 * σ from neighbour differences over the whole plane, then the isolated-outlier rule of
 * stages/stacking/cosmetic.ts with step 1. Returns the pixels replaced.
 */
export function finalCosmetic(image: Float32Array, width: number, height: number, planes: number, sigma: number): { hot: number; cold: number } {
  let hot = 0;
  let cold = 0;
  const n = width * height;
  for (let c = 0; c < planes; c++) {
    const plane = image.subarray(c * n, (c + 1) * n);
    const noise = estimateNoise(plane, width, height, 0, 1);
    const r = cosmeticCorrect(plane, { width, height, readY0: 0, y0: 0, y1: height, step: 1, sigma, noise });
    plane.set(r.data);
    hot += r.hot;
    cold += r.cold;
  }
  return { hot, cold };
}

/** `v` rounded to `d` decimals; null when not finite (JSON has no NaN). */
export const round = (v: number, d = 3): number | null => (Number.isFinite(v) ? Math.round(v * 10 ** d) / 10 ** d : null);

/** Samples rejected low and high over every frame and channel, the valid samples, and the rejected fraction. */
export function rejectionTotals(totals: EngineTotals, frames: number): { low: number; high: number; validSamples: number; fraction: number } {
  let low = 0;
  let high = 0;
  for (const r of totals.rejected) {
    for (let f = 0; f < frames; f++) {
      low += r[f]!;
      high += r[frames + f]!;
    }
  }
  const validSamples = totals.validSamples.reduce((a, b) => a + b, 0);
  return { low, high, validSamples, fraction: validSamples > 0 ? (low + high) / validSamples : 0 };
}

/**
 * One diagnostics row per stacked frame: its source (relative to the run folder when inside it),
 * weight, exposure, normalisation and rejections per channel.
 */
export function frameDiagnostics(setup: StackSetup, totals: EngineTotals, names: string[], folder: Pick<RunFolder, 'runDir'>) {
  const N = setup.frames.length;
  return setup.frames.map((f) => {
    const rejected = names.map((name, ch) => ({ channel: name, low: totals.rejected[ch]![f.slot]!, high: totals.rejected[ch]![N + f.slot]! }));
    return {
      index: f.record.index,
      file: f.record.name,
      source: runRelative(folder, f.source),
      weight: f.weight,
      exposure: f.exposure,
      normalization: names.map((name, ch) => ({ channel: name, location: round(f.stats[ch]!.location, 4), spread: round(f.stats[ch]!.spread, 4), median: round(f.stats[ch]!.median, 4), scale: f.scale[ch]!, offset: f.offset[ch]! })),
      rejected,
      rejected_total: rejected.reduce((a, r) => a + r.low + r.high, 0),
    };
  });
}

/** The band plan as the diagnostics show it. `extraBytes`: the pre-mask's bytes per frame pixel the plan reserved. */
export function bandPlanDiagnostics(plan: StackPlan, state: RawStackState, o: { premask: boolean; frames: number; channels: number; extraBytes: number; premaskChunks: PremaskChunks | null }) {
  return {
    memory_budget_mib: state.config.runtime_limits.memory_budget,
    memory_budget_bytes: plan.memoryBudgetBytes,
    rows_per_band: plan.rowsPerBand,
    halo_rows: o.premask ? PREMASK_GROW : 0,
    bands: plan.bands.length,
    bytes_per_band: plan.bytesPerBand,
    scratch_bytes: plan.scratchBytes,
    limited_by: plan.limitedBy,
    frames: o.frames,
    channels: o.channels,
    // Warped samples (4 per channel) plus the pre-mask's mask byte and copy, per frame and pixel.
    bytes_per_pixel_per_frame: 4 * o.channels + o.extraBytes,
    max_source_rows: plan.maxSourceRows,
    // The host pre-mask beside a device stack: owned rows per row chunk, or owned columns per
    // column window of every work row (many frames); null where it masks whole bands or is off.
    premask_chunks: o.premaskChunks,
    // The device buffer pool's high-water mark (all phases so far; the pool is capped at the budget).
    device_pool_peak_bytes: state.gpu ? state.gpu.pool.stats.peakBytes : null,
    bands_rows: plan.bands.map((b) => [b.y0, b.rows]),
  };
}
