// The run's HyperMetric Stretch "look" for a linear RGB image, for the viewer's hms mode and
// `skystack export --stretch hms`. A recipe holds every number HMS applies per pixel:
//   v/divisor clamped to [0, 1] → colour-preserving asinh (src/cpu/stretch.ts stretchAsinh)
//   → ready_to_use: MTF(c0, m, c1) and the soft clip; scientific: the linear expansion.
// Source of the numbers, in order:
//   1. the run's artifacts/preprocess/hms_diagnostics.json (a successful HYPERMETRIC_STRETCH) with
//      the run's effective hypermetric_stretch settings: applied to the image HMS stretched it
//      reproduces stacked_rgb_hms; applied to another linear image of the run (stacked_rgb,
//      the BGE output) it shows that image with the run's curve;
//   2. otherwise solved on the image itself (a strided sample) with the run's settings, or the
//      defaults outside a run, following the phase's decisions (stages/hms/solve.ts); the brightest
//      pixel is taken as isolated (no neighbourhood in a sample), so the output scale comes
//      from the ceiling percentile alone.
// Images that HMS already stretched are shown as they are and never get a recipe.

import { hmsPixelParams, mtf, stretchAsinh, type AsinhParams, type MtfParams } from '../cpu/stretch.js';
import { RawStackConfigSchema, type RawStackConfig } from '../config/rawstack.js';
import {
  adaptiveAnchor,
  decideLogD,
  inputDivisor,
  luminance,
  outputScaling,
  pixelSettings,
  resolveProfile,
  samplePlanes,
  softClip,
  solveMtf,
  sortedQuantile,
  statisticalAnchor,
  STATS_SAMPLE_MAX,
  stretchSample,
} from '../pipeline/stages/hms/solve.js';

export type HmsSettings = RawStackConfig['hypermetric_stretch'];

export interface HmsRecipe {
  source: 'run' | 'solved';
  divisor: number;
  asinh: AsinhParams;
  mtf: MtfParams | null;
  softClip: boolean;
  linearExpansion: { amount: number; low: number; high: number } | null;
}

/** The run's hypermetric_stretch settings from its effective_config.json text (defaults when absent or invalid). */
export function hmsSettings(effectiveConfigText: string | null): HmsSettings {
  let raw: unknown = {};
  try {
    raw = effectiveConfigText ? ((JSON.parse(effectiveConfigText) as { hypermetric_stretch?: unknown }).hypermetric_stretch ?? {}) : {};
  } catch {
    raw = {};
  }
  const parsed = RawStackConfigSchema.shape.hypermetric_stretch.safeParse(raw);
  return parsed.success ? parsed.data : RawStackConfigSchema.shape.hypermetric_stretch.parse({});
}

const num = (v: unknown): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

/** A recipe from a successful run's hms_diagnostics.json text; null when it holds none. */
export function recipeFromDiagnostics(diagText: string | null, cfg: HmsSettings): HmsRecipe | null {
  if (!diagText) return null;
  let d: Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  try {
    d = JSON.parse(diagText) as Record<string, any>; // eslint-disable-line @typescript-eslint/no-explicit-any
  } catch {
    return null;
  }
  if (d?.success !== true) return null;
  const divisor = num(d.input?.divisor);
  const anchor = num(d.anchor?.value);
  const logD = num(d.log_d?.value);
  const w = d.profile?.weights;
  if (divisor === null || anchor === null || logD === null || !Array.isArray(w) || w.length !== 3 || !w.every((x: unknown) => num(x) !== null)) return null;
  const asinh = hmsPixelParams({
    mode: d.mode === 'scientific' ? 'scientific' : 'ready_to_use',
    weights: w as [number, number, number],
    anchor,
    logD,
    protect_b: num(d.curve?.protect_b) ?? cfg.protect_b,
    convergence_power: num(d.curve?.convergence_power) ?? cfg.convergence_power,
    color_strategy: num(d.color?.strategy) ?? cfg.fixed_color_strategy,
    color_grip: cfg.color_grip,
    shadow_convergence: cfg.shadow_convergence,
  });
  // The diagnostics record the grip and shadow weight the kernel used: take them over the settings.
  const grip = num(d.color?.grip);
  const shadow = num(d.color?.shadow_convergence);
  if (grip !== null) asinh.colorGrip = grip;
  if (shadow !== null) asinh.shadowConvergence = shadow;
  const c0 = num(d.output_scaling?.c0);
  const c1 = num(d.output_scaling?.c1);
  const m = num(d.mtf?.m);
  const le = d.linear_expansion;
  return {
    source: 'run',
    divisor,
    asinh,
    mtf: c0 !== null && c1 !== null && m !== null && c1 > c0 ? { c0, m, c1 } : null,
    softClip: d.soft_clip != null,
    linearExpansion: le && num(le.amount) !== null && num(le.low) !== null && num(le.high) !== null ? { amount: le.amount, low: le.low, high: le.high } : null,
  };
}

/** Solves a recipe on three planes (any scale; a strided sample of the image is enough). */
export function solveRecipe(planes: Float32Array[], cfg: HmsSettings): HmsRecipe {
  let max = -Infinity;
  for (const p of planes) for (let i = 0; i < p.length; i++) if (p[i]! - p[i]! === 0 && p[i]! > max) max = p[i]!;
  const divisor = inputDivisor(max);
  const scaled = planes.map((p) => {
    const out = new Float32Array(p.length);
    for (let i = 0; i < p.length; i++) {
      const v = p[i]! / divisor;
      out[i] = v > 0 ? (v < 1 ? v : 1) : 0;
    }
    return out;
  });
  const w = resolveProfile(cfg.sensor_profile, cfg.fallback_profile).profile.weights;
  const floorAnchor = statisticalAnchor(scaled).anchor;
  const anchor = Math.min(cfg.adaptive_anchor ? adaptiveAnchor(luminance(scaled, w)).anchor : floorAnchor, floorAnchor, 0.99);
  const logD = decideLogD(cfg, luminance(scaled, w, anchor));
  const asinh = pixelSettings(cfg, w, anchor, logD.logD);
  const stretched = stretchSample(samplePlanes(scaled, STATS_SAMPLE_MAX), asinh);
  if (cfg.mode === 'ready_to_use') {
    let top = 0;
    for (const p of stretched) for (let i = 0; i < p.length; i++) if (p[i]! > top) top = p[i]!;
    const s = outputScaling(stretched, w, cfg.highlight_ceiling_percentile, { value: top, isolated: true });
    const m = solveMtf(stretched, w, s.c0, s.c1, cfg.target_bg).m;
    return { source: 'solved', divisor, asinh, mtf: { c0: s.c0, m, c1: s.c1 }, softClip: true, linearExpansion: null };
  }
  let linearExpansion: HmsRecipe['linearExpansion'] = null;
  if (cfg.linear_expansion > 0.001) {
    const lum = luminance(stretched, w).sort();
    const low = sortedQuantile(lum, 0.00001);
    const high = sortedQuantile(lum, 0.99999);
    if (high > low) linearExpansion = { amount: cfg.linear_expansion, low, high };
  }
  return { source: 'solved', divisor, asinh, mtf: null, softClip: false, linearExpansion };
}

/** Joint strided sample of three planes for solveRecipe. */
export function recipeSample(planes: Float32Array[]): Float32Array[] {
  return samplePlanes(planes, 2_000_000);
}

/** Applies the recipe to three planes of equal length: the stretched planes in [0, 1] (non-finite → 0). */
export function applyRecipe(r: Float32Array, g: Float32Array, b: Float32Array, recipe: HmsRecipe): [Float32Array, Float32Array, Float32Array] {
  const n = r.length;
  const scaled = [r, g, b].map((p) => {
    const out = new Float32Array(n);
    for (let i = 0; i < n; i++) {
      const v = p[i]! / recipe.divisor;
      out[i] = v > 0 ? (v < 1 ? v : 1) : 0; // NaN → 0 as the phase does
    }
    return out;
  }) as [Float32Array, Float32Array, Float32Array];
  const out = stretchAsinh(scaled[0], scaled[1], scaled[2], recipe.asinh);
  for (const plane of out) {
    for (let i = 0; i < n; i++) {
      let v = plane[i]!;
      if (recipe.mtf) {
        const t = (v - recipe.mtf.c0) / (recipe.mtf.c1 - recipe.mtf.c0);
        v = mtf(recipe.mtf.m, t);
      }
      if (recipe.softClip) v = softClip(v);
      if (recipe.linearExpansion) {
        const { amount, low, high } = recipe.linearExpansion;
        const t = (v - low) / (high - low);
        v = (1 - amount) * v + amount * (t < 0 ? 0 : t > 1 ? 1 : t);
      }
      plane[i] = v - v === 0 ? v : 0;
    }
  }
  return out;
}
