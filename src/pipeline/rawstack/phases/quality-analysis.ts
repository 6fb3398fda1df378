// QUALITY_ANALYSIS (never skipped): completes each registered frame's quality record.
// 1. registration_cc (registration-cc.ts): the reference's correlation proxy is built once,
//    put in shared memory and handed to every task; each frame (pixelSource, read band by band
//    straight into its proxy: a quarter-frame proxy per worker, not the frame,
//    `runtime_limits.parallel_workers` at a time) gets its own proxy, warped onto the
//    reference's with its registration matrix and correlated. Bin CC_BIN = 2 for mono and OSC
//    (even, so on a mosaic every proxy pixel mixes one whole Bayer cell: a luminance proxy).
//    The reference scores 1 by definition; a correlation that cannot be computed scores 0 (the
//    filter's min_correlation then removes the frame in auto/strict/relaxed); a frame that can no
//    longer be read is excluded `unreadable`.
//    Run queue: per filter group against the group's reference (queue.ts groupReference), the
//    frame's matrix composed onto that frame; scores per group as well.
//    With local normalization on, the same bands also give each frame's LN binned planes, kept
//    for STACKING (ln-premeasured.ts) so its LN setup does not read every frame again; with only
//    the noise-model rejection, the group references' planes (their sky). Capped in bytes.
// 2. quality_score re-scored (scoreFrames) over the frames still included, so the score (and the
//    quality weights derived from it) is relative to the registered sequence and final. Frames
//    excluded earlier keep the score they got in REFERENCE_SELECTION.
// 3. One `frame` event per included frame with its final metrics; registration.json rewritten
//    with the correlations.
// Star lists: REGISTRATION was their last reader in Raw Stack (the tiled workflow, which reuses
// REGISTRATION but not this phase, keeps them to its LOCAL_METRICS), so they are released here:
// up to MAX_STORED_STARS (1500) star objects per frame, ~0.3 MB of heap at that count, held to
// the run's end otherwise: ~0.3 GB at 1000 frames (bench/RESULTS.md "memory flat in frame count").
// star_count, FWHM, eccentricity, background, noise, SNR and saturation were measured in
// REFERENCE_SELECTION (same detection; no second pass over the pixels for them).

import { composeAffine, invertAffine } from '../../../algorithms/affine.js';
import { scoreFrames } from '../../../algorithms/frame-metrics.js';
import { toShared } from '../../../cpu/worker-pool.js';
import { isFitsError } from '../../../fits/index.js';
import { failed, ok } from '../../phase.js';
import type { RawStackPhase } from '../reasons.js';
import { ccProxyAndBins, type CcTaskResult } from '../../stages/frames/tasks.js';
import { dropLnPlanes, lnPlanesHeld, lnWanted, rememberLnPlanes, wantedLnBinSpec } from '../ln-premeasured.js';
import { FrameWorkers, mapFrames } from '../../stages/frames/workers.js';
import { medianOf, metricsView } from '../quality-artifacts.js';
import { filterGroups, groupReference } from '../queue.js';
import { writeRegistrationJson } from '../registration-artifact.js';
import { exclude, includedFrames, pixelSource, type FrameRecord } from '../state.js';

/** Correlation proxy binning (even: whole Bayer cells on a mosaic). */
export const CC_BIN = 2;

const r4 = (v: number) => (Number.isFinite(v) ? Number(v.toFixed(4)) : null);

export const qualityAnalysisPhase: RawStackPhase = {
  name: 'QUALITY_ANALYSIS',
  optional: false,
  async run(ctx) {
    const { state } = ctx;
    const reference = state.referenceIndex !== null ? state.frames[state.referenceIndex] : undefined;
    if (!reference || reference.status !== 'included' || !reference.registration?.ok) {
      return failed('registration_error', 'no registered reference frame (REGISTRATION did not complete)');
    }
    for (const f of state.frames) f.stars = null;
    const frames = includedFrames(state).filter((f) => f.registration?.ok && f.metrics);
    const ccFailures: string[] = [];
    const readMs: number[] = [];
    const ccMs: number[] = [];
    let refMs = 0;
    let done = 0;
    const groups = filterGroups(state, frames);
    const total = frames.length - groups.length;
    const workers = new FrameWorkers(Math.min(state.config.runtime_limits.parallel_workers, Math.max(1, total)));
    /** Frames whose file failed to read, with the FitsError code their event carries. */
    const readFailures = new Map<FrameRecord, string>();
    // LN planes for STACKING (see the head comment); a spec that cannot be had means STACKING reads.
    dropLnPlanes(state);
    const wanted = lnWanted(state);
    try {
      // Per filter group, against the group's own reference (the common one for its own group):
      // a correlation across filters would measure the filters' difference, not the frame.
      for (const group of groups) {
        const gref = groupReference(state, group.frames) ?? reference;
        const tr = performance.now();
        let refProxy;
        try {
          const spec = await wantedLnBinSpec(state, gref, wanted, true);
          const r = await ccProxyAndBins(pixelSource(gref), CC_BIN, spec);
          refProxy = r.proxy;
          if (spec && r.lnPlanes) rememberLnPlanes(state, gref, spec, r.lnPlanes);
        } catch (e) {
          if (isFitsError(e)) return failed('input_error', `the reference frame ${gref.name} can no longer be read: ${e.message}`);
          throw e;
        }
        // Shared memory: workers read the same proxy instead of each receiving a copy.
        const sharedRef = { ...refProxy, data: toShared(refProxy.data) };
        refMs += performance.now() - tr;
        gref.metrics!.registration_cc = 1;
        // frame → group reference = (group reference → common reference)⁻¹ ∘ (frame → common reference).
        const toGroupRef = gref === reference ? null : invertAffine(gref.registration!.matrix!);
        const others = group.frames.filter((f) => f !== gref);
        await mapFrames(
          others,
          workers.size,
          ctx.signal,
          async (f) => {
            const lnBin = await wantedLnBinSpec(state, f, wanted, false);
            const task = { kind: 'cc' as const, file: pixelSource(f), matrix: toGroupRef ? composeAffine(toGroupRef, f.registration!.matrix!) : f.registration!.matrix!, bin: CC_BIN, reference: sharedRef, ...(lnBin ? { lnBin } : {}) };
            return { lnBin, r: (await workers.run(task)) as CcTaskResult };
          },
          (f, { lnBin, r }) => {
            readMs.push(r.ms.read);
            ccMs.push(r.ms.cc);
            if (r.ok) {
              f.metrics!.registration_cc = r.cc;
              if (lnBin && r.lnPlanes) rememberLnPlanes(state, f, lnBin, r.lnPlanes);
            } else if (r.code === 'unreadable') {
              exclude(f, 'unreadable', r.detail);
              if (r.fitsCode) readFailures.set(f, r.fitsCode);
            } else {
              f.metrics!.registration_cc = 0;
              ccFailures.push(`${f.name}: ${r.detail}`);
              ctx.warn('registration_cc_failed', `registration_cc of ${f.name} could not be computed (${r.detail}); set to 0`);
            }
            ctx.progress(++done, total, 'registration_cc');
          },
        );
      }
    } finally {
      await workers.close();
    }

    // Final scores relative to the frames that go on.
    const kept = frames.filter((f) => f.status === 'included');
    for (const g of filterGroups(state, kept)) {
      const scored = scoreFrames(g.frames.map((f) => f.metrics!));
      g.frames.forEach((f, i) => {
        f.metrics = scored[i]!;
      });
    }
    for (const f of frames) {
      if (f.status === 'included') ctx.frame(f.index, f.name, 'ok', undefined, metricsView(f.metrics));
      else ctx.frame(f.index, f.name, 'excluded', readFailures.get(f) ?? f.exclusions[f.exclusions.length - 1]?.code);
    }
    await writeRegistrationJson(state, 'REGISTRATION');

    const m = kept.map((f) => f.metrics!);
    const details = {
      n_frames: frames.length,
      n_analyzed: kept.length,
      n_unreadable: frames.length - kept.length,
      n_cc_failed: ccFailures.length,
      median_fwhm: r4(medianOf(m.map((x) => x.fwhm))),
      median_star_count: medianOf(m.map((x) => x.star_count)),
      median_background: r4(medianOf(m.map((x) => x.background_median))),
      median_noise: r4(medianOf(m.map((x) => x.background_rms))),
      median_eccentricity: r4(medianOf(m.map((x) => x.eccentricity))),
      median_registration_cc: r4(medianOf(m.map((x) => x.registration_cc))),
      min_registration_cc: m.length ? r4(Math.min(...m.map((x) => x.registration_cc ?? 0))) : null,
      quality_score_range: m.length ? [r4(Math.min(...m.map((x) => x.quality_score))), r4(Math.max(...m.map((x) => x.quality_score)))] : null,
      cc_bin: CC_BIN,
      // Local normalization's binned planes kept for STACKING (frames, bytes held).
      ln_premeasured: lnPlanesHeld(state),
      workers: workers.size,
      timing: { reference_proxy_ms: Math.round(refMs), read_ms: r1(medianOf(readMs)), cc_ms: r1(medianOf(ccMs)) },
    };
    state.summaries.QUALITY_ANALYSIS = details;
    if (kept.length === 0) return failed('no_frames', 'no frame left after quality analysis', details);
    return ok(details);
  },
};

const r1 = (v: number) => (Number.isFinite(v) ? Math.round(v * 10) / 10 : null);
