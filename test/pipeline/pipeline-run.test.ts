// The generic pipeline run (src/pipeline/run.ts) with a toy second pipeline of kind `tiled`: its
// folder takes the tiled layout (logs/run_events.jsonl, config.yaml, artifacts/), run.json names
// the kind, run_start carries the plan from the definition's phases, the always-run phase runs
// after a core error, the phases see the plan, the run holds its folder's lock while it runs, and
// the scratch folder and the lock are gone afterwards. A
// resume that fails puts the earlier outputs back (resume branch of runPipeline).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { access, mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { addArtifact } from '../../src/pipeline/artifacts.js';
import { failed, ok, skipped, type Phase } from '../../src/pipeline/phase.js';
import { runLockHolder } from '../../src/pipeline/run-lock.js';
import { runPipeline, type PipelineBase, type PipelineDefinition } from '../../src/pipeline/run.js';
import { artifactPath, RUN_LAYOUTS } from '../../src/shared/run-layout.js';
import { parseEventLines } from '../../src/shared/events.js';
import { foldEvents } from '../../src/shared/run-progress.js';
import { withTempDir } from '../helpers/tmp.js';

interface ToyConfig {
  input_dir: string;
  fail: boolean;
}
interface ToyState extends PipelineBase<ToyConfig> {
  seen: string[];
}

const phase = (name: string, optional: boolean, run: Phase<ToyState>['run']): Phase<ToyState> => ({ name, optional, run });

const TOY: PipelineDefinition<ToyConfig, ToyState> = {
  kind: 'tiled',
  phases: [
    phase('SCAN_INPUT', false, async (ctx) => {
      ctx.state.seen.push(ctx.plan.map((p) => `${p.name}${p.optional ? '?' : ''}`).join(','));
      // The run holds its folder's lock while its phases run.
      ctx.state.seen.push(`lock ${(await runLockHolder(ctx.state.folder.runDir))?.pid === process.pid ? 'held' : 'missing'}`);
      await mkdir(ctx.state.folder.scratchDir, { recursive: true });
      await writeFile(join(ctx.state.folder.scratchDir, 'tmp.bin'), 'x');
      return ok();
    }),
    phase('TILE_GRID', false, async (ctx) => {
      const rel = artifactPath(ctx.state.folder.layout, 'tile_grid.json');
      if (ctx.state.config.fail) {
        await writeFile(join(ctx.state.folder.runDir, rel), 'partial');
        return failed('input_error', 'no frames fit the grid');
      }
      await writeFile(join(ctx.state.folder.runDir, rel), '{}');
      addArtifact(ctx.state, 'tile_grid', ctx.phase, rel);
      return ok();
    }),
    phase('PCC', true, async () => skipped('disabled', 'off')),
    phase('REPORT', false, async (ctx) => {
      ctx.state.seen.push(`report after ${[...ctx.outcomes.keys()].join(',')}`);
      return ok();
    }),
  ],
  alwaysRun: 'REPORT',
  input: (c) => ({ input_dir: c.input_dir }),
  initialState: (base) => ({ ...base, seen: [] }),
};

test('a second pipeline on the generic run: tiled layout, run.json kind, plan in run_start, artifacts, scratch removed', () =>
  withTempDir('skystack-pipeline-run-', async (dir) => {
    const r = await runPipeline(TOY, { input_dir: '/data', fail: false }, { runsDir: dir, runName: 'toy', memoryBudgetMiB: 64, device: 'cpu' });
    assert.is(r.status, 'ok');
    const layout = RUN_LAYOUTS.tiled;
    const rec = JSON.parse(await readFile(join(r.runDir, 'run.json'), 'utf8')) as Record<string, unknown>;
    assert.equal([rec.kind, rec.status, rec.input], ['tiled', 'ok', { input_dir: '/data' }]);
    const config = parseYaml(await readFile(join(r.runDir, layout.config), 'utf8')) as Record<string, unknown>;
    assert.equal([config.input_dir, config.fail, typeof (config._runtime as { skystack_version?: unknown }).skystack_version], ['/data', false, 'string']);
    // The configuration revisions start with this start's configuration (without the runtime record).
    const revisions = JSON.parse(await readFile(join(r.runDir, 'artifacts', 'config_revisions', 'index.json'), 'utf8')) as { revision_id: string; source: string; run_id: string }[];
    assert.equal(revisions.map((e) => [e.revision_id, e.source, e.run_id]), [['rev_0001', 'run_start', r.runId]]);
    assert.equal(parseYaml(await readFile(join(r.runDir, 'artifacts', 'config_revisions', 'rev_0001.yaml'), 'utf8')), { input_dir: '/data', fail: false });
    const lines = parseEventLines(await readFile(join(r.runDir, layout.events), 'utf8'));
    assert.equal(lines[0]!.type === 'run_start' ? lines[0]!.phases : null, [
      { name: 'SCAN_INPUT', optional: false },
      { name: 'TILE_GRID', optional: false },
      { name: 'PCC', optional: true },
      { name: 'REPORT', optional: false },
    ]);
    assert.is(lines.at(-1)!.type, 'run_end');
    const fold = foldEvents(lines);
    assert.equal([...fold.phases.values()].map((p) => p.status), ['ok', 'ok', 'skipped', 'ok']);
    assert.equal(r.state.seen, ['SCAN_INPUT,TILE_GRID,PCC?,REPORT', 'lock held', 'report after SCAN_INPUT,TILE_GRID,PCC']);
    assert.is(await runLockHolder(r.runDir), null, 'the lock goes with the run');
    assert.equal(r.state.artifacts.map((a) => [a.type, a.phase, a.path]), [
      ['config', 'SCAN_INPUT', 'config.yaml'],
      ['events', 'SCAN_INPUT', 'logs/run_events.jsonl'],
      ['tile_grid', 'TILE_GRID', 'artifacts/tile_grid.json'],
    ]);
    await access(r.state.folder.scratchDir).then(
      () => assert.unreachable('the scratch folder outlives the run'),
      () => undefined,
    );
  }),
);

test('a core error: later phases do not start, the always-run phase does, run.json and run_end say error', () =>
  withTempDir('skystack-pipeline-run-', async (dir) => {
    const r = await runPipeline(TOY, { input_dir: '/data', fail: true }, { runsDir: dir, runName: '', memoryBudgetMiB: 64, device: 'cpu' });
    assert.is(r.status, 'error');
    assert.equal(r.phases.map((p) => [p.phase, p.status]), [['SCAN_INPUT', 'ok'], ['TILE_GRID', 'error'], ['REPORT', 'ok']]);
    const rec = JSON.parse(await readFile(join(r.runDir, 'run.json'), 'utf8')) as Record<string, unknown>;
    assert.is(rec.status, 'error');
    const fold = foldEvents(parseEventLines(await readFile(join(r.runDir, RUN_LAYOUTS.tiled.events), 'utf8')));
    assert.equal([fold.phases.get('PCC')!.status, fold.runStatus, fold.fraction], ['pending', 'error', 1]);
  }),
);

test('a resume that fails: the earlier outputs, config.yaml and run.json come back; the log is appended; earlier outcomes reach later phases', () =>
  withTempDir('skystack-pipeline-run-', async (dir) => {
    const first = await runPipeline(TOY, { input_dir: '/data', fail: false }, { runsDir: dir, runName: 'toy', memoryBudgetMiB: 64, device: 'cpu' });
    const d = first.runDir;
    const layout = RUN_LAYOUTS.tiled;
    const before = { config: await readFile(join(d, layout.config), 'utf8'), record: await readFile(join(d, 'run.json'), 'utf8'), grid: await readFile(join(d, 'artifacts', 'tile_grid.json'), 'utf8') };
    const n = parseEventLines(await readFile(join(d, layout.events), 'utf8')).length;
    const record = JSON.parse(before.record);
    const r = await runPipeline(TOY, { input_dir: '/data', fail: true }, {
      runsDir: '',
      runName: '',
      memoryBudgetMiB: 64,
      device: 'cpu',
      folder: first.state.folder,
      resume: {
        fromPhase: 'TILE_GRID',
        restore: (s) => void s.seen.push('restored'),
        outcomes: new Map([['SCAN_INPUT', ok()]]),
        keep: (rel) => rel.startsWith('artifacts/config_revisions/'),
        revisionSource: 'resume_selected',
        previous: record,
      },
    });
    assert.is(r.status, 'error');
    assert.equal(r.state.seen, ['restored', 'report after SCAN_INPUT,TILE_GRID']);
    assert.equal({ config: await readFile(join(d, layout.config), 'utf8'), record: await readFile(join(d, 'run.json'), 'utf8'), grid: await readFile(join(d, 'artifacts', 'tile_grid.json'), 'utf8') }, before);
    await access(join(d, '.resume_previous')).then(
      () => assert.unreachable('the set-aside folder outlives the resume'),
      () => undefined,
    );
    const lines = parseEventLines(await readFile(join(d, layout.events), 'utf8'));
    const added = lines.slice(n);
    assert.equal(added.filter((l) => l.type !== 'warning').map((l) => `${l.type}${'phase' in l ? ` ${l.phase}` : ''}`), ['resume_start', 'run_start', 'phase_start TILE_GRID', 'phase_end TILE_GRID', 'phase_start REPORT', 'phase_end REPORT', 'run_end', 'resume_end']);
    assert.equal(lines.map((l) => l.seq), lines.map((_, i) => i + 1));
    const revisions = JSON.parse(await readFile(join(d, 'artifacts', 'config_revisions', 'index.json'), 'utf8')) as { source: string }[];
    assert.equal(revisions.map((e) => e.source), ['run_start', 'resume_selected']);
    const fold = foldEvents(lines);
    assert.equal([[...fold.phases.values()].map((p) => p.status), fold.runStatus], [['ok', 'error', 'pending', 'ok'], 'error']);
  }),
);

test.run();
