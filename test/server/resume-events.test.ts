// The server's readers of a resumed run's log (one run_start … run_end, then resume_start …
// run_end, resume_end appended): closeRun closes only the last session of a resume whose process
// died (phase_end error for its open phase, run_end and resume_end, seq continuing), and the SSE
// stream replays the whole log and ends after resume_end, not at the first run_end; the run
// details fold it (earlier phases keep their status, the re-run one takes the new one).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { appendFile, mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { closeRun } from '../../src/server/run-index.js';
import { parseEventLines } from '../../src/shared/events.js';
import { http, testServer } from './helpers.js';

const PLAN = [{ name: 'A', optional: false }, { name: 'B', optional: false }];

async function runFolder(runs: string, id: string, bodies: Record<string, unknown>[]): Promise<string> {
  const dir = join(runs, id);
  await mkdir(join(dir, 'logs'), { recursive: true });
  await writeFile(join(dir, 'run.json'), JSON.stringify({ run_id: id, kind: 'tiled', created_at: '2026-01-01T00:00:00.000Z', status: 'running', input: {}, job_id: null }));
  await writeFile(join(dir, 'logs', 'run_events.jsonl'), bodies.map((b, i) => JSON.stringify({ seq: i + 1, ts: `2026-01-01T00:00:0${i % 10}.000Z`, run_id: id, ...b })).join('\n') + '\n');
  return dir;
}

const FIRST = [
  { type: 'run_start', kind: 'tiled', run_dir: '/x', phases: PLAN },
  { type: 'phase_start', phase: 'A' },
  { type: 'phase_end', phase: 'A', status: 'ok', duration_ms: 1 },
  { type: 'phase_start', phase: 'B' },
  { type: 'phase_end', phase: 'B', status: 'ok', duration_ms: 1 },
  { type: 'run_end', status: 'ok', duration_ms: 2, failed_phases: [] },
];

test('closeRun closes a dead resume’s session only', async () => {
  const runs = await mkdtemp(join(tmpdir(), 'skystack-resume-events-'));
  try {
    const dir = await runFolder(runs, 'r1', [...FIRST, { type: 'resume_start', from_phase: 'B', config_revision_id: 'rev_0002' }, { type: 'run_start', kind: 'tiled', run_dir: '/x', phases: PLAN }, { type: 'phase_start', phase: 'B' }]);
    assert.is(await closeRun(dir, 'error', 'crashed'), true);
    const added = parseEventLines(await readFile(join(dir, 'logs', 'run_events.jsonl'), 'utf8')).slice(9);
    assert.equal(added.map((l) => [l.seq, l.type, (l as { phase?: string }).phase ?? (l as { status?: string }).status]), [[10, 'phase_end', 'B'], [11, 'run_end', 'error'], [12, 'resume_end', 'error']]);
    assert.is(JSON.parse(await readFile(join(dir, 'run.json'), 'utf8')).status, 'error');
    assert.is(await closeRun(dir, 'error', 'crashed'), false, 'idempotent');
  } finally {
    await rm(runs, { recursive: true, force: true });
  }
});

test('SSE of a resumed run ends after resume_end; run details fold the appended log', async () => {
  const runs = await mkdtemp(join(tmpdir(), 'skystack-resume-sse-'));
  const srv = await testServer({ runsDir: runs });
  try {
    await runFolder(runs, 'r2', [
      ...FIRST,
      { type: 'resume_start', from_phase: 'B', config_revision_id: 'rev_0002' },
      { type: 'run_start', kind: 'tiled', run_dir: '/x', phases: PLAN, resumed_from: 'B' },
      { type: 'phase_start', phase: 'B' },
      { type: 'phase_end', phase: 'B', status: 'error', reason: 'exception', duration_ms: 1 },
      { type: 'run_end', status: 'error', duration_ms: 1, failed_phases: ['B'] },
      { type: 'resume_end', status: 'error', from_phase: 'B' },
    ]);
    const sse = await http(srv.url, 'GET', '/api/runs/r2/events');
    const ids = [...sse.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    assert.equal(ids, Array.from({ length: 12 }, (_, i) => i + 1));
    assert.ok(sse.text.indexOf('"resume_end"') < sse.text.indexOf('event: end'), 'end comes after resume_end');
    const det = await http(srv.url, 'GET', '/api/runs/r2');
    const phases = Object.fromEntries(det.json.phases.map((p: { phase: string; status: string }) => [p.phase, p.status]));
    assert.equal(phases, { A: 'ok', B: 'error' });
  } finally {
    await srv.close();
    await rm(runs, { recursive: true, force: true });
  }
});

test('SSE that starts between a run and its resume follows the appended session to resume_end', async () => {
  const runs = await mkdtemp(join(tmpdir(), 'skystack-resume-live-'));
  const srv = await testServer({ runsDir: runs });
  try {
    // The first session has ended and the resume has begun: the stream must not end at run_end.
    const dir = await runFolder(runs, 'r3', [...FIRST, { type: 'resume_start', from_phase: 'B', config_revision_id: null }]);
    const rest = [
      { type: 'run_start', kind: 'tiled', run_dir: '/x', phases: PLAN, resumed_from: 'B' },
      { type: 'phase_start', phase: 'B' },
      { type: 'phase_end', phase: 'B', status: 'ok', duration_ms: 1 },
      { type: 'run_end', status: 'ok', duration_ms: 1, failed_phases: [] },
      { type: 'resume_end', status: 'ok', from_phase: 'B' },
    ];
    const appended = (async () => {
      for (const [i, b] of rest.entries()) {
        await new Promise((r) => setTimeout(r, 250));
        await appendFile(join(dir, 'logs', 'run_events.jsonl'), JSON.stringify({ seq: 8 + i, ts: '2026-01-01T00:00:09.000Z', run_id: 'r3', ...b }) + '\n');
      }
    })();
    const sse = await http(srv.url, 'GET', '/api/runs/r3/events');
    await appended;
    const ids = [...sse.text.matchAll(/^id: (\d+)$/gm)].map((m) => Number(m[1]));
    assert.equal(ids, Array.from({ length: 12 }, (_, i) => i + 1));
    assert.ok(sse.text.indexOf('"resume_end"') < sse.text.indexOf('event: end'), 'end comes after resume_end');
  } finally {
    await srv.close();
    await rm(runs, { recursive: true, force: true });
  }
});

test.run();
