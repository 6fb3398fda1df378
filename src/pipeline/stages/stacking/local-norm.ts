// The stacking engine's setup for local normalization and the noise-model rejection
// (docs/stacking-quality.md): one pass over the stacked frames, before the band loop, that
// bins each frame per channel (block means; CFA mosaics by site, so no debayer is needed),
// moves the binned plane into the reference's geometry (warpBinned with the frame's toFrame
// matrix, nearest block: backgrounds only, no full-resolution warp, and the fit's noise
// estimate from neighbour differences needs uncorrelated noise, which interpolation breaks), normalises it globally and fits its local
// normalization against the reference's (src/algorithms/local-normalization.ts). What it leaves:
// - per channel, the coefficient table the band loop applies as the warp writes each slot
//   sample (raw value → a·v + b, global normalization folded in: composeGlobal), and each
//   frame's compact model for stacking_diagnostics.json;
// - per channel, the reference's smooth sky B on the same grid (normalised units): the
//   noise-model rejection's "signal above the sky" is measured from it.
// Memory: the reference's binned planes and one frame's at a time (~256 binned pixels along
// the long side, so ~200 KB per plane), a read buffer of at most READ_CHUNK_BYTES; the models
// are a few hundred numbers per frame and channel. Deferred fits (below) hold every frame's
// premeasured planes until each is fitted in the first band: pending.bytes, which the caller
// reserves from the budget.
// Reads: a frame whose raw binned planes were measured earlier (`premeasured`: Raw Stack's
// QUALITY_ANALYSIS and the tiled workflow's LOCAL_METRICS bin the pixels they read anyway,
// rawstack/ln-premeasured.ts) is not read
// again; its planes, binned with the same factor and sites (lnSetupBinning) from the same pixels,
// are bit-identical to this pass's own, and go through the same crop, warp and normalisation.
// Other frames are read once more than without LN (through the band loop's reader cache,
// prefetched one frame ahead).
// Deferred fits (deferFits, the Lanczos path): when every frame's planes came premeasured the
// pass returns after the reference with the tables allocated, and the frames are fitted on one
// worker thread (ln-fit-worker.ts, FIT_WINDOW frames queued ahead) while the band loop runs; the
// loop waits for frame i's fit (pending.upTo) just before it first stores it. So the fits run
// beside the device's warps and the main thread's work instead of ahead of the loop, or between
// the warps on the main thread. Where the worker cannot start or dies, the frames it left are
// fitted on this thread (fitFrame, ln-fit.ts: the same code). Same models and tables.
// Superpixel (binning 2): toFrame is in cell coordinates; a mosaic binned by an even D in frame
// pixels is the same plane binned by D/2 in cells (block centres coincide), so it is relabelled.

import { PlaneBinner, type BinnedPlane } from '../../../algorithms/binned-plane.js';
import {
  fitReferenceBackground,
  lnBinFactor,
  LN_DEFAULTS,
  prepareReference,
  type GridGeometry,
  type GridSurface,
  type LnModel,
  type LnScaleMode,
} from '../../../algorithms/local-normalization.js';
import { phaseChannels } from '../frames/channel-stats.js';
import type { StackFrame } from './plan.js';
import type { ReaderCache } from './readers.js';
import { fitFrame, fitReferenced, toReference, type FitGeometry, type FrameFit } from './ln-fit.js';
import { LnFitWorker } from './ln-fit-worker.js';

/** Most bytes of frame rows read at once by the setup pass. */
export const READ_CHUNK_BYTES = 8 << 20;

export interface LnSetupInput {
  /** Output size (the reference geometry of the slots) and the frames' size. */
  width: number;
  height: number;
  frameWidth: number;
  frameHeight: number;
  binning: 1 | 2;
  channels: 1 | 3;
  frames: StackFrame[];
  /** Slot of the reference frame. */
  referenceSlot: number;
  readers: ReaderCache;
  /** Fit the frames (local normalization on); false: only the reference's sky (noise-model rejection). */
  fit: boolean;
  cells: number;
  scale: LnScaleMode;
  /** Called after each frame (cancellation, progress). */
  between?: (done: number, total: number) => void;
  /** A frame's raw binned planes (frame geometry, per channel) binned as `spec` elsewhere, or null: read it. */
  premeasured?: (f: StackFrame, spec: LnBinning) => BinnedPlane[] | null;
  /**
   * Leave the frames' fits to the band loop when every frame's planes came premeasured (no read
   * left to do): the setup returns after the reference, with `pending`, and the caller awaits
   * frame i's fit (pending.upTo(i)) before the band loop first warps it, so the fits run while
   * the device warps the frames before (the tables are filled in place; same models).
   */
  deferFits?: boolean;
  /** Deferred fits on a worker thread (ln-fit-worker.ts; default true); false: on this thread. */
  fitWorker?: boolean;
}

/** Frames queued on the fit worker ahead of the one the band loop waits for. */
export const FIT_WINDOW = 4;

/** The setup pass's binning of a frame: block factor and per channel the CFA sites (null: mono). */
export interface LnBinning {
  factor: number;
  sites: number[][] | null;
}

/** What the band loop applies: per channel a (raw → normalised) coefficient table over every frame. */
export interface LnTables {
  grid: GridGeometry;
  /** Per channel: frames × nodes × (a, b), frame-major by slot (packLnCoefficients). */
  coefficients: Float32Array[];
  nodes: number;
}

export interface LnSetup {
  /** Null when the fit was not asked for. */
  tables: LnTables | null;
  /** Per slot, per channel: the compact model (on the globally normalised frame: a, b as fitted). */
  models: LnModel[][] | null;
  /** Per channel: the reference's sky on the grid, normalised units. */
  background: GridSurface[];
  binFactor: number;
  /** Frames whose planes came premeasured (not read by this pass). */
  premeasured: number;
  /** Wall ms of reading and binning, and of the fits (deferred ones included as they run). */
  ms: { read_bin: number; fit: number };
  /** Deferred fits (deferFits), or null: every table and model is filled. */
  pending: LnPending | null;
}

/** Fits left to the band loop (LnSetupInput.deferFits), in frame order (on the fit worker where it runs). */
export interface LnPending {
  /** Resolves once every frame up to index i of `frames` is fitted and in the tables. */
  upTo(i: number): Promise<void>;
  /** Fits the rest. */
  finish(): Promise<void>;
  /** Stops the fit worker (idempotent; after finish, or when the phase ends early). */
  close(): Promise<void>;
  /** Frames the fit worker fitted so far (the rest ran on this thread). */
  readonly onWorker: number;
  /**
   * Host bytes the pending fits hold at most beside the band loop (every frame's binned planes
   * until fitted, the reference's, one frame's normalised copy): the caller reserves them from
   * the memory budget before it plans the bands.
   */
  bytes: number;
}

/** The sites of each stack channel in a mosaic of `pattern` ((y & 1)·2 + (x & 1)). */
function channelSites(pattern: NonNullable<StackFrame['pattern']>): number[][] {
  const ph = phaseChannels(pattern);
  return [0, 1, 2].map((c) => [0, 1, 2, 3].filter((p) => ph[p] === c));
}

/**
 * How the setup pass bins a frame of `frameWidth` × `frameHeight` stacked into `width` ×
 * `height` (binning 2: superpixel cells): the one definition both this pass and an earlier
 * premeasurement use. `pattern`: the frame's effective CFA pattern (OSC).
 */
export function lnSetupBinning(frameWidth: number, frameHeight: number, width: number, height: number, binning: 1 | 2, osc: boolean, pattern?: StackFrame['pattern']): LnBinning {
  // Superpixel output pixels are 2×2 frame pixels: bin the mosaic by twice the output's factor.
  const factor = binning === 2 ? 2 * lnBinFactor(width, height) : lnBinFactor(frameWidth, frameHeight, osc);
  return { factor, sites: osc ? channelSites(pattern!) : null };
}

/** A frame's raw binned planes measured elsewhere (premeasured, checked against this pass's binning), or null. */
function premeasuredPlanes(o: LnSetupInput, f: StackFrame, D: number): BinnedPlane[] | null {
  const spec: LnBinning = { factor: D, sites: o.channels === 3 ? channelSites(f.pattern!) : null };
  const raw = o.premeasured?.(f, spec) ?? null;
  if (raw && (raw.length !== o.channels || !raw.every((p) => p.factor === D && p.fullWidth === o.frameWidth && p.fullHeight === o.frameHeight))) return null;
  return raw;
}

/** Binned planes of one frame per channel, in the reference geometry, globally normalised. */
async function binFrame(o: LnSetupInput, f: StackFrame, D: number, buffer: Float32Array, counts: { premeasured: number }, taken?: BinnedPlane[] | null): Promise<BinnedPlane[]> {
  const { frameWidth: Wf, frameHeight: Hf } = o;
  const osc = o.channels === 3;
  const spec: LnBinning = { factor: D, sites: osc ? channelSites(f.pattern!) : null };
  let raw = taken !== undefined ? taken : premeasuredPlanes(o, f, D);
  if (raw) counts.premeasured++;
  else {
    const binners = spec.sites ? spec.sites.map((sites) => new PlaneBinner(Wf, Hf, D, { sites })) : [new PlaneBinner(Wf, Hf, D)];
    let chunk = Math.max(2, Math.floor(buffer.length / Wf));
    chunk -= chunk % 2; // whole Bayer row pairs
    for (let y0 = 0; y0 < Hf; y0 += chunk) {
      const rows = Math.min(chunk, Hf - y0);
      const data = await o.readers.readRowsInto(f.source, y0, rows, buffer);
      for (const b of binners) b.addRows(data, y0, rows);
    }
    raw = binners.map((b) => b.result());
  }
  return toReference(fitGeometry(o, D), f, raw);
}

const fitGeometry = (o: LnSetupInput, D: number): FitGeometry => ({ width: o.width, height: o.height, binning: o.binning, factor: D });

/** Runs the setup pass (see the head comment). */
export async function setupLocalNormalization(o: LnSetupInput): Promise<LnSetup> {
  const osc = o.channels === 3;
  const D = lnSetupBinning(o.frameWidth, o.frameHeight, o.width, o.height, o.binning, osc, o.frames[0]?.pattern).factor;
  const counts = { premeasured: 0 };
  // Deferred fits need every frame's planes at hand: take them now (they are the caller's
  // already); any frame left to read makes this pass fit everything before it returns.
  let taken: (BinnedPlane[] | null)[] | null = o.fit && o.deferFits ? o.frames.map((f) => premeasuredPlanes(o, f, D)) : null;
  if (taken && !taken.every((p) => p !== null)) taken = null;
  const chunkValues = Math.max(2 * o.frameWidth, Math.floor(READ_CHUNK_BYTES / 4 / o.frameWidth) * o.frameWidth);
  // Read buffers only where something is read (taken: nothing).
  const buffer = new Float32Array(taken ? 0 : chunkValues);
  const spare = new Float32Array(buffer.length);
  let readBin = 0;
  let fitMs = 0;
  const refFrame = o.frames[o.referenceSlot]!;
  let t = performance.now();
  const ref = await binFrame(o, refFrame, D, buffer, counts, taken ? taken[o.referenceSlot]! : undefined);
  readBin += performance.now() - t;
  t = performance.now();
  // The star mask's growth is in the plane's pixels: superpixel cells are two frame pixels, so
  // half the default keeps the same reach on the sky.
  const options = { cells: o.cells, scale: o.scale, ...(o.binning === 2 ? { maskGrowPx: LN_DEFAULTS.maskGrowPx / 2 } : {}) };
  // The reference's star mask once: the fits' prepared reference and the sky B share it.
  const prepared = o.fit ? ref.map((p) => prepareReference(p, options)) : [];
  const background = ref.map((p, c) => fitReferenceBackground(p, options, prepared[c] ?? null));
  fitMs += performance.now() - t;
  if (!o.fit) return { tables: null, models: null, background, binFactor: D, premeasured: counts.premeasured, ms: { read_bin: readBin, fit: fitMs }, pending: null };
  const N = o.frames.length;
  const models: LnModel[][] = new Array(N);
  // Every channel's model is on the reference's grid (lnGrid of the reference plane, as the
  // sky's): the tables exist now and each fit writes its frame's slice (packLnCoefficients).
  const grid = background[0]!.grid;
  const nodes = grid.nx * grid.ny;
  const coefficients = Array.from({ length: o.channels }, () => new Float32Array(N * nodes * 2));
  const store = (f: StackFrame, fit: FrameFit): void => {
    fit.grids.forEach((g, c) => {
      if (fit.coefficients[c]!.length !== nodes * 2 || g.nx !== grid.nx || g.dx !== grid.dx || g.x0 !== grid.x0 || g.dy !== grid.dy || g.y0 !== grid.y0) throw new Error(`local normalization: frame ${f.slot}'s model is not on the reference's grid`);
      coefficients[c]!.set(fit.coefficients[c]!, f.slot * nodes * 2);
    });
    models[f.slot] = fit.models;
  };
  if (taken) {
    const planes: (BinnedPlane[] | null)[] = taken;
    const ms = { read_bin: readBin, fit: fitMs };
    const geometry = fitGeometry(o, D);
    // The fits run on one worker thread (ln-fit-worker.ts), FIT_WINDOW frames queued ahead of
    // the band loop (the worker holds copies of only those), or here where it cannot start.
    let worker: LnFitWorker | null = null;
    if (o.fitWorker !== false) {
      try {
        worker = new LnFitWorker({ geometry, ref, prepared, options });
      } catch {
        worker = null;
      }
    }
    const jobs: (Promise<FrameFit> | null)[] = new Array(N).fill(null);
    const post = (k: number) => {
      if (!worker || k >= N || worker.broken) return;
      const f = o.frames[k]!;
      const job = worker.fit({ planes: k === o.referenceSlot ? null : planes[k]!, toFrame: f.toFrame, scale: f.scale, offset: f.offset });
      job.catch(() => undefined); // (awaited in upTo; a failed fit is redone here)
      jobs[k] = job;
    };
    for (let k = 0; k < FIT_WINDOW; k++) post(k);
    let done = 0;
    let onWorker = 0;
    // Calls run one after another (a second caller waits for the first's frames).
    let chain: Promise<void> = Promise.resolve();
    const upTo = (i: number): Promise<void> => (chain = chain.then(() => fitUpTo(i)));
    const fitUpTo = async (i: number): Promise<void> => {
      for (; done <= i && done < N; done++) {
        const f = o.frames[done]!;
        const t0 = performance.now();
        let fit: FrameFit | null = null;
        if (jobs[done]) fit = await jobs[done]!.catch(() => null);
        jobs[done] = null;
        if (fit) onWorker++;
        fit ??= fitFrame(geometry, ref, prepared, options, done === o.referenceSlot ? null : planes[done]!, f);
        planes[done] = null;
        post(done + FIT_WINDOW);
        store(f, fit);
        ms.fit += performance.now() - t0;
      }
      if (done >= N) await close();
    };
    let closed = false;
    const close = async (): Promise<void> => {
      if (closed) return;
      closed = true;
      await worker?.close();
    };
    // Held beside the band loop: every frame's planes until fitted, the reference's (and the
    // worker's copy), its masks, and the worker's copies of the FIT_WINDOW frames queued.
    const planeBytes = (ps: BinnedPlane[] | null) => (ps ?? []).reduce((a, p) => a + p.data.byteLength, 0);
    const largest = planes.reduce((a, ps) => Math.max(a, planeBytes(ps)), 0);
    const bytes = planes.reduce((a, ps) => a + planeBytes(ps), 0) + 3 * planeBytes(ref) + 2 * prepared.reduce((a, p) => a + p.mask.byteLength, 0) + (worker ? FIT_WINDOW * largest : 0);
    return {
      tables: { grid, coefficients, nodes },
      models,
      background,
      binFactor: D,
      premeasured: N,
      ms,
      pending: {
        upTo,
        finish: () => upTo(N - 1),
        close,
        bytes,
        get onWorker() {
          return onWorker;
        },
      },
    };
  }
  // One frame read ahead (into the spare buffer) while the current one is fitted; the
  // reference's planes are already there.
  const bufs = [buffer, spare];
  const bin = (i: number): Promise<BinnedPlane[]> => (i === o.referenceSlot ? Promise.resolve(ref) : binFrame(o, o.frames[i]!, D, bufs[i % 2]!, counts));
  let next: Promise<BinnedPlane[]> | null = bin(0);
  for (let i = 0; i < N; i++) {
    const f = o.frames[i]!;
    t = performance.now();
    const planes = await next!;
    next = i + 1 < N ? bin(i + 1) : null;
    readBin += performance.now() - t;
    t = performance.now();
    store(f, fitReferenced(ref, prepared, options, planes, f));
    fitMs += performance.now() - t;
    o.between?.(i + 1, N);
  }
  return { tables: { grid, coefficients, nodes }, models, background, binFactor: D, premeasured: counts.premeasured, ms: { read_bin: readBin, fit: fitMs }, pending: null };
}
