// Shared by the CALIBRATION and CFA_CHANNEL_PREP tests: runs INPUT_SCAN, the phases under test,
// a probe that captures the run state, and REPORT on a generated fixture set, and reads back
// events and images.

import { readFile } from 'node:fs/promises';
import { parseRawStackConfig, type RawStackConfig, type RawStackConfigInput } from '../../src/config/rawstack.js';
import type { DevicePreference } from '../../src/gpu/device.js';
import { readFitsImage, type FitsImage } from '../../src/fits/index.js';
import type { EventLine } from '../../src/pipeline/events.js';
import { ok, type Phase } from '../../src/pipeline/phase.js';
import { calibrationPhase } from '../../src/pipeline/rawstack/phases/calibration.js';
import { cfaChannelPrepPhase } from '../../src/pipeline/rawstack/phases/cfa-channel-prep.js';
import { inputScanPhase } from '../../src/pipeline/rawstack/phases/input-scan.js';
import { reportPhase } from '../../src/pipeline/rawstack/phases/report.js';
import { runRawStack, type RawStackRunResult } from '../../src/pipeline/rawstack/run.js';
import type { RawStackState } from '../../src/pipeline/rawstack/state.js';

export type PhaseEnd = Extract<EventLine, { type: 'phase_end' }>;

export interface PhaseRun {
  result: RawStackRunResult;
  lines: EventLine[];
  /** The run state as the probe phase after the phases under test saw it (null if it did not run). */
  state: RawStackState | null;
  end(phase: string): PhaseEnd | undefined;
  warnings(code?: string): Extract<EventLine, { type: 'warning' }>[];
  frames(phase: string): Extract<EventLine, { type: 'frame' }>[];
}

export function config(input: RawStackConfigInput): RawStackConfig {
  const r = parseRawStackConfig(input);
  if (!r.ok) throw new Error(`bad test config: ${JSON.stringify(r.issues)}`);
  return r.config;
}

export interface RunOptions {
  runsDir: string;
  /** Phases between INPUT_SCAN and the probe. Default CALIBRATION, CFA_CHANNEL_PREP. */
  phases?: Phase<RawStackState>[];
  device?: DevicePreference;
  signal?: AbortSignal;
  onEvent?: (line: EventLine) => void;
}

export async function runPhasesOn(cfg: RawStackConfig, options: RunOptions): Promise<PhaseRun> {
  let captured: RawStackState | null = null;
  const probe: Phase<RawStackState> = {
    name: 'PROBE',
    optional: false,
    async run(ctx) {
      captured = ctx.state;
      return ok();
    },
  };
  const middle = options.phases ?? [calibrationPhase, cfaChannelPrepPhase];
  const result = await runRawStack(cfg, {
    runsDir: options.runsDir,
    device: options.device ?? 'cpu',
    phases: [inputScanPhase, ...middle, probe, reportPhase],
    ...(options.signal ? { signal: options.signal } : {}),
    ...(options.onEvent ? { onEvent: options.onEvent } : {}),
  });
  const text = await readFile(`${result.runDir}/artifacts/preprocess/events.jsonl`, 'utf8');
  const lines = text.trim().split('\n').map((l) => JSON.parse(l) as EventLine);
  return {
    result,
    lines,
    state: captured,
    end: (phase) => lines.find((l): l is PhaseEnd => l.type === 'phase_end' && l.phase === phase),
    warnings: (code) => lines.filter((l): l is Extract<EventLine, { type: 'warning' }> => l.type === 'warning' && (code === undefined || l.code === code)),
    frames: (phase) => lines.filter((l): l is Extract<EventLine, { type: 'frame' }> => l.type === 'frame' && l.phase === phase),
  };
}

export const image = (file: string): Promise<FitsImage> => readFitsImage(file);

export function median(values: ArrayLike<number>): number {
  const v = Array.from(values).filter(Number.isFinite).sort((a, b) => a - b);
  const n = v.length;
  return n % 2 ? v[n >> 1]! : (v[n / 2 - 1]! + v[n / 2]!) / 2;
}

/** Values of one Bayer phase (y & 1) * 2 + (x & 1) (or every pixel with phase = -1). */
export function sites(data: ArrayLike<number>, width: number, height: number, phase: number): number[] {
  const out: number[] = [];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      if (phase < 0 || (((y & 1) << 1) | (x & 1)) === phase) out.push(data[y * width + x]!);
    }
  }
  return out;
}

/** Median of a box of `half` pixels around (cx, cy). */
export function boxMedian(data: ArrayLike<number>, width: number, cx: number, cy: number, half: number): number {
  const v: number[] = [];
  for (let y = cy - half; y <= cy + half; y++) for (let x = cx - half; x <= cx + half; x++) v.push(data[y * width + x]!);
  return median(v);
}
