// The report's frame plots (HTML): FWHM, stars, background, eccentricity and weight per frame,
// and the registration shift and rotation, drawn by the same chart code as the web UI's frame
// table (src/shared/frame-plot.ts, frame-plot-svg.ts) from the report model's frames, in acquisition order. Static SVG,
// no scripts: tooltips are SVG <title>s.

import { FRAME_CHARTS, REGISTRATION_CHARTS, framePlots, type FrameMetricKey, type PlotFrame } from '../shared/frame-plot.js';
import { chartSvg, svgMarkup } from '../shared/frame-plot-svg.js';
import type { ReportFrame, ReportModel } from './model.js';

export function plotFrames(frames: readonly ReportFrame[]): PlotFrame[] {
  return frames.map((f) => ({
    index: f.index,
    file: f.file,
    excluded: f.status === 'excluded',
    reason: f.status === 'excluded' ? (f.reason ?? 'excluded') : null,
    date_obs: f.date_obs ?? null,
    values: { star_count: f.star_count, fwhm: f.fwhm, background: f.background, eccentricity: f.eccentricity, weight: f.weight, dx_px: f.dx_px ?? null, dy_px: f.dy_px ?? null, rotation_deg: f.rotation_deg ?? null },
  }));
}

const ORDER_NOTE = {
  date_obs: 'Frames in acquisition order (DATE-OBS); the x axis shows frame numbers.',
  mixed: 'Frames in acquisition order (DATE-OBS); frames without DATE-OBS follow in file order.',
  index: 'Frames in file order (the lights carry no DATE-OBS).',
};

/** The "Frame plots" and "Registration" sections; '' without frames. */
export function framePlotsHtml(m: ReportModel): string {
  if (m.frames.length === 0) return '';
  const frames = plotFrames(m.frames);
  const ref = m.reference?.index ?? null;
  // A chart no frame has a value for says nothing (a tiled run sets no per-frame stacking weight:
  // its weights are per tile, shown in "Tiles and local weights").
  const hasValue = (key: FrameMetricKey) => frames.some((f) => Number.isFinite(f.values[key] ?? NaN));
  const quality = framePlots(frames, ref, FRAME_CHARTS.filter((c) => c.series.some((s) => hasValue(s.key))));
  const reg = framePlots(frames, ref, REGISTRATION_CHARTS);
  const fig = (svg: string) => `<figure class="frame-plot">${svg}</figure>`;
  const note = `<p class="plot-note">${ORDER_NOTE[quality.order]} Excluded frames are red markers, one shape per reason (legend); the reference frame is ringed and marked by the dashed line. Hover a point for the frame, its file and value.</p>`;
  const hasReg = frames.some((f) => typeof f.values.dx_px === 'number');
  return `<h2 id="frame-plots">Frame plots</h2>
${note}
<div class="frame-plots">${quality.charts.map((c) => fig(svgMarkup(chartSvg(c)))).join('\n')}</div>
<h2 id="registration-plots">Registration</h2>
<p class="plot-note">Per registered frame: where its centre lands on the reference (dx along columns, dy along rows, px) and its rotation (degrees, positive from +x towards +y), from <code>registration.json</code>.${hasReg ? '' : ' No frame has a registration transform.'}</p>
<div class="frame-plots">${reg.charts.map((c) => fig(svgMarkup(chartSvg(c)))).join('\n')}</div>`;
}

/** CSS for the sections above (added to the report's stylesheet). */
export const FRAME_PLOTS_STYLE = `
.frame-plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(min(520px,100%),1fr));gap:14px;margin:8px 0 16px}
.frame-plot svg{width:100%;height:auto;border:1px solid #e3e6ea;border-radius:6px;background:#fff}
.frame-plot .pt{cursor:default}.plot-note{color:#5b6575;font-size:13px;margin:4px 0}`;
