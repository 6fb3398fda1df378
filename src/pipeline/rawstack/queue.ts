// The run queue (seed "Run queue entry"): several input folders, one per filter, in one run.
// Frames of all active entries go through the pipeline together and are registered to ONE
// common reference, so every filter's stack has the same geometry; quality scoring, filtering,
// weights and stacking work per filter group. This module holds the pure rules:
// - filterKey: the filter name a group goes by (L/R/G/B aliases folded, other names trimmed);
//   entries with the same key form one group (two nights of L stack together);
// - stackFileName: outputs/stacked_<filter>.fits with the name made file-safe;
// - referenceFilter: the group the common reference is chosen from — L when present, else the
//   first active entry's filter. L (or the first filter) has the most signal and stars, so
//   matching every other filter onto it is the most robust, and stacked_linear.fits (L) keeps
//   the geometry of one of its own frames. A ranking across filters would compare unlike
//   quantities (an Ha frame has fewer stars and more noise than an L frame by nature);
// - filterGroups: frames per filter in queue order; groupReference: the frame a group's
//   normalisation (and registration_cc) refers to: the common reference when it is in the
//   group, else the group's best quality_score frame.
// A single-folder run (no queue entries) has state.queue null and one group with filter null.

import { basename } from 'node:path';
import type { FrameRecord, RawStackState } from './state.js';

const ALIASES: Record<string, string> = {
  l: 'L',
  lum: 'L',
  luminance: 'L',
  r: 'R',
  red: 'R',
  g: 'G',
  green: 'G',
  b: 'B',
  blue: 'B',
  osc: 'OSC',
};

/** The group name of a configured filter: L/R/G/B (and OSC) case- and alias-folded, else as written (trimmed). */
export function filterKey(filter: string): string {
  const t = filter.trim();
  return ALIASES[t.toLowerCase()] ?? t;
}

/** `stacked_<filter>.fits`, characters other than letters, digits, `-`, `_`, `+` replaced by `_`. */
export function stackFileName(filter: string): string {
  return `stacked_${filter.replace(/[^A-Za-z0-9_+-]/g, '_')}.fits`;
}

export interface FilterGroup {
  /** Null in a single-folder run. */
  filter: string | null;
  frames: FrameRecord[];
}

/** Frames per filter in the order the filters first appear (queue order); one unnamed group without a queue. */
export function filterGroups(state: RawStackState, frames: readonly FrameRecord[] = state.frames): FilterGroup[] {
  if (!state.queue) return [{ filter: null, frames: [...frames] }];
  const order: string[] = [];
  for (const e of state.queue) if (e.active && !order.includes(e.filter)) order.push(e.filter);
  const by = new Map<string, FrameRecord[]>(order.map((f) => [f, []]));
  for (const f of frames) {
    const key = f.filter ?? '';
    if (!by.has(key)) {
      by.set(key, []);
      order.push(key);
    }
    by.get(key)!.push(f);
  }
  return order.map((filter) => ({ filter, frames: by.get(filter)! })).filter((g) => g.frames.length > 0);
}

/** The filter the common reference is chosen from: L when it has frames, else the first active entry's. */
export function referenceFilter(state: RawStackState, frames: readonly FrameRecord[]): string | null {
  if (!state.queue) return null;
  const present = new Set(frames.map((f) => f.filter));
  if (present.has('L')) return 'L';
  for (const e of state.queue) if (e.active && present.has(e.filter)) return e.filter;
  return frames[0]?.filter ?? null;
}

/** A group's own reference: the common reference when it belongs to the group, else its best-scored frame. */
export function groupReference(state: RawStackState, frames: readonly FrameRecord[]): FrameRecord | undefined {
  const common = state.referenceIndex !== null ? state.frames[state.referenceIndex] : undefined;
  if (common && frames.includes(common)) return common;
  let best: FrameRecord | undefined;
  for (const f of frames) {
    const q = f.metrics?.quality_score ?? -Infinity;
    if (!best || q > (best.metrics?.quality_score ?? -Infinity)) best = f;
  }
  return best;
}

/** A short label of an entry for messages: `#2 R (night 2) /data/R`. */
export function entryLabel(e: { index: number; filter: string; label: string | null; input_dir: string }): string {
  return `#${e.index} ${e.filter}${e.label ? ` (${e.label})` : ''} ${basename(e.input_dir) || e.input_dir}`;
}
