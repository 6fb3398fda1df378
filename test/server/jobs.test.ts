// REST API with real Raw Stack jobs in child processes on tiny fixtures: start (both
// endpoints), job records, status, runs (list, details, logs, artifacts, view, raw, report),
// SSE replay and follow, FIFO queue with a pending cancel, cancel of a running job (the child
// is gone within 2 s and the run's events end with `cancelled`), resume refused for Raw Stack,
// and hostile artifact and run-start paths.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { RunningServer } from '../../src/server/app.js';
import { AcceptedSchema, JobListSchema, JobRecordSchema, PreprocessingStatusSchema } from '../../src/server/schemas.js';
import { alive, http, testServer, tinyLights, waitFor, type Res } from './helpers.js';

let dir = '';
let lights = '';
let srv: RunningServer;
let base = '';
let done: { job_id: string; run_id: string; run_dir: string } | null = null;

function envelope(r: Res, status: number, code: string): void {
  assert.is(r.status, status, `${status} expected, got ${r.status}: ${r.text.slice(0, 300)}`);
  assert.is(r.json?.error?.code, code, r.text.slice(0, 300));
}

async function finished(jobId: string, timeoutMs = 40000): Promise<Res> {
  return waitFor(async () => {
    const r = await http(base, 'GET', `/api/jobs/${jobId}`);
    return ['ok', 'error', 'cancelled'].includes(r.json.state) ? r : null;
  }, timeoutMs, 100);
}

/** Reads an SSE stream until it ends; returns the event ids and data lines. */
function sse(path: string, headers: Record<string, string> = {}, timeoutMs = 40000): Promise<{ status: number; type: string; events: { id: number | null; event: string | null; data: any }[] }> {
  const url = new URL(path, base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, headers }, (res) => {
      let buf = '';
      const events: { id: number | null; event: string | null; data: any }[] = [];
      const timer = setTimeout(() => {
        req.destroy();
        reject(new Error(`SSE did not end: ${buf.slice(-500)}`));
      }, timeoutMs);
      res.on('data', (c: Buffer) => {
        buf += c.toString();
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          let id: number | null = null;
          let event: string | null = null;
          let data: string | null = null;
          for (const line of block.split('\n')) {
            if (line.startsWith('id: ')) id = Number(line.slice(4));
            else if (line.startsWith('event: ')) event = line.slice(7);
            else if (line.startsWith('data: ')) data = line.slice(6);
          }
          if (data !== null) events.push({ id, event, data: JSON.parse(data) });
        }
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']), events });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'skystack-jobs-'));
  lights = await tinyLights(join(dir, 'data'));
  srv = await testServer({ runsDir: join(dir, 'runs'), roots: [join(dir, 'data')] });
  base = srv.url;
});

test.after(async () => {
  await srv.close();
  await rm(dir, { recursive: true, force: true });
});

test('a Raw Stack job from the preprocessing tool: 202, job record, status, SSE follow', async () => {
  const start = await http(base, 'POST', '/api/tools/preprocessing/run', { body: { lights_dir: lights, run_name: 'tiny', config: { runtime_limits: { parallel_workers: 2 } } } });
  assert.is(start.status, 202, start.text);
  assert.match(start.json.job_id, /^job_/);
  assert.match(start.json.run_id, /^tiny_\d{8}_\d{6}/);
  assert.is(start.json.run_dir, join(srv.context.runsDir, start.json.run_id));
  const stream = sse(`/api/runs/${start.json.run_id}/events`);
  const job = await finished(start.json.job_id);
  assert.is(job.json.state, 'ok', job.text);
  assert.is(job.json.error, null);
  assert.is(job.json.exit_code, 0);
  assert.is(job.json.progress.fraction, 1);
  JobRecordSchema.parse(job.json);
  AcceptedSchema.parse(start.json);
  JobListSchema.parse((await http(base, 'GET', '/api/jobs')).json);
  for (const k of ['job_id', 'kind', 'state', 'created_at', 'started_at', 'ended_at', 'run_id', 'run_dir', 'progress', 'error', 'exit_code', 'request']) assert.ok(k in job.json, k);
  const s = await stream;
  assert.is(s.status, 200);
  assert.match(s.type, /text\/event-stream/);
  const types = s.events.map((e) => e.data.type);
  assert.is(types[0], 'run_start');
  assert.is(s.events[s.events.length - 1]!.event, 'end');
  assert.ok(types.includes('run_end'));
  assert.equal(
    s.events.filter((e) => e.id !== null).map((e) => e.id),
    s.events.filter((e) => e.id !== null).map((_e, i) => i + 1),
    'ids are the seq numbers, in order, none missing',
  );
  const status = await http(base, 'GET', `/api/tools/preprocessing/status?job_id=${start.json.job_id}`);
  assert.is(status.status, 200);
  PreprocessingStatusSchema.parse(status.json);
  assert.is(status.json.state, 'ok');
  assert.is(status.json.run_status, 'ok');
  const phases = Object.fromEntries(status.json.phases.map((p: { phase: string; status: string }) => [p.phase, p.status]));
  assert.is(phases.STACKING, 'ok');
  assert.is(phases.CALIBRATION, 'skipped');
  assert.is(phases.PCC, 'skipped');
  assert.is(status.json.phases.length, 13);
  assert.ok(status.json.events.length > 0 && status.json.events.length <= 50);
  done = start.json;
});

test('runs: list, details, logs, artifacts, view, raw, report', async () => {
  assert.ok(done);
  const id = done!.run_id;
  envelope(await http(base, 'GET', '/api/runs?limit=0'), 400, 'VALIDATION_ERROR');
  envelope(await http(base, 'GET', '/api/runs?offset=-1'), 400, 'VALIDATION_ERROR');
  const list = await http(base, 'GET', '/api/runs?limit=10');
  assert.is(list.status, 200);
  const item = list.json.items.find((r: { run_id: string }) => r.run_id === id);
  assert.is(item?.kind, 'rawstack');
  assert.type(list.json.total, 'number');
  const det = await http(base, 'GET', `/api/runs/${id}`);
  assert.is(det.status, 200);
  // What tells runs apart in a list: when each started and which folder it read (run.json's).
  assert.equal([item.created_at, item.input_dir], [det.json.run.created_at, lights]);
  assert.match(item.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
  assert.is(det.json.run.run_id, id);
  assert.is(det.json.status, 'ok');
  assert.is(det.json.job.job_id, done!.job_id);
  assert.is(det.json.phases.find((p: { phase: string }) => p.phase === 'REGISTRATION').status, 'ok');
  const logs = await http(base, 'GET', `/api/runs/${id}/logs?tail=3`);
  assert.is(logs.json.items.length, 3);
  assert.is(logs.json.items[2].type, 'run_end');
  assert.ok(logs.json.total > 20);
  const arts = await http(base, 'GET', `/api/runs/${id}/artifacts`);
  const paths = arts.json.items.map((a: { path: string }) => a.path);
  for (const p of ['artifacts/preprocess/events.jsonl', 'artifacts/preprocess/frame_quality.csv', 'artifacts/preprocess/effective_config.json', 'artifacts/preprocess/preprocessing_report.html', 'artifacts/preprocess/preprocessing_report.md', 'outputs/stacked_linear.fits']) {
    assert.ok(paths.includes(p), `${p} listed`);
  }
  const byPath = Object.fromEntries(arts.json.items.map((a: { path: string }) => [a.path, a]));
  assert.is(byPath['outputs/stacked_linear.fits'].type, 'fits');
  assert.is(byPath['artifacts/preprocess/frame_quality.csv'].type, 'csv');
  const view = (p: string) => http(base, 'GET', `/api/runs/${id}/artifacts/view?path=${encodeURIComponent(p)}`);
  const js = await view('artifacts/preprocess/effective_config.json');
  assert.is(js.json.type, 'json');
  assert.is(js.json.json.lights_dir, lights);
  const csv = await view('artifacts/preprocess/frame_quality.csv');
  assert.is(csv.json.type, 'csv');
  assert.match(csv.json.text, /^index,file,status/);
  const jl = await view('artifacts/preprocess/events.jsonl');
  assert.is(jl.json.type, 'jsonl');
  assert.is(jl.json.json[0].type, 'run_start');
  assert.is((await view('artifacts/preprocess/preprocessing_report.md')).json.type, 'markdown');
  assert.is((await view('artifacts/preprocess/preprocessing_report.html')).json.type, 'html');
  envelope(await view('outputs/stacked_linear.fits'), 422, 'UNSUPPORTED_TYPE');
  envelope(await view('artifacts/preprocess/nothing.json'), 404, 'NOT_FOUND');
  const html = await http(base, 'GET', `/api/runs/${id}/artifacts/raw/artifacts/preprocess/preprocessing_report.html`);
  assert.is(html.status, 200);
  assert.match(String(html.headers['content-type']), /^text\/html/);
  assert.match(html.text, /<html/i);
  assert.match(String(html.headers['content-security-policy']), /default-src 'none'/);
  const fits = await http(base, 'GET', `/api/runs/${id}/artifacts/raw/outputs/stacked_linear.fits`);
  assert.is(fits.status, 200);
  assert.is(fits.headers['content-type'], 'application/fits');
  assert.match(fits.text.slice(0, 30), /^SIMPLE  =/);
  const rawCsv = await http(base, 'GET', `/api/runs/${id}/artifacts/raw/artifacts/preprocess/frame_quality.csv`);
  assert.match(String(rawCsv.headers['content-type']), /^text\/csv/);
  const rep = await http(base, 'GET', `/api/runs/${id}/report`);
  assert.is(rep.status, 200);
  assert.is(rep.json.frames.length, 6);
  assert.is(rep.json.summary.frames_total, 6);
  assert.type(rep.json.frames[0].fwhm, 'number');
  assert.ok(rep.json.summary.median_fwhm > 0);
  assert.ok(rep.json.report);
  // replay from Last-Event-ID
  const all = (await http(base, 'GET', `/api/runs/${id}/logs`)).json.total as number;
  const tail = await sse(`/api/runs/${id}/events`, { 'last-event-id': String(all - 2) });
  assert.equal(tail.events.filter((e) => e.id !== null).map((e) => e.id), [all - 1, all]);
});

test('hostile artifact and run-start paths stay inside the run folder and the roots', async () => {
  assert.ok(done);
  const id = done!.run_id;
  const outside = join(dir, 'outside');
  await mkdir(outside, { recursive: true });
  await writeFile(join(outside, 'secret.json'), '{"secret": "TOP-SECRET"}');
  await symlink(join(outside, 'secret.json'), join(done!.run_dir, 'artifacts', 'preprocess', 'leak.json'));
  await symlink(outside, join(dir, 'data', 'out-link'));
  const enc = encodeURIComponent;
  const viewCases = ['../../outside/secret.json', '../../../etc/passwd', '/etc/passwd', join(outside, 'secret.json'), 'artifacts/preprocess/leak.json', 'artifacts/../../outside/secret.json', 'artifacts/preprocess/events.jsonl\u0000.json', `${'x/'.repeat(3000)}a.json`];
  for (const p of viewCases) {
    const r = await http(base, 'GET', `/api/runs/${id}/artifacts/view?path=${enc(p)}`);
    assert.is(r.status, 403, `view ${p.slice(0, 80)} → ${r.status} ${r.text.slice(0, 200)}`);
    assert.not.match(r.text, /TOP-SECRET|root:x:/);
  }
  for (const p of ['..%2f..%2foutside%2fsecret.json', '%2e%2e/%2e%2e/outside/secret.json', 'artifacts/preprocess/leak.json', '..%5c..%5coutside%5csecret.json']) {
    const r = await http(base, 'GET', `/api/runs/${id}/artifacts/raw/${p}`);
    assert.ok(r.status === 403 || r.status === 404, `raw ${p} → ${r.status}`);
    assert.type(r.json?.error?.code, 'string');
    assert.not.match(r.text, /TOP-SECRET/);
  }
  for (const rid of ['..', '..%2f..%2foutside', '%2e%2e']) envelope(await http(base, 'GET', `/api/runs/${rid}/artifacts`), 404, 'NOT_FOUND');
  const starts: Record<string, unknown>[] = [
    { lights_dir: '/etc' },
    { lights_dir: `${lights}/../../outside` },
    { lights_dir: join(dir, 'data', 'out-link') },
    { lights_dir: lights, runs_dir: outside },
    { lights_dir: lights, config: { bias_dir: outside } },
    { lights_dir: lights, config: { pcc: { catalog_file: '/etc/passwd' } } },
    { lights_dir: lights, queue: [{ filter: 'L', input_dir: '/etc', active: true }] },
    { lights_dir: `${lights}\u0000` },
    { lights_dir: lights, config: { astrometry: { astap_bin: '/bin/sh' } } },
    { lights_dir: lights, config: { astrometry: { astrometry_net_bin: '/usr/bin/../../bin/solve-field' } } },
  ];
  for (const body of starts) {
    const r = await http(base, 'POST', '/api/tools/preprocessing/run', { body });
    assert.is(r.status, 403, `start ${JSON.stringify(body).slice(0, 120)} → ${r.status} ${r.text.slice(0, 200)}`);
    assert.is(r.json.error.code, 'PATH_NOT_ALLOWED');
  }
  envelope(await http(base, 'POST', '/api/tools/preprocessing/run', { body: { lights_dir: join(dir, 'data', 'missing') } }), 422, 'PATH_NOT_FOUND');
});

test('jobs: pipeline selection, resume refused for Raw Stack, cancel errors', async () => {
  assert.ok(done);
  const un = await http(base, 'POST', '/api/jobs/run', { body: { pipeline: 'aqmh' } });
  envelope(un, 422, 'PIPELINE_UNAVAILABLE');
  assert.equal(un.json.error.details.available, ['rawstack', 'tiled']);
  envelope(await http(base, 'POST', '/api/jobs/resume', { body: { run_id: done!.run_id } }), 409, 'RESUME_NOT_SUPPORTED');
  envelope(await http(base, 'POST', '/api/jobs/resume', { body: { run_id: 'run_19990101_000000' } }), 404, 'NOT_FOUND');
  envelope(await http(base, 'DELETE', `/api/jobs/${done!.job_id}`), 409, 'JOB_FINISHED');
  envelope(await http(base, 'DELETE', '/api/jobs/job_unknown0000'), 404, 'NOT_FOUND');
  envelope(await http(base, 'POST', '/api/tools/preprocessing/cancel', { body: { job_id: done!.job_id } }), 409, 'JOB_FINISHED');
  for (const p of ['', '/logs', '/artifacts', '/artifacts/view?path=run.json', '/artifacts/raw/run.json', '/report', '/events']) envelope(await http(base, 'GET', `/api/runs/run_19990101_000000${p}`), 404, 'NOT_FOUND');
  envelope(await http(base, 'GET', '/api/tools/preprocessing/status?job_id=job_unknown0000'), 404, 'NOT_FOUND');
  envelope(await http(base, 'GET', '/api/jobs/job_unknown0000/log'), 404, 'NOT_FOUND');
  envelope(await http(base, 'GET', `/api/runs/${done!.run_id}/logs?tail=0`), 400, 'VALIDATION_ERROR');
  envelope(await http(base, 'GET', `/api/runs/${done!.run_id}/artifacts/view`), 400, 'VALIDATION_ERROR');
  const log = await http(base, 'GET', `/api/jobs/${done!.job_id}/log?tail=5`);
  assert.is(log.status, 200);
  assert.ok(Array.isArray(log.json.lines));
  assert.not.match(log.text, /maxDynamic/);
  const list = await http(base, 'GET', '/api/jobs?state=ok&kind=rawstack');
  assert.ok(list.json.items.some((j: { job_id: string }) => j.job_id === done!.job_id));
});

test('a run queue (one folder per filter) through POST /api/jobs/run', async () => {
  const r = await http(base, 'POST', '/api/jobs/run', { body: { pipeline: 'rawstack', run_name: 'queue', queue: [{ filter: 'L', input_dir: lights, active: true }, { filter: 'Ha', input_dir: lights, active: false }] } });
  assert.is(r.status, 202, r.text);
  const job = await finished(r.json.job_id);
  assert.is(job.json.state, 'ok', job.text);
  const arts = (await http(base, 'GET', `/api/runs/${r.json.run_id}/artifacts`)).json.items.map((a: { path: string }) => a.path);
  assert.ok(arts.includes('outputs/stacked_linear.fits'), arts.join(' '));
  const run = await http(base, 'GET', `/api/runs/${r.json.run_id}`);
  assert.is(run.json.run.input.queue.length, 2);
});

test('FIFO queue, cancel of a pending job, cancel of a running job: child gone within 2 s, run closed as cancelled', async () => {
  const a = await http(base, 'POST', '/api/jobs/run', { body: { pipeline: 'rawstack', lights_dir: lights, run_name: 'qa' } });
  assert.is(a.status, 202, a.text);
  const b = await http(base, 'POST', '/api/jobs/run', { body: { pipeline: 'rawstack', lights_dir: lights, run_name: 'qb' } });
  assert.is(b.status, 202);
  assert.is((await http(base, 'GET', `/api/jobs/${b.json.job_id}`)).json.state, 'pending', 'max_concurrent_jobs = 1: the second waits');
  const cb = await http(base, 'POST', '/api/tools/preprocessing/cancel', { body: { job_id: b.json.job_id } });
  assert.is(cb.status, 202);
  assert.is(cb.json.state, 'cancelled');
  const bEvents = (await http(base, 'GET', `/api/runs/${b.json.run_id}/logs`)).json.items;
  assert.equal([bEvents[bEvents.length - 1].type, bEvents[bEvents.length - 1].status], ['run_end', 'cancelled']);

  const running = await waitFor(async () => {
    const r = await http(base, 'GET', `/api/jobs/${a.json.job_id}`);
    return r.json.state === 'running' && r.json.pid && r.json.progress.phase ? r.json : null;
  }, 20000, 20);
  const pid = running.pid as number;
  assert.ok(alive(pid));
  const t0 = Date.now();
  const c = await http(base, 'DELETE', `/api/jobs/${a.json.job_id}`);
  assert.is(c.status, 202, c.text);
  assert.ok(['cancelling', 'cancelled'].includes(c.json.state));
  await waitFor(async () => !alive(pid), 2000, 10);
  const gone = Date.now() - t0;
  assert.ok(gone <= 2000, `child gone after ${gone} ms`);
  const job = await finished(a.json.job_id, 5000);
  assert.is(job.json.state, 'cancelled');
  const lines = (await readFile(join(a.json.run_dir, 'artifacts', 'preprocess', 'events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
  const last = lines[lines.length - 1];
  assert.equal([last.type, last.status], ['run_end', 'cancelled']);
  const starts = lines.filter((l) => l.type === 'phase_start').length;
  const ends = lines.filter((l) => l.type === 'phase_end').length;
  assert.is(starts, ends, 'every started phase ended');
  assert.is(JSON.parse(await readFile(join(a.json.run_dir, 'run.json'), 'utf8')).status, 'cancelled');
  process.stdout.write(`  cancel: child gone ${gone} ms after DELETE\n`);
});

test.run();
