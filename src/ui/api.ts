// Browser client of the skystack REST API (docs/ARCHITECTURE.md "API conventions"). Every call goes to the page's own origin
// (no external requests). Failures come back as ApiError carrying the server's error envelope
// `{error: {code, message, details}}`, so views can show a specific message, and validation
// issues are normalised to dotted key paths whatever shape the server sends (ConfigIssue
// `{path: "a.b"}` or zod `{path: ["a", "b"]}`).

import { askForToken, sessionReady } from './auth.js';

export interface ApiIssue {
  /** Dotted key path, e.g. `rejection.low` ('' for the root). */
  path: string;
  code: string;
  message: string;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly details: unknown,
  ) {
    super(message);
  }

  /** Validation issues of a VALIDATION_ERROR (empty for other errors). */
  get issues(): ApiIssue[] {
    const d = this.details as { issues?: unknown } | null | undefined;
    const list = Array.isArray(d?.issues) ? d.issues : Array.isArray(this.details) ? this.details : [];
    return list.map((raw: unknown) => {
      const i = (raw ?? {}) as { path?: unknown; code?: unknown; message?: unknown };
      const path = Array.isArray(i.path) ? i.path.map(String).join('.') : typeof i.path === 'string' ? i.path : '';
      return { path, code: typeof i.code === 'string' ? i.code : 'invalid', message: typeof i.message === 'string' ? i.message : String(raw) };
    });
  }
}

export type JsonObject = Record<string, unknown>;

export async function request<T>(method: string, url: string, body?: unknown): Promise<T> {
  await sessionReady();
  const init: RequestInit = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin' };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
  }
  let res: Response;
  try {
    res = await fetch(url, init);
  } catch (e) {
    throw new ApiError(0, 'NETWORK', `the server did not answer (${(e as Error).message})`, null);
  }
  const text = await res.text();
  let data: unknown = null;
  if (text) {
    try {
      data = JSON.parse(text);
    } catch {
      data = text;
    }
  }
  if (!res.ok) {
    if (res.status === 401) askForToken();
    const env = (data as { error?: { code?: string; message?: string; details?: unknown } } | null)?.error;
    throw new ApiError(res.status, env?.code ?? `HTTP_${res.status}`, env?.message ?? (typeof data === 'string' && data ? data.slice(0, 200) : res.statusText), env?.details ?? null);
  }
  return data as T;
}

const enc = encodeURIComponent;

/** Some endpoints answer `{config: {...}}`, others the object itself. */
function unwrapConfig(data: unknown): JsonObject {
  const d = data as { config?: unknown; parameters?: unknown } | null;
  if (d && typeof d === 'object' && d.config && typeof d.config === 'object') return d.config as JsonObject;
  if (d && typeof d === 'object' && d.parameters && typeof d.parameters === 'object') return d.parameters as JsonObject;
  return (d ?? {}) as JsonObject;
}

/** A folder scan's (or INPUT_SCAN's) hint: the pattern matched nothing, this one takes the FITS files there. */
export interface PatternHintView {
  suggested_pattern: string;
  message: string;
}

export interface StartResult {
  job_id: string;
  run_id?: string | null;
  run_dir?: string | null;
}

export interface JobRecord {
  job_id: string;
  kind: string;
  state: 'pending' | 'running' | 'cancelling' | 'ok' | 'error' | 'cancelled';
  run_id?: string | null;
  run_dir?: string | null;
  progress?: { phase?: string | null; fraction?: number | null } | null;
  error?: { code: string; message: string } | null;
}

/** An error as one line for the pages: the server's message and code, or the thrown text. */
export const errText = (e: unknown): string => (e instanceof ApiError ? `${e.message} (${e.code})` : e instanceof Error ? e.message : String(e));

/**
 * The line a page shows when a run's (or a resume's) job has ended: the final status (the run's
 * own when known, else the job's), and why it failed. `failed` is the required phase that ended in
 * error (failedPhase in run-state.ts): its message says what to fix ("no file in … matches
 * \"*.fits\""), where the job's error only names the phase and reason code.
 */
export function runEndNotice(
  runStatus: string | null | undefined,
  job: JobRecord | null,
  what: 'Run' | 'Resume' = 'Run',
  failed: { name: string; reason?: string; message?: string } | null = null,
): { text: string; kind: 'ok' | 'info' | 'error' } {
  const final = runStatus ?? job?.state ?? 'unknown';
  const kind = final === 'ok' ? 'ok' : final === 'cancelled' ? 'info' : 'error';
  const why = failed?.message ?? failed?.reason;
  if (final === 'error' && failed && why) return { text: `${what} error in ${failed.name}: ${why}`, kind };
  const error = job?.error ? ` — ${job.error.code}: ${job.error.message}` : '';
  return { text: `${what} ${final}${error}`, kind };
}

export const TERMINAL_JOB_STATES: ReadonlySet<string> = new Set(['ok', 'error', 'cancelled']);

export interface ArtifactEntry {
  path: string;
  size?: number;
  type?: string;
  /** Modification time (ISO), when the server gives it: a changed file is reloaded. */
  mtime?: string;
}

export interface ArtifactView {
  path: string;
  type: string;
  text?: string;
  json?: unknown;
}

export interface DirEntry {
  name: string;
  path: string;
  type: 'dir' | 'file';
  size?: number;
}

export interface DirListing {
  path: string;
  parent: string | null;
  entries: DirEntry[];
}

export interface ImportResult {
  config: JsonObject;
  mapped: { from: string; to: string }[];
  ignored: { path: string; reason: string }[];
}

function listOf<T>(data: unknown): T[] {
  if (Array.isArray(data)) return data as T[];
  const d = data as { items?: unknown; entries?: unknown; artifacts?: unknown; files?: unknown } | null;
  for (const key of ['items', 'entries', 'artifacts', 'files'] as const) {
    const v = d?.[key];
    if (Array.isArray(v)) return v as T[];
  }
  return [];
}

function joinPath(dir: string, name: string): string {
  return dir.endsWith('/') ? dir + name : `${dir}/${name}`;
}

function parentOf(path: string): string | null {
  if (path === '/' || path === '') return null;
  const trimmed = path.replace(/\/+$/, '');
  const cut = trimmed.lastIndexOf('/');
  return cut <= 0 ? '/' : trimmed.slice(0, cut);
}

/** One finding of the tiled YAML validation. */
export interface YamlFinding {
  path: string;
  code?: string;
  message: string;
  line: number | null;
  column: number | null;
}

export interface TemplateSummary {
  name: string;
  updated_at: string;
  bytes?: number;
}

export interface TemplateRecord {
  name: string;
  yaml: string;
  updated_at: string;
}

export interface RevisionRecord {
  revision_id: string;
  file_name: string;
  source: string;
  created_at: string;
  run_id: string;
}

export interface ResumeRequest {
  run_id: string;
  from_phase: string;
  dry_run?: boolean;
  config_yaml?: string;
  config_revision_id?: string;
}

/** A dry run's answer (200, feasible or not); a real resume that cannot run answers 409 RESUME_PHASE_NOT_FEASIBLE with the same details. */
export interface ResumeCheck {
  run_id: string;
  run_dir?: string;
  from_phase: string;
  feasible: boolean;
  reason?: string;
  missing_files?: string[];
  changed_keys?: string[];
  earliest_feasible_phase?: string | null;
  would_rerun: string[];
}

export const api = {
  parameters: async (): Promise<JsonObject> => unwrapConfig(await request('GET', '/api/tools/preprocessing/parameters')),
  /** The stored parameters with where they came from (`defaults` while nothing is stored) and when they were stored. */
  storedParameters: async (): Promise<{ config: JsonObject; source: 'stored' | 'defaults'; updated_at: string | null }> => {
    const d = await request<{ source?: string; updated_at?: string | null }>('GET', '/api/tools/preprocessing/parameters');
    return { config: unwrapConfig(d), source: d?.source === 'stored' ? 'stored' : 'defaults', updated_at: d?.updated_at ?? null };
  },
  patchParameters: async (config: JsonObject): Promise<JsonObject> => unwrapConfig(await request('PATCH', '/api/tools/preprocessing/parameters', config)),
  defaults: async (): Promise<JsonObject> => unwrapConfig(await request('GET', '/api/tools/preprocessing/defaults')),
  importYaml: (source: { yaml: string } | { path: string }): Promise<ImportResult> =>
    'path' in source ? request('POST', '/api/tools/preprocessing/import-file', source) : request('POST', '/api/tools/preprocessing/import', source),
  start: (body: JsonObject): Promise<StartResult> => request('POST', '/api/tools/preprocessing/run', body),
  /** Starts a run of any pipeline the server offers (POST /api/jobs/run). */
  startPipeline: (body: { pipeline: string; input_dir: string; runs_dir?: string; run_name?: string; config_yaml?: string }): Promise<StartResult> => request('POST', '/api/jobs/run', body),
  /** Checks a tiled-workflow YAML: errors and warnings with line and column. */
  validateYaml: (yaml: string): Promise<{ ok: boolean; errors: YamlFinding[]; warnings: YamlFinding[] }> => request('POST', '/api/config/validate', { yaml }),
  info: (): Promise<JsonObject> => request('GET', '/api/system/info'),
  /** Cancels through the tool endpoint; a server without it is asked through DELETE /api/jobs/:id. */
  cancel: async (jobId: string): Promise<unknown> => {
    try {
      return await request('POST', '/api/tools/preprocessing/cancel', { job_id: jobId });
    } catch (e) {
      if (e instanceof ApiError && (e.status === 404 || e.status === 405) && e.code !== 'JOB_NOT_FOUND') return request('DELETE', `/api/jobs/${enc(jobId)}`);
      throw e;
    }
  },
  job: (jobId: string): Promise<JobRecord> => request('GET', `/api/jobs/${enc(jobId)}`),
  /** The newest Raw Stack job, or null when there is none. */
  latestRawStackJob: async (): Promise<JobRecord | null> => listOf<JobRecord>(await request('GET', '/api/jobs?kind=rawstack&limit=1'))[0] ?? null,
  runs: async (): Promise<JsonObject[]> => listOf<JsonObject>(await request('GET', '/api/runs?limit=50')),
  artifacts: async (runId: string): Promise<ArtifactEntry[]> =>
    listOf<ArtifactEntry | string>(await request('GET', `/api/runs/${enc(runId)}/artifacts`)).map((a) => (typeof a === 'string' ? { path: a } : a)),
  view: (runId: string, path: string): Promise<ArtifactView> => request('GET', `/api/runs/${enc(runId)}/artifacts/view?path=${enc(path)}`),
  /** Event lines of a run (empty while events.jsonl does not exist yet). */
  logs: async (runId: string): Promise<JsonObject[]> => listOf<JsonObject>(await request('GET', `/api/runs/${enc(runId)}/logs`)),
  rawUrl: (runId: string, path: string): string => `/api/runs/${enc(runId)}/artifacts/raw/${path.split('/').map(enc).join('/')}`,
  eventsUrl: (runId: string): string => `/api/runs/${enc(runId)}/events`,
  listDir: async (path: string): Promise<DirListing> => {
    const data = await request<JsonObject>('GET', `/api/files/list?path=${enc(path)}`);
    // Without a path the server lists the allowed roots (`path: null`); that listing is ''.
    const at = typeof data.path === 'string' ? data.path : data.path === null ? '' : path;
    const entries = listOf<JsonObject>(data)
      .filter((e) => e.type !== 'link' && e.type !== 'other')
      .map((e) => {
        const name = String(e.name ?? '');
        const dir = e.type === 'dir' || e.type === 'directory' || e.is_dir === true;
        return { name, path: typeof e.path === 'string' ? e.path : joinPath(at, name), type: dir ? 'dir' : 'file', ...(typeof e.size === 'number' ? { size: e.size } : {}) } as DirEntry;
      });
    // At the top of an allowed root the way up is the list of roots.
    const parent = typeof data.parent === 'string' ? data.parent : at === '' ? null : data.parent === null ? '' : parentOf(at);
    return { path: at, parent, entries };
  },
  /** Header scan of a folder (POST /api/files/scan): frame count and the detected colour mode. */
  scan: async (path: string, pattern: string): Promise<{ frames: number; colorMode: string | null; filters: string[]; hint: PatternHintView | null }> => {
    const data = await request<JsonObject>('POST', '/api/files/scan', { path, pattern, max_frames: 0 });
    const h = data.pattern_hint as JsonObject | null | undefined;
    const hint = h && typeof h.suggested_pattern === 'string' && typeof h.message === 'string' ? { suggested_pattern: h.suggested_pattern, message: h.message } : null;
    const summary = (data.summary ?? {}) as JsonObject;
    const filters = Array.isArray(summary.filters) ? summary.filters.map((f) => (typeof f === 'string' ? f : String((f as JsonObject)?.filter ?? (f as JsonObject)?.name ?? ''))).filter(Boolean) : [];
    return { frames: typeof summary.frames === 'number' ? summary.frames : 0, colorMode: typeof summary.color_mode === 'string' ? summary.color_mode : null, filters, hint };
  },
  grant: (path: string): Promise<unknown> => request('GET', `/api/files/grant?path=${enc(path)}`),
  /** JSON Schema of the tiled-workflow YAML (or of the Raw Stack parameters). */
  schema: (kind: 'tiled' | 'rawstack' = 'tiled'): Promise<unknown> => request('GET', `/api/config/schema?kind=${kind}`),
  /** Suggested values with their reasons, as key paths of the kind's configuration (Raw Stack parameters by default). */
  suggest: (body: { kind?: 'rawstack' | 'tiled'; input_dir?: string; run_id?: string }): Promise<{ suggestions: { path: string; value: unknown; current?: unknown; reason: string }[]; measured: JsonObject }> => request('POST', '/api/config/suggest', body),
  templates: async (): Promise<TemplateSummary[]> => listOf<TemplateSummary>(await request('GET', '/api/config/templates')),
  template: (name: string): Promise<TemplateRecord> => request('GET', `/api/config/templates/${enc(name)}`),
  saveTemplate: (name: string, yaml: string): Promise<TemplateRecord> => request('PUT', `/api/config/templates/${enc(name)}`, { yaml }),
  deleteTemplate: (name: string): Promise<unknown> => request('DELETE', `/api/config/templates/${enc(name)}`),
  /** The configuration a run used (a tiled run's config.yaml, Raw Stack's effective_config.json). */
  runConfig: (runId: string): Promise<{ run_id: string; kind: string; path: string; format: 'yaml' | 'json'; text: string; revision_id: string | null }> => request('GET', `/api/runs/${enc(runId)}/config`),
  revisions: async (runId: string): Promise<RevisionRecord[]> => listOf<RevisionRecord>(await request('GET', `/api/runs/${enc(runId)}/config/revisions`)),
  revision: (runId: string, rev: string): Promise<RevisionRecord & { yaml: string }> => request('GET', `/api/runs/${enc(runId)}/config/revisions/${enc(rev)}`),
  saveRevision: (runId: string, yaml: string): Promise<RevisionRecord> => request('POST', `/api/runs/${enc(runId)}/config/revisions`, { config_yaml: yaml }),
  /** Resume a run from a phase; with dry_run, only whether it can (200), else the job (202). */
  resume: (body: ResumeRequest): Promise<ResumeCheck | StartResult> => request('POST', '/api/jobs/resume', body),
};
