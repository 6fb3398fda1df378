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
  /**
   * 'heat' (default) for magnitudes (N_eff, L); 'diverging' for ratios centred on the scale's
   * middle (FWHM against a reference): the middle is a neutral grey, so "no difference" does not
   * read as a strong colour.
   */
  palette?: 'heat' | 'diverging';
  /** Decimals of the written values (1) and of the tooltips (2). */
  digits?: number;
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

/**
 * A colour for t in [0, 1] of a scale centred on 0.5: blue below, neutral grey at the centre, red
 * above, each end as saturated as heat's. A light grey rather than white so the maps' white labels
 * (black outline) stay legible, and lighter than a missing tile's #777.
 */
export function diverging(t: number): string {
  const x = Math.max(0, Math.min(1, Number.isFinite(t) ? t : 0.5));
  const mid = [185, 185, 185];
  const end = x < 0.5 ? [40, 90, 220] : [215, 45, 35];
  const f = Math.abs(2 * x - 1);
  const c = mid.map((m, i) => Math.round(m + f * (end[i]! - m)));
  return `rgb(${c[0]},${c[1]},${c[2]})`;
}

/**
 * Per axis, the span a tile's label owns: between the midpoints to the neighbouring tile centres
 * (the image edge at either end). The last tile of a row sits flush with the image edge and may
 * overlap the one before by most of its size, so a label at its own centre would print over its
 * neighbour's. Returns, for each centre in `centres`, its span.
 */
function labelSpans(centres: readonly number[], extent: number): Map<number, [number, number]> {
  const c = [...new Set(centres)].sort((a, b) => a - b);
  return new Map(c.map((x, k) => [x, [k > 0 ? (c[k - 1]! + x) / 2 : 0, k + 1 < c.length ? (x + c[k + 1]!) / 2 : extent]]));
}

/**
 * The colour scale [lo, hi] for a map of positive per-tile values (N_eff, L): hi is the largest
 * finite value, lo the smallest but never above hi·(1 − minRelSpan). Without the floor, a map
 * whose tiles differ by 4 % (N_eff 13.2 against 13.8) spans the whole blue → red scale and reads
 * as a field of strong differences; with it, colour differences mean at least that relative
 * difference. No finite value: [0, 1].
 */
export function tileScale(values: readonly (number | null)[], minRelSpan = 0.25): { lo: number; hi: number } {
  const fin = values.filter((v): v is number => v !== null && Number.isFinite(v));
  if (!fin.length) return { lo: 0, hi: 1 };
  const hi = Math.max(...fin);
  return { lo: Math.min(Math.min(...fin), hi * (1 - minRelSpan)), hi };
}

/** Rectangles of a regular grid: rows of `originsY`, columns of `originsX`. */
export function gridRects(originsX: readonly number[], originsY: readonly number[], w: number, h: number): TileRect[] {
  const out: TileRect[] = [];
  for (const y of originsY) for (const x of originsX) out.push({ x, y, w, h });
  return out;
}

export function tileGridSvg(m: TileGridModel, values: readonly (number | null)[], o: TileGridOptions): SvgNode {
  const { width: W, height: H } = m.image;
  const scale = o.width / W;
  const hgt = Math.round(H * scale);
  const span = o.hi - o.lo || 1;
  const spansX = labelSpans(m.tiles.map((r) => r.x + r.w / 2), W);
  const spansY = labelSpans(m.tiles.map((r) => r.y + r.h / 2), H);
  const rects: SvgNode[] = [];
  const labels: SvgNode[] = [];
  m.tiles.forEach((r, k) => {
    const v = values[k] ?? NaN;
    const missing = !Number.isFinite(v);
    const u = (v - o.lo) / span;
    const type = m.types?.[k];
    rects.push(
      el(
        'rect',
        { x: (r.x * scale).toFixed(1), y: (r.y * scale).toFixed(1), width: (r.w * scale).toFixed(1), height: (r.h * scale).toFixed(1), fill: missing ? '#777' : (o.palette === 'diverging' ? diverging : heat)(o.invert ? 1 - u : u), 'fill-opacity': o.imageHref ? 0.28 : 0.85, stroke: '#fff', 'stroke-opacity': 0.8, 'stroke-width': 1, 'data-tile': k },
        el('title', {}, `tile ${k}${type ? ` (${type})` : ''}: ${fmtTile(v, o.digits ?? 2)}`),
      ),
    );
    if (!o.showValues) return;
    const lx = spansX.get(r.x + r.w / 2)!;
    const ly = spansY.get(r.y + r.h / 2)!;
    const size = Math.max(8, Math.min(13, r.w * scale * 0.22));
    // A label only where its span has room for it (the value stays in the tile's tooltip).
    if ((lx[1] - lx[0]) * scale < 2.2 * size || (ly[1] - ly[0]) * scale < 1.1 * size) return;
    labels.push(el('text', { x: (((lx[0] + lx[1]) / 2) * scale).toFixed(1), y: (((ly[0] + ly[1]) / 2) * scale).toFixed(1), 'font-size': size.toFixed(0), 'text-anchor': 'middle', 'dominant-baseline': 'middle', fill: '#fff', stroke: '#000', 'stroke-width': 0.6, 'paint-order': 'stroke', 'data-tile': k }, fmtTile(v, o.digits ?? 1)));
  });
  const children: SvgNode[] = [];
  if (o.imageHref) children.push(el('image', { href: o.imageHref, x: 0, y: 0, width: o.width, height: hgt, preserveAspectRatio: 'none' }));
  // Every rectangle first, then every label: a later (overlapping) tile's fill must not dim a label.
  children.push(...rects, ...labels);
  return el('svg', { class: 'tiled-grid', role: 'img', 'aria-label': o.label, width: o.width, height: hgt, viewBox: `0 0 ${o.width} ${hgt}` }, ...children);
}

/** How many frames' L maps a report or monitor shows. */
export const LOCAL_SHOWN = 4;

/**
 * The frames whose local weight L varies most across the field (max / min of the finite values),
 * at most LOCAL_SHOWN, ties by frame index: the L maps worth showing. Frames with no finite L are
 * left out. The report and the run monitor pick the same frames through this.
 */
export function mostVariedFrames<T extends { index: number; l: readonly number[] }>(rows: readonly T[]): T[] {
  const spread = (l: readonly number[]) => {
    const fin = l.filter(Number.isFinite);
    return fin.length ? Math.max(...fin) / Math.max(1e-9, Math.min(...fin)) : -1;
  };
  return rows
    .map((row) => ({ row, s: spread(row.l) }))
    .filter((e) => e.s >= 0)
    .sort((a, b) => b.s - a.s || a.row.index - b.row.index)
    .slice(0, LOCAL_SHOWN)
    .map((e) => e.row);
}
