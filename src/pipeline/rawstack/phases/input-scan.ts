// INPUT_SCAN (never skipped): discover the lights (pattern, max_frames), read their headers,
// refuse unreadable files and frames of another size per frame (with a reason, run goes on),
// decide the colour mode and Bayer pattern, and warn below frames_min or on mixed exposures.
// Run queue (config.queue non-empty, queue.ts): every ACTIVE entry's folder is scanned with its
// own pattern (else the run's) and max_frames per entry; frames are numbered across entries in
// queue order and carry their entry and filter (filterKey; `OSC` for colour data whatever the
// entry says); inactive entries are recorded in state.queue (status inactive) and scanned not at
// all. All entries must share one colour mode and frame size (majority size; others
// size_mismatch). A missing folder of an active entry, or no active entry, is an input error.
// No queue entries: the single input folder (lights_dir) as before, state.queue stays null.
// A pattern that matches nothing in a folder holding FITS files of another extension (`*.fits`
// on a folder of .fit files) fails with `pattern_mismatch`, naming what was found and the
// pattern that takes it (stages/scan/fits-names.ts); unreadable files are excluded (`unreadable`) and their
// frame events carry the file's specific FITS error code (FITS_TRUNCATED_DATA, FITS_EMPTY, ...).
// A readable light's frame event carries `date_obs` (ISO, UTC) when its header has DATE-OBS: the
// web UI's frame plots put frames in acquisition order by it.

import { failed, ok, type PhaseContext } from '../../phase.js';
import type { RawStackPhase, RawStackOutcome } from '../reasons.js';
import { folderPatternHint, type PatternHint } from '../../stages/scan/fits-names.js';
import { decideColorMode, scanFolder, ScanError, summarizeScan, type FrameInfo, type ScannedFrame } from '../../stages/scan/scan.js';
import { entryLabel, filterKey } from '../queue.js';
import { exclude, newFrameRecord, type QueueEntryState, type RawStackState } from '../state.js';

export const inputScanPhase: RawStackPhase = {
  name: 'INPUT_SCAN',
  optional: false,
  async run(ctx) {
    const { state } = ctx;
    const c = state.config;
    if (c.queue.length > 0) return scanQueue(ctx);
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
    if (scanned.length === 0) {
      const hint = await folderPatternHint(c.lights_dir, c.pattern);
      if (hint) return failed('pattern_mismatch', `${c.lights_dir}: ${hint.message}`, hintDetails(hint));
      return failed('no_frames', `no file in ${c.lights_dir} matches "${c.pattern}"`);
    }
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
      ctx.frame(record.index, record.name, record.status === 'included' ? 'ok' : 'excluded', frameCode(f, record.exclusions[0]?.code), f.ok ? { width: f.width, height: f.height, exptime: f.exptime, ...(f.dateObs ? { date_obs: f.dateObs } : {}) } : unreadableDetail(f));
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

/** The run-queue variant of INPUT_SCAN (see the head comment). */
async function scanQueue(ctx: PhaseContext<RawStackState>): Promise<RawStackOutcome> {
  const { state } = ctx;
  const c = state.config;
  const entries: QueueEntryState[] = c.queue.map((e, index) => ({
    index,
    filter_configured: e.filter,
    filter: filterKey(e.filter),
    input_dir: e.input_dir,
    pattern: e.pattern ?? c.pattern,
    label: e.label ?? null,
    active: e.active,
    status: e.active ? 'scanned' : 'inactive',
    message: e.active ? null : 'skipped (kept in the queue)',
    frames_found: 0,
    frames_usable: 0,
  }));
  state.queue = entries;
  for (const e of entries) if (!e.active) ctx.warn('queue_entry_inactive', `queue entry ${entryLabel(e)} is inactive: skipped`);
  const active = entries.filter((e) => e.active);
  if (active.length === 0) return failed('input_error', `all ${entries.length} run queue entries are inactive: nothing to stack`);

  // Scan each active entry; frames are renumbered across entries in queue order.
  const scanned: { frame: ScannedFrame; entry: QueueEntryState }[] = [];
  const hints: { entry: QueueEntryState; hint: PatternHint }[] = [];
  let total = 0;
  for (const e of active) {
    let frames: ScannedFrame[];
    try {
      frames = await scanFolder(e.input_dir, {
        pattern: e.pattern,
        maxFrames: c.max_frames,
        checksums: c.checksums,
        concurrency: c.runtime_limits.parallel_workers,
        signal: ctx.signal,
        onProgress: (done) => ctx.progress(total + done, total + done, `headers ${e.filter}`),
      });
    } catch (err) {
      if (err instanceof ScanError) {
        e.status = 'error';
        e.message = err.message;
        return failed('input_error', `queue entry ${entryLabel(e)}: ${err.message}`, { code: err.code, queue_entry: e.index });
      }
      throw err;
    }
    ctx.checkCancelled();
    e.frames_found = frames.length;
    if (frames.length === 0) {
      const hint = await folderPatternHint(e.input_dir, e.pattern);
      if (hint) hints.push({ entry: e, hint });
      e.message = hint ? hint.message : `no file matches "${e.pattern}"`;
      ctx.warn('queue_entry_empty', `queue entry ${entryLabel(e)}: ${hint ? `${e.input_dir}: ${hint.message}` : `no file in ${e.input_dir} matches "${e.pattern}"`}`);
    }
    for (const f of frames) scanned.push({ frame: f, entry: e });
    total += frames.length;
  }
  if (scanned.length === 0) {
    const first = hints[0];
    if (first) return failed('pattern_mismatch', `queue entry ${entryLabel(first.entry)}: ${first.entry.input_dir}: ${first.hint.message}`, { ...hintDetails(first.hint), queue_entry: first.entry.index });
    return failed('no_frames', `no file in the ${active.length} active queue entries matches their patterns`);
  }
  const renumbered = scanned.map(({ frame }, i) => ({ ...frame, index: i }) as ScannedFrame);
  const summary = summarizeScan(renumbered);
  const reference = summary.sizes[0];
  state.frames = renumbered.map((f, i) => {
    const r = newFrameRecord(i, f.file, f.name, f.ok ? f : null);
    r.entry = scanned[i]!.entry.index;
    r.filter = scanned[i]!.entry.filter;
    return r;
  });
  for (const f of renumbered) {
    const record = state.frames[f.index]!;
    if (!f.ok) exclude(record, 'unreadable', `${f.code}: ${f.message}`);
    else if (reference && (f.width !== reference.width || f.height !== reference.height || f.planes !== reference.planes)) {
      exclude(record, 'size_mismatch', `${f.width}x${f.height}x${f.planes} differs from the majority size ${reference.width}x${reference.height}x${reference.planes}`);
    }
    ctx.frame(record.index, record.name, record.status === 'included' ? 'ok' : 'excluded', frameCode(f, record.exclusions[0]?.code), f.ok ? { width: f.width, height: f.height, exptime: f.exptime, ...(f.dateObs ? { date_obs: f.dateObs } : {}), filter: record.filter, queue_entry: record.entry } : unreadableDetail(f, record.entry));
  }
  const usable = state.frames.filter((f) => f.status === 'included');
  if (usable.length === 0 || !reference) return failed('no_frames', `none of the ${renumbered.length} matching files of the run queue is a readable FITS image`, { unreadable: summary.unreadable.length });

  // One colour mode for the run: decided per entry (its first usable frame), then compared.
  const decisions = new Map<number, ReturnType<typeof decideColorMode>>();
  for (const e of active) {
    const first = usable.find((f) => f.entry === e.index);
    if (first) decisions.set(e.index, decideColorMode(first.info as FrameInfo, c.input_mode, c.bayer_pattern));
  }
  const modes = new Set([...decisions.values()].map((d) => d.mode));
  if (modes.has('RGB')) return failed('input_error', 'a queue entry holds 3-plane RGB images (already debayered); Raw Stack expects raw mono or CFA frames');
  if (modes.size > 1) {
    const list = active.filter((e) => decisions.has(e.index)).map((e) => `${entryLabel(e)}: ${decisions.get(e.index)!.mode}`).join(', ');
    return failed('input_error', `run queue entries mix colour modes (${list}); one run stacks either mono or OSC data`);
  }
  const decision = [...decisions.values()][0]!;
  state.colorMode = decision.mode;
  state.bayer = decision.bayer;
  state.width = reference.width;
  state.height = reference.height;
  // Seed: the filter is set to OSC automatically for OSC data.
  if (decision.mode === 'OSC') {
    for (const e of active) e.filter = 'OSC';
    for (const f of state.frames) f.filter = 'OSC';
  }
  for (const e of active) {
    e.frames_usable = usable.filter((f) => f.entry === e.index).length;
    if (e.frames_found > 0 && e.frames_usable === 0) ctx.warn('queue_entry_unusable', `queue entry ${entryLabel(e)}: none of its ${e.frames_found} frames is usable (unreadable or another size than the run's ${reference.width}x${reference.height})`);
  }
  for (const w of summary.warnings) if (w.code !== 'unreadable_frames' && w.code !== 'mixed_filters') ctx.warn(w.code, w.message);
  // Per filter: header FILTER disagreeing with the entry's filter is worth a warning (wrong folder?).
  for (const e of active) {
    if (e.filter === 'OSC') continue;
    const odd = usable.filter((f) => f.entry === e.index && f.info?.filter && filterKey(f.info.filter) !== e.filter);
    if (odd.length > 0) ctx.warn('queue_filter_mismatch', `queue entry ${entryLabel(e)}: ${odd.length} frame(s) have FILTER = '${odd[0]!.info!.filter}'`);
  }
  if (usable.length < c.frames_min) ctx.warn('frames_min', `only ${usable.length} usable frames, below frames_min = ${c.frames_min}`);
  const queue = entries.map((e) => ({ index: e.index, filter: e.filter, label: e.label, input_dir: e.input_dir, pattern: e.pattern, active: e.active, status: e.status, frames_found: e.frames_found, frames_usable: e.frames_usable }));
  state.summaries.INPUT_SCAN = { frames_found: renumbered.length, frames_usable: usable.length, color_mode: decision.mode, color_source: decision.source, bayer_pattern: decision.bayer, width: reference.width, height: reference.height, queue, scan: summary };
  return ok({ frames_found: renumbered.length, frames_usable: usable.length, image_width: reference.width, image_height: reference.height, color_mode: decision.mode, bayer_pattern: decision.bayer, queue_entries: entries.length, queue_active: active.length, filters: [...new Set(active.map((e) => e.filter))] });
}

/** The phase_end details of a pattern_mismatch: what was found and the pattern that takes it. */
function hintDetails(hint: PatternHint): Record<string, unknown> {
  return { pattern: hint.pattern, suggested_pattern: hint.suggested_pattern, found: hint.found, examples: hint.examples };
}

/** A frame event's code: the FITS error of an unreadable file (specific), else the exclusion reason. */
function frameCode(f: ScannedFrame, exclusion: string | undefined): string | undefined {
  return f.ok ? exclusion : f.code;
}

function unreadableDetail(f: ScannedFrame, queueEntry?: number | null): Record<string, unknown> | undefined {
  if (f.ok) return undefined;
  return { exclusion: 'unreadable', detail: f.message, ...(queueEntry !== undefined && queueEntry !== null ? { queue_entry: queueEntry } : {}) };
}
