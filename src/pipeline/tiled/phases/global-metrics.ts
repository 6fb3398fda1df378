// GLOBAL_METRICS: every frame's stars and quality record (Raw Stack's reference selection on the
// frames stage: star detection with per-star FWHM, eccentricity and peak kept for LOCAL_METRICS,
// and the registration reference), then the global weight G per frame: in mode quality (the
// default) Raw Stack's quality weight of the frame (its quality score's inverse-variance form,
// frame-metrics.ts qualityWeights) to quality_power, so the tiled stack weighs whole frames as
// Raw Stack does; in mode formula from background, noise, transparency (median star flux) and
// seeing (median star FWHM) (weights.ts globalWeights).
// Writes global_metrics.json and state.tiled.global.

import { ok } from '../../phase.js';
import { referenceSelectionPhase } from '../../rawstack/phases/reference-selection.js';
import { fromRawStack, writeArtifact, tiledPhase, round5 } from '../records.js';
import type { TiledPhase } from '../reasons.js';
import { globalWeights } from '../weights.js';
import { qualityWeights } from '../../../algorithms/frame-metrics.js';

/** w^p renormalised to mean 1 (p = 1: w itself). */
function powerWeights(w: readonly number[], p: number): number[] {
  const wp = w.map((v) => v ** p);
  const mean = wp.reduce((a, b) => a + b, 0) / Math.max(1, wp.length);
  return mean > 0 ? wp.map((v) => v / mean) : w.slice();
}

export const globalMetricsPhase: TiledPhase = tiledPhase('GLOBAL_METRICS', ['global_metrics'], {
  name: 'GLOBAL_METRICS',
  optional: false,
  async run(ctx) {
    const outcome = await fromRawStack(referenceSelectionPhase).run(ctx);
    if (outcome.status !== 'ok') return outcome;
    const s = ctx.state;
    const gm = s.config.tiled.global_metrics;
    const frames = s.frames.filter((f) => f.status === 'included' && f.metrics);
    const quality = frames.map((f) => ({ background: f.metrics!.background_median, noise: f.metrics!.background_rms, transparency: f.metrics!.median_star_flux, fwhm: f.metrics!.fwhm }));
    const gw = globalWeights(quality, { weights: gm.weights, clamp: gm.clamp as [number, number], weight_exponent_scale: gm.weight_exponent_scale });
    const scores = frames.map((f) => f.metrics!.quality_score);
    const g = gm.mode === 'quality' ? powerWeights(qualityWeights(scores, frames.map(() => true)), gm.quality_power) : gw.g;
    s.tiled.global.clear();
    frames.forEach((f, i) => s.tiled.global.set(f.index, { g: g[i]!, q: gw.q[i]! }));
    const body = {
      mode: gm.mode,
      weights_used: gw.weights,
      clamp: gm.clamp,
      weight_exponent_scale: gm.weight_exponent_scale,
      formula: gm.mode === 'quality' ? 'G = q / mean(q), q = s / (1 - s), s = the frame quality score (Raw Stack quality weights)' : 'G = exp(k * clip(Q)), Q = wb*(-z(background)) + wn*(-z(noise)) + wt*z(transparency) + wf*(-z(fwhm))',
      reference: s.referenceIndex,
      metrics: frames.map((f, i) => ({
        index: f.index,
        file: f.name,
        background: round5(quality[i]!.background),
        noise: round5(quality[i]!.noise),
        transparency: round5(quality[i]!.transparency),
        fwhm: round5(quality[i]!.fwhm),
        fwhm_x: round5(f.metrics!.fwhm_x),
        fwhm_y: round5(f.metrics!.fwhm_y),
        roundness: round5(Math.sqrt(1 - Math.min(1, f.metrics!.eccentricity ** 2))),
        star_count: f.metrics!.star_count,
        z: { background: round5(gw.z.background[i]!), noise: round5(gw.z.noise[i]!), transparency: round5(gw.z.transparency[i]!), fwhm: round5(gw.z.fwhm[i]!) },
        quality_score: round5(gw.q[i]!),
        frame_quality_score: round5(scores[i]!),
        global_weight: round5(g[i]!),
      })),
    };
    const rel = await writeArtifact(s, 'GLOBAL_METRICS', 'global_metrics.json', body);
    for (const [i, f] of frames.entries()) ctx.frame(f.index, f.name, 'ok', undefined, { global_weight: round5(g[i]!), quality: round5(gw.q[i]!) });
    return ok({ ...(outcome.details ?? {}), frames: frames.length, g_min: round5(Math.min(...g)), g_max: round5(Math.max(...g)), artifact: rel });
  },
});
