// The tile grid and weight maps of a tiled run in the run monitor, drawn as soon as the artifacts
// exist: the grid from tile_grid.json (TILE_GRID), tinted by N_eff per tile once
// tile_reconstruction.json is written, over the stack's preview once REPORT made one, and the
// local weight L per tile (local_metrics.json) for the frames whose L varies most across the
// field. The picture is the report's (src/shared/tile-grid-svg.ts), made into elements here.

import { api, type ArtifactEntry } from './api.js';
import { clear, h } from './dom.js';
import { svgElement } from './frame-plots-view.js';
import { fmtTile, mostVariedFrames, tileGridSvg, tileScale, type TileGridModel } from '../shared/tile-grid-svg.js';

type Grid = { image_width: number; image_height: number; tiles: { x: number; y: number; width: number; height: number }[] };
type Recon = { mode?: string; reason?: string; num_frames?: number; tiles?: { n_eff?: number }[] };
type Local = { tile_types?: (string | null)[]; frames?: { index: number; file: string }[]; tile_metrics?: { local_weight?: number }[][] };

const find = (entries: readonly ArtifactEntry[], name: string) => entries.find((e) => e.path === `artifacts/${name}` || e.path.endsWith(`/${name}`));

async function json<T>(runId: string, e: ArtifactEntry | undefined): Promise<T | null> {
  if (!e) return null;
  const v = await api.view(runId, e.path).catch(() => null);
  return v && v.json && typeof v.json === 'object' ? (v.json as T) : null;
}

const finite = (v: readonly number[]) => v.filter((x) => Number.isFinite(x));

export class TileMapView {
  private shown = '';

  constructor(private readonly box: HTMLElement) {}

  /** Redraws when the artifacts behind the picture changed; hides the section until TILE_GRID wrote its grid. */
  async update(runId: string, entries: readonly ArtifactEntry[]): Promise<void> {
    const gridE = find(entries, 'tile_grid.json');
    const reconE = find(entries, 'tile_reconstruction.json');
    const localE = find(entries, 'local_metrics.json');
    const preview = entries.find((e) => /(^|\/)preview_[^/]+\.png$/i.test(e.path));
    const key = [gridE, reconE, localE, preview].map((e) => (e ? `${e.path}@${e.mtime ?? e.size ?? ''}` : '-')).join('|');
    if (key === this.shown) return;
    this.shown = key;
    const section = this.box.closest('section') as HTMLElement | null;
    if (!gridE) {
      if (section) section.hidden = true;
      return;
    }
    const [grid, recon, local] = await Promise.all([json<Grid>(runId, gridE), json<Recon>(runId, reconE), json<Local>(runId, localE)]);
    // A listed artifact that could not be read (a request failed, a file still being replaced):
    // draw what there is, and read again at the next update.
    if (!grid || (reconE && !recon) || (localE && !local)) this.shown = '';
    if (!grid || !Array.isArray(grid.tiles)) return;
    const model: TileGridModel = {
      image: { width: grid.image_width, height: grid.image_height },
      tiles: grid.tiles.map((t) => ({ x: t.x, y: t.y, w: t.width, h: t.height })),
      types: Array.isArray(local?.tile_types) ? local.tile_types : null,
    };
    const nEff = model.tiles.map((_, k) => Number(recon?.tiles?.[k]?.n_eff ?? NaN));
    const n = finite(nEff);
    clear(this.box);
    const imageHref = preview ? api.rawUrl(runId, preview.path) : undefined;
    const main = tileGridSvg(model, nEff, { width: 560, ...(imageHref ? { imageHref } : {}), label: n.length ? 'Tile grid over the stack, tinted by the effective frame count N_eff' : 'Tile grid', ...tileScale(n), showValues: n.length > 0, invert: true });
    const caption = n.length
      ? `${model.tiles.length} tiles; number = effective frame count N_eff ${fmtTile(Math.min(...n), 1)}–${fmtTile(Math.max(...n), 1)}${recon?.num_frames ? ` of ${recon.num_frames} frames` : ''} (warm: few frames carry the tile, cool: many share it)${recon?.mode ? `; weighting ${recon.mode}` : ''}${imageHref ? '' : '; the stack preview appears after REPORT'}.`
      : `${model.tiles.length} tiles (from tile_grid.json); N_eff per tile appears after TILE_RECONSTRUCTION.`;
    this.box.append(h('figure', { class: 'tile-map', 'data-map': 'n_eff' }, svgElement(main), h('figcaption', {}, caption)));
    // L per tile for the frames it changes most (the report's choice).
    const rows = (local?.tile_metrics ?? []).map((row, f) => ({ index: local?.frames?.[f]?.index ?? f, frame: local?.frames?.[f], l: model.tiles.map((_, k) => Number(row[k]?.local_weight ?? NaN)) }));
    const chosen = mostVariedFrames(rows);
    const lScale = tileScale(chosen.flatMap((r) => r.l));
    for (const r of chosen) {
      const svg = tileGridSvg(model, r.l, { width: 260, label: `Local weight L per tile, frame ${r.frame?.index ?? '?'}`, ...lScale, showValues: false });
      const fin = finite(r.l);
      this.box.append(h('figure', { class: 'tile-map', 'data-map': 'local', 'data-frame': r.frame?.index ?? '' }, svgElement(svg), h('figcaption', {}, `L, #${r.frame?.index ?? '?'} ${r.frame?.file ?? ''} · ${fmtTile(Math.min(...fin))}–${fmtTile(Math.max(...fin))}`)));
    }
    if (section) section.hidden = false;
  }
}
