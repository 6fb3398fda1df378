// The tiled pipeline's reason codes: Raw Stack's (the shared phases end with them) and the ones
// only the tiled phases use. Its phases are typed with this union (TiledPhase).

import type { Phase, PhaseOutcome } from '../phase.js';
import type { RawStackReasonCode } from '../rawstack/reasons.js';
import type { TiledState } from './state.js';

export type TiledReasonCode =
  | RawStackReasonCode
  // STATE_CLUSTERING / SYNTHETIC_FRAMES below assumptions.frames_reduced_threshold frames
  | 'reduced_mode'
  // SYNTHETIC_FRAMES after a skipped STATE_CLUSTERING
  | 'no_clusters';

export type TiledPhase = Phase<TiledState, TiledReasonCode>;
export type TiledOutcome = PhaseOutcome<TiledReasonCode>;
