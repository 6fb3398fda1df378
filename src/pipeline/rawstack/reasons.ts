// Raw Stack's reason codes: the core set every pipeline shares (src/pipeline/phase.ts) and the
// ones only Raw Stack's phases use. Its phases are typed with this union (RawStackPhase), so a
// phase cannot end with a reason the pipeline does not declare. The postprocess reasons belong
// to ASTROMETRY, BGE, PCC and HYPERMETRIC_STRETCH; they move with those phases when another
// pipeline shares them.

import type { Phase, PhaseOutcome, CoreReasonCode } from '../phase.js';
import type { RawStackState } from './state.js';

export type RawStackReasonCode =
  | CoreReasonCode
  // INPUT_SCAN: the file pattern matches nothing, but the folder holds FITS files it does not take
  | 'pattern_mismatch'
  | 'calibration_error'
  | 'registration_error'
  | 'stacking_error'
  // FRAME_FILTERING with quality_filter.mode = off
  | 'quality_mode_off'
  // postprocess phases
  | 'no_rgb_stack' // on mono data
  | 'solver_missing' // ASTROMETRY without a solver binary or data
  | 'solver_failed'
  | 'no_wcs' // PCC without a solved WCS
  | 'no_catalog_stars' // PCC without a catalogue or without catalogue stars on the image
  | 'fit_failed' // a model fit rejected by its guards (PCC: too few stars, residual, condition number)
  | 'pcc_failed'; // HMS with require_successful_pcc after a failed PCC

export type RawStackPhase = Phase<RawStackState, RawStackReasonCode>;
export type RawStackOutcome = PhaseOutcome<RawStackReasonCode>;
