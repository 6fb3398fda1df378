// The paths inside a Raw Stack configuration, confined to the allowed roots (paths.ts) in two
// strengths: `store` (PATCH parameters, and stored parameters at start) requires each path to
// lie inside the roots, existing or not; `start` (a run) requires it to exist as well, with the
// right kind. Either way the value is replaced by its realpath. Solver programs live outside the
// data roots (/usr/bin), so for those only the solvers' own program names are accepted. Stored
// parameters therefore never name anything outside the roots, and /api/system/info, which
// probes the stored solver settings, cannot be asked whether an arbitrary path exists.

import type { RawStackConfig } from '../config/rawstack.js';
import { ApiError } from './errors.js';
import type { PathGuard } from './paths.js';

type FieldKind = 'dir' | 'file' | 'runs' | 'program';

interface PathField {
  path: string;
  kind: FieldKind;
  /** Program names allowed for `program` fields. */
  names?: string[];
}

const FIXED: PathField[] = [
  { path: 'lights_dir', kind: 'dir' },
  { path: 'bias_dir', kind: 'dir' },
  { path: 'darks_dir', kind: 'dir' },
  { path: 'flats_dir', kind: 'dir' },
  { path: 'darkflats_dir', kind: 'dir' },
  { path: 'runs_dir', kind: 'runs' },
  { path: 'calibration.bias_master', kind: 'file' },
  { path: 'calibration.dark_master', kind: 'file' },
  { path: 'calibration.flat_master', kind: 'file' },
  { path: 'calibration.darkflat_master', kind: 'file' },
  { path: 'pcc.catalog_file', kind: 'file' },
  { path: 'astrometry.astrometry_net_bin', kind: 'program', names: ['solve-field'] },
  { path: 'astrometry.astap_bin', kind: 'program', names: ['astap', 'astap_cli'] },
  { path: 'astrometry.astrometry_net_data_dir', kind: 'dir' },
  { path: 'astrometry.astap_data_dir', kind: 'dir' },
];

interface BoundField extends PathField {
  get(): unknown;
  set(value: string): void;
  /** Index of the queue entry the field belongs to. */
  queue?: number;
}

/** Every path field of `config`, bound to its place (queue entries included). */
function fields(config: RawStackConfig): BoundField[] {
  const bound: BoundField[] = FIXED.map((f) => {
    const keys = f.path.split('.');
    const holder = () => keys.slice(0, -1).reduce<Record<string, unknown>>((o, k) => o[k] as Record<string, unknown>, config as unknown as Record<string, unknown>);
    const last = keys[keys.length - 1]!;
    return { ...f, get: () => holder()[last], set: (v: string) => void (holder()[last] = v) };
  });
  config.queue.forEach((q, i) => bound.push({ path: `queue.${i}.input_dir`, kind: 'dir', queue: i, get: () => q.input_dir, set: (v) => void (q.input_dir = v) }));
  return bound;
}

function program(value: string, field: string, names: string[]): string {
  const name = value.split('/').pop() ?? '';
  if (value.includes('\0') || value.split('/').includes('..') || !names.includes(name) || (value.includes('/') && !value.startsWith('/'))) {
    throw new ApiError('PATH_NOT_ALLOWED', `${field}: only ${names.join(' or ')} (a name on PATH or an absolute path to it) is allowed`, { field });
  }
  return value;
}

async function confineOne(guard: PathGuard, f: PathField, value: string, mode: 'store' | 'start'): Promise<string> {
  if (f.kind === 'program') return program(value, f.path, f.names!);
  // runs_dir is created by the run when missing; the other paths must exist to run
  const mustExist = mode === 'start' && f.kind !== 'runs';
  return guard.resolve(value, { field: f.path, mustExist, ...(mustExist ? { kind: f.kind as 'dir' | 'file' } : {}) });
}

/** Confines every path of `config` in place (realpaths); throws the guard's ApiError on the first refusal. */
export async function confineConfigPaths(guard: PathGuard, config: RawStackConfig, mode: 'store' | 'start'): Promise<void> {
  for (const f of fields(config)) {
    const value = f.get();
    if (typeof value !== 'string' || value === '') continue;
    f.set(await confineOne(guard, f, value, mode));
  }
}

/**
 * Stored parameters written under an older rule: every path that no longer passes `store` is
 * reset to its default (a queue entry with such a folder is dropped). Returns one warning each.
 */
export async function dropUnconfinedPaths(guard: PathGuard, config: RawStackConfig): Promise<string[]> {
  const warnings: string[] = [];
  const dropQueue = new Set<number>();
  for (const f of fields(config)) {
    const value = f.get();
    if (typeof value !== 'string' || value === '') continue;
    try {
      f.set(await confineOne(guard, f, value, 'store'));
    } catch (e) {
      if (!(e instanceof ApiError)) throw e;
      warnings.push(`stored ${f.path} ignored: ${e.message}`);
      if (f.queue !== undefined) dropQueue.add(f.queue);
      else f.set('');
    }
  }
  if (dropQueue.size > 0) config.queue = config.queue.filter((_q, i) => !dropQueue.has(i));
  return warnings;
}
