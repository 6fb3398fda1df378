// What POST /api/config/suggest's answers mean for a tiled-workflow YAML. The endpoint speaks
// Raw Stack parameter paths; the studio shows every suggestion with the tiled key it sets, or why
// it does not apply: memory and workers are the same keys, Raw Stack's rejection is the tiled
// stacking method and its sigma clip, while Raw Stack's BGE tile size and frames_min have no
// tiled counterpart (the tiled workflow sizes its tiles from the measured seeing itself).

export interface RawSuggestion {
  path: string;
  value: unknown;
  current?: unknown;
  reason: string;
}

export type TiledSuggestion = RawSuggestion & ({ tiledPath: string[]; why?: undefined } | { tiledPath: null; why: string });

const SAME = new Set(['runtime_limits.memory_budget', 'runtime_limits.parallel_workers']);
const MAPPED: Record<string, string> = {
  'rejection.method': 'stacking.method',
  'rejection.low': 'stacking.sigma_clip.sigma_low',
  'rejection.high': 'stacking.sigma_clip.sigma_high',
};
const NOT_TILED: Record<string, string> = {
  'tile.min_size': 'Raw Stack BGE tile size; tiled tiles follow tile.size_factor × the measured seeing',
  frames_min: 'Raw Stack only (the tiled workflow has no frame minimum key)',
};

export function tiledSuggestions(list: readonly RawSuggestion[]): TiledSuggestion[] {
  return list.map((s) => {
    if (SAME.has(s.path)) return { ...s, tiledPath: s.path.split('.') };
    const to = MAPPED[s.path];
    if (to) return { ...s, tiledPath: to.split('.') };
    return { ...s, tiledPath: null, why: NOT_TILED[s.path] ?? 'no tiled-workflow key of this meaning' };
  });
}
