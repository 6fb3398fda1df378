// HYPERMETRIC_STRETCH (seed "Postprocess switches" 4 and the HMS parameter table; the
// predecessor's method): non-linear stretch of the best linear RGB stack (PCC > BGE > stacked_rgb) into
// outputs/<hypermetric_stretch.output_rgb> (float32 in [0, 1]) and
// artifacts/preprocess/hms_diagnostics.json.
//
// Invariants:
// - Skips: postprocess.hypermetric_stretch false → disabled; no RGB stack → no_rgb_stack;
//   require_successful_pcc true and PCC not ok → pcc_failed, whose message names PCC's outcome and
//   the switch that lets HMS run anyway (false: runs on the star_white, BGE or linear input). A
//   star_white fallback is not a successful PCC: it is a white balance on an assumption.
// - Decisions (profile, anchor, log-D, target rounds, output scaling, MTF) are solved on a strided
//   sample with the TS curve (stages/hms/solve.ts); the per-pixel passes run in the `stretch` kernels
//   (WGSL when the device policy gives a context, else the TS reference), so both paths apply the
//   same solved parameters.
// - Output: finite everywhere (non-finite inputs become 0 before the stretch, counted), monotone
//   in each input channel for the colour-preserving curve, background luminance median on
//   target_bg (ready_to_use: the final MTF puts it there; scientific: f(median) = target, plus
//   the kernel's 0.005 pedestal).
// - The adaptive (histogram) anchor is capped at the statistical anchor min_c p0.5(c) − 0.00025,
//   so a coloured background never loses a channel to black (a weakness of the predecessor).
// - color_strategy `adaptive` uses fixed_color_strategy as the predecessor's `auto` did (it has no
//   scene-adaptive rule); the diagnostics say so.
// - One stacked image (three planes, plus the stretched copy) is held in memory, never frames.

import { join, parse } from 'node:path';
import { stretchAsinh, stretchMtf, type MtfParams } from '../../../cpu/stretch.js';
import { readFitsImage, writeFits } from '../../../fits/index.js';
import { stretchAsinhGpu, stretchMtfGpu } from '../../../gpu/kernels/stretch.js';
import { writeJsonAtomic } from '../../atomic.js';
import { gpuFor } from '../../device-policy.js';
import { ok, skipped } from '../../phase.js';
import { postprocessGate } from '../postprocess-gate.js';
import type { RawStackPhase } from '../reasons.js';
import {
  adaptiveAnchor,
  decideLogD,
  inputDivisor,
  luminance,
  outputScaling,
  pixelSettings,
  resolveProfile,
  SAMPLE_MAX,
  samplePlanes,
  softClip,
  solveMtf,
  sortedQuantile,
  statisticalAnchor,
  STATS_SAMPLE_MAX,
  stretchSample,
  type AnchorResult,
} from '../../stages/hms/solve.js';
import type { RawStackState } from '../state.js';
import { addArtifact } from '../../artifacts.js';
import { inRunFolder } from '../../run-folder.js';
import { artifactPath } from '../../../shared/run-layout.js';

const rel = (state: RawStackState, abs: string) => abs.slice(state.folder.runDir.length + 1).split('\\').join('/');

/** Brightest pixel (max over channels) and whether a neighbour reaches 20 % of it (a star, not a hot pixel). */
function brightest(planes: Float32Array[], width: number, height: number): { value: number; isolated: boolean } {
  const n = width * height;
  let best = -Infinity;
  let at = 0;
  for (let i = 0; i < n; i++) {
    const v = Math.max(planes[0]![i]!, planes[1]![i]!, planes[2]![i]!);
    if (v > best) {
      best = v;
      at = i;
    }
  }
  const x = at % width;
  const y = Math.floor(at / width);
  let isolated = true;
  for (let dy = -1; dy <= 1; dy++) {
    for (let dx = -1; dx <= 1; dx++) {
      if ((dx === 0 && dy === 0) || x + dx < 0 || y + dy < 0 || x + dx >= width || y + dy >= height) continue;
      const j = (y + dy) * width + x + dx;
      if (Math.max(planes[0]![j]!, planes[1]![j]!, planes[2]![j]!) >= 0.2 * best) isolated = false;
    }
  }
  return { value: best, isolated };
}

export const hmsPhase: RawStackPhase = {
  name: 'HYPERMETRIC_STRETCH',
  optional: true,
  // Input RGB, its [0, 1] copy, the stretched planes and the interleaved-for-writing copy; on the
  // WGSL path one chunk of three inputs and three outputs at a time.
  memory(ctx) {
    const px = (ctx.state.width ?? 0) * (ctx.state.height ?? 0);
    return { hostBytes: px * 4 * 12, deviceBytes: gpuFor(ctx.state.gpu, 'stretch') ? px * 4 * 6 : 0 };
  },
  async prepare(ctx) {
    const { state } = ctx;
    const gate = postprocessGate(state, 'hypermetric_stretch');
    if (gate) return gate;
    const pcc = ctx.outcomes.get('PCC');
    if (state.config.hypermetric_stretch.require_successful_pcc && pcc?.status !== 'ok') {
      const what = !pcc ? 'did not run' : `ended ${pcc.status}${'reason' in pcc ? ` (${pcc.reason})` : ''}`;
      const white = state.summaries.PCC?.method === 'star_white' ? ' (its star_white fallback is a white balance, not a colour calibration)' : '';
      return skipped('pcc_failed', `PCC ${what}${white} and hypermetric_stretch.require_successful_pcc is true; set hypermetric_stretch.require_successful_pcc to false to stretch without a successful PCC`, { pcc_status: pcc?.status ?? 'not_run', pcc_reason: pcc && 'reason' in pcc ? pcc.reason : null, switch: 'hypermetric_stretch.require_successful_pcc' });
    }
  },
  async run(ctx) {
    const { state } = ctx;
    const cfg = state.config.hypermetric_stretch;
    const started = Date.now();
    const o = state.outputs;
    const input = o.stacked_rgb_pcc ?? o.stacked_rgb_starwhite ?? o.stacked_rgb_bge ?? o.stacked_rgb!;
    const inputKind = o.stacked_rgb_pcc ? 'pcc' : o.stacked_rgb_starwhite ? 'star_white' : o.stacked_rgb_bge ? 'bge' : 'linear';
    const img = await readFitsImage(input);
    if (img.planes < 3) throw new Error(`${input} has ${img.planes} plane(s), HMS needs 3`);
    const { width, height } = img;
    const n = width * height;
    ctx.progress(1, 5, 'scale');

    // Input scaling to [0, 1]; non-finite samples become 0 (black) so the output stays finite.
    let max = -Infinity;
    for (let i = 0; i < 3 * n; i++) {
      const v = img.data[i]!;
      if (v - v === 0 && v > max) max = v;
    }
    const divisor = inputDivisor(max);
    let nonFinite = 0;
    const planes = [0, 1, 2].map((c) => {
      const src = img.data.subarray(c * n, (c + 1) * n);
      const dst = new Float32Array(n);
      for (let i = 0; i < n; i++) {
        const v = src[i]! / divisor;
        if (!(v - v === 0)) nonFinite++;
        dst[i] = v > 0 ? (v < 1 ? v : 1) : 0;
      }
      return dst;
    });
    ctx.checkCancelled();

    const profile = resolveProfile(cfg.sensor_profile, cfg.fallback_profile);
    if (profile.source === 'fallback_profile' || profile.source === 'fallback') ctx.warn('hms_profile_fallback', `sensor_profile "${cfg.sensor_profile}" not found; using ${profile.profile.name} (${profile.source})`);
    const w = profile.profile.weights;
    ctx.progress(2, 5, 'solve');

    const sample = samplePlanes(planes, SAMPLE_MAX);
    const anchorResult: AnchorResult = cfg.adaptive_anchor ? adaptiveAnchor(luminance(sample, w)) : statisticalAnchor(sample);
    // The adaptive anchor comes from the luminance histogram; with a coloured background (no PCC
    // or neutralisation before HMS) it can sit above the sky of the weakest channel, and one
    // anchor for all channels then crushes that channel to black across the whole background
    // (the predecessor did). Capping it at the statistical anchor keeps every channel's sky.
    const channelFloor = cfg.adaptive_anchor ? statisticalAnchor(sample).anchor : anchorResult.anchor;
    const anchorCapped = anchorResult.anchor > channelFloor;
    const anchor = Math.min(anchorResult.anchor, channelFloor, 0.99);
    const anchoredLum = luminance(sample, w, anchor);
    const logD = decideLogD(cfg, anchoredLum);
    const params = pixelSettings(cfg, w, anchor, logD.logD);
    ctx.checkCancelled();
    ctx.progress(3, 5, 'stretch');

    const gpu = gpuFor(state.gpu, 'stretch');
    let out = gpu ? await stretchAsinhGpu(gpu, planes[0]!, planes[1]!, planes[2]!, params) : stretchAsinh(planes[0]!, planes[1]!, planes[2]!, params);
    ctx.checkCancelled();

    const statsSample = samplePlanes(planes, STATS_SAMPLE_MAX);
    const stretchedSample = stretchSample(statsSample, params);
    let scaling: ReturnType<typeof outputScaling> | null = null;
    let mtfSolve: ReturnType<typeof solveMtf> | null = null;
    let linearExpansion: Record<string, number> | null = null;
    if (cfg.mode === 'ready_to_use') {
      ctx.progress(4, 5, 'output scaling');
      scaling = outputScaling(stretchedSample, w, cfg.highlight_ceiling_percentile, brightest(out, width, height));
      mtfSolve = solveMtf(stretchedSample, w, scaling.c0, scaling.c1, cfg.target_bg);
      const p: MtfParams = { c0: scaling.c0, m: mtfSolve.m, c1: scaling.c1 };
      out = gpu ? ((await stretchMtfGpu(gpu, out, [p, p, p])) as typeof out) : (out.map((plane) => stretchMtf(plane, p)) as typeof out);
      for (const plane of out) for (let i = 0; i < n; i++) plane[i] = softClip(plane[i]!);
    } else if (cfg.linear_expansion > 0.001) {
      const lum = luminance(stretchedSample, w).sort();
      const lo = sortedQuantile(lum, 0.00001);
      const hi = sortedQuantile(lum, 0.99999);
      const e = cfg.linear_expansion;
      if (hi > lo) {
        for (const plane of out) {
          for (let i = 0; i < n; i++) {
            const v = plane[i]!;
            const t = (v - lo) / (hi - lo);
            plane[i] = (1 - e) * v + e * (t < 0 ? 0 : t > 1 ? 1 : t);
          }
        }
      }
      linearExpansion = { amount: e, low: lo, high: hi };
    }
    ctx.checkCancelled();

    // Clip statistics and the achieved background on the final output.
    let black = 0;
    let white = 0;
    let bad = 0;
    for (const plane of out) {
      for (let i = 0; i < n; i++) {
        const v = plane[i]!;
        if (!(v - v === 0)) {
          bad++;
          plane[i] = 0;
        } else if (v <= 0.001) black++;
        else if (v >= 0.999) white++;
      }
    }
    const finalLum = luminance(samplePlanes(out, STATS_SAMPLE_MAX), w).sort();
    const achieved = sortedQuantile(finalLum, 0.5);

    const data = new Float32Array(3 * n);
    out.forEach((plane, c) => data.set(plane, c * n));
    const header = img.header.clone();
    header.set('HMSLOGD', Number(logD.logD.toFixed(6)), { comment: 'HyperMetric Stretch log10 D' });
    header.set('HMSANCH', Number(anchor.toPrecision(7)), { comment: 'HyperMetric Stretch anchor (0..1 scale)' });
    header.addHistory(`skystack HYPERMETRIC_STRETCH: ${cfg.mode}, profile ${profile.profile.key} (${profile.source}), input ${inputKind}, target_bg ${cfg.target_bg}`);
    const outFile = join(state.folder.outputsDir, cfg.output_rgb);
    await writeFits(outFile, { width, height, planes: 3, data }, { header });
    state.outputs.stacked_rgb_hms = outFile;
    addArtifact(state, 'stacked_rgb_hms', 'HYPERMETRIC_STRETCH', rel(state, outFile));
    const channelFiles: string[] = [];
    if (cfg.write_channels) {
      const stem = parse(cfg.output_rgb).name;
      for (const [c, name] of ['R', 'G', 'B'].entries()) {
        const f = join(state.folder.outputsDir, `${stem}_${name}.fits`);
        await writeFits(f, { width, height, data: out[c]! }, { header });
        addArtifact(state, 'stacked_rgb_hms_channel', 'HYPERMETRIC_STRETCH', rel(state, f));
        channelFiles.push(rel(state, f));
      }
    }

    const colorStrategy = Math.max(-1, Math.min(1, cfg.fixed_color_strategy));
    const diag = {
      success: true,
      mode: cfg.mode,
      input: { kind: inputKind, file: rel(state, input), divisor, max_value: max, non_finite_pixels: nonFinite },
      profile: { requested: cfg.sensor_profile, fallback_profile: cfg.fallback_profile, used: profile.profile.key, name: profile.profile.name, weights: w, profile_source: profile.source },
      anchor: { value: anchor, method: anchorResult.method, histogram_anchor: anchorResult.anchor, capped_at_channel_floor: anchorCapped, ...(anchorResult.peak !== undefined ? { histogram_peak: anchorResult.peak } : {}) },
      log_d: { value: logD.logD, mode: logD.mode, reached: logD.reached, rounds: logD.rounds, star_pressure: logD.star_pressure, stretched_floor: logD.stretched_floor },
      target: { target_bg: cfg.target_bg, solve_target: logD.target_used, achieved_median: achieved },
      color: {
        strategy_mode: cfg.color_strategy,
        strategy: colorStrategy,
        note: cfg.color_strategy === 'adaptive' ? 'adaptive uses fixed_color_strategy (the predecessor has no scene rule)' : undefined,
        grip: params.colorGrip,
        shadow_convergence: params.shadowConvergence ?? 0,
      },
      curve: { protect_b: cfg.protect_b, convergence_power: cfg.convergence_power, pedestal: params.pedestal ?? 0 },
      output_scaling: scaling,
      mtf: mtfSolve,
      soft_clip: cfg.mode === 'ready_to_use' ? { knee: 0.98, rolloff: 2 } : null,
      linear_expansion: linearExpansion,
      clip: { black_percent: (100 * black) / (3 * n), white_percent: (100 * white) / (3 * n), non_finite_replaced: bad },
      device: gpu ? 'wgsl' : 'typescript',
      output: rel(state, outFile),
      channel_files: channelFiles,
      duration_ms: Date.now() - started,
    };
    const diagRel = artifactPath(state.folder.layout, 'hms_diagnostics.json');
    await writeJsonAtomic(inRunFolder(state.folder, diagRel), diag);
    addArtifact(state, 'hms_diagnostics', 'HYPERMETRIC_STRETCH', diagRel);
    state.summaries.HYPERMETRIC_STRETCH = {
      mode: cfg.mode,
      input: inputKind,
      profile: profile.profile.key,
      profile_source: profile.source,
      anchor,
      log_d: logD.logD,
      target_bg: cfg.target_bg,
      achieved_median: achieved,
      color_strategy: colorStrategy,
      black_clip_percent: diag.clip.black_percent,
      white_clip_percent: diag.clip.white_percent,
    };
    ctx.progress(5, 5, 'done');
    return ok({ output: rel(state, outFile), log_d: logD.logD, anchor, achieved_median: achieved });
  },
};
