// `node dist/bench/runs-list.js [--runs 2000] [--requests 300] [--no-record]`: GET /api/runs
// against a runs dir of N finished runs (run.json + a short events.jsonl each). `skystack serve`
// runs as its own process (it builds its run list in the background from the start); one client
// asks in sequence (keep-alive). Reports the time to build the list (every run.json read once,
// RunList timed in this process), the first request, warm requests (p50/p95/max), the request
// after a new run folder appears, and for comparison the per-request cost before the list: the
// full re-read of every run.json (run-index.ts listRuns, in this process). Appends a section
// to bench/RESULTS.md.

import { spawn } from 'node:child_process';
import { appendFile, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { listRuns } from '../src/server/run-index.js';
import { RunList } from '../src/server/run-list.js';

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, '..', 'src', 'cli.js');
const resultsFile = join(here, '..', '..', 'bench', 'RESULTS.md');

const { values } = parseArgs({ options: { runs: { type: 'string', default: '2000' }, requests: { type: 'string', default: '300' }, 'no-record': { type: 'boolean', default: false } } });
const nRuns = Number(values.runs);
const nRequests = Number(values.requests);
const agent = new Agent({ keepAlive: true, maxSockets: 1 });

function get(base: string, path: string): Promise<{ status: number; ms: number; total: number }> {
  const url = new URL(base);
  const t0 = performance.now();
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const ms = performance.now() - t0;
        const json = JSON.parse(Buffer.concat(chunks).toString()) as { total?: number };
        resolve({ status: res.statusCode ?? 0, ms, total: json.total ?? -1 });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))]!;
}

async function makeRun(runsDir: string, i: number): Promise<void> {
  const id = `run_${String(i).padStart(5, '0')}`;
  const dir = join(runsDir, id);
  await mkdir(join(dir, 'artifacts', 'preprocess'), { recursive: true });
  const created = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
  await writeFile(join(dir, 'run.json'), JSON.stringify({ run_id: id, kind: 'rawstack', created_at: created, status: i % 7 === 0 ? 'error' : 'ok', input: { lights_dir: '/data/lights', pattern: '*.fits', queue: [] }, job_id: null }, null, 2));
  const ev = [
    { seq: 1, ts: created, run_id: id, type: 'run_start', kind: 'rawstack', run_dir: dir },
    { seq: 2, ts: created, run_id: id, type: 'run_end', status: 'ok', duration_ms: 1000, failed_phases: [] },
  ];
  await writeFile(join(dir, 'artifacts', 'preprocess', 'events.jsonl'), ev.map((l) => JSON.stringify(l)).join('\n') + '\n');
}

async function main(): Promise<void> {
  const load = loadavg()[0]!;
  const root = await mkdtemp(join(tmpdir(), 'skystack-bench-runs-'));
  const runsDir = join(root, 'runs');
  await mkdir(runsDir);
  for (let i = 0; i < nRuns; i++) await makeRun(runsDir, i);
  const proc = spawn(process.execPath, [cli, 'serve', '--port', '0', '--runs-dir', runsDir], { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, SKYSTACK_DEVICE: 'cpu' } });
  try {
    let err = '';
    const base = await new Promise<string>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`serve did not start: ${err}`)), 20000);
      proc.stderr!.on('data', (c: Buffer) => {
        err += c.toString();
        const m = /serving (http:\/\/[^/\s]+)\/ui\//.exec(err);
        if (m) {
          clearTimeout(timer);
          resolve(m[1]!);
        }
      });
    });
    const path = '/api/runs?limit=50';
    // Let runs_dir's mtime settle (the list re-reads a folder changed in the last 2 s).
    await new Promise((r) => setTimeout(r, 2500));
    const first = await get(base, path);
    if (first.status !== 200 || first.total !== nRuns) throw new Error(`first answer ${first.status}, total ${first.total}`);
    const warm: number[] = [];
    for (let i = 0; i < nRequests; i++) warm.push((await get(base, path)).ms);
    warm.sort((a, b) => a - b);
    await makeRun(runsDir, nRuns);
    const afterNew = await get(base, path);
    if (afterNew.total !== nRuns + 1) throw new Error(`new run not listed: total ${afterNew.total}`);
    const full: number[] = [];
    for (let i = 0; i < 10; i++) {
      const t0 = performance.now();
      await listRuns(runsDir);
      full.push(performance.now() - t0);
    }
    full.sort((a, b) => a - b);
    const builds: number[] = [];
    for (let i = 0; i < 3; i++) {
      const t0 = performance.now();
      await new RunList(runsDir).list();
      builds.push(performance.now() - t0);
    }
    builds.sort((a, b) => a - b);
    const build = builds[1]!;
    const f = (x: number) => x.toFixed(1);
    const row = `| ${nRuns} | ${f(build)} | ${f(first.ms)} | ${f(pct(warm, 50))} | ${f(pct(warm, 95))} | ${f(warm[warm.length - 1]!)} | ${f(afterNew.ms)} | ${f(pct(full, 50))} |`;
    const cpu = cpus()[0]?.model ?? 'cpu';
    const section = `
## ${new Date().toISOString().slice(0, 10)} — run list (\`node dist/bench/runs-list.js\`), ${cpu}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}, no GPU

\`GET /api/runs?limit=50\` from one keep-alive client against \`skystack serve\` (its own process) with N finished runs
(run.json + events.jsonl each); ${nRequests} warm requests; load average at the start ${load.toFixed(1)} (the machine is shared). "list built" is the
server's one-time read of every run (RunList, median of 3, timed in the bench process); "full re-read" is what every request
cost before the in-memory list (every run.json read through the confined open, run-index.ts \`listRuns\`).

| runs | list built ms | first request ms | warm p50 ms | warm p95 ms | warm max ms | after a new run ms | full re-read p50 ms |
|---|---|---|---|---|---|---|---|
${row}
`;
    process.stdout.write(section);
    if (!values['no-record']) await appendFile(resultsFile, section);
  } finally {
    proc.kill('SIGTERM');
    await rm(root, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (e: Error) => {
    process.stderr.write(`${e.stack ?? e.message}\n`);
    process.exit(1);
  },
);
