// ASTROMETRY (seed "Postprocess switches" 1): plate-solves the RGB stack
// with an external solver (src/astro/solve-image.ts → solve.ts: astrometry.net's solve-field on
// our detected stars, or ASTAP on a luminance image), then
// - writes the WCS (+ PLTSOLVD, HISTORY) into the headers of the stacked outputs present now
//   (outputs/stacked_linear.fits, outputs/stacked_rgb.fits; same pixel grid), atomically, so
//   BGE/PCC/HMS outputs, which start from stacked_rgb's header, carry it too;
// - writes artifacts/preprocess/stacked_rgb.wcs (header-only FITS) and
//   artifacts/preprocess/preprocessing_registration.json (registration summary + `astrometry`:
//   centre, scale, rotation, parity, field size, solver, index, hints, attempts, WCS cards),
//   the latter also after a failed solve (with the error), as every failing
//   optional phase;
// - exposes the WCS as `state.wcs` for PCC.
//
// Outcomes: skipped `disabled` (postprocess.astrometry false), `no_rgb_stack`, `solver_missing`
// (no solver binary or no catalogue data for the configured choice); error `solver_failed`
// (the solver ran and found nothing, crashed, or ran out of astrometry.timeout_s; the run goes
// on); a cancelled run kills the solver and ends `cancelled`.

import { prepareImageSolve } from '../../../astro/solve-image.js';
import { lookupSolvers, plateSolve, SolveError, type SolveAttempt, type SolveResult } from '../../../astro/solve.js';
import { writeWcsFile, writeWcsIntoFits } from '../../../astro/wcs-fits.js';
import { readFitsImage } from '../../../fits/index.js';
import { artifactPath, outputPath, type RunLayout } from '../../../shared/run-layout.js';
import { writeJsonAtomic } from '../../atomic.js';
import { inRunFolder } from '../../run-folder.js';
import { CancelledError, failed, ok, skipped } from '../../phase.js';
import { postprocessGate } from '../postprocess-gate.js';
import type { RawStackPhase } from '../reasons.js';
import { registrationJson, registrationJsonPath } from '../registration-artifact.js';
import type { RawStackState } from '../state.js';
import { addArtifact } from '../../artifacts.js';

/** The plate solution's diagnostics and the stack's WCS header file in a run folder. */
export const astrometryPaths = (layout: RunLayout) => ({ json: artifactPath(layout, 'preprocessing_registration.json'), wcs: artifactPath(layout, 'stacked_rgb.wcs') });
const attemptSummary = (a: SolveAttempt) => ({ solver: a.solver, mode: a.mode, solved: a.solved, exit_code: a.exitCode, duration_ms: a.durationMs, args: a.args, log: a.log });

function registrationSummary(state: RawStackState) {
  const reg = registrationJson(state);
  return {
    reference_index: reg.reference_index,
    reference_file: reg.reference_file,
    n_frames: reg.frames.length,
    n_registered: reg.frames.filter((f) => f.status === 'registered').length,
    registration_file: registrationJsonPath(state.folder.layout),
  };
}

function solvedSummary(r: SolveResult, width: number, height: number) {
  const [ra, dec] = r.wcs.centre(width, height);
  const [fw, fh] = r.wcs.fieldDeg(width, height);
  return {
    solved: true,
    solver: r.solver,
    index: r.index,
    ra,
    dec,
    pixel_scale_arcsec: r.wcs.pixelScaleArcsec,
    rotation_deg: r.wcs.rotationDeg,
    parity: r.wcs.parity,
    field_deg: [fw, fh],
    width,
    height,
    sip: r.wcs.sip !== undefined,
  };
}

export const astrometryPhase: RawStackPhase = {
  name: 'ASTROMETRY',
  optional: true,
  // One RGB stack plus its luminance and the detector's significance image.
  memory(ctx) {
    const px = (ctx.state.width ?? 0) * (ctx.state.height ?? 0);
    return { hostBytes: px * 4 * 6, deviceBytes: 0 };
  },
  async prepare(ctx) {
    const { state } = ctx;
    const gate = postprocessGate(state, 'astrometry');
    if (gate) return gate;
    const lookups = await lookupSolvers(state.config.astrometry);
    if (!lookups.some((l) => l.ok)) {
      const reasons = lookups.map((l) => (l.ok ? '' : `${l.solver}: ${l.reason}`));
      return skipped('solver_missing', `no plate solver available (astrometry.solver ${state.config.astrometry.solver}): ${reasons.join('; ')}`, { solver: state.config.astrometry.solver });
    }
  },
  async run(ctx) {
    const { state } = ctx;
    const cfg = state.config.astrometry;
    const paths = astrometryPaths(state.folder.layout);
    const started = Date.now();
    const img = await readFitsImage(state.outputs.stacked_rgb!);
    if (img.planes < 3) return failed('input_error', `stacked_rgb has ${img.planes} plane(s), need 3`);
    const { width, height } = img;
    ctx.progress(0, 3, 'detect stars');
    const prep = prepareImageSolve(img, cfg.search_radius);
    const { stars } = prep;
    const detectMs = Date.now() - started; // reading the stack included
    ctx.checkCancelled();
    const base = {
      ...registrationSummary(state),
      astrometry: {} as Record<string, unknown>,
    };
    const common = {
      config_solver: cfg.solver,
      stars_detected: stars.length,
      detection: prep.detection,
      hints: { ...prep.hints, source: prep.hintSource },
      timeout_s: cfg.timeout_s,
    };
    ctx.progress(1, 3, 'solve');
    let result: SolveResult;
    try {
      result = await plateSolve(cfg, prep.input(cfg.timeout_s, ctx.signal));
    } catch (e) {
      if (!(e instanceof SolveError)) throw e;
      if (e.code === 'cancelled') throw new CancelledError();
      base.astrometry = { solved: false, error: e.code, message: e.message, ...common, attempts: e.attempts.map(attemptSummary), duration_ms: Date.now() - started };
      await writeJsonAtomic(inRunFolder(state.folder, paths.json), base);
      addArtifact(state, 'astrometry', 'ASTROMETRY', paths.json);
      state.summaries.ASTROMETRY = { solved: false, error: e.code, stars_detected: stars.length };
      if (e.code === 'solver_missing') return skipped('solver_missing', e.message);
      return failed('solver_failed', `plate solve failed (${e.code}): ${e.message}`, { diagnostics: paths.json, solve_error: e.code });
    }
    ctx.checkCancelled();
    ctx.progress(2, 3, 'write WCS');

    const wcs = result.wcs;
    const summary = solvedSummary(result, width, height);
    const history = [`ASTROMETRY: ${result.solver}${result.index ? ` ${result.index}` : ''}, ${summary.pixel_scale_arcsec.toFixed(3)}"/px`, `  centre RA ${summary.ra.toFixed(5)} Dec ${summary.dec.toFixed(5)}, rot ${summary.rotation_deg.toFixed(2)} deg`];
    const rewritten: string[] = [];
    for (const key of ['stacked_linear', 'stacked_rgb'] as const) {
      const file = state.outputs[key];
      if (!file) continue;
      await writeWcsIntoFits(file, wcs, history);
      rewritten.push(outputPath(state.folder.layout, `${key}.fits`));
    }
    await writeWcsFile(inRunFolder(state.folder, paths.wcs), wcs, width, height);
    addArtifact(state, 'wcs', 'ASTROMETRY', paths.wcs);
    base.astrometry = {
      ...summary,
      binary: result.binary,
      data_dir: result.dataDir,
      ...common,
      attempts: result.attempts.map(attemptSummary),
      outputs_with_wcs: rewritten,
      wcs_file: paths.wcs,
      wcs: wcs.toCards(),
      detect_ms: detectMs,
      solve_ms: result.durationMs,
      duration_ms: Date.now() - started,
    };
    await writeJsonAtomic(inRunFolder(state.folder, paths.json), base);
    addArtifact(state, 'astrometry', 'ASTROMETRY', paths.json);
    state.wcs = wcs;
    const details = { ra: summary.ra, dec: summary.dec, pixel_scale_arcsec: summary.pixel_scale_arcsec, rotation_deg: summary.rotation_deg, wcs_file: paths.wcs, solver: result.solver, index: result.index, stars_detected: stars.length };
    state.summaries.ASTROMETRY = { ...details, field_deg: summary.field_deg, parity: summary.parity };
    ctx.progress(3, 3, 'done');
    return ok(details);
  },
};
