// STACKING (core, never skipped): combines the included frames into one linear image in the
// reference frame's geometry and photometric scale.
//   setup (stacking-setup.ts): warp matrices (inverse of REGISTRATION's frame → reference
//     matrices), CFA phases, normalisation scale/offset per frame and channel
//     (stacking.normalization, relative to the reference), weights (stacking.weighting), and
//     the band plan under runtime_limits.memory_budget;
//   local normalization and noise model (stages/stacking/local-norm.ts, docs/stacking-quality.md):
//     with stacking.local_normalization each frame's background is fitted against the
//     reference's on binned planes (one extra read of every frame) and applied as the warp
//     writes each slot sample; with rejection.bounds noise_model (sigma, winsor) the reference's
//     sky, the frames' noise and seeing tolerances give the pre-mask's and the rejection's bounds;
//   band loop (stages/stacking/engine.ts): per band of output rows, every frame's source rows are read,
//     optionally cosmetic-corrected, debayered (OSC: cfa_mode bilinear, or superpixel at half
//     size), Lanczos-3 warped into its slot; then per channel the outlier pre-mask
//     (cpu/premask.ts, before sigma and winsor: trails and hot pixels masked with growth
//     around a per-pixel median) and the stack over ALL frames with rejection.method (exact
//     global rejection, never batch averaging);
//   output (stacking-output.ts): optional final cosmetic correction, float32 FITS
//     outputs/stacked_linear.fits (mono) or outputs/stacked_rgb.fits (OSC: planes R, G, B) with
//     provenance cards, artifacts/preprocess/stacking_diagnostics.json, state.summaries.STACKING.
// Errors: no stackable frame → no_frames; a budget too small for the smallest band →
// budget_error with the planner's message; GPU device loss → device_error; a pixel source that
// fails mid-loop → input_error. Cancellation is checked before every frame of every band.
// Memory: one band of all frames plus per-frame scratch (the band plan) and the output image;
// frames are never held whole, so 1000 frames need no more than 20 apart from thinner bands.

import { isFitsError, writeFits } from '../../../fits/index.js';
import { GpuError } from '../../../gpu/errors.js';
import { stackSrcRanges } from '../../../gpu/kernels/src-ranges.js';
import { lnTableBound } from '../../../gpu/kernels/warp.js';
import type { GpuContext } from '../../../gpu/context.js';
import type { WarpKernel } from '../../../cpu/warp.js';
import { exposeGc } from '../../../cpu/worker-gc.js';
import type { StackMethod } from '../../../cpu/stack.js';
import { writeJsonAtomic } from '../../atomic.js';
import { stackingPlacement, withStackOnHost, type StackingPlacement } from '../../device-policy.js';
import { CancelledError, failed, ok, type PhaseContext } from '../../phase.js';
import type { RawStackPhase, RawStackOutcome } from '../reasons.js';
import { BandEngine, type EngineOptions, type NoiseModel } from '../../stages/stacking/engine.js';
import { setupLocalNormalization, type LnPending, type LnSetup } from '../../stages/stacking/local-norm.js';
import { dropLnPlanes, takeLnPlanes } from '../ln-premeasured.js';
import { seeingTolerances } from '../../../cpu/reject-noise.js';
import { GROW as PREMASK_GROW, ALPHA as PREMASK_ALPHA, MIN_FRAMES as PREMASK_MIN_FRAMES } from '../../../cpu/premask.js';
import { channelNames } from '../../stages/stacking/normalization.js';
import { bandPlanDiagnostics, finalCosmetic, frameDiagnostics, rejectionTotals, round, stackHeader, type StackParameters } from '../stacking-output.js';
import { ReaderCache } from '../../stages/stacking/readers.js';
import { hostSourceSets } from '../../stages/stacking/slots.js';
import { channelNoise, planStackBands, readHalo, stackWorkingSet, type StackPlan } from '../../stages/stacking/plan.js';
import { shotNoiseK, shotNoiseSource } from '../../stages/stacking/shot-noise.js';
import { prepareFrames, SetupError, type StackSetup } from '../stacking-setup.js';
import type { WeightField } from '../../stages/stacking/weightfield.js';
import { composeQueueOutputs } from '../queue-outputs.js';
import { filterGroups, stackFileName, type FilterGroup } from '../queue.js';
import type { RawStackState } from '../state.js';
import { cosmeticWithoutDarks } from '../premeasure.js';
import { addArtifact } from '../../artifacts.js';
import { inRunFolder } from '../../run-folder.js';
import { artifactPath, outputPath } from '../../../shared/run-layout.js';
import type { ReportLocalNormalization } from '../../../report/model.js';

/** Resampling kernel of the warp (docs/ARCHITECTURE.md "Raw Stack decisions": Lanczos-3; bilinear is the kernels' other option). */
export const STACKING_WARP_KERNEL: WarpKernel = 'lanczos3';
/** Most FITS files kept open at once across bands. */
export const STACKING_OPEN_FILES = 64;

/**
 * Overrides for tests: where the pre-mask runs (null: by device kind); how many masked-sample
 * indices the host pre-mask may send to the device per band and channel (null: the engine's
 * capacity; beyond it the band is uploaded whole); owned rows per row chunk, or owned columns
 * per column window, of that host pre-mask (null: premaskChunking's choice); frames above which that host pre-mask takes
 * its median on the host (null: the engine's rule); the device's storage-binding size for the
 * band plan and the stack kernels (null: the adapter's; smaller forces frame ranges).
 */
export const stackingOptions: { premaskOnDevice: boolean | null; premaskIndexCapacity: number | null; premaskChunkRows: number | null; premaskChunkCols: number | null; premaskHostMedianFrames: number | null; maxBindingBytes: number | null } = {
  premaskOnDevice: null,
  maxBindingBytes: null,
  premaskIndexCapacity: null,
  premaskChunkRows: null,
  premaskChunkCols: null,
  premaskHostMedianFrames: null,
};

const MiB = 1024 * 1024;
/** The main thread's collector (null where the runtime refuses it). */
const collectGarbage = exposeGc();

interface Live {
  readers: ReaderCache;
  engine: BandEngine | null;
  /** Deferred LN fits (their worker thread), closed when the phase ends whatever happened. */
  lnPending: LnPending | null;
}
const live = new WeakMap<RawStackState, Live>();

function describe(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/** The device-loss message when the run's GPU context was lost, else null. */
async function deviceLost(state: RawStackState): Promise<string | null> {
  if (!state.gpu) return null;
  try {
    await state.gpu.done();
    return null;
  } catch (e) {
    return e instanceof GpuError && e.code === 'DEVICE_LOST' ? e.message : null;
  }
}

/**
 * What another pipeline changes in this phase (the tiled workflow): the mono output's file
 * name, and a per-pixel weight field for the engine instead of the frames' weights (the stack
 * then runs on the host, or in stages/stacking/weightfield.ts's WGSL where weightFieldGpu
 * names a device). Raw Stack's is STACKING_DEFAULT.
 */
export interface StackingVariant {
  monoName: string;
  weightField?(ctx: PhaseContext<RawStackState>, setup: StackSetup): WeightField | null;
  /** Where the weight-field stack runs (null or absent: TypeScript). */
  weightFieldGpu?(state: RawStackState): GpuContext | null;
}

const STACKING_DEFAULT: StackingVariant = { monoName: 'stacked_linear.fits' };

/** This phase with another pipeline's variant. */
export function stackingPhaseWith(variant: StackingVariant): RawStackPhase {
  return { ...stackingPhase, run: (ctx) => runStackingPhase(ctx, variant) };
}

async function runStackingPhase(ctx: PhaseContext<RawStackState>, variant: StackingVariant): Promise<RawStackOutcome> {
  try {
    return ctx.state.queue ? await runQueueStacking(ctx) : await runStacking(ctx, null, variant);
  } catch (e) {
    if (e instanceof CancelledError) throw e;
    if (e instanceof SetupError) return failed(e.reason, e.message);
    if (e instanceof GpuError) {
      if (e.code === 'BUDGET_TOO_SMALL' || e.code === 'POOL_EXHAUSTED') return failed('budget_error', e.message);
      return failed('device_error', e.message);
    }
    if (isFitsError(e)) return failed('input_error', `reading frames for stacking failed: ${e.message}`);
    // A lost device surfaces through Dawn as assorted errors (a rejected mapAsync, ...): ask it.
    const lost = await deviceLost(ctx.state);
    if (lost) return failed('device_error', `${lost} (${describe(e)})`);
    throw e;
  }
}

export const stackingPhase: RawStackPhase = {
  name: 'STACKING',
  optional: false,

  memory(ctx) {
    const { state } = ctx;
    const channels = state.colorMode === 'OSC' ? 3 : 1;
    const budget = state.config.runtime_limits.memory_budget * MiB;
    const image = (state.width ?? 0) * (state.height ?? 0) * channels * 4;
    return { hostBytes: budget + image, deviceBytes: state.gpu ? budget : 0 };
  },

  async prepare(ctx) {
    const { state } = ctx;
    if (state.width === null || state.height === null || state.colorMode === null) return failed('input_error', 'INPUT_SCAN did not determine the image size and colour mode');
    if (!state.frames.some((f) => f.status === 'included')) return failed('no_frames', 'no included frames to stack');
  },

  run: (ctx) => runStackingPhase(ctx, STACKING_DEFAULT),

  async finalize(ctx) {
    // Planes QUALITY_ANALYSIS kept for frames no setup took (excluded since): not needed past here.
    dropLnPlanes(ctx.state);
    const l = live.get(ctx.state);
    live.delete(ctx.state);
    if (!l) return;
    await l.lnPending?.close();
    await l.engine?.dispose();
    await l.readers.closeAll();
  },
};

/** What one filter group's stack left (run queue): its file, diagnostics and summary. */
interface GroupSink {
  group: FilterGroup;
  outRel?: string;
  outPath?: string;
  diagnostics?: Record<string, unknown>;
  summary?: Record<string, unknown>;
}

/** What the configuration asks of one stack (section 1 of runStacking). */
interface StackRequest {
  kernel: WarpKernel;
  osc: boolean;
  /** cfa_mode: bilinear debayering at full resolution, or superpixel (each 2×2 cell one RGB pixel: half the size, no interpolated values). */
  superpixel: boolean;
  cfaMode: string | null;
  method: StackMethod;
  /** The pre-mask (cpu/premask.ts) guards sigma and winsor rejection; it needs a robust centre, i.e. at least MIN_FRAMES frames. */
  wantPremask: boolean;
  /** Per-frame cosmetic correction: configured, or on by itself when no dark removed the hot pixels (premeasure.ts cosmeticWithoutDarks). */
  autoCosmetic: { sigma: number } | null;
  cosmeticOn: boolean;
  cosmeticSigma: number;
  /** stacking.local_normalization (off with normalization none: there is nothing to refine). */
  ln: boolean;
  /** rejection.bounds noise_model with sigma or winsor. */
  noiseModel: boolean;
}

function stackRequest(state: RawStackState): StackRequest {
  const c = state.config;
  const osc = state.colorMode === 'OSC';
  const superpixel = osc && c.cfa_mode === 'superpixel';
  const method = c.rejection.method as StackMethod;
  // The same pass star detection ran after when no dark was applied.
  const autoCosmetic = c.stacking.per_frame_cosmetic_correction ? null : cosmeticWithoutDarks(state);
  return {
    kernel: STACKING_WARP_KERNEL,
    osc,
    superpixel,
    cfaMode: osc ? (superpixel ? 'superpixel' : 'bilinear') : null,
    method,
    wantPremask: method === 'sigma' || method === 'winsor',
    autoCosmetic,
    cosmeticOn: c.stacking.per_frame_cosmetic_correction || autoCosmetic !== null,
    cosmeticSigma: autoCosmetic ? autoCosmetic.sigma : c.stacking.per_frame_cosmetic_correction_sigma,
    ln: c.stacking.local_normalization && c.stacking.normalization !== 'none',
    noiseModel: (method === 'sigma' || method === 'winsor') && c.rejection.bounds === 'noise_model',
  };
}

/** Where the band chain runs, the pre-mask's parameters, the band plan and the bytes it reserves per frame pixel. */
interface StackLayout {
  placement: StackingPlacement;
  premask: EngineOptions['premask'];
  noiseModel: NoiseModel | null;
  plan: StackPlan;
  halo: number;
  extraBytes: number;
}

/**
 * Section 2 of runStacking: which device runs what (device-policy.ts), the pre-mask's noise and
 * level per frame, and the band plan under the memory budget; a plan too wide for a device
 * binding moves the stack to TypeScript and plans again. An outcome when no plan fits.
 */
function layoutStack(ctx: PhaseContext<RawStackState>, setup: StackSetup, r: StackRequest, ln: LnSetup | null, stackOnHost = false): StackLayout | RawStackOutcome {
  const { state } = ctx;
  const c = state.config;
  const N = setup.frames.length;
  const C = setup.channels;
  let placement = stackingPlacement(state.gpu, { frames: N, osc: r.osc, superpixel: r.superpixel, kernel: r.kernel, premaskOnDevice: stackingOptions.premaskOnDevice, noiseModel: r.noiseModel && ln !== null });
  if (placement.stackOnHost) ctx.warn('stack_on_host', placement.stackOnHost);
  // A weight field is the caller's choice, not a limit hit: no warning (the diagnostics' device paths say where it ran).
  if (stackOnHost && placement.stack) placement = withStackOnHost(placement, 'a per-pixel weight field stacks from host slots');
  const halo = readHalo(r.osc, r.cosmeticOn, r.superpixel);
  let premask: EngineOptions['premask'] = null;
  if (r.wantPremask && N >= PREMASK_MIN_FRAMES) {
    const sigma = setup.frames.map((f) => channelNoise(f, C).map((s, ch) => s * f.scale[ch]!));
    const refSlot = setup.frames.find((f) => f.record === setup.reference)!;
    const level = refSlot.stats.map((s) => (Number.isFinite(s.location) ? s.location : 0));
    if (sigma.some((row) => row.some((s) => !(s > 0)))) ctx.warn('premask_noise', 'pixel noise could not be measured on some frames; the pre-mask skips them');
    premask = { sigma, level, onDevice: placement.premaskOnDevice, indexCapacity: stackingOptions.premaskIndexCapacity, chunkRows: stackingOptions.premaskChunkRows, chunkCols: stackingOptions.premaskChunkCols, hostMedianFrames: stackingOptions.premaskHostMedianFrames };
  }
  let noiseModel: NoiseModel | null = null;
  if (r.noiseModel && ln) {
    // σ_f as the pre-mask's (normalised pixel noise; LN keeps the global scale); K_f the shot
    // noise per unit of normalised signal, shotNoiseK (EGAIN from the header; 0 without one);
    // α_f from the frames' FWHM (QUALITY_ANALYSIS), at least seeing_tolerance.
    const fwhm = setup.frames.map((f) => f.record.metrics?.fwhm ?? NaN);
    noiseModel = {
      sigma: setup.frames.map((f) => channelNoise(f, C).map((s, ch) => s * f.scale[ch]!)),
      poisson: setup.frames.map((f) => shotNoiseK(f)),
      seeing: seeingTolerances(fwhm, c.rejection.high, c.rejection.seeing_tolerance),
      background: ln.background,
    };
  }
  // Local normalization's coefficient tables (host, and a device copy per channel), reserved
  // from the budget before the bands are planned, with the fixed part of a device Lanczos
  // warp's per-channel table (its per-row part goes with the band rows below); the noise
  // model's per-pixel rows below. Fits deferred into the band loop hold the frames' binned
  // planes through the first band.
  const lnWarp = ln?.tables && r.kernel === 'lanczos3' && placement.warp ? lnTableBound(ln.tables.grid, setup.width) : null;
  const lnBytes = (ln?.tables ? ln.tables.coefficients.reduce((a, t) => a + t.byteLength, 0) * 2 : 0) + C * (lnWarp?.fixed ?? 0) + (ln?.pending?.bytes ?? 0);
  const workers = c.runtime_limits.parallel_workers;
  let extraBytes = 0;
  const planFor = (device: boolean): StackPlan =>
    planStackBands({
      width: setup.width,
      height: setup.height,
      frameWidth: setup.frameWidth,
      frameHeight: setup.frameHeight,
      binning: setup.binning,
      frames: setup.frames,
      channels: C,
      kernel: r.kernel,
      prefetch: Math.max(1, workers),
      hostSourceSets: hostSourceSets({ channels: C, workers, deviceStack: device && placement.stack !== null, deviceWarp: placement.warp !== null, deviceDebayer: placement.debayer !== null }),
      readHalo: halo,
      haloRows: premask ? PREMASK_GROW : 0,
      // The pre-mask's mask byte, and on the device path its compacted copy of one channel's
      // slots (device pre-mask). The host pre-mask beside a device stack now holds only an
      // 8 MiB row chunk of the band and its mask (PREMASK_CHUNK_BYTES), yet keeps these 5 B
      // reserved: reserving less would let budget-limited bands (and the peak, by ~75 MiB on
      // the 30 × 2048 px bench) grow; the plan stays as measured. The binding check counts
      // only the slots (plan.ts).
      extraBytesPerFramePixel: (extraBytes = premask ? (device && placement.stack ? 5 : 1) : 0),
      // Host pre-mask beside a device stack: the masked samples' index lists (host and device,
      // u32 for 1/32 of a band's owned samples each: nanIndexCapacity).
      // Noise model: the sky rows on the host, and on a device stack its centre and sky rows.
      // Local normalization in a device Lanczos warp: its table's bytes per band row.
      extraBytesPerPixel: (premask && !premask.onDevice && device && placement.stack ? Math.ceil(N / 4) : 0) + (noiseModel ? (device && placement.stack ? (premask?.onDevice ? 16 : 12) : 4) : 0) + C * (lnWarp?.perPixel ?? 0),
      budgetBytes: c.runtime_limits.memory_budget * MiB - lnBytes,
      // Device stacks aim at a working set; a TypeScript stack still fills the budget, its
      // thinner bands measured 2.2x the CPU at 30 x 2048 px (plan.ts STACK_WORKING_SET_BYTES).
      workingSetBytes: device && placement.stack ? stackWorkingSet(setup.width) : undefined,
      maxBindingBytes: device && placement.stack ? Math.min(stackingOptions.maxBindingBytes ?? placement.stack.limits.maxStorageBufferBindingSize, placement.stack.limits.maxBufferSize) : null,
      // The stack kernels bind a channel's slots as frame ranges where one binding is too small
      // (1000 frames x 2048 px on llvmpipe's 128 MiB); the device pre-mask and LN after a
      // bilinear device warp bind the whole band, so there one binding stays the limit.
      bindingRanges: device && placement.stack && !placement.premaskOnDevice && !(ln?.tables && r.kernel !== 'lanczos3' && placement.warp) ? stackSrcRanges(placement.stack.limits) : 1,
      maxBufferBytes: placement.stack?.limits.maxBufferSize,
      bindingAlign: placement.stack?.limits.minStorageBufferOffsetAlignment,
    });
  let plan: StackPlan;
  try {
    plan = planFor(placement.stack !== null);
  } catch (e) {
    if (!(e instanceof GpuError)) throw e;
    if (e.code === 'BINDING_TOO_LARGE' && placement.stack) {
      placement = withStackOnHost(placement, `the frames' band slices exceed the device's storage-binding limit (${describe(e)}); stacking in TypeScript`);
      ctx.warn('stack_on_host', placement.stackOnHost!);
      try {
        plan = planFor(false);
      } catch (e2) {
        if (e2 instanceof GpuError) return failed('budget_error', e2.message);
        throw e2;
      }
    } else return failed('budget_error', e.message);
  }
  if (premask) premask.onDevice = placement.premaskOnDevice;
  return { placement, premask, noiseModel, plan, halo, extraBytes };
}

/**
 * stacking_diagnostics.json's local_normalization block: the grid and interpolation rule once,
 * per frame and channel the fitted nodes (a, b on the globally normalised frame) and the fit's
 * statistics; the reference's sky surface (the rejection's B).
 */
function localNormalizationDiagnostics(ln: LnSetup, setup: StackSetup, names: string[], scale: string) {
  const grid = ln.tables?.grid ?? ln.background[0]!.grid;
  const r = (x: number) => (Number.isFinite(x) ? Number(x.toPrecision(6)) : null);
  return {
    applied: ln.tables !== null,
    scale,
    bin_factor: ln.binFactor,
    grid,
    interpolation: 'bilinear, outer cells extended linearly to the image edge',
    coefficients: "frame' = a * frame + b per node, row-major ny x nx, on the globally normalised frame",
    reference_sky: Object.fromEntries(names.map((n, ch) => [n, ln.background[ch]!.values.map(r)])),
    // fit: the wall time the fits took this thread (deferred ones: waiting for the fit worker included).
    timings_ms: { read_bin: Math.round(ln.ms.read_bin), fit: Math.round(ln.ms.fit) },
    // Frames whose binned planes came from QUALITY_ANALYSIS's (tiled: LOCAL_METRICS's) read (not read again here).
    premeasured_frames: ln.premeasured,
    // Deferred fits made on the fit worker thread (the others on the main thread).
    fits_on_worker: ln.pending?.onWorker ?? 0,
    frames: ln.models
      ? setup.frames.map((f) => ({
          index: f.record.index,
          file: f.record.name,
          channels: Object.fromEntries(names.map((n, ch) => [n, { a: ln.models![f.slot]![ch]!.a, b: ln.models![f.slot]![ch]!.b, fit: ln.models![f.slot]![ch]!.fit }])),
        }))
      : [],
  };
}

/**
 * The report's view of the fits (report/model.ts ReportLocalNormalization): per frame and
 * channel the fit's figures, and the surface b of one channel (L, or G of OSC) for its thumbnail.
 */
function reportLocalNormalization(ln: LnSetup, setup: StackSetup, names: string[]): ReportLocalNormalization | null {
  if (!ln.models || !ln.tables) return null;
  const thumb = names.length === 3 ? 1 : 0;
  return {
    nx: ln.tables.grid.nx,
    ny: ln.tables.grid.ny,
    frames: setup.frames.map((f) => ({
      index: f.record.index,
      file: f.record.name,
      channels: names.map((name, ch) => {
        const m = ln.models![f.slot]![ch]!;
        return { name, ok: m.fit.ok, offset_range: m.fit.offset_range, cells_measured: m.fit.cells_measured, cells: m.fit.cells, masked_fraction: m.fit.masked_fraction, b: ch === thumb ? m.b : [] };
      }),
    })),
  };
}

/** Section 3 of runStacking: every band through the engine into the planar image (C × H × W). */
async function stackBands(ctx: PhaseContext<RawStackState>, engine: BandEngine, plan: StackPlan, setup: StackSetup): Promise<Float32Array> {
  const N = setup.frames.length;
  const { width: W, height: H, channels: C } = setup;
  const image = new Float32Array(C * H * W);
  const bands = plan.bands.length;
  ctx.progress(0, bands, 'bands');
  for (let b = 0; b < bands; b++) {
    const band = plan.bands[b]!;
    const rows = await engine.runBand(
      band,
      (i) => {
        ctx.checkCancelled();
        if (i > 0 && i < N) ctx.progress(b * N + i, bands * N, 'frames');
      },
      plan.bands[b + 1] ?? null,
    );
    for (let ch = 0; ch < C; ch++) image.set(rows[ch]!, ch * H * W + band.y0 * W);
    ctx.checkCancelled();
    ctx.progress(b + 1, bands, 'bands');
  }
  await engine.finish();
  return image;
}

async function runStacking(ctx: PhaseContext<RawStackState>, sink: GroupSink | null, variant: StackingVariant = STACKING_DEFAULT): Promise<RawStackOutcome> {
  const { state } = ctx;
  const c = state.config;
  const started = performance.now();
  const readers = new ReaderCache(STACKING_OPEN_FILES);
  const l: Live = { readers, engine: null, lnPending: null };
  live.set(state, l);

  // 1. What the configuration asks, and the per-frame records (stacking-setup.ts).
  const r = stackRequest(state);
  const tSetup = performance.now();
  const setup = await prepareFrames(ctx, readers, r.kernel, r.wantPremask || r.cosmeticOn, r.superpixel, sink?.group ?? null);
  const setupMs = performance.now() - tSetup;
  ctx.checkCancelled();
  const N = setup.frames.length;
  const { width: W, height: H, channels: C } = setup;

  // 2. Local normalization's fits and the reference's sky (one pass over the frames), then
  // placement, pre-mask and band plan (a per-pixel weight field stacks from host slots).
  const weightField = variant.weightField?.(ctx, setup) ?? null;
  const tLn = performance.now();
  const refSlot = setup.frames.findIndex((f) => f.record === setup.reference);
  if ((r.ln || r.noiseModel) && refSlot < 0) ctx.warn('local_normalization', 'the reference frame is not among the stacked frames: no local normalization, sample-σ rejection bounds');
  const ln =
    (r.ln || r.noiseModel) && refSlot >= 0
      ? await setupLocalNormalization({
          width: W,
          height: H,
          frameWidth: setup.frameWidth,
          frameHeight: setup.frameHeight,
          binning: setup.binning,
          channels: C,
          frames: setup.frames,
          referenceSlot: refSlot,
          readers,
          fit: r.ln,
          cells: c.stacking.local_normalization_cells,
          scale: c.stacking.local_normalization_scale,
          between: (done, total) => {
            ctx.checkCancelled();
            ctx.progress(done, total, 'local normalization');
          },
          // Planes QUALITY_ANALYSIS (tiled: LOCAL_METRICS) binned from its own read (ln-premeasured.ts): no second read.
          premeasured: (f, spec) => takeLnPlanes(state, f.source, spec, setup.frameWidth, setup.frameHeight),
          // The Lanczos warp reads a frame's coefficients as it stores the frame (the bilinear
          // device path uploads every frame's at once): its fits can wait for the band loop.
          deferFits: r.kernel === 'lanczos3',
        })
      : null;
  l.lnPending = ln?.pending ?? null;
  // Planes of frames this stack does not use (excluded since QUALITY_ANALYSIS) are not needed
  // beside the band buffers; a run queue keeps the other groups' until their turn.
  if (!sink) dropLnPlanes(state);
  const lnMs = performance.now() - tLn;
  ctx.checkCancelled();
  const layout = layoutStack(ctx, setup, r, ln, weightField !== null);
  if ('status' in layout) return layout;
  const { placement, premask, plan } = layout;

  // 3. The band loop. A full collection first: the setup's garbage (headers and records, the LN
  // pass's reads and bins: ~70 MiB of heap and ~50 MiB of external buffers at 1000 frames of
  // 2048 px) was otherwise still alive when the engine's slots became resident (~155 MiB there),
  // adding itself to the phase's peak (bench/RESULTS.md, the 1000-frame STACKING transient).
  // One forced collection costs ~20 ms.
  collectGarbage?.();
  const engine = new BandEngine({
    width: W,
    height: H,
    frameWidth: setup.frameWidth,
    frameHeight: setup.frameHeight,
    binning: setup.binning,
    channels: C,
    frames: setup.frames,
    maxWorkRows: plan.maxWorkRows,
    maxOwnedRows: plan.rowsPerBand,
    maxSourceRows: plan.maxSourceRows,
    maxReadRows: plan.maxReadRows,
    maxBindingBytes: stackingOptions.maxBindingBytes ?? undefined,
    kernel: r.kernel,
    readHalo: layout.halo,
    rejection: { method: r.method, low: c.rejection.low, high: c.rejection.high, maxIters: c.rejection.max_iters, minFraction: c.rejection.min_fraction },
    premask,
    perFrameCosmetic: r.cosmeticOn ? { sigma: r.cosmeticSigma } : null,
    ln: ln?.tables ?? null,
    lnPending: ln?.pending ?? null,
    noiseModel: layout.noiseModel,
    workers: c.runtime_limits.parallel_workers,
    gpu: { debayer: placement.debayer, warp: placement.warp, stack: placement.stack },
    readers,
    weightField,
    weightFieldGpu: weightField ? (variant.weightFieldGpu?.(state) ?? null) : null,
  });
  l.engine = engine;
  const tLoop = performance.now();
  const image = await stackBands(ctx, engine, plan, setup);
  const loopMs = performance.now() - tLoop;
  await ln?.pending?.finish(); // (the band loop fitted every frame; a no-op unless it stopped early)

  // 4. Final cosmetic correction, header, file (stacking-output.ts).
  let finalFixed: { hot: number; cold: number } | null = null;
  const tFinal = performance.now();
  if (c.stacking.cosmetic_correction) finalFixed = finalCosmetic(image, W, H, C, c.stacking.cosmetic_correction_sigma);
  const finalMs = performance.now() - tFinal;
  const params: StackParameters = {
    method: r.method,
    low: c.rejection.low,
    high: c.rejection.high,
    maxIters: c.rejection.max_iters,
    minFraction: c.rejection.min_fraction,
    normalization: c.stacking.normalization,
    // The weight-field stack's kernel has sample bounds; the noise model then seeds the pre-mask only.
    bounds: layout.noiseModel ? `noise_model seeing_tolerance ${c.rejection.seeing_tolerance}${weightField ? ' (weight-field stack)' : ''}` : r.method === 'sigma' || r.method === 'winsor' ? 'sample' : null,
    localNormalization: ln?.tables != null,
    weighting: c.stacking.weighting,
    kernel: r.kernel,
    cfaMode: r.osc ? `${r.cfaMode} ${state.bayer ?? ''}`.trim() : null,
    cosmetic: `per-frame ${r.cosmeticOn ? `k=${r.cosmeticSigma}${r.autoCosmetic ? ' (no darks)' : ''}` : 'off'}, final ${c.stacking.cosmetic_correction ? `k=${c.stacking.cosmetic_correction_sigma}` : 'off'}`,
  };
  const header = stackHeader(state, setup, ctx.outcomes, params);
  // Run queue: outputs/stacked_<filter>.fits per group (stacked_linear/rgb follow from them).
  const outName = sink ? stackFileName(sink.group.filter!) : r.osc ? 'stacked_rgb.fits' : variant.monoName;
  const outRel = outputPath(state.folder.layout, outName);
  const outPath = inRunFolder(state.folder, outRel);
  const tWrite = performance.now();
  await writeFits(outPath, { width: W, height: H, planes: C, data: image }, { header });
  const writeMs = performance.now() - tWrite;
  if (sink) {
    sink.outRel = outRel;
    sink.outPath = outPath;
    addArtifact(state, 'stacked_filter', 'STACKING', outRel);
  } else {
    if (r.osc) state.outputs.stacked_rgb = outPath;
    else state.outputs.stacked_linear = outPath;
    addArtifact(state, r.osc ? 'stacked_rgb' : 'stacked_linear', 'STACKING', outRel);
  }

  // 5. Diagnostics, frame events, summary.
  const totals = engine.totals;
  const names = channelNames(C);
  const rejected = rejectionTotals(totals, N);
  const frames = frameDiagnostics(setup, totals, names, state.folder);
  const paths = engine.paths();
  const timings = {
    setup: Math.round(setupMs),
    local_normalization_setup: Math.round(lnMs),
    local_normalization_pass: Math.round(engine.timings.ln),
    band_loop: Math.round(loopMs),
    read_wait: Math.round(engine.timings.read_wait),
    per_frame_cosmetic: Math.round(engine.timings.cosmetic),
    premask: Math.round(engine.timings.premask),
    premask_median: Math.round(engine.timings.premask_median),
    premask_transfer: Math.round(engine.timings.premask_transfer),
    premask_mask: Math.round(engine.timings.premask_mask),
    debayer: Math.round(engine.timings.debayer),
    warp: Math.round(engine.timings.warp),
    stack: Math.round(engine.timings.stack),
    final_cosmetic: Math.round(finalMs),
    write: Math.round(writeMs),
    total: Math.round(performance.now() - started),
  };
  const bands = plan.bands.length;
  const diagnostics = {
    phase: 'STACKING',
    ...(sink ? { filter: sink.group.filter } : {}),
    color_mode: state.colorMode,
    channels: names,
    output_size: { width: W, height: H, binning: setup.binning },
    parameters: {
      rejection: {
        method: r.method,
        low: c.rejection.low,
        high: c.rejection.high,
        max_iters: c.rejection.max_iters,
        min_fraction: c.rejection.min_fraction,
        bounds: layout.noiseModel ? 'noise_model' : r.method === 'sigma' || r.method === 'winsor' ? 'sample' : null,
        seeing_tolerance: layout.noiseModel ? c.rejection.seeing_tolerance : null,
      },
      normalization: c.stacking.normalization,
      local_normalization: ln?.tables != null,
      normalization_reference: 'reference frame',
      weighting: c.stacking.weighting,
      cosmetic_correction: c.stacking.cosmetic_correction,
      cosmetic_correction_sigma: c.stacking.cosmetic_correction_sigma,
      per_frame_cosmetic_correction: r.cosmeticOn,
      per_frame_cosmetic_correction_sigma: r.cosmeticSigma,
      per_frame_cosmetic_reason: r.autoCosmetic ? 'no_darks' : r.cosmeticOn ? 'config' : null,
      cfa_mode: r.osc ? c.cfa_mode : null,
      debayer: r.osc ? r.cfaMode : null,
      bayer_pattern: r.osc ? state.bayer : null,
      warp_kernel: r.kernel,
      warp_clamp: 'undershoot',
      premask: premask ? { grow_px: PREMASK_GROW, seeds: layout.noiseModel ? 'noise_model' : 'sample', alpha: layout.noiseModel ? null : PREMASK_ALPHA, k_low: c.rejection.low, k_high: c.rejection.high } : null,
    },
    local_normalization: ln ? localNormalizationDiagnostics(ln, setup, names, c.stacking.local_normalization_scale) : null,
    noise_model: layout.noiseModel
      ? {
          tau: 'sqrt(sigma^2 + K*S + (alpha*S)^2), S = max(centre - sky, 0)',
          seeing_tolerance: c.rejection.seeing_tolerance,
          shot_noise: shotNoiseSource(setup.frames),
          frames: setup.frames.map((f, i) => ({ index: f.record.index, fwhm: f.record.metrics?.fwhm ?? null, alpha: round(layout.noiseModel!.seeing[i]!, 4), sigma: layout.noiseModel!.sigma[i]!.map((s) => round(s, 4)), gain: f.gain ?? null, poisson: layout.noiseModel!.poisson[i]!.map((k) => Number(k.toPrecision(6))) })),
        }
      : null,
    reference: { index: setup.reference.index, file: setup.reference.name },
    device: { kind: state.device.kind, adapter: state.device.adapter, paths },
    normalization_source: setup.normalizationSource,
    unregistered: setup.unregistered,
    frames_total: state.frames.length,
    frames_used: N,
    frames_excluded: state.frames.length - N,
    used_frames: setup.frames.map((f) => ({ index: f.record.index, file: f.record.name })),
    weights: setup.frames.map((f) => f.weight),
    frames,
    samples: {
      total: rejected.validSamples,
      rejected_low: rejected.low,
      rejected_high: rejected.high,
      rejected_fraction: rejected.fraction,
      premasked: totals.premasked.reduce((a, b) => a + b, 0),
      premasked_per_channel: Object.fromEntries(names.map((n, ch) => [n, totals.premasked[ch]!])),
      empty_pixels: totals.empty.reduce((a, b) => a + b, 0),
    },
    cosmetic: {
      per_frame: r.cosmeticOn ? { hot: totals.corrected.hot, cold: totals.corrected.cold } : null,
      final: finalFixed,
    },
    band_plan: bandPlanDiagnostics(plan, state, { premask: premask !== null, frames: N, channels: C, extraBytes: layout.extraBytes, premaskChunks: engine.premaskChunkShape() }),
    files_opened: readers.opens,
    outputs: sink ? { [outName.replace(/\.fits$/, '')]: outRel } : r.osc ? { stacked_rgb: outRel } : { stacked_linear: outRel },
    timings_ms: timings,
  };
  const diagRel = artifactPath(state.folder.layout, 'stacking_diagnostics.json');
  if (sink) sink.diagnostics = diagnostics;
  else {
    await writeJsonAtomic(inRunFolder(state.folder, diagRel), diagnostics);
    addArtifact(state, 'stacking_diagnostics', 'STACKING', diagRel);
  }

  for (const f of frames) {
    ctx.frame(f.index, f.file, 'stacked', undefined, {
      weight: f.weight,
      scale: f.normalization.map((n) => n.scale),
      offset: f.normalization.map((n) => n.offset),
      rejected_low: f.rejected.reduce((a, x) => a + x.low, 0),
      rejected_high: f.rejected.reduce((a, x) => a + x.high, 0),
    });
  }
  const summary = {
    ...(sink ? { filter: sink.group.filter, output: outRel } : {}),
    frames_used: N,
    frames_total: state.frames.length,
    method: r.method,
    low: c.rejection.low,
    high: c.rejection.high,
    rejection_bounds: params.bounds,
    normalization: c.stacking.normalization,
    local_normalization_applied: ln?.tables != null,
    weighting: c.stacking.weighting,
    cosmetic: params.cosmetic,
    rejected_fraction: rejected.fraction,
    output_linear: r.osc ? null : outRel,
    output_rgb: r.osc ? outRel : null,
    diagnostics: diagRel,
    bands,
    rows_per_band: plan.rowsPerBand,
    device_paths: paths,
    duration_ms: timings.total,
    local_normalization: ln ? reportLocalNormalization(ln, setup, names) : null,
  };
  if (sink) sink.summary = summary;
  else state.summaries.STACKING = summary;
  return ok({
    frames_used: N,
    method: r.method,
    normalization: c.stacking.normalization,
    weighting: c.stacking.weighting,
    cosmetic: params.cosmetic,
    rejected_fraction: round(rejected.fraction, 6),
    output_linear: r.osc ? null : outRel,
    output_rgb: r.osc ? outRel : null,
    diagnostics: diagRel,
    bands,
  });
}

/**
 * Run queue: one stack per filter group (runStacking with the group), each onto the common
 * reference's geometry and its group reference's photometric scale, written as
 * outputs/stacked_<filter>.fits; then stacked_linear.fits (L, or the single mono filter) and
 * stacked_rgb.fits (R, G, B composed; OSC: the OSC stack) by queue-outputs.ts. One
 * stacking_diagnostics.json holds every filter's diagnostics under `per_filter`.
 * A filter whose stack fails ends the phase with that error (the stacks written so far stay).
 */
async function runQueueStacking(ctx: PhaseContext<RawStackState>): Promise<RawStackOutcome> {
  const { state } = ctx;
  const groups = filterGroups(state, state.frames.filter((f) => f.status === 'included'));
  // A filter whose every frame was excluded gets no stack: say so (the queue table shows 0 stacked).
  const stackedFilters = new Set(groups.map((g) => g.filter));
  for (const filter of new Set((state.queue ?? []).filter((e) => e.active).map((e) => e.filter))) {
    if (!stackedFilters.has(filter)) ctx.warn('filter_not_stacked', `filter ${filter}: no frame left to stack, no ${stackFileName(filter)}`);
  }
  const sinks: GroupSink[] = [];
  for (const group of groups) {
    const sink: GroupSink = { group };
    const outcome = await runStacking(ctx, sink);
    // Release this group's engine and open files before the next group starts.
    const l = live.get(state);
    live.delete(state);
    await l?.lnPending?.close();
    await l?.engine?.dispose();
    await l?.readers.closeAll();
    if (outcome.status !== 'ok') return { ...outcome, message: `filter ${group.filter}: ${outcome.message ?? outcome.reason}` } as RawStackOutcome;
    sinks.push(sink);
  }
  const stacks = sinks.map((s) => ({ filter: s.group.filter!, path: s.outPath!, rel: s.outRel!, frames: (s.summary?.frames_used as number) ?? 0 }));
  const composed = await composeQueueOutputs(state, stacks, state.colorMode === 'OSC');
  for (const note of composed.notes) ctx.warn(note.code, note.message);
  const diagRel = artifactPath(state.folder.layout, 'stacking_diagnostics.json');
  const perFilter = Object.fromEntries(sinks.map((s) => [s.group.filter!, s.diagnostics!]));
  const framesUsed = stacks.reduce((a, s) => a + s.frames, 0);
  await writeJsonAtomic(inRunFolder(state.folder, diagRel), {
    phase: 'STACKING',
    queue: true,
    color_mode: state.colorMode,
    reference: state.referenceIndex !== null ? { index: state.referenceIndex, file: state.frames[state.referenceIndex]?.name ?? null, filter: state.frames[state.referenceIndex]?.filter ?? null } : null,
    filters: stacks.map((s) => s.filter),
    frames_total: state.frames.length,
    frames_used: framesUsed,
    stacks: Object.fromEntries(stacks.map((s) => [s.filter, { output: s.rel, frames_used: s.frames }])),
    outputs: composed.outputs,
    rgb_composition: composed.rgb,
    per_filter: perFilter,
  });
  addArtifact(state, 'stacking_diagnostics', 'STACKING', diagRel);
  const summary0 = sinks[0]?.summary ?? {};
  state.summaries.STACKING = {
    filters: stacks.map((s) => s.filter).join(', '),
    frames_used: framesUsed,
    frames_total: state.frames.length,
    method: summary0.method,
    low: summary0.low,
    high: summary0.high,
    normalization: summary0.normalization,
    weighting: summary0.weighting,
    output_linear: composed.outputs.stacked_linear ?? null,
    output_rgb: composed.outputs.stacked_rgb ?? null,
    diagnostics: diagRel,
    per_filter: Object.fromEntries(sinks.map((s) => [s.group.filter!, s.summary!])),
    duration_ms: sinks.reduce((a, s) => a + ((s.summary?.duration_ms as number) ?? 0), 0),
  };
  return ok({
    filters: stacks.map((s) => s.filter),
    frames_used: framesUsed,
    stacks: Object.fromEntries(stacks.map((s) => [s.filter, { output: s.rel, frames_used: s.frames }])),
    output_linear: composed.outputs.stacked_linear ?? null,
    output_rgb: composed.outputs.stacked_rgb ?? null,
    diagnostics: diagRel,
  });
}
