// `node dist/bench/api-load.js [--seconds 30] [--clients 50] [--sse 10] [--interval-ms 100]
// [--device cpu] [--no-record]`: load on the REST API while Raw Stack jobs run. `skystack
// serve` runs as its own process (so the load generator does not share its event loop); a
// job is always running (a new one starts as soon as the previous ends); N clients poll
// GET /api/jobs/:id (each waits for its answer, then `interval` ms) and M SSE followers
// stream /api/runs/:id/events (following each new run). Records request count, errors,
// latency percentiles and SSE events received; appends a section to bench/RESULTS.md.

import { spawn } from 'node:child_process';
import { appendFile, mkdtemp, rm } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { cpus, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { generateDataset } from '../fixtures/generator/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, '..', 'src', 'cli.js');
const resultsFile = join(here, '..', '..', 'bench', 'RESULTS.md');

const { values } = parseArgs({
  options: {
    seconds: { type: 'string', default: '30' },
    clients: { type: 'string', default: '50' },
    sse: { type: 'string', default: '10' },
    'interval-ms': { type: 'string', default: '100' },
    device: { type: 'string', default: 'cpu' },
    'no-record': { type: 'boolean', default: false },
  },
});
const seconds = Number(values.seconds);
const clients = Number(values.clients);
const followers = Number(values.sse);
const interval = Number(values['interval-ms']);

const agent = new Agent({ keepAlive: true, maxSockets: clients + followers + 10 });

function call(base: string, method: string, path: string, body?: unknown): Promise<{ status: number; json: any; ms: number }> {
  const url = new URL(path, base);
  const payload = body === undefined ? undefined : Buffer.from(JSON.stringify(body));
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, method, path, agent, headers: payload ? { 'content-type': 'application/json', 'content-length': payload.length } : {} }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString();
        let json: unknown = null;
        try {
          json = JSON.parse(text);
        } catch {
          json = null;
        }
        resolve({ status: res.statusCode ?? 0, json, ms: performance.now() - t0 });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    if (payload) req.write(payload);
    req.end();
  });
}

function pct(sorted: number[], p: number): number {
  return sorted.length ? sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]! : NaN;
}

async function main(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'skystack-apiload-'));
  const data = join(dir, 'data');
  await generateDataset({ out: data, kind: 'mono', frames: 12, width: 512, height: 384, seed: 7, calibration: false, badFrames: 'none', starDensity: 6000 });
  const server = spawn(process.execPath, [cli, 'serve', '--port', '0', '--runs-dir', join(dir, 'runs'), '--root', data], { env: { ...process.env, SKYSTACK_DEVICE: values.device }, stdio: ['ignore', 'ignore', 'pipe'] });
  let err = '';
  const base = await new Promise<string>((resolve, reject) => {
    server.stderr!.on('data', (c: Buffer) => {
      err += c.toString();
      const m = /serving (http:\/\/[^/\s]+)\/ui\//.exec(err);
      if (m) resolve(m[1]!);
    });
    server.on('exit', () => reject(new Error(`serve exited: ${err}`)));
  });
  const stopAt = Date.now() + seconds * 1000;
  let current = { job_id: '', run_id: '' };
  let jobsStarted = 0;
  let jobsOk = 0;
  const startJob = async () => {
    const r = await call(base, 'POST', '/api/tools/preprocessing/run', { lights_dir: join(data, 'lights'), run_name: 'load' });
    if (r.status !== 202) throw new Error(`start failed: ${r.status} ${JSON.stringify(r.json)}`);
    jobsStarted++;
    current = r.json;
  };
  await startJob();
  // Keeps one job running for the whole window.
  const driver = (async () => {
    while (Date.now() < stopAt) {
      const r = await call(base, 'GET', `/api/jobs/${current.job_id}`);
      if (['ok', 'error', 'cancelled'].includes(r.json?.state)) {
        if (r.json.state === 'ok') jobsOk++;
        if (Date.now() < stopAt) await startJob();
      }
      await new Promise((res) => setTimeout(res, 200));
    }
  })();

  const latencies: number[] = [];
  const errors: string[] = [];
  const poller = async () => {
    while (Date.now() < stopAt) {
      try {
        const r = await call(base, 'GET', `/api/jobs/${current.job_id}`);
        latencies.push(r.ms);
        if (r.status !== 200) errors.push(`status ${r.status}`);
      } catch (e) {
        errors.push((e as Error).message);
      }
      await new Promise((res) => setTimeout(res, interval));
    }
  };
  let sseEvents = 0;
  let sseStreams = 0;
  const sseErrors: string[] = [];
  const follower = async () => {
    while (Date.now() < stopAt) {
      const runId = current.run_id;
      await new Promise<void>((resolve) => {
        let ours = false; // we end the last stream ourselves at the end of the window
        const url = new URL(`/api/runs/${runId}/events`, base);
        const req = request({ host: url.hostname, port: url.port, path: url.pathname }, (res) => {
          if (res.statusCode !== 200) sseErrors.push(`status ${res.statusCode}`);
          sseStreams++;
          let buf = '';
          res.on('data', (c: Buffer) => {
            buf += c.toString();
            let i: number;
            while ((i = buf.indexOf('\n\n')) >= 0) {
              if (/(^|\n)data: /.test(buf.slice(0, i))) sseEvents++;
              buf = buf.slice(i + 2);
            }
          });
          res.on('end', () => resolve());
          res.on('error', (e) => {
            if (!ours) sseErrors.push(e.message);
            resolve();
          });
        });
        req.on('error', (e) => {
          if (!ours) sseErrors.push(e.message);
          resolve();
        });
        req.end();
        const timer = setTimeout(() => {
          ours = true;
          req.destroy();
          resolve();
        }, Math.max(0, stopAt - Date.now()));
        req.on('close', () => clearTimeout(timer));
      });
      // the next run starts a moment after this one ended
      while (Date.now() < stopAt && current.run_id === runId) await new Promise((res) => setTimeout(res, 100));
    }
  };
  const t0 = Date.now();
  await Promise.all([driver, ...Array.from({ length: clients }, poller), ...Array.from({ length: followers }, follower)]);
  const wall = (Date.now() - t0) / 1000;
  const health = await call(base, 'GET', '/api/system/health');
  server.kill('SIGTERM');
  await new Promise((res) => server.once('exit', res));
  await rm(dir, { recursive: true, force: true });
  agent.destroy();

  const sorted = [...latencies].sort((a, b) => a - b);
  const f = (x: number) => x.toFixed(1);
  const row = {
    requests: latencies.length,
    rps: latencies.length / wall,
    errors: errors.length,
    p50: pct(sorted, 50),
    p95: pct(sorted, 95),
    p99: pct(sorted, 99),
    max: sorted[sorted.length - 1] ?? NaN,
    sse_streams: sseStreams,
    sse_events: sseEvents,
    sse_errors: sseErrors.length,
    jobs_started: jobsStarted,
    jobs_ok: jobsOk,
  };
  console.log(JSON.stringify(row));
  if (errors.length) console.log('errors:', errors.slice(0, 5));
  if (sseErrors.length) console.log('sse errors:', sseErrors.slice(0, 5));
  console.log(`health after: ${health.status}`);
  if (!values['no-record']) {
    const cpu = cpus()[0]?.model ?? 'cpu';
    const section = `
## ${new Date().toISOString().slice(0, 10)} — REST API load (\`node dist/bench/api-load.js\`), ${cpu}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}

\`skystack serve\` in its own process, Raw Stack jobs (12 mono frames 512×384, SKYSTACK_DEVICE=${values.device}) running back to back for the whole window
in child processes; ${clients} clients poll \`GET /api/jobs/:id\` (answer, then ${interval} ms pause), ${followers} SSE followers stream
\`/api/runs/:id/events\` and follow each new run. ${seconds} s.

| requests | req/s | errors | p50 ms | p95 ms | p99 ms | max ms | SSE streams | SSE events | SSE errors | jobs started / ok | health after |
|---|---|---|---|---|---|---|---|---|---|---|---|
| ${row.requests} | ${f(row.rps)} | ${row.errors} | ${f(row.p50)} | ${f(row.p95)} | ${f(row.p99)} | ${f(row.max)} | ${row.sse_streams} | ${row.sse_events} | ${row.sse_errors} | ${row.jobs_started} / ${row.jobs_ok} | ${health.status} |
`;
    await appendFile(resultsFile, section);
    console.log(`appended to ${resultsFile}`);
  }
  if (errors.length || sseErrors.length) process.exitCode = 1;
}

await main();
