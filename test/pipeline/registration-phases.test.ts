// REFERENCE_SELECTION → REGISTRATION → QUALITY_ANALYSIS → FRAME_FILTERING end to end (with
// INPUT_SCAN and REPORT) on generated 10-frame mono and OSC (RGGB) sets of 640×480 with the
// generator's four bad frames (clouds, trailed, satellite, bad seeing), checked against truth.json:
// best_quality picks a good frame; matrices within 0.02 px RMS over the frame for good frames;
// registration.json shape; quality_score ranks the bad frames low; auto filtering removes exactly
// clouds / trailed / bad seeing with the right reasons; frame_quality.csv and rejected_frames.txt;
// weights; events; manifest; worker threads give the same numbers as the main thread.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { composeAffine, invertAffine, mappingRms, type Affine } from '../../src/algorithms/affine.js';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { csvRecords, CSV_COLUMNS, runPhasesOn, type PhaseRun } from './registration-phases-helpers.js';

const W = 640;
const H = 480;
const FRAMES = 10;
let root = '';
const sets: Record<string, { truth: Truth; lights: string; run: PhaseRun }> = {};

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-regphases-'));
  for (const [kind, seed] of [['mono', 5], ['osc', 6]] as const) {
    const out = join(root, kind);
    const truth = await generateDataset({ out, kind, pattern: 'RGGB', frames: FRAMES, width: W, height: H, seed, calibration: false });
    const lights = join(out, 'lights');
    const run = await runPhasesOn(lights, join(root, 'runs'), { run_name: kind });
    sets[kind] = { truth, lights, run };
  }
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

for (const kind of ['mono', 'osc'] as const) {
  test(`${kind}: phases ok, one start and one end each, per-frame events`, () => {
    const { run } = sets[kind]!;
    assert.is(run.result.status, 'ok');
    assert.equal(
      run.result.phases.map((p) => [p.phase, p.status]),
      ['INPUT_SCAN', 'REFERENCE_SELECTION', 'REGISTRATION', 'QUALITY_ANALYSIS', 'FRAME_FILTERING', 'REPORT'].map((p) => [p, 'ok']),
    );
    for (const phase of ['REFERENCE_SELECTION', 'REGISTRATION', 'QUALITY_ANALYSIS', 'FRAME_FILTERING']) {
      assert.is(run.lines.filter((l) => l.type === 'phase_start' && l.phase === phase).length, 1, phase);
      assert.is(run.lines.filter((l) => l.type === 'phase_end' && l.phase === phase).length, 1, phase);
      const frames = run.lines.filter((l) => l.type === 'frame' && l.phase === phase).map((l) => (l as { index: number }).index);
      assert.equal(frames.sort((a, b) => a - b), Array.from({ length: FRAMES }, (_, i) => i), `${phase}: one frame event per frame`);
      const last = run.lines.filter((l) => l.type === 'phase_progress' && l.phase === phase).pop() as { current: number; total: number } | undefined;
      if (phase !== 'FRAME_FILTERING') assert.ok(last && last.current === last.total, `${phase}: progress reaches its total`);
    }
    const rs = run.end('REFERENCE_SELECTION');
    for (const k of ['strategy', 'reference_index', 'reference_file', 'quality_score']) assert.ok(k in rs, `REFERENCE_SELECTION details ${k}`);
    const reg = run.end('REGISTRATION');
    assert.is(reg.engine, 'triangle_similarity');
    assert.is(reg.n_frames, FRAMES);
    const ff = run.end('FRAME_FILTERING');
    for (const k of ['rejection_mode', 'n_total', 'n_accepted', 'n_rejected', 'csv_path', 'limits']) assert.ok(k in ff, `FRAME_FILTERING details ${k}`);
    const qa = run.end('QUALITY_ANALYSIS');
    for (const k of ['median_fwhm', 'median_star_count', 'median_background']) assert.type(qa[k], 'number', k);
  });

  test(`${kind}: best_quality reference is a good frame, without the satellite trail`, () => {
    const { run, truth } = sets[kind]!;
    const rs = run.end('REFERENCE_SELECTION');
    const ref = rs.reference_index as number;
    assert.is(rs.strategy, 'best_quality');
    assert.is(truth.frames[ref]!.bad, null, `reference ${ref} is ${truth.frames[ref]!.bad}`);
    assert.is(rs.reference_file, `light_${String(ref + 1).padStart(5, '0')}.fits`);
    const sat = truth.frames.find((f) => f.bad === 'satellite')!.index;
    assert.ok((rs.not_candidates as { trailed: number[] }).trailed.includes(sat), 'the satellite frame is not a candidate');
  });

  test(`${kind}: matrices match truth within 0.02 px RMS over the frame (good frames)`, () => {
    const { run, truth } = sets[kind]!;
    const reg = run.registration!;
    const ref = reg.reference_index!;
    const toRef = truth.frames[ref]!.transform as Affine;
    const errors: string[] = [];
    for (const f of truth.frames) {
      const e = reg.frames[f.index]!;
      if (f.index === ref) {
        assert.equal(e.matrix, [[1, 0, 0], [0, 1, 0]]);
        continue;
      }
      const expected = composeAffine(toRef, invertAffine(f.transform as Affine)!);
      if (f.bad === null || f.bad === 'satellite') {
        assert.is(e.status, 'registered', `${kind} frame ${f.index}`);
        const err = mappingRms(e.matrix!, expected, W, H);
        errors.push(`${f.index}:${err.toFixed(4)}`);
        assert.ok(err <= 0.02, `${kind} frame ${f.index} (${f.bad ?? 'good'}): ${err.toFixed(4)} px`);
      } else if ((f.bad === 'clouds' || f.bad === 'bad_seeing') && e.status === 'registered') {
        assert.ok(mappingRms(e.matrix!, expected, W, H) <= 0.1, `${kind} ${f.bad} frame ${f.index}`);
      }
    }
    console.log(`  ${kind}: reference ${ref}, RMS errors ${errors.join(' ')}`);
  });

  test(`${kind}: registration.json has the fixed shape`, () => {
    const { run } = sets[kind]!;
    const reg = run.registration!;
    assert.equal(Object.keys(reg).sort(), ['frames', 'reference_file', 'reference_index']);
    assert.is(reg.frames.length, FRAMES);
    assert.is(reg.reference_file, reg.frames[reg.reference_index!]!.file);
    for (const [i, e] of reg.frames.entries()) {
      assert.is(e.index, i);
      const keys = Object.keys(e).sort();
      const base = ['file', 'index', 'matched_stars', 'matrix', 'registration_cc', 'residual_rms_px', 'status'];
      assert.equal(keys, e.status === 'registered' ? base : [...base, 'reason'].sort(), `frame ${i} keys`);
      assert.ok(['registered', 'failed', 'skipped'].includes(e.status));
      if (e.status === 'registered') {
        assert.is(e.matrix!.length, 2);
        assert.ok(e.matrix!.every((row) => row.length === 3 && row.every(Number.isFinite)));
        assert.type(e.registration_cc, 'number', 'cc filled in by QUALITY_ANALYSIS');
        assert.ok(Number.isInteger(e.matched_stars) && e.matched_stars >= 4, `frame ${i}: ${e.matched_stars} matched`);
        assert.type(e.residual_rms_px, 'number');
      } else {
        assert.is(e.matrix, null);
        assert.type(e.reason, 'string');
      }
    }
    assert.is(reg.frames[reg.reference_index!]!.registration_cc, 1);
  });

  test(`${kind}: quality_score varies and ranks clouds, trailed and bad seeing below every good frame`, () => {
    const { run, truth } = sets[kind]!;
    const rows = csvRecords(run);
    const score = (i: number) => Number(rows[i]!.quality_score);
    const good = truth.frames.filter((f) => f.bad === null).map((f) => score(f.index));
    const bad = truth.frames.filter((f) => f.bad === 'clouds' || f.bad === 'trailed' || f.bad === 'bad_seeing').map((f) => score(f.index));
    assert.ok(new Set(rows.map((r) => r.quality_score)).size >= FRAMES - 1, 'not constant');
    assert.ok(Math.max(...bad) < Math.min(...good), `bad ${bad.join(' ')} < good ${good.join(' ')}`);
    for (const f of truth.frames) if (f.bad === null) assert.ok(Number(rows[f.index]!.registration_cc) >= 0.9, `${kind} good frame ${f.index} cc ${rows[f.index]!.registration_cc}`);
  });

  test(`${kind}: auto filtering excludes exactly clouds, trailed and bad seeing with their reasons`, () => {
    const { run, truth } = sets[kind]!;
    const rows = csvRecords(run);
    for (const f of truth.frames) {
      const row = rows[f.index]!;
      const why = `${kind} #${f.index} ${f.bad ?? 'good'}: ${row.status} ${row.reason}`;
      if (f.bad === 'clouds') assert.equal([row.status, row.reason], ['excluded', 'low_transparency'], why);
      else if (f.bad === 'bad_seeing') assert.equal([row.status, row.reason], ['excluded', 'fwhm_outlier'], why);
      else if (f.bad === 'trailed') {
        // Elongated stars; when the smeared centroids mislead the matcher the correlation (or
        // the registration itself) catches the frame first.
        assert.is(row.status, 'excluded', why);
        assert.ok(['eccentricity', 'low_correlation', 'registration_failed'].includes(row.reason!), why);
        const line = run.rejected.find((l) => l.startsWith(`${f.index}\t`))!;
        if (row.reason !== 'registration_failed') assert.match(line, /eccentricity \d\.\d\d > max 0\.65/);
      } else assert.equal([row.status, row.reason], ['included', ''], why);
    }
    const ff = run.end('FRAME_FILTERING');
    assert.equal([ff.n_total, ff.n_accepted, ff.n_rejected, ff.rejection_mode], [FRAMES, FRAMES - 3, 3, 'auto']);
  });

  test(`${kind}: frame_quality.csv, rejected_frames.txt, weights and the manifest`, () => {
    const { run } = sets[kind]!;
    assert.is(run.csvHeader, CSV_COLUMNS.join(','));
    assert.is(run.csv.length, FRAMES);
    const rows = csvRecords(run);
    rows.forEach((r, i) => {
      assert.is(r.index, String(i));
      assert.is(r.file, `light_${String(i + 1).padStart(5, '0')}.fits`);
      assert.match(r.fwhm!, /^\d+\.\d{3}$/);
      assert.match(r.background!, /^\d+\.\d{2}$/);
      assert.match(r.saturation!, /^\d\.\d{6}$/);
      assert.match(r.quality_score!, /^0\.\d{4}$/);
      assert.ok(r.status === 'included' ? /^\d+\.\d{4}$/.test(r.weight!) : r.weight === '', `weight of ${r.status} frame ${i}: '${r.weight}'`);
    });
    const included = rows.filter((r) => r.status === 'included');
    const mean = included.reduce((s, r) => s + Number(r.weight), 0) / included.length;
    assert.ok(Math.abs(mean - 1) < 1e-3, `quality weights mean ${mean}`);
    assert.ok(new Set(included.map((r) => r.weight)).size > 1, 'quality weights differ');
    const excluded = rows.filter((r) => r.status === 'excluded');
    assert.is(run.rejected.length, excluded.length);
    for (const line of run.rejected) {
      const fields = line.split('\t');
      assert.is(fields.length, 4, line);
      const row = rows[Number(fields[0])]!;
      assert.equal([fields[1], fields[2]], [row.file, row.reason]);
      assert.ok(fields[3]!.length > 10, 'detail');
    }
    const types = run.manifest.artifacts.map((a) => `${a.type}:${a.phase}:${a.path}`);
    for (const t of ['registration:REGISTRATION:artifacts/preprocess/registration.json', 'frame_quality:FRAME_FILTERING:artifacts/preprocess/frame_quality.csv', 'rejected_frames:FRAME_FILTERING:artifacts/preprocess/rejected_frames.txt']) {
      assert.ok(types.includes(t), t);
    }
  });
}

test('mono with parallel_workers 1 (main thread): the same measurements as with worker threads', async () => {
  const { lights, run } = sets.mono!;
  const single = await runPhasesOn(lights, join(root, 'runs'), { run_name: 'single', runtime_limits: { parallel_workers: 1 } });
  assert.is(single.end('REFERENCE_SELECTION').workers, 1);
  assert.is(run.end('REFERENCE_SELECTION').workers, 2);
  assert.equal(single.csv, run.csv);
  assert.equal(single.registration, run.registration);
});

test.run();
