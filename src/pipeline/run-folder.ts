// Run folders: `<runs_dir>/<run_name>_YYYYMMDD_HHMMSS`, `run` when the name is empty, a
// numeric suffix on collision (created with mkdir, which is atomic, so two runs started in the
// same second never share a folder), and run.json. The layout inside (which folder holds what,
// per pipeline kind) is src/shared/run-layout.ts; RunFolder is that layout made absolute.

import { mkdir } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, sep } from 'node:path';
import { RUN_LAYOUTS, type RunKind, type RunLayout } from '../shared/run-layout.js';
import { writeJsonAtomic } from './atomic.js';

export type { RunKind, RunLayout };

export interface RunRecord {
  run_id: string;
  kind: RunKind;
  created_at: string;
  /** `pending` while the API's job waits in the queue. */
  status: 'pending' | 'running' | 'ok' | 'error' | 'cancelled';
  input: Record<string, unknown>;
  job_id: string | null;
}

export interface RunFolder {
  runId: string;
  runDir: string;
  kind: RunKind;
  /** Paths relative to runDir (artifact entries, events and reports use these). */
  layout: RunLayout;
  outputsDir: string;
  artifactsDir: string;
  eventsFile: string;
  /**
   * The run's scratch space (hidden, so artifact listings skip it): files a phase needs only
   * while the run lasts, such as calibrated frames a run does not keep. The run removes it when
   * it ends, whatever the status.
   */
  scratchDir: string;
}

/** The paths of the run folder `runDir` of a `kind` run (no file system access). */
export function runFolderAt(runDir: string, runId: string, kind: RunKind = 'rawstack'): RunFolder {
  const layout = RUN_LAYOUTS[kind];
  return {
    runId,
    runDir,
    kind,
    layout,
    outputsDir: join(runDir, layout.outputs),
    artifactsDir: join(runDir, layout.artifacts),
    eventsFile: join(runDir, layout.events),
    scratchDir: join(runDir, layout.scratch),
  };
}

/** A path relative to the run folder (a layout path or an artifact entry) made absolute. */
export const inRunFolder = (folder: RunFolder, rel: string): string => join(folder.runDir, ...rel.split('/'));

/**
 * A path inside the run folder as the layout writes it (relative, `/`), else the path as given:
 * what artifacts record, so a moved or copied run folder still describes itself.
 */
export function runRelative(folder: Pick<RunFolder, 'runDir'>, path: string): string {
  if (!isAbsolute(path)) return path;
  const rel = relative(folder.runDir, path);
  return rel === '' || rel.startsWith('..') || isAbsolute(rel) ? path : rel.split(sep).join('/');
}

/** Run names become folder names: keep letters, digits, `-`, `_` and `.`; never a path. */
export function sanitizeRunName(name: string): string {
  const cleaned = name.trim().replace(/[^A-Za-z0-9._-]+/g, '_').replace(/^[._]+/, '').slice(0, 64);
  return cleaned === '' ? 'run' : cleaned;
}

function stamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  // Local time, as the seed says "date and time of creation" and users read folder names.
  return `${d.getFullYear()}${p(d.getMonth() + 1)}${p(d.getDate())}_${p(d.getHours())}${p(d.getMinutes())}${p(d.getSeconds())}`;
}

export async function createRunFolder(runsDir: string, runName: string, now = new Date(), kind: RunKind = 'rawstack'): Promise<RunFolder> {
  await mkdir(runsDir, { recursive: true });
  const base = `${sanitizeRunName(runName)}_${stamp(now)}`;
  for (let n = 0; n < 1000; n++) {
    const runId = n === 0 ? base : `${base}_${n + 1}`;
    const runDir = join(runsDir, runId);
    try {
      await mkdir(runDir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'EEXIST') continue;
      throw e;
    }
    const folder = runFolderAt(runDir, runId, kind);
    await mkdir(folder.outputsDir, { recursive: true });
    await mkdir(folder.artifactsDir, { recursive: true });
    await mkdir(dirname(folder.eventsFile), { recursive: true });
    return folder;
  }
  throw new Error(`could not create a run folder for ${base} in ${runsDir}`);
}

export function writeRunRecord(folder: RunFolder, record: RunRecord): Promise<void> {
  return writeJsonAtomic(inRunFolder(folder, folder.layout.record), record);
}
