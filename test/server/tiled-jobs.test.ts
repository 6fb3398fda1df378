// REST API with a real tiled-workflow job in a child process on a tiny session: POST
// /api/jobs/run {pipeline: "tiled", input_dir, run_name, config_yaml} → 202 {job_id, run_id,
// run_dir} (unknown YAML keys come back as warnings), the job ends ok, and the runs endpoints
// (list with kind tiled, details with the tiled phase plan, logs, artifacts in the tiled layout,
// view, report) and SSE serve it; bad YAML is a 400 naming the line, a missing input folder 422,
// both config forms at once 400; /api/system/info lists the tiled plan. Resume of that run: dry run
// 200 with the verdict, no from_phase 400, both config forms 400 RESUME_CONFIG_CONFLICT, an
// unknown phase or a changed upstream key 409 RESUME_PHASE_NOT_FEASIBLE with details, a real
// resume 202 → job of kind resume ok, a second one meanwhile 409 RUN_BUSY, the log appended.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningServer } from '../../src/server/app.js';
import { TILED } from '../../src/pipeline/tiled/definition.js';
import { AcceptedSchema, JobRecordSchema } from '../../src/server/schemas.js';
import { http, testServer, tinyLights, waitFor, type Res } from './helpers.js';

let dir = '';
let lights = '';
let srv: RunningServer;
let base = '';
let runId = '';

function envelope(r: Res, status: number, code: string): void {
  assert.is(r.status, status, `${status} expected, got ${r.status}: ${r.text.slice(0, 300)}`);
  assert.is(r.json?.error?.code, code, r.text.slice(0, 300));
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'skystack-tiled-jobs-'));
  lights = await tinyLights(join(dir, 'data'), 6);
  srv = await testServer({ runsDir: join(dir, 'runs'), roots: [join(dir, 'data')] });
  base = srv.url;
});

test.after(async () => {
  await srv.close();
  await rm(dir, { recursive: true, force: true });
});

const YAML = `
tile: { size_factor: 16, star_min_count: 2, mystery: 1 }
local_metrics: { min_frames: 4 }
astrometry: { enabled: false }
bge: { method: none }
pcc: { enabled: false }
hypermetric_stretch: { enabled: false }
runtime_limits: { memory_budget: 256 }
`;

test('a tiled job: 202, job ok, runs endpoints and SSE in the tiled layout', async () => {
  const info = await http(base, 'GET', '/api/system/info');
  const tiled = info.json.capabilities?.pipelines?.find((p: { name: string }) => p.name === 'tiled') ?? info.json.pipelines?.find((p: { name: string }) => p.name === 'tiled');
  assert.ok(tiled, info.text.slice(0, 400));
  assert.equal(tiled.phases.map((p: { name: string }) => p.name), TILED.phases.map((p) => p.name));

  const start = await http(base, 'POST', '/api/jobs/run', { body: { pipeline: 'tiled', input_dir: lights, run_name: 'tl', config_yaml: YAML } });
  assert.is(start.status, 202, start.text);
  AcceptedSchema.parse(start.json);
  assert.match(start.json.run_id, /^tl_\d{8}_\d{6}/);
  assert.equal(start.json.warnings, ['tile.mystery (line 2): unknown key "tile.mystery" (ignored)']);
  const job = await waitFor(async () => {
    const r = await http(base, 'GET', `/api/jobs/${start.json.job_id}`);
    return ['ok', 'error', 'cancelled'].includes(r.json.state) ? r : null;
  }, 60000, 100);
  assert.is(job.json.state, 'ok', job.text);
  assert.is(job.json.kind, 'tiled');
  JobRecordSchema.parse(job.json);
  const id = start.json.run_id as string;
  const list = await http(base, 'GET', '/api/runs?limit=10');
  assert.ok(list.json.items.some((r: { run_id: string; kind: string; input_dir: string }) => r.run_id === id && r.kind === 'tiled' && r.input_dir === lights));
  const det = await http(base, 'GET', `/api/runs/${id}`);
  assert.is(det.json.status, 'ok');
  const phases = Object.fromEntries(det.json.phases.map((p: { phase: string; status: string; reason?: string }) => [p.phase, `${p.status}${p.reason ? `/${p.reason}` : ''}`]));
  assert.equal(Object.keys(phases), TILED.phases.map((p) => p.name));
  assert.is(phases.PREWARP, 'skipped/not_needed');
  assert.is(phases.STATE_CLUSTERING, 'skipped/reduced_mode');
  assert.is(phases.TILE_RECONSTRUCTION, 'ok');
  assert.is(phases.STACKING, 'ok');
  const logs = await http(base, 'GET', `/api/runs/${id}/logs?tail=2`);
  assert.is(logs.json.items[1].type, 'run_end');
  const arts = await http(base, 'GET', `/api/runs/${id}/artifacts`);
  const paths = arts.json.items.map((a: { path: string }) => a.path);
  for (const p of ['config.yaml', 'logs/run_events.jsonl', 'artifacts/tile_grid.json', 'artifacts/local_metrics.json', 'artifacts/tile_reconstruction.json', 'artifacts/validation.json', 'artifacts/report.html', 'outputs/stacked.fits']) assert.ok(paths.includes(p), `${p} listed: ${paths.join(', ')}`);
  const grid = await http(base, 'GET', `/api/runs/${id}/artifacts/view?path=${encodeURIComponent('artifacts/tile_grid.json')}`);
  assert.is(grid.json.json.image_width, 192);
  assert.ok(grid.json.json.num_tiles > 1);
  const rep = await http(base, 'GET', `/api/runs/${id}/report`);
  assert.is(rep.status, 200);
  assert.ok(rep.json.report);
  const ev = await http(base, 'GET', `/api/runs/${id}/events`);
  assert.match(ev.text, /"type":"run_start"/);
  assert.match(ev.text, /event: end/);
  const jobs = await http(base, 'GET', '/api/jobs?kind=tiled');
  assert.ok(jobs.json.items.some((j: { job_id: string }) => j.job_id === start.json.job_id));
  runId = id;
});

test('resume over the API: dry run 200, 400s, 409 not feasible with details, 202 job of kind resume, RUN_BUSY, log appended, revisions', async () => {
  assert.ok(runId, 'the tiled job ran');
  const post = (body: Record<string, unknown>) => http(base, 'POST', '/api/jobs/resume', { body: { run_id: runId, ...body } });
  const dry = await post({ from_phase: 'STACKING', dry_run: true });
  assert.is(dry.status, 200, dry.text);
  assert.equal(Object.keys(dry.json).sort(), ['earliest_feasible_phase', 'feasible', 'from_phase', 'run_dir', 'run_id', 'would_rerun']);
  assert.equal([dry.json.feasible, dry.json.from_phase, dry.json.would_rerun[0], dry.json.earliest_feasible_phase], [true, 'STACKING', 'STACKING', 'REPORT']);
  envelope(await post({}), 400, 'VALIDATION_ERROR');
  envelope(await post({ from_phase: 'STACKING', config_yaml: YAML, config_revision_id: 'rev_0001' }), 400, 'RESUME_CONFIG_CONFLICT');
  envelope(await post({ from_phase: 'STACKING', config_revision_id: 'rev_0099' }), 404, 'NOT_FOUND');
  const unknown = await post({ from_phase: 'PREPROCESS', dry_run: true });
  assert.equal([unknown.status, unknown.json.feasible, unknown.json.reason, unknown.json.would_rerun], [200, false, 'unsupported_resume_phase', []]);
  const upstream = await post({ from_phase: 'STACKING', config_yaml: YAML.replace('size_factor: 16', 'size_factor: 24') });
  envelope(upstream, 409, 'RESUME_PHASE_NOT_FEASIBLE');
  assert.equal([upstream.json.error.details.reason, upstream.json.error.details.changed_keys, upstream.json.error.details.earliest_feasible_phase], ['config_changed_upstream', ['tile.size_factor'], 'TILE_GRID']);
  // The run's first revision is its own configuration: feasible.
  assert.is((await post({ from_phase: 'STACKING', config_revision_id: 'rev_0001', dry_run: true })).json.feasible, true);

  // Another process (here: this test's parent, alive and not the server) holding the run folder,
  // as a CLI resume would: RUN_BUSY naming it, and the folder untouched.
  const runDir = dry.json.run_dir as string;
  await writeFile(join(runDir, '.run.lock'), JSON.stringify({ pid: process.ppid, host: hostname(), purpose: 'resume', since: '2026-11-29T00:00:00.000Z' }));
  const held = await post({ from_phase: 'STACKING' });
  envelope(held, 409, 'RUN_BUSY');
  assert.equal([held.json.error.details.holder.pid, held.json.error.details.holder.purpose], [process.ppid, 'resume']);
  await rm(join(runDir, '.run.lock'));

  const linesBefore = (await http(base, 'GET', `/api/runs/${runId}/logs?tail=100000`)).json.items.length as number;
  const started = await post({ from_phase: 'STACKING' });
  assert.is(started.status, 202, started.text);
  assert.equal([started.json.run_id, typeof started.json.job_id], [runId, 'string']);
  envelope(await post({ from_phase: 'STACKING' }), 409, 'RUN_BUSY');
  const job = await waitFor(async () => {
    const r = await http(base, 'GET', `/api/jobs/${started.json.job_id}`);
    return ['ok', 'error', 'cancelled'].includes(r.json.state) ? r : null;
  }, 60000, 100);
  assert.equal([job.json.state, job.json.kind], ['ok', 'resume'], job.text);
  JobRecordSchema.parse(job.json);
  const logs = (await http(base, 'GET', `/api/runs/${runId}/logs?tail=100000`)).json.items as { type: string; from_phase?: string; config_revision_id?: string; status?: string; phase?: string }[];
  const added = logs.slice(linesBefore);
  assert.equal([added[0]!.type, added[0]!.from_phase, added[0]!.config_revision_id], ['resume_start', 'STACKING', 'rev_0002']);
  assert.equal([added.at(-1)!.type, added.at(-1)!.status], ['resume_end', 'ok']);
  assert.not.ok(added.some((l) => l.type === 'phase_start' && l.phase === 'TILE_GRID'), 'earlier phases are not run again');
  const det = await http(base, 'GET', `/api/runs/${runId}`);
  assert.is(det.json.status, 'ok');
  const phases = Object.fromEntries(det.json.phases.map((p: { phase: string; status: string }) => [p.phase, p.status]));
  assert.equal([phases.TILE_GRID, phases.STACKING, phases.REPORT], ['ok', 'ok', 'ok']);
  const revs = await http(base, 'GET', `/api/runs/${runId}/config/revisions`);
  assert.equal(revs.json.items.map((r: { source: string }) => r.source), ['run_start', 'resume_previous']);
  const cfg = await http(base, 'GET', `/api/runs/${runId}/config`);
  assert.is(cfg.json.revision_id, 'rev_0002');
  const resumes = await http(base, 'GET', '/api/jobs?kind=resume');
  assert.ok(resumes.json.items.some((j: { job_id: string }) => j.job_id === started.json.job_id));

  // A cancelled resume (from the first phase, so it is still running or queued): the earlier outputs stay.
  const stack = join(started.json.run_dir, 'outputs', 'stacked.fits');
  const stackBefore = await readFile(stack);
  const again = await post({ from_phase: 'SCAN_INPUT' });
  assert.is(again.status, 202, again.text);
  const del = await http(base, 'DELETE', `/api/jobs/${again.json.job_id}`);
  assert.is(del.status, 202, del.text);
  const cancelled = await waitFor(async () => {
    const r = await http(base, 'GET', `/api/jobs/${again.json.job_id}`);
    return ['ok', 'error', 'cancelled'].includes(r.json.state) ? r : null;
  }, 60000, 100);
  assert.is(cancelled.json.state, 'cancelled', cancelled.text);
  assert.ok((await readFile(stack)).equals(stackBefore), 'the stack of the earlier run is back');
  assert.is((await http(base, 'GET', `/api/runs/${runId}`)).json.status, 'ok');
  assert.is((await post({ from_phase: 'STACKING', dry_run: true })).json.feasible, true);

  // A run (from the CLI, say) whose configuration reads outside the allowed roots is not resumed here.
  const outside = join(dir, 'runs', 'cli_20260101_000000');
  await mkdir(outside, { recursive: true });
  await writeFile(join(outside, 'run.json'), JSON.stringify({ run_id: 'cli_20260101_000000', kind: 'tiled', created_at: '', status: 'ok', input: {}, job_id: null }));
  await writeFile(join(outside, 'config.yaml'), `input: { input_dir: ${JSON.stringify(tmpdir())} }\n`);
  envelope(await http(base, 'POST', '/api/jobs/resume', { body: { run_id: 'cli_20260101_000000', from_phase: 'STACKING', dry_run: true } }), 403, 'PATH_NOT_ALLOWED');
});

test('tiled start refusals: bad YAML names its line, missing input, both config forms, unknown folder', async () => {
  const bad = await http(base, 'POST', '/api/jobs/run', { body: { pipeline: 'tiled', input_dir: lights, config_yaml: 'tile:\n  overlap_fraction: 0.9\n' } });
  envelope(bad, 400, 'VALIDATION_ERROR');
  assert.is(bad.json.error.details.issues[0].line, 2);
  envelope(await http(base, 'POST', '/api/jobs/run', { body: { pipeline: 'tiled' } }), 400, 'VALIDATION_ERROR');
  envelope(await http(base, 'POST', '/api/jobs/run', { body: { pipeline: 'tiled', input_dir: lights, config_yaml: 'a: 1', config: {} } }), 400, 'VALIDATION_ERROR');
  envelope(await http(base, 'POST', '/api/jobs/run', { body: { pipeline: 'tiled', input_dir: join(dir, 'data', 'missing') } }), 422, 'PATH_NOT_FOUND');
  envelope(await http(base, 'POST', '/api/jobs/run', { body: { pipeline: 'tiled', input_dir: '/etc' } }), 403, 'PATH_NOT_ALLOWED');
});

test.run();
