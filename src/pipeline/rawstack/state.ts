// Run-wide state of a Raw Stack run, shared by its phases in pipeline order. Each phase reads
// what earlier phases wrote and adds its own section; nothing here holds whole frames of pixel
// data (frames stay on disk and are streamed in bands), so the state's size does not grow with
// image size. Paths in `artifacts` are relative to the run folder.

import type { Premeasured } from '../stages/frames/analysis.js';
import type { Affine } from '../../algorithms/affine.js';
import type { FrameMetrics } from '../../algorithms/frame-metrics.js';
import type { RawStackConfig } from '../../config/rawstack.js';
import type { PipelineBase } from '../run.js';
import type { ColorMode, FrameInfo } from '../stages/scan/scan.js';
import type { BayerPattern } from '../../fits/keys.js';
import type { TanWcs } from '../../astro/wcs.js';

export type FrameStatus = 'included' | 'excluded';

/** One run-queue entry as the run saw it (queue.ts): configuration, status and frame counts. */
export interface QueueEntryState {
  index: number;
  /** Filter as configured and as used (OSC data: `OSC`; names normalised by filterKey). */
  filter_configured: string;
  filter: string;
  input_dir: string;
  pattern: string;
  label: string | null;
  active: boolean;
  status: 'inactive' | 'scanned' | 'error';
  message: string | null;
  frames_found: number;
  frames_usable: number;
}

/** Closed set of reasons a frame leaves the run (frame filter codes plus pipeline-level ones). */
export type FrameExclusionCode =
  | 'unreadable'
  | 'size_mismatch'
  | 'calibration_failed'
  | 'blank_frame' // mostly zero/NaN padding or one constant value (CALIBRATION, CFA_CHANNEL_PREP)
  | 'no_stars'
  | 'registration_failed'
  | 'no_stars_measured' // stars found, but no FWHM/eccentricity measurable (FRAME_FILTERING)
  | 'low_correlation'
  | 'too_few_stars'
  | 'eccentricity'
  | 'fwhm_outlier'
  | 'low_transparency'
  | 'manual';

export interface FrameExclusion {
  code: FrameExclusionCode;
  detail: string;
}

/** Per-channel normalisation of a frame: v' = v * scale + offset (applied by the stack kernel). */
export interface ChannelNormalization {
  /** Robust location (background) and scale (noise or spread) measured on the frame. */
  location: number;
  spread: number;
  /** Median of all the channel's pixels (stars included): the `median` normalization mode. */
  median: number;
  scale: number;
  offset: number;
}

export interface FrameRecord {
  index: number;
  /** Absolute path of the light as found by INPUT_SCAN. */
  file: string;
  name: string;
  info: FrameInfo | null;
  status: FrameStatus;
  exclusions: FrameExclusion[];
  /** Absolute path of the calibrated frame (outputs/calibrated/cal_NNNNN.fit) when CALIBRATION ran. */
  calibratedFile: string | null;
  /** Which dark was used (file or group) when dark auto-select picked one. */
  darkUsed: string | null;
  /**
   * Stars in full-resolution frame pixel coordinates, brightest first, packed as the measuring
   * task returns them: (x, y, flux) triplets (packStars' layout, what REGISTRATION's workers
   * take) and their shapes (unpackStars gives StarPoints): ~72 KB for 1500 stars against
   * ~0.3 MB of star objects, held by every frame from REFERENCE_SELECTION to QUALITY_ANALYSIS
   * (issue 22 item 3: 289 MiB of heap at 1000 frames of 2048 px).
   */
  stars: { xyf: Float64Array; shapes: Float64Array } | null;
  metrics: FrameMetrics | null;
  registration: {
    ok: boolean;
    /** Frame pixel → reference pixel (0-based, x = column, y = row). */
    matrix: Affine | null;
    matched: number;
    residual_rms_px: number | null;
    code?: string;
    detail?: string;
  } | null;
  /** Per channel (1 for mono, 3 for OSC after debayer: R, G, B). */
  normalization: ChannelNormalization[] | null;
  /** Stacking weight (mean 1 over included frames), set by FRAME_FILTERING. */
  weight: number | null;
  /** Manual override applied to this frame, if any. */
  manual: boolean | null;
  /** Run queue: the frame's filter (queue.ts filterKey; `OSC` for colour data) and entry index; null in a single-folder run. */
  filter: string | null;
  entry: number | null;
  /**
   * Star and channel measurements taken while an earlier phase held the frame's pixels
   * (stages/frames/analysis.ts; premeasure.ts hands them to CFA_CHANNEL_PREP and REFERENCE_SELECTION,
   * which drop them once used). Absent: nothing measured yet.
   */
  premeasured?: Premeasured | null;
}

export interface Masters {
  bias: string | null;
  dark: string | null;
  flat: string | null;
  darkflat: string | null;
}

/** Raw Stack's run-wide state: what every run has (run.ts PipelineBase) plus the frames and each phase's results. */
export interface RawStackState extends PipelineBase<RawStackConfig> {
  frames: FrameRecord[];
  colorMode: ColorMode | null;
  bayer: BayerPattern | null;
  width: number | null;
  height: number | null;
  masters: Masters;
  referenceIndex: number | null;
  referenceStrategy: string | null;
  /** Absolute paths of the image outputs written so far. */
  outputs: {
    stacked_linear?: string;
    stacked_rgb?: string;
    stacked_rgb_bge?: string;
    stacked_rgb_pcc?: string;
    /** The pcc.fallback star_white white balance (not photometric), when PCC could not run. */
    stacked_rgb_starwhite?: string;
    stacked_rgb_hms?: string;
  };
  /** Celestial WCS of the stacked outputs, set by ASTROMETRY when it solved (PCC reads it). */
  wcs?: TanWcs;
  /** Run queue (queue.ts); null for a single-folder run (no queue entries). */
  queue: QueueEntryState[] | null;
  /** Free-form summaries of each phase for the report (phase name → JSON-serialisable object). */
  summaries: Record<string, Record<string, unknown>>;
}

export function newFrameRecord(index: number, file: string, name: string, info: FrameInfo | null): FrameRecord {
  return {
    index,
    file,
    name,
    info,
    status: 'included',
    exclusions: [],
    calibratedFile: null,
    darkUsed: null,
    stars: null,
    metrics: null,
    registration: null,
    normalization: null,
    weight: null,
    manual: null,
    filter: null,
    entry: null,
  };
}

export function exclude(frame: FrameRecord, code: FrameExclusionCode, detail: string): void {
  frame.status = 'excluded';
  frame.exclusions.push({ code, detail });
}

export const includedFrames = (state: RawStackState): FrameRecord[] => state.frames.filter((f) => f.status === 'included');

/** The file a phase should read pixels from: calibrated when CALIBRATION wrote one, else the light. */
export const pixelSource = (frame: FrameRecord): string => frame.calibratedFile ?? frame.file;
