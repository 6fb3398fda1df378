// The frame plots on the pages (FWHM, stars, background, eccentricity, weight per frame in
// acquisition order): frame-plot.ts builds each chart as a node tree, this module turns it into
// SVG elements (attribute values and text nodes only, never parsed markup) and forwards a click
// on a point to the page's open-frame hook with that point's frame index.

import { clear, h } from './dom.js';
import { FRAME_CHARTS, framePlots, type PlotFrame } from '../shared/frame-plot.js';
import { chartSvg, type SvgNode } from '../shared/frame-plot-svg.js';

const SVG_NS = 'http://www.w3.org/2000/svg';

export function svgElement(node: SvgNode): SVGElement {
  const e = document.createElementNS(SVG_NS, node.tag) as SVGElement;
  for (const [k, v] of Object.entries(node.attrs)) e.setAttribute(k, String(v));
  for (const c of node.children) e.append(typeof c === 'string' ? document.createTextNode(c) : svgElement(c));
  return e;
}

const ORDER_NOTE = {
  date_obs: 'in acquisition order (DATE-OBS)',
  mixed: 'in acquisition order (DATE-OBS; frames without it last)',
  index: 'in file order (no DATE-OBS in the lights)',
};

/** Redraws the plots into `box`; `onOpen` gets the frame index of a clicked point. */
export function renderFramePlots(box: HTMLElement, frames: readonly PlotFrame[], referenceIndex: number | null, onOpen: (index: number) => void): void {
  clear(box);
  if (frames.length === 0) return;
  const plots = framePlots(frames, referenceIndex, FRAME_CHARTS);
  box.append(h('p', { class: 'hint plot-note' }, `Per frame ${ORDER_NOTE[plots.order]}. Red markers: excluded frames, one shape per reason; ring and dashed line: the reference frame. Hover a point for its frame; click it to open the frame.`));
  const grid = h('div', { class: 'frame-plot-grid' });
  for (const chart of plots.charts) {
    const svg = svgElement(chartSvg(chart));
    svg.addEventListener('click', (ev) => {
      const pt = (ev.target as Element).closest('[data-frame]');
      const index = pt ? Number(pt.getAttribute('data-frame')) : NaN;
      if (Number.isInteger(index)) onOpen(index);
    });
    grid.append(h('figure', { class: 'frame-plot' }, svg));
  }
  box.append(grid);
}
