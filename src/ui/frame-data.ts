// What the frame table and its plots know about each frame beyond frame_quality.csv, taken from
// the run's event lines (DOM-free): the reference frame (REFERENCE_SELECTION's phase_end
// `reference_index`), each light's DATE-OBS (INPUT_SCAN frame events, `metrics.date_obs`) and
// its calibrated copy under the run folder (CALIBRATION frame events, `metrics.calibrated`; kept
// only when the run's file list has it, since output.keep_calibrated_frames false removes them).

import type { PlotFrame } from '../shared/frame-plot.js';
import type { FrameRow } from './frame-table.js';
import type { EventLine } from './run-state.js';

export interface FrameContext {
  referenceIndex: number | null;
  dateObs: Map<number, string>;
  /** Run-relative path of the frame's calibrated FITS. */
  paths: Map<number, string>;
}

/** The frame a click asks to open: the lead wires this to the image viewer. */
export interface OpenFrame {
  index: number;
  file: string;
  /** Run-relative path of a FITS of this frame under the run folder; null when the run kept none. */
  path: string | null;
}

const metricsOf = (e: EventLine): Record<string, unknown> => (e.metrics && typeof e.metrics === 'object' ? (e.metrics as Record<string, unknown>) : {});

/** `files`: the run's artifact paths when known (a calibrated path not among them is dropped). */
export function frameContext(events: readonly EventLine[], files?: readonly string[]): FrameContext {
  const ctx: FrameContext = { referenceIndex: null, dateObs: new Map(), paths: new Map() };
  const present = files ? new Set(files) : null;
  for (const e of events) {
    if (e.type === 'phase_end' && e.phase === 'REFERENCE_SELECTION' && typeof e.reference_index === 'number') ctx.referenceIndex = e.reference_index;
    if (e.type !== 'frame' || typeof e.index !== 'number') continue;
    const m = metricsOf(e);
    if (e.phase === 'INPUT_SCAN' && typeof m.date_obs === 'string') ctx.dateObs.set(e.index, m.date_obs);
    if (e.phase === 'CALIBRATION' && typeof m.calibrated === 'string' && (!present || present.has(m.calibrated))) ctx.paths.set(e.index, m.calibrated);
  }
  return ctx;
}

const num = (cell: string | undefined): number | null => {
  if (cell === undefined || cell.trim() === '') return null;
  const v = Number(cell);
  return Number.isFinite(v) ? v : null;
};

export function plotFramesFromRows(rows: readonly FrameRow[], ctx: FrameContext): PlotFrame[] {
  return rows.map((r) => ({
    index: r.index,
    file: r.file,
    excluded: r.status === 'excluded',
    reason: r.status === 'excluded' ? r.reason || 'excluded' : null,
    date_obs: ctx.dateObs.get(r.index) ?? null,
    values: { star_count: num(r.cells.star_count), fwhm: num(r.cells.fwhm), background: num(r.cells.background), eccentricity: num(r.cells.eccentricity), weight: num(r.cells.weight) },
  }));
}

export function openFrameOf(row: { index: number; file: string }, ctx: FrameContext): OpenFrame {
  return { index: row.index, file: row.file, path: ctx.paths.get(row.index) ?? null };
}
