// The tile grid of a tiled run as an SVG node tree (frame-plot-svg.ts's SvgNode): the tiles as
// rectangles over an optional image (the stack's preview), each tinted by a value per tile on a
// blue → yellow → red scale, with the value written in the tile when asked. The HTML report turns
// the tree into markup (svgMarkup), the run monitor into elements (svgElement), so both draw the
// same picture. Invariants: tiles come in grid order (the order of n_eff and L in the artifacts);
// data reaches the tree only as attribute values and text nodes.

import type { SvgNode } from './frame-plot-svg.js';

export interface TileRect {
  x: number;
  y: number;
  w: number;
  h: number;
}

export interface TileGridModel {
  image: { width: number; height: number };
  /** Tile rectangles in image pixels, grid order. */
  tiles: TileRect[];
  /** STAR / STRUCTURE per tile, when known (shown in the tooltips). */
  types: (string | null)[] | null;
}

export interface TileGridOptions {
  /** Drawn width in CSS pixels (the height follows the image's aspect). */
  width: number;
  /** An image drawn under the tiles (URL or data: URL). */
  imageHref?: string;
  label: string;
  lo: number;
  hi: number;
  showValues: boolean;
  /** Invert the colour scale (for N_eff: few frames = warm). */
  invert?: boolean;
}

const el = (tag: string, attrs: Record<string, string | number> = {}, ...children: (SvgNode | string)[]): SvgNode => ({ tag, attrs, children });

export const fmtTile = (v: number | null | undefined, d = 2): string => (v === null || v === undefined || !Number.isFinite(v) ? '–' : v.toFixed(d));

/** A colour for t in [0, 1] (blue → yellow → red). */
export function heat(t: number): string {
  const x = Math.max(0, Math.min(1, Number.isFinite(t) ? t : 0));
  const r = Math.round(255 * Math.min(1, 2 * x));
  const g = Math.round(200 * (x < 0.5 ? 0.4 + 1.2 * x : 2 * (1 - x)));
  const b = Math.round(255 * Math.max(0, 1 - 2 * x));
  return `rgb(${r},${g},${b})`;
}

/** Rectangles of a regular grid: rows of `originsY`, columns of `originsX`. */
export function gridRects(originsX: readonly number[], originsY: readonly number[], w: number, h: number): TileRect[] {
  const out: TileRect[] = [];
  for (const y of originsY) for (const x of originsX) out.push({ x, y, w, h });
  return out;
}

export function tileGridSvg(m: TileGridModel, values: readonly number[], o: TileGridOptions): SvgNode {
  const { width: W, height: H } = m.image;
  const scale = o.width / W;
  const hgt = Math.round(H * scale);
  const span = o.hi - o.lo || 1;
  const children: SvgNode[] = [];
  if (o.imageHref) children.push(el('image', { href: o.imageHref, x: 0, y: 0, width: o.width, height: hgt, preserveAspectRatio: 'none' }));
  m.tiles.forEach((r, k) => {
    const v = values[k] ?? NaN;
    const u = (v - o.lo) / span;
    const type = m.types?.[k];
    children.push(
      el(
        'rect',
        { x: (r.x * scale).toFixed(1), y: (r.y * scale).toFixed(1), width: (r.w * scale).toFixed(1), height: (r.h * scale).toFixed(1), fill: heat(o.invert ? 1 - u : u), 'fill-opacity': o.imageHref ? 0.28 : 0.85, stroke: '#fff', 'stroke-opacity': 0.8, 'stroke-width': 1, 'data-tile': k },
        el('title', {}, `tile ${k}${type ? ` (${type})` : ''}: ${fmtTile(v)}`),
      ),
    );
    if (o.showValues) {
      const size = Math.max(8, Math.min(13, r.w * scale * 0.22)).toFixed(0);
      children.push(el('text', { x: ((r.x + r.w / 2) * scale).toFixed(1), y: ((r.y + r.h / 2) * scale).toFixed(1), 'font-size': size, 'text-anchor': 'middle', 'dominant-baseline': 'middle', fill: '#fff', stroke: '#000', 'stroke-width': 0.6, 'paint-order': 'stroke' }, fmtTile(v, 1)));
    }
  });
  return el('svg', { class: 'tiled-grid', role: 'img', 'aria-label': o.label, width: o.width, height: hgt, viewBox: `0 0 ${o.width} ${hgt}` }, ...children);
}
