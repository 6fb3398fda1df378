// Import of Raw Stack parameters from a loaded tiled-workflow configuration (seed "Import from
// a loaded tiled-workflow YAML"): exactly the table's rows, nothing else. A pure function:
// it returns the new parameters plus what was mapped and what was ignored (unknown keys,
// values outside the allowed set, or values the Raw Stack schema rejects), so the UI can say so.

import { getPath, isPlainObject, leafPaths, mergeLayers, setPath } from './merge.js';
import { issuesOf, RawStackConfigSchema, type RawStackConfig } from './rawstack.js';

export interface ImportResult {
  config: RawStackConfig;
  mapped: { from: string; to: string }[];
  ignored: { path: string; reason: string }[];
}

interface Row {
  from: string;
  to: string;
  /** Values accepted for this row (others are ignored). */
  allowed?: readonly unknown[];
  /** Converts the source value into the target value. */
  convert?: (v: unknown) => unknown;
}

const SCALAR_ROWS: Row[] = [
  { from: 'runtime_limits.parallel_workers', to: 'runtime_limits.parallel_workers' },
  { from: 'runtime_limits.memory_budget', to: 'runtime_limits.memory_budget' },
  { from: 'normalization.mode', to: 'stacking.normalization', allowed: ['background', 'median', 'addscale', 'none'] },
  { from: 'stacking.weighting', to: 'stacking.weighting', allowed: ['quality', 'uniform'] },
  { from: 'stacking.cosmetic_correction', to: 'stacking.cosmetic_correction' },
  { from: 'stacking.cosmetic_correction_sigma', to: 'stacking.cosmetic_correction_sigma' },
  { from: 'stacking.per_frame_cosmetic_correction', to: 'stacking.per_frame_cosmetic_correction' },
  { from: 'stacking.per_frame_cosmetic_correction_sigma', to: 'stacking.per_frame_cosmetic_correction_sigma' },
  { from: 'stacking.sigma_clip.sigma_low', to: 'rejection.low' },
  { from: 'stacking.sigma_clip.sigma_high', to: 'rejection.high' },
  { from: 'stacking.sigma_clip.max_iters', to: 'rejection.max_iters' },
  { from: 'stacking.sigma_clip.min_fraction', to: 'rejection.min_fraction' },
  { from: 'stacking.rejection_bounds', to: 'rejection.bounds' },
  { from: 'stacking.seeing_tolerance', to: 'rejection.seeing_tolerance' },
  { from: 'stacking.local_normalization', to: 'stacking.local_normalization' },
  { from: 'stacking.local_normalization_cells', to: 'stacking.local_normalization_cells' },
  { from: 'stacking.local_normalization_scale', to: 'stacking.local_normalization_scale' },
  { from: 'astrometry.enabled', to: 'postprocess.astrometry' },
  { from: 'bge.method', to: 'postprocess.bge', allowed: ['none', 'classic', 'autobge'], convert: (v) => v !== 'none' },
  { from: 'pcc.enabled', to: 'postprocess.pcc' },
  { from: 'hypermetric_stretch.enabled', to: 'postprocess.hypermetric_stretch' },
];

/** Blocks copied key by key (`astrometry.*` → `astrometry.*`, ...). */
const BLOCKS = ['astrometry', 'bge', 'tile', 'pcc', 'hypermetric_stretch'] as const;

export function importFromTiled(tiled: unknown, base: RawStackConfig): ImportResult {
  const mapped: ImportResult['mapped'] = [];
  const ignored: ImportResult['ignored'] = [];
  const patch: Record<string, unknown> = {};
  if (!isPlainObject(tiled)) return { config: base, mapped, ignored: [{ path: '', reason: 'not a mapping' }] };

  for (const row of SCALAR_ROWS) {
    const value = getPath(tiled, row.from);
    if (value === undefined) continue;
    if (row.allowed && !row.allowed.includes(value)) {
      ignored.push({ path: row.from, reason: `value ${JSON.stringify(value)} is not one of ${row.allowed.join(', ')}` });
      continue;
    }
    setPath(patch, row.to, row.convert ? row.convert(value) : value);
    mapped.push({ from: row.from, to: row.to });
  }
  const blockShape = RawStackConfigSchema.shape;
  for (const block of BLOCKS) {
    const source = getPath(tiled, block);
    if (source === undefined) continue;
    if (!isPlainObject(source)) {
      ignored.push({ path: block, reason: 'not a mapping' });
      continue;
    }
    const known = new Set(Object.keys(blockShape[block].unwrap().shape));
    for (const leaf of leafPaths(source)) {
      const key = leaf.split('.')[0]!;
      const from = `${block}.${leaf}`;
      if (!known.has(key) || leaf.includes('.')) {
        ignored.push({ path: from, reason: 'not a Raw Stack parameter' });
        continue;
      }
      setPath(patch, from, getPath(source, leaf));
      mapped.push({ from, to: from });
    }
  }
  // Values the schema rejects are dropped one by one (with the schema's message), never half-applied.
  let candidate = mergeLayers(base, patch);
  for (let attempt = 0; attempt < 200; attempt++) {
    const r = RawStackConfigSchema.safeParse(candidate);
    if (r.success) {
      const bad = new Set(ignored.map((i) => i.path));
      return { config: r.data, mapped: mapped.filter((m) => !bad.has(m.from)), ignored };
    }
    for (const issue of issuesOf(r.error)) {
      const row = mapped.find((m) => m.to === issue.path || issue.path.startsWith(`${m.to}.`));
      if (!row) throw new Error(`import produced an invalid base configuration at ${issue.path}: ${issue.message}`);
      ignored.push({ path: row.from, reason: issue.message });
      setPath(patch, row.to, getPath(base, row.to));
    }
    candidate = mergeLayers(base, patch);
  }
  throw new Error('import did not converge');
}
