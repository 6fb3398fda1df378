// Suggested Raw Stack parameter values, each with its reason, from facts about the machine and
// the data: the memory budget from free RAM, workers from the cores, rejection from the frame
// count, BGE's tile size from the measured FWHM. Pure rules: the caller gathers the facts (the
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

/** The suggestions for `current` given the facts, and the BGE tile size they imply (null without a FWHM). */
export function suggestParameters(current: RawStackConfig, facts: SuggestFacts): { suggestions: Suggestion[]; tileSize: number | null } {
  const suggestions: Suggestion[] = [];
  const budget = Math.max(256, Math.min(65536, Math.floor((facts.freeMiB * 0.5) / 64) * 64));
  suggestions.push({ path: 'runtime_limits.memory_budget', value: budget, current: current.runtime_limits.memory_budget, reason: `half of the ${facts.freeMiB} MiB free RAM (of ${facts.totalMiB} MiB), in 64 MiB steps` });
  const workers = Math.max(1, Math.min(16, facts.cores - 1));
  suggestions.push({ path: 'runtime_limits.parallel_workers', value: workers, current: current.runtime_limits.parallel_workers, reason: `${facts.cores} CPU cores, one left for the server and the GPU driver` });
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
