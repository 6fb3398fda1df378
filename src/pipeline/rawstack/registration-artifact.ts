// artifacts/preprocess/registration.json (issue 5 item 5, fixed shape, read by outside tools):
//   {reference_index, reference_file,
//    frames: [{index, file, matrix, matched_stars, residual_rms_px, registration_cc, status, reason?}]}
// One entry per INPUT frame in input order. `matrix` is [[a, b, c], [d, e, f]] mapping frame
// pixel coordinates (0-based, x = column, y = row) to reference pixel coordinates, null when the
// frame has no transform. `status`: `registered` (matrix valid; the reference has the identity),
// `failed` (registration was tried and failed; `reason` is its typed code: too_few_stars,
// no_match, degenerate, residual_too_large) or `skipped` (excluded before registration; `reason`
// is the frame's exclusion code: unreadable, size_mismatch, calibration_failed, no_stars).
// `registration_cc` is null until QUALITY_ANALYSIS: REGISTRATION writes the file first, and
// QUALITY_ANALYSIS rewrites it with the correlations, so a run stopped in between still has the
// matrices. `file` is the input file name. Written atomically.

import { artifactPath, type RunLayout } from '../../shared/run-layout.js';
import { writeJsonAtomic } from '../atomic.js';
import type { Affine } from '../../algorithms/affine.js';
import { addArtifact } from '../artifacts.js';
import { inRunFolder } from '../run-folder.js';
import type { FrameRecord, RawStackState } from './state.js';

/** Where registration.json lies in a run folder. */
export const registrationJsonPath = (layout: RunLayout): string => artifactPath(layout, 'registration.json');

export interface RegistrationJsonFrame {
  index: number;
  file: string;
  matrix: Affine | null;
  matched_stars: number;
  residual_rms_px: number | null;
  registration_cc: number | null;
  status: 'registered' | 'failed' | 'skipped';
  reason?: string;
}

export interface RegistrationJson {
  reference_index: number | null;
  reference_file: string | null;
  frames: RegistrationJsonFrame[];
}

const finiteOrNull = (v: number | null | undefined): number | null => (typeof v === 'number' && Number.isFinite(v) ? v : null);

function entry(f: FrameRecord): RegistrationJsonFrame {
  const r = f.registration;
  const base = { index: f.index, file: f.name, registration_cc: finiteOrNull(f.metrics?.registration_cc) };
  if (r?.ok && r.matrix) {
    return { ...base, matrix: r.matrix, matched_stars: r.matched, residual_rms_px: finiteOrNull(r.residual_rms_px), status: 'registered' };
  }
  if (r) return { ...base, matrix: null, matched_stars: r.matched, residual_rms_px: null, registration_cc: null, status: 'failed', reason: r.code ?? 'registration_failed' };
  return { ...base, matrix: null, matched_stars: 0, residual_rms_px: null, registration_cc: null, status: 'skipped', reason: f.exclusions[0]?.code ?? 'not_registered' };
}

export function registrationJson(state: RawStackState): RegistrationJson {
  const ref = state.referenceIndex !== null ? state.frames[state.referenceIndex] : undefined;
  return { reference_index: ref ? ref.index : null, reference_file: ref ? ref.name : null, frames: state.frames.map(entry) };
}

export async function writeRegistrationJson(state: RawStackState, phase: string): Promise<void> {
  const path = registrationJsonPath(state.folder.layout);
  await writeJsonAtomic(inRunFolder(state.folder, path), registrationJson(state));
  addArtifact(state, 'registration', phase, path);
}
