// BGE (seed "Postprocess switches" 2): removes the background gradient of
// the linear RGB stack and writes outputs/stacked_rgb_bge.fits plus
// artifacts/preprocess/bge_diagnostics.json (written on success and on failure).
//
// Invariants:
// - Runs only with an RGB stack (mono → skipped no_rgb_stack) and postprocess.bge true (else
//   skipped disabled). bge.method is the tiled workflow's on/off control (config schema); in Raw
//   Stack the switch decides, and `none` there runs `classic` (recorded as such).
// - The correction is additive and smooth: out_c = in_c − S_c + median(S_c) (stages/bge/model.ts), so the
//   sky level stays, stars keep their flux and no noise is added.
// - Seeing: median `metrics.fwhm` of the included frames. Those FWHMs are measured in
//   full-resolution pixels (frame-metrics.ts), which for OSC data already is the debayered scale
//   the stack lives on, so no ×2 is applied (the predecessor doubled a half-resolution FWHM).
// - Too few valid samples → phase error (an optional phase: the run goes on), diagnostics kept.
// - One stacked image (three planes) is held in memory, never frames.
//
// Methods: `classic` — tile samples (or, past MAX_FIT_POINTS samples, their grid cells) →
// robust surface (bge.fit_method).
// `autobge` — samples placed automatically (stages/bge/autobge.ts: start on a grid, descend toward dim
// areas on a star-masked, detrended, smoothed map, screened by a stiff stage-one spline for
// bright structure, coverage kept), then the rbf surface through the accepted samples (the
// predecessor's two-stage model); bge_diagnostics.json `placement` says where every sample
// ended, how far it moved, and why rejected ones were dropped.

import { readFitsImage, writeFits } from '../../../fits/index.js';
import { artifactPath, outputPath } from '../../../shared/run-layout.js';
import { writeJsonAtomic } from '../../atomic.js';
import { inRunFolder } from '../../run-folder.js';
import { failed, ok } from '../../phase.js';
import { postprocessGate } from '../postprocess-gate.js';
import type { RawStackPhase } from '../reasons.js';
import { fitChannel, gridCells, median, objectMask, renderSurface, tileGeometry, tileSamples, type ChannelFit, type FitMethod, type GridPoint } from '../../stages/bge/model.js';
import { placeSamples, STAGE1_LAMBDA, TREND_LAMBDA, type Placement } from '../../stages/bge/autobge.js';
import { includedFrames } from '../state.js';
import { addArtifact } from '../../artifacts.js';

/** Thin-plate smoothing (coordinates normalised by the long side); IRLS divides it by the weight. */
export const RBF_LAMBDA = 1e-3;
/** Most fit points for which the tile samples are fitted directly (dense (n+6)² solve per IRLS round). */
export const MAX_FIT_POINTS = 600;
/** Huber δ floor as a fraction of the luminance pixel noise (see fitChannel). */
const IRLS_NOISE_FLOOR = 0.1;
const CHANNELS = ['R', 'G', 'B'];

export const bgePhase: RawStackPhase = {
  name: 'BGE',
  optional: true,
  // Whole-image work on one stack: input and output RGB, luminance, residual, surface and mask.
  memory(ctx) {
    const px = (ctx.state.width ?? 0) * (ctx.state.height ?? 0);
    return { hostBytes: px * 4 * 10 + px, deviceBytes: 0 };
  },
  async prepare(ctx) {
    const { state } = ctx;
    const gate = postprocessGate(state, 'bge');
    if (gate) return gate;
  },
  async run(ctx) {
    const { state } = ctx;
    const cfg = { ...state.config.bge, method: state.config.bge.method === 'none' ? ('classic' as const) : state.config.bge.method };
    const started = Date.now();
    const layout = state.folder.layout;
    const diagRel = artifactPath(layout, 'bge_diagnostics.json');
    const outRel = outputPath(layout, 'stacked_rgb_bge.fits');
    const diagFile = inRunFolder(state.folder, diagRel);
    const diag: Record<string, unknown> = { success: false, method: cfg.method, method_requested: state.config.bge.method, input: outputPath(layout, 'stacked_rgb.fits'), effective: { bge: { ...cfg, rbf_lambda: RBF_LAMBDA }, tile: { ...state.config.tile } } };
    const fail = async (message: string, extra: Record<string, unknown> = {}) => {
      Object.assign(diag, { success: false, failure_reason: message, ...extra, duration_ms: Date.now() - started });
      await writeJsonAtomic(diagFile, diag);
      addArtifact(state, 'bge_diagnostics', 'BGE', diagRel);
      state.summaries.BGE = { success: false, failure_reason: message };
      return failed('input_error', `BGE: ${message}`, { diagnostics: diagRel });
    };

    const img = await readFitsImage(state.outputs.stacked_rgb!);
    if (img.planes < 3) return fail(`stacked_rgb has ${img.planes} plane(s), need 3`);
    const { width, height } = img;
    const n = width * height;
    const planes = [0, 1, 2].map((c) => img.data.subarray(c * n, (c + 1) * n));
    ctx.progress(1, 5, 'mask');

    const fwhms = includedFrames(state)
      .map((f) => f.metrics?.fwhm)
      .filter((v): v is number => v !== undefined && Number.isFinite(v) && v > 0);
    const seeing = fwhms.length > 0 ? median(fwhms) : null;
    const geo = tileGeometry(width, height, state.config.tile, seeing, 'median_frame_fwhm');
    diag.tile_geometry = geo;

    const mask = objectMask(planes, width, height, geo.tile_px, cfg.star_dilate_px);
    ctx.checkCancelled();
    ctx.progress(2, 5, 'samples');
    Object.assign(diag, { image: { width, height }, mask: { masked_fraction: mask.masked_fraction, luminance_noise: mask.noise } });
    const minSamples = cfg.min_valid_samples_for_apply;
    const method: FitMethod = cfg.method === 'autobge' ? 'rbf' : cfg.fit_method === 'poly' ? 'poly' : 'rbf';
    const scale = Math.max(width, height);
    let points: GridPoint[];
    let pointsKind: 'tiles' | 'grid_cells' | 'autobge_placed';
    let summary: Record<string, unknown>;
    if (cfg.method === 'autobge') {
      // Samples placed by descent toward background, screened by the stage-one polynomial.
      const pl = placeSamples(planes, mask.mask, width, height, geo, cfg.sample_quantile, mask.noise, cfg.poly_order, cfg.autobge);
      diag.placement = placementDiagnostics(pl);
      diag.samples = { starts: pl.starts, valid: pl.accepted.length, valid_fraction: pl.accepted.length / Math.max(1, pl.starts) };
      if (pl.accepted.length < minSamples || pl.accepted.length < cfg.min_valid_sample_fraction * pl.starts) {
        return fail(`too few valid background samples: ${pl.accepted.length} of ${pl.starts} AutoBGE samples (need ≥ ${minSamples} and ≥ ${cfg.min_valid_sample_fraction * 100}%)`);
      }
      points = pl.accepted.map((t) => ({ x: t.x, y: t.y, values: t.values, tiles: 1 }));
      pointsKind = 'autobge_placed';
      const pd = diag.placement as { moved: { count: number; median_px: number | null }; rejected: Record<string, number> };
      summary = {
        samples_valid: pl.accepted.length,
        samples_total: pl.starts,
        sample_spacing_px: Math.round(pl.spacing_px),
        samples_moved: pd.moved.count,
        moved_median_px: pd.moved.median_px,
        rejected_masked: pd.rejected.masked,
        rejected_duplicate: pd.rejected.duplicate,
        rejected_bright_structure: pd.rejected.bright_structure,
      };
    } else {
      const { samples, tiles } = tileSamples(planes, mask.mask, width, height, geo, cfg.sample_quantile);
      const grid = gridCells(samples, width, height, geo.tile_px, cfg.grid_cells);
      Object.assign(diag, {
        samples: { tiles, valid: samples.length, valid_fraction: tiles > 0 ? samples.length / tiles : 0 },
        grid: { spacing_px: grid.spacing, cols: grid.cols, rows: grid.rows, cells_used: grid.points.length },
      });
      if (samples.length < minSamples || samples.length < cfg.min_valid_sample_fraction * tiles) {
        return fail(`too few valid background samples: ${samples.length} of ${tiles} tiles (need ≥ ${minSamples} and ≥ ${cfg.min_valid_sample_fraction * 100}%)`);
      }
      // Tile samples are the fit points while a dense spline solve on them stays cheap; larger
      // images fit the grid-cell aggregates (bge.grid_cells, spacing G) instead.
      const fitOnTiles = samples.length <= MAX_FIT_POINTS;
      points = fitOnTiles ? samples.map((t) => ({ x: t.x, y: t.y, values: t.values, tiles: 1 })) : grid.points;
      pointsKind = fitOnTiles ? 'tiles' : 'grid_cells';
      summary = { grid_spacing_px: grid.spacing, samples_valid: samples.length, samples_total: tiles };
    }
    ctx.checkCancelled();
    ctx.progress(3, 5, 'fit');
    const fits: ChannelFit[] = [];
    for (let c = 0; c < 3; c++) {
      const f = fitChannel(points, c, method, cfg.poly_order, scale, RBF_LAMBDA, IRLS_NOISE_FLOOR * mask.noise);
      if (!f) return fail(`surface fit of channel ${CHANNELS[c]} failed (${points.length} cells, method ${method})`);
      fits.push(f);
    }
    ctx.checkCancelled();
    ctx.progress(4, 5, 'apply');

    const out = new Float32Array(3 * n);
    const channels: Record<string, unknown>[] = [];
    for (let c = 0; c < 3; c++) {
      const s = renderSurface(fits[c]!.surface, width, height);
      const stride = Math.max(1, Math.floor(n / 200_000));
      const sub: number[] = [];
      let lo = Infinity;
      let hi = -Infinity;
      for (let i = 0; i < n; i += stride) {
        const v = s[i]!;
        sub.push(v);
        if (v < lo) lo = v;
        if (v > hi) hi = v;
      }
      const level = median(sub);
      const src = planes[c]!;
      const dst = out.subarray(c * n, (c + 1) * n);
      for (let i = 0; i < n; i++) dst[i] = src[i]! - s[i]! + level;
      const f = fits[c]!;
      channels.push({ channel: CHANNELS[c], sky_level: level, gradient_min: lo, gradient_max: hi, gradient_amplitude: hi - lo, residual_rms: f.residual_rms, residual_sigma: f.residual_sigma, irls_iterations: f.iterations, outlier_cells: f.outliers });
      ctx.checkCancelled();
    }

    const header = img.header.clone();
    header.addHistory(`skystack BGE: method ${cfg.method}, fit ${method}, tile ${geo.tile_px}px, ${points.length} ${pointsKind} fit points (${summary.samples_valid}/${summary.samples_total} samples); sky level kept`);
    const outFile = inRunFolder(state.folder, outRel);
    await writeFits(outFile, { width, height, planes: 3, data: out }, { header });
    state.outputs.stacked_rgb_bge = outFile;
    addArtifact(state, 'stacked_rgb_bge', 'BGE', outRel);

    const residualRms = Math.sqrt(fits.reduce((a, f) => a + f.residual_rms ** 2, 0) / 3);
    Object.assign(diag, {
      success: true,
      failure_reason: null,
      fit: { method, points: pointsKind, points_fitted: points.length, residual_rms: residualRms },
      channels,
      output: outRel,
      duration_ms: Date.now() - started,
    });
    await writeJsonAtomic(diagFile, diag);
    addArtifact(state, 'bge_diagnostics', 'BGE', diagRel);
    state.summaries.BGE = {
      success: true,
      method: cfg.method,
      tile_px: geo.tile_px,
      ...summary,
      residual_rms: residualRms,
      gradient_amplitude: channels.map((c) => c.gradient_amplitude),
    };
    ctx.progress(5, 5, 'done');
    return ok({ output: outRel, samples: summary.samples_valid, residual_rms: residualRms });
  },
};

/** bge_diagnostics.json `placement`: where the AutoBGE samples ended and why some were dropped. */
function placementDiagnostics(pl: Placement): Record<string, unknown> {
  const moved = pl.all.filter((s) => s.status !== 'masked').map((s) => s.moved_px).sort((a, b) => a - b);
  const q = (f: number) => (moved.length > 0 ? round1(moved[Math.min(moved.length - 1, Math.floor(f * moved.length))]!) : null);
  const count = (st: string) => pl.all.filter((s) => s.status === st).length;
  return {
    starts: pl.starts,
    spacing_px: round1(pl.spacing_px),
    reach_px: pl.reach_px,
    descent_smoothing_px: pl.smoothing_px,
    accepted: count('accepted') + count('restored_for_coverage'),
    moved: { count: moved.filter((m) => m > 0).length, mean_px: moved.length > 0 ? round1(moved.reduce((a, m) => a + m, 0) / moved.length) : null, median_px: q(0.5), p90_px: q(0.9), max_px: moved.length > 0 ? round1(moved[moved.length - 1]!) : null },
    rejected: { masked: count('masked'), duplicate: count('duplicate'), bright_structure: count('bright_structure') },
    restored_for_coverage: count('restored_for_coverage'),
    stage1: { method: 'rbf', lambda: STAGE1_LAMBDA, clip_sigma: pl.clip_sigma, residual_sigma: pl.stage1_residual_sigma },
    descent_trend: { method: 'rbf', lambda: TREND_LAMBDA },
    // One row per start point: final position, start, distance moved, descent steps, status.
    samples: pl.all.map((s) => ({ x: round1(s.x), y: round1(s.y), start_x: round1(s.start_x), start_y: round1(s.start_y), moved_px: round1(s.moved_px), steps: s.steps, status: s.status, ...(s.residual !== null ? { residual: Number(s.residual.toPrecision(4)) } : {}) })),
  };
}

const round1 = (v: number) => Math.round(v * 10) / 10;
