// BGE (seed "Postprocess switches" 2, predecessor.md §5.2): removes the background gradient of
// the linear RGB stack and writes outputs/stacked_rgb_bge.fits plus
// artifacts/preprocess/bge_diagnostics.json (written on success and on failure).
//
// Invariants:
// - Runs only with an RGB stack (mono → skipped no_rgb_stack) and postprocess.bge true (else
//   skipped disabled). bge.method is the tiled workflow's on/off control (config schema); in Raw
//   Stack the switch decides, and `none` there runs `classic` (recorded as such).
// - The correction is additive and smooth: out_c = in_c − S_c + median(S_c) (bge-model.ts), so the
//   sky level stays, stars keep their flux and no noise is added.
// - Seeing: median `metrics.fwhm` of the included frames. Those FWHMs are measured in
//   full-resolution pixels (frame-metrics.ts), which for OSC data already is the debayered scale
//   the stack lives on, so no ×2 is applied (the predecessor doubled a half-resolution FWHM).
// - Too few valid samples → phase error (an optional phase: the run goes on), diagnostics kept.
// - One stacked image (three planes) is held in memory, never frames.
//
// Methods: `classic` — tile samples (or, past MAX_FIT_POINTS samples, their grid cells) →
// robust surface (bge.fit_method).
// `autobge` — the same samples, then a two-stage model as the predecessor's AutoBGE: a robust
// order-2 polynomial first, the `AUTOBGE_BRIGHT_FRACTION` of cells lying furthest above it (dim-
// area preference: bright cells are nebula or glow, not sky) dropped, then the rbf surface.

import { join } from 'node:path';
import { readFitsImage, writeFits } from '../../../fits/index.js';
import { writeJsonAtomic } from '../../atomic.js';
import { failed, ok, skipped, type Phase } from '../../phase.js';
import { fitChannel, gridCells, median, objectMask, renderSurface, tileGeometry, tileSamples, type ChannelFit, type FitMethod, type GridPoint } from '../bge-model.js';
import { includedFrames, type RawStackState } from '../state.js';
import { addArtifact } from './report.js';

/** Thin-plate smoothing (coordinates normalised by the long side); IRLS divides it by the weight. */
export const RBF_LAMBDA = 1e-3;
/** Most fit points for which the tile samples are fitted directly (dense (n+6)² solve per IRLS round). */
export const MAX_FIT_POINTS = 600;
/** Huber δ floor as a fraction of the luminance pixel noise (see fitChannel). */
const IRLS_NOISE_FLOOR = 0.1;
const AUTOBGE_BRIGHT_FRACTION = 0.2;
const CHANNELS = ['R', 'G', 'B'];

export const bgePhase: Phase<RawStackState> = {
  name: 'BGE',
  optional: true,
  // Whole-image work on one stack: input and output RGB, luminance, residual, surface and mask.
  memory(ctx) {
    const px = (ctx.state.width ?? 0) * (ctx.state.height ?? 0);
    return { hostBytes: px * 4 * 10 + px, deviceBytes: 0 };
  },
  async prepare(ctx) {
    const { state } = ctx;
    if (!state.config.postprocess.bge) return skipped('disabled', 'postprocess.bge is false');
    if (!state.outputs.stacked_rgb) return skipped('no_rgb_stack', 'no RGB stack (mono data or stacking did not produce one)');
  },
  async run(ctx) {
    const { state } = ctx;
    const cfg = { ...state.config.bge, method: state.config.bge.method === 'none' ? ('classic' as const) : state.config.bge.method };
    const started = Date.now();
    const diagFile = join(state.folder.artifactsDir, 'bge_diagnostics.json');
    const diag: Record<string, unknown> = { success: false, method: cfg.method, method_requested: state.config.bge.method, input: 'outputs/stacked_rgb.fits', effective: { bge: { ...cfg, rbf_lambda: RBF_LAMBDA }, tile: { ...state.config.tile } } };
    const fail = async (message: string, extra: Record<string, unknown> = {}) => {
      Object.assign(diag, { success: false, failure_reason: message, ...extra, duration_ms: Date.now() - started });
      await writeJsonAtomic(diagFile, diag);
      addArtifact(state, 'bge_diagnostics', 'BGE', 'artifacts/preprocess/bge_diagnostics.json');
      state.summaries.BGE = { success: false, failure_reason: message };
      return failed('input_error', `BGE: ${message}`, { diagnostics: 'artifacts/preprocess/bge_diagnostics.json' });
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
    const { samples, tiles } = tileSamples(planes, mask.mask, width, height, geo, cfg.sample_quantile);
    const grid = gridCells(samples, width, height, geo.tile_px, cfg.grid_cells);
    Object.assign(diag, {
      image: { width, height },
      mask: { masked_fraction: mask.masked_fraction, luminance_noise: mask.noise },
      samples: { tiles, valid: samples.length, valid_fraction: tiles > 0 ? samples.length / tiles : 0 },
      grid: { spacing_px: grid.spacing, cols: grid.cols, rows: grid.rows, cells_used: grid.points.length },
    });
    const minSamples = cfg.min_valid_samples_for_apply;
    if (samples.length < minSamples || samples.length < cfg.min_valid_sample_fraction * tiles) {
      return fail(`too few valid background samples: ${samples.length} of ${tiles} tiles (need ≥ ${minSamples} and ≥ ${cfg.min_valid_sample_fraction * 100}%)`);
    }
    ctx.checkCancelled();
    ctx.progress(3, 5, 'fit');

    const method: FitMethod = cfg.fit_method === 'poly' ? 'poly' : 'rbf';
    const scale = Math.max(width, height);
    // Tile samples are the fit points while a dense spline solve on them stays cheap; larger
    // images fit the grid-cell aggregates (bge.grid_cells, spacing G) instead.
    const fitOnTiles = samples.length <= MAX_FIT_POINTS;
    let points: GridPoint[] = fitOnTiles ? samples.map((t) => ({ x: t.x, y: t.y, values: t.values, tiles: 1 })) : grid.points;
    let excluded = 0;
    if (cfg.method === 'autobge') {
      // Stage 1: robust quadratic on the luminance of the cells; drop the brightest residuals.
      const lumPts = points.map((p) => ({ ...p, values: [(p.values[0]! + p.values[1]! + p.values[2]!) / 3] }));
      const stage1 = fitChannel(lumPts, 0, 'poly', 2, scale, RBF_LAMBDA, IRLS_NOISE_FLOOR * mask.noise);
      if (stage1) {
        const resid = points.map((p, i) => lumPts[i]!.values[0]! - stage1.surface.at(p.x, p.y));
        const order = resid.map((r, i) => [r, i] as const).sort((a, b) => b[0] - a[0]);
        const drop = new Set(order.slice(0, Math.floor(AUTOBGE_BRIGHT_FRACTION * points.length)).map(([, i]) => i));
        excluded = drop.size;
        points = points.filter((_, i) => !drop.has(i));
      }
    }
    const fits: ChannelFit[] = [];
    for (let c = 0; c < 3; c++) {
      const f = fitChannel(points, c, cfg.method === 'autobge' ? 'rbf' : method, cfg.poly_order, scale, RBF_LAMBDA, IRLS_NOISE_FLOOR * mask.noise);
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
    header.addHistory(`skystack BGE: method ${cfg.method}, fit ${cfg.method === 'autobge' ? 'poly2+rbf' : method}, tile ${geo.tile_px}px, grid ${grid.spacing}px, ${samples.length}/${tiles} samples; sky level kept`);
    const outFile = join(state.folder.outputsDir, 'stacked_rgb_bge.fits');
    await writeFits(outFile, { width, height, planes: 3, data: out }, { header });
    state.outputs.stacked_rgb_bge = outFile;
    addArtifact(state, 'stacked_rgb_bge', 'BGE', 'outputs/stacked_rgb_bge.fits');

    const residualRms = Math.sqrt(fits.reduce((a, f) => a + f.residual_rms ** 2, 0) / 3);
    Object.assign(diag, {
      success: true,
      failure_reason: null,
      fit: { method: cfg.method === 'autobge' ? 'poly2+rbf' : method, points: fitOnTiles ? 'tiles' : 'grid_cells', points_fitted: points.length, autobge_bright_cells_excluded: excluded, residual_rms: residualRms },
      channels,
      output: 'outputs/stacked_rgb_bge.fits',
      duration_ms: Date.now() - started,
    });
    await writeJsonAtomic(diagFile, diag);
    addArtifact(state, 'bge_diagnostics', 'BGE', 'artifacts/preprocess/bge_diagnostics.json');
    state.summaries.BGE = {
      success: true,
      method: cfg.method,
      tile_px: geo.tile_px,
      grid_spacing_px: grid.spacing,
      samples_valid: samples.length,
      samples_total: tiles,
      residual_rms: residualRms,
      gradient_amplitude: channels.map((c) => c.gradient_amplitude),
    };
    ctx.progress(5, 5, 'done');
    return ok({ output: 'outputs/stacked_rgb_bge.fits', samples: samples.length, residual_rms: residualRms });
  },
};
