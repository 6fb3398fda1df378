// Restart: `skystack serve` is killed (SIGKILL) while a Raw Stack job runs. Its child notices
// the lost IPC channel and exits; a new server on the same runs dir marks the job error /
// INTERRUPTED, closes the run's events with run_end {status: error}, and still has the
// stored parameters, the grants and the runs.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { alive, http, serveProcess, testServer, tinyLights, waitFor } from './helpers.js';

test('kill the server mid-job, restart: INTERRUPTED, run closed, parameters, grants and runs intact', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'skystack-restart-'));
  try {
    const data = join(dir, 'data');
    const lights = await tinyLights(data);
    const granted = join(dir, 'granted');
    await mkdir(granted);
    const runsDir = join(dir, 'runs');
    const { proc, url } = await serveProcess(['--runs-dir', runsDir, '--root', data]);
    let killed = false;
    try {
      const patch = await http(url, 'PATCH', '/api/tools/preprocessing/parameters', { body: { rejection: { high: 2.75 }, lights_dir: lights } });
      assert.is(patch.status, 200, patch.text);
      assert.is((await http(url, 'GET', `/api/files/grant?path=${encodeURIComponent(granted)}`)).status, 200);
      const start = await http(url, 'POST', '/api/tools/preprocessing/run', { body: {} });
      assert.is(start.status, 202, start.text);
      const running = await waitFor(async () => {
        const r = await http(url, 'GET', `/api/jobs/${start.json.job_id}`);
        return r.json.state === 'running' && r.json.pid && r.json.progress.phase ? r.json : null;
      }, 20000, 20);
      const queued = await http(url, 'POST', '/api/tools/preprocessing/run', { body: { run_name: 'queued' } });
      assert.is((await http(url, 'GET', `/api/jobs/${queued.json.job_id}`)).json.state, 'pending');
      proc.kill('SIGKILL');
      killed = true;
      await waitFor(async () => !alive(running.pid), 5000, 20);

      const s2 = await testServer({ runsDir, roots: [data] });
      try {
        const job = await http(s2.url, 'GET', `/api/jobs/${start.json.job_id}`);
        assert.is(job.status, 200);
        assert.is(job.json.state, 'error');
        assert.is(job.json.error.code, 'INTERRUPTED');
        assert.is(job.json.run_id, start.json.run_id);
        const lines = (await readFile(join(start.json.run_dir, 'artifacts', 'preprocess', 'events.jsonl'), 'utf8')).trim().split('\n').map((l) => JSON.parse(l));
        const last = lines[lines.length - 1];
        assert.equal([last.type, last.status], ['run_end', 'error']);
        assert.is(lines.filter((l) => l.type === 'phase_start').length, lines.filter((l) => l.type === 'phase_end').length);
        assert.equal(lines.map((l) => l.seq), lines.map((_l, i) => i + 1), 'seq continues without gaps');
        const det = await http(s2.url, 'GET', `/api/runs/${start.json.run_id}`);
        assert.is(det.json.status, 'error');
        assert.ok((await http(s2.url, 'GET', '/api/runs')).json.items.some((r: { run_id: string }) => r.run_id === start.json.run_id));
        const params = await http(s2.url, 'GET', '/api/tools/preprocessing/parameters');
        assert.is(params.json.source, 'stored');
        assert.is(params.json.config.rejection.high, 2.75);
        assert.is((await http(s2.url, 'GET', `/api/files/list?path=${encodeURIComponent(granted)}`)).status, 200, 'grant survived');
        assert.is((await http(s2.url, 'DELETE', `/api/jobs/${start.json.job_id}`)).json.error.code, 'JOB_FINISHED');
        // the job that was still queued is queued again (and started: the queue was free)
        const again = await http(s2.url, 'GET', `/api/jobs/${queued.json.job_id}`);
        assert.ok(['pending', 'running'].includes(again.json.state), again.json.state);
        assert.is((await http(s2.url, 'DELETE', `/api/jobs/${queued.json.job_id}`)).status, 202);
      } finally {
        await s2.close();
      }
    } finally {
      if (!killed) proc.kill('SIGKILL');
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test.run();
