// The events → phase status and progress fold every reader uses (src/shared/run-progress.ts),
// and the run-folder layout per kind (src/shared/run-layout.ts).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { EventLine, PhasePlanEntry } from '../../src/shared/events.js';
import { parseEventLines } from '../../src/shared/events.js';
import { foldEvents, planOf, RunProgress } from '../../src/shared/run-progress.js';
import { artifactPath, calibratedFrameName, fromArtifacts, layoutOf, outputImageName, RUN_LAYOUTS } from '../../src/shared/run-layout.js';

const PLAN: PhasePlanEntry[] = [
  { name: 'A', optional: false },
  { name: 'B', optional: true },
  { name: 'C', optional: false },
  { name: 'REPORT', optional: false },
];
let seq = 0;
const line = (body: Record<string, unknown>): EventLine => ({ seq: ++seq, ts: '2026-01-01T00:00:00.000Z', run_id: 'r', ...body }) as EventLine;

test('the plan comes from run_start; phases start pending, then running, then final; progress counts the plan', () => {
  const run = new RunProgress();
  assert.is(run.phases.size, 0);
  assert.is(run.fraction, 0);
  run.apply(line({ type: 'run_start', kind: 'tiled', run_dir: '/x', phases: PLAN }));
  assert.equal([...run.phases.keys()], ['A', 'B', 'C', 'REPORT']);
  assert.equal([...run.phases.values()].map((p) => [p.status, p.optional]), [['pending', false], ['pending', true], ['pending', false], ['pending', false]]);
  assert.is(run.kind, 'tiled');
  assert.is(run.runStatus, 'running');
  run.apply(line({ type: 'phase_start', phase: 'A' }));
  run.apply(line({ type: 'phase_progress', phase: 'A', current: 1, total: 2, progress: 0.5, substep: 'x' }));
  assert.is(run.fraction, 0.125, 'half of one of four phases');
  assert.equal([run.phases.get('A')!.current, run.phases.get('A')!.substep], [1, 'x']);
  run.apply(line({ type: 'phase_end', phase: 'A', status: 'ok', duration_ms: 5 }));
  run.apply(line({ type: 'phase_start', phase: 'B' }));
  run.apply(line({ type: 'phase_end', phase: 'B', status: 'error', reason: 'solver_failed', message: 'm', duration_ms: 1 }));
  assert.is(run.fraction, 0.5);
  assert.equal(run.phases.get('B'), { name: 'B', status: 'error', optional: true, progress: 1, reason: 'solver_failed', message: 'm', duration_ms: 1 });
  // A phase the plan does not name is appended, not dropped.
  run.apply(line({ type: 'phase_start', phase: 'EXTRA' }));
  assert.equal([...run.phases.keys()], ['A', 'B', 'C', 'REPORT', 'EXTRA']);
  assert.is(run.phases.get('EXTRA')!.optional, false);
  assert.not.ok(run.finished);
  // The phase the cancellation stopped reads cancelled, not error.
  run.apply(line({ type: 'phase_start', phase: 'C' }));
  run.apply(line({ type: 'phase_end', phase: 'C', status: 'error', reason: 'cancelled', message: 'run cancelled', duration_ms: 2 }));
  assert.is(run.phases.get('C')!.status, 'cancelled');
  assert.is(run.fraction, 3 / 5, 'a cancelled phase has ended (A, B, C of five)');
  run.apply(line({ type: 'run_end', status: 'cancelled', duration_ms: 9, failed_phases: ['B'] }));
  assert.ok(run.finished);
  assert.is(run.runStatus, 'cancelled');
  assert.is(run.fraction, 1);
  assert.is(run.phases.get('REPORT')!.status, 'pending', 'the phase after the cancelled one never ran');
});

test('a cancel between two phases: the first phase left pending reads cancelled, the ones after it stay pending', () => {
  const run = foldEvents([
    line({ type: 'run_start', kind: 'tiled', run_dir: '/x', phases: [...PLAN.slice(0, 3), { name: 'D', optional: false }, PLAN[3]] }),
    line({ type: 'phase_start', phase: 'A' }),
    line({ type: 'phase_end', phase: 'A', status: 'ok', duration_ms: 5 }),
    line({ type: 'phase_start', phase: 'B' }),
    line({ type: 'phase_end', phase: 'B', status: 'ok', duration_ms: 5 }),
    // the cancel arrived while B was finishing: nothing starts but REPORT
    line({ type: 'phase_start', phase: 'REPORT' }),
    line({ type: 'phase_end', phase: 'REPORT', status: 'ok', duration_ms: 1 }),
  ]);
  assert.equal([...run.phases.values()].map((p) => p.status), ['ok', 'ok', 'pending', 'pending', 'ok']);
  run.apply(line({ type: 'run_end', status: 'cancelled', duration_ms: 12, failed_phases: [] }));
  assert.equal([...run.phases.values()].map((p) => p.status), ['ok', 'ok', 'cancelled', 'pending', 'ok']);
  assert.equal([run.phases.get('C')!.reason, run.phases.get('C')!.message], ['cancelled', 'run cancelled before this phase started']);
  // A run that ends in error or ok leaves its pending phases pending.
  const failedRun = foldEvents([line({ type: 'run_start', kind: 'tiled', run_dir: '/x', phases: PLAN }), line({ type: 'run_end', status: 'error', duration_ms: 1, failed_phases: [] })]);
  assert.ok([...failedRun.phases.values()].every((p) => p.status === 'pending'));
});

test('a run_start without a plan (runs written before it carried one): the given plan, else the phases the events name', () => {
  const lines = [line({ type: 'run_start', kind: 'rawstack', run_dir: '/x' }), line({ type: 'phase_start', phase: 'C' }), line({ type: 'phase_end', phase: 'C', status: 'skipped', reason: 'disabled', duration_ms: 0 })];
  assert.is(planOf(lines), null);
  assert.equal([...foldEvents(lines).phases.keys()], ['C']);
  const withPlan = foldEvents(lines, PLAN);
  assert.equal([...withPlan.phases.keys()], ['A', 'B', 'C', 'REPORT']);
  assert.is(withPlan.phases.get('C')!.status, 'skipped');
  assert.is(withPlan.fraction, 0.25);
  // A plan that arrives after events keeps what they said, in plan order.
  const late = new RunProgress();
  late.apply(line({ type: 'phase_start', phase: 'X' }));
  late.apply(line({ type: 'run_start', kind: 'rawstack', run_dir: '/x', phases: PLAN }));
  assert.equal([...late.phases.keys()], ['A', 'B', 'C', 'REPORT', 'X']);
  assert.is(late.phases.get('X')!.status, 'running');
});

test('parseEventLines: a torn last line and non-objects are left out', () => {
  const text = `${JSON.stringify({ seq: 1, type: 'run_start' })}\n42\n\n${JSON.stringify({ seq: 2, type: 'phase_start', phase: 'A' })}\n{"seq":3,"ty`;
  assert.equal(parseEventLines(text).map((l) => l.seq), [1, 2]);
});

test('run layouts: Raw Stack under artifacts/preprocess, tiled with logs/ and artifacts/, paths relative and /-separated', () => {
  const r = RUN_LAYOUTS.rawstack;
  assert.equal([r.events, r.config, r.report.html, r.frameTable, r.manifest], ['artifacts/preprocess/events.jsonl', 'artifacts/preprocess/effective_config.json', 'artifacts/preprocess/preprocessing_report.html', 'artifacts/preprocess/frame_quality.csv', 'artifacts/preprocess/artifacts_manifest.json']);
  assert.equal(r.listed, ['artifacts', 'outputs']);
  const t = RUN_LAYOUTS.tiled;
  assert.equal([t.events, t.config, t.report.json, t.frameTable, artifactPath(t, 'tile_grid.json')], ['logs/run_events.jsonl', 'config.yaml', 'artifacts/report.json', null, 'artifacts/tile_grid.json']);
  assert.equal(t.listed, ['artifacts', 'outputs', 'logs']);
  assert.is(layoutOf('tiled'), t);
  assert.is(layoutOf(undefined), r, 'run folders without a kind are Raw Stack runs');
  assert.is(fromArtifacts(r, 'artifacts/preprocess/preview_x.png'), 'preview_x.png');
  assert.is(fromArtifacts(r, 'outputs/stacked_rgb.fits'), '../../outputs/stacked_rgb.fits');
  assert.is(fromArtifacts(t, 'outputs/stacked.fits'), '../outputs/stacked.fits');
  assert.is(calibratedFrameName(0), 'cal_00001.fit');
  assert.equal(['outputs/stacked_rgb.fits', 'outputs/calibrated/cal_00001.fit', 'artifacts/x.fits', 'outputs/notes.txt'].map((p) => outputImageName(r, p)), ['stacked_rgb', null, null, null]);
});

test.run();
