// PCC (seed "Postprocess switches" 3, predecessor.md §5.3, DESIGN §8): photometric colour
// calibration of the linear RGB stack against the local catalogue `pcc.catalog_file`, through the
// library entry point runPccOnFile (src/astro/pcc-file.ts). Writes outputs/stacked_rgb_pcc.fits
// and artifacts/preprocess/pcc_diagnostics.json (on success, failure and data skips).
//
// Invariants:
// - Input: the BGE output when BGE wrote one (it runs before PCC), else stacked_rgb.
// - WCS: the solve ASTROMETRY left on the run state (`state.wcs`, when that field exists), else the
//   TAN WCS in the input's (or stacked_rgb's) header, accepted only when ASTROMETRY ended ok or
//   the header says PLTSOLVD = T, so a capture program's pointing guess is never taken for a solve.
// - Skips (seed skip table): disabled; no_rgb_stack; no_wcs; no_catalog_stars (no catalogue file
//   configured, or none of its stars on the image). Errors (the run goes on, DESIGN §5): an
//   unreadable or malformed catalogue/image → input_error; a fit rejected by its guards (too few
//   stars, residual, condition number) → fit_failed. Any non-ok outcome makes HMS skip when
//   hypermetric_stretch.require_successful_pcc is true (phases/hms.ts).
// - The summary carries the factors and the star colour plot data for the REPORT.

import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { isPccError, runPccOnFile } from '../../../astro/pcc-file.js';
import type { PccResult } from '../../../astro/pcc-types.js';
import { TanWcs } from '../../../astro/wcs.js';
import { readFitsHeader } from '../../../fits/index.js';
import { writeJsonAtomic } from '../../atomic.js';
import { CancelledError, failed, ok, skipped, type Phase, type PhaseContext, type PhaseOutcome } from '../../phase.js';
import type { RawStackState } from '../state.js';
import { addArtifact } from './report.js';

const DIAG = 'artifacts/preprocess/pcc_diagnostics.json';
const OUT = 'outputs/stacked_rgb_pcc.fits';
/** Most stars in the report's colour plot. */
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

/** Star colour plot: catalogue vs calibrated B−R colour index, magnitudes relative to the white reference. */
function starColours(r: PccResult): { catalog: number; measured: number }[] {
  const [kr, , kb] = r.factors;
  return r.stars
    .filter((s) => s.used)
    .slice(0, PLOT_STARS)
    .map((s) => ({
      catalog: Number((-2.5 * Math.log10(s.catalog_bg / s.catalog_rg)).toFixed(4)),
      measured: Number((-2.5 * Math.log10((kb * s.flux[2]) / (kr * s.flux[0]))).toFixed(4)),
    }))
    .filter((p) => Number.isFinite(p.catalog) && Number.isFinite(p.measured));
}

export const pccPhase: Phase<RawStackState> = {
  name: 'PCC',
  optional: true,
  // Input RGB, the calibrated copy and the sampled statistics.
  memory(ctx) {
    const px = (ctx.state.width ?? 0) * (ctx.state.height ?? 0);
    return { hostBytes: px * 4 * 7, deviceBytes: 0 };
  },
  async prepare(ctx) {
    const { state } = ctx;
    if (!state.config.postprocess.pcc) return skipped('disabled', 'postprocess.pcc is false');
    if (!state.outputs.stacked_rgb) return skipped('no_rgb_stack', 'no RGB stack (mono data or stacking did not produce one)');
  },
  async run(ctx) {
    const { state } = ctx;
    const started = Date.now();
    const input = state.outputs.stacked_rgb_bge ?? state.outputs.stacked_rgb!;
    const inputRel = state.outputs.stacked_rgb_bge ? 'outputs/stacked_rgb_bge.fits' : 'outputs/stacked_rgb.fits';
    const diagFile = join(state.folder.artifactsDir, 'pcc_diagnostics.json');
    const catalog = state.config.pcc.catalog_file;
    const skipWithDiag = async (reason: 'no_wcs' | 'no_catalog_stars', message: string): Promise<PhaseOutcome> => {
      await writeJsonAtomic(diagFile, { success: false, used_source: catalog ? `catalog_file:${catalog}` : null, stars_matched: 0, stars_used: 0, residual_rms: null, determinant: null, condition_number: null, apply_mode: 'diagonal', input: inputRel, output: null, error: message, failure_reason: reason });
      addArtifact(state, 'pcc_diagnostics', 'PCC', DIAG);
      state.summaries.PCC = { success: false, failure_reason: reason };
      return skipped(reason, message, { diagnostics: DIAG });
    };

    const found = await findWcs(ctx, input);
    if (!found) return skipWithDiag('no_wcs', 'PCC needs a solved WCS (ASTROMETRY did not succeed and the stack header holds no plate-solved WCS)');
    if (!catalog) return skipWithDiag('no_catalog_stars', 'pcc.catalog_file is not set (no local photometric catalogue)');
    ctx.progress(1, 3, 'photometry');

    const outFile = join(state.folder.outputsDir, 'stacked_rgb_pcc.fits');
    try {
      const r = await runPccOnFile({ input, output: outFile, catalogFile: catalog, diagnosticsFile: diagFile, diagnosticsNames: { input: inputRel, output: OUT }, signal: ctx.signal, config: state.config.pcc, wcs: found.wcs });
      const d = r.result;
      state.outputs.stacked_rgb_pcc = outFile;
      addArtifact(state, 'stacked_rgb_pcc', 'PCC', OUT);
      addArtifact(state, 'pcc_diagnostics', 'PCC', DIAG);
      state.summaries.PCC = {
        success: true,
        input: inputRel,
        wcs_source: found.from,
        white_reference: d.white_reference.name,
        factors: d.factors.map((v) => Number(v.toFixed(6))),
        stars_in_field: d.stars_in_field,
        stars_matched: d.stars_matched,
        stars_used: d.stars_used,
        residual_rms: Number(d.residual_rms.toPrecision(4)),
        condition_number: Number(d.condition_number.toPrecision(4)),
        fwhm_px: Number(d.fwhm_px.toFixed(3)),
        background_neutralized: d.background_neutralization.applied,
        star_colors: starColours(d),
      };
      ctx.progress(3, 3, 'done');
      return ok({ output: OUT, diagnostics: DIAG, factors: d.factors, stars_used: d.stars_used, residual_rms: d.residual_rms, duration_ms: Date.now() - started });
    } catch (e) {
      if (!isPccError(e)) throw e;
      if (e.code === 'PCC_CANCELLED') throw new CancelledError();
      if (existsSync(diagFile)) addArtifact(state, 'pcc_diagnostics', 'PCC', DIAG);
      state.summaries.PCC = { success: false, failure_reason: e.code, stars_matched: (e.diagnostics?.stars_matched as number | undefined) ?? 0, stars_used: (e.diagnostics?.stars_used as number | undefined) ?? 0 };
      const details = { diagnostics: DIAG, code: e.code };
      switch (e.code) {
        case 'PCC_NO_WCS':
          return skipped('no_wcs', e.message, details);
        case 'PCC_NO_CATALOG_STARS':
          return skipped('no_catalog_stars', e.message, details);
        case 'PCC_TOO_FEW_STARS':
        case 'PCC_BAD_RESIDUAL':
        case 'PCC_ILL_CONDITIONED':
          return failed('fit_failed', e.message, details);
        case 'PCC_WRITE_FAILED':
          return failed('exception', e.message, details);
        default:
          return failed('input_error', e.message, details);
      }
    }
  },
};
