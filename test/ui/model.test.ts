// Unit tests of the UI's DOM-free modules, loaded from the built dist/ui (the browser project is
// compiled separately, so they are imported at run time): the JSON key-line scanner that places
// validation errors at their keys, the CSV parser of the frame table, the run-state reducer of
// the monitors, the dotted-path merge behind "visible fields override the editor" and what the
// frame table learns from the event lines (reference, DATE-OBS, calibrated copies).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { RAWSTACK } from '../../src/pipeline/rawstack/definition.js';
import { phasePlan } from '../../src/pipeline/runner.js';
import { csvRecords, parseCsv } from '../../src/shared/csv.js';

const uiDir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'ui');
const load = async <T>(name: string): Promise<T> => (await import(pathToFileURL(join(uiDir, name)).href)) as T;

const built = existsSync(join(uiDir, 'param-editor.js'));
if (!built) console.log(`  [ui] model tests SKIPPED: the UI is not built (${uiDir})`);
const uiTest = (built ? test : test.skip) as typeof test;

type EventLine = { seq: number; type: string; [k: string]: unknown };
interface RunStateLike {
  phases: Map<string, { status: string; progress: number; reason?: string; current?: number; total?: number }>;
  events: EventLine[];
  runStatus: string | null;
  apply(line: EventLine): boolean;
}

uiTest('keyLines: the line of every key path, nested objects and arrays, any formatting', async () => {
  const { keyLines } = await load<{ keyLines(text: string): Map<string, number> }>('param-editor.js');
  const text = JSON.stringify({ a: 1, rejection: { low: 3, high: 3 }, queue: [{ filter: 'L', input_dir: '/x' }, { filter: 'R' }], s: 'with "quotes", {braces} and [brackets]', hypermetric_stretch: { target_bg: 5 } }, null, 2);
  const lines = keyLines(text);
  const lineOf = (needle: string) => text.split('\n').findIndex((l) => l.includes(needle)) + 1;
  assert.is(lines.get('a'), 2);
  assert.is(lines.get('rejection.low'), lineOf('"low"'));
  assert.is(lines.get('rejection.high'), lineOf('"high"'));
  assert.is(lines.get('queue.0.input_dir'), lineOf('"input_dir"'));
  assert.is(lines.get('queue.1.filter'), lineOf('"R"'));
  assert.is(lines.get('hypermetric_stretch.target_bg'), lineOf('"target_bg"'));
  // Compact text: everything on line 1; a key inside a string value is not a key.
  const compact = keyLines('{"a":{"b":[1,{"c":2}]},"d":"e: \\"f\\": 1"}');
  assert.is(compact.get('a.b.1.c'), 1);
  assert.is(compact.get('d'), 1);
  assert.is(compact.size, 4);
});

test('parseCsv (src/shared, built for the UI and the server): RFC 4180 quoting (commas, doubled quotes, line breaks) and records by header', () => {
  assert.equal(parseCsv('a,b\n1,"x, y"\n2,"say ""hi"""\n3,"two\nlines"\n'), [
    ['a', 'b'],
    ['1', 'x, y'],
    ['2', 'say "hi"'],
    ['3', 'two\nlines'],
  ]);
  assert.equal(parseCsv('a,b\r\n1,\r\n'), [
    ['a', 'b'],
    ['1', ''],
  ]);
  assert.equal(csvRecords('index,file,status\n0,"light,1.fits",excluded\n'), [{ index: '0', file: 'light,1.fits', status: 'excluded' }]);
});

/** The Raw Stack plan as a run's run_start carries it (from the definition, the one source). */
const PLAN = phasePlan(RAWSTACK.phases);

uiTest('RunState: the plan from run_start; pending → running → final per phase, progress, seq dedup, run_end', async () => {
  const { RunState } = await load<{ RunState: new () => RunStateLike }>('run-state.js');
  const s = new RunState();
  assert.is(s.phases.size, 0, 'no plan before run_start');
  assert.ok(s.apply({ seq: 1, type: 'run_start', kind: 'rawstack', phases: PLAN }));
  assert.equal([...s.phases.keys()], PLAN.map((p) => p.name));
  assert.ok([...s.phases.values()].every((p) => p.status === 'pending'));
  s.apply({ seq: 2, type: 'phase_start', phase: 'INPUT_SCAN' });
  assert.is(s.phases.get('INPUT_SCAN')!.status, 'running');
  s.apply({ seq: 3, type: 'phase_progress', phase: 'INPUT_SCAN', current: 3, total: 6, progress: 0.5 });
  assert.is(s.phases.get('INPUT_SCAN')!.progress, 0.5);
  assert.is(s.phases.get('INPUT_SCAN')!.current, 3);
  // A replayed line (same seq) changes nothing.
  assert.not.ok(s.apply({ seq: 3, type: 'phase_end', phase: 'INPUT_SCAN', status: 'error' }));
  s.apply({ seq: 4, type: 'phase_end', phase: 'INPUT_SCAN', status: 'ok', duration_ms: 12 });
  s.apply({ seq: 5, type: 'phase_start', phase: 'CALIBRATION' });
  s.apply({ seq: 6, type: 'phase_end', phase: 'CALIBRATION', status: 'skipped', reason: 'not_configured' });
  assert.is(s.phases.get('INPUT_SCAN')!.status, 'ok');
  assert.is(s.phases.get('INPUT_SCAN')!.progress, 1);
  assert.is(s.phases.get('CALIBRATION')!.reason, 'not_configured');
  assert.is(s.runStatus, null);
  s.apply({ seq: 7, type: 'run_end', status: 'cancelled' });
  assert.is(s.runStatus, 'cancelled');
  assert.is(s.events.length, 7);
  assert.equal([...s.phases.keys()], PLAN.map((p) => p.name));
});

uiTest('runNotes: optional phases that did not deliver, with reason and message; HMS names the switch', async () => {
  const { RunState, runNotes } = await load<{ RunState: new () => RunStateLike; runNotes(s: RunStateLike): { phase: string; status: string; text: string }[] }>('run-state.js');
  const s = new RunState();
  s.apply({ seq: 1, type: 'run_start', kind: 'rawstack', phases: PLAN });
  s.apply({ seq: 2, type: 'phase_end', phase: 'ASTROMETRY', status: 'ok' });
  s.apply({ seq: 3, type: 'phase_end', phase: 'BGE', status: 'skipped', reason: 'disabled', message: 'postprocess.bge is false' });
  s.apply({ seq: 4, type: 'phase_end', phase: 'PCC', status: 'skipped', reason: 'no_catalog_stars', message: 'no star catalogue: pcc.catalog_file is not set and no catalogue package is installed' });
  const hms = 'PCC ended skipped (no_catalog_stars) and hypermetric_stretch.require_successful_pcc is true; set hypermetric_stretch.require_successful_pcc to false to stretch without a successful PCC';
  s.apply({ seq: 5, type: 'phase_end', phase: 'HYPERMETRIC_STRETCH', status: 'skipped', reason: 'pcc_failed', message: hms });
  // A core phase in error is not an optional result's note (the plan says which are optional).
  s.apply({ seq: 6, type: 'phase_end', phase: 'CALIBRATION', status: 'error', reason: 'calibration_error', message: 'x' });
  s.apply({ seq: 7, type: 'run_end', status: 'ok' });
  const notes = runNotes(s);
  // Switched-off phases are no news; a skipped PCC and the HMS it took along are.
  assert.equal(notes.map((n) => n.phase), ['PCC', 'HYPERMETRIC_STRETCH']);
  assert.is(notes[0]!.text, 'PCC skipped (no_catalog_stars): no star catalogue: pcc.catalog_file is not set and no catalogue package is installed');
  assert.is(notes[1]!.text, `HYPERMETRIC_STRETCH skipped (pcc_failed): ${hms}`);
});

uiTest('runEndNotice: a failed run names the failing phase and its message (what to fix), not only the job code', async () => {
  const { RunState, failedPhase } = await load<{ RunState: new () => RunStateLike; failedPhase(s: RunStateLike): { name: string; reason?: string; message?: string } | null }>('run-state.js');
  type Failed = { name: string; reason?: string; message?: string } | null;
  const { runEndNotice } = await load<{ runEndNotice(rs: string | null, job: unknown, what?: string, failed?: Failed): { text: string; kind: string } }>('api.js');
  const job = { job_id: 'j', kind: 'rawstack', state: 'error', error: { code: 'RUN_FAILED', message: 'run failed: INPUT_SCAN (no_frames)' } };
  const s = new RunState();
  s.apply({ seq: 1, type: 'run_start', kind: 'rawstack', phases: PLAN });
  // An optional phase in error does not fail the run; the required one that did is named.
  s.apply({ seq: 2, type: 'phase_end', phase: 'ASTROMETRY', status: 'error', reason: 'solver_failed', message: 'no solution' });
  s.apply({ seq: 3, type: 'phase_end', phase: 'INPUT_SCAN', status: 'error', reason: 'no_frames', message: 'no file in /data/empty matches "*.fits"' });
  s.apply({ seq: 4, type: 'run_end', status: 'error' });
  assert.is(failedPhase(s)?.name, 'INPUT_SCAN');
  assert.equal(runEndNotice(s.runStatus, job, 'Run', failedPhase(s)), { text: 'Run error in INPUT_SCAN: no file in /data/empty matches "*.fits"', kind: 'error' });
  // Without a failed phase (a crash before any phase ended) the job's error is the only word.
  assert.equal(runEndNotice('error', job, 'Run', null), { text: 'Run error — RUN_FAILED: run failed: INPUT_SCAN (no_frames)', kind: 'error' });
  // An ok run with a failed optional phase stays ok; a cancelled one is news, not an error.
  assert.equal(runEndNotice('ok', { ...job, state: 'ok', error: null }, 'Run', null), { text: 'Run ok', kind: 'ok' });
  assert.equal(runEndNotice('cancelled', { ...job, state: 'cancelled', error: null }), { text: 'Run cancelled', kind: 'info' });
});

uiTest('listingSummary: counts in the singular and plural; an input folder says how many FITS it holds, or that it holds none', async () => {
  const { listingSummary } = await load<{ listingSummary(c: { dirs: number; files: number; hidden: number; mode: 'dir' | 'file'; fits?: number }): string }>('listing-summary.js');
  assert.is(listingSummary({ dirs: 1, files: 1, hidden: 0, mode: 'dir' }), '1 folder, 1 file');
  assert.is(listingSummary({ dirs: 2, files: 3, hidden: 4, mode: 'file' }), '2 folders, 3 matching files (4 other files hidden)');
  assert.is(listingSummary({ dirs: 0, files: 13, hidden: 0, mode: 'dir', fits: 12 }), '0 folders, 13 files, 12 of them FITS');
  // The session folder above lights/: the frames are one level down.
  assert.is(listingSummary({ dirs: 1, files: 1, hidden: 0, mode: 'dir', fits: 0 }), '1 folder, 1 file. No FITS files here: open the subfolder that holds the frames.');
  assert.is(listingSummary({ dirs: 0, files: 4, hidden: 0, mode: 'dir', fits: 0 }), '0 folders, 4 files. No FITS files here.');
});

uiTest('mergeLayers: later layers win key by key, arrays replaced whole, inputs untouched', async () => {
  const { mergeLayers, setPath, getPath } = await load<{
    mergeLayers(...l: Record<string, unknown>[]): Record<string, unknown>;
    setPath(t: Record<string, unknown>, p: string, v: unknown): void;
    getPath(s: unknown, p: string): unknown;
  }>('config-paths.js');
  const editor = { rejection: { low: 9, high: 2, max_iters: 5 }, queue: [{ filter: 'L' }], report: { formats: ['json'] } };
  const form = { rejection: { low: 3 }, queue: [] };
  const merged = mergeLayers(editor, form);
  assert.equal(merged, { rejection: { low: 3, high: 2, max_iters: 5 }, queue: [], report: { formats: ['json'] } });
  assert.is(editor.rejection.low, 9);
  const t: Record<string, unknown> = {};
  setPath(t, 'quality_filter.manual_overrides', { 'a.fits': false });
  setPath(t, '__proto__.polluted', 1);
  assert.equal(t, { quality_filter: { manual_overrides: { 'a.fits': false } } });
  assert.is(getPath(t, 'quality_filter.manual_overrides.a'), undefined);
  assert.is(({} as Record<string, unknown>).polluted, undefined);
});

uiTest('overriddenKeys: the editor values the form replaced (leaves only; keys the editor lacks do not count)', async () => {
  const { mergeLayers, overriddenKeys } = await load<{
    mergeLayers(...l: Record<string, unknown>[]): Record<string, unknown>;
    overriddenKeys(base: Record<string, unknown>, layer: Record<string, unknown>): { path: string; before: unknown; after: unknown }[];
  }>('config-paths.js');
  const editor = { rejection: { low: 9, high: 3 }, stacking: { weighting: 'uniform' }, queue: [{ filter: 'L' }], run_name: 'x' };
  const form = { rejection: { low: 3, high: 3 }, stacking: { weighting: 'uniform', normalization: 'addscale' }, queue: [], lights_dir: '/d' };
  assert.equal(overriddenKeys(editor, mergeLayers(editor, form)), [
    { path: 'rejection.low', before: 9, after: 3 },
    { path: 'queue', before: [{ filter: 'L' }], after: [] },
  ]);
  assert.equal(overriddenKeys(editor, editor), []);
});

uiTest('frameContext: reference, DATE-OBS and calibrated copies from the event lines; plot frames from CSV rows', async () => {
  type Ctx = { referenceIndex: number | null; dateObs: Map<number, string>; paths: Map<number, string> };
  const { frameContext, plotFramesFromRows, openFrameOf } = await load<{
    frameContext(events: EventLine[], files?: string[]): Ctx;
    plotFramesFromRows(rows: unknown[], ctx: Ctx): { index: number; excluded: boolean; reason: string | null; date_obs: string | null; values: Record<string, number | null> }[];
    openFrameOf(row: { index: number; file: string }, ctx: Ctx): { index: number; file: string; path: string | null };
  }>('frame-data.js');
  const { frameRows } = await load<{ frameRows(csv: string): { index: number; file: string }[] }>('frame-table.js');
  const events: EventLine[] = [
    { seq: 1, type: 'frame', phase: 'INPUT_SCAN', index: 0, file: 'a.fits', outcome: 'ok', metrics: { width: 10, date_obs: '2026-03-14T21:05:00.000Z' } },
    { seq: 2, type: 'frame', phase: 'INPUT_SCAN', index: 1, file: 'b.fits', outcome: 'ok', metrics: { width: 10 } },
    { seq: 3, type: 'frame', phase: 'CALIBRATION', index: 0, file: 'a.fits', outcome: 'ok', metrics: { calibrated: 'outputs/calibrated/cal_00001.fit' } },
    { seq: 4, type: 'frame', phase: 'CALIBRATION', index: 1, file: 'b.fits', outcome: 'ok', metrics: { calibrated: 'outputs/calibrated/cal_00002.fit' } },
    { seq: 5, type: 'phase_end', phase: 'REFERENCE_SELECTION', status: 'ok', reference_index: 1 },
  ];
  const ctx = frameContext(events, ['outputs/calibrated/cal_00002.fit', 'outputs/stacked_rgb.fits']);
  assert.is(ctx.referenceIndex, 1);
  assert.equal([...ctx.dateObs], [[0, '2026-03-14T21:05:00.000Z']]);
  assert.equal([...ctx.paths], [[1, 'outputs/calibrated/cal_00002.fit']], 'a calibrated copy the run no longer has is not offered');
  assert.is(frameContext(events).paths.size, 2, 'without a file list every calibrated path counts');
  const rows = frameRows('index,file,status,reason,star_count,fwhm,eccentricity,background,weight\n0,a.fits,excluded,fwhm_outlier,12,4.5,0.3,1000.5,\n1,b.fits,included,,15,,0.2,990,1.2\n');
  const plot = plotFramesFromRows(rows, ctx);
  assert.equal(plot.map((f) => [f.index, f.excluded, f.reason, f.date_obs]), [[0, true, 'fwhm_outlier', '2026-03-14T21:05:00.000Z'], [1, false, null, null]]);
  assert.equal(plot[0]!.values, { star_count: 12, fwhm: 4.5, background: 1000.5, eccentricity: 0.3, weight: null });
  assert.is(plot[1]!.values.fwhm, null, 'an empty cell is a missing value, not 0');
  assert.equal(openFrameOf(rows[1]!, ctx), { index: 1, file: 'b.fits', path: 'outputs/calibrated/cal_00002.fit' });
  assert.equal(openFrameOf(rows[0]!, ctx), { index: 0, file: 'a.fits', path: null });
});

test.run();
