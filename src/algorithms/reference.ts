// REFERENCE_SELECTION: which frame the others are registered to.
//
// Modes (config key `registration_reference`):
//   best_quality (default, as in the predecessor): the highest quality_score among usable frames
//     with at least `minStars` stars (frames with any stars when none has that many); ties go to
//     the earlier frame in the given order. When no frame has a finite score it falls back to the
//     temporal midpoint (`fallback: true`), as the predecessor did.
//   temporal_midpoint: the usable frame whose DATE-OBS is nearest the middle of the first and last
//     DATE-OBS (so the largest time difference, hence drift and field rotation, to any frame is
//     smallest); ties go to the earlier one. If any usable frame lacks a date, the middle frame in
//     the given (file) order instead.
// Invariants: pure; an empty or wholly unusable sequence is a typed failure, not an exception.

export type ReferenceMode = 'best_quality' | 'temporal_midpoint';
export const REFERENCE_MODES: readonly ReferenceMode[] = ['best_quality', 'temporal_midpoint'];
export const DEFAULT_REFERENCE_MODE: ReferenceMode = 'best_quality';

export interface ReferenceCandidate {
  index: number;
  file?: string;
  quality_score?: number | null;
  star_count?: number | null;
  /** DATE-OBS: a Date, epoch milliseconds, or FITS/ISO text (no zone = UTC). */
  date_obs?: Date | number | string | null;
  /** false: never the reference (unreadable, excluded by the filter). Default true. */
  usable?: boolean;
}

export type ReferenceResult =
  | {
      ok: true;
      index: number;
      /** Mode that chose the frame (temporal_midpoint when best_quality fell back). */
      strategy: ReferenceMode;
      fallback: boolean;
      quality_score: number | null;
      detail: string;
    }
  | { ok: false; code: 'no_frames' | 'no_usable_frame'; detail: string };

/** Milliseconds since the epoch, or NaN. FITS dates without a zone are UTC. */
export function parseDateObs(value: Date | number | string | null | undefined): number {
  if (value === null || value === undefined) return NaN;
  if (value instanceof Date) return value.getTime();
  if (typeof value === 'number') return Number.isFinite(value) ? value : NaN;
  const text = value.trim();
  if (text === '') return NaN;
  const iso = /^\d{4}-\d{2}-\d{2}$/.test(text) ? `${text}T00:00:00Z` : /[zZ]|[+-]\d{2}:?\d{2}$/.test(text) ? text : `${text}Z`;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? NaN : t;
}

function temporalMidpoint(frames: readonly ReferenceCandidate[]): { frame: ReferenceCandidate; detail: string } {
  const times = frames.map((f) => parseDateObs(f.date_obs));
  if (times.every((t) => Number.isFinite(t))) {
    const first = Math.min(...times);
    const last = Math.max(...times);
    const mid = (first + last) / 2;
    let best = 0;
    for (let i = 1; i < frames.length; i++) {
      const d = Math.abs(times[i]! - mid);
      const b = Math.abs(times[best]! - mid);
      if (d < b || (d === b && times[i]! < times[best]!)) best = i;
    }
    return { frame: frames[best]!, detail: `DATE-OBS nearest the midpoint ${new Date(mid).toISOString()} of ${frames.length} frames` };
  }
  const p = (frames.length - 1) >> 1;
  return { frame: frames[p]!, detail: `middle of ${frames.length} frames in file order (DATE-OBS missing)` };
}

export function selectReference(frames: readonly ReferenceCandidate[], mode: ReferenceMode = DEFAULT_REFERENCE_MODE, options: { minStars?: number } = {}): ReferenceResult {
  if (frames.length === 0) return { ok: false, code: 'no_frames', detail: 'no frames to choose a reference from' };
  const usable = frames.filter((f) => f.usable !== false);
  if (usable.length === 0) return { ok: false, code: 'no_usable_frame', detail: `none of ${frames.length} frames is usable` };
  const score = (f: ReferenceCandidate) => (typeof f.quality_score === 'number' && Number.isFinite(f.quality_score) ? f.quality_score : NaN);
  if (mode === 'best_quality') {
    const minStars = options.minStars ?? 30;
    const scored = usable.filter((f) => Number.isFinite(score(f)));
    let pool = scored.filter((f) => (f.star_count ?? 0) >= minStars);
    if (pool.length === 0) pool = scored.filter((f) => (f.star_count ?? 0) > 0);
    if (pool.length > 0) {
      let best = pool[0]!;
      for (const f of pool) if (score(f) > score(best)) best = f;
      return {
        ok: true,
        index: best.index,
        strategy: 'best_quality',
        fallback: false,
        quality_score: score(best),
        detail: `highest quality_score ${score(best).toFixed(4)} among ${pool.length} frames`,
      };
    }
  }
  const { frame, detail } = temporalMidpoint(usable);
  const s = score(frame);
  return {
    ok: true,
    index: frame.index,
    strategy: 'temporal_midpoint',
    fallback: mode !== 'temporal_midpoint',
    quality_score: Number.isFinite(s) ? s : null,
    detail: mode === 'temporal_midpoint' ? detail : `no frame has a quality score; ${detail}`,
  };
}
