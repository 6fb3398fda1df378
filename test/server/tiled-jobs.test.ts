// REST API with a real tiled-workflow job in a child process on a tiny session: POST
// /api/jobs/run {pipeline: "tiled", input_dir, run_name, config_yaml} → 202 {job_id, run_id,
// run_dir} (unknown YAML keys come back as warnings), the job ends ok, and the runs endpoints
// (list with kind tiled, details with the tiled phase plan, logs, artifacts in the tiled layout,
// view, report) and SSE serve it; bad YAML is a 400 naming the line, a missing input folder 422,
// both config forms at once 400; /api/system/info lists the tiled plan; resume is refused (409).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningServer } from '../../src/server/app.js';
import { TILED } from '../../src/pipeline/tiled/definition.js';
import { AcceptedSchema, JobRecordSchema } from '../../src/server/schemas.js';
import { http, testServer, tinyLights, waitFor, type Res } from './helpers.js';

let dir = '';
let lights = '';
let srv: RunningServer;
let base = '';

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
  assert.ok(list.json.items.some((r: { run_id: string; kind: string }) => r.run_id === id && r.kind === 'tiled'));
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
  envelope(await http(base, 'POST', '/api/jobs/resume', { body: { run_id: id } }), 409, 'RESUME_NOT_SUPPORTED');
  const jobs = await http(base, 'GET', '/api/jobs?kind=tiled');
  assert.ok(jobs.json.items.some((j: { job_id: string }) => j.job_id === start.json.job_id));
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
