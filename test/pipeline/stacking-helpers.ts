// Helpers for the STACKING tests: a stand-in for the phases between INPUT_SCAN and STACKING that
// fills the state contract from a generated dataset's truth.json (reference frame 0, registration
// matrices frame → reference, weights, frame decisions), a one-call run of
// INPUT_SCAN → truth → STACKING → REPORT, output readers and star-position checks against truth.

import { readFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { generateDataset, invertAffine, type DatasetOptions, type Truth, type TruthFrame } from '../../fixtures/generator/index.js';
import { detectStars } from '../../src/algorithms/stars.js';
import { composeAffine, type Affine } from '../../src/algorithms/affine.js';
import { parseRawStackConfig, type RawStackConfig, type RawStackConfigInput } from '../../src/config/rawstack.js';
import { readFitsImage, type FitsImage } from '../../src/fits/index.js';
import type { DevicePreference } from '../../src/gpu/device.js';
import type { EventLine } from '../../src/pipeline/events.js';
import { ok, type Phase } from '../../src/pipeline/phase.js';
import { inputScanPhase } from '../../src/pipeline/rawstack/phases/input-scan.js';
import { reportPhase } from '../../src/pipeline/rawstack/phases/report.js';
import { stackingPhase } from '../../src/pipeline/rawstack/phases/stacking.js';
import { runRawStack, type RawStackRunResult } from '../../src/pipeline/rawstack/run.js';
import { exclude, type FrameExclusionCode, type FrameRecord, type RawStackState } from '../../src/pipeline/rawstack/state.js';

export interface Dataset {
  dir: string;
  truth: Truth;
}

export async function makeDataset(dir: string, options: Omit<DatasetOptions, 'out'>): Promise<Dataset> {
  const truth = await generateDataset({ calibration: false, ...options, out: dir, onProgress: undefined });
  return { dir, truth };
}

/** Default frame decisions: what FRAME_FILTERING would exclude among the generator's bad frames. */
export function defaultExclusion(f: TruthFrame): FrameExclusionCode | null {
  if (f.bad === 'clouds') return 'low_transparency';
  if (f.bad === 'trailed') return 'eccentricity';
  if (f.bad === 'bad_seeing') return 'fwhm_outlier';
  return null;
}

export interface TruthPhaseOptions {
  exclude?: (f: TruthFrame) => FrameExclusionCode | null;
  /** Weights ∝ transparency² / FWHM² (mean 1), or none (null weights). */
  weights?: 'truth' | 'none';
  reference?: number;
  /** This frame's registration failed (no matrix). */
  dropMatrix?: number;
}

/** Frame → reference matrix from the truth transforms (reference → frame). */
export function truthMatrix(truth: Truth, frame: number, reference = 0): Affine {
  const inv = invertAffine(truth.frames[frame]!.transform as Affine);
  return composeAffine(truth.frames[reference]!.transform as Affine, inv as Affine);
}

export function truthPhase(truth: Truth, options: TruthPhaseOptions = {}): Phase<RawStackState> {
  return {
    name: 'FRAME_FILTERING',
    optional: false,
    async run(ctx) {
      const { state } = ctx;
      const byName = new Map(truth.frames.map((f) => [basename(f.file), f]));
      const ref = options.reference ?? 0;
      state.referenceIndex = ref;
      state.referenceStrategy = 'truth';
      const rule = options.exclude ?? defaultExclusion;
      const included: FrameRecord[] = [];
      for (const f of state.frames) {
        const t = byName.get(f.name)!;
        f.registration =
          options.dropMatrix === t.index
            ? { ok: false, matrix: null, matched: 0, residual_rms_px: null, code: 'no_match' }
            : { ok: true, matrix: truthMatrix(truth, t.index, ref), matched: 0, residual_rms_px: 0 };
        const code = f.status === 'included' ? rule(t) : null;
        if (code) exclude(f, code, `truth: ${t.bad}`);
        if (f.status === 'included') included.push(f);
      }
      if (options.weights !== 'none') {
        const raw = included.map((f) => {
          const t = byName.get(f.name)!;
          return t.transparency ** 2 / t.fwhm_px ** 2;
        });
        const mean = raw.reduce((a, b) => a + b, 0) / Math.max(1, raw.length);
        included.forEach((f, i) => (f.weight = raw[i]! / mean));
      }
      return ok();
    },
  };
}

export interface StackRun {
  result: RawStackRunResult;
  events: EventLine[];
  diagnostics: Record<string, any> | null;
  image: FitsImage | null;
}

export function config(lights: string, overrides: RawStackConfigInput = {}, budgetMiB?: number): RawStackConfig {
  const r = parseRawStackConfig({ lights_dir: lights, ...overrides });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  // Budgets below the schema's 64 MiB minimum force several bands on test-sized images.
  if (budgetMiB !== undefined) r.config.runtime_limits.memory_budget = budgetMiB;
  return r.config;
}

export async function runStack(
  ds: Dataset,
  runsDir: string,
  cfg: RawStackConfig,
  options: { truth?: TruthPhaseOptions; device?: DevicePreference; signal?: AbortSignal; onEvent?: (l: EventLine) => void; before?: Phase<RawStackState>[] } = {},
): Promise<StackRun> {
  const events: EventLine[] = [];
  const result = await runRawStack(cfg, {
    runsDir,
    phases: [inputScanPhase, ...(options.before ?? []), truthPhase(ds.truth, options.truth), stackingPhase, reportPhase],
    ...(options.device ? { device: options.device } : {}),
    ...(options.signal ? { signal: options.signal } : {}),
    onEvent: (l) => {
      events.push(l);
      options.onEvent?.(l);
    },
  });
  let diagnostics: Record<string, any> | null = null;
  try {
    diagnostics = JSON.parse(await readFile(join(result.runDir, 'artifacts/preprocess/stacking_diagnostics.json'), 'utf8'));
  } catch {
    diagnostics = null;
  }
  const out = result.outputs.stacked_rgb ?? result.outputs.stacked_linear;
  const image = out ? await readFitsImage(out) : null;
  return { result, events, diagnostics, image };
}

export function plane(img: FitsImage, c: number): Float32Array {
  const n = img.width * img.height;
  return img.data.subarray(c * n, (c + 1) * n);
}

/** Sum of the planes (luminance-like detection image for RGB stacks). */
export function luminance(img: FitsImage): Float32Array {
  const n = img.width * img.height;
  const out = new Float32Array(n);
  for (let c = 0; c < img.planes; c++) for (let i = 0; i < n; i++) out[i]! += img.data[c * n + i]!;
  return out;
}

export interface PositionCheck {
  matched: number;
  medianError: number;
  meanDx: number;
  meanDy: number;
  rms: number;
}

/**
 * Detects stars on `data` and compares bright, clean ones (SNR ≥ minSnr, unsaturated, unblended,
 * `margin` px inside the border, no truth neighbour within 6 px) with the truth positions in the
 * reference frame (frame 0).
 */
export function checkPositions(truth: Truth, data: Float32Array, width: number, height: number, minSnr = 50, margin = 8): PositionCheck {
  const det = detectStars(data, width, height);
  if (!det.ok) throw new Error(`star detection failed: ${det.code}`);
  const inside = (p: { x: number; y: number }) => p.x >= margin && p.y >= margin && p.x <= width - 1 - margin && p.y <= height - 1 - margin;
  const truthStars = truth.stars.filter((s) => s.x > -8 && s.y > -8 && s.x < width + 8 && s.y < height + 8);
  const errors: number[] = [];
  let sx = 0;
  let sy = 0;
  for (const s of det.stars) {
    if (s.snr < minSnr || s.saturated || s.blended || !inside(s)) continue;
    let best: (typeof truthStars)[number] | null = null;
    let bestD = 1;
    for (const t of truthStars) {
      const d = Math.hypot(t.x - s.x, t.y - s.y);
      if (d < bestD) (bestD = d), (best = t);
    }
    if (!best) continue;
    // A truth neighbour within 6 px blends the measurement: skip.
    if (truthStars.some((t) => t !== best && t.mag < best!.mag + 3 && Math.hypot(t.x - best!.x, t.y - best!.y) < 6)) continue;
    errors.push(bestD);
    sx += s.x - best.x;
    sy += s.y - best.y;
  }
  const sorted = [...errors].sort((a, b) => a - b);
  return {
    matched: errors.length,
    medianError: sorted[Math.floor(sorted.length / 2)] ?? NaN,
    meanDx: sx / Math.max(1, errors.length),
    meanDy: sy / Math.max(1, errors.length),
    rms: Math.sqrt(errors.reduce((a, e) => a + e * e, 0) / Math.max(1, errors.length)),
  };
}

/** Median and MAD σ of the finite values. */
export function robust(data: ArrayLike<number>): { median: number; sigma: number } {
  const v = Array.from(data).filter((x) => Number.isFinite(x)).sort((a, b) => a - b);
  const med = v[Math.floor(v.length / 2)]!;
  const dev = v.map((x) => Math.abs(x - med)).sort((a, b) => a - b);
  return { median: med, sigma: 1.4826 * dev[Math.floor(dev.length / 2)]! };
}

export function stackingEnd(events: EventLine[]): Extract<EventLine, { type: 'phase_end' }> | undefined {
  return events.find((l): l is Extract<EventLine, { type: 'phase_end' }> => l.type === 'phase_end' && l.phase === 'STACKING');
}

/** Background noise of an image from neighbour differences (blind to stars and gradients). */
export function pixelNoise(data: Float32Array): number {
  const d: number[] = [];
  for (let i = 0; i + 1 < data.length; i += 2) if (Number.isFinite(data[i]! - data[i + 1]!)) d.push(data[i]! - data[i + 1]!);
  return robust(d).sigma / Math.SQRT2;
}

export interface TrailResiduals {
  /** Trail length in the reference frame (px) and the pixels compared (within 5 px of the line). */
  length: number;
  pixels: number;
  /** Mean residual (in units of the stack's pixel noise) per rounded distance from the centre line. */
  meanByOffset: Map<number, number>;
  /** 99th percentile of |residual| over the trail pixels. */
  p99: number;
}

/**
 * Residuals along the satellite trail of frame `satIndex`: (with − without) / σ, where `with` is
 * a stack including that frame, `without` one without it, σ the pixel noise of `without`.
 */
export function trailResiduals(truth: Truth, satIndex: number, withSat: Float32Array, without: Float32Array, width: number, height: number): TrailResiduals {
  const sigma = pixelNoise(without);
  const m = truthMatrix(truth, satIndex);
  const s = truth.frames[satIndex]!.satellite!;
  const p0 = [m[0][0] * s.x0 + m[0][1] * s.y0 + m[0][2], m[1][0] * s.x0 + m[1][1] * s.y0 + m[1][2]] as const;
  const p1 = [m[0][0] * s.x1 + m[0][1] * s.y1 + m[0][2], m[1][0] * s.x1 + m[1][1] * s.y1 + m[1][2]] as const;
  const L = Math.hypot(p1[0] - p0[0], p1[1] - p0[1]);
  const ux = (p1[0] - p0[0]) / L;
  const uy = (p1[1] - p0[1]) / L;
  const sums = new Map<number, [number, number]>();
  const residuals: number[] = [];
  for (let y = 0; y < height; y++) {
    for (let x = 0; x < width; x++) {
      const dx = x - p0[0];
      const dy = y - p0[1];
      const t = dx * ux + dy * uy;
      const d = -dx * uy + dy * ux;
      if (t < 5 || t > L - 5 || Math.abs(d) > 5) continue;
      const r = (withSat[y * width + x]! - without[y * width + x]!) / sigma;
      if (!Number.isFinite(r)) continue;
      residuals.push(r);
      const k = Math.round(d);
      const e = sums.get(k) ?? [0, 0];
      e[0] += r;
      e[1]++;
      sums.set(k, e);
    }
  }
  const sorted = residuals.map(Math.abs).sort((a, b) => a - b);
  return {
    length: L,
    pixels: residuals.length,
    meanByOffset: new Map([...sums].map(([k, [sum, n]]) => [k, sum / n])),
    p99: sorted[Math.floor(0.99 * sorted.length)] ?? NaN,
  };
}
