// Sessions of the stacking-quality bench: a generated real-sky dataset (fixtures/generator
// realSkyOptions: gradients that change from frame to frame, seeing varying over the field and
// the night, satellites, cosmic rays), Raw Stack run through FRAME_FILTERING (calibrated,
// registered, normalised, weighted frames; the state STACKING would read is kept in memory),
// and STACKING replays of that state with other rejection settings (today's engine as the
// "before" reference). Uses only the pipeline's public entry (runRawStack, standardPhases,
// stackingPhase); nothing under src/pipeline is changed.

import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { generateDataset, realSkyOptions, type Truth } from '../../fixtures/generator/index.js';
import { readFile } from 'node:fs/promises';
import { parseRawStackConfig } from '../../src/config/rawstack.js';
import { readFitsImage } from '../../src/fits/index.js';
import { ok, type Phase } from '../../src/pipeline/phase.js';
import { stackingPhase } from '../../src/pipeline/rawstack/phases/stacking.js';
import { runRawStack, standardPhases } from '../../src/pipeline/rawstack/run.js';
import type { FrameRecord, RawStackState } from '../../src/pipeline/rawstack/state.js';

export interface SessionSpec {
  kind: 'mono' | 'osc';
  frames: number;
  width: number;
  height: number;
  seed: number;
}

/** Bump PRESET when realSkyOptions changes, so cached sessions are regenerated. */
const PRESET = 2;
export const sessionName = (s: SessionSpec) => `realsky${PRESET}-${s.kind}${s.frames}-${s.width}x${s.height}-s${s.seed}`;

/** The dataset's folder under `root`, generated on first use. */
export async function ensureSession(root: string, spec: SessionSpec, log: (s: string) => void): Promise<{ dir: string; truth: Truth }> {
  const dir = join(root, sessionName(spec));
  const have = await access(join(dir, 'truth.json')).then(
    () => true,
    () => false,
  );
  if (!have) {
    log(`[quality] generating ${sessionName(spec)} in ${dir}`);
    await generateDataset({
      out: dir,
      kind: spec.kind,
      frames: spec.frames,
      width: spec.width,
      height: spec.height,
      seed: spec.seed,
      ...realSkyOptions(spec),
    });
  }
  return { dir, truth: JSON.parse(await readFile(join(dir, 'truth.json'), 'utf8')) as Truth };
}

/** What STACKING reads from the state (bench/stacking-phase.ts keeps the same keys). */
const KEYS = ['frames', 'colorMode', 'bayer', 'width', 'height', 'masters', 'referenceIndex', 'referenceStrategy', 'queue'] as const;
export type Captured = Pick<RawStackState, (typeof KEYS)[number]>;

export function sessionConfig(dir: string, runsDir: string, extra: Record<string, unknown> = {}) {
  const parsed = parseRawStackConfig({
    lights_dir: join(dir, 'lights'),
    bias_dir: join(dir, 'bias'),
    darks_dir: join(dir, 'darks'),
    flats_dir: join(dir, 'flats'),
    runs_dir: runsDir,
    runtime_limits: { memory_budget: 512 },
    postprocess: { astrometry: false, pcc: false, bge: false, hypermetric_stretch: false },
    ...extra,
  });
  if (!parsed.ok) throw new Error(`bench config: ${JSON.stringify(parsed.issues)}`);
  return parsed.config;
}

/** Raw Stack through FRAME_FILTERING; the state STACKING would see. */
export async function capture(dir: string, runsDir: string): Promise<{ state: Captured; runDir: string; ms: number }> {
  let saved: Captured | null = null;
  const grab: Phase<RawStackState> = {
    name: 'STACKING',
    optional: false,
    async run(ctx) {
      saved = structuredClone(Object.fromEntries(KEYS.map((k) => [k, ctx.state[k]]))) as Captured;
      return ok({});
    },
  };
  const phases = standardPhases();
  const upTo = phases.findIndex((p) => p.name === 'STACKING');
  const t = performance.now();
  const r = await runRawStack(sessionConfig(dir, runsDir), { runsDir, phases: [...phases.slice(0, upTo), grab], device: 'cpu' });
  if (!saved) throw new Error(`Raw Stack stopped before STACKING: ${r.status} ${JSON.stringify(r.phases)}`);
  return { state: saved, runDir: r.runDir, ms: performance.now() - t };
}

/** STACKING alone on a captured state with config overrides; the stack's planes and wall ms. */
export async function replayStacking(dir: string, runsDir: string, state: Captured, extra: Record<string, unknown>): Promise<{ planes: Float32Array[]; ms: number }> {
  const restore: Phase<RawStackState> = {
    name: 'FRAME_FILTERING',
    optional: false,
    async run(ctx) {
      Object.assign(ctx.state, structuredClone(state));
      return ok({});
    },
  };
  let t0 = 0;
  let ms = 0;
  const r = await runRawStack(sessionConfig(dir, runsDir, extra), {
    runsDir,
    phases: [restore, stackingPhase],
    device: 'cpu',
    onEvent: (line) => {
      if (line.type === 'phase_start' && line.phase === 'STACKING') t0 = performance.now();
      else if (line.type === 'phase_end' && line.phase === 'STACKING') ms = performance.now() - t0;
    },
  });
  const out = r.outputs.stacked_linear ?? r.outputs.stacked_rgb;
  if (!out) throw new Error(`STACKING replay produced no stack: ${r.status}`);
  const img = await readFitsImage(out);
  const plane = img.width * img.height;
  return { planes: Array.from({ length: img.planes }, (_, p) => img.data.subarray(p * plane, (p + 1) * plane)), ms };
}

/** Included frames in STACKING's order (the state's order) with their truth frame. */
export function includedFrames(state: Captured, truth: Truth): { record: FrameRecord; truthIndex: number }[] {
  const byFile = new Map(truth.frames.map((f, i) => [f.file.split('/').pop()!, i]));
  return state.frames
    .filter((f) => f.status === 'included')
    .map((record) => {
      const t = byFile.get(record.name) ?? byFile.get(record.file.split('/').pop()!);
      if (t === undefined) throw new Error(`frame ${record.name} not in the truth`);
      return { record, truthIndex: t };
    });
}
