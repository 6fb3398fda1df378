// The per-frame quality artifacts that outside tools read (issue 5 item 5, fixed shapes), and the
// rounded metrics view that frame events carry. Written by FRAME_FILTERING — from run() after the
// filter, or from prepare() when the phase is skipped in quality mode `off` (then they show the
// exclusions of the earlier phases) — so they always describe the final frame decisions.
//
// artifacts/preprocess/frame_quality.csv
//   header exactly `index,file,status,reason,star_count,fwhm,fwhm_x,fwhm_y,eccentricity,
//   background,noise,snr,saturation,registration_cc,quality_score,weight`; one row per INPUT
//   frame in input order (frames excluded at INPUT_SCAN included); `index` 0-based (the key
//   quality_filter.manual_overrides takes); `file` the file name, RFC 4180-quoted when needed;
//   `status` included|excluded; `reason` the primary exclusion code (empty when included);
//   fwhm/fwhm_x/fwhm_y (px, major/minor axis) and eccentricity 3 decimals, background and noise
//   (ADU) 2, snr 2, saturation (fraction of pixels) 6, registration_cc, quality_score and weight 4;
//   an empty cell is an unknown value (frame not measured, not registered, not stacked). Lines
//   end with \n. Run queue runs append one column, `filter` (the frame's filter group), after
//   `weight`; single-folder runs keep exactly the header above.
// artifacts/preprocess/rejected_frames.txt
//   one line per excluded frame, input order, no header: `index<TAB>file<TAB>reason<TAB>detail`
//   where reason is the primary code and detail its human explanation, followed by
//   `; also <code>: <detail>` for every further rule the frame failed. Tabs and line breaks
//   inside fields become spaces, so every line splits into exactly 4 fields. Empty when no frame
//   was excluded. Run queue runs write the file as `<filter>/<file>` (names repeat across filters).

import type { FrameMetrics } from '../../algorithms/frame-metrics.js';
import { artifactPath, type RunLayout } from '../../shared/run-layout.js';
import { writeFileAtomic } from '../atomic.js';
import { addArtifact } from '../artifacts.js';
import { inRunFolder } from '../run-folder.js';
import type { FrameRecord, RawStackState } from './state.js';

export const FRAME_QUALITY_HEADER = 'index,file,status,reason,star_count,fwhm,fwhm_x,fwhm_y,eccentricity,background,noise,snr,saturation,registration_cc,quality_score,weight';
/** Where the two files lie in a run folder. */
export const qualityArtifactPaths = (layout: RunLayout) => ({ csv: layout.frameTable ?? artifactPath(layout, 'frame_quality.csv'), rejected: artifactPath(layout, 'rejected_frames.txt') });

/** A number with fixed decimals; empty for unknown (null, NaN, ±∞). */
function num(v: number | null | undefined, decimals: number): string {
  return typeof v === 'number' && Number.isFinite(v) ? v.toFixed(decimals) : '';
}

/** RFC 4180 field: quoted (with doubled quotes) when it holds a comma, quote, line break or edge space. */
export function csvField(text: string): string {
  return /[",\r\n]|^\s|\s$/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}

function csvRow(f: FrameRecord, queue: boolean): string {
  const m = f.metrics;
  const cells = [
    String(f.index),
    csvField(f.name),
    f.status,
    f.status === 'excluded' ? (f.exclusions[0]?.code ?? '') : '',
    m ? String(m.star_count) : '',
    num(m?.fwhm, 3),
    num(m?.fwhm_x, 3),
    num(m?.fwhm_y, 3),
    num(m?.eccentricity, 3),
    num(m?.background_median, 2),
    num(m?.background_rms, 2),
    num(m?.snr_estimate, 2),
    num(m?.saturation, 6),
    num(m?.registration_cc, 4),
    num(m?.quality_score, 4),
    num(f.weight, 4),
    ...(queue ? [csvField(f.filter ?? '')] : []),
  ];
  return cells.join(',');
}

export function frameQualityCsv(frames: readonly FrameRecord[], queue = false): string {
  return [queue ? `${FRAME_QUALITY_HEADER},filter` : FRAME_QUALITY_HEADER, ...frames.map((f) => csvRow(f, queue))].join('\n') + '\n';
}

const oneLine = (s: string) => s.replace(/[\t\r\n]+/g, ' ');

export function rejectedFramesText(frames: readonly FrameRecord[], queue = false): string {
  const lines: string[] = [];
  for (const f of frames) {
    if (f.status !== 'excluded') continue;
    const [first, ...rest] = f.exclusions;
    const detail = [first?.detail ?? 'excluded', ...rest.map((e) => `also ${e.code}: ${e.detail}`)].join('; ');
    lines.push([String(f.index), oneLine(queue && f.filter ? `${f.filter}/${f.name}` : f.name), first?.code ?? 'excluded', oneLine(detail)].join('\t'));
  }
  return lines.length > 0 ? lines.join('\n') + '\n' : '';
}

/** Writes both files atomically and registers them for the manifest under `phase`. */
export async function writeQualityArtifacts(state: RawStackState, phase: string): Promise<void> {
  const paths = qualityArtifactPaths(state.folder.layout);
  await writeFileAtomic(inRunFolder(state.folder, paths.csv), frameQualityCsv(state.frames, state.queue !== null));
  await writeFileAtomic(inRunFolder(state.folder, paths.rejected), rejectedFramesText(state.frames, state.queue !== null));
  addArtifact(state, 'frame_quality', phase, paths.csv);
  addArtifact(state, 'rejected_frames', phase, paths.rejected);
}

const round = (v: number | null | undefined, decimals: number): number | null => (typeof v === 'number' && Number.isFinite(v) ? Number(v.toFixed(decimals)) : null);

/** The metrics a `frame` event carries (CSV names, rounded like the CSV, unknown = null). */
export function metricsView(m: FrameMetrics | null): Record<string, number | null> | undefined {
  if (!m) return undefined;
  return {
    star_count: m.star_count,
    fwhm: round(m.fwhm, 3),
    fwhm_x: round(m.fwhm_x, 3),
    fwhm_y: round(m.fwhm_y, 3),
    eccentricity: round(m.eccentricity, 3),
    background: round(m.background_median, 2),
    noise: round(m.background_rms, 2),
    snr: round(m.snr_estimate, 2),
    saturation: round(m.saturation, 6),
    registration_cc: round(m.registration_cc, 4),
    quality_score: round(m.quality_score, 4),
  };
}

/** Median of the finite values (NaN when none). */
export function medianOf(values: readonly (number | null | undefined)[]): number {
  const v = values.filter((x): x is number => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  const n = v.length;
  if (n === 0) return NaN;
  return n % 2 ? v[n >> 1]! : (v[n / 2 - 1]! + v[n / 2]!) / 2;
}
