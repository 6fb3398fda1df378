// Run endpoints: list (newest first, paged), details (run.json + phase statuses + job link),
// logs (event lines, ?tail=), artifacts (list, view, raw), the quality report, and the SSE
// stream of events. Runs are the folders under runs_dir plus the run folders of known jobs
// (a run started with another runs_dir inside the roots). Raw Stack runs show like any run.
// Every file of a run folder is opened through run-files.ts (confined to the run folder).

import { extname, relative, sep } from 'node:path';
import { PassThrough } from 'node:stream';
import { z } from 'zod';
import type { EventLine } from '../../pipeline/events.js';
import { queryOf } from '../body.js';
import type { AppContext } from '../context.js';
import { ApiError } from '../errors.js';
import { PATH_FIELD_MAX } from '../paths.js';
import { page, PageQuery, type ApiRegistry } from '../registry.js';
import { listRunFiles, openRunFile, readRunText } from '../run-files.js';
import { parseEventText, phaseStatuses, readEvents, readRunRecord, runLayout } from '../run-index.js';
import { csvNumericRecords } from '../../shared/csv.js';
import { LogEnd } from '../../shared/event-end.js';
import { allRuns, findRun } from '../run-lookup.js';
import { PIPELINES } from './pipelines.js';

export const VIEW_LIMIT = 8 * 1024 * 1024;

const TYPES: Record<string, { type: string; mime: string }> = {
  '.json': { type: 'json', mime: 'application/json; charset=utf-8' },
  '.jsonl': { type: 'jsonl', mime: 'application/x-ndjson; charset=utf-8' },
  '.csv': { type: 'csv', mime: 'text/csv; charset=utf-8' },
  '.md': { type: 'markdown', mime: 'text/markdown; charset=utf-8' },
  '.html': { type: 'html', mime: 'text/html; charset=utf-8' },
  '.htm': { type: 'html', mime: 'text/html; charset=utf-8' },
  '.txt': { type: 'text', mime: 'text/plain; charset=utf-8' },
  '.log': { type: 'text', mime: 'text/plain; charset=utf-8' },
  '.wcs': { type: 'text', mime: 'text/plain; charset=utf-8' },
  '.fits': { type: 'fits', mime: 'application/fits' },
  '.fit': { type: 'fits', mime: 'application/fits' },
  '.fts': { type: 'fits', mime: 'application/fits' },
  '.png': { type: 'png', mime: 'image/png' },
  '.svg': { type: 'svg', mime: 'image/svg+xml' },
};
const TEXT_TYPES = new Set(['json', 'jsonl', 'csv', 'markdown', 'html', 'text']);

export function artifactType(name: string): { type: string; mime: string } {
  return TYPES[extname(name).toLowerCase()] ?? { type: 'binary', mime: 'application/octet-stream' };
}

const LogsQuery = z.strictObject({ tail: z.coerce.number().int().min(1).max(100000).optional(), limit: z.coerce.number().int().min(1).max(100000).optional(), offset: z.coerce.number().int().min(0).default(0) });
const ViewQuery = z.strictObject({ path: z.string().max(PATH_FIELD_MAX) });
const EventsQuery = z.strictObject({ last_event_id: z.coerce.number().int().min(0).optional() });

export function runRoutes(api: ApiRegistry, app: AppContext): void {
  api.add({ method: 'get', path: '/api/runs', tag: 'runs', summary: 'list runs, newest first', query: PageQuery, responses: { 200: '{items, total}' } }, async (ctx) => {
    const q = queryOf(ctx, PageQuery);
    const runs = await allRuns(app);
    ctx.body = page(
      runs.map(({ run_dir: _d, ...r }) => r),
      q,
    );
  });

  api.add({ method: 'get', path: '/api/runs/:id', tag: 'runs', summary: 'run details: run.json, phase statuses, job link', responses: { 200: 'run', 404: 'no such run' } }, async (ctx) => {
    const dir = await findRun(app, ctx.params.id!);
    const rec = await readRunRecord(dir);
    const layout = await runLayout(dir, rec);
    const lines = await readEvents(dir, layout);
    const status = phaseStatuses(lines, layout.kind);
    const jobId = rec?.job_id ?? null;
    const job = jobId ? app.jobs.get(jobId) : undefined;
    ctx.body = {
      run_id: ctx.params.id,
      run: rec,
      kind: layout.kind,
      status: rec?.status ?? status.run_status,
      run_status: status.run_status,
      progress: status.progress,
      phases: status.phases,
      events: lines.length,
      job: job ? { job_id: job.job_id, state: job.state, kind: job.kind, error: job.error } : jobId ? { job_id: jobId, state: 'unknown' } : null,
      links: { logs: `/api/runs/${ctx.params.id}/logs`, artifacts: `/api/runs/${ctx.params.id}/artifacts`, report: `/api/runs/${ctx.params.id}/report`, events: `/api/runs/${ctx.params.id}/events` },
      resumable: PIPELINES.some((p) => p.name === layout.kind && p.resumable),
    };
  });

  api.add({ method: 'get', path: '/api/runs/:id/logs', tag: 'runs', summary: 'run log: event lines (?tail=N for the last N)', query: LogsQuery, responses: { 200: '{items, total}', 404: 'no such run' } }, async (ctx) => {
    const q = queryOf(ctx, LogsQuery);
    const lines = await readEvents(await findRun(app, ctx.params.id!));
    const items = q.tail !== undefined ? lines.slice(-q.tail) : lines.slice(q.offset, q.limit !== undefined ? q.offset + q.limit : undefined);
    ctx.body = { items, total: lines.length };
  });

  api.add({ method: 'get', path: '/api/runs/:id/artifacts', tag: 'runs', summary: 'files of the run (artifacts/ and outputs/, and logs/ of a tiled run)', responses: { 200: '{items, total}', 404: 'no such run' } }, async (ctx) => {
    const dir = await findRun(app, ctx.params.id!);
    const layout = await runLayout(dir);
    const top = [layout.record, ...(layout.config.includes('/') ? [] : [layout.config])];
    const files = await listRunFiles(dir, [...layout.listed], top, 10000);
    const base = `/api/runs/${encodeURIComponent(ctx.params.id!)}/artifacts`;
    ctx.body = {
      items: files.map((f) => {
        const t = artifactType(f.path);
        return { ...f, type: t.type, content_type: t.mime, view: TEXT_TYPES.has(t.type) ? `${base}/view?path=${encodeURIComponent(f.path)}` : null, raw: `${base}/raw/${f.path.split('/').map(encodeURIComponent).join('/')}` };
      }),
      total: files.length,
    };
  });

  api.add(
    { method: 'get', path: '/api/runs/:id/artifacts/view', tag: 'runs', summary: 'content of a text artifact: {path, type, text | json}', query: ViewQuery, responses: { 200: 'content', 403: 'outside the run folder', 404: 'not found', 422: 'not a text artifact' } },
    async (ctx) => {
      const q = queryOf(ctx, ViewQuery);
      const dir = await findRun(app, ctx.params.id!);
      const f = await openRunFile(dir, q.path);
      const file = f.real;
      const t = artifactType(file);
      let text: string;
      try {
        if (!TEXT_TYPES.has(t.type)) throw new ApiError('UNSUPPORTED_TYPE', `${q.path} is ${t.type}; use the raw endpoint`, { type: t.type });
        if (f.size > VIEW_LIMIT) throw new ApiError('UNSUPPORTED_TYPE', `${q.path} is larger than ${VIEW_LIMIT} bytes; use the raw endpoint`, { size: f.size });
        text = await f.fh.readFile({ encoding: 'utf8' });
      } finally {
        await f.fh.close();
      }
      const rel = relative(dir, file).split(sep).join('/');
      if (t.type === 'json') {
        try {
          ctx.body = { path: rel, type: t.type, content_type: t.mime, json: JSON.parse(text) };
          return;
        } catch {
          // a JSON file being written: show it as text
        }
      }
      if (t.type === 'jsonl') {
        ctx.body = { path: rel, type: t.type, content_type: t.mime, text, json: parseEventText(text) };
        return;
      }
      ctx.body = { path: rel, type: t.type, content_type: t.mime, text };
    },
  );

  api.add(
    { method: 'get', path: '/api/runs/:id/artifacts/raw/{*path}', tag: 'runs', summary: 'serve an artifact with its Content-Type (HTML reports render in a browser)', responses: { 200: 'bytes', 403: 'outside the run folder', 404: 'not found' } },
    async (ctx) => {
      const raw = ctx.params.path as unknown;
      const rel = Array.isArray(raw) ? raw.join('/') : String(raw ?? '');
      const dir = await findRun(app, ctx.params.id!);
      const f = await openRunFile(dir, rel);
      const file = f.real;
      const t = artifactType(file);
      ctx.type = t.mime;
      ctx.length = f.size;
      if (t.type === 'html' || t.type === 'svg') {
        // Our reports use inline styles and data: images only; nothing may run or load.
        ctx.set('Content-Security-Policy', "default-src 'none'; img-src 'self' data:; style-src 'unsafe-inline'; frame-ancestors 'self'");
      }
      if (t.type === 'fits' || t.type === 'binary') ctx.set('Content-Disposition', `attachment; filename="${file.split(sep).pop()!.replace(/[^A-Za-z0-9._-]/g, '_')}"`);
      // The stream reads the descriptor that was checked (and closes it when done).
      ctx.body = f.fh.createReadStream();
    },
  );

  api.add({ method: 'get', path: '/api/runs/:id/report', tag: 'runs', summary: 'quality report: frame table and summary', responses: { 200: 'report', 404: 'no such run' } }, async (ctx) => {
    const dir = await findRun(app, ctx.params.id!);
    const layout = await runLayout(dir);
    const csv = layout.frameTable === null ? null : await readRunText(dir, layout.frameTable);
    const frames = csv === null ? null : csvNumericRecords(csv);
    const reportText = await readRunText(dir, layout.report.json);
    let report: unknown = null;
    try {
      report = reportText === null ? null : (JSON.parse(reportText) as unknown);
    } catch {
      report = null; // being written
    }
    const lines = await readEvents(dir, layout);
    const status = phaseStatuses(lines, layout.kind);
    const rows = frames ?? [];
    const num = (v: unknown) => (typeof v === 'number' && Number.isFinite(v) ? v : null);
    const accepted = rows.filter((r) => r.status !== 'excluded');
    const median = (key: string) => {
      const v = accepted
        .map((r) => num(r[key]))
        .filter((x): x is number => x !== null)
        .sort((a, b) => a - b);
      return v.length ? v[Math.floor((v.length - 1) / 2)]! : null;
    };
    if (!frames && !report && lines.length === 0) throw new ApiError('NOT_FOUND', `run ${ctx.params.id} has no report yet`);
    ctx.body = {
      run_id: ctx.params.id,
      run_status: status.run_status,
      summary: {
        frames_total: rows.length,
        frames_accepted: accepted.length,
        frames_excluded: rows.length - accepted.length,
        median_fwhm: median('fwhm'),
        median_star_count: median('star_count'),
        median_eccentricity: median('eccentricity'),
        phases: status.phases.map((p) => ({ phase: p.phase, status: p.status, ...(p.reason ? { reason: p.reason } : {}) })),
      },
      frames: rows,
      report,
      links: { html: `/api/runs/${encodeURIComponent(ctx.params.id!)}/artifacts/raw/${layout.report.html}` },
    };
  });

  api.add(
    { method: 'get', path: '/api/runs/:id/events', tag: 'runs', summary: 'Server-Sent Events: replay events.jsonl from Last-Event-ID (= seq) and follow new lines', query: EventsQuery, responses: { 200: 'text/event-stream', 404: 'no such run' } },
    async (ctx) => {
      const q = queryOf(ctx, EventsQuery);
      const dir = await findRun(app, ctx.params.id!);
      const header = Number(ctx.get('last-event-id'));
      const after = Number.isFinite(header) && ctx.get('last-event-id') !== '' ? header : (q.last_event_id ?? 0);
      const stream = new PassThrough();
      ctx.req.socket.setTimeout(0);
      ctx.req.socket.setNoDelay(true);
      ctx.status = 200;
      ctx.type = 'text/event-stream';
      ctx.set('Cache-Control', 'no-cache');
      ctx.set('X-Accel-Buffering', 'no');
      ctx.body = stream;
      followEvents(dir, (await runLayout(dir)).events, after, stream, () => ctx.req.destroyed);
    },
  );
}

/** Tails the run's events file (`eventsRel`) from byte 0, sending lines with seq > after; ends after run_end (a resumed run: after its last resume_end). */
function followEvents(runDir: string, eventsRel: string, after: number, out: PassThrough, gone: () => boolean): void {
  let offset = 0;
  let partial = '';
  let closed = false;
  let lastWrite = Date.now();
  const end = new LogEnd();
  out.write(`retry: 2000\n\n`);
  const close = () => {
    if (closed) return;
    closed = true;
    clearInterval(timer);
    out.end();
  };
  out.on('close', close);
  const tick = async () => {
    if (closed) return;
    if (gone()) return close();
    let fh;
    try {
      ({ fh } = await openRunFile(runDir, eventsRel));
    } catch {
      return; // run not started yet (or a link out of the run folder: the same to a client)
    }
    try {
      const s = await fh.stat();
      if (s.size > offset) {
        const buf = Buffer.alloc(Math.min(s.size - offset, 4 * 1024 * 1024));
        const { bytesRead } = await fh.read(buf, 0, buf.length, offset);
        offset += bytesRead;
        const text = partial + buf.subarray(0, bytesRead).toString('utf8');
        const parts = text.split('\n');
        partial = parts.pop() ?? '';
        for (const line of parts) {
          if (!line.trim()) continue;
          let ev: EventLine;
          try {
            ev = JSON.parse(line) as EventLine;
          } catch {
            continue;
          }
          end.see(ev);
          if ((ev.seq ?? 0) <= after) continue;
          out.write(`id: ${ev.seq}\ndata: ${line}\n\n`);
          lastWrite = Date.now();
        }
        // Decided per read, not per line: a resumed run's log goes on after its first run_end.
        if (end.ended && offset >= s.size && !partial) {
          out.write(`event: end\ndata: {}\n\n`);
          return close();
        }
      }
    } finally {
      await fh.close();
    }
    if (Date.now() - lastWrite > 15000) {
      out.write(`: keep-alive\n\n`);
      lastWrite = Date.now();
    }
  };
  let busy = false;
  const step = () => {
    if (busy) return;
    busy = true;
    tick()
      .catch(() => close())
      .finally(() => (busy = false));
  };
  const timer = setInterval(step, 200);
  step();
}
