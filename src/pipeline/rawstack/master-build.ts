// CALIBRATION's masters, in the order the lights need them (calibration.ts head comment):
//   1. bias (combined from a folder, or a master file);
//   2. darks: only the groups some light uses; a dark combined here has the bias subtracted
//      (dark − bias), as has a master file whose header does not say it is bias-corrected;
//   3. dark flats (raw: they hold the flats' bias and dark signal), only beside a flat;
//   4. flat: minus the dark-flat master (else the bias), combined at a common level, divided by
//      its median per CFA site; in a run queue one per filter group.
// Each combination gets the budget the masters held so far leave (heldBytes); master files are
// written while the next one is combined (writes, awaited after the lights), and the bias and
// dark levels are counted on the worker pool meanwhile (levels, awaited before the lights).
// `details` collects what CALIBRATION's summary says about each stage.

import { basename, join } from 'node:path';
import { imageMedians, imageMediansPooled } from '../../cpu/stats.js';
import { isShared, sharedPool } from '../../cpu/worker-pool.js';
import type { FitsHeader } from '../../fits/index.js';
import type { GpuContext } from '../../gpu/context.js';
import { addArtifact } from '../artifacts.js';
import type { PhaseContext } from '../phase.js';
import type { DarkGroup } from '../stages/calibration/dark-select.js';
import { combineFrames, CombineScratch, firstHeader, flatMedians, headerSaysBiasCorrected, loadMasterFile, masterHeader, normalizeFlat, subtractInPlace, writeMaster, type CombineResult, type StageSource } from '../stages/calibration/masters.js';
import { active, type CalibrationSources } from './calibration-sources.js';
import type { RawStackState } from './state.js';

/** Median of a master (bias and dark levels for the saturation card). */
export function medianOf(data: Float32Array, width: number, height: number): number {
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

export function describeSource(s: StageSource): Record<string, unknown> {
  if (s.kind === 'folder') return { source: 'folder', dir: s.path };
  if (s.kind === 'master') return { source: 'master', master: s.path };
  return { source: s.kind, ...(s.path ? { configured: s.path } : {}) };
}

function combineDetails(r: CombineResult): Record<string, unknown> {
  return { frames: r.frames, rejected_fraction: Number(r.rejectedFraction.toFixed(6)), bands: r.bands, rows_per_band: r.rowsPerBand, device: r.device };
}

/** Units of CALIBRATION's progress: one per calibration file combined and per light. */
export interface CalibrationProgress {
  done: number;
  total: number;
}

export interface MasterBuildOptions {
  phase: string;
  width: number;
  height: number;
  cfa: boolean;
  workers: number;
  budgetBytes: number;
  mastersDir: string;
  /** A master's path relative to the run folder. */
  mastersRel: (name: string) => string;
  /** The stack kernel's context for combining (device-policy.ts), null for TypeScript. */
  gpu: GpuContext | null;
  progress: CalibrationProgress;
}

export class MasterBuilder {
  /** Bytes of the masters held so far: the budget left for the bands of the next combination. */
  heldBytes = 0;
  readonly details: Record<string, Record<string, unknown>> = {};
  /** Master files being written (awaited after the lights; a failed one fails the phase). */
  readonly writes: Promise<unknown>[] = [];
  private readonly levelJobs: Promise<unknown>[] = [];
  /** Host buffers of one combination, reused by the next (dropped after the masters). */
  private scratch: CombineScratch | null = new CombineScratch();
  /** The largest set combined here: every master's device band is sized for it, so the masters reuse one pooled allocation. */
  private readonly deviceSlots: number;
  private readonly frameBytes: number;

  bias: Float32Array | null = null;
  biasName: string | null = null;
  private biasLevelJob: Promise<number> = Promise.resolve(0);
  readonly darks = new Map<number, Float32Array>();
  readonly darkLevels = new Map<number, number>();
  private darkflat: Float32Array | null = null;
  private darkflatName: string | null = null;
  flat: Float32Array | null = null;
  flatName: string | null = null;
  /** Run queue: one flat per filter group key, and its file name. */
  readonly flats = new Map<string, Float32Array>();
  readonly flatNames = new Map<string, string>();

  constructor(
    private readonly ctx: PhaseContext<RawStackState>,
    private readonly plan: CalibrationSources,
    private readonly o: MasterBuildOptions,
  ) {
    const { listed, flatGroups, usedGroups, sources } = plan;
    const combinedSets = [listed.bias, listed.darkflat, ...(flatGroups ? [...flatGroups.values()] : [listed.flat]), ...(sources.dark.kind === 'folder' ? usedGroups.map((g) => g.members) : [])];
    this.deviceSlots = Math.max(1, ...combinedSets.map((x) => x?.length ?? 0));
    this.frameBytes = o.width * o.height * 4;
  }

  /** The files the masters combine (progress units before the lights). */
  static filesToCombine(plan: CalibrationSources): number {
    const { listed, sources, usedGroups } = plan;
    return (listed.bias?.length ?? 0) + (listed.darkflat?.length ?? 0) + (listed.flat?.length ?? 0) + (sources.dark.kind === 'folder' ? usedGroups.reduce((a, g) => a + g.members.length, 0) : 0);
  }

  private async combine(stage: string, files: string[], extra: { subtract?: Float32Array | null; normalizeLevels?: boolean } = {}): Promise<CombineResult> {
    const { o, ctx } = this;
    const progress = o.progress;
    const r = await combineFrames(files, {
      width: o.width,
      height: o.height,
      kappa: ctx.state.config.calibration.master_rejection_sigma,
      budgetBytes: Math.max(o.budgetBytes - this.heldBytes - this.frameBytes, 0),
      gpu: o.gpu,
      workers: o.workers,
      deviceSlots: this.deviceSlots,
      scratch: this.scratch ?? undefined,
      ...extra,
      checkCancelled: () => ctx.checkCancelled(),
      onProgress: (reads, all) => ctx.progress(Math.floor(progress.done + (files.length * reads) / all), progress.total, `master_${stage}`),
    });
    progress.done += files.length;
    this.heldBytes += this.frameBytes;
    return r;
  }

  /** Loads a master file (counted in heldBytes). */
  private async load(source: StageSource): Promise<{ data: Float32Array; header: FitsHeader }> {
    const loaded = await loadMasterFile(source, { width: this.o.width, height: this.o.height });
    this.heldBytes += this.frameBytes;
    return loaded;
  }

  /** Starts writing a master and registers it; its absolute path. */
  private written(stage: string, name: string, data: Float32Array, header: FitsHeader): string {
    const pending = writeMaster(this.o.mastersDir, name, this.o.width, this.o.height, data, header);
    pending.catch(() => undefined); // awaited by the phase; an earlier failure must not leave it unhandled
    this.writes.push(pending);
    addArtifact(this.ctx.state, `master_${stage}`, this.o.phase, this.o.mastersRel(name));
    return join(this.o.mastersDir, name);
  }

  /** A level counted on the worker pool meanwhile; awaited before the lights. */
  private later<T>(job: Promise<T>): Promise<T> {
    job.catch(() => undefined); // awaited by finish(); an earlier failure must not leave it unhandled
    this.levelJobs.push(job);
    return job;
  }

  /** 1. Bias. */
  async buildBias(): Promise<void> {
    const { sources, listed, firstHeaders } = this.plan;
    const { state } = this.ctx;
    const kappa = state.config.calibration.master_rejection_sigma;
    this.details.bias = describeSource(sources.bias);
    if (sources.bias.kind === 'folder') {
      const r = await this.combine('bias', listed.bias!);
      this.bias = r.data;
      this.biasName = 'master_bias.fits';
      const header = masterHeader(firstHeaders.bias ?? null, { imageType: 'Master Bias', frames: r.frames, exptime: null, temperature: null, kappa, source: sources.bias.path! });
      state.masters.bias = this.written('bias', this.biasName, this.bias, header);
      this.details.bias = { ...this.details.bias, ...combineDetails(r), master: this.o.mastersRel(this.biasName) };
    } else if (sources.bias.kind === 'master') {
      this.bias = (await this.load(sources.bias)).data;
      this.biasName = basename(sources.bias.path!);
      state.masters.bias = sources.bias.path;
    }
    this.biasLevelJob = this.later(this.bias ? medianLater(this.bias, this.o.width, this.o.height, this.o.workers) : Promise.resolve(0));
  }

  /** 2. Darks: only the groups some light uses. */
  async buildDarks(): Promise<void> {
    const plan = this.plan;
    const { sources, groups, selections, usedGroups, firstHeaders } = plan;
    const { state } = this.ctx;
    const cal = state.config.calibration;
    const bias = this.bias;
    this.details.dark = describeSource(sources.dark);
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
        this.ctx.checkCancelled();
        let data: Float32Array;
        if (sources.dark.kind === 'folder') {
          const r = await this.combine('dark', g.members.map((m) => m.file));
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
            history: bias ? [`skystack CALIBRATION: bias ${this.biasName} subtracted (dark - bias)`] : [],
          });
          this.written('dark', g.name, data, header);
          Object.assign(row, combineDetails(r), { master: this.o.mastersRel(g.name) });
        } else {
          data = plan.darkFile!.data;
          this.heldBytes += this.frameBytes;
          if (bias && !headerSaysBiasCorrected(plan.darkFile!.header)) subtractInPlace(data, bias);
          row.master = sources.dark.path;
        }
        this.darks.set(g.id, data);
        const id = g.id;
        this.later(medianLater(data, this.o.width, this.o.height, this.o.workers).then((level) => this.darkLevels.set(id, level)));
      }
      const lightsOf = (g: DarkGroup) => [...selections.values()].filter((s) => s.groupId === g.id).length;
      const mostUsed = [...usedGroups].sort((a, b) => lightsOf(b) - lightsOf(a) || a.id - b.id)[0];
      if (mostUsed) state.masters.dark = sources.dark.kind === 'master' ? sources.dark.path : join(this.o.mastersDir, mostUsed.name);
      this.details.dark = {
        ...this.details.dark,
        frames: plan.darkMembers.length,
        auto_select: cal.dark_auto_select,
        use_temp: cal.dark_match_use_temp,
        bias_corrected: plan.darksBiasCorrected,
        groups: groupRows,
        scaled_lights: [...selections.values()].filter((s) => s.scale !== 1).length,
      };
    }
    // The dark master file is held by `darks` where a light uses it; otherwise it can go.
    plan.darkFile = null;
  }

  /** 3. Dark flats (raw: they hold the flats' bias and dark signal). */
  async buildDarkflat(): Promise<void> {
    const { sources, listed, firstHeaders, useDarkflat } = this.plan;
    const { state } = this.ctx;
    this.details.darkflat = { ...describeSource(sources.darkflat), ...(active(sources.darkflat) && !useDarkflat ? { used: false, note: 'no flat to correct' } : {}) };
    if (!useDarkflat) return;
    if (sources.darkflat.kind === 'folder') {
      const r = await this.combine('darkflat', listed.darkflat!);
      this.darkflat = r.data;
      this.darkflatName = 'master_darkflat.fits';
      const header = masterHeader(firstHeaders.darkflat ?? null, { imageType: 'Master Dark Flat', frames: r.frames, exptime: null, temperature: null, kappa: state.config.calibration.master_rejection_sigma, source: sources.darkflat.path! });
      state.masters.darkflat = this.written('darkflat', this.darkflatName, this.darkflat, header);
      this.details.darkflat = { ...this.details.darkflat, ...combineDetails(r), master: this.o.mastersRel(this.darkflatName) };
    } else {
      this.darkflat = (await this.load(sources.darkflat)).data;
      this.darkflatName = basename(sources.darkflat.path!);
      state.masters.darkflat = sources.darkflat.path;
    }
  }

  /** The header of a master flat combined here: the offset master subtracted from each flat (null: none) and the medians it was divided by. */
  private flatMasterHeader(first: FitsHeader | null, frames: number, offsetName: string | null, siteMedians: number[]): FitsHeader {
    const { sources } = this.plan;
    return masterHeader(first, {
      imageType: 'Master Flat',
      frames,
      exptime: null,
      temperature: null,
      kappa: this.ctx.state.config.calibration.master_rejection_sigma,
      source: sources.flat.path!,
      cards: [
        ['BIASCORR', offsetName !== null],
        ['FLATNORM', true],
      ],
      history: [
        ...(offsetName ? [`skystack CALIBRATION: ${offsetName} subtracted from each flat`] : []),
        `skystack CALIBRATION: divided by its median ${this.o.cfa ? 'per CFA site' : ''} (${siteMedians.map((m) => m.toFixed(2)).join(', ')})`,
      ],
    });
  }

  /** 4. Flat: offset-corrected, combined at a common level, divided by its median per CFA site; per filter group in a run queue. */
  async buildFlat(): Promise<void> {
    const { sources } = this.plan;
    this.details.flat = describeSource(sources.flat);
    if (active(sources.flat) && this.plan.flatGroups) await this.buildFilterFlats(this.plan.flatGroups);
    else if (active(sources.flat)) await this.buildOneFlat();
  }

  private async buildFilterFlats(flatGroups: Map<string, string[]>): Promise<void> {
    const { sources, lightFlatKey } = this.plan;
    const { state } = this.ctx;
    const { width, height, cfa, workers } = this.o;
    const offset = this.darkflat ?? this.bias;
    const offsetName = this.darkflat ? this.darkflatName : this.bias ? this.biasName : null;
    if (offsetName === null) this.ctx.warn('flat_offset_not_removed', 'no bias or dark-flat master: the flat keeps its offset, so vignetting and dust are under-corrected');
    const perFilter: Record<string, unknown> = {};
    for (const [k, files] of flatGroups) {
      this.ctx.checkCancelled();
      const name = k ? `master_flat_${k.replace(/[^A-Za-z0-9_+-]/g, '_')}.fits` : 'master_flat.fits';
      const combined = await this.combine('flat', files, { subtract: offset, normalizeLevels: true });
      const siteMedians = normalizeFlat(combined.data, width, height, cfa, sources.flat.key ?? 'flat', await flatMedians(combined.data, width, height, cfa, workers));
      const header = this.flatMasterHeader(await firstHeader(files[0]!), combined.frames, offsetName, siteMedians);
      const file = this.written('flat', name, combined.data, header);
      this.flats.set(k, combined.data);
      this.flatNames.set(k, name);
      perFilter[k || 'none'] = { ...combineDetails(combined), master: this.o.mastersRel(name), lights: [...lightFlatKey.values()].filter((x) => x === k).length, site_medians: siteMedians.map((m) => Number(m.toFixed(4))) };
      if (!state.masters.flat || k === 'L') state.masters.flat = file;
    }
    if (this.darkflat) this.heldBytes -= this.frameBytes;
    this.darkflat = null;
    this.details.flat = { ...this.details.flat, per_filter: perFilter, offset: offsetName, normalized_by: cfa ? 'cfa_site' : 'whole', unflattened_lights: [...lightFlatKey.values()].filter((x) => x === null).length };
  }

  private async buildOneFlat(): Promise<void> {
    const { sources, listed, firstHeaders } = this.plan;
    const { state } = this.ctx;
    const { width, height, cfa, workers } = this.o;
    const offset = this.darkflat ?? this.bias;
    const offsetName = this.darkflat ? this.darkflatName : this.bias ? this.biasName : null;
    let offsetApplied: string | null = sources.flat.kind === 'folder' ? offsetName : this.darkflatName;
    let combined: CombineResult | null = null;
    let flat: Float32Array;
    if (sources.flat.kind === 'folder') {
      combined = await this.combine('flat', listed.flat!, { subtract: offset, normalizeLevels: true });
      flat = combined.data;
    } else {
      // Master flat files from other tools (PixInsight, Siril) are calibrated flats in ADU without
      // a card saying so: they are used as written, unless dark flats were configured with them
      // (the user's explicit request to remove the flats' offset). Ours carry BIASCORR = T.
      const loaded = await this.load(sources.flat);
      flat = loaded.data;
      if (headerSaysBiasCorrected(loaded.header)) offsetApplied = 'already corrected (header)';
      else if (medianOf(flat, width, height) < 10) offsetApplied = 'already normalised';
      else if (this.darkflat) subtractInPlace(flat, this.darkflat);
      else offsetApplied = 'none (master file used as written)';
    }
    if (offsetApplied === null) this.ctx.warn('flat_offset_not_removed', 'no bias or dark-flat master: the flat keeps its offset, so vignetting and dust are under-corrected');
    const siteMedians = normalizeFlat(flat, width, height, cfa, sources.flat.key ?? 'flat', await flatMedians(flat, width, height, cfa, workers));
    // Releases the darkflat: only the normalised flat is needed from here on.
    if (this.darkflat) this.heldBytes -= this.frameBytes;
    this.darkflat = null;
    this.flat = flat;
    if (sources.flat.kind === 'folder') {
      this.flatName = 'master_flat.fits';
      const header = this.flatMasterHeader(firstHeaders.flat ?? null, combined!.frames, offsetName, siteMedians);
      state.masters.flat = this.written('flat', this.flatName, flat, header);
      this.details.flat = { ...this.details.flat, ...combineDetails(combined!), master: this.o.mastersRel(this.flatName), levels: combined!.levels?.map((l) => Number(l.toFixed(2))) ?? null };
    } else {
      this.flatName = basename(sources.flat.path!);
      state.masters.flat = sources.flat.path;
    }
    this.details.flat = { ...this.details.flat, offset: offsetApplied, normalized_by: cfa ? 'cfa_site' : 'whole', site_medians: siteMedians.map((m) => Number(m.toFixed(4))) };
  }

  /** After the masters: the levels counted meanwhile, the flats' brightest response; the combinations' scratch released. */
  async finish(): Promise<{ biasLevel: number; flatTop: number }> {
    const flatTop = this.plan.flatGroups ? Math.max(1, ...[...this.flats.values()].map(flatHigh)) : this.flat ? flatHigh(this.flat) : 1;
    await Promise.all(this.levelJobs);
    const biasLevel = await this.biasLevelJob;
    this.scratch = null;
    return { biasLevel, flatTop };
  }
}
