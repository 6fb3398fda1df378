// PCC jobs in the child process: `pcc_run` (photometric colour calibration of an RGB FITS
// with WCS against a catalogue CSV) and `pcc_apply` (a 3×3 or diagonal matrix applied to an
// RGB FITS into a new file). Failures come back as data: the PccError code and message.

import { applyColorMatrixToFile, isPccError, runPccOnFile, type PccOptions } from '../../astro/pcc-file.js';
import type { JobSpec } from './types.js';

type Result = { status: 'ok' | 'error' | 'cancelled'; message?: string; details?: Record<string, unknown> };

export async function runPccJob(spec: Extract<JobSpec, { kind: 'pcc_run' | 'pcc_apply' }>, signal: AbortSignal): Promise<Result> {
  try {
    if (spec.kind === 'pcc_run') {
      const r = await runPccOnFile({ input: spec.input, output: spec.output, catalogFile: spec.catalog_file, diagnosticsFile: spec.diagnostics_file, signal, ...(spec.config ? { config: spec.config as Partial<PccOptions> } : {}) });
      return {
        status: 'ok',
        details: { output: r.output, diagnostics_file: r.diagnosticsFile, factors: r.result.factors, matrix: r.result.matrix, stars_used: r.result.stars_used, residual_rms: r.result.residual_rms },
      };
    }
    const r = await applyColorMatrixToFile({ input: spec.input, output: spec.output, matrix: spec.matrix, signal });
    return { status: 'ok', details: { output: r.output, matrix: r.matrix } };
  } catch (e) {
    if (signal.aborted) return { status: 'cancelled', message: 'cancelled' };
    const code = isPccError(e) ? e.code : 'EXCEPTION';
    return { status: 'error', message: `${code}: ${(e as Error).message}`, details: { code } };
  }
}
