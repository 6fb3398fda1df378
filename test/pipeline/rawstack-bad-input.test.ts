// Raw Stack with bad input (issue 5 bars): every case ends with a clear reason, closed events
// and a written report; nothing crashes and no half-written output is presented as good.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateDataset } from '../../fixtures/generator/index.js';
import { parseRawStackConfig, type RawStackConfig } from '../../src/config/rawstack.js';
import { writeFits } from '../../src/fits/index.js';
import type { EventLine } from '../../src/pipeline/events.js';
import { runRawStack } from '../../src/pipeline/rawstack/run.js';
import { withTempDir } from '../helpers/tmp.js';

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

function config(over: Record<string, unknown>): RawStackConfig {
  const r = parseRawStackConfig({ postprocess: { astrometry: false, bge: false, pcc: false, hypermetric_stretch: false }, runtime_limits: { parallel_workers: 1 }, ...over });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.config;
}

async function events(runDir: string): Promise<EventLine[]> {
  return (await readFile(join(runDir, 'artifacts', 'preprocess', 'events.jsonl'), 'utf8'))
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as EventLine);
}

function phaseEnd(lines: EventLine[], phase: string) {
  return lines.find((l) => l.type === 'phase_end' && l.phase === phase) as Extract<EventLine, { type: 'phase_end' }> | undefined;
}

test('empty folder: INPUT_SCAN error no_frames, REPORT written, run_end error', async () => {
  await withTempDir('bad-empty', async (dir) => {
    await mkdir(join(dir, 'lights'));
    const r = await runRawStack(config({ lights_dir: join(dir, 'lights') }), { runsDir: join(dir, 'runs'), device: 'cpu' });
    assert.is(r.status, 'error');
    const lines = await events(r.runDir);
    const scan = phaseEnd(lines, 'INPUT_SCAN')!;
    assert.equal([scan.status, scan.reason], ['error', 'no_frames']);
    assert.match(String(scan.message), /no file .* matches "\*\.fits"/);
    assert.is(phaseEnd(lines, 'REPORT')!.status, 'ok');
    assert.is(phaseEnd(lines, 'REFERENCE_SELECTION'), undefined, 'no later core phase starts');
    assert.is(lines[lines.length - 1]!.type, 'run_end');
    const report = JSON.parse(await readFile(join(r.runDir, 'artifacts', 'preprocess', 'preprocessing_report.json'), 'utf8'));
    assert.is(report.status, 'error');
    assert.equal(await readdir(join(r.runDir, 'outputs')), []);
  });
});

test('missing lights folder: a clear error naming it', async () => {
  await withTempDir('bad-missing', async (dir) => {
    const r = await runRawStack(config({ lights_dir: join(dir, 'nope') }), { runsDir: join(dir, 'runs'), device: 'cpu' });
    assert.is(r.status, 'error');
    const scan = phaseEnd(await events(r.runDir), 'INPUT_SCAN')!;
    assert.is(scan.reason, 'input_error');
    assert.ok(String(scan.message).includes(join(dir, 'nope')), String(scan.message));
  });
});

test('an unreadable file and a frame of another size among good ones are excluded with reasons; the run goes on', async () => {
  await withTempDir('bad-mixed', async (dir) => {
    const data = join(dir, 'data');
    await generateDataset({ out: data, kind: 'mono', frames: 6, width: 256, height: 192, seed: 5, calibration: false, badFrames: 'none' });
    const lights = join(data, 'lights');
    await writeFile(join(lights, 'light_00007.fits'), 'SIMPLE  =                    T'.padEnd(80) + 'truncated');
    await writeFits(join(lights, 'light_00008.fits'), { width: 100, height: 80, data: new Uint16Array(8000) });
    const r = await runRawStack(config({ lights_dir: lights }), { runsDir: join(dir, 'runs'), device: 'cpu' });
    const lines = await events(r.runDir);
    assert.is(phaseEnd(lines, 'INPUT_SCAN')!.status, 'ok');
    assert.is(phaseEnd(lines, 'INPUT_SCAN')!.frames_usable, 6);
    const csv = (await readFile(join(r.runDir, 'artifacts', 'preprocess', 'frame_quality.csv'), 'utf8')).trim().split('\n');
    const row = (name: string) => csv.find((l) => l.includes(name))!.split(',');
    assert.equal(row('light_00007.fits').slice(2, 4), ['excluded', 'unreadable']);
    assert.equal(row('light_00008.fits').slice(2, 4), ['excluded', 'size_mismatch']);
    const rejected = await readFile(join(r.runDir, 'artifacts', 'preprocess', 'rejected_frames.txt'), 'utf8');
    assert.match(rejected, /light_00007\.fits\tunreadable\tFITS_/);
    assert.match(rejected, /light_00008\.fits\tsize_mismatch\t100x80x1 differs from the majority size 256x192x1/);
    assert.ok(lines.some((l) => l.type === 'warning' && l.code === 'mixed_sizes'));
  });
});

test('invalid configuration: the CLI exits 2 and names the key; nothing is created', async () => {
  await withTempDir('bad-config', async (dir) => {
    const cfg = join(dir, 'cfg.json');
    await writeFile(cfg, JSON.stringify({ lights_dir: dir, rejection: { low: -1 }, stacking: { normalisation: 'median' } }));
    const r = spawnSync(process.execPath, [cli, 'rawstack', '--config', cfg, '--runs-dir', join(dir, 'runs')], { encoding: 'utf8' });
    assert.is(r.status, 2);
    assert.match(r.stderr, /rejection\.low: Too small/);
    assert.match(r.stderr, /stacking\.normalisation: unknown key/);
    assert.not.ok((await readdir(dir)).includes('runs'), 'no run folder for an invalid configuration');
    const bad = spawnSync(process.execPath, [cli, 'rawstack', '--set', 'max_frames=-3', '--lights', dir, '--runs-dir', join(dir, 'runs')], { encoding: 'utf8' });
    assert.is(bad.status, 2);
    assert.match(bad.stderr, /max_frames/);
  });
});

test.run();
