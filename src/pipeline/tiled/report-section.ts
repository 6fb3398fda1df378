// The tiled run's report section (report/tiled-html.ts draws it): the tile grid, N_eff per tile
// from the weight table, G per frame, L per tile for the frames whose L varies most across the
// field (at most LOCAL_SHOWN), and the validation checks STACKING recorded. Small tables only.

import type { ReportTiled } from '../../report/model.js';
import type { TiledState } from './state.js';

const LOCAL_SHOWN = 4;
const r4 = (v: number): number => (Number.isFinite(v) ? Number(v.toPrecision(4)) : NaN);

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
    const spread = loc.frames.map((index, row) => {
      const l = Array.from(loc.l!.subarray(row * tiles, (row + 1) * tiles));
      const fin = l.filter(Number.isFinite);
      return { index, l, spread: fin.length ? Math.max(...fin) / Math.max(1e-9, Math.min(...fin)) : 0 };
    });
    spread.sort((a, b) => b.spread - a.spread || a.index - b.index);
    for (const e of spread.slice(0, LOCAL_SHOWN)) local.push({ index: e.index, file: name(e.index), l: e.l.map(r4) });
  }
  const st = s.summaries.STACKING ?? {};
  const fwhm = typeof st.fwhm_improvement_percent === 'number' ? st.fwhm_improvement_percent : null;
  const seam = typeof st.seam_score === 'number' ? st.seam_score : null;
  const v = s.config.tiled.validation;
  return {
    image: { width: g.imageWidth, height: g.imageHeight },
    tile: { size_x: g.sizeX, size_y: g.sizeY, origins_x: g.originsX, origins_y: g.originsY, types: loc?.types ? [...loc.types] : null },
    mode: t.mode,
    reason: t.reason,
    n_eff: nEff,
    frames,
    local,
    validation: 'validation' in st ? { fwhm_improvement_percent: fwhm, fwhm_pass: fwhm !== null && fwhm >= v.min_fwhm_improvement_percent, seam_score: seam, seam_pass: !v.require_no_tile_pattern || !(seam !== null && seam > v.max_seam_score) } : null,
  };
}
