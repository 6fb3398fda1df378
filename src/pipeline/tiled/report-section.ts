// The tiled run's report section (report/tiled-html.ts draws it): the tile grid, N_eff per tile
// from the weight table, G per frame, L per tile for the frames whose L varies most across the
// field (at most LOCAL_SHOWN), the validation checks STACKING recorded, and per tile the FWHM
// expected against a global-weighted stack (fwhmVsGlobal). Small tables only.

import type { ReportTiled } from '../../report/model.js';
import type { TiledState } from './state.js';
import { mostVariedFrames } from '../../shared/tile-grid-svg.js';

const r4 = (v: number): number => (Number.isFinite(v) ? Number(v.toPrecision(4)) : NaN);

/**
 * Per tile, the stack's FWHM over a G-only stack's, expected from the frames' tile FWHMs
 * (LOCAL_METRICS): a stack's FWHM is, to first order, the weighted mean of its frames' FWHM, so
 * the ratio is Σ w·F / Σ g·F with the table's weights w and the global weights g, each
 * normalised over the frames with a star measurement in the tile. No second stack is needed:
 * the tables are small and already in the state. Null where no frame has a measurement.
 */
export function fwhmVsGlobal(table: Float32Array, tableFrames: readonly number[], measures: readonly (readonly { fwhm: number }[])[], measureFrames: readonly number[], g: ReadonlyMap<number, number>, tiles: number): (number | null)[] {
  const mRow = new Map(measureFrames.map((idx, k) => [idx, k]));
  const out: (number | null)[] = [];
  for (let t = 0; t < tiles; t++) {
    let sw = 0;
    let swf = 0;
    let sg = 0;
    let sgf = 0;
    tableFrames.forEach((idx, k) => {
      const row = mRow.get(idx);
      const f = row === undefined ? NaN : measures[row]![t]!.fwhm;
      const gi = g.get(idx) ?? NaN;
      const w = table[k * tiles + t]!;
      if (!(Number.isFinite(f) && f > 0 && Number.isFinite(w) && Number.isFinite(gi))) return;
      sw += w;
      swf += w * f;
      sg += gi;
      sgf += gi * f;
    });
    out.push(sw > 0 && sg > 0 ? r4(swf / sw / (sgf / sg)) : null);
  }
  return out;
}

export function tiledReportSection(s: TiledState): ReportTiled | null {
  const g = s.tiled.grid;
  const t = s.tiled.table;
  if (!g || !t) return null;
  const tiles = g.originsX.length * g.originsY.length;
  const nEff: number[] = [];
  for (let k = 0; k < tiles; k++) {
    let sum = 0;
    let sq = 0;
    for (let f = 0; f < t.frames.length; f++) {
      const w = t.table[f * tiles + k]!;
      if (Number.isFinite(w)) (sum += w), (sq += w * w);
    }
    nEff.push(r4(sq > 0 ? (sum * sum) / sq : 0));
  }
  const name = (index: number): string => s.frames[index]?.name ?? String(index);
  const frames = t.frames.map((index) => ({ index, file: name(index), g: r4(s.tiled.global.get(index)?.g ?? NaN) }));
  const local: ReportTiled['local'] = [];
  const loc = s.tiled.local;
  if (loc?.l) {
    const rows = loc.frames.map((index, row) => ({ index, l: Array.from(loc.l!.subarray(row * tiles, (row + 1) * tiles)) }));
    for (const e of mostVariedFrames(rows)) local.push({ index: e.index, file: name(e.index), l: e.l.map(r4) });
  }
  const st = s.summaries.STACKING ?? {};
  const fwhm = typeof st.fwhm_improvement_percent === 'number' ? st.fwhm_improvement_percent : null;
  const seam = typeof st.seam_score === 'number' ? st.seam_score : null;
  const v = s.config.tiled.validation;
  const gOf = new Map([...s.tiled.global].map(([i, e]) => [i, e.g] as const));
  const vsGlobal = loc?.l && loc.measures.length === loc.frames.length ? fwhmVsGlobal(t.table, t.frames, loc.measures, loc.frames, gOf, tiles) : null;
  return {
    image: { width: g.imageWidth, height: g.imageHeight },
    tile: { size_x: g.sizeX, size_y: g.sizeY, origins_x: g.originsX, origins_y: g.originsY, types: loc?.types ? [...loc.types] : null },
    mode: t.mode,
    reason: t.reason,
    n_eff: nEff,
    frames,
    local,
    fwhm_vs_global: vsGlobal,
    validation: 'validation' in st ? { fwhm_improvement_percent: fwhm, fwhm_pass: fwhm !== null && fwhm >= v.min_fwhm_improvement_percent, seam_score: seam, seam_pass: !v.require_no_tile_pattern || !(seam !== null && seam > v.max_seam_score) } : null,
  };
}
