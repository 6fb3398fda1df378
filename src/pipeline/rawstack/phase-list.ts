// The Raw Stack phase names in pipeline order (seed "Raw Stack processing path").
export const RAWSTACK_PHASES = [
  'INPUT_SCAN',
  'CALIBRATION',
  'CFA_CHANNEL_PREP',
  'REFERENCE_SELECTION',
  'REGISTRATION',
  'QUALITY_ANALYSIS',
  'FRAME_FILTERING',
  'STACKING',
  'ASTROMETRY',
  'BGE',
  'PCC',
  'HYPERMETRIC_STRETCH',
  'REPORT',
] as const;

export type RawStackPhaseName = (typeof RAWSTACK_PHASES)[number];

/** Postprocess phases: their errors do not stop the run (DESIGN §5). */
export const OPTIONAL_PHASES: ReadonlySet<string> = new Set(['ASTROMETRY', 'BGE', 'PCC', 'HYPERMETRIC_STRETCH']);
