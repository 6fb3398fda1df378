// REGISTRATION (never skipped): the global affine transform of every included frame onto the
// reference, by triangle-similarity star matching (registration.ts: voting, RANSAC, all-star
// clipped least squares) on the star lists REFERENCE_SELECTION stored. The reference gets the
// identity. A frame that does not register is excluded `registration_failed` with the typed
// code and detail (too_few_stars, no_match, degenerate, residual_too_large) and the run goes on;
// if no frame but the reference registers (and there were others) the phase ends in error
// `registration_error`.
// Writes: frame.registration {ok, matrix (frame → reference pixel), matched, residual_rms_px,
// code?, detail?}, exclusions, registration.json (registration_cc still null; QUALITY_ANALYSIS
// rewrites it), state.summaries.REGISTRATION.
// Pure CPU, ~10–50 ms a frame: with parallel_workers > 1 the frames are matched on frame
// workers (stages/frames/tasks.ts `register`, same function, same result), else on the main thread,
// yielding to the event loop between frames so a cancel (signal) is seen within one frame.

import { identity } from '../../../algorithms/affine.js';
import { failed, ok } from '../../phase.js';
import type { RawStackPhase } from '../reasons.js';
import { medianOf } from '../quality-artifacts.js';
import { registrationJsonPath, writeRegistrationJson } from '../registration-artifact.js';
import { type RegisterTaskResult } from '../../stages/frames/tasks.js';
import { FrameWorkers, mapFrames } from '../../stages/frames/workers.js';
import { exclude, includedFrames, type FrameRecord } from '../state.js';

const yieldToLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export const registrationPhase: RawStackPhase = {
  name: 'REGISTRATION',
  optional: false,
  async run(ctx) {
    const { state } = ctx;
    const reference = state.referenceIndex !== null ? state.frames[state.referenceIndex] : undefined;
    if (!reference || !reference.stars || reference.status !== 'included') {
      return failed('registration_error', 'no reference frame with stars (REFERENCE_SELECTION chose none)');
    }
    const frames = includedFrames(state);
    const failures: Record<string, number> = {};
    const matchMs: number[] = [];
    const residuals: number[] = [];
    let registered = 0;
    let done = 0;
    const refPacked = reference.stars.xyf;
    const others = frames.filter((f) => f !== reference && f.stars).length;
    const workers = new FrameWorkers(Math.min(state.config.runtime_limits.parallel_workers, Math.max(1, others)));
    // Each frame's outcome, in input order (mapFrames hands results back in order).
    const record = (f: FrameRecord): void => {
      const reg: NonNullable<typeof f.registration> = f.registration!;
      if (reg.ok) {
        registered++;
        if (f !== reference && reg.residual_rms_px !== null) residuals.push(reg.residual_rms_px);
        ctx.frame(f.index, f.name, 'ok', undefined, { matched_stars: reg.matched, residual_rms_px: reg.residual_rms_px === null ? null : Number(reg.residual_rms_px.toFixed(4)) });
      } else {
        const code = reg.code ?? 'no_match';
        failures[code] = (failures[code] ?? 0) + 1;
        exclude(f, 'registration_failed', `${code}: ${reg.detail ?? 'registration failed'}`);
        ctx.frame(f.index, f.name, 'excluded', 'registration_failed', { registration_code: code });
      }
      ctx.progress(++done, frames.length, 'match');
    };
    try {
      await mapFrames(
        frames,
        workers.size,
        ctx.signal,
        async (f): Promise<RegisterTaskResult | null> => {
          if (f === reference || !f.stars) return null;
          if (!workers.threaded) await yieldToLoop(); // a cancel is seen between frames
          return (await workers.run({ kind: 'register', reference: refPacked, stars: f.stars.xyf })) as RegisterTaskResult;
        },
        (f, task) => {
          if (f === reference) {
            f.registration = { ok: true, matrix: identity(), matched: reference.stars!.xyf.length / 3, residual_rms_px: 0 };
          } else if (!task) {
            // Cannot happen after REFERENCE_SELECTION (frames without stars are excluded there).
            f.registration = { ok: false, matrix: null, matched: 0, residual_rms_px: null, code: 'too_few_stars', detail: 'the frame has no star list' };
          } else {
            const r = task.result;
            matchMs.push(task.ms);
            f.registration = r.ok
              ? { ok: true, matrix: r.matrix, matched: r.matched, residual_rms_px: r.residual_rms_px }
              : { ok: false, matrix: null, matched: 0, residual_rms_px: null, code: r.code, detail: r.detail };
          }
          record(f);
        },
      );
    } finally {
      await workers.close();
    }
    await writeRegistrationJson(state, 'REGISTRATION');
    const details = {
      n_frames: frames.length,
      n_registered: registered,
      n_failed: frames.length - registered,
      failures,
      reference_index: reference.index,
      engine: 'triangle_similarity',
      median_residual_rms_px: Number.isFinite(medianOf(residuals)) ? Number(medianOf(residuals).toFixed(4)) : null,
      timing: { match_ms: Number.isFinite(medianOf(matchMs)) ? Math.round(medianOf(matchMs) * 10) / 10 : null },
      registration_json: registrationJsonPath(state.folder.layout),
    };
    state.summaries.REGISTRATION = details;
    if (frames.length > 1 && registered <= 1) {
      return failed('registration_error', `no frame registered onto the reference ${reference.name} (${frames.length - 1} tried)`, details);
    }
    return ok(details);
  },
};
