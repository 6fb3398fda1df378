// Server building blocks without a server: Dawn noise filter, Host parsing, path confinement,
// closing an unclosed run, rejection suggestions by frame count, tiled YAML positions.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { validateTiledYaml } from '../../src/config/tiled.js';
import { DawnNoiseFilter } from '../../src/server/jobs/dawn-noise.js';
import { isInside, PathGuard, resolveInside } from '../../src/server/paths.js';
import { rejectionFor } from '../../src/config/suggest.js';
import { listRunFiles, openRunFile, readRunText } from '../../src/server/run-files.js';
import { closeRun } from '../../src/server/run-index.js';
import { RunList } from '../../src/server/run-list.js';
import { allowedHostnames, isLoopback, splitHost, tokensEqual } from '../../src/server/security.js';
import { withTempDir } from '../helpers/tmp.js';

test('Dawn noise filter drops the adapter warnings and their native traces only', () => {
  const f = new DawnNoiseFilter();
  const lines = ['Warning: maxDynamicUniformBuffersPerPipelineLayout artificially reduced from 12 to 8', '    at operator()(...) dawn', '', 'INPUT_SCAN: ok', "Warning: Couldn't load Vulkan", 'real warning: disk full'];
  assert.equal(lines.filter((l) => f.keep(l)), ['INPUT_SCAN: ok', 'real warning: disk full']);
  assert.is(f.hidden, 2);
});

test('Host header parsing, loopback names, token comparison', () => {
  assert.equal(splitHost('localhost:8080'), { name: 'localhost', port: 8080 });
  assert.equal(splitHost('[::1]:81'), { name: '::1', port: 81 });
  assert.equal(splitHost('Example.org'), { name: 'example.org', port: null });
  assert.is(splitHost('a b:1'), null);
  assert.is(splitHost('evil.com@127.0.0.1:80'), null);
  assert.ok(isLoopback('127.0.0.1') && isLoopback('[::1]') && isLoopback('localhost'));
  assert.not.ok(isLoopback('0.0.0.0'));
  const names = allowedHostnames('127.0.0.1');
  assert.ok(names.has('localhost') && names.has('127.0.0.1') && names.has('::1'));
  assert.not.ok(names.has('0.0.0.0'));
  assert.ok(tokensEqual('abc', 'abc'));
  assert.not.ok(tokensEqual('abc', 'abd'));
  assert.not.ok(tokensEqual('abc', 'abcd'));
});

test('path guard: roots, prefixes that are not parents, symlinks, denied state dir', async () => {
  await withTempDir('guard', async (dir) => {
    await mkdir(join(dir, 'root', 'sub'), { recursive: true });
    await mkdir(join(dir, 'root-sibling'));
    await mkdir(join(dir, 'root', '.state'));
    await symlink(join(dir, 'root-sibling'), join(dir, 'root', 'out'));
    const g = new PathGuard();
    await g.addRoot(join(dir, 'root'));
    await g.deny(join(dir, 'root', '.state'));
    assert.is(await g.resolve(join(dir, 'root', 'sub'), { kind: 'dir' }), join(dir, 'root', 'sub'));
    const code = async (p: unknown, o = {}) => g.resolve(p, o).then(() => 'ok', (e) => e.code);
    assert.is(await code(join(dir, 'root-sibling')), 'PATH_NOT_ALLOWED', 'a sibling sharing the prefix is outside');
    assert.is(await code(join(dir, 'root', 'out')), 'PATH_NOT_ALLOWED');
    assert.is(await code(join(dir, 'root', '.state')), 'PATH_NOT_ALLOWED');
    assert.is(await code(`${join(dir, 'root', 'sub')}/../sub`), 'PATH_NOT_ALLOWED');
    assert.is(await code(join(dir, 'root', 'new'), { mustExist: false }), 'ok');
    assert.is(await code(join(dir, 'root', 'new')), 'PATH_NOT_FOUND');
    assert.is(await code(''), 'VALIDATION_ERROR');
    assert.is(await code(42), 'VALIDATION_ERROR');
    assert.ok(isInside('/a/b', '/a/b/c') && isInside('/a/b', '/a/b') && !isInside('/a/b', '/a/bc') && !isInside('/a/b', '/a'));
    await writeFile(join(dir, 'root', 'sub', 'f.txt'), 'x');
    assert.is(await resolveInside(join(dir, 'root'), 'sub/f.txt', { kind: 'file' }), join(dir, 'root', 'sub', 'f.txt'));
    assert.is(await resolveInside(join(dir, 'root'), 'sub', { kind: 'file' }).catch((e) => e.code), 'NOT_A_FILE');
    assert.is(await resolveInside(join(dir, 'root'), 'C:\\\\x').catch((e) => e.code), 'PATH_NOT_ALLOWED');
    // links out are refused whether their target exists or not; dangling links inside are missing
    await symlink(join(dir, 'root-sibling', 'absent'), join(dir, 'root', 'dangling-out'));
    await symlink('../root-sibling/absent', join(dir, 'root', 'dangling-out-rel'));
    await symlink('sub/absent', join(dir, 'root', 'dangling-in'));
    await symlink('out/x', join(dir, 'root', 'via-link-out')); // through the `out` link to the sibling
    await symlink('loop-b', join(dir, 'root', 'loop-a'));
    await symlink('loop-a', join(dir, 'root', 'loop-b'));
    assert.is(await code(join(dir, 'root', 'dangling-out')), 'PATH_NOT_ALLOWED');
    assert.is(await code(join(dir, 'root', 'dangling-out'), { mustExist: false }), 'PATH_NOT_ALLOWED');
    assert.is(await code(join(dir, 'root', 'dangling-out-rel', 'deeper')), 'PATH_NOT_ALLOWED');
    assert.is(await code(join(dir, 'root', 'via-link-out')), 'PATH_NOT_ALLOWED');
    assert.is(await code(join(dir, 'root', 'dangling-in')), 'PATH_NOT_FOUND');
    assert.is(await g.resolve(join(dir, 'root', 'dangling-in'), { mustExist: false }), join(dir, 'root', 'sub', 'absent'));
    assert.is(await code(join(dir, 'root', 'loop-a')), 'UNREADABLE_INPUT');
  });
});

test('closeRun ends open phases and the run once, continuing seq', async () => {
  await withTempDir('close', async (dir) => {
    const art = join(dir, 'artifacts', 'preprocess');
    await mkdir(art, { recursive: true });
    await writeFile(join(dir, 'run.json'), JSON.stringify({ run_id: 'r', kind: 'rawstack', created_at: 'x', status: 'running', input: {}, job_id: 'j' }));
    const t = new Date().toISOString();
    await writeFile(join(art, 'events.jsonl'), [{ seq: 1, ts: t, run_id: 'r', type: 'run_start' }, { seq: 2, ts: t, run_id: 'r', type: 'phase_start', phase: 'INPUT_SCAN' }].map((l) => JSON.stringify(l)).join('\n') + '\n{"seq":3,"ts":"torn');
    assert.is(await closeRun(dir, 'cancelled', 'cancelled'), true);
    assert.is(await closeRun(dir, 'error', 'interrupted'), false, 'idempotent');
    const lines = (await readFile(join(art, 'events.jsonl'), 'utf8'))
      .trim()
      .split('\n')
      .filter((l) => !l.includes('torn'))
      .map((l) => JSON.parse(l));
    assert.equal(lines.map((l) => [l.seq, l.type, l.status]), [
      [1, 'run_start', undefined],
      [2, 'phase_start', undefined],
      [3, 'phase_end', 'error'],
      [4, 'run_end', 'cancelled'],
    ]);
    assert.is(lines[2].reason, 'cancelled');
    assert.equal(lines[3].failed_phases, ['INPUT_SCAN']);
    assert.is(JSON.parse(await readFile(join(dir, 'run.json'), 'utf8')).status, 'cancelled');
  });
});

test('run files: one confined open; links out of the run folder read as missing and are never written through', async () => {
  await withTempDir('runfiles', async (dir) => {
    const run = join(dir, 'run');
    const art = join(run, 'artifacts', 'preprocess');
    await mkdir(art, { recursive: true });
    await mkdir(join(dir, 'out'));
    await writeFile(join(dir, 'out', 'secret.txt'), 'SECRET\n');
    await writeFile(join(run, 'ok.txt'), 'fine');
    await symlink(join(dir, 'out', 'secret.txt'), join(art, 'events.jsonl'));
    await symlink(join(dir, 'out'), join(run, 'outputs'));
    await symlink(join(run, 'ok.txt'), join(run, 'inner-link.txt'));
    await writeFile(join(run, 'run.json'), JSON.stringify({ run_id: 'r', status: 'running', created_at: 'x' }));
    assert.is(await readRunText(run, 'ok.txt'), 'fine');
    assert.is(await readRunText(run, 'inner-link.txt'), 'fine', 'a link inside the run folder is followed');
    assert.is(await readRunText(run, 'artifacts/preprocess/events.jsonl'), null);
    assert.is(await readRunText(run, 'outputs/secret.txt'), null);
    assert.is(await readRunText(run, 'missing.txt'), null);
    const code = (rel: string, o = {}) => openRunFile(run, rel, o).then((f) => (f.fh.close(), 'ok'), (e) => e.code);
    assert.is(await code('outputs/secret.txt'), 'PATH_NOT_ALLOWED');
    assert.is(await code('../out/secret.txt'), 'PATH_NOT_ALLOWED');
    assert.is(await code('artifacts'), 'NOT_A_FILE');
    assert.is(await code('nothing.txt'), 'NOT_FOUND');
    // the run folder itself reached through a link is refused
    await symlink(run, join(dir, 'run-link'));
    assert.is(await readRunText(join(dir, 'run-link'), 'ok.txt'), null);
    // listing: regular files in real folders only
    await writeFile(join(art, 'frame_quality.csv'), 'a\n');
    assert.equal((await listRunFiles(run, ['artifacts', 'outputs'], ['run.json', 'inner-link.txt'], 100)).map((f) => f.path), ['run.json', 'artifacts/preprocess/frame_quality.csv']);
    // closing the run appends nothing through the planted events link
    assert.is(await closeRun(run, 'error', 'interrupted'), false);
    assert.is(await readFile(join(dir, 'out', 'secret.txt'), 'utf8'), 'SECRET\n');
  });
});

test('run list: folders read again only when runs_dir changes, final runs not re-read, runs in progress and new folders followed', async () => {
  await withTempDir('runlist', async (dir) => {
    const runs = join(dir, 'runs');
    await mkdir(runs);
    const rec = (id: string, status: string, day: number) => JSON.stringify({ run_id: id, kind: 'rawstack', status, created_at: `2026-01-0${day}T00:00:00.000Z`, job_id: null });
    const make = async (id: string, status: string, day: number) => {
      await mkdir(join(runs, id), { recursive: true });
      await writeFile(join(runs, id, 'run.json'), rec(id, status, day));
    };
    const list = new RunList(runs, 0);
    const ids = async (jobs: Parameters<RunList['list']>[0] = []) => (await list.list(jobs)).map((r) => `${r.run_id}:${r.status}`);
    await make('a', 'ok', 1);
    await make('b', 'running', 2);
    assert.equal(await ids(), ['b:running', 'a:ok']);
    await writeFile(join(runs, 'a', 'run.json'), rec('a', 'error', 1));
    assert.equal(await ids(), ['b:running', 'a:ok'], 'a final run is not read again');
    await writeFile(join(runs, 'b', 'run.json'), rec('b', 'ok', 2));
    assert.equal(await ids(), ['b:ok', 'a:ok'], 'a run in progress is');
    await mkdir(join(runs, 'c'));
    assert.equal(await ids(), ['b:ok', 'a:ok'], 'a folder without run.json is no run yet');
    await writeFile(join(runs, 'c', 'run.json'), rec('c', 'pending', 3));
    assert.equal(await ids(), ['c:pending', 'b:ok', 'a:ok'], 'but is looked at again');
    await rm(join(runs, 'a'), { recursive: true });
    assert.equal(await ids(), ['c:pending', 'b:ok']);
    const elsewhere = join(dir, 'other', 'x_run');
    await mkdir(elsewhere, { recursive: true });
    await writeFile(join(elsewhere, 'run.json'), rec('x_run', 'running', 4));
    assert.equal(await ids([{ run_id: 'x_run', run_dir: elsewhere, job_id: 'job_1' }]), ['x_run:running', 'c:pending', 'b:ok']);
    assert.is((await list.list())[0]!.job_id, 'job_1');
    // The input folder comes from run.json's input (lights_dir, or input_dir for tiled runs); none named: null.
    const withInput = async (id: string, kind: string, day: number, input: Record<string, unknown>) => {
      await mkdir(join(runs, id));
      await writeFile(join(runs, id, 'run.json'), JSON.stringify({ run_id: id, kind, status: 'ok', created_at: `2026-01-0${day}T00:00:00.000Z`, input, job_id: null }));
    };
    await withInput('d', 'tiled', 5, { input_dir: '/data/m31', pattern: '*.fits' });
    await withInput('e', 'rawstack', 6, { lights_dir: '/data/m42/lights', pattern: '*.fits' });
    assert.equal((await list.list()).map((r) => [r.run_id, r.input_dir]), [['e', '/data/m42/lights'], ['d', '/data/m31'], ['x_run', null], ['c', null], ['b', null]]);
  });
});

test('rejection suggestions follow the frame count', () => {
  assert.is(rejectionFor(5).method, 'median');
  assert.is(rejectionFor(10).method, 'sigma');
  assert.is(rejectionFor(20).method, 'winsor');
  assert.equal([rejectionFor(60).method, rejectionFor(60).low], ['sigma', 2.5]);
});

test('tiled YAML: nested unknown keys warn at their key, ranges and enums are errors, aliases bounded', () => {
  const r = validateTiledYaml('stacking:\n  sigma_clip:\n    sigma_low: -1\n    extra: 2\nbge:\n  method: magic\n');
  assert.is(r.ok, false);
  assert.equal(r.warnings.map((w) => [w.path, w.line, w.column]), [['stacking.sigma_clip.extra', 4, 5]]);
  assert.equal(r.errors.map((e) => [e.path, e.line]), [
    ['stacking.sigma_clip.sigma_low', 3],
    ['bge.method', 6],
  ]);
  assert.is(validateTiledYaml('').ok, true);
  assert.is(validateTiledYaml('- 1\n- 2\n').ok, false);
  const bomb = 'a: &a [x, x, x, x, x, x, x, x, x]\n' + Array.from({ length: 12 }, (_, i) => `b${i}: &b${i} [${Array(9).fill(i === 0 ? '*a' : `*b${i - 1}`).join(', ')}]`).join('\n') + '\n';
  assert.is(validateTiledYaml(bomb).ok, false, 'alias expansion is bounded');
});

test('skystack serve refuses bad options with exit code 2', () => {
  const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
  const r = spawnSync(process.execPath, [cli, 'serve', '--port', 'eighty'], { encoding: 'utf8' });
  assert.is(r.status, 2);
  assert.match(r.stderr, /--port must be/);
  const m = spawnSync(process.execPath, [cli, 'serve', '--max-jobs', '0'], { encoding: 'utf8' });
  assert.is(m.status, 2);
});

test.run();
