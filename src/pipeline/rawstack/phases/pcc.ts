// PCC (seed "Postprocess switches" 3, docs/pcc.md): photometric colour
// calibration of the linear RGB stack against a star catalogue — `pcc.catalog_file` when set,
// else the installed catalogue package (src/astro/catalog/find.ts: kstars-data) — through the
// library entry point runPccOnFile (src/astro/pcc-file.ts). Writes outputs/stacked_rgb_pcc.fits
// and artifacts/preprocess/pcc_diagnostics.json (on success, failure and data skips).
//
// Invariants:
// - Input: the BGE output when BGE wrote one (it runs before PCC), else stacked_rgb.
// - WCS: the solve ASTROMETRY left on the run state (`state.wcs`, when that field exists), else the
//   TAN WCS in the input's (or stacked_rgb's) header, accepted only when ASTROMETRY ended ok or
//   the header says PLTSOLVD = T, so a capture program's pointing guess is never taken for a solve.
// - Skips (seed skip table): disabled; no_rgb_stack; no_wcs; no_catalog_stars (no catalogue at all,
//   or fewer than pcc.min_stars catalogue stars on the image). Errors (the run goes on: PCC is optional):
//   an unreadable or malformed catalogue/image → input_error; a fit rejected by its guards (too
//   few usable stars, compressed or inverted colours, residual, condition number) → fit_failed.
//   Any non-ok outcome makes HMS skip when hypermetric_stretch.require_successful_pcc is true
//   (phases/hms.ts), and the summary says so for the report.
// - pcc.fallback star_white: after a lack of data (no WCS, no catalogue, too few catalogue or
//   usable stars) the non-photometric white balance (src/astro/star-white.ts) writes
//   outputs/stacked_rgb_starwhite.fits, with a warning; the phase keeps its skip/error outcome
//   (a white balance is not a colour calibration) and names the fallback in its details.
// - The summary carries the factors, the FWHM source and the colour-relation plot data.

import { existsSync } from 'node:fs';
import { chooseCatalog } from '../../../astro/catalog/find.js';
import { isDataLack, isPccError, runPccOnFile, runStarWhiteOnFile, type PccResult } from '../../../astro/pcc-file.js';
import type { PccErrorCode } from '../../../astro/pcc-errors.js';
import { TanWcs } from '../../../astro/wcs.js';
import { readFitsHeader } from '../../../fits/index.js';
import { writeJsonAtomic } from '../../atomic.js';
import { CancelledError, failed, ok, skipped, type PhaseContext } from '../../phase.js';
import { postprocessGate } from '../postprocess-gate.js';
import type { RawStackPhase, RawStackOutcome, RawStackReasonCode } from '../reasons.js';
import type { RawStackState } from '../state.js';
import { addArtifact } from '../../artifacts.js';
import { inRunFolder } from '../../run-folder.js';
import { artifactPath, outputPath } from '../../../shared/run-layout.js';

/** Most stars in the report's colour plots. */
const PLOT_STARS = 400;

/** The solved WCS for the PCC input, or null. */
async function findWcs(ctx: PhaseContext<RawStackState>, input: string): Promise<{ wcs: TanWcs; from: string } | null> {
  const { state } = ctx;
  const onState = (state as RawStackState & { wcs?: unknown }).wcs;
  if (onState instanceof TanWcs) return { wcs: onState, from: 'astrometry' };
  const solvedRun = ctx.outcomes.get('ASTROMETRY')?.status === 'ok';
  for (const file of [input, state.outputs.stacked_rgb!]) {
    try {
      const { header: h } = await readFitsHeader(file);
      const wcs = TanWcs.fromHeader(h);
      if (wcs && (solvedRun || h.getBoolean('PLTSOLVD') === true)) return { wcs, from: `header:${file === input ? 'input' : 'stacked_rgb'}` };
    } catch {
      // An unreadable header is reported by runPccOnFile when it reads the image.
    }
  }
  return null;
}

/** One colour relation for the report: each star's catalogue and calibrated image colour index. */
export interface ColourRelation {
  /** x: −2.5·log10 of the catalogue ratio relative to the white reference (0 = white reference); y: the same of the calibrated image ratio. A camera with the catalogue's bands lies on y = x, the fit on y = slope·x. */
  points: { x: number; y: number; used: boolean }[];
  slope: number;
  scatter: number;
  slope_fixed: boolean;
}

/**
 * The colour relations of the fit as magnitudes: x = −2.5·log10(catalogue ratio / white), y =
 * −2.5·log10(calibrated image ratio). The fitted log–log line through the white reference is
 * y = slope·x in these units, its scatter the robust ln residual × 1.0857 (magnitudes).
 */
export function colourRelations(r: PccResult): { rg: ColourRelation; bg: ColourRelation } {
  const [kr, kg, kb] = r.factors;
  const mag = (v: number) => Number((-2.5 * Math.log10(v)).toFixed(4));
  const stars = r.stars.filter((s) => s.image_rg > 0 && s.image_bg > 0).slice(0, PLOT_STARS);
  const rel = (key: 'rg' | 'bg', k: number): ColourRelation => ({
    points: stars.map((s) => ({ x: mag(key === 'rg' ? s.catalog_rg : s.catalog_bg), y: mag(((key === 'rg' ? s.image_rg : s.image_bg) * k) / kg), used: s.used })).filter((p) => Number.isFinite(p.x) && Number.isFinite(p.y)),
    slope: Number(r.lines[key].slope.toFixed(4)),
    scatter: Number((1.0857 * r.lines[key].residual_rms).toFixed(4)),
    slope_fixed: r.lines[key].slope_fixed,
  });
  return { rg: rel('rg', kr), bg: rel('bg', kb) };
}

/** Skip reasons and error reasons of the PCC failure codes. */
function outcomeOf(code: PccErrorCode): { status: 'skipped' | 'error'; reason: RawStackReasonCode } {
  switch (code) {
    case 'PCC_NO_WCS':
      return { status: 'skipped', reason: 'no_wcs' };
    case 'PCC_NO_CATALOG':
    case 'PCC_NO_CATALOG_STARS':
      return { status: 'skipped', reason: 'no_catalog_stars' };
    case 'PCC_TOO_FEW_STARS':
    case 'PCC_BAD_RESIDUAL':
    case 'PCC_ILL_CONDITIONED':
    case 'PCC_COMPRESSED_COLOURS':
    case 'PCC_INVERTED_COLOURS':
      return { status: 'error', reason: 'fit_failed' };
    case 'PCC_WRITE_FAILED':
      return { status: 'error', reason: 'exception' };
    default:
      return { status: 'error', reason: 'input_error' };
  }
}

export const pccPhase: RawStackPhase = {
  name: 'PCC',
  optional: true,
  // Input RGB, the calibrated copy, the luminance for star detection and the sampled statistics.
  memory(ctx) {
    const px = (ctx.state.width ?? 0) * (ctx.state.height ?? 0);
    return { hostBytes: px * 4 * 9, deviceBytes: 0 };
  },
  async prepare(ctx) {
    const { state } = ctx;
    const gate = postprocessGate(state, 'pcc');
    if (gate) return gate;
  },
  async run(ctx) {
    const { state } = ctx;
    const cfg = state.config.pcc;
    const started = Date.now();
    const input = state.outputs.stacked_rgb_bge ?? state.outputs.stacked_rgb!;
    const layout = state.folder.layout;
    const inputRel = outputPath(layout, state.outputs.stacked_rgb_bge ? 'stacked_rgb_bge.fits' : 'stacked_rgb.fits');
    const DIAG = artifactPath(layout, 'pcc_diagnostics.json');
    const OUT = outputPath(layout, 'stacked_rgb_pcc.fits');
    const OUT_WHITE = outputPath(layout, 'stacked_rgb_starwhite.fits');
    const diagFile = inRunFolder(state.folder, DIAG);

    /**
     * Ends the phase after PCC could not calibrate (`code`); with pcc.fallback star_white and a
     * lack of data, the white balance runs first. The outcome stays the PCC's own.
     */
    const end = async (code: PccErrorCode, message: string, diagnostics?: Record<string, unknown>): Promise<RawStackOutcome> => {
      const o = outcomeOf(code);
      const summary: Record<string, unknown> = { success: false, method: 'photometric', failure_reason: code, message, stars_in_field: diagnostics?.stars_in_field ?? 0, stars_matched: diagnostics?.stars_matched ?? 0, stars_used: diagnostics?.stars_used ?? 0 };
      if (diagnostics?.fwhm_source) summary.fwhm_source = diagnostics.fwhm_source;
      if (diagnostics?.lines) summary.lines = diagnostics.lines;
      const details: Record<string, unknown> = { diagnostics: DIAG, code };
      if (!existsSync(diagFile)) {
        await writeJsonAtomic(diagFile, { success: false, method: 'photometric', used_source: cfg.catalog_file ? `catalog_file:${cfg.catalog_file}` : null, stars_matched: 0, stars_used: 0, residual_rms: null, determinant: null, condition_number: null, apply_mode: 'diagonal', input: inputRel, output: null, error: message, failure_reason: code, ...(diagnostics ?? {}) });
      }
      addArtifact(state, 'pcc_diagnostics', 'PCC', DIAG);
      let text = message;
      if (cfg.fallback === 'star_white' && isDataLack(code)) {
        try {
          const w = await runStarWhiteOnFile({ input, output: inRunFolder(state.folder, OUT_WHITE), failure: { code, message, ...(diagnostics ? { diagnostics } : {}) }, diagnosticsFile: diagFile, diagnosticsNames: { input: inputRel, output: OUT_WHITE }, config: cfg, signal: ctx.signal });
          state.outputs.stacked_rgb_starwhite = w.output;
          addArtifact(state, 'stacked_rgb_starwhite', 'PCC', OUT_WHITE);
          summary.method = 'star_white';
          summary.star_white = { factors: w.result.factors.map((v) => Number(v.toFixed(6))), stars_used: w.result.stars_used, output: OUT_WHITE };
          details.fallback = 'star_white';
          details.output = OUT_WHITE;
          text = `${message}; pcc.fallback star_white balanced the median star colour instead (NOT photometric) into ${OUT_WHITE}`;
          ctx.warn('pcc_star_white', `PCC could not calibrate (${code}); ${OUT_WHITE} holds a non-photometric white balance on the median colour of ${w.result.stars_used} stars`);
        } catch (e) {
          if (!isPccError(e)) throw e;
          if (e.code === 'PCC_CANCELLED') throw new CancelledError();
          summary.star_white = { failure_reason: e.code, error: e.message };
          ctx.warn('pcc_star_white_failed', `pcc.fallback star_white did not run: ${e.message}`);
        }
      }
      state.summaries.PCC = summary;
      return o.status === 'skipped' ? skipped(o.reason, text, details) : failed(o.reason, text, details);
    };

    const found = await findWcs(ctx, input);
    if (!found) return end('PCC_NO_WCS', 'PCC needs a solved WCS (ASTROMETRY did not succeed and the stack header holds no plate-solved WCS)');
    let choice;
    try {
      choice = await chooseCatalog(cfg.catalog_file);
    } catch (e) {
      if (!isPccError(e)) throw e;
      return end(e.code, e.message);
    }
    if (!choice.catalog) {
      const where = choice.installed.searched.join(', ') || 'no folders (SKYSTACK_KSTARS_DATA is empty)';
      return end('PCC_NO_CATALOG', `no star catalogue: pcc.catalog_file is not set and no catalogue package is installed (searched ${where}; Debian: apt-get install kstars-data)`, { catalog_search: choice.installed });
    }
    ctx.progress(1, 3, `photometry (${choice.catalog.id})`);

    const outFile = inRunFolder(state.folder, OUT);
    try {
      const r = await runPccOnFile({ input, output: outFile, catalog: choice.catalog, diagnosticsFile: diagFile, diagnosticsNames: { input: inputRel, output: OUT }, signal: ctx.signal, config: cfg, wcs: found.wcs });
      const d = r.result;
      state.outputs.stacked_rgb_pcc = outFile;
      addArtifact(state, 'stacked_rgb_pcc', 'PCC', OUT);
      addArtifact(state, 'pcc_diagnostics', 'PCC', DIAG);
      if (d.fwhm_source === 'fallback') ctx.warn('pcc_fwhm_fallback', `PCC could not measure the stars' FWHM; apertures assume ${d.fwhm_px} px`);
      state.summaries.PCC = {
        success: true,
        method: 'photometric',
        input: inputRel,
        wcs_source: found.from,
        catalog: r.catalog.id,
        catalog_source: choice.source,
        catalog_epoch: r.catalog.epoch,
        white_reference: d.white_reference.name,
        factors: d.factors.map((v) => Number(v.toFixed(6))),
        stars_in_field: d.stars_in_field,
        stars_matched: d.stars_matched,
        stars_used: d.stars_used,
        slope_rg: Number(d.lines.rg.slope.toFixed(4)),
        slope_bg: Number(d.lines.bg.slope.toFixed(4)),
        residual_rms: Number(d.residual_rms.toPrecision(4)),
        condition_number: Number(d.condition_number.toPrecision(4)),
        fwhm_px: Number(d.fwhm_px.toFixed(3)),
        fwhm_source: d.fwhm_source,
        saturated_refused: (d.rejected.saturated ?? 0) + (d.rejected.nonlinear ?? 0),
        background_neutralized: d.background_neutralization.applied,
        colour_relations: colourRelations(d),
      };
      ctx.progress(3, 3, 'done');
      return ok({ output: OUT, diagnostics: DIAG, catalog: r.catalog.id, factors: d.factors, stars_used: d.stars_used, slopes: [d.lines.rg.slope, d.lines.bg.slope], residual_rms: d.residual_rms, duration_ms: Date.now() - started });
    } catch (e) {
      if (!isPccError(e)) throw e;
      if (e.code === 'PCC_CANCELLED') throw new CancelledError();
      return end(e.code, e.message, e.diagnostics);
    }
  },
};
