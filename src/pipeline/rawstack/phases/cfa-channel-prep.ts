// CFA_CHANNEL_PREP (never skipped; seed: "Bayer normalization for OSC; single-channel
// normalization for mono"): reads each included frame's pixels once (pixelSource: the
// calibrated frame when CALIBRATION wrote one, else the light) and measures, per channel, the
// robust statistics the four STACKING normalization modes need (stages/frames/channel-stats.ts):
//   OSC: R = R sites, G = both G sites, B = B sites of the mosaic, by the frame's effective CFA
//        phase (state.bayer shifted by the frame's XBAYROFF/YBAYROFF/ROWORDER: cfaPhase);
//   mono: one channel.
// frame.normalization[c] = {location: 3σ-clipped median (sky background), spread: robust σ
// (1.4826·MAD) of the same survivors, median: median of all pixels, scale: 1, offset: 0};
// STACKING turns them into scale/offset against the reference once it is known (addscale:
// scale = ref_spread/spread, offset = ref_loc − loc·scale; background: 1, ref_loc − loc;
// median: ref_median/median, 0; none: 1, 0).
// Blank frames (more than half zero/NaN, or one constant value) and frames without a finite
// pixel in some channel are excluded as `blank_frame`; unreadable ones as `unreadable`; the run
// goes on. At most runtime_limits.parallel_workers frames are in memory at once.
// Where the statistics come from (premeasure.ts): CALIBRATION measured each calibrated frame
// while writing it, so nothing is read here; otherwise each frame is read once on a frame worker
// (stages/frames/tasks.ts `analyze`; main thread with one worker), which measures its stars for
// REFERENCE_SELECTION on the same read.
// Writes: frame.normalization, exclusions, state.summaries.CFA_CHANNEL_PREP.

import type { CfaPattern } from '../../../cpu/debayer.js';
import { failed, ok } from '../../phase.js';
import type { RawStackPhase } from '../reasons.js';
import type { ChannelStats } from '../../stages/frames/channel-stats.js';
import type { AnalyzeTaskResult, ChannelsTaskResult } from '../../stages/frames/tasks.js';
import { FrameWorkers, mapFrames } from '../../stages/frames/workers.js';
import { analysisSpecOf, takeChannels } from '../premeasure.js';
import { exclude, includedFrames, pixelSource, type FrameRecord } from '../state.js';

const PHASE = 'CFA_CHANNEL_PREP';

const round = (v: number, digits = 4) => (Number.isFinite(v) ? Number(v.toPrecision(digits + 3)) : null);

function medianOf(values: number[]): number | null {
  const v = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return null;
  const n = v.length;
  return n % 2 ? v[n >> 1]! : (v[n / 2 - 1]! + v[n / 2]!) / 2;
}

export const cfaChannelPrepPhase: RawStackPhase = {
  name: PHASE,
  optional: false,
  async run(ctx) {
    const { state } = ctx;
    const frames = includedFrames(state);
    if (frames.length === 0 || state.width === null || state.height === null) return failed('no_frames', 'no included frame to measure');
    const osc = state.colorMode === 'OSC';
    const names = osc ? ['R', 'G', 'B'] : ['L'];
    const pattern = (state.bayer ?? 'RGGB') as CfaPattern;
    const excluded: Record<string, number> = {};
    const phases = new Map<string, number>();
    let measured = 0;
    let done = 0;
    let computeMs = 0;
    let readMs = 0;
    let premeasured = 0;
    const spec = analysisSpecOf(state);
    function applyResult(frame: FrameRecord, r: ChannelsTaskResult): void {
      if (!r.ok) {
        exclude(frame, r.code, r.detail);
        excluded[r.code] = (excluded[r.code] ?? 0) + 1;
        // An unreadable file's event carries its FITS error code; the exclusion stays `unreadable`.
        ctx.frame(frame.index, frame.name, 'excluded', r.fitsCode ?? r.code, { detail: r.detail, ...(r.fitsCode ? { exclusion: r.code } : {}) });
        return;
      }
      if (r.phase) phases.set(r.phase, (phases.get(r.phase) ?? 0) + 1);
      const stats = r.stats;
      const bad = stats.channels.findIndex((ch: ChannelStats) => !(Number.isFinite(ch.location) && Number.isFinite(ch.spread) && Number.isFinite(ch.median)));
      const why = stats.blank.detail ?? (bad >= 0 ? `channel ${names[bad]} has no finite pixel` : null);
      if (why !== null) {
        exclude(frame, 'blank_frame', why);
        excluded.blank_frame = (excluded.blank_frame ?? 0) + 1;
        ctx.frame(frame.index, frame.name, 'excluded', 'blank_frame', { detail: why });
        return;
      }
      frame.normalization = stats.channels.map((ch) => ({ location: ch.location, spread: ch.spread, median: ch.median, scale: 1, offset: 0 }));
      measured++;
      ctx.frame(frame.index, frame.name, 'ok', undefined, {
        channels: names,
        location: stats.channels.map((ch) => round(ch.location)),
        spread: stats.channels.map((ch) => round(ch.spread)),
        median: stats.channels.map((ch) => round(ch.median)),
      });
    }
    // Read + statistics per frame on the frame workers (whole-frame CPU work: both cores), at
    // most parallel_workers frames in memory; results are applied in frame order.
    const workers = new FrameWorkers(Math.min(state.config.runtime_limits.parallel_workers, frames.length));
    try {
      await mapFrames(
        frames,
        Math.max(1, workers.size),
        ctx.signal,
        async (frame): Promise<ChannelsTaskResult> => {
          const earlier = takeChannels(frame);
          if (earlier) {
            premeasured++;
            return earlier;
          }
          const file = pixelSource(frame);
          const r = (await workers.run({ kind: 'analyze', file, spec })) as AnalyzeTaskResult;
          if (!r.ok) return { kind: 'channels', ok: false, code: r.code, detail: r.detail, fitsCode: r.fitsCode, ms: { read: r.ms.read, stats: 0 } };
          // The stars measured on this read wait for REFERENCE_SELECTION.
          frame.premeasured = { ...r.premeasured, channels: null };
          return r.premeasured.channels!;
        },
        (frame, r) => {
          readMs += r.ms.read;
          computeMs += r.ms.stats;
          applyResult(frame, r);
          ctx.progress(++done, frames.length, 'frames');
        },
      );
    } finally {
      await workers.close();
    }
    const kept = frames.filter((f) => f.status === 'included' && f.normalization);
    const perChannel = names.map((name, c) => {
      const loc = kept.map((f) => f.normalization![c]!.location);
      const spr = kept.map((f) => f.normalization![c]!.spread);
      return {
        channel: name,
        location_median: round(medianOf(loc) ?? NaN),
        location_min: round(Math.min(...loc)),
        location_max: round(Math.max(...loc)),
        spread_median: round(medianOf(spr) ?? NaN),
      };
    });
    const summary = {
      color_mode: state.colorMode,
      channels: names,
      ...(osc ? { bayer_pattern: pattern, cfa_phases: Object.fromEntries(phases) } : {}),
      source: frames.some((f) => f.calibratedFile) ? 'calibrated' : 'lights',
      measured_by_calibration: premeasured,
      frames_measured: measured,
      frames_excluded: excluded,
      per_channel: perChannel,
      timing_ms: { read_per_frame: frames.length ? Math.round(readMs / frames.length) : null, stats_per_frame: frames.length ? Math.round((computeMs / frames.length) * 10) / 10 : null },
    };
    state.summaries.CFA_CHANNEL_PREP = summary;
    if (measured === 0) return failed('no_frames', `every frame was excluded (${Object.entries(excluded).map(([k, v]) => `${v} ${k}`).join(', ')})`, summary);
    return ok(summary);
  },
};
