import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { EventLog, type EventLine } from '../../src/pipeline/events.js';
import { failed, ok, skipped, type Phase, type PhaseOutcome } from '../../src/pipeline/phase.js';
import { runPhases } from '../../src/pipeline/runner.js';
import { createRunFolder, sanitizeRunName } from '../../src/pipeline/run-folder.js';
import { foldEvents } from '../../src/shared/run-progress.js';
import { withTempDir } from '../helpers/tmp.js';

interface State {
  log: string[];
}

function phase(name: string, run: (s: State, signal: AbortSignal) => Promise<PhaseOutcome>, optional = false): Phase<State> {
  return {
    name,
    optional,
    run: (ctx) => run(ctx.state, ctx.signal),
    finalize: async (ctx, outcome) => {
      ctx.state.log.push(`finalize ${name} ${outcome.status}`);
    },
  };
}

async function runIn(dir: string, phases: Phase<State>[], signal = new AbortController().signal) {
  const events = new EventLog(join(dir, 'events.jsonl'), 'r1');
  const state: State = { log: [] };
  const result = await runPhases(phases, { state, events, signal, alwaysRun: 'REPORT' });
  events.close();
  const lines = (await readFile(join(dir, 'events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l) as EventLine);
  return { result, lines, state };
}

function startEndCounts(lines: EventLine[]) {
  const counts = new Map<string, [number, number]>();
  for (const l of lines) {
    if (l.type !== 'phase_start' && l.type !== 'phase_end') continue;
    const c = counts.get(l.phase) ?? [0, 0];
    c[l.type === 'phase_start' ? 0 : 1]++;
    counts.set(l.phase, c);
  }
  return counts;
}

test('ok, skipped and an optional error: run ends ok, later phases still run, one start and end each', async () => {
  await withTempDir('runner', async (dir) => {
    const { result, lines, state } = await runIn(dir, [
      phase('A', async () => ok({ frames: 3 })),
      phase('B', async () => skipped('not_configured', 'no calibration folder')),
      phase('PCC', async () => failed('solver_failed', 'no stars'), true),
      phase('HMS', async () => ok(), true),
      phase('REPORT', async () => ok()),
    ]);
    assert.is(result.status, 'ok');
    assert.equal(result.failedPhases, ['PCC']);
    for (const [name, [s, e]] of startEndCounts(lines)) assert.equal([s, e], [1, 1], name);
    assert.equal([...startEndCounts(lines).keys()], ['A', 'B', 'PCC', 'HMS', 'REPORT']);
    const ends = lines.filter((l) => l.type === 'phase_end') as Extract<EventLine, { type: 'phase_end' }>[];
    assert.equal(ends.map((e) => [e.phase, e.status, e.reason ?? null]), [['A', 'ok', null], ['B', 'skipped', 'not_configured'], ['PCC', 'error', 'solver_failed'], ['HMS', 'ok', null], ['REPORT', 'ok', null]]);
    assert.is(ends[0]!.frames, 3, 'details travel in phase_end');
    assert.equal(lines.map((l) => l.seq), lines.map((_, i) => i + 1));
    assert.equal(lines[lines.length - 1]!.type, 'run_end');
    assert.is(state.log.length, 5, 'finalize ran for every phase');
  });
});

test('a core error stops later phases, REPORT still runs, run ends error; exceptions become error outcomes', async () => {
  await withTempDir('runner', async (dir) => {
    const { result, lines, state } = await runIn(dir, [
      phase('A', async () => ok()),
      phase('STACKING', async () => {
        throw new Error('disk full');
      }),
      phase('BGE', async () => ok(), true),
      phase('REPORT', async (s) => {
        s.log.push('report ran');
        return ok();
      }),
    ]);
    assert.is(result.status, 'error');
    assert.equal([...startEndCounts(lines).keys()], ['A', 'STACKING', 'REPORT']);
    const end = lines.find((l) => l.type === 'phase_end' && l.phase === 'STACKING') as Extract<EventLine, { type: 'phase_end' }>;
    assert.equal([end.status, end.reason, end.message], ['error', 'exception', 'disk full']);
    assert.ok(state.log.includes('report ran'));
    assert.ok(state.log.includes('finalize STACKING error'));
    const runEnd = lines[lines.length - 1] as Extract<EventLine, { type: 'run_end' }>;
    assert.equal([runEnd.status, runEnd.failed_phases], ['error', ['STACKING']]);
  });
});

test('cancellation mid-phase: phase ends error/cancelled, nothing else but REPORT starts, run_end cancelled', async () => {
  await withTempDir('runner', async (dir) => {
    const controller = new AbortController();
    const t0 = performance.now();
    const { result, lines } = await runIn(
      dir,
      [
        phase('A', async () => ok()),
        {
          name: 'STACKING',
          optional: false,
          async run(ctx) {
            for (let band = 0; band < 1000; band++) {
              ctx.checkCancelled();
              ctx.progress(band, 1000, 'bands');
              if (band === 3) setTimeout(() => controller.abort(), 5);
              await new Promise((r) => setTimeout(r, 2));
            }
            return ok();
          },
        },
        phase('BGE', async () => ok(), true),
        phase('REPORT', async (_s, signal) => (signal.aborted ? failed('exception', 'report saw an aborted signal') : ok())),
      ],
      controller.signal,
    );
    assert.ok(performance.now() - t0 < 2000, 'cancel takes effect quickly');
    assert.is(result.status, 'cancelled');
    assert.equal([...startEndCounts(lines).keys()], ['A', 'STACKING', 'REPORT']);
    const stackEnd = lines.find((l) => l.type === 'phase_end' && l.phase === 'STACKING') as Extract<EventLine, { type: 'phase_end' }>;
    assert.equal([stackEnd.status, stackEnd.reason], ['error', 'cancelled']);
    const reportEnd = lines.find((l) => l.type === 'phase_end' && l.phase === 'REPORT') as Extract<EventLine, { type: 'phase_end' }>;
    assert.is(reportEnd.status, 'ok');
    assert.ok(lines.some((l) => l.type === 'phase_progress' && l.phase === 'STACKING'));
  });
});

test('cancellation while a phase finishes: it keeps its outcome, the next phase never starts, and the fold shows that one cancelled', async () => {
  await withTempDir('runner', async (dir) => {
    const controller = new AbortController();
    // The outcome is settled before finalize; a cancel arriving there (or in afterPhase) stops the run between phases.
    const a: Phase<State> = { ...phase('A', async () => ok()), finalize: async () => controller.abort() };
    const { result, lines } = await runIn(dir, [a, phase('B', async () => ok()), phase('C', async () => ok()), phase('REPORT', async () => ok())], controller.signal);
    assert.is(result.status, 'cancelled');
    assert.equal([...startEndCounts(lines).keys()], ['A', 'REPORT']);
    const run = foldEvents(lines, ['A', 'B', 'C', 'REPORT'].map((name) => ({ name, optional: false })));
    assert.equal([...run.phases.values()].map((p) => `${p.name}:${p.status}`), ['A:ok', 'B:cancelled', 'C:pending', 'REPORT:ok']);
  });
});

test('progress events are rate-limited but the last step is always emitted', async () => {
  await withTempDir('runner', async (dir) => {
    const { lines } = await runIn(dir, [
      {
        name: 'A',
        optional: false,
        async run(ctx) {
          for (let i = 1; i <= 500; i++) ctx.progress(i, 500);
          return ok();
        },
      },
    ]);
    const progress = lines.filter((l) => l.type === 'phase_progress') as Extract<EventLine, { type: 'phase_progress' }>[];
    assert.ok(progress.length >= 1 && progress.length <= 3, `${progress.length} progress events`);
    assert.equal([progress[progress.length - 1]!.current, progress[progress.length - 1]!.progress], [500, 1]);
  });
});

test('run folders: name_YYYYMMDD_HHMMSS, "run" when empty, suffix on collision, names sanitised', async () => {
  await withTempDir('runs', async (dir) => {
    const when = new Date(2026, 2, 14, 21, 5, 9);
    const a = await createRunFolder(dir, '', when);
    const b = await createRunFolder(dir, '', when);
    const c = await createRunFolder(dir, 'M42 Ha/../x', when);
    assert.is(a.runId, 'run_20260314_210509');
    assert.is(b.runId, 'run_20260314_210509_2');
    assert.is(c.runId, 'M42_Ha_.._x_20260314_210509');
    assert.equal((await readdir(a.runDir)).sort(), ['artifacts', 'outputs']);
    assert.equal(await readdir(join(a.runDir, 'artifacts')), ['preprocess']);
    assert.is(sanitizeRunName('../../etc'), 'etc');
    assert.is(sanitizeRunName('   '), 'run');
  });
});

test.run();
