// Per-frame, per-channel normalisation of STACKING (docs/ARCHITECTURE.md "Raw Stack decisions": the four modes must differ as their
// names say), relative to the reference frame's statistics:
//   addscale:   scale = ref_spread / spread, offset = ref_loc − loc·scale  (level and spread matched)
//   background: scale = 1,                   offset = ref_loc − loc        (level matched only)
//   median:     scale = ref_median / median, offset = 0                   (multiplicative only)
//   none:       scale = 1,                   offset = 0
// The stack kernel applies v' = v·scale + offset before rejection, so rejection compares
// normalised samples. `location`/`spread`/`median` come from CFA_CHANNEL_PREP (frame.normalization).
// When a frame carries no statistics (CFA_CHANNEL_PREP did not run, or tests), measureChannels
// computes them here with CFA_CHANNEL_PREP's own estimator (stages/frames/channel-stats.ts), one frame in
// memory at a time, so both paths normalise alike.
// Invariants: scale is finite and > 0, offset finite (a degenerate statistic falls back to 1 / 0
// and is reported); the reference frame always gets scale 1, offset 0.

import type { CfaPattern } from '../../../cpu/debayer.js';
import { measureChannels as measureFrameChannels, MONO_PHASES, phaseChannels } from '../frames/channel-stats.js';
import type { FitsReader } from '../../../fits/index.js';

export type NormalizationMode = 'addscale' | 'background' | 'median' | 'none';

export interface ChannelStats {
  location: number;
  spread: number;
  median: number;
}

/** Statistics of a stored normalisation record (an older record without `median` uses the location). */
export function statsOf(n: { location: number; spread: number; median?: number }): ChannelStats {
  const median = n.median;
  return { location: n.location, spread: n.spread, median: typeof median === 'number' && Number.isFinite(median) ? median : n.location };
}

export interface ScaleOffset {
  scale: number;
  offset: number;
  /** Why the mode's formula could not be used (degenerate statistics), if it could not. */
  fallback?: string;
}

export function normalizationFor(mode: NormalizationMode, frame: ChannelStats, ref: ChannelStats): ScaleOffset {
  const finite = (v: number) => Number.isFinite(v);
  switch (mode) {
    case 'none':
      return { scale: 1, offset: 0 };
    case 'background':
      if (!finite(frame.location) || !finite(ref.location)) return { scale: 1, offset: 0, fallback: 'location not finite' };
      return { scale: 1, offset: ref.location - frame.location };
    case 'median': {
      const s = ref.median / frame.median;
      if (!(finite(s) && s > 0)) return { scale: 1, offset: 0, fallback: `median ratio ${ref.median}/${frame.median} unusable` };
      return { scale: s, offset: 0 };
    }
    case 'addscale': {
      const s = ref.spread / frame.spread;
      if (!(finite(s) && s > 0) || !finite(frame.location) || !finite(ref.location)) {
        if (!finite(frame.location) || !finite(ref.location)) return { scale: 1, offset: 0, fallback: 'location not finite' };
        return { scale: 1, offset: ref.location - frame.location, fallback: `spread ratio ${ref.spread}/${frame.spread} unusable` };
      }
      return { scale: s, offset: ref.location - frame.location * s };
    }
  }
}

/** Channel order of the stack: mono ['L'], OSC after debayer ['R', 'G', 'B']. */
export const channelNames = (channels: number): string[] => (channels === 1 ? ['L'] : ['R', 'G', 'B']);

/**
 * The statistics CFA_CHANNEL_PREP would have measured (stages/frames/channel-stats.ts: clipped sky location,
 * robust spread of the survivors, median of all pixels), for a frame that carries none; one
 * frame in memory. `pattern` is the effective CFA pattern at stored pixel (0, 0), null for mono.
 */
export async function measureChannels(reader: FitsReader, pattern: CfaPattern | null): Promise<ChannelStats[]> {
  const { width, height } = reader;
  const band = await reader.readRows(0, height, { planes: [0] });
  const stats = measureFrameChannels(band.data, width, height, pattern ? phaseChannels(pattern) : MONO_PHASES, pattern ? 3 : 1);
  return stats.channels.map((c) => ({ location: c.location, spread: c.spread, median: c.median }));
}
