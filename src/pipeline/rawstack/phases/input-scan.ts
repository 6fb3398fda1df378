// INPUT_SCAN (never skipped): discover the lights (pattern, max_frames), read their headers,
// refuse unreadable files and frames of another size per frame (with a reason, run goes on),
// decide the colour mode and Bayer pattern, and warn below frames_min or on mixed exposures.

import { failed, ok, type Phase } from '../../phase.js';
import { decideColorMode, scanFolder, ScanError, summarizeScan, type FrameInfo } from '../../scan.js';
import { exclude, newFrameRecord, type RawStackState } from '../state.js';

export const inputScanPhase: Phase<RawStackState> = {
  name: 'INPUT_SCAN',
  optional: false,
  async run(ctx) {
    const { state } = ctx;
    const c = state.config;
    if (c.lights_dir.trim() === '') return failed('input_error', 'lights_dir is empty: set the input folder with the light frames');
    let scanned;
    try {
      scanned = await scanFolder(c.lights_dir, {
        pattern: c.pattern,
        maxFrames: c.max_frames,
        checksums: c.checksums,
        concurrency: c.runtime_limits.parallel_workers,
        signal: ctx.signal,
        onProgress: (done, total) => ctx.progress(done, total, 'headers'),
      });
    } catch (e) {
      if (e instanceof ScanError) return failed('input_error', e.message, { code: e.code });
      throw e;
    }
    ctx.checkCancelled();
    if (scanned.length === 0) return failed('no_frames', `no file in ${c.lights_dir} matches "${c.pattern}"`);
    const summary = summarizeScan(scanned);
    const reference = summary.sizes[0];
    state.frames = scanned.map((f) => newFrameRecord(f.index, f.file, f.name, f.ok ? f : null));
    for (const f of scanned) {
      const record = state.frames[f.index]!;
      if (!f.ok) {
        exclude(record, 'unreadable', `${f.code}: ${f.message}`);
      } else if (reference && (f.width !== reference.width || f.height !== reference.height || f.planes !== reference.planes)) {
        exclude(record, 'size_mismatch', `${f.width}x${f.height}x${f.planes} differs from the majority size ${reference.width}x${reference.height}x${reference.planes}`);
      }
      ctx.frame(record.index, record.name, record.status === 'included' ? 'ok' : 'excluded', record.exclusions[0]?.code, f.ok ? { width: f.width, height: f.height, exptime: f.exptime } : undefined);
    }
    const usable = state.frames.filter((f) => f.status === 'included');
    if (usable.length === 0 || !reference) return failed('no_frames', `none of the ${scanned.length} matching files is a readable FITS image`, { unreadable: summary.unreadable.length });
    const first = usable[0]!.info as FrameInfo;
    const decision = decideColorMode(first, c.input_mode, c.bayer_pattern);
    if (decision.mode === 'RGB') return failed('input_error', 'the lights are 3-plane RGB images (already debayered); Raw Stack expects raw mono or CFA frames');
    state.colorMode = decision.mode;
    state.bayer = decision.bayer;
    state.width = reference.width;
    state.height = reference.height;
    for (const w of summary.warnings) if (w.code !== 'unreadable_frames') ctx.warn(w.code, w.message);
    if (usable.length < c.frames_min) ctx.warn('frames_min', `only ${usable.length} usable frames, below frames_min = ${c.frames_min}`);
    state.summaries.INPUT_SCAN = { frames_found: scanned.length, frames_usable: usable.length, color_mode: decision.mode, color_source: decision.source, bayer_pattern: decision.bayer, width: reference.width, height: reference.height, scan: summary };
    return ok({ frames_found: scanned.length, frames_usable: usable.length, image_width: reference.width, image_height: reference.height, color_mode: decision.mode, bayer_pattern: decision.bayer, lights_dir: c.lights_dir });
  },
};
