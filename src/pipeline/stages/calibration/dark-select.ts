// Dark grouping and per-light dark selection (seed "Calibration" dark matching, docs/ARCHITECTURE.md "Raw Stack decisions").
// Pure functions over header values, so the rules are testable without pixels.
//
// Grouping: darks are grouped by EXPTIME; two darks belong to one exposure when they differ by
// at most max(0.1 s, 0.5 %) (capture programs jitter by a few hundredths of a second; distinct
// exposure settings differ by far more). With `dark_match_use_temp` each exposure group is split
// further by CCD-TEMP into clusters no wider than `dark_match_temp_tolerance_c`. Without
// `dark_auto_select` all darks form one group (used for every light, unscaled).
// Selection for a light (exposure e, temperature t):
//   1. groups whose exposure lies within `dark_match_exposure_tolerance_percent` of e (and, with
//      use_temp, whose mean temperature lies within the temperature tolerance of t): the closest
//      one (exposure first, then temperature), scale 1;
//   2. exposure matches but no temperature does: the closest temperature, scale 1, warning;
//   3. nothing within the exposure tolerance: the group with the closest exposure (ratio), its
//      bias-corrected master scaled by e / exposure, warning; when no bias master
//      exists the dark still holds the bias offset and cannot be scaled, so it is used as is;
//   4. light exposure unknown, or the only groups have no EXPTIME: the largest group, scale 1.

export interface DarkFrameHeader {
  exptime: number | null;
  temperature: number | null;
}

export interface DarkGroup<F extends DarkFrameHeader = DarkFrameHeader> {
  id: number;
  /** Median EXPTIME of the members, null when they carry none. */
  exptime: number | null;
  /** Mean CCD-TEMP of the members that carry one. */
  temperature: number | null;
  members: F[];
  /** File name of the group's master under outputs/masters/ (or of the master file). */
  name: string;
}

export interface DarkGroupingOptions {
  autoSelect: boolean;
  useTemp: boolean;
  tempToleranceC: number;
}

export interface DarkSelectionOptions extends DarkGroupingOptions {
  exposureTolerancePercent: number;
  /** Whether the dark masters are bias-corrected (scaling is possible). */
  biasCorrected: boolean;
}

export type DarkNote = 'exact' | 'temperature_mismatch' | 'scaled' | 'unscaled_no_bias' | 'exposure_unknown' | 'single';

export interface DarkSelection {
  groupId: number;
  scale: number;
  note: DarkNote;
}

const median = (v: number[]): number => {
  const s = [...v].sort((a, b) => a - b);
  const n = s.length;
  return n % 2 ? s[n >> 1]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
};

/** "120", "0.5", "119.96" — an exposure for a file name (integers when within 0.5 % of one). */
export function formatExposure(e: number): string {
  const r = Math.round(e);
  if (r > 0 && Math.abs(e - r) <= 0.005 * r) return String(r);
  return String(Number(e.toFixed(2)));
}

function sameExposure(a: number, b: number): boolean {
  return Math.abs(a - b) <= Math.max(0.1, 0.005 * Math.max(a, b));
}

export function groupDarks<F extends DarkFrameHeader>(frames: readonly F[], options: DarkGroupingOptions): DarkGroup<F>[] {
  const make = (members: F[], id: number): Omit<DarkGroup<F>, 'name'> => {
    const exps = members.map((m) => m.exptime).filter((e): e is number => e !== null);
    const temps = members.map((m) => m.temperature).filter((t): t is number => t !== null);
    return {
      id,
      exptime: exps.length > 0 ? median(exps) : null,
      temperature: temps.length > 0 ? temps.reduce((a, b) => a + b, 0) / temps.length : null,
      members,
    };
  };
  let groups: Omit<DarkGroup<F>, 'name'>[];
  if (!options.autoSelect) {
    groups = frames.length > 0 ? [make([...frames], 0)] : [];
  } else {
    const known = frames.filter((f) => f.exptime !== null).sort((a, b) => a.exptime! - b.exptime!);
    const unknown = frames.filter((f) => f.exptime === null);
    const byExposure: F[][] = [];
    for (const f of known) {
      const last = byExposure[byExposure.length - 1];
      if (last && sameExposure(last[0]!.exptime!, f.exptime!)) last.push(f);
      else byExposure.push([f]);
    }
    if (unknown.length > 0) byExposure.push(unknown);
    const split: F[][] = [];
    for (const g of byExposure) {
      if (!options.useTemp) {
        split.push(g);
        continue;
      }
      const withT = g.filter((f) => f.temperature !== null).sort((a, b) => a.temperature! - b.temperature!);
      const noT = g.filter((f) => f.temperature === null);
      const clusters: F[][] = [];
      for (const f of withT) {
        const last = clusters[clusters.length - 1];
        if (last && f.temperature! - last[0]!.temperature! <= options.tempToleranceC) last.push(f);
        else clusters.push([f]);
      }
      if (noT.length > 0) clusters.push(noT);
      split.push(...clusters);
    }
    groups = split.map((m, i) => make(m, i));
  }
  // Names: master_dark_<exp>s.fits, with the temperature when one exposure has several groups.
  const perExposure = new Map<string, number>();
  const expKey = (g: Omit<DarkGroup<F>, 'name'>) => (g.exptime === null ? 'unknown' : formatExposure(g.exptime));
  for (const g of groups) perExposure.set(expKey(g), (perExposure.get(expKey(g)) ?? 0) + 1);
  const used = new Set<string>();
  return groups.map((g) => {
    const k = expKey(g);
    let base = g.exptime === null ? 'master_dark' : `master_dark_${k}s`;
    if ((perExposure.get(k) ?? 0) > 1) base += g.temperature === null ? '_notemp' : `_${g.temperature.toFixed(1)}C`;
    let name = `${base}.fits`;
    for (let n = 2; used.has(name); n++) name = `${base}_${n}.fits`;
    used.add(name);
    return { ...g, name };
  });
}

/** Picks the dark group (and scale) for one light. `groups` must not be empty. */
export function selectDark(groups: readonly DarkGroup[], light: DarkFrameHeader, options: DarkSelectionOptions): DarkSelection {
  if (groups.length === 0) throw new Error('selectDark: no dark group');
  const largest = () => [...groups].sort((a, b) => b.members.length - a.members.length || a.id - b.id)[0]!;
  if (!options.autoSelect) return { groupId: groups[0]!.id, scale: 1, note: 'single' };
  const timed = groups.filter((g) => g.exptime !== null && g.exptime > 0);
  if (light.exptime === null || !(light.exptime > 0) || timed.length === 0) return { groupId: largest().id, scale: 1, note: 'exposure_unknown' };
  const e = light.exptime;
  const tol = (options.exposureTolerancePercent / 100) * e;
  const expDiff = (g: DarkGroup) => Math.abs(g.exptime! - e);
  const tempDiff = (g: DarkGroup) => (light.temperature === null || g.temperature === null ? Infinity : Math.abs(g.temperature - light.temperature));
  const byExpThenTemp = (a: DarkGroup, b: DarkGroup) => expDiff(a) - expDiff(b) || tempDiff(a) - tempDiff(b) || a.id - b.id;
  const byTempThenExp = (a: DarkGroup, b: DarkGroup) => tempDiff(a) - tempDiff(b) || expDiff(a) - expDiff(b) || a.id - b.id;
  // A small epsilon keeps an exposure exactly at the tolerance inside it despite rounding.
  const inExposure = timed.filter((g) => expDiff(g) <= tol * (1 + 1e-9) + 1e-9);
  if (inExposure.length > 0) {
    if (!options.useTemp || light.temperature === null) return { groupId: [...inExposure].sort(byExpThenTemp)[0]!.id, scale: 1, note: 'exact' };
    const inTemp = inExposure.filter((g) => tempDiff(g) <= options.tempToleranceC + 1e-9);
    if (inTemp.length > 0) return { groupId: [...inTemp].sort(byTempThenExp)[0]!.id, scale: 1, note: 'exact' };
    return { groupId: [...inExposure].sort(byTempThenExp)[0]!.id, scale: 1, note: 'temperature_mismatch' };
  }
  const ratio = (g: DarkGroup) => Math.abs(Math.log(g.exptime! / e));
  const closest = [...timed].sort((a, b) => ratio(a) - ratio(b) || tempDiff(a) - tempDiff(b) || a.id - b.id)[0]!;
  if (!options.biasCorrected) return { groupId: closest.id, scale: 1, note: 'unscaled_no_bias' };
  return { groupId: closest.id, scale: e / closest.exptime!, note: 'scaled' };
}
