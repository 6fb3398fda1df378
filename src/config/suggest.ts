// Suggested Raw Stack and tiled parameter values, each with its reason, from facts about the
// machine and the data: the memory budget from free RAM, workers from the cores, rejection from
// the frame count, BGE's tile size (Raw Stack) or the tile grid (tiled) from the measured FWHM,
// and for a tiled run the weighting and clustering its frame count allows. Pure rules: the caller gathers the facts (the
// server's POST /api/config/suggest scans a folder, reads a run's frame table or measures a
// frame's FWHM in a child process) and shows the result.

import type { RawStackConfig } from './rawstack.js';

export interface Suggestion {
  path: string;
  value: unknown;
  current: unknown;
  reason: string;
}

export interface SuggestFacts {
  freeMiB: number;
  totalMiB: number;
  cores: number;
  /** Lights found or used (null: unknown). */
  frames: number | null;
  /** Median FWHM in pixels (null: not measured). */
  fwhm: number | null;
  /** The frames' shorter side in pixels (null: unknown). */
  shortSide: number | null;
}

export function rejectionFor(frames: number): { method: string; low: number; high: number; reason: string } {
  if (frames < 8) return { method: 'median', low: 3, high: 3, reason: `${frames} frames: too few for sigma statistics; a median is robust` };
  if (frames < 15) return { method: 'sigma', low: 3, high: 3, reason: `${frames} frames: sigma clipping with wide bounds (3.0/3.0) keeps enough samples` };
  if (frames < 30) return { method: 'winsor', low: 3, high: 3, reason: `${frames} frames: winsorized sigma clipping is robust at this depth` };
  return { method: 'sigma', low: 2.5, high: 3, reason: `${frames} frames: enough samples for tighter bounds (2.5/3.0)` };
}

/** Memory budget from free RAM, workers from the cores (the same keys in both pipelines). */
function machineSuggestions(current: { memory_budget: number; parallel_workers: number }, facts: SuggestFacts): Suggestion[] {
  const budget = Math.max(256, Math.min(65536, Math.floor((facts.freeMiB * 0.5) / 64) * 64));
  const workers = Math.max(1, Math.min(16, facts.cores - 1));
  return [
    { path: 'runtime_limits.memory_budget', value: budget, current: current.memory_budget, reason: `half of the ${facts.freeMiB} MiB free RAM (of ${facts.totalMiB} MiB), in 64 MiB steps` },
    { path: 'runtime_limits.parallel_workers', value: workers, current: current.parallel_workers, reason: `${facts.cores} CPU cores, one left for the server and the GPU driver` },
  ];
}

/** The suggestions for `current` given the facts, and the BGE tile size they imply (null without a FWHM). */
export function suggestParameters(current: RawStackConfig, facts: SuggestFacts): { suggestions: Suggestion[]; tileSize: number | null } {
  const suggestions: Suggestion[] = machineSuggestions(current.runtime_limits, facts);
  const { frames, fwhm, shortSide } = facts;
  if (frames !== null) {
    const r = rejectionFor(frames);
    suggestions.push({ path: 'rejection.method', value: r.method, current: current.rejection.method, reason: r.reason });
    suggestions.push({ path: 'rejection.low', value: r.low, current: current.rejection.low, reason: r.reason });
    suggestions.push({ path: 'rejection.high', value: r.high, current: current.rejection.high, reason: r.reason });
    if (frames < current.frames_min) suggestions.push({ path: 'frames_min', value: frames, current: current.frames_min, reason: `only ${frames} frames found; the run would warn` });
  }
  let tileSize: number | null = null;
  if (fwhm !== null && Number.isFinite(fwhm)) {
    const t = current.tile;
    const raw = t.size_factor * fwhm;
    const cap = shortSide ? Math.floor(shortSide / t.max_divisor) : Infinity;
    tileSize = Math.max(16, Math.min(cap, Math.round(raw)));
    suggestions.push({
      path: 'tile.min_size',
      value: tileSize,
      current: t.min_size,
      reason: `measured FWHM ${fwhm.toFixed(2)} px: BGE tiles of ${t.size_factor} x FWHM = ${Math.round(raw)} px${Number.isFinite(cap) && raw > cap ? `, capped at 1/${t.max_divisor} of the short side` : ''}`,
    });
  }
  return { suggestions, tileSize };
}

/** What the tiled suggestions read of the current tiled settings (config/tiled-run.ts TiledSettings). */
export interface TiledSuggestCurrent {
  runtime_limits: { memory_budget: number; parallel_workers: number };
  tile: { size_factor: number; min_size: number; max_divisor: number; overlap_fraction: number; star_min_count: number };
  local_metrics: { min_frames: number };
  stacking: { method: string; weight_mode: string; sigma_clip: { sigma_low: number; sigma_high: number } };
  synthetic: { enabled: boolean };
  assumptions: { frames_reduced_threshold: number };
}

/**
 * Suggestions for a tiled run (paths of the tiled YAML), from the same facts as Raw Stack's plus
 * the frame size: memory and workers as for Raw Stack; stacking.method and the sigma bounds from
 * the frame count; the weighting from the frame count (below local_metrics.min_frames the run
 * would fall back to global weights: say so up front); clustering only from
 * assumptions.frames_reduced_threshold frames; and the tile grid the measured seeing gives
 * (docs/tiled-workflow.md "Tile grid"): `tile.min_size` set to that tile size, so the YAML shows
 * the size it will run with, with the grid it makes in the reason. `grid` is the tile-grid rule
 * (tileGrid), passed in so that this module stays free of the pipeline.
 */
export function suggestTiledParameters(
  current: TiledSuggestCurrent,
  facts: SuggestFacts & { width: number | null; height: number | null },
  grid: (width: number, height: number, fwhm: number) => { tileSize: number; tilesX: number; tilesY: number; overlapPx: number },
): { suggestions: Suggestion[]; tileSize: number | null } {
  const suggestions: Suggestion[] = machineSuggestions(current.runtime_limits, facts);
  const { frames, fwhm, width, height } = facts;
  if (frames !== null) {
    const r = rejectionFor(frames);
    suggestions.push({ path: 'stacking.method', value: r.method, current: current.stacking.method, reason: r.reason });
    suggestions.push({ path: 'stacking.sigma_clip.sigma_low', value: r.low, current: current.stacking.sigma_clip.sigma_low, reason: r.reason });
    suggestions.push({ path: 'stacking.sigma_clip.sigma_high', value: r.high, current: current.stacking.sigma_clip.sigma_high, reason: r.reason });
    const minFrames = current.local_metrics.min_frames;
    if (frames < minFrames) {
      suggestions.push({ path: 'stacking.weight_mode', value: 'global', current: current.stacking.weight_mode, reason: `${frames} frames, below local_metrics.min_frames = ${minFrames}: per-tile weights need more frames per tile to compare; the run would fall back to global weights (G) with a warning` });
    } else {
      suggestions.push({ path: 'stacking.weight_mode', value: 'local', current: current.stacking.weight_mode, reason: `${frames} frames: enough to weight each tile by where each frame is sharp (W = G·L)` });
    }
    const threshold = current.assumptions.frames_reduced_threshold;
    suggestions.push({
      path: 'synthetic.enabled',
      value: frames >= threshold,
      current: current.synthetic.enabled,
      reason: frames >= threshold ? `${frames} frames: enough to cluster the frames' states into synthetic frames` : `${frames} frames, below assumptions.frames_reduced_threshold = ${threshold}: clustering would be skipped (reduced mode)`,
    });
  }
  let tileSize: number | null = null;
  if (fwhm !== null && Number.isFinite(fwhm) && width !== null && height !== null) {
    const g = grid(width, height, fwhm);
    tileSize = g.tileSize;
    const t = current.tile;
    const raw = Math.round(t.size_factor * fwhm);
    const limit = raw < g.tileSize ? `raised to the minimum ${g.tileSize} px` : raw > g.tileSize ? `capped at 1/${t.max_divisor} of the short side` : 'within the limits';
    suggestions.push({
      path: 'tile.min_size',
      value: g.tileSize,
      current: t.min_size,
      reason: `measured FWHM ${fwhm.toFixed(2)} px: tiles of ${t.size_factor} × FWHM = ${raw} px, ${limit}: ${g.tilesX} × ${g.tilesY} tiles of ${g.tileSize} px overlapping by ${g.overlapPx} px on ${width} × ${height}`,
    });
  }
  return { suggestions, tileSize };
}
