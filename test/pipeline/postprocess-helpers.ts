// Shared by the BGE and HYPERMETRIC_STRETCH tests: a synthetic linear RGB stack (sky per
// channel + a known linear/quadratic gradient + Gaussian stars at known positions + Gaussian
// noise), a run of [STACK_INJECT, ...phases, REPORT] through runRawStack, where STACK_INJECT
// writes that stack into the run folder as outputs/stacked_rgb.fits (what STACKING would do) and
// adds included frames carrying a FWHM, and measurement helpers for the bars.

import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseRawStackConfig, type RawStackConfig } from '../../src/config/rawstack.js';
import { writeFits, type FitsHeader } from '../../src/fits/index.js';
import type { EventLine } from '../../src/pipeline/events.js';
import { ok, type Phase, type PhaseOutcome } from '../../src/pipeline/phase.js';
import { reportPhase } from '../../src/pipeline/rawstack/phases/report.js';
import { runRawStack, type RawStackRunResult } from '../../src/pipeline/rawstack/run.js';
import { newFrameRecord, type RawStackState } from '../../src/pipeline/rawstack/state.js';
import type { FrameMetrics } from '../../src/algorithms/frame-metrics.js';
import { seededRandom } from '../helpers/tmp.js';

export interface Star {
  x: number;
  y: number;
  flux: number;
}

export interface SynthImage {
  width: number;
  height: number;
  /** Planar R, G, B. */
  data: Float32Array;
  stars: Star[];
  faint: Star[];
  noise: number;
  sky: [number, number, number];
  /** The gradient alone (no sky), per channel, planar. */
  gradient: Float32Array;
  /** The faint extended halo alone (zeros without `halo`), per channel, planar. */
  halo: Float32Array;
}

export interface SynthOptions {
  width?: number;
  height?: number;
  seed?: number;
  noise?: number;
  sky?: [number, number, number];
  /** Peak-to-peak gradient amplitude per channel (0 = none). */
  gradient?: number;
  stars?: number;
  fwhm?: number;
  /** `quadratic` (default) or `glow`: a light dome off one corner plus a radial vignette (not a polynomial). */
  gradientShape?: 'quadratic' | 'glow';
  /** R = G = B exactly (same noise, white stars): every pixel is grey. */
  neutral?: boolean;
  /**
   * Peak of a faint extended halo (a galaxy's outskirts or a faint nebula) in noise units (0 =
   * none): an elliptical Gaussian with sigmas 0.16·W × 0.12·W centred at (0.4·W, 0.45·H), so it
   * covers several sample tiles and stays below the object mask's threshold.
   */
  halo?: number;
}

function gaussian(rand: () => number): number {
  const u = Math.max(rand(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

export function synthRgb(o: SynthOptions = {}): SynthImage {
  const width = o.width ?? 640;
  const height = o.height ?? 480;
  const noise = o.noise ?? 10;
  const sky = o.sky ?? [1000, 1100, 900];
  const amp = o.gradient ?? 300;
  const fwhm = o.fwhm ?? 3;
  const rand = seededRandom(o.seed ?? 7);
  const n = width * height;
  const data = new Float32Array(3 * n);
  const gradient = new Float32Array(3 * n);
  // Linear + quadratic, different per channel (light pollution is coloured); values span [0, amp].
  for (let c = 0; c < 3; c++) {
    for (let y = 0; y < height; y++) {
      for (let x = 0; x < width; x++) {
        const u = x / (width - 1);
        const v = y / (height - 1);
        if (o.neutral && c > 0) continue;
        const g =
          o.gradientShape === 'glow'
            ? 0.8 * Math.exp(-((u - 1.1) ** 2 + (v + 0.1) ** 2) / 0.35) + 0.2 * (1 - ((u - 0.5) ** 2 + (v - 0.5) ** 2) / 0.5) ** 2
            : (0.5 * u + 0.25 * v + 0.25 * (u - 0.3 - 0.1 * c) ** 2 / 0.49 + 0.15 * v * v) / 1.15;
        gradient[c * n + y * width + x] = amp * g * (1 - 0.15 * c);
      }
    }
  }
  const halo = new Float32Array(3 * n);
  if (o.halo) {
    const sx = 0.16 * width;
    const sy = 0.12 * width;
    for (let c = 0; c < 3; c++) {
      for (let y = 0; y < height; y++) {
        for (let x = 0; x < width; x++) {
          const e = ((x - 0.4 * width) / sx) ** 2 + ((y - 0.45 * height) / sy) ** 2;
          halo[c * n + y * width + x] = o.halo * noise * [1, 0.95, 0.8][c]! * Math.exp(-e / 2);
        }
      }
    }
  }
  const stars: Star[] = [];
  const faint: Star[] = [];
  const count = o.stars ?? 150;
  const sigma = fwhm / 2.3548;
  for (let k = 0; k < count; k++) {
    const x = 20 + rand() * (width - 40);
    const y = 20 + rand() * (height - 40);
    const isFaint = k % 3 === 0;
    // Faint: peak ≈ 3σ noise; bright: log-uniform up to a few thousand noise units.
    const flux = isFaint ? 3 * noise * 2 * Math.PI * sigma * sigma : noise * 2 * Math.PI * sigma * sigma * 10 ** (1 + 2.5 * rand());
    const s = { x, y, flux };
    stars.push(s);
    if (isFaint) faint.push(s);
  }
  for (let c = 0; c < 3; c++) {
    if (o.neutral && c > 0) {
      data.copyWithin(c * n, 0, n);
      continue;
    }
    const col = [1.0, 0.9, 0.8][c]!;
    const plane = data.subarray(c * n, (c + 1) * n);
    for (let i = 0; i < n; i++) plane[i] = sky[c]! + gradient[c * n + i]! + halo[c * n + i]! + noise * gaussian(rand);
    for (const s of stars) {
      const r = Math.ceil(4 * sigma);
      for (let y = Math.max(0, Math.floor(s.y) - r); y <= Math.min(height - 1, Math.floor(s.y) + r + 1); y++) {
        for (let x = Math.max(0, Math.floor(s.x) - r); x <= Math.min(width - 1, Math.floor(s.x) + r + 1); x++) {
          const d2 = (x - s.x) ** 2 + (y - s.y) ** 2;
          plane[y * width + x] = plane[y * width + x]! + ((col * s.flux) / (2 * Math.PI * sigma * sigma)) * Math.exp(-d2 / (2 * sigma * sigma));
        }
      }
    }
  }
  return { width, height, data, stars, faint, noise, sky, gradient, halo };
}

export function config(over: Record<string, unknown>): RawStackConfig {
  const r = parseRawStackConfig({ runtime_limits: { parallel_workers: 1 }, ...over });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.config;
}

export type PhaseEnd = Extract<EventLine, { type: 'phase_end' }>;

export interface PostRun {
  result: RawStackRunResult;
  lines: EventLine[];
  state: RawStackState;
  end(phase: string): PhaseEnd | undefined;
}

export interface InjectOptions {
  /** Write the RGB stack (default true; false = mono run without stacked_rgb). */
  rgb?: boolean;
  fwhm?: number;
  /** Outcome a fake PCC phase ends with (absent: no PCC phase); ok also sets stacked_rgb_pcc (the stack itself). */
  pcc?: PhaseOutcome;
  /** Header cards of the injected stack (e.g. a WCS for PCC). */
  header?: FitsHeader;
}

/** Runs [STACK_INJECT, (fake PCC), ...phases, REPORT] with `img` as outputs/stacked_rgb.fits. */
export async function runOn(img: Pick<SynthImage, 'width' | 'height' | 'data'> | null, cfg: RawStackConfig, runsDir: string, phases: Phase<RawStackState>[], opts: InjectOptions = {}, device: 'cpu' | 'auto' = 'cpu'): Promise<PostRun> {
  let captured: RawStackState | null = null;
  const inject: Phase<RawStackState> = {
    name: 'STACK_INJECT',
    optional: false,
    async run(ctx) {
      const { state } = ctx;
      captured = state;
      for (let i = 0; i < 4; i++) {
        const f = newFrameRecord(i, `/nowhere/light_${i}.fits`, `light_${i}.fits`, null);
        f.metrics = { fwhm: (opts.fwhm ?? 3) * (1 + 0.05 * (i - 1.5)) } as FrameMetrics;
        state.frames.push(f);
      }
      if (img && opts.rgb !== false) {
        const file = join(state.folder.outputsDir, 'stacked_rgb.fits');
        await writeFits(file, { width: img.width, height: img.height, planes: 3, data: img.data }, opts.header ? { header: opts.header } : {});
        state.outputs.stacked_rgb = file;
        state.width = img.width;
        state.height = img.height;
      }
      return ok();
    },
  };
  const pcc: Phase<RawStackState>[] = opts.pcc
    ? [
        {
          name: 'PCC',
          optional: true,
          async run(ctx) {
            if (opts.pcc!.status === 'ok' && ctx.state.outputs.stacked_rgb) ctx.state.outputs.stacked_rgb_pcc = ctx.state.outputs.stacked_rgb;
            return opts.pcc!;
          },
        },
      ]
    : [];
  const result = await runRawStack(cfg, { runsDir, device, phases: [inject, ...pcc, ...phases, reportPhase] });
  const text = await readFile(join(result.runDir, 'artifacts', 'preprocess', 'events.jsonl'), 'utf8');
  const lines = text.trim().split('\n').map((l) => JSON.parse(l) as EventLine);
  return {
    result,
    lines,
    state: captured!,
    end: (phase) => lines.find((l): l is PhaseEnd => l.type === 'phase_end' && l.phase === phase),
  };
}

export function quantile(values: ArrayLike<number>, q: number): number {
  const v = Float64Array.from(values as ArrayLike<number>).filter(Number.isFinite).sort();
  const pos = q * (v.length - 1);
  const i = Math.floor(pos);
  return i + 1 < v.length ? v[i]! + (v[i + 1]! - v[i]!) * (pos - i) : v[i]!;
}

/** 1 within `radius` px of any star. */
export function starMask(img: SynthImage, radius: number): Uint8Array {
  const { width, height } = img;
  const mask = new Uint8Array(width * height);
  for (const s of img.stars) {
    const r = s.flux > 200 * img.noise * 10 ? radius * 2 : radius;
    for (let y = Math.max(0, Math.floor(s.y - r)); y <= Math.min(height - 1, Math.ceil(s.y + r)); y++) {
      for (let x = Math.max(0, Math.floor(s.x - r)); x <= Math.min(width - 1, Math.ceil(s.x + r)); x++) {
        if ((x - s.x) ** 2 + (y - s.y) ** 2 <= r * r) mask[y * width + x] = 1;
      }
    }
  }
  return mask;
}

/**
 * The issue's remaining-gradient number for one plane: (p98 − p2) of the star-masked background
 * smoothed heavily (medians of `block`² blocks of the unmasked pixels) divided by the pixel noise.
 */
export function remainingGradient(plane: Float32Array, mask: Uint8Array, width: number, height: number, noise: number, block = 32): number {
  const meds: number[] = [];
  for (let by = 0; by + block <= height; by += block) {
    for (let bx = 0; bx + block <= width; bx += block) {
      const v: number[] = [];
      for (let y = by; y < by + block; y++) for (let x = bx; x < bx + block; x++) if (!mask[y * width + x]) v.push(plane[y * width + x]!);
      if (v.length > block * block * 0.3) meds.push(quantile(v, 0.5));
    }
  }
  return (quantile(meds, 0.98) - quantile(meds, 0.02)) / noise;
}

/** Aperture sum (radius r) minus the area times the annulus [r + 4, r + 10] median. */
function apertureFlux(plane: Float32Array, width: number, height: number, cx: number, cy: number, r: number): number {
  let sum = 0;
  let area = 0;
  const ann: number[] = [];
  const ro = r + 10;
  for (let y = Math.max(0, Math.floor(cy - ro)); y <= Math.min(height - 1, Math.ceil(cy + ro)); y++) {
    for (let x = Math.max(0, Math.floor(cx - ro)); x <= Math.min(width - 1, Math.ceil(cx + ro)); x++) {
      const d2 = (x - cx) ** 2 + (y - cy) ** 2;
      if (d2 <= r * r) {
        sum += plane[y * width + x]!;
        area++;
      } else if (d2 >= (r + 4) ** 2 && d2 <= ro * ro) ann.push(plane[y * width + x]!);
    }
  }
  return sum - area * quantile(ann, 0.5);
}

/** SNR of the faint stars: median aperture flux over the std of empty-sky apertures of the same size. */
export function faintStarSnr(plane: Float32Array, img: SynthImage, r = 3): number {
  const { width, height } = img;
  const flux = img.faint.map((s) => apertureFlux(plane, width, height, s.x, s.y, r));
  const rand = seededRandom(99);
  const empty: number[] = [];
  for (let tries = 0; empty.length < 300 && tries < 20000; tries++) {
    const x = 20 + rand() * (width - 40);
    const y = 20 + rand() * (height - 40);
    if (img.stars.some((s) => (s.x - x) ** 2 + (s.y - y) ** 2 < 15 * 15)) continue;
    empty.push(apertureFlux(plane, width, height, x, y, r));
  }
  const mean = empty.reduce((a, v) => a + v, 0) / empty.length;
  const sd = Math.sqrt(empty.reduce((a, v) => a + (v - mean) ** 2, 0) / (empty.length - 1));
  return quantile(flux, 0.5) / sd;
}

/**
 * Fraction of the halo that survives BGE in one channel. in − out is the subtracted surface minus
 * a constant (exactly: no noise), so (in − out) − gradient is the surface's error; over the halo's
 * core (halo ≥ half its peak) its excess over the error far from the halo (halo < 2 % of the peak)
 * is the halo light taken away. 1 = untouched, 0 = removed with the gradient.
 */
export function haloPreserved(img: SynthImage, out: Float32Array, c: number): number {
  const n = img.width * img.height;
  let peak = 0;
  for (let i = 0; i < n; i++) peak = Math.max(peak, img.halo[c * n + i]!);
  const far: number[] = [];
  let core = 0;
  let haloSum = 0;
  let count = 0;
  const err = (i: number) => img.data[c * n + i]! - out[c * n + i]! - img.gradient[c * n + i]!;
  for (let i = 0; i < n; i += 3) {
    const h = img.halo[c * n + i]!;
    if (h < 0.02 * peak) far.push(err(i));
  }
  const ref = quantile(far, 0.5);
  for (let i = 0; i < n; i++) {
    const h = img.halo[c * n + i]!;
    if (h >= 0.5 * peak) {
      core += err(i) - ref;
      haloSum += h;
      count++;
    }
  }
  return count > 0 ? 1 - core / haloSum : NaN;
}

/** 1 where the halo is above `fraction` of its peak in channel 0 (to leave it out of gradient measures). */
export function haloMask(img: SynthImage, fraction: number): Uint8Array {
  const n = img.width * img.height;
  let peak = 0;
  for (let i = 0; i < n; i++) peak = Math.max(peak, img.halo[i]!);
  return Uint8Array.from({ length: n }, (_, i) => (peak > 0 && img.halo[i]! >= fraction * peak ? 1 : 0));
}
