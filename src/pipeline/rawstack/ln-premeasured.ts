// Local normalization's binned planes measured ahead of STACKING: QUALITY_ANALYSIS already reads
// every registered frame band by band for its correlation proxy, so the same bands feed LN's
// binners there (stages/frames/tasks.ts ccProxyAndBins) and STACKING's LN setup takes the planes
// from here instead of reading each frame once more (stages/stacking/local-norm.ts). The tiled
// workflow's LOCAL_METRICS, which reads every frame whole for its tile sums, bins them the same
// way (tiled/phases/local-metrics.ts).
// Invariants:
// - A plane set is keyed by the frame's pixel source and carries its binning (factor, CFA sites
//   per channel, full size); STACKING uses it only when all of these equal what its own pass
//   would bin, else it reads the frame as before. Raw, frame geometry: the warp to the reference
//   and the global normalization stay in the setup pass, so the fit is the same.
// - Memory: the planes are small (~256 blocks on the long side, ~200 KB per mono frame at
//   2048 px), held from QUALITY_ANALYSIS until STACKING's setup takes them (taken planes are
//   dropped); at most min(memory_budget / PREMEASURED_BUDGET_DIVISOR, PREMEASURED_MAX_BYTES)
//   bytes in all — frames past that cap are simply read by the setup pass. The fixed part keeps
//   a run of many frames from carrying more through QUALITY_ANALYSIS and FRAME_FILTERING than a
//   run of few (issue 22 item 3: at 1000 frames of 1024 px the share of the budget, 128 MiB,
//   was the largest thing the process held between the phases; bench/RESULTS.md). Kept beside the state (a WeakMap), not in it:
//   nothing to serialise (no checkpoint carries them), and a resumed run just reads.

import type { BinnedPlane } from '../../algorithms/binned-plane.js';
import { readFitsHeader } from '../../fits/index.js';
import { frameCfaPhase } from '../stages/cfa-phase.js';
import { lnSetupBinning } from '../stages/stacking/local-norm.js';
import type { LnBinSpec } from '../stages/frames/tasks.js';
import { pixelSource, type FrameRecord, type RawStackState } from './state.js';

/** Share of runtime_limits.memory_budget the held planes may take. */
export const PREMEASURED_BUDGET_DIVISOR = 8;
/**
 * Most bytes of held planes whatever the budget: ~160 frames of ~200 KB (a mono plane at any
 * frame size, ~256 blocks on the long side), so runs of up to ~120 frames keep every frame's
 * planes (and STACKING's deferred fits) as before.
 */
export const PREMEASURED_MAX_BYTES = 32 * 1024 * 1024;

interface Entry {
  spec: LnBinSpec;
  planes: BinnedPlane[];
}

interface Store {
  bySource: Map<string, Entry>;
  bytes: number;
  cap: number;
}

const stores = new WeakMap<RawStackState, Store>();

function storeOf(state: RawStackState): Store {
  let s = stores.get(state);
  if (!s) stores.set(state, (s = { bySource: new Map(), bytes: 0, cap: Math.min((state.config.runtime_limits.memory_budget * 1024 * 1024) / PREMEASURED_BUDGET_DIVISOR, PREMEASURED_MAX_BYTES) }));
  return s;
}

/**
 * Which frames STACKING's LN setup will bin: every frame with local normalization on, only the
 * reference with just the noise-model rejection (its sky), none otherwise. Mirrors STACKING's
 * request (phases/stacking.ts stackRequest).
 */
export function lnWanted(state: RawStackState): 'all' | 'reference' | 'none' {
  const c = state.config;
  if (c.stacking.local_normalization && c.stacking.normalization !== 'none') return 'all';
  const m = c.rejection.method;
  return (m === 'sigma' || m === 'winsor') && c.rejection.bounds === 'noise_model' ? 'reference' : 'none';
}

/**
 * The binning to give `f`'s read when STACKING will want its planes (`wanted` from lnWanted;
 * `reference`: only the reference's), else undefined; undefined too when it cannot be known here
 * (STACKING then reads the frame itself).
 */
export async function wantedLnBinSpec(state: RawStackState, f: FrameRecord, wanted: 'all' | 'reference' | 'none', isReference: boolean): Promise<LnBinSpec | undefined> {
  if (wanted === 'none' || (wanted === 'reference' && !isReference)) return undefined;
  try {
    return (await lnBinSpecOf(state, f)) ?? undefined;
  } catch {
    return undefined;
  }
}

/**
 * The binning STACKING's LN setup will use for `f` (same factor and sites), or null when it
 * cannot be known here (size unknown, OSC without a Bayer pattern). OSC reads the light's header
 * for its CFA phase, as STACKING's frame setup does.
 */
export async function lnBinSpecOf(state: RawStackState, f: FrameRecord): Promise<LnBinSpec | null> {
  const W = state.width;
  const H = state.height;
  if (W === null || H === null) return null;
  const osc = state.colorMode === 'OSC';
  const binning: 1 | 2 = osc && state.config.cfa_mode === 'superpixel' ? 2 : 1;
  if (!osc) return { factor: lnSetupBinning(W, H, Math.floor(W / binning), Math.floor(H / binning), binning, false).factor, sites: null };
  if (!state.bayer) return null;
  const h = (await readFitsHeader(f.file)).header;
  const pattern = frameCfaPhase(state.bayer, h, H);
  const b = lnSetupBinning(W, H, Math.floor(W / binning), Math.floor(H / binning), binning, true, pattern);
  return { factor: b.factor, sites: b.sites };
}

/** Keeps a frame's planes if the cap allows; returns whether they were kept. */
export function rememberLnPlanes(state: RawStackState, f: FrameRecord, spec: LnBinSpec, planes: BinnedPlane[]): boolean {
  const s = storeOf(state);
  const source = pixelSource(f);
  const bytes = planes.reduce((a, p) => a + p.data.byteLength, 0);
  const old = s.bySource.get(source);
  const oldBytes = old ? old.planes.reduce((a, p) => a + p.data.byteLength, 0) : 0;
  if (s.bytes - oldBytes + bytes > s.cap) return false;
  s.bySource.set(source, { spec, planes });
  s.bytes += bytes - oldBytes;
  return true;
}

/** Bytes of planes held now, and frames. */
export function lnPlanesHeld(state: RawStackState): { frames: number; bytes: number } {
  const s = stores.get(state);
  return s ? { frames: s.bySource.size, bytes: s.bytes } : { frames: 0, bytes: 0 };
}

const sameSites = (a: number[][] | null, b: number[][] | null) =>
  a === null || b === null ? a === b : a.length === b.length && a.every((s, i) => s.length === b[i]!.length && s.every((v, j) => v === b[i]![j]));

/**
 * The held planes of `source` if they were binned as `spec` from a `width` × `height` plane;
 * taken (dropped from the store) either way, so they do not outlive the setup pass.
 */
export function takeLnPlanes(state: RawStackState, source: string, spec: LnBinSpec, width: number, height: number): BinnedPlane[] | null {
  const s = stores.get(state);
  const e = s?.bySource.get(source);
  if (!s || !e) return null;
  s.bySource.delete(source);
  s.bytes -= e.planes.reduce((a, p) => a + p.data.byteLength, 0);
  if (e.spec.factor !== spec.factor || !sameSites(e.spec.sites, spec.sites)) return null;
  if (!e.planes.every((p) => p.fullWidth === width && p.fullHeight === height && p.factor === spec.factor)) return null;
  return e.planes;
}

/** Drops every held plane (a run that ends without STACKING, or a new QUALITY_ANALYSIS). */
export function dropLnPlanes(state: RawStackState): void {
  stores.delete(state);
}
