// FRAME_FILTERING and friends on one generated 10-frame 512×384 mono set (bad frames: clouds,
// trailed, satellite, bad seeing) plus a featureless frame: temporal_midpoint reference; manual
// overrides by index and by file name, both ways (and a manual include of a frame without data);
// quality mode `off` → skipped with weights still set (quality and uniform); a frame without
// stars excluded `no_stars` everywhere; cancellation between frames in REFERENCE_SELECTION,
// REGISTRATION and QUALITY_ANALYSIS; the artifact writers' formats on constructed records.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { writeFits } from '../../src/fits/index.js';
import type { EventLine } from '../../src/pipeline/events.js';
import { frameQualityCsv, rejectedFramesText, FRAME_QUALITY_HEADER } from '../../src/pipeline/rawstack/quality-artifacts.js';
import { exclude, newFrameRecord } from '../../src/pipeline/rawstack/state.js';
import { csvRecords, runPhasesOn, splitCsv, type PhaseRun } from './registration-phases-helpers.js';

const W = 512;
const H = 384;
const FRAMES = 10;
let root = '';
let lights = '';
let truth: Truth;
/** quality_filter.mode off, default weighting (quality) and reference (best_quality). */
let offRun: PhaseRun;
const badIndex = (bad: string) => truth.frames.find((f) => f.bad === bad)!.index;
const lightName = (i: number) => `light_${String(i + 1).padStart(5, '0')}.fits`;
/** The generated lights only (the folder also holds a featureless frame). */
const LIGHTS = 'light_0*.fits';

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-ffphase-'));
  truth = await generateDataset({ out: root, kind: 'mono', frames: FRAMES, width: W, height: H, seed: 8, calibration: false });
  lights = join(root, 'lights');
  // A frame of the same size without any star (a closed shutter): flat sky plus a little noise.
  const blank = new Uint16Array(W * H);
  for (let i = 0; i < blank.length; i++) blank[i] = 1000 + ((i * 2654435761) >>> 28);
  await writeFits(join(lights, 'light_99999.fits'), { width: W, height: H, data: blank });
  offRun = await runPhasesOn(lights, join(root, 'runs'), { pattern: LIGHTS, quality_filter: { mode: 'off' } });
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

test('temporal_midpoint with quality mode off and uniform weights: middle frame, FRAME_FILTERING skipped, weights 1', async () => {
  const run = await runPhasesOn(lights, join(root, 'runs'), { pattern: LIGHTS, registration_reference: 'temporal_midpoint', quality_filter: { mode: 'off' }, stacking: { weighting: 'uniform' } });
  assert.is(run.result.status, 'ok');
  const rs = run.end('REFERENCE_SELECTION');
  // DATE-OBS every 130 s: the midpoint lies between frames 4 and 5; ties go to the earlier one.
  assert.equal([rs.strategy, rs.reference_index, rs.fallback], ['temporal_midpoint', 4, false]);
  assert.is(run.registration!.reference_index, 4);
  const ff = run.end('FRAME_FILTERING');
  assert.equal([ff.status, ff.reason, ff.rejection_mode], ['skipped', 'quality_mode_off', 'off']);
  const rows = csvRecords(run);
  assert.is(rows.length, FRAMES);
  // Nothing filtered: only frames that failed registration can be out.
  for (const r of rows) {
    if (r.status === 'excluded') assert.is(r.reason, 'registration_failed');
    else assert.is(r.weight, '1.0000');
  }
  assert.ok(rows.filter((r) => r.status === 'included').length >= FRAMES - 1);
  assert.is(run.rejected.length, rows.filter((r) => r.status === 'excluded').length);
  assert.ok(run.manifest.artifacts.some((a) => a.type === 'frame_quality' && a.phase === 'FRAME_FILTERING'));
});

test('quality mode off with quality weighting: weights follow quality_score, mean 1', async () => {
  const run = offRun;
  assert.is(run.end('FRAME_FILTERING').status, 'skipped');
  const rows = csvRecords(run).filter((r) => r.status === 'included');
  const w = rows.map((r) => Number(r.weight));
  assert.ok(Math.abs(w.reduce((a, b) => a + b, 0) / w.length - 1) < 1e-3);
  // The weight is monotone in the score (w ∝ s/(1 − s)); a trailed or clouded frame weighs least.
  const byScore = [...rows].sort((a, b) => Number(a.quality_score) - Number(b.quality_score));
  for (let i = 1; i < byScore.length; i++) assert.ok(Number(byScore[i]!.weight) >= Number(byScore[i - 1]!.weight));
  assert.ok([badIndex('trailed'), badIndex('clouds')].map(String).includes(byScore[0]!.index!));
  assert.ok(Math.min(...w) < 0.2 && Math.max(...w) > 1.1, `weights ${w.join(' ')}`);
});

test('manual overrides by index and by name win both ways; a frame without stars is excluded no_stars', async () => {
  const seeing = badIndex('bad_seeing');
  const clouds = badIndex('clouds');
  // The best_quality reference does not depend on the filter mode.
  const autoRef = offRun.end('REFERENCE_SELECTION').reference_index as number;
  const good = truth.frames.filter((f) => f.bad === null && f.index !== autoRef).map((f) => f.index);
  const dropByIndex = good[0]!;
  const overrides = {
    [String(seeing)]: true, // keep the bad-seeing frame (index key)
    [lightName(clouds)]: { include: true }, // keep the clouds frame (name key, object form)
    [String(dropByIndex)]: false, // drop a good frame by index
    [lightName(autoRef)]: false, // drop the best frame by name: it can no longer be the reference
    'light_99999.fits': true, // a frame without stars cannot be brought back
    'no_such_frame.fits': false,
  };
  const warnings: string[] = [];
  const run = await runPhasesOn(lights, join(root, 'runs'), { quality_filter: { manual_overrides: overrides } }, { onEvent: (l) => l.type === 'warning' && warnings.push(l.code) });
  assert.is(run.result.status, 'ok');
  const rows = csvRecords(run);
  assert.is(rows.length, FRAMES + 1);
  const ref = run.end('REFERENCE_SELECTION').reference_index as number;
  assert.ok(ref !== autoRef && ref !== dropByIndex, `reference ${ref} is not a manually excluded frame`);
  assert.equal([rows[seeing]!.status, rows[clouds]!.status], ['included', 'included']);
  assert.equal([rows[dropByIndex]!.status, rows[dropByIndex]!.reason], ['excluded', 'manual']);
  assert.equal([rows[autoRef]!.status, rows[autoRef]!.reason], ['excluded', 'manual']);
  assert.equal([rows[badIndex('trailed')]!.status], ['excluded']);
  assert.equal([rows[badIndex('satellite')]!.status], ['included']);
  // The featureless frame: no stars, no registration, no override.
  const blank = rows[FRAMES]!;
  assert.equal([blank.file, blank.status, blank.reason, blank.star_count, blank.fwhm, blank.registration_cc, blank.weight], ['light_99999.fits', 'excluded', 'no_stars', '0', '', '', '']);
  const regBlank = run.registration!.frames[FRAMES]!;
  assert.equal([regBlank.status, regBlank.reason, regBlank.matrix], ['skipped', 'no_stars', null]);
  assert.ok(warnings.includes('manual_include_without_data'), warnings.join());
  assert.ok(warnings.includes('manual_override_unmatched'), warnings.join());
  const ff = run.end('FRAME_FILTERING');
  assert.is(ff.manual_overrides, 4);
  assert.equal([ff.n_total, ff.n_accepted, ff.n_rejected], [FRAMES + 1, FRAMES + 1 - 4, 4]);
  // Kept-by-override frames say which rules they overrode.
  const seeingEvent = run.lines.find((l) => l.type === 'frame' && l.phase === 'FRAME_FILTERING' && l.index === seeing) as Extract<EventLine, { type: 'frame' }>;
  assert.is(seeingEvent.code, 'manual_include');
  assert.match(JSON.stringify(seeingEvent.metrics), /fwhm_outlier/);
  assert.ok(run.rejected.some((l) => l.startsWith(`${dropByIndex}\t${lightName(dropByIndex)}\tmanual\texcluded by manual override`)));
});

for (const phase of ['REFERENCE_SELECTION', 'REGISTRATION', 'QUALITY_ANALYSIS'] as const) {
  test(`cancellation between frames of ${phase}: phase ends error/cancelled within 2 s, REPORT runs, run cancelled`, async () => {
    const controller = new AbortController();
    let abortedAt = 0;
    let endedAt = 0;
    const run = await runPhasesOn(lights, join(root, 'runs'), { pattern: LIGHTS }, {
      signal: controller.signal,
      onEvent: (l) => {
        if (abortedAt === 0 && (l.type === 'frame' || l.type === 'phase_progress') && l.phase === phase) {
          abortedAt = performance.now();
          controller.abort();
        }
        if (l.type === 'phase_end' && l.phase === phase) endedAt = performance.now();
      },
    });
    const end = run.end(phase);
    assert.equal([end.status, end.reason], ['error', 'cancelled']);
    assert.ok(abortedAt > 0 && endedAt - abortedAt < 2000, `cancel took ${(endedAt - abortedAt).toFixed(0)} ms`);
    const frameEvents = run.lines.filter((l) => l.type === 'frame' && l.phase === phase).length;
    assert.ok(frameEvents < FRAMES, `${frameEvents} frames done before the cancel took effect`);
    console.log(`  ${phase}: cancel took ${(endedAt - abortedAt).toFixed(0)} ms, ${frameEvents} frame events`);
    assert.is(run.end('REPORT').status, 'ok');
    assert.is(run.result.status, 'cancelled');
    assert.is(run.lines[run.lines.length - 1]!.type, 'run_end');
    assert.not.ok(run.lines.some((l) => l.type === 'phase_start' && l.phase === 'FRAME_FILTERING'));
  });
}

test('artifact writers: CSV quoting, fixed decimals, empty unknowns; rejected lines with all reasons', () => {
  const a = newFrameRecord(0, '/x/a,"b".fits', 'a,"b".fits', null);
  a.metrics = { star_count: 12, fwhm: 2.34567, fwhm_x: 2.5, fwhm_y: 2.2, eccentricity: 0.3, background_median: 1000.456, background_rms: 12.3456, snr_estimate: 40.123, saturation: 1.5e-5, median_star_flux: 1, registration_cc: null, quality_score: NaN };
  const b = newFrameRecord(1, '/x/b.fits', 'b.fits', null);
  exclude(b, 'eccentricity', 'eccentricity 0.90 > max 0.65');
  exclude(b, 'fwhm_outlier', 'fwhm\t5.00 > limit 3.00');
  const csv = frameQualityCsv([a, b]).split('\n');
  assert.is(csv[0], FRAME_QUALITY_HEADER);
  assert.is(csv[1], '0,"a,""b"".fits",included,,12,2.346,2.500,2.200,0.300,1000.46,12.35,40.12,0.000015,,,');
  assert.equal(splitCsv(csv[1]!)[1], 'a,"b".fits');
  assert.is(csv[2], '1,b.fits,excluded,eccentricity,,,,,,,,,,,,');
  assert.is(csv[3], '');
  assert.is(rejectedFramesText([a, b]), '1\tb.fits\teccentricity\teccentricity 0.90 > max 0.65; also fwhm_outlier: fwhm 5.00 > limit 3.00\n');
  assert.is(rejectedFramesText([a]), '');
});

test.run();
