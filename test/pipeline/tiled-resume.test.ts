// Resuming a tiled run (src/pipeline/tiled/resume.ts) end to end on one generated, calibrated
// session of 10 mono frames at 224×160: a resume from STACKING with the same configuration
// reproduces outputs/*.fits and validation.json byte for byte (stacking_diagnostics.json apart
// from its timings), appends to the event log (seq
// continuing, no earlier phase run again) and records a resume_previous revision; a changed
// upstream key (tile.size_factor, read by TILE_GRID) is refused with config_changed_upstream and
// the key; a key read only from LOCAL_METRICS on (local_metrics.clamp) resumes from there and
// changes the stack; a cancelled resume leaves the earlier outputs, config.yaml and run.json as
// they were; a deleted checkpoint gives artifacts_missing with the file and the phase to start
// at; a dry run (checkResume) leaves every file and mtime as it was; a Raw Stack run is refused
// with RESUME_NOT_SUPPORTED. Without kept intermediates the earliest phase is CALIBRATION.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, readFile, readdir, rename, rm, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { generateDataset } from '../../fixtures/generator/index.js';
import type { TiledRunConfig } from '../../src/config/tiled-run.js';
import { listRevisions } from '../../src/pipeline/config-revisions.js';
import { restoreLeftover, setAside } from '../../src/pipeline/resume/aside.js';
import { readCheckpoint } from '../../src/pipeline/tiled/checkpoint.js';
import { checkResume, gatherResumeFacts, ResumeRefused, resumeTiled } from '../../src/pipeline/tiled/resume.js';
import { runTiled } from '../../src/pipeline/tiled/run.js';
import { parseEventLines } from '../../src/shared/events.js';
import { smallTiledConfig } from '../helpers/tiled-config.js';
import { withTempDir } from '../helpers/tmp.js';

const config = (data: string, runs: string, extra: Record<string, unknown> = {}): TiledRunConfig => smallTiledConfig(data, runs, 'resume', extra);

/** Every file under `dir` with its size and mtime. */
async function listing(dir: string, rel = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(join(dir, rel), { withFileTypes: true })) {
    const r = rel ? `${rel}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(`${r}/`, ...(await listing(dir, r)));
    else {
      const st = await stat(join(dir, r));
      out.push(`${r} ${st.size} ${st.mtimeMs}`);
    }
  }
  return out.sort();
}

async function outputsOf(runDir: string): Promise<Map<string, Buffer>> {
  const m = new Map<string, Buffer>();
  for (const n of (await readdir(join(runDir, 'outputs'))).filter((n) => n.endsWith('.fits'))) m.set(`outputs/${n}`, await readFile(join(runDir, 'outputs', n)));
  m.set('artifacts/validation.json', await readFile(join(runDir, 'artifacts', 'validation.json')));
  // The stacking diagnostics apart from their timings (milliseconds of this machine's clock),
  // from how many frames' LN planes LOCAL_METRICS binned and how many fits ran on the fit worker
  // (a resumed STACKING reads the planes itself and fits on its own thread; lnPlanesSource checks
  // both counts) and from the bands' share of the budget (a run holding premeasured planes
  // reserves them while their fits wait in the band loop; the plan is the same).
  const untimed = (v: unknown): unknown =>
    Array.isArray(v) ? v.map(untimed) : v && typeof v === 'object' ? Object.fromEntries(Object.entries(v).filter(([k]) => !/timings|_ms$|^premeasured_frames$|^fits_on_worker$|^memory_budget_bytes$/.test(k)).map(([k, x]) => [k, untimed(x)])) : v;
  m.set('artifacts/stacking_diagnostics.json', Buffer.from(JSON.stringify(untimed(JSON.parse(await readFile(join(runDir, 'artifacts', 'stacking_diagnostics.json'), 'utf8'))))));
  return m;
}

/**
 * How many frames' LN planes STACKING took from LOCAL_METRICS's read (stacking_diagnostics.json);
 * those fits wait for the band loop and run on the fit worker, the others before it on the main thread.
 */
async function lnPlanesSource(runDir: string): Promise<number> {
  const ln = (JSON.parse(await readFile(join(runDir, 'artifacts', 'stacking_diagnostics.json'), 'utf8')) as { local_normalization: { premeasured_frames: number; fits_on_worker: number } }).local_normalization;
  assert.is(ln.fits_on_worker, ln.premeasured_frames, 'deferred fits on the fit worker, eager ones here');
  return ln.premeasured_frames;
}

const refusal = async (p: Promise<unknown>): Promise<ResumeRefused> => {
  try {
    await p;
  } catch (e) {
    if (e instanceof ResumeRefused) return e;
    throw e;
  }
  throw new Error('no refusal');
};

test('tiled resume: bit-identical from STACKING, upstream change refused, LOCAL_METRICS change applied, cancel restores, missing checkpoint, dry run read-only', async () => {
  await withTempDir('resume', async (dir) => {
    const data = join(dir, 'data');
    const runs = join(dir, 'runs');
    await generateDataset({ out: data, kind: 'mono', frames: 10, width: 224, height: 160, seed: 21, calibration: true, calibrationCounts: { bias: 3, darks: 3, flats: 3 }, badFrames: 'none', starDensity: 8000 });
    const base = config(data, runs);
    const first = await runTiled(base, { device: 'cpu' });
    assert.is(first.status, 'ok', JSON.stringify(first.phases));
    const d = first.runDir;
    const records = JSON.parse(await readFile(join(d, 'artifacts', 'phase_records.json'), 'utf8')) as Record<string, { checkpoint: { path: string; sha256: string } | null }>;
    assert.is(records.STACKING!.checkpoint!.path, 'artifacts/resume/STACKING.json.gz');
    assert.match(records.TILE_GRID!.checkpoint!.sha256, /^[0-9a-f]{64}$/);
    assert.ok((await readdir(join(d, 'outputs', 'calibrated'))).length === 10, 'calibrated frames kept');
    // The star lists are in the checkpoints up to COMMON_OVERLAP; LOCAL_METRICS, their last reader, drops them.
    const starsIn = async (phase: string) => ((await readCheckpoint(join(d, 'artifacts', 'resume', `${phase}.json.gz`), d))!.checkpoint.state.frames as { stars: unknown[] | null }[]).filter((f) => f.stars !== null).length;
    assert.equal([await starsIn('COMMON_OVERLAP'), await starsIn('LOCAL_METRICS'), await starsIn('STACKING')], [10, 0, 0]);

    // Dry run: feasible, names what would run again, changes nothing.
    const before = await listing(d);
    const dry = await checkResume(d, 'STACKING');
    assert.is(dry.verdict.feasible, true, JSON.stringify(dry.verdict));
    assert.equal(dry.verdict.would_rerun, ['STACKING', 'DEBAYER', 'ASTROMETRY', 'BGE', 'PCC', 'HYPERMETRIC_STRETCH', 'REPORT']);
    assert.is(dry.verdict.earliest_feasible_phase, 'REPORT');
    assert.equal(await listing(d), before);

    // Same configuration from STACKING: the same bytes, though the first run's STACKING took every
    // frame's LN planes from LOCAL_METRICS's read and the resumed one reads the frames again.
    assert.is(await lnPlanesSource(d), 10);
    const previous = await outputsOf(d);
    const linesBefore = parseEventLines(await readFile(join(d, 'logs', 'run_events.jsonl'), 'utf8'));
    const again = await resumeTiled(d, 'STACKING', { device: 'cpu' });
    assert.is(again.status, 'ok', JSON.stringify(again.phases));
    const now = await outputsOf(d);
    assert.is(await lnPlanesSource(d), 0);
    assert.equal([...now.keys()], [...previous.keys()]);
    for (const [k, v] of previous) assert.ok(v.equals(now.get(k)!), `${k} differs after a resume with the same configuration`);
    const lines = parseEventLines(await readFile(join(d, 'logs', 'run_events.jsonl'), 'utf8'));
    assert.equal(lines.slice(0, linesBefore.length), linesBefore, 'the log is appended, never rewritten');
    const added = lines.slice(linesBefore.length);
    assert.equal(added.map((l) => l.seq), added.map((_, i) => linesBefore.length + 1 + i));
    assert.is(added[0]!.type, 'resume_start');
    assert.is((added[0] as { from_phase?: string }).from_phase, 'STACKING');
    assert.is((added[0] as { config_revision_id?: string }).config_revision_id, 'rev_0002');
    assert.equal(added.at(-1), { ...added.at(-1)!, type: 'resume_end', status: 'ok' });
    const started = added.filter((l) => l.type === 'phase_start').map((l) => (l as { phase: string }).phase);
    assert.equal(started, ['STACKING', 'DEBAYER', 'ASTROMETRY', 'BGE', 'PCC', 'HYPERMETRIC_STRETCH', 'REPORT']);
    assert.equal((await listRevisions(d)).map((r) => [r.revision_id, r.source]), [['rev_0001', 'run_start'], ['rev_0002', 'resume_previous']]);
    assert.is(JSON.parse(await readFile(join(d, 'run.json'), 'utf8')).status, 'ok');
    assert.not.ok(await stat(join(d, '.resume_previous')).catch(() => null), 'the set-aside folder is gone after success');

    // An upstream key changed: refused with the key and the phase to start at.
    const upstream = config(data, runs, { tile: { star_min_count: 4, size_factor: 24 } });
    const up = await checkResume(d, 'STACKING', upstream);
    assert.equal([up.verdict.feasible, up.verdict.reason, up.verdict.changed_keys, up.verdict.earliest_feasible_phase], [false, 'config_changed_upstream', ['tile.size_factor'], 'TILE_GRID']);
    const refusedUp = await refusal(resumeTiled(d, 'STACKING', { config: upstream, device: 'cpu' }));
    assert.is(refusedUp.code, 'RESUME_PHASE_NOT_FEASIBLE');
    assert.equal(refusedUp.details.changed_keys, ['tile.size_factor']);

    // A key read from LOCAL_METRICS on: feasible from there, and the stack changes.
    const local = config(data, runs, { local_metrics: { min_frames: 6, clamp: [-0.5, 0.5] } });
    assert.is((await checkResume(d, 'STACKING', local)).verdict.reason, 'config_changed_upstream');
    const changed = await resumeTiled(d, 'LOCAL_METRICS', { config: local, device: 'cpu' });
    assert.is(changed.status, 'ok', JSON.stringify(changed.phases));
    const afterLocal = await outputsOf(d);
    assert.not.ok(afterLocal.get('outputs/stacked.fits')!.equals(previous.get('outputs/stacked.fits')!), 'a changed local_metrics.clamp changes the stack');
    assert.match(await readFile(join(d, 'config.yaml'), 'utf8'), /- -0\.5\n\s+- 0\.5/);
    assert.equal((await listRevisions(d)).map((r) => r.source), ['run_start', 'resume_previous', 'resume_selected']);

    // Cancelled during STACKING: the earlier outputs, config.yaml and run.json stay.
    const configBefore = await readFile(join(d, 'config.yaml'), 'utf8');
    const runJsonBefore = await readFile(join(d, 'run.json'), 'utf8');
    const ac = new AbortController();
    const cancelled = await resumeTiled(d, 'STACKING', { device: 'cpu', signal: ac.signal, onEvent: (l) => l.type === 'phase_start' && l.phase === 'STACKING' && ac.abort() });
    assert.is(cancelled.status, 'cancelled');
    const afterCancel = await outputsOf(d);
    for (const [k, v] of afterLocal) assert.ok(v.equals(afterCancel.get(k)!), `${k} changed by a cancelled resume`);
    assert.is(await readFile(join(d, 'config.yaml'), 'utf8'), configBefore);
    assert.is(await readFile(join(d, 'run.json'), 'utf8'), runJsonBefore);
    assert.not.ok(await stat(join(d, '.resume_previous')).catch(() => null));
    const tail = parseEventLines(await readFile(join(d, 'logs', 'run_events.jsonl'), 'utf8')).at(-1)!;
    assert.equal([tail.type, (tail as { status?: string }).status], ['resume_end', 'cancelled']);
    // Still resumable after the cancel (the checkpoints came back with the outputs).
    assert.is((await checkResume(d, 'STACKING', local)).verdict.feasible, true);

    // A moved run folder resumes on its own files: the checkpoints hold the calibrated frames',
    // masters' and outputs' paths relative to the folder, not where it was written.
    const moved = join(dir, 'moved-run');
    await rename(d, moved);
    const checkpointText = gunzipSync(await readFile(join(moved, 'artifacts', 'resume', 'STACKING.json.gz'))).toString('utf8');
    assert.not.ok(checkpointText.includes(d), 'no checkpoint names the folder it was written in');
    const movedRun = await resumeTiled(moved, 'STACKING', { config: local, device: 'cpu' });
    assert.is(movedRun.status, 'ok', JSON.stringify(movedRun.phases));
    const afterMove = await outputsOf(moved);
    for (const [k, v] of afterLocal) assert.ok(v.equals(afterMove.get(k)!), `${k} differs after resuming the moved folder`);
    await rename(moved, d);

    // A resume whose process died after setting the outputs aside and writing over some: the
    // check (a dry run, or the server's before it starts the job) judges the folder as the
    // resume will see it once it has restored the set-aside files, and reads only.
    await setAside(d, ['outputs', 'artifacts'], (rel) => rel.startsWith('outputs/calibrated/'), ['config.yaml', 'run.json']);
    await mkdir(join(d, 'artifacts'), { recursive: true });
    await writeFile(join(d, 'artifacts', 'phase_records.json'), '{"partial":');
    await writeFile(join(d, 'config.yaml'), 'half a config');
    const crashed = await listing(d);
    const afterCrash = await checkResume(d, 'STACKING', local);
    assert.is(afterCrash.verdict.feasible, true, JSON.stringify(afterCrash.verdict));
    assert.equal(await listing(d), crashed, 'the check leaves the crashed folder as it was');
    assert.is(await restoreLeftover(d), true);
    assert.is(await readFile(join(d, 'config.yaml'), 'utf8'), configBefore);
    assert.is((await checkResume(d, 'STACKING', local)).verdict.feasible, true);

    // A deleted checkpoint: artifacts_missing, the file, and where to start instead.
    await rm(join(d, 'artifacts', 'resume', 'TILE_GRID.json.gz'));
    const missing = await checkResume(d, 'STACKING', local);
    assert.equal([missing.verdict.feasible, missing.verdict.reason, missing.verdict.earliest_feasible_phase], [false, 'artifacts_missing', 'TILE_GRID']);
    assert.ok(missing.verdict.missing_files?.includes('artifacts/resume/TILE_GRID.json.gz'), JSON.stringify(missing.verdict));
    assert.is((await checkResume(d, 'TILE_GRID', local)).verdict.feasible, true);
    // A changed calibrated frame is a missing file too.
    const cal = join(d, 'outputs', 'calibrated', (await readdir(join(d, 'outputs', 'calibrated')))[0]!);
    const bytes = await readFile(cal);
    bytes[bytes.length - 1] = bytes[bytes.length - 1]! ^ 0xff;
    await writeFile(cal, bytes);
    const broken = await checkResume(d, 'TILE_GRID', local);
    assert.equal([broken.verdict.reason, broken.verdict.earliest_feasible_phase], ['artifacts_missing', 'CALIBRATION']);

    // Unknown phase; Raw Stack run.
    assert.is((await checkResume(d, 'PREPROCESS', local)).verdict.reason, 'unsupported_resume_phase');
    const raw = join(dir, 'rawrun');
    await mkdir(raw);
    await writeFile(join(raw, 'run.json'), JSON.stringify({ run_id: 'rawrun', kind: 'rawstack', created_at: '', status: 'ok', input: {}, job_id: null }));
    assert.is((await refusal(gatherResumeFacts(raw))).code, 'RESUME_NOT_SUPPORTED');
  });
});

test('tiled resume with input.checksums: a light changed between the identity samples is input_missing with checksums, not without (the server leaves that to the job)', async () => {
  await withTempDir('resume-sums', async (dir) => {
    const data = join(dir, 'data');
    // Frames over 1 MiB, so the file identity samples blocks rather than reading everything.
    await generateDataset({ out: data, kind: 'mono', frames: 6, width: 1024, height: 768, seed: 23, calibration: false, badFrames: 'none', starDensity: 3000 });
    const cfg = smallTiledConfig(data, join(dir, 'runs'), 'sums', { input: { input_dir: join(data, 'lights'), checksums: true } }, false);
    const first = await runTiled(cfg, { device: 'cpu' });
    assert.is(first.status, 'ok', JSON.stringify(first.phases));
    const light = join(data, 'lights', (await readdir(join(data, 'lights'))).sort()[0]!);
    const bytes = await readFile(light);
    // Just past the first inner sampled block (file-identity.ts: 16 blocks of 64 KiB spread evenly).
    const at = Math.floor((bytes.length - 65536) / 15) + 65536 + 4096;
    bytes[at] = bytes[at]! ^ 0x01;
    await writeFile(light, bytes);
    const quick = await checkResume(first.runDir, 'STACKING', null, { checksums: false });
    assert.is(quick.verdict.feasible, true, JSON.stringify(quick.verdict));
    const full = await checkResume(first.runDir, 'STACKING');
    assert.equal([full.verdict.feasible, full.verdict.reason, full.verdict.missing_files], [false, 'input_missing', [light]]);
    assert.is((await refusal(resumeTiled(first.runDir, 'STACKING', { device: 'cpu' }))).code, 'RESUME_PHASE_NOT_FEASIBLE', 'the resume itself checks the sums');
  });
});

test('tiled resume: resume.keep_intermediates false leaves CALIBRATION as the earliest phase, with artifacts_missing', async () => {
  await withTempDir('resume-nokeep', async (dir) => {
    const data = join(dir, 'data');
    await generateDataset({ out: data, kind: 'mono', frames: 8, width: 160, height: 128, seed: 8, calibration: true, calibrationCounts: { bias: 2, darks: 2, flats: 2 }, badFrames: 'none', starDensity: 8000 });
    const r = await runTiled(config(data, join(dir, 'runs'), { resume: { keep_intermediates: false } }), { device: 'cpu' });
    assert.is(r.status, 'ok', JSON.stringify(r.phases));
    assert.not.ok(await stat(join(r.runDir, 'outputs', 'calibrated')).catch(() => null), 'no calibrated frames kept');
    const v = (await checkResume(r.runDir, 'STACKING')).verdict;
    assert.equal([v.feasible, v.reason, v.earliest_feasible_phase], [false, 'artifacts_missing', 'CALIBRATION']);
    assert.ok(v.missing_files!.some((f) => f.includes('.scratch/')), JSON.stringify(v.missing_files));
    assert.is((await checkResume(r.runDir, 'CALIBRATION')).verdict.feasible, true);
  });
});

test.run();
