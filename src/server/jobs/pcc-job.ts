// PCC jobs in the child process: `pcc_run` (photometric colour calibration of an RGB FITS
// with WCS) and `pcc_apply` (a 3×3 or diagonal matrix applied to an RGB FITS into a new file).

import type { JobSpec } from './types.js';

export async function runPccJob(spec: Extract<JobSpec, { kind: 'pcc_run' | 'pcc_apply' }>, _signal: AbortSignal): Promise<{ status: 'ok' | 'error' | 'cancelled'; message?: string; details?: Record<string, unknown> }> {
  return { status: 'error', message: `${spec.kind} is not available in this build` };
}
