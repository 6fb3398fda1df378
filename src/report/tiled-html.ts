// The tiled run's section of the HTML report: what a user needs to trust the local weights.
// - the tile grid drawn over the stack's preview, each tile tinted by its effective frame count
//   N_eff = (ΣW)² / ΣW² (few frames dominate = warm; many frames share the tile = cool);
// - the global weight G of every frame (bars, in acquisition order of the table);
// - heat maps of the local weight L per tile for the frames whose L varies most across the
//   field (the frames the tiling treats differently from region to region);
// - per tile, the FWHM expected of this stack over a global-weighted stack's (below 1: the
//   local weights sharpen the tile; same grid drawing as N_eff);
// - the validation results with pass/fail.
// Pure SVG and text, no scripts (the report is self-contained); values escaped. The tile grid is
// src/shared/tile-grid-svg.ts, which the run monitor draws too.

import { escapeHtml as h } from './escape.js';
import type { ReportTiled } from './model.js';
import { svgMarkup } from '../shared/frame-plot-svg.js';
import { fmtTile, gridRects, tileGridSvg, tileScale, type TileGridOptions } from '../shared/tile-grid-svg.js';

const fmt = fmtTile;

function gridSvg(t: ReportTiled, values: (number | null)[], opts: Omit<TileGridOptions, 'imageHref'> & { preview?: string }): string {
  const model = { image: t.image, tiles: gridRects(t.tile.origins_x, t.tile.origins_y, t.tile.size_x, t.tile.size_y), types: t.tile.types };
  const { preview, ...rest } = opts;
  const svg = tileGridSvg(model, values, { ...rest, ...(preview ? { imageHref: `data:image/png;base64,${preview}` } : {}) });
  svg.attrs.xmlns = 'http://www.w3.org/2000/svg'; // after class: the markup starts <svg class="tiled-grid"
  return svgMarkup(svg);
}

function gBars(t: ReportTiled): string {
  const n = t.frames.length;
  if (n === 0) return '';
  const W = 640;
  const H = 150;
  const pad = { l: 40, b: 26, t: 8 };
  const max = Math.max(...t.frames.map((f) => f.g), 1e-9);
  const bw = (W - pad.l - 8) / n;
  const bars = t.frames
    .map((f, k) => {
      const bh = ((H - pad.b - pad.t) * f.g) / max;
      const x = pad.l + k * bw;
      return `<rect x="${(x + bw * 0.1).toFixed(1)}" y="${(H - pad.b - bh).toFixed(1)}" width="${(bw * 0.8).toFixed(1)}" height="${bh.toFixed(1)}" fill="#2f6fd6"><title>#${f.index} ${h(f.file)}: G ${fmt(f.g, 3)}</title></rect>`;
    })
    .join('');
  const ticks = t.frames
    .filter((_, k) => n <= 20 || k % Math.ceil(n / 20) === 0)
    .map((f) => `<text x="${(pad.l + t.frames.indexOf(f) * bw + bw / 2).toFixed(1)}" y="${H - 10}" font-size="10" text-anchor="middle">${f.index}</text>`)
    .join('');
  return `<svg class="tiled-g" role="img" aria-label="Global weight G per frame" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}"><text x="${pad.l - 4}" y="${H - pad.b}" font-size="10" text-anchor="end">0</text><text x="${pad.l - 4}" y="${pad.t + 8}" font-size="10" text-anchor="end">${fmt(max, 2)}</text><line x1="${pad.l}" x2="${W - 8}" y1="${H - pad.b}" y2="${H - pad.b}" stroke="#888"/>${bars}${ticks}<text x="${W / 2}" y="${H}" font-size="10" text-anchor="middle">frame</text></svg>`;
}

export function tiledHtml(t: ReportTiled | null | undefined, preview?: string): string {
  if (!t) return '';
  const nLo = Math.min(...t.n_eff.filter(Number.isFinite));
  const nHi = Math.max(...t.n_eff.filter(Number.isFinite));
  const grid = gridSvg(t, t.n_eff, { width: 640, ...(preview ? { preview } : {}), label: 'Tile grid over the stack, tinted by the effective frame count N_eff', ...tileScale(t.n_eff), showValues: true, invert: true });
  const lScale = tileScale(t.local.flatMap((f) => f.l));
  const local = t.local
    .map((f) => `<figure>${gridSvg(t, f.l, { width: 300, label: `Local weight L per tile, frame ${f.index}`, ...lScale, showValues: false })}<figcaption>#${f.index} ${h(f.file)} · L ${fmt(Math.min(...f.l), 2)}–${fmt(Math.max(...f.l), 2)}</figcaption></figure>`)
    .join('');
  const ratio = t.fwhm_vs_global ?? null;
  const rFin = (ratio ?? []).filter((x): x is number => x !== null && Number.isFinite(x));
  // Symmetric about 1, at least ±5 %: sharper than the global-weighted stack cool, softer warm.
  const rSpan = Math.max(0.05, ...rFin.map((x) => Math.abs(x - 1)));
  const rMed = rFin.length ? [...rFin].sort((a, b) => a - b)[rFin.length >> 1]! : NaN;
  const vsGlobal = ratio && rFin.length
    ? `<figure>${gridSvg(t, ratio, { width: 640, label: 'FWHM of this stack over a global-weighted stack, per tile', lo: 1 - rSpan, hi: 1 + rSpan, showValues: true, digits: 2, palette: 'diverging' })}<figcaption>FWHM of this stack over a stack with the global weights G only, per tile (expected from the frames' star FWHM in the tile; below 1, blue: sharper; grey: the same; above 1, red: softer); median ${fmt(rMed, 3)}, ${fmt(Math.min(...rFin), 3)}–${fmt(Math.max(...rFin), 3)}</figcaption></figure>`
    : '';
  const v = t.validation;
  const checks = v
    ? `<table><tr><th>check</th><th>value</th><th>result</th></tr>` +
      `<tr><td>FWHM improvement over the frames' seeing</td><td>${fmt(v.fwhm_improvement_percent, 1)} %</td><td>${v.fwhm_pass ? 'pass' : 'fail'}</td></tr>` +
      `<tr><td>seam score at tile boundaries</td><td>${fmt(v.seam_score, 3)}</td><td>${v.seam_pass ? 'pass' : 'fail'}</td></tr></table>`
    : '';
  return `<h2>Tiles and local weights</h2>
<p>Weighting <code>${h(t.mode)}</code>: ${h(t.reason)}. ${t.tile.origins_x.length * t.tile.origins_y.length} tiles of ${t.tile.size_x}×${t.tile.size_y} px; N_eff per tile ${fmt(nLo, 1)}–${fmt(nHi, 1)} of ${t.frames.length} frames (warm: few frames carry the tile, cool: many share it).</p>
<div class="tiled-figures"><figure>${grid}<figcaption>tile grid over the stack; number = effective frame count N_eff</figcaption></figure>
<figure>${gBars(t)}<figcaption>global weight G per frame (its transparency, noise and seeing; global_metrics.json says how)</figcaption></figure></div>
${vsGlobal ? `<h3>Sharpness against global weights</h3><div class="tiled-figures">${vsGlobal}</div>` : ''}
${local ? `<h3>Local weight L for the frames it changes most across the field</h3><div class="tiled-figures">${local}</div>` : ''}
${checks}`;
}

export const TILED_STYLE = `.tiled-figures{display:flex;flex-wrap:wrap;gap:12px;align-items:flex-start}.tiled-figures figure{margin:0}.tiled-grid{background:#222}`;
