// output.keep_calibrated_frames: by default calibrated lights stay in outputs/calibrated; with
// false they live in the run's scratch folder while the run needs them (a later phase reads
// them there) and are gone when the run ends, ok or cancelled; the server's closing of a run
// whose process died removes the scratch folder too.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { access, mkdir, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateDataset } from '../../fixtures/generator/index.js';
import { readFitsHeader } from '../../src/fits/index.js';
import { ok, type Phase } from '../../src/pipeline/phase.js';
import { calibrationPhase } from '../../src/pipeline/rawstack/phases/calibration.js';
import type { RawStackState } from '../../src/pipeline/rawstack/state.js';
import { closeRun } from '../../src/server/run-index.js';
import { config, runPhasesOn } from './calibration-helpers.js';

let root = '';
let data = '';

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-keepcal-'));
  data = join(root, 'data');
  await generateDataset({ out: data, kind: 'mono', frames: 3, width: 96, height: 64, seed: 5, badFrames: 'none' });
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

const dirs = () => ({ lights_dir: join(data, 'lights'), bias_dir: join(data, 'bias'), darks_dir: join(data, 'darks'), flats_dir: join(data, 'flats') });
const exists = (p: string) => access(p).then(() => true, () => false);

/** A phase after CALIBRATION that reads every calibrated frame, as the later phases do. */
function readBack(seen: string[]): Phase<RawStackState> {
  return {
    name: 'READ_BACK',
    optional: false,
    async run(ctx) {
      for (const f of ctx.state.frames) {
        if (!f.calibratedFile) continue;
        await readFitsHeader(f.calibratedFile);
        seen.push(f.calibratedFile);
      }
      return ok();
    },
  };
}

test('default: calibrated frames are kept in outputs/calibrated', async () => {
  const seen: string[] = [];
  const run = await runPhasesOn(config(dirs()), { runsDir: join(root, 'runs'), phases: [calibrationPhase, readBack(seen)] });
  const end = run.end('CALIBRATION')!;
  assert.is(end.status, 'ok');
  assert.is((end as Record<string, unknown>).calibrated_dir, 'outputs/calibrated');
  assert.is((end as Record<string, unknown>).calibrated_frames_kept, true);
  assert.equal((await readdir(join(run.result.runDir, 'outputs/calibrated'))).sort(), ['cal_00001.fit', 'cal_00002.fit', 'cal_00003.fit']);
  assert.is(seen.length, 3);
  assert.ok(seen.every((f) => f.startsWith(join(run.result.runDir, 'outputs', 'calibrated'))));
});

test('keep_calibrated_frames false: frames readable in scratch during the run, gone after it', async () => {
  const seen: string[] = [];
  const run = await runPhasesOn(config({ ...dirs(), output: { keep_calibrated_frames: false } }), { runsDir: join(root, 'runs'), phases: [calibrationPhase, readBack(seen)] });
  const end = run.end('CALIBRATION')!;
  assert.is(end.status, 'ok');
  assert.is(run.end('READ_BACK')!.status, 'ok');
  assert.is((end as Record<string, unknown>).calibrated_dir, null);
  assert.is((end as Record<string, unknown>).calibrated_frames_kept, false);
  assert.is((end as Record<string, unknown>).frames_calibrated, 3);
  assert.is(seen.length, 3);
  assert.ok(seen.every((f) => f.startsWith(join(run.result.runDir, '.scratch'))), seen.join(', '));
  assert.is(await exists(join(run.result.runDir, 'outputs', 'calibrated')), false);
  assert.is(await exists(join(run.result.runDir, '.scratch')), false);
  // The masters are outputs of their own and stay.
  assert.ok((await readdir(join(run.result.runDir, 'outputs', 'masters'))).length >= 3);
});

test('keep_calibrated_frames false and a cancelled run: the scratch folder is removed too', async () => {
  const controller = new AbortController();
  const run = await runPhasesOn(config({ ...dirs(), output: { keep_calibrated_frames: false }, runtime_limits: { parallel_workers: 1 } }), {
    runsDir: join(root, 'runs'),
    phases: [calibrationPhase],
    signal: controller.signal,
    onEvent: (l) => {
      if (l.type === 'frame' && l.phase === 'CALIBRATION' && l.index === 0) controller.abort();
    },
  });
  assert.is(run.result.status, 'cancelled');
  assert.is(await exists(join(run.result.runDir, '.scratch')), false);
});

test('closeRun of a run whose process died removes its scratch folder', async () => {
  const runDir = join(root, 'runs', 'killed_20260101_000000');
  await mkdir(join(runDir, '.scratch', 'calibrated'), { recursive: true });
  await mkdir(join(runDir, 'artifacts', 'preprocess'), { recursive: true });
  await writeFile(join(runDir, '.scratch', 'calibrated', 'cal_00001.fit'), 'x');
  await writeFile(join(runDir, 'artifacts', 'preprocess', 'events.jsonl'), JSON.stringify({ seq: 1, ts: new Date().toISOString(), type: 'run_start', run_id: 'killed_20260101_000000' }) + '\n');
  await closeRun(runDir, 'error', 'crashed');
  assert.is(await exists(join(runDir, '.scratch')), false);
  assert.is(await exists(join(runDir, 'artifacts', 'preprocess', 'events.jsonl')), true);
});

test.run();
