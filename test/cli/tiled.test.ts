// `skystack tiled` from the command line: a run from --input-dir with a YAML --config and --set
// overrides exits 0 and its last stdout line (--json) is {run_id, run_dir, status, phases};
// config.yaml records the effective settings; usage errors (no input, a YAML error with its
// line, a bad --set) exit 2; Ctrl-C (SIGINT) cancels cleanly: exit 1, REPORT written, run_end
// cancelled.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawn } from 'node:child_process';
import { readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parse as parseYaml } from 'yaml';
import { generateDataset } from '../../fixtures/generator/index.js';
import { main } from '../../src/cli/main.js';
import { parseEventLines } from '../../src/shared/events.js';
import { TILED } from '../../src/pipeline/tiled/definition.js';
import { withTempDir } from '../helpers/tmp.js';

const CLI = fileURLToPath(new URL('../../src/cli.js', import.meta.url));

async function captured(f: () => Promise<number>): Promise<{ code: number; out: string; err: string }> {
  const o = process.stdout.write;
  const e = process.stderr.write;
  let out = '';
  let err = '';
  process.stdout.write = ((c: string | Uint8Array) => ((out += String(c)), true)) as typeof process.stdout.write;
  process.stderr.write = ((c: string | Uint8Array) => ((err += String(c)), true)) as typeof process.stderr.write;
  try {
    return { code: await f(), out, err };
  } finally {
    process.stdout.write = o;
    process.stderr.write = e;
  }
}

const OFF = ['--set', 'astrometry.enabled=false', '--set', 'pcc.enabled=false', '--set', 'bge.method=none', '--set', 'hypermetric_stretch.enabled=false'];

test('tiled run from the CLI with bias, darks and flats: exit 0, --json last line, config.yaml with the overrides', () =>
  withTempDir('cli-tiled', async (dir) => {
    await generateDataset({ out: join(dir, 'data'), kind: 'mono', frames: 6, width: 160, height: 128, seed: 12, calibration: true, calibrationCounts: { bias: 3, darks: 3, flats: 3 }, badFrames: 'none', starDensity: 8000 });
    const cfg = join(dir, 'tiled.yaml');
    await writeFile(cfg, 'tile:\n  size_factor: 16\n  star_min_count: 2\nlocal_metrics: { min_frames: 4 }\nstacking: { method: rej }\nunknown_block: { a: 1 }\n');
    const data = (f: string) => join(dir, 'data', f);
    const r = await captured(() => main(['tiled', '--input-dir', data('lights'), '--bias', data('bias'), '--darks', data('darks'), '--flats', data('flats'), '--config', cfg, '--runs-dir', join(dir, 'runs'), '--run-name', 'cli', '--set', 'tile.overlap_fraction=0.5', ...OFF, '--json']));
    assert.is(r.code, 0, r.err.slice(-2000));
    const last = JSON.parse(r.out.trim().split('\n').pop()!) as { run_id: string; run_dir: string; status: string; phases: { phase: string; status: string }[] };
    assert.equal(Object.keys(last).sort(), ['phases', 'run_dir', 'run_id', 'status']);
    assert.is(last.status, 'ok');
    assert.match(last.run_id, /^cli_\d{8}_\d{6}/);
    assert.equal(last.phases.map((p) => p.phase), TILED.phases.map((p) => p.name));
    assert.is(last.phases.find((p) => p.phase === 'CALIBRATION')!.status, 'ok');
    const masters = await readdir(join(last.run_dir, 'outputs', 'masters'));
    assert.ok(masters.length >= 3, `masters: ${masters.join(', ')}`);
    assert.match(r.err, /warning .*tiled\.yaml:6: unknown block "unknown_block" \(ignored\)/);
    const effective = parseYaml(await readFile(join(last.run_dir, 'config.yaml'), 'utf8')) as { tile: { size_factor: number; overlap_fraction: number }; stacking: { method: string }; input: { input_dir: string } };
    assert.equal([effective.tile.size_factor, effective.tile.overlap_fraction, effective.stacking.method, effective.input.input_dir], [16, 0.5, 'rej', join(dir, 'data', 'lights')]);
    const grid = JSON.parse(await readFile(join(last.run_dir, 'artifacts', 'tile_grid.json'), 'utf8')) as { overlap_px: number; seeing_tile_size: number };
    assert.is(grid.overlap_px, Math.floor(0.5 * grid.seeing_tile_size));
  }),
);

test('tiled usage errors exit 2', () =>
  withTempDir('cli-tiled-usage', async (dir) => {
    assert.is((await captured(() => main(['tiled']))).code, 2, 'no input');
    const bad = join(dir, 'bad.yaml');
    await writeFile(bad, 'tile:\n  overlap_fraction: 2\n');
    const r = await captured(() => main(['tiled', '--input-dir', dir, '--config', bad]));
    assert.is(r.code, 2);
    assert.match(r.err, /tile\.overlap_fraction \(line 2\)/);
    assert.is((await captured(() => main(['tiled', '--input-dir', dir, '--set', 'tile.size_factor=-3']))).code, 2);
    assert.is((await captured(() => main(['tiled', '--input-dir', dir, '--set', 'nokey']))).code, 2);
    assert.match((await captured(() => main(['tiled', '--help']))).out, /tiled --input-dir DIR/);
  }),
);

test('Ctrl-C cancels a tiled run cleanly: exit 1, REPORT written, run_end cancelled', () =>
  withTempDir('cli-tiled-int', async (dir) => {
    await generateDataset({ out: join(dir, 'data'), kind: 'mono', frames: 8, width: 320, height: 240, seed: 13, calibration: false, badFrames: 'none' });
    const child = spawn(process.execPath, [CLI, 'tiled', '--input-dir', join(dir, 'data', 'lights'), '--runs-dir', join(dir, 'runs'), ...OFF, '--json'], { env: { ...process.env, SKYSTACK_DEVICE: 'cpu' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    let sent = false;
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => {
      err += c.toString();
      if (!sent && /SCAN_INPUT: ok/.test(err)) {
        sent = true;
        child.kill('SIGINT');
      }
    });
    const code = await new Promise<number | null>((resolve) => child.on('close', resolve));
    assert.ok(sent, err);
    assert.is(code, 1, err.slice(-1500));
    const last = JSON.parse(out.trim().split('\n').pop()!) as { run_dir: string; status: string; phases: { phase: string; status: string; reason?: string }[] };
    assert.is(last.status, 'cancelled');
    // The phase running at the signal ends error/cancelled (or, between phases, none starts); no later core phase runs.
    assert.ok(last.phases.length < TILED.phases.length, JSON.stringify(last.phases));
    assert.not.ok(last.phases.some((p) => p.phase === 'STACKING'));
    assert.is(last.phases.at(-1)!.phase, 'REPORT');
    const lines = parseEventLines(await readFile(join(last.run_dir, 'logs', 'run_events.jsonl'), 'utf8'));
    const end = lines.at(-1)!;
    assert.is(end.type === 'run_end' ? end.status : null, 'cancelled');
    await readFile(join(last.run_dir, 'artifacts', 'report.html'), 'utf8');
  }),
);

test.run();
