// What each tiled phase records for resume (docs/tiled-workflow.md "Records"): the tiled keys it
// read with a hash of their values, and its inputs' identities (the previous phase's record hash,
// which chains every earlier phase's config and inputs, and a hash of the frames it saw).
// tiledPhase() wraps a phase so the record is made whatever the outcome, and written with all
// earlier ones to artifacts/phase_records.json, after the phase's resume checkpoint
// (checkpoint.ts), which the record names with its SHA-256. Also the JSON artifact writer the phases share.

import { createHash } from 'node:crypto';
import { getPath } from '../../config/merge.js';
import { artifactPath } from '../../shared/run-layout.js';
import { addArtifact } from '../artifacts.js';
import { writeJsonAtomic } from '../atomic.js';
import type { PhaseContext, PhaseOutcome } from '../phase.js';
import type { RawStackPhase } from '../rawstack/reasons.js';
import { inRunFolder } from '../run-folder.js';
import type { TiledPhase } from './reasons.js';
import type { PhaseRecord, TiledState } from './state.js';
import { writeCheckpoint } from './checkpoint.js';

/** SHA-256 of a value's JSON: the config, frames and record hashes of the phase records (resume.ts checks record_hash with it). */
/** A measurement as the tiled artifacts record it: 5 significant digits, null when not finite. */
export const round5 = (v: number): number | null => (Number.isFinite(v) ? Number(v.toPrecision(5)) : null);

export const sha = (v: unknown) => createHash('sha256').update(JSON.stringify(v ?? null)).digest('hex');

/** Writes `artifacts/<name>` as JSON and registers it; returns its path relative to the run folder. */
export async function writeArtifact(state: TiledState, phase: string, name: string, body: unknown): Promise<string> {
  const rel = artifactPath(state.folder.layout, name);
  await writeJsonAtomic(inRunFolder(state.folder, rel), body);
  addArtifact(state, name.replace(/\.json$/, ''), phase, rel);
  return rel;
}

export function recordPhase(state: TiledState, phase: string, status: string, keys: readonly string[], checkpoint: PhaseRecord['checkpoint'] = null): PhaseRecord {
  const names = Object.keys(state.tiled.records);
  const previous = names.length ? state.tiled.records[names[names.length - 1]!]!.record_hash : null;
  const frames = state.frames.filter((f) => f.status === 'included');
  const body = {
    status,
    config_keys: [...keys],
    config_hash: sha(keys.map((k) => [k, getPath(state.config.tiled, k) ?? null])),
    // A frame's identity: its file, size in bytes, DATE-OBS and SHA-256 when the scan took one (input.checksums), and whether it was calibrated.
    inputs: { previous, frames: frames.length, frames_hash: sha(frames.map((f) => [f.index, f.file, f.info?.bytes ?? null, f.info?.dateObs ?? null, f.info?.sha256 ?? null, f.calibratedFile !== null])) },
    checkpoint,
  };
  const record = { ...body, record_hash: sha(body) };
  state.tiled.records[phase] = record;
  return record;
}

/** A Raw Stack phase on the tiled state: the state is a superset of Raw Stack's, its reasons a subset of the tiled ones. */
export const fromRawStack = (p: RawStackPhase): TiledPhase => p;

/** `inner` under `name`, recording the tiled keys `keys` it reads whatever its outcome. */
export function tiledPhase(name: string, keys: readonly string[], p: TiledPhase): TiledPhase {
  return {
    name,
    optional: p.optional,
    ...(p.memory ? { memory: (ctx: PhaseContext<TiledState>) => p.memory!(ctx) } : {}),
    ...(p.prepare ? { prepare: (ctx: PhaseContext<TiledState>) => p.prepare!(ctx) } : {}),
    run: (ctx) => p.run(ctx),
    async finalize(ctx, outcome: PhaseOutcome) {
      try {
        if (p.finalize) await p.finalize(ctx, outcome);
      } finally {
        // Later phases can build on an ok or skipped phase, and on an optional phase's error
        // (the run goes on after it); not on a cancelled or failed core phase.
        const handsOn = outcome.status !== 'error' || (p.optional && outcome.reason !== 'cancelled');
        let checkpoint: PhaseRecord['checkpoint'] = null;
        if (handsOn) {
          checkpoint = await writeCheckpoint(ctx.state, name, new Map([...ctx.outcomes, [name, outcome]])).catch((e: unknown) => {
            ctx.warn('checkpoint_failed', `the resume checkpoint of ${name} could not be written: ${(e as Error).message}`);
            return null;
          });
        }
        recordPhase(ctx.state, name, outcome.status, keys, checkpoint);
        await writeArtifact(ctx.state, name, 'phase_records.json', ctx.state.tiled.records).catch(() => undefined);
      }
    },
  };
}
