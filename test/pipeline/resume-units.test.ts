// The pieces of a resume on their own: the state codec round-trips Maps, typed arrays (bit for
// bit), NaN, ±Infinity, -0 and Dates; feasibility (resume-feasibility.ts) on hand-made facts:
// per-key changes under a recorded block, the prefix rule for earliest_feasible_phase, the order
// of reasons, a broken record chain; setting outputs aside and restoring them; RunProgress after
// a resume_start (later phases pending, earlier ones kept, the run running again).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { decodeState, encodeState } from '../../src/pipeline/resume/codec.js';
import { listFiles, restoreLeftover, setAside } from '../../src/pipeline/resume/aside.js';
import { changedKeys, resumeFeasibility, type PhaseFacts } from '../../src/pipeline/tiled/resume-feasibility.js';
import type { PhaseRecord } from '../../src/pipeline/tiled/state.js';
import { RunProgress } from '../../src/shared/run-progress.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

test('codec: typed arrays bit for bit, Maps, non-finite numbers, -0, Dates', () => {
  const rnd = seededRandom(7);
  const f32 = new Float32Array(33).map(() => (rnd() - 0.5) * 1e6);
  f32[3] = NaN;
  const value = { a: f32, b: new Map<number, { g: number; q: number }>([[2, { g: 0.1 + 0.2, q: -0 }], [5, { g: Infinity, q: -Infinity }]]), c: [NaN, 1, null], d: new Date('2024-01-02T03:04:05.678Z'), e: new Float64Array([Math.PI, -0]), u: undefined };
  const back = decodeState<typeof value>(encodeState(value));
  assert.ok(back.a instanceof Float32Array);
  assert.equal(Buffer.from(back.a.buffer), Buffer.from(f32.buffer));
  assert.ok(back.b instanceof Map);
  assert.is(back.b.get(2)!.g, 0.1 + 0.2);
  assert.ok(Object.is(back.b.get(2)!.q, -0));
  assert.equal([back.b.get(5)!.g, back.b.get(5)!.q], [Infinity, -Infinity]);
  assert.ok(Number.isNaN(back.c[0]));
  assert.is(back.d.toISOString(), '2024-01-02T03:04:05.678Z');
  assert.ok(Object.is(back.e[1], -0));
  assert.not.ok('u' in back);
});

test('codec: paths under the run folder are stored relative to it and read back under the folder given', () => {
  const value = { file: '/runs/r1/outputs/calibrated/a.fits', dir: '/runs/r1', light: '/data/lights/a.fits', near: '/runs/r10/x.fits', m: new Map([['/runs/r1/m.fits', 1]]), list: ['/runs/r1/outputs/stacked.fits'] };
  const text = encodeState(value, { root: '/runs/r1' });
  assert.not.ok(text.includes('/runs/r1/'), text);
  assert.ok(text.includes('/runs/r10/x.fits'), 'a sibling whose name starts with the folder name stays absolute');
  const back = decodeState<typeof value>(text, { root: '/elsewhere/r1' });
  assert.equal(back.file, '/elsewhere/r1/outputs/calibrated/a.fits');
  assert.equal(back.dir, '/elsewhere/r1');
  assert.equal(back.light, '/data/lights/a.fits', 'paths outside the folder are kept as written');
  assert.equal(back.near, '/runs/r10/x.fits');
  assert.equal([...back.m.keys()], ['/elsewhere/r1/m.fits']);
  assert.equal(back.list, ['/elsewhere/r1/outputs/stacked.fits']);
  // Without a root the text is still readable only where it holds no run-folder path.
  assert.equal(decodeState(encodeState({ a: '/runs/r1/x' })), { a: '/runs/r1/x' });
  assert.throws(() => decodeState(text), /run folder as root/);
  // A tampered entry cannot point out of the folder.
  assert.throws(() => decodeState('{"a":{"$t":"run","v":"../../etc/passwd"}}', { root: '/runs/r1' }), /leaves the run folder/);
});

const PLAN = ['A', 'B', 'C', 'D'];
const rec = (keys: string[]): PhaseRecord => ({ status: 'ok', config_keys: keys, config_hash: '', inputs: { previous: null, frames: 1, frames_hash: '' }, checkpoint: { path: 'x', sha256: 'y' }, record_hash: '' });
const facts = (over: Partial<Record<string, Partial<PhaseFacts>>> = {}): PhaseFacts[] =>
  PLAN.map((name, i) => ({ name, record: rec([['input'], ['tile'], ['local_metrics'], ['stacking']][i]!), recordValid: true, missingFiles: [], ...(over[name] ?? {}) }));
const CFG = { input: { input_dir: '/l' }, tile: { size_factor: 32, overlap_fraction: 0.25 }, local_metrics: { clamp: [-3, 3] }, stacking: { method: 'rej' } };

test('feasibility: per-key changes, the prefix rule, reasons in order', () => {
  assert.equal(changedKeys('tile', { a: 1, b: { c: 2 } }, { a: 1, b: { c: 3 }, d: 4 }), ['tile.b.c', 'tile.d']);
  const base = { plan: PLAN, previousConfig: CFG, nextConfig: CFG, phases: facts(), missingInputs: [] as string[] };
  assert.equal(resumeFeasibility({ ...base, fromPhase: 'D' }), { feasible: true, earliest_feasible_phase: 'D', would_rerun: ['D'] });
  const tile = { ...CFG, tile: { ...CFG.tile, size_factor: 24 } };
  const v = resumeFeasibility({ ...base, nextConfig: tile, fromPhase: 'D' });
  assert.equal([v.feasible, v.reason, v.changed_keys, v.earliest_feasible_phase, v.would_rerun], [false, 'config_changed_upstream', ['tile.size_factor'], 'B', ['D']]);
  assert.is(resumeFeasibility({ ...base, nextConfig: tile, fromPhase: 'B' }).feasible, true);
  // A key only C reads: feasible from C, not from D.
  const lm = { ...CFG, local_metrics: { clamp: [-1, 1] } };
  assert.equal([resumeFeasibility({ ...base, nextConfig: lm, fromPhase: 'C' }).feasible, resumeFeasibility({ ...base, nextConfig: lm, fromPhase: 'D' }).earliest_feasible_phase], [true, 'C']);
  // Missing files win over a later changed key; both are listed.
  const both = resumeFeasibility({ ...base, nextConfig: lm, phases: facts({ A: { missingFiles: ['outputs/calibrated/cal_00001.fit'] } }), fromPhase: 'D' });
  assert.equal([both.reason, both.missing_files, both.changed_keys, both.earliest_feasible_phase], ['artifacts_missing', ['outputs/calibrated/cal_00001.fit'], ['local_metrics.clamp'], 'A']);
  // A broken chain or no checkpoint is a missing record file.
  const chain = resumeFeasibility({ ...base, phases: facts({ B: { recordValid: false } }), fromPhase: 'C' });
  assert.equal([chain.reason, chain.missing_files], ['artifacts_missing', ['artifacts/phase_records.json#B']]);
  const noCkpt = resumeFeasibility({ ...base, phases: facts({ A: { record: { ...rec(['input']), checkpoint: null } } }), fromPhase: 'B' });
  assert.equal(noCkpt.missing_files, ['artifacts/resume/A.json.gz']);
  // Precedence: unknown phase, config, inputs (not for the first phase).
  assert.is(resumeFeasibility({ ...base, previousConfig: null, fromPhase: 'Z' }).reason, 'unsupported_resume_phase');
  assert.is(resumeFeasibility({ ...base, previousConfig: null, missingInputs: ['/l/1.fits'], fromPhase: 'C' }).reason, 'config_missing');
  const inputs = resumeFeasibility({ ...base, missingInputs: ['/l/1.fits'], fromPhase: 'C' });
  assert.equal([inputs.reason, inputs.missing_files, inputs.earliest_feasible_phase], ['input_missing', ['/l/1.fits'], 'A']);
  assert.is(resumeFeasibility({ ...base, missingInputs: ['/l/1.fits'], fromPhase: 'A' }).feasible, true);
});

test('aside: moved and copied files come back on restore, the resume’s new files go; a leftover is restored', () =>
  withTempDir('aside', async (dir) => {
    const put = async (rel: string, text: string) => {
      await mkdir(join(dir, rel, '..'), { recursive: true });
      await writeFile(join(dir, rel), text);
    };
    await put('outputs/stacked.fits', 'old stack');
    await put('outputs/calibrated/cal_00001.fit', 'cal');
    await put('artifacts/validation.json', 'old');
    await put('config.yaml', 'old config');
    const keep = (rel: string) => rel.startsWith('outputs/calibrated/');
    const a = await setAside(dir, ['outputs', 'artifacts'], keep, ['config.yaml']);
    assert.equal(a.moved, ['outputs/stacked.fits', 'artifacts/validation.json']);
    assert.equal(await listFiles(dir, 'outputs'), ['outputs/calibrated/cal_00001.fit']);
    await put('outputs/stacked.fits', 'partial');
    await put('artifacts/new.json', 'new');
    await put('config.yaml', 'new config');
    await a.restore();
    assert.equal(await listFiles(dir, 'artifacts'), ['artifacts/validation.json']);
    assert.equal([await readFile(join(dir, 'outputs/stacked.fits'), 'utf8'), await readFile(join(dir, 'config.yaml'), 'utf8')], ['old stack', 'old config']);
    const b = await setAside(dir, ['outputs', 'artifacts'], keep, ['config.yaml']);
    assert.ok(b.moved.length === 2);
    assert.is(await restoreLeftover(dir), true);
    assert.is(await readFile(join(dir, 'artifacts/validation.json'), 'utf8'), 'old');
    assert.is(await restoreLeftover(dir), false);
  }),
);

test('RunProgress: resume_start sets the phases from from_phase on pending and the run running', () => {
  const p = new RunProgress();
  const ev = (body: Record<string, unknown>) => p.apply({ seq: 0, ts: '', run_id: 'r', ...body } as never);
  ev({ type: 'run_start', kind: 'tiled', run_dir: '/r', phases: PLAN.map((name) => ({ name, optional: false })) });
  for (const phase of PLAN) ev({ type: 'phase_end', phase, status: phase === 'B' ? 'skipped' : 'ok', duration_ms: 1 });
  ev({ type: 'run_end', status: 'ok', duration_ms: 4, failed_phases: [] });
  assert.is(p.finished, true);
  ev({ type: 'resume_start', from_phase: 'C', config_revision_id: 'rev_0002' });
  assert.equal([...p.phases.values()].map((x) => x.status), ['ok', 'skipped', 'pending', 'pending']);
  assert.is(p.runStatus, 'running');
  assert.is(p.fraction, 0.5);
});

test.run();
