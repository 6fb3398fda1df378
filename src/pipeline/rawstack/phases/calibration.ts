// CALIBRATION (seed "Calibration", DESIGN §8): builds or loads the bias, dark, dark-flat and flat
// masters and writes every included light, calibrated, as float32 FITS to
// outputs/calibrated/cal_NNNNN.fit (NNNNN = frame index + 1, the light's 1-based position in
// input order; in the run's scratch folder instead when output.keep_calibrated_frames is false).
// Skipped (`not_configured`) when no calibration source is configured: lights pass
// on unchanged; `disabled` when sources are configured but every stage is switched off.
// Order and rules:
//   1. bias master (folder: sigma-clipped mean; or a master file);
//   2. dark groups by EXPTIME (and CCD-TEMP) when dark_auto_select, one dark for each light
//      (stages/calibration/dark-select.ts); only groups some light uses are combined; each dark master is
//      bias-corrected (dark − bias) when a bias exists, so it can be scaled by exposure (a dark
//      master file too, unless its header says it is: BIASCORR = T or CALSTAT with B);
//   3. dark-flat master (only with flats);
//   4. flat master from flats minus the dark-flat master (else the bias master), divided by
//      its median per CFA site (OSC) or overall (mono); a master flat file is taken as a
//      calibrated flat (as PixInsight and Siril write them) and only has the dark flats
//      subtracted when they are configured and its header does not say it is corrected;
//   5. per light: (light − bias − scale·dark) / flatN, NaN where the flat is dead; blank lights
//      (padding, constant) are excluded as `blank_frame`, a light that fails is excluded as
//      `calibration_failed`; the run goes on. On the TypeScript path each light is one frame
//      task (stages/calibration/light-task.ts: read, calibrate, write, then measure its stars and channel
//      statistics while it is in memory, handed on through frame.premeasured); on a GPU the
//      calibrate kernel runs with the masters resident and CFA_CHANNEL_PREP measures.
// Errors (`calibration_error`): a configured folder that is missing or holds no matching
// readable frame, an unreadable master file, any calibration frame or master whose size differs
// from the lights; `budget_error` when one band of a master's frames does not fit the budget.
// Run queue: when the flats folder's frames carry FILTER, one flat master per filter
// (master_flat_<filter>.fits; flats without FILTER make master_flat.fits for filters without
// their own), each light divided by its filter's; a filter without any flat is warned about
// (flat_missing_for_filter) and its lights are not flat-corrected.
// Writes: state.masters, frame.calibratedFile, frame.darkUsed, state.summaries.CALIBRATION and
// artifacts for the masters written (outputs/masters/master_{bias,dark_<exp>s,flat,darkflat}.fits).

import { mkdir, readdir, unlink } from 'node:fs/promises';
import { basename, join } from 'node:path';
import { imageMedians, imageMediansPooled } from '../../../cpu/stats.js';
import { isFitsError, isPartialWrite, keys, readFitsImage, writeFits, type FitsHeader } from '../../../fits/index.js';
import { GpuError } from '../../../gpu/errors.js';
import { gpuFor } from '../../device-policy.js';
import { CancelledError, failed, ok, skipped, type PhaseContext } from '../../phase.js';
import type { RawStackPhase } from '../reasons.js';
import { DEFAULT_FLAT_FLOOR } from '../../../cpu/calibrate.js';
import { exposeGc } from '../../../cpu/worker-gc.js';
import { collectSharedPools, isShared, sharedPool, toShared } from '../../../cpu/worker-pool.js';
import type { CalibrateLightResult } from '../../stages/calibration/light-task.js';
import { calibratedHeader, FrameCalibrator, type CalibratedHeaderInfo } from '../../stages/calibration/apply.js';
import { saturationPlateau } from '../../../algorithms/stars.js';
import {
  CalibrationError,
  combineFrames,
  CombineScratch,
  firstHeader,
  headerSaysBiasCorrected,
  listCalibrationFrames,
  flatMedians,
  loadMasterFile,
  masterHeader,
  normalizeFlat,
  resolveStageSources,
  subtractInPlace,
  writeMaster,
  type CalibrationStage,
  type CombineResult,
  type StageSource,
} from '../../stages/calibration/masters.js';
import { detectBlank } from '../../stages/frames/channel-stats.js';
import { forEachLimit } from '../../concurrency.js';
import { groupDarks, selectDark, type DarkFrameHeader, type DarkGroup, type DarkSelection } from '../../stages/calibration/dark-select.js';
import { FrameWorkers, mapFrames } from '../../stages/frames/workers.js';
import { analysisSpecOf } from '../premeasure.js';
import { exclude, includedFrames, type FrameRecord, type RawStackState } from '../state.js';
import { filterKey } from '../queue.js';
import { addArtifact } from '../../artifacts.js';
import { inRunFolder } from '../../run-folder.js';
import { calibratedFrameName } from '../../../shared/run-layout.js';

const MiB = 1024 * 1024;
/** The main thread's collector (null where the runtime refuses it). */
const collectGarbage = exposeGc();
const PHASE = 'CALIBRATION';

type DarkMember = DarkFrameHeader & { file: string };

const active = (s: StageSource) => s.kind === 'folder' || s.kind === 'master';

/** Median of a master (bias and dark levels for the saturation card). */
function medianOf(data: Float32Array, width: number, height: number): number {
  const m = imageMedians(data, { width, height, mode: 'whole' })[0];
  return Number.isFinite(m) ? m! : 0;
}

/**
 * medianOf on the worker pool (identical value): the bias and dark levels are only needed by the
 * lights, so the workers count while this thread reads and decodes the next master's frames.
 */
function medianLater(data: Float32Array, width: number, height: number, workers: number): Promise<number> {
  if (!isShared(data)) return Promise.resolve(medianOf(data, width, height));
  return imageMediansPooled(sharedPool(workers), data, { width, height, mode: 'whole' }).then(([m]) => (Number.isFinite(m) ? m! : 0));
}

function median(values: number[]): number {
  const v = [...values].sort((a, b) => a - b);
  const n = v.length;
  return n === 0 ? NaN : n % 2 ? v[n >> 1]! : (v[n / 2 - 1]! + v[n / 2]!) / 2;
}

/** 99.9th percentile of a normalised flat from a strided sample (its brightest real response). */
function flatHigh(flat: Float32Array): number {
  const step = Math.max(1, Math.floor(flat.length / 65536));
  const s = new Float32Array(Math.ceil(flat.length / step));
  let k = 0;
  for (let i = step >> 1; i < flat.length; i += step) if (Number.isFinite(flat[i]!)) s[k++] = flat[i]!;
  if (k === 0) return 1;
  // A typed-array sort is numeric without a comparator (5x faster than sorting a number[]).
  const sorted = s.subarray(0, k).sort();
  return sorted[Math.min(k - 1, Math.floor(0.999 * k))]!;
}

function describeSource(s: StageSource): Record<string, unknown> {
  if (s.kind === 'folder') return { source: 'folder', dir: s.path };
  if (s.kind === 'master') return { source: 'master', master: s.path };
  return { source: s.kind, ...(s.path ? { configured: s.path } : {}) };
}

function combineDetails(r: CombineResult): Record<string, unknown> {
  return { frames: r.frames, rejected_fraction: Number(r.rejectedFraction.toFixed(6)), bands: r.bands, rows_per_band: r.rowsPerBand, device: r.device };
}

async function runCalibration(ctx: PhaseContext<RawStackState>) {
  const { state } = ctx;
  const c = state.config;
  const cal = c.calibration;
  const lights = includedFrames(state);
  if (state.width === null || state.height === null || lights.length === 0) return skipped('prerequisite_failed', 'no usable lights from INPUT_SCAN');
  const width = state.width;
  const height = state.height;
  const size = { width, height };
  const cfa = state.colorMode === 'OSC';
  const workers = c.runtime_limits.parallel_workers;
  const budget = c.runtime_limits.memory_budget * MiB;
  const frameBytes = width * height * 4;

  const sources = resolveStageSources(c);
  const useDarkflat = active(sources.darkflat) && active(sources.flat);
  if (active(sources.darkflat) && !useDarkflat) ctx.warn('darkflat_without_flat', `${sources.darkflat.key} is configured but no flat is applied: dark flats are not used`);
  if (!active(sources.bias) && !active(sources.dark) && !active(sources.flat)) {
    const configured = Object.values(sources).filter((s) => s.kind !== 'none');
    const detail = { sources: Object.fromEntries(Object.entries(sources).map(([k, s]) => [k, describeSource(s)])) };
    state.summaries.CALIBRATION = { skipped: true, ...detail };
    if (configured.some((s) => s.kind === 'disabled')) {
      return skipped('disabled', 'calibration sources are configured but switched off (calibration.use_bias / use_dark / use_flat = false): lights pass on unchanged', detail);
    }
    return skipped('not_configured', 'no calibration folder or master file configured: lights pass on unchanged', detail);
  }
  const t0 = performance.now();
  const layout = state.folder.layout;
  const mastersDir = inRunFolder(state.folder, layout.masters);
  // output.keep_calibrated_frames = false: the frames live in the run's scratch folder, which the
  // run removes when it ends (run.ts), so they cost disk only while the run needs them.
  const keepCalibrated = c.output.keep_calibrated_frames;
  const calDir = keepCalibrated ? inRunFolder(state.folder, layout.calibrated) : join(state.folder.scratchDir, 'calibrated');
  await mkdir(mastersDir, { recursive: true });
  await mkdir(calDir, { recursive: true });
  const stackGpuCtx = gpuFor(state.gpu, 'stack');
  const listOpts = { concurrency: workers, signal: ctx.signal, warn: ctx.warn.bind(ctx) };

  // A. Headers only: list every folder, group the darks and pick one for each light.
  const listed: Partial<Record<CalibrationStage, string[]>> = {};
  const firstHeaders: Partial<Record<CalibrationStage, FitsHeader | null>> = {};
  let darkMembers: DarkMember[] = [];
  let flatInfos: { file: string; filter: string | null }[] = [];
  for (const stage of ['bias', 'dark', 'darkflat', 'flat'] as const) {
    const s = sources[stage];
    if (!active(s) || (stage === 'darkflat' && !useDarkflat)) continue;
    if (s.kind === 'folder') {
      const frames = await listCalibrationFrames(s, cal.pattern, size, listOpts);
      listed[stage] = frames.map((f) => f.file);
      firstHeaders[stage] = await firstHeader(frames[0]!.file);
      if (stage === 'dark') darkMembers = frames.map((f) => ({ exptime: f.exptime, temperature: f.temperature, file: f.file }));
      if (stage === 'flat') flatInfos = frames.map((f) => ({ file: f.file, filter: f.filter }));
    }
    ctx.checkCancelled();
  }
  // A dark master file is one group with the exposure and temperature of its header.
  let darkFile: { data: Float32Array; header: FitsHeader } | null = null;
  if (sources.dark.kind === 'master') {
    darkFile = await loadMasterFile(sources.dark, size);
    darkMembers = [{ exptime: keys.exposureSeconds(darkFile.header) ?? null, temperature: keys.sensorTemperature(darkFile.header) ?? null, file: sources.dark.path! }];
  }
  const grouping = { autoSelect: cal.dark_auto_select, useTemp: cal.dark_match_use_temp, tempToleranceC: cal.dark_match_temp_tolerance_c };
  let groups: DarkGroup<DarkMember>[] = active(sources.dark) ? groupDarks(darkMembers, grouping) : [];
  if (sources.dark.kind === 'master') groups = groups.map((g) => ({ ...g, name: basename(sources.dark.path!) }));
  const biasAvailable = active(sources.bias);
  const darksBiasCorrected = biasAvailable || (darkFile !== null && headerSaysBiasCorrected(darkFile.header));
  const selections = new Map<number, DarkSelection>();
  if (groups.length > 0) {
    const notes = new Map<string, { count: number; example: string; sel: DarkSelection; exptime: number | null; temperature: number | null }>();
    for (const f of lights) {
      const light = { exptime: f.info?.exptime ?? null, temperature: f.info?.temperature ?? null };
      const sel = selectDark(groups, light, { ...grouping, exposureTolerancePercent: cal.dark_match_exposure_tolerance_percent, biasCorrected: darksBiasCorrected });
      selections.set(f.index, sel);
      if (sel.note === 'exact' || sel.note === 'single') continue;
      const key = `${sel.note}|${sel.groupId}|${light.exptime}`;
      const n = notes.get(key);
      if (n) n.count++;
      else notes.set(key, { count: 1, example: f.name, sel, exptime: light.exptime, temperature: light.temperature });
    }
    for (const n of notes.values()) {
      const g = groups.find((x) => x.id === n.sel.groupId)!;
      const lightsText = `${n.count} light${n.count === 1 ? '' : 's'} (e.g. ${n.example})`;
      const tol = cal.dark_match_exposure_tolerance_percent;
      if (n.sel.note === 'scaled') ctx.warn('dark_scaled', `no dark within ${tol} % of the ${n.exptime} s exposure of ${lightsText}: using ${g.name} (${g.exptime} s) scaled by ${n.sel.scale.toFixed(4)}`);
      else if (n.sel.note === 'unscaled_no_bias') ctx.warn('dark_unscaled', `no dark within ${tol} % of the ${n.exptime} s exposure of ${lightsText}, and without a bias master the dark still holds the bias offset and cannot be scaled: using ${g.name} (${g.exptime} s) unscaled`);
      else if (n.sel.note === 'temperature_mismatch') ctx.warn('dark_temperature_mismatch', `no dark within ${cal.dark_match_temp_tolerance_c} °C of ${n.temperature} °C for ${lightsText}: using ${g.name} (${g.temperature?.toFixed(1)} °C)`);
      else if (n.sel.note === 'exposure_unknown') ctx.warn('dark_exposure_unknown', `exposure time unknown for ${lightsText} (or the darks carry none): using ${g.name} unscaled`);
    }
  }
  const usedGroups = groups.filter((g) => [...selections.values()].some((s) => s.groupId === g.id));

  // Run queue with a flats folder whose frames carry FILTER: one flat master per filter, each
  // light divided by its own filter's (flats without FILTER serve filters that have none).
  let flatGroups: Map<string, string[]> | null = null;
  const lightFlatKey = new Map<number, string | null>();
  if (state.queue && sources.flat.kind === 'folder' && flatInfos.some((f) => f.filter)) {
    flatGroups = new Map();
    for (const f of flatInfos) {
      const k = f.filter ? filterKey(f.filter) : '';
      flatGroups.set(k, [...(flatGroups.get(k) ?? []), f.file]);
    }
    const missing = new Map<string, number>();
    for (const f of lights) {
      const k = f.filter !== null && flatGroups.has(f.filter) ? f.filter : flatGroups.has('') ? '' : null;
      lightFlatKey.set(f.index, k);
      if (k === null) missing.set(f.filter ?? '?', (missing.get(f.filter ?? '?') ?? 0) + 1);
    }
    for (const [filter, n] of missing) ctx.warn('flat_missing_for_filter', `no flat with FILTER = ${filter} in ${sources.flat.path}: ${n} light(s) of filter ${filter} are not flat-corrected`);
    const used = new Set(lightFlatKey.values());
    for (const k of [...flatGroups.keys()]) if (!used.has(k)) flatGroups.delete(k);
    listed.flat = [...flatGroups.values()].flat();
  }

  // Progress: one unit per calibration file combined and per light.
  const masterFiles = (listed.bias?.length ?? 0) + (listed.darkflat?.length ?? 0) + (listed.flat?.length ?? 0) + (sources.dark.kind === 'folder' ? usedGroups.reduce((a, g) => a + g.members.length, 0) : 0);
  const total = masterFiles + lights.length;
  let unitsDone = 0;
  const combineProgress = (substep: string, files: number) => (reads: number, all: number) => ctx.progress(Math.floor(unitsDone + (files * reads) / all), total, substep);

  // The largest set combined here: every master's device band is sized for it, so the masters
  // reuse one pooled allocation (combineFrames only does so when it costs no extra band).
  const combinedSets = [listed.bias, listed.darkflat, ...(flatGroups ? [...flatGroups.values()] : [listed.flat]), ...(sources.dark.kind === 'folder' ? usedGroups.map((g) => g.members) : [])];
  const deviceSlots = Math.max(1, ...combinedSets.map((x) => x?.length ?? 0));
  // Masters held so far: budget left for the bands of the next combination.
  let heldBytes = 0;
  // Host buffers of one combination, reused by the next (dropped after the masters).
  let scratch: CombineScratch | null = new CombineScratch();
  const combine = async (stage: string, files: string[], extra: { subtract?: Float32Array | null; normalizeLevels?: boolean } = {}) => {
    const r = await combineFrames(files, {
      width,
      height,
      kappa: cal.master_rejection_sigma,
      budgetBytes: Math.max(budget - heldBytes - frameBytes, 0),
      gpu: stackGpuCtx,
      workers,
      deviceSlots,
      scratch: scratch ?? undefined,
      ...extra,
      checkCancelled: () => ctx.checkCancelled(),
      onProgress: combineProgress(`master_${stage}`, files.length),
    });
    unitsDone += files.length;
    heldBytes += frameBytes;
    return r;
  };
  const details: Record<string, Record<string, unknown>> = {};
  const rel = (name: string) => `${layout.masters}/${name}`;
  // Master files are written while the next master is combined (a master's data does not change
  // once its write starts); the writes are awaited after the lights (which never read the master
  // files: the last master's flush overlaps them), and a failed one fails the phase.
  const writes: Promise<unknown>[] = [];
  const written = (stage: string, name: string, data: Float32Array, header: FitsHeader): string => {
    const pending = writeMaster(mastersDir, name, width, height, data, header);
    pending.catch(() => undefined); // awaited below; an earlier failure must not leave it unhandled
    writes.push(pending);
    addArtifact(state, `master_${stage}`, PHASE, rel(name));
    return join(mastersDir, name);
  };

  // 1. Bias.
  let bias: Float32Array | null = null;
  let biasName: string | null = null;
  details.bias = describeSource(sources.bias);
  if (sources.bias.kind === 'folder') {
    const r = await combine('bias', listed.bias!);
    bias = r.data;
    biasName = 'master_bias.fits';
    const header = masterHeader(firstHeaders.bias ?? null, { imageType: 'Master Bias', frames: r.frames, exptime: null, temperature: null, kappa: cal.master_rejection_sigma, source: sources.bias.path! });
    state.masters.bias = written('bias', biasName, bias, header);
    details.bias = { ...details.bias, ...combineDetails(r), master: rel(biasName) };
  } else if (sources.bias.kind === 'master') {
    bias = (await loadMasterFile(sources.bias, size)).data;
    heldBytes += frameBytes;
    biasName = basename(sources.bias.path!);
    state.masters.bias = sources.bias.path;
  }
  // Levels computed on the worker pool meanwhile; awaited before the lights (the writes after them).
  const levelJobs: Promise<unknown>[] = [];
  const later = <T>(job: Promise<T>): Promise<T> => {
    job.catch(() => undefined); // awaited below; an earlier failure must not leave it unhandled
    levelJobs.push(job);
    return job;
  };
  const biasLevelJob = later(bias ? medianLater(bias, width, height, workers) : Promise.resolve(0));

  // 2. Darks: only the groups some light uses.
  const darks = new Map<number, Float32Array>();
  const darkLevels = new Map<number, number>();
  details.dark = describeSource(sources.dark);
  if (active(sources.dark)) {
    const groupRows: Record<string, unknown>[] = [];
    for (const g of groups) {
      const usedBy = [...selections.values()].filter((s) => s.groupId === g.id);
      const row: Record<string, unknown> = {
        name: g.name,
        exptime: g.exptime,
        temperature: g.temperature === null ? null : Number(g.temperature.toFixed(2)),
        frames: g.members.length,
        lights: usedBy.length,
        scaled_lights: usedBy.filter((s) => s.scale !== 1).length,
        master: null,
      };
      groupRows.push(row);
      if (usedBy.length === 0) continue;
      ctx.checkCancelled();
      let data: Float32Array;
      if (sources.dark.kind === 'folder') {
        const r = await combine('dark', g.members.map((m) => m.file));
        data = r.data;
        if (bias) subtractInPlace(data, bias);
        const header = masterHeader(firstHeaders.dark ?? null, {
          imageType: 'Master Dark',
          frames: r.frames,
          exptime: g.exptime,
          temperature: g.temperature,
          kappa: cal.master_rejection_sigma,
          source: sources.dark.path!,
          cards: [['BIASCORR', bias !== null]],
          history: bias ? [`skystack CALIBRATION: bias ${biasName} subtracted (dark - bias)`] : [],
        });
        written('dark', g.name, data, header);
        Object.assign(row, combineDetails(r), { master: rel(g.name) });
      } else {
        data = darkFile!.data;
        heldBytes += frameBytes;
        if (bias && !headerSaysBiasCorrected(darkFile!.header)) subtractInPlace(data, bias);
        row.master = sources.dark.path;
      }
      darks.set(g.id, data);
      const id = g.id;
      later(medianLater(data, width, height, workers).then((level) => darkLevels.set(id, level)));
    }
    const lightsOf = (g: DarkGroup) => [...selections.values()].filter((s) => s.groupId === g.id).length;
    const mostUsed = [...usedGroups].sort((a, b) => lightsOf(b) - lightsOf(a) || a.id - b.id)[0];
    if (mostUsed) state.masters.dark = sources.dark.kind === 'master' ? sources.dark.path : join(mastersDir, mostUsed.name);
    details.dark = {
      ...details.dark,
      frames: darkMembers.length,
      auto_select: cal.dark_auto_select,
      use_temp: cal.dark_match_use_temp,
      bias_corrected: darksBiasCorrected,
      groups: groupRows,
      scaled_lights: [...selections.values()].filter((s) => s.scale !== 1).length,
    };
  }
  darkFile = null;

  // 3. Dark flats (raw: they hold the flats' bias and dark signal).
  let darkflat: Float32Array | null = null;
  let darkflatName: string | null = null;
  details.darkflat = { ...describeSource(sources.darkflat), ...(active(sources.darkflat) && !useDarkflat ? { used: false, note: 'no flat to correct' } : {}) };
  if (useDarkflat) {
    if (sources.darkflat.kind === 'folder') {
      const r = await combine('darkflat', listed.darkflat!);
      darkflat = r.data;
      darkflatName = 'master_darkflat.fits';
      const header = masterHeader(firstHeaders.darkflat ?? null, { imageType: 'Master Dark Flat', frames: r.frames, exptime: null, temperature: null, kappa: cal.master_rejection_sigma, source: sources.darkflat.path! });
      state.masters.darkflat = written('darkflat', darkflatName, darkflat, header);
      details.darkflat = { ...details.darkflat, ...combineDetails(r), master: rel(darkflatName) };
    } else {
      darkflat = (await loadMasterFile(sources.darkflat, size)).data;
      heldBytes += frameBytes;
      darkflatName = basename(sources.darkflat.path!);
      state.masters.darkflat = sources.darkflat.path;
    }
  }

  // 4. Flat: offset-corrected, combined at a common level, divided by its median per CFA site.
  let flat: Float32Array | null = null;
  let flatName: string | null = null;
  const flats = new Map<string, Float32Array>();
  const flatNames = new Map<string, string>();
  // Header of a master flat combined here (one per filter in a run queue, else one): the offset
  // master subtracted from each flat (null: none) and the medians it was divided by.
  const flatMasterHeader = (first: FitsHeader | null, frames: number, offsetName: string | null, siteMedians: number[]) =>
    masterHeader(first, {
      imageType: 'Master Flat',
      frames,
      exptime: null,
      temperature: null,
      kappa: cal.master_rejection_sigma,
      source: sources.flat.path!,
      cards: [
        ['BIASCORR', offsetName !== null],
        ['FLATNORM', true],
      ],
      history: [
        ...(offsetName ? [`skystack CALIBRATION: ${offsetName} subtracted from each flat`] : []),
        `skystack CALIBRATION: divided by its median ${cfa ? 'per CFA site' : ''} (${siteMedians.map((m) => m.toFixed(2)).join(', ')})`,
      ],
    });
  details.flat = describeSource(sources.flat);
  if (active(sources.flat) && flatGroups) {
    // Per filter (run queue): the folder flat of step 4 below, once per filter group.
    const offset = darkflat ?? bias;
    const offsetName = darkflat ? darkflatName : bias ? biasName : null;
    if (offsetName === null) ctx.warn('flat_offset_not_removed', 'no bias or dark-flat master: the flat keeps its offset, so vignetting and dust are under-corrected');
    const perFilter: Record<string, unknown> = {};
    for (const [k, files] of flatGroups) {
      ctx.checkCancelled();
      const name = k ? `master_flat_${k.replace(/[^A-Za-z0-9_+-]/g, '_')}.fits` : 'master_flat.fits';
      const combined = await combine('flat', files, { subtract: offset, normalizeLevels: true });
      const siteMedians = normalizeFlat(combined.data, width, height, cfa, sources.flat.key ?? 'flat', await flatMedians(combined.data, width, height, cfa, workers));
      const header = flatMasterHeader(await firstHeader(files[0]!), combined.frames, offsetName, siteMedians);
      const file = written('flat', name, combined.data, header);
      flats.set(k, combined.data);
      flatNames.set(k, name);
      perFilter[k || 'none'] = { ...combineDetails(combined), master: rel(name), lights: [...lightFlatKey.values()].filter((x) => x === k).length, site_medians: siteMedians.map((m) => Number(m.toFixed(4))) };
      if (!state.masters.flat || k === 'L') state.masters.flat = file;
    }
    if (darkflat) heldBytes -= frameBytes;
    darkflat = null;
    details.flat = { ...details.flat, per_filter: perFilter, offset: offsetName, normalized_by: cfa ? 'cfa_site' : 'whole', unflattened_lights: [...lightFlatKey.values()].filter((x) => x === null).length };
  } else if (active(sources.flat)) {
    const offset = darkflat ?? bias;
    const offsetName = darkflat ? darkflatName : bias ? biasName : null;
    let offsetApplied: string | null = sources.flat.kind === 'folder' ? offsetName : darkflatName;
    let combined: CombineResult | null = null;
    if (sources.flat.kind === 'folder') {
      combined = await combine('flat', listed.flat!, { subtract: offset, normalizeLevels: true });
      flat = combined.data;
    } else {
      // Master flat files from other tools (PixInsight, Siril) are calibrated flats in ADU without
      // a card saying so: they are used as written, unless dark flats were configured with them
      // (the user's explicit request to remove the flats' offset). Ours carry BIASCORR = T.
      const loaded = await loadMasterFile(sources.flat, size);
      heldBytes += frameBytes;
      flat = loaded.data;
      if (headerSaysBiasCorrected(loaded.header)) offsetApplied = 'already corrected (header)';
      else if (medianOf(flat, width, height) < 10) offsetApplied = 'already normalised';
      else if (darkflat) subtractInPlace(flat, darkflat);
      else offsetApplied = 'none (master file used as written)';
    }
    if (offsetApplied === null) ctx.warn('flat_offset_not_removed', 'no bias or dark-flat master: the flat keeps its offset, so vignetting and dust are under-corrected');
    const siteMedians = normalizeFlat(flat, width, height, cfa, sources.flat.key ?? 'flat', await flatMedians(flat, width, height, cfa, workers));
    // Releases the darkflat: only the normalised flat is needed from here on.
    if (darkflat) heldBytes -= frameBytes;
    darkflat = null;
    if (sources.flat.kind === 'folder') {
      flatName = 'master_flat.fits';
      const header = flatMasterHeader(firstHeaders.flat ?? null, combined!.frames, offsetName, siteMedians);
      state.masters.flat = written('flat', flatName, flat, header);
      details.flat = { ...details.flat, ...combineDetails(combined!), master: rel(flatName), levels: combined!.levels?.map((l) => Number(l.toFixed(2))) ?? null };
    } else {
      flatName = basename(sources.flat.path!);
      state.masters.flat = sources.flat.path;
    }
    details.flat = { ...details.flat, offset: offsetApplied, normalized_by: cfa ? 'cfa_site' : 'whole', site_medians: siteMedians.map((m) => Number(m.toFixed(4))) };
  }
  const flatTop = flatGroups ? Math.max(1, ...[...flats.values()].map(flatHigh)) : flat ? flatHigh(flat) : 1;
  await Promise.all(levelJobs);
  const biasLevel = await biasLevelJob;
  // The combinations' host scratch goes with the collection below.
  scratch = null;
  const mastersMs = performance.now() - t0;

  // The masters' band buffers are dead: the device pool's (host memory on a software adapter)
  // and the host staging of every combine (up to the budget each). Released before the lights,
  // whose workers would otherwise add their frames on top of them (peak RSS).
  state.gpu?.pool.trim();
  collectGarbage?.();
  collectSharedPools();

  // 5. Lights, at most parallel_workers in flight and as many as the budget holds beside the masters.
  const perFrame = 3 * frameBytes;
  const lanes = Math.max(1, Math.min(workers, Math.floor((budget - heldBytes) / perFrame)));
  if (heldBytes + perFrame > budget) {
    ctx.warn('memory_budget', `the masters (${(heldBytes / MiB).toFixed(0)} MiB) and one light in flight need ${((heldBytes + perFrame) / MiB).toFixed(0)} MiB, above runtime_limits.memory_budget = ${c.runtime_limits.memory_budget} MiB`);
  }
  const calibrateGpu = gpuFor(state.gpu, 'calibrate');
  let calibrated = 0;
  let failedFrames = 0;
  let blank = 0;
  let measured = 0;
  // Per-light step times on the frame workers (TypeScript path), medians in the summary.
  const stepMs = { read: [] as number[], calibrate: [] as number[], write: [] as number[], analyze: [] as number[] };
  const t1 = performance.now();

  // What each light gets: its dark (and scale), its flat (per-filter flats: by key; null = none)
  // and the provenance cards of its calibrated header.
  const planOf = (frame: FrameRecord) => {
    const sel = selections.get(frame.index) ?? null;
    const group = sel ? groups.find((g) => g.id === sel.groupId)! : null;
    const scale = sel?.scale ?? 1;
    const flatKey = flatGroups ? (lightFlatKey.get(frame.index) ?? null) : undefined;
    const name = calibratedFrameName(frame.index);
    const header: CalibratedHeaderInfo = {
      bias: biasName,
      dark: group?.name ?? null,
      darkScale: scale,
      flat: flatKey === undefined ? flatName : flatKey === null ? null : (flatNames.get(flatKey) ?? null),
      biasLevel,
      darkLevel: sel ? (darkLevels.get(sel.groupId) ?? 0) * scale : 0,
      flatHigh: flatTop,
    };
    return { sel, group, scale, flatKey, name, file: join(calDir, name), header };
  };
  type LightPlan = ReturnType<typeof planOf>;
  const onCalibrated = (frame: FrameRecord, plan: LightPlan) => {
    frame.calibratedFile = plan.file;
    frame.darkUsed = plan.group?.name ?? null;
    calibrated++;
    ctx.frame(frame.index, frame.name, 'ok', undefined, { calibrated: `${layout.calibrated}/${plan.name}`, ...(plan.group ? { dark: plan.group.name, dark_scale: Number(plan.scale.toFixed(6)) } : {}) });
  };
  /** fitsCode: the light could not be read; its frame event carries that specific code. */
  const onExcluded = (frame: FrameRecord, code: 'blank_frame' | 'calibration_failed', detail: string, fitsCode?: string) => {
    if (code === 'blank_frame') blank++;
    else failedFrames++;
    exclude(frame, code, detail);
    ctx.frame(frame.index, frame.name, 'excluded', fitsCode ?? code, fitsCode ? { detail, exclusion: code } : { detail });
  };

  if (!calibrateGpu) {
    // TypeScript path: each light is read, calibrated, written and measured (stars, channel
    // statistics: premeasure.ts) on a frame worker, so the main thread only dispatches and the
    // calibrated frame is never read back by CFA_CHANNEL_PREP or REFERENCE_SELECTION. The
    // masters go to the workers once, in shared memory.
    const shared = (m: Float32Array | null) => (m ? toShared(m) : null);
    const sBias = shared(bias);
    const sFlat = shared(flat);
    const sDarks = new Map([...darks].map(([k, v]) => [k, toShared(v)] as const));
    const sFlats = new Map([...flats].map(([k, v]) => [k, toShared(v)] as const));
    const spec = analysisSpecOf(state);
    const frameWorkers = new FrameWorkers(lanes);
    const plans = new Map<number, LightPlan>();
    try {
      await mapFrames(
        lights,
        lanes,
        ctx.signal,
        (frame) => {
          const plan = planOf(frame);
          plans.set(frame.index, plan);
          const lightFlat = plan.flatKey === undefined ? sFlat : plan.flatKey === null ? null : (sFlats.get(plan.flatKey) ?? null);
          return frameWorkers.run({
            kind: 'calibrate',
            file: frame.file,
            out: plan.file,
            width,
            height,
            bias: sBias,
            dark: plan.sel ? (sDarks.get(plan.sel.groupId) ?? null) : null,
            flat: lightFlat,
            darkScale: plan.scale,
            flatFloor: DEFAULT_FLAT_FLOOR,
            header: plan.header,
            analysis: spec,
          }) as Promise<CalibrateLightResult>;
        },
        (frame, r) => {
          if (r.ok) {
            onCalibrated(frame, plans.get(frame.index)!);
            frame.premeasured = r.premeasured;
            measured++;
            for (const k of Object.keys(stepMs) as (keyof typeof stepMs)[]) stepMs[k].push(r.ms[k]);
          } else onExcluded(frame, r.code, r.detail, r.fitsCode);
          ctx.progress(++unitsDone, total, 'lights');
        },
      );
    } finally {
      await frameWorkers.close();
      // A worker terminated mid-write (cancel, error) leaves writeFits' temporary file behind:
      // the folder keeps only finished frames.
      for (const name of await readdir(calDir).catch(() => [] as string[])) {
        if (isPartialWrite(name)) await unlink(join(calDir, name)).catch(() => undefined);
      }
    }
  } else {
    const calibrator = new FrameCalibrator({ bias, flat, darks, ...(flatGroups ? { flats } : {}) }, calibrateGpu);
    try {
      await forEachLimit(lights, lanes, async (frame: FrameRecord) => {
        ctx.checkCancelled();
        const plan = planOf(frame);
        try {
          const image = await readFitsImage(frame.file, 'float32');
          if (image.width !== width || image.height !== height || image.planes !== 1) throw new Error(`is ${image.width}x${image.height}x${image.planes}, expected ${width}x${height}x1`);
          const check = detectBlank(image.data, width, height);
          if (check.blank) return onExcluded(frame, 'blank_frame', check.detail!);
          ctx.checkCancelled();
          const plateau = saturationPlateau(image.data);
          const out = await calibrator.calibrate(image.data, plan.sel ? plan.sel.groupId : null, plan.scale, plan.flatKey);
          await writeFits(plan.file, { width, height, data: out }, { header: calibratedHeader(image.header, plan.header, plateau), durable: false });
          onCalibrated(frame, plan);
        } catch (e) {
          if (e instanceof CancelledError || e instanceof GpuError) throw e;
          onExcluded(frame, 'calibration_failed', e instanceof Error ? e.message : String(e), isFitsError(e) ? e.code : undefined);
        } finally {
          unitsDone++;
          ctx.progress(unitsDone, total, 'lights');
        }
      });
    } finally {
      calibrator.dispose();
    }
  }
  await Promise.all(writes);
  const lightsMs = performance.now() - t1;
  const summary: Record<string, unknown> = {
    ...details,
    frames_calibrated: calibrated,
    frames_failed: failedFrames,
    frames_blank: blank,
    calibrated_dir: keepCalibrated ? layout.calibrated : null,
    calibrated_frames_kept: keepCalibrated,
    masters_dir: layout.masters,
    device: { stack: stackGpuCtx ? 'gpu' : 'cpu', calibrate: calibrateGpu ? 'gpu' : 'cpu' },
    // Lights whose stars and channel statistics were measured here (CFA_CHANNEL_PREP and
    // REFERENCE_SELECTION then read nothing for them).
    frames_measured: measured,
    timing_ms: {
      masters: Math.round(mastersMs),
      lights: Math.round(lightsMs),
      per_light: calibrated > 0 ? Math.round(lightsMs / calibrated) : null,
      ...(measured > 0 ? { light_steps_median: Object.fromEntries(Object.entries(stepMs).map(([k, v]) => [k, Math.round(median(v))])) } : {}),
    },
  };
  state.summaries.CALIBRATION = summary;
  if (calibrated === 0) return failed('no_frames', `no light could be calibrated (${failedFrames} failed, ${blank} blank)`, summary);
  return ok(summary);
}

export const calibrationPhase: RawStackPhase = {
  name: PHASE,
  optional: false,
  async run(ctx) {
    try {
      return await runCalibration(ctx);
    } catch (e) {
      if (e instanceof CalibrationError) return failed('calibration_error', e.message);
      if (e instanceof GpuError && e.code === 'BUDGET_TOO_SMALL') return failed('budget_error', e.message);
      throw e;
    }
  },
};
