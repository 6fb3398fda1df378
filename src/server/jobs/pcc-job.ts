// PCC jobs in the child process: `pcc_run` (photometric colour calibration of an RGB FITS
// with WCS against a catalogue — the given file, else the installed package — and, when
// config.fallback is star_white and PCC lacked data, the non-photometric white balance into the
// same output, reported as method star_white) and `pcc_apply` (a 3×3 or diagonal matrix applied
// to an RGB FITS into a new file). Failures come back as data: the PccError code and message.

import { applyColorMatrixToFile, isDataLack, isPccError, runPccOnFile, runStarWhiteOnFile, type PccOptions } from '../../astro/pcc-file.js';
import type { JobSpec } from './types.js';

type Result = { status: 'ok' | 'error' | 'cancelled'; message?: string; details?: Record<string, unknown> };

export async function runPccJob(spec: Extract<JobSpec, { kind: 'pcc_run' | 'pcc_apply' }>, signal: AbortSignal): Promise<Result> {
  try {
    if (spec.kind === 'pcc_run') {
      const config = spec.config as Partial<PccOptions> | undefined;
      try {
        const r = await runPccOnFile({ input: spec.input, output: spec.output, catalogFile: spec.catalog_file, diagnosticsFile: spec.diagnostics_file, signal, ...(config ? { config } : {}) });
        return {
          status: 'ok',
          details: { method: 'photometric', output: r.output, diagnostics_file: r.diagnosticsFile, catalog: r.catalog.id, factors: r.result.factors, matrix: r.result.matrix, stars_used: r.result.stars_used, residual_rms: r.result.residual_rms, slopes: [r.result.lines.rg.slope, r.result.lines.bg.slope] },
        };
      } catch (e) {
        if (!(isPccError(e) && config?.fallback === 'star_white' && isDataLack(e.code))) throw e;
        const w = await runStarWhiteOnFile({ input: spec.input, output: spec.output, failure: { code: e.code, message: e.message, ...(e.diagnostics ? { diagnostics: e.diagnostics } : {}) }, diagnosticsFile: spec.diagnostics_file, config, signal });
        return {
          status: 'ok',
          message: `PCC could not calibrate (${e.code}); star_white fallback: a NON-photometric white balance`,
          details: { method: 'star_white', photometric: false, pcc_failure: { code: e.code, message: e.message }, output: w.output, diagnostics_file: w.diagnosticsFile, factors: w.result.factors, stars_used: w.result.stars_used },
        };
      }
    }
    const r = await applyColorMatrixToFile({ input: spec.input, output: spec.output, matrix: spec.matrix, signal });
    return { status: 'ok', details: { output: r.output, matrix: r.matrix } };
  } catch (e) {
    if (signal.aborted) return { status: 'cancelled', message: 'cancelled' };
    const code = isPccError(e) ? e.code : 'EXCEPTION';
    return { status: 'error', message: `${code}: ${(e as Error).message}`, details: { code } };
  }
}
