// The resume checkpoint of a tiled phase (docs/tiled-workflow.md "Resume"): after a phase ends in
// a way later phases can build on (ok, skipped, or an optional phase's error), the state every
// later phase reads — frames with their metadata, registration, metrics and normalisation, the
// reference, masters, outputs, summaries, the artifact list, the tiled tables (Maps and typed
// arrays bit for bit, resume/codec.ts), STATE_CLUSTERING's clusters — and the phases' outcomes
// are written to `artifacts/resume/<PHASE>.json.gz` (gzip'd JSON, atomically), with the identities of the files
// that state points to (calibrated frames, masters, artifacts: resume/file-identity.ts). The
// phase record names the checkpoint and its SHA-256. The run's identity, folder, device, events
// and configuration are not in it: a resume brings its own.
// The frames' star lists (most of a checkpoint's bytes) are in the checkpoints up to
// COMMON_OVERLAP only: LOCAL_METRICS, their last reader, drops them from the state.
// Paths into the run folder (calibrated frames, masters, outputs) are stored relative to it and
// read back under the folder the checkpoint is read from (codec's PathRoot): a run folder that
// was moved or copied resumes on its own files.

import { createHash } from 'node:crypto';
import { mkdir, readFile, stat } from 'node:fs/promises';
import { dirname, isAbsolute } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { artifactPath } from '../../shared/run-layout.js';
import { writeFileAtomic } from '../atomic.js';
import type { PhaseOutcome } from '../phase.js';
import { inRunFolder, runRelative, type RunFolder } from '../run-folder.js';
import { decodeState, encodeState } from '../resume/codec.js';
import { fileIdentity, type FileIdentity } from '../resume/file-identity.js';
import type { Clusters } from './clustering.js';
import { clustersOf, setClusters } from './cluster-handoff.js';
import type { TiledData, TiledState } from './state.js';

export const CHECKPOINT_VERSION = 1;
/** The checkpoints' folder name inside the artifacts folder. */
export const CHECKPOINT_DIR = 'resume';

export const checkpointPath = (folder: Pick<RunFolder, 'layout'>, phase: string): string => artifactPath(folder.layout, `${CHECKPOINT_DIR}/${phase}.json.gz`);

/** What a checkpoint file holds. */
export interface Checkpoint {
  version: number;
  phase: string;
  state: Record<string, unknown>;
  outcomes: [string, PhaseOutcome][];
  clusters: Clusters | null;
  files: FileIdentity[];
  /** The included lights (absolute paths): a resume checks they are still there and unchanged. */
  inputs: FileIdentity[];
}

/** The base fields a resume brings itself (never checkpointed). */
const BASE = new Set(['config', 'folder', 'runId', 'jobId', 'events', 'device', 'gpu']);
/** Artifacts that are rewritten after the phase that registered them, so no identity holds. */
const REWRITTEN_TYPES = new Set(['config', 'events', 'phase_records']);

/** The files the state points to that later phases read, relative to the run folder where inside it. */
export function stateFiles(s: TiledState): string[] {
  const out = new Set<string>();
  for (const a of s.artifacts) if (!REWRITTEN_TYPES.has(a.type)) out.add(a.path);
  for (const f of s.frames) if (f.status === 'included' && f.calibratedFile) out.add(runRelative(s.folder, f.calibratedFile));
  for (const m of Object.values(s.masters)) if (m) out.add(runRelative(s.folder, m));
  for (const o of Object.values(s.outputs)) if (o) out.add(runRelative(s.folder, o));
  return [...out].sort();
}

/** Absolute path of a stateFiles() entry. */
const filePath = (folder: RunFolder, path: string): string => (isAbsolute(path) ? path : inRunFolder(folder, path));

// Identities of files already hashed in this process, by path, size and mtime (a calibrated
// frame is hashed once per run, not once per phase).
const identityCache = new Map<string, FileIdentity>();

async function identityOf(folder: RunFolder, path: string): Promise<FileIdentity | null> {
  const abs = filePath(folder, path);
  const st = await stat(abs).catch(() => null);
  if (!st?.isFile()) return null;
  const key = `${abs}\0${st.size}\0${st.mtimeMs}`;
  const hit = identityCache.get(key);
  if (hit) return { ...hit, path };
  const id = await fileIdentity(abs, path);
  if (id) identityCache.set(key, id);
  return id;
}

/** Writes the checkpoint of `phase` with the outcomes so far (its own included); returns its path and SHA-256. */
export async function writeCheckpoint(s: TiledState, phase: string, outcomes: ReadonlyMap<string, PhaseOutcome>): Promise<{ path: string; sha256: string }> {
  const state: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(s)) if (!BASE.has(k)) state[k] = v;
  const { records: _records, ...tiled } = s.tiled;
  state.tiled = tiled;
  const files: FileIdentity[] = [];
  for (const path of stateFiles(s)) {
    const id = await identityOf(s.folder, path);
    if (id) files.push(id);
  }
  const inputs: FileIdentity[] = [];
  for (const f of s.frames) {
    if (f.status !== 'included') continue;
    const id = await identityOf(s.folder, f.file);
    if (id) inputs.push(id);
  }
  const body: Checkpoint = { version: CHECKPOINT_VERSION, phase, state, outcomes: [...outcomes], clusters: clustersOf(s), files, inputs };
  // The frames' star lists make most of it; gzip takes it to about 40 %. Level 1: every phase
  // writes one (~1.8 MB of JSON for 20 frames), and level 6 took ~55 ms of the main thread
  // each against ~25 ms, for files only ~7 % smaller (bench/RESULTS.md, 2026-11-29).
  const bytes = gzipSync(encodeState(body, { root: s.folder.runDir }), { level: 1 });
  const rel = checkpointPath(s.folder, phase);
  await mkdir(dirname(inRunFolder(s.folder, rel)), { recursive: true });
  await writeFileAtomic(inRunFolder(s.folder, rel), bytes);
  return { path: rel, sha256: sha256(bytes) };
}

export const sha256 = (text: string | Uint8Array): string => createHash('sha256').update(text).digest('hex');

/**
 * The checkpoint in `file` (an absolute path) of the run folder `runDir` (where its run-folder
 * paths resolve) and the SHA-256 of its bytes, or null when it cannot be read or decoded.
 */
export async function readCheckpoint(file: string, runDir: string): Promise<{ checkpoint: Checkpoint; sha256: string } | null> {
  const bytes = await readFile(file).catch(() => null);
  if (bytes === null) return null;
  try {
    const checkpoint = decodeState<Checkpoint>(gunzipSync(bytes).toString('utf8'), { root: runDir });
    if (checkpoint.version !== CHECKPOINT_VERSION || typeof checkpoint.phase !== 'string') return null;
    return { checkpoint, sha256: sha256(bytes) };
  } catch {
    return null;
  }
}

/** Puts a checkpoint's state into a fresh tiled state; `records` are the earlier phases' records. */
export function restoreCheckpoint(s: TiledState, c: Checkpoint, records: TiledData['records']): void {
  const { tiled, ...rest } = c.state as { tiled: Omit<TiledData, 'records'> } & Record<string, unknown>;
  Object.assign(s, rest);
  s.tiled = { ...tiled, records: { ...records } };
  setClusters(s, c.clusters);
}
