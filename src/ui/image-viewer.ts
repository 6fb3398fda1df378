// Entry points into the image viewer (viewer.html) for the other pages: the run monitor's
// previews and artifact list, and the frame table (a point or row opens that frame's calibrated
// FITS). DOM-light: builds URLs and opens a tab; the viewer itself is viewer-page.ts.

import { calibratedFrameName, RUN_LAYOUTS, type RunLayout } from '../shared/run-layout.js';

/** FITS names the viewer opens (plain, fpack'ed or gzip'ed). */
export function isFitsPath(path: string): boolean {
  return /\.(fits?|fts)(\.fz|\.gz)?$/i.test(path);
}

/** The viewer page for `path` (relative to the run folder), optionally compared with `compare`. */
export function viewerUrl(runId: string, path: string, compare?: string): string {
  const q = new URLSearchParams({ run: runId, path });
  if (compare) q.set('compare', compare);
  return `viewer.html?${q.toString()}`;
}

/** Opens the viewer on a run's FITS image in a new tab. */
export function openViewer(runId: string, path: string, compare?: string): void {
  window.open(viewerUrl(runId, path, compare), '_blank', 'noopener');
}

/**
 * The calibrated FITS of frame `index` (the 0-based `index` column of frame_quality.csv), as
 * CALIBRATION writes it (run-layout.ts: outputs/calibrated/cal_NNNNN.fit). It exists when the
 * run calibrated its lights and kept the frames (output.keep_calibrated_frames).
 */
export function calibratedFramePath(index: number, layout: RunLayout = RUN_LAYOUTS.rawstack): string {
  return `${layout.calibrated}/${calibratedFrameName(index)}`;
}
