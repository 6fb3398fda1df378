// Run-wide state of a tiled run: Raw Stack's state (the shared phases read and write it: frames,
// masters, reference, outputs, summaries) plus the tiled workflow's own results, phase by phase.
// `config` is the Raw Stack configuration derived from the tiled settings (config/tiled-run.ts)
// with the settings themselves under `config.tiled`. Nothing here holds whole frames: the
// per-frame, per-tile tables are frames × tiles numbers.

import type { RawStackConfig } from '../../config/rawstack.js';
import type { TiledSettings } from '../../config/tiled-run.js';
import type { RawStackState } from '../rawstack/state.js';
import type { TileGrid } from './tile-grid.js';
import type { TileMeasure, TileType } from './weights.js';

/** The tiled run's configuration as the phases see it. */
export type TiledConfigBundle = RawStackConfig & { readonly tiled: TiledSettings };

/** How the stack was weighted, and why. */
export type WeightMode = 'local' | 'global' | 'uniform';

export interface PhaseRecord {
  status: string;
  /** Dotted tiled-settings keys the phase read, and the SHA-256 of their values. */
  config_keys: string[];
  config_hash: string;
  /** What the phase started from: the previous phase's record hash and the frames it saw. */
  inputs: { previous: string | null; frames: number; frames_hash: string };
  /** The state the phase hands on (checkpoint.ts) and its SHA-256; null when later phases cannot build on its outcome. */
  checkpoint?: { path: string; sha256: string } | null;
  /** SHA-256 of this record without this field (the next phase's `previous`). */
  record_hash: string;
}

export interface TiledData {
  grid: TileGrid | null;
  /** Frame index → global weight G and the quality it came from. */
  global: Map<number, { g: number; q: number }>;
  /** Frame index → fraction of each tile the frame covers (COMMON_OVERLAP). */
  coverage: Map<number, Float32Array>;
  /** LOCAL_METRICS: frame indices in table order, the measurements, L and tile types (L null: off). */
  local: { frames: number[]; measures: TileMeasure[][]; l: Float64Array | null; types: TileType[] } | null;
  /** TILE_RECONSTRUCTION: normalised W per frame (index) and tile, and the mode that made it. */
  table: { frames: number[]; table: Float32Array; mode: WeightMode; reason: string } | null;
  records: Record<string, PhaseRecord>;
}

export interface TiledState extends RawStackState {
  config: TiledConfigBundle;
  tiled: TiledData;
}

export function newTiledData(): TiledData {
  return { grid: null, global: new Map(), coverage: new Map(), local: null, table: null, records: {} };
}
