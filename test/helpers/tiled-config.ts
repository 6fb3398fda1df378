// A small tiled run's configuration for tests: the lights (and calibration frames when the
// dataset has them) of a generated dataset, postprocess off, few stars per tile and a low
// local_metrics.min_frames so a handful of small frames gets local weights. `extra` replaces
// whole top-level blocks.

import { join } from 'node:path';
import { resolveTiledConfig, type TiledRunConfig } from '../../src/config/tiled-run.js';

export function smallTiledConfig(data: string, runs: string, runName: string, extra: Record<string, unknown> = {}, calibrated = true): TiledRunConfig {
  const r = resolveTiledConfig({
    input: { input_dir: join(data, 'lights') },
    ...(calibrated ? { calibration: { bias_dir: join(data, 'bias'), darks_dir: join(data, 'darks'), flats_dir: join(data, 'flats') } } : {}),
    tile: { star_min_count: 4 },
    local_metrics: { min_frames: 6 },
    astrometry: { enabled: false },
    bge: { method: 'none' },
    pcc: { enabled: false },
    hypermetric_stretch: { enabled: false },
    runtime_limits: { memory_budget: 256, parallel_workers: 2 },
    output: { run_name: runName, runs_dir: runs },
    ...extra,
  });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.config;
}
