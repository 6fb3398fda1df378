// CALIBRATION's plan, from headers only (no pixel read yet): which files each configured stage
// combines, the dark groups by exposure (and temperature) with the dark each light gets (one
// warning per kind of mismatch: scaled, unscaled without a bias, temperature, unknown exposure),
// and in a run queue whose flats carry FILTER one flat group per filter with the lights of each
// (a filter without a flat is warned about and its lights stay unflattened).

import { basename } from 'node:path';
import { keys, type FitsHeader } from '../../fits/index.js';
import type { PhaseContext } from '../phase.js';
import { groupDarks, selectDark, type DarkFrameHeader, type DarkGroup, type DarkSelection } from '../stages/calibration/dark-select.js';
import { firstHeader, headerSaysBiasCorrected, listCalibrationFrames, loadMasterFile, type CalibrationStage, type StageSource } from '../stages/calibration/masters.js';
import { filterKey } from './queue.js';
import type { FrameRecord, RawStackState } from './state.js';

export type DarkMember = DarkFrameHeader & { file: string };

/** A stage with data: a folder to combine or a master file to load. */
export const active = (s: StageSource): boolean => s.kind === 'folder' || s.kind === 'master';

export interface CalibrationSources {
  sources: Record<CalibrationStage, StageSource>;
  /** Dark flats are used only beside a flat. */
  useDarkflat: boolean;
  /** Files of each folder stage (for a run queue's flats: of the filter groups some light uses). */
  listed: Partial<Record<CalibrationStage, string[]>>;
  firstHeaders: Partial<Record<CalibrationStage, FitsHeader | null>>;
  darkMembers: DarkMember[];
  /** A configured dark master file, loaded (one group with its header's exposure and temperature). */
  darkFile: { data: Float32Array; header: FitsHeader } | null;
  groups: DarkGroup<DarkMember>[];
  /** The groups some light uses (only those are combined). */
  usedGroups: DarkGroup<DarkMember>[];
  /** The dark each light gets, by frame index. */
  selections: Map<number, DarkSelection>;
  /** The dark masters hold no bias offset (so they can be scaled by exposure). */
  darksBiasCorrected: boolean;
  /** Run queue: flat files per filter key ('' for flats without FILTER), else null. */
  flatGroups: Map<string, string[]> | null;
  /** Run queue: each light's flat group key (null: no flat for its filter). */
  lightFlatKey: Map<number, string | null>;
}

/** The plan for `lights` (sizes checked against the lights'); CalibrationError for a folder that yields no usable frame. */
export async function planCalibrationSources(
  ctx: PhaseContext<RawStackState>,
  sources: Record<CalibrationStage, StageSource>,
  lights: readonly FrameRecord[],
  size: { width: number; height: number },
): Promise<CalibrationSources> {
  const { state } = ctx;
  const cal = state.config.calibration;
  const useDarkflat = active(sources.darkflat) && active(sources.flat);
  const listOpts = { concurrency: state.config.runtime_limits.parallel_workers, signal: ctx.signal, warn: ctx.warn.bind(ctx) };

  // Headers only: list every folder.
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
  const darksBiasCorrected = active(sources.bias) || (darkFile !== null && headerSaysBiasCorrected(darkFile.header));
  const { groups, selections } = selectDarks(ctx, sources, darkMembers, lights, darksBiasCorrected);
  const usedGroups = groups.filter((g) => [...selections.values()].some((s) => s.groupId === g.id));
  const { flatGroups, lightFlatKey } = groupFlatsByFilter(ctx, sources, flatInfos, lights);
  if (flatGroups) listed.flat = [...flatGroups.values()].flat();
  return { sources, useDarkflat, listed, firstHeaders, darkMembers, darkFile, groups, usedGroups, selections, darksBiasCorrected, flatGroups, lightFlatKey };
}

/** Dark groups by exposure (and temperature), the dark of each light, and a warning per kind of mismatch. */
function selectDarks(
  ctx: PhaseContext<RawStackState>,
  sources: Record<CalibrationStage, StageSource>,
  darkMembers: DarkMember[],
  lights: readonly FrameRecord[],
  darksBiasCorrected: boolean,
): { groups: DarkGroup<DarkMember>[]; selections: Map<number, DarkSelection> } {
  const cal = ctx.state.config.calibration;
  const grouping = { autoSelect: cal.dark_auto_select, useTemp: cal.dark_match_use_temp, tempToleranceC: cal.dark_match_temp_tolerance_c };
  let groups: DarkGroup<DarkMember>[] = active(sources.dark) ? groupDarks(darkMembers, grouping) : [];
  if (sources.dark.kind === 'master') groups = groups.map((g) => ({ ...g, name: basename(sources.dark.path!) }));
  const selections = new Map<number, DarkSelection>();
  if (groups.length === 0) return { groups, selections };
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
  return { groups, selections };
}

/**
 * Run queue with a flats folder whose frames carry FILTER: one flat group per filter, each light
 * divided by its own filter's (flats without FILTER serve filters that have none); groups no
 * light uses are dropped. Null groups otherwise (one flat for every light).
 */
function groupFlatsByFilter(
  ctx: PhaseContext<RawStackState>,
  sources: Record<CalibrationStage, StageSource>,
  flatInfos: { file: string; filter: string | null }[],
  lights: readonly FrameRecord[],
): { flatGroups: Map<string, string[]> | null; lightFlatKey: Map<number, string | null> } {
  const lightFlatKey = new Map<number, string | null>();
  if (!ctx.state.queue || sources.flat.kind !== 'folder' || !flatInfos.some((f) => f.filter)) return { flatGroups: null, lightFlatKey };
  const flatGroups = new Map<string, string[]>();
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
  return { flatGroups, lightFlatKey };
}
