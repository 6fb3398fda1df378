// The Raw Stack page (/ui/): the seed's input, queue, calibration, quality, stack and postprocess
// fields, the parameters editor (Defaults = GET parameters, Validate = PATCH parameters, Reset =
// GET defaults), import from a tiled-workflow YAML, Start/Cancel, the inline monitor and, after a
// run, the frame table (sortable, with per-frame plots) whose checkboxes write
// quality_filter.manual_overrides.
// Precedence at start and at Validate: the visible fields are merged over the editor's JSON.
// Validate names the values typed in the editor that a field replaced, so nothing changes silently.
// The last job id is kept in localStorage so a reload shows the same run again.

import { api, ApiError, errText, runEndNotice, TERMINAL_JOB_STATES, type ApiIssue, type ArtifactEntry, type JobRecord } from './api.js';
import { getPath, isObject, mergeLayers, overriddenKeys, setPath, type Json, type Override } from './config-paths.js';
import { byId, clear, h, say } from './dom.js';
import { showServerLine } from './server-info.js';
import { browse } from './folder-browser.js';
import { FORM_FIELDS, fieldByPath, fillForm, readForm } from './form-fields.js';
import { frameContext } from './frame-data.js';
import { FrameTable, frameRows, openFrameInViewer, type FrameRow, type Overrides } from './frame-table.js';
import { followJob, type Follower } from './live.js';
import { renderArtifactLinks, renderChips, renderLog, renderNotes } from './monitor-views.js';
import { ParamEditor } from './param-editor.js';
import { showPatternHint, wirePatternHint } from './pattern-hint.js';
import { RunQueue } from './run-queue.js';
import { askCancel } from './confirm-cancel.js';
import { isFitsPath } from './image-viewer.js';
import { failedPhase, RunState } from './run-state.js';
import type { PhasePlanEntry } from '../shared/events.js';
import { RUN_LAYOUTS } from '../shared/run-layout.js';

const LAST_JOB_KEY = 'skystack.rawstack.lastJob';
const REPORT_PATH = RUN_LAYOUTS.rawstack.report.html;
const FRAME_CSV = RUN_LAYOUTS.rawstack.frameTable!;
const LOG_LINES = 14;

const editor = new ParamEditor(byId<HTMLTextAreaElement>('params-json'), byId('editor-gutter'), byId('editor-issues'));
const queue = new RunQueue(byId('queue-body'), byId('queue-empty'));
const editorStatus = byId('editor-status');
const runStatus = byId('run-status');
const startBtn = byId<HTMLButtonElement>('btn-start');
const cancelBtn = byId<HTMLButtonElement>('btn-cancel');
const reportBtn = byId<HTMLButtonElement>('btn-report');
const monitorBtn = byId<HTMLButtonElement>('btn-monitor');

let jobId: string | null = null;
let runId: string | null = null;
let follower: Follower | null = null;
/** Raw Stack's phase plan (GET /api/system/info capabilities.pipelines): pending chips before a run starts. */
let rawStackPlan: PhasePlanEntry[] = [];
let state = new RunState();
// The frame table and plots of the last run; a frame opens through `onOpenFrame`.
const frameTable = new FrameTable(byId<HTMLTableElement>('frame-table'), byId('frame-plots'), {
  onChange: (row, include) => void setOverride(row, include),
  onOpenFrame: (frame) => {
    const why = runId ? openFrameInViewer(runId, frame) : 'no run';
    if (why) say(byId('frames-status'), why, 'error');
  },
});


// ---- form and editor -------------------------------------------------------------------------

/** Shows a loaded parameter set in the editor, the fields and the queue. */
function load(config: Json): void {
  editor.setConfig(config);
  fillForm(config);
  queue.set(config.queue);
  showFieldIssues([]);
  showCatalogNote();
}

/** Editor JSON with the visible fields and the queue merged over it (the seed's precedence). */
function effectiveConfig(): Json {
  const layer = readForm();
  layer.queue = queue.items;
  return mergeLayers(editor.getConfig(), layer);
}

/** Marks visible fields named by validation issues (aria-invalid plus a message under the field). */
function showFieldIssues(issues: ApiIssue[]): void {
  for (const old of document.querySelectorAll('.field-error')) old.remove();
  for (const field of FORM_FIELDS) {
    const el = byId(field.id);
    el.removeAttribute('aria-invalid');
    el.removeAttribute('aria-errormessage');
  }
  for (const issue of issues) {
    const field = fieldByPath(issue.path);
    if (!field) continue;
    const el = byId(field.id);
    const msgId = `err-${field.id}`;
    el.setAttribute('aria-invalid', 'true');
    el.setAttribute('aria-errormessage', msgId);
    const holder = el.closest('.field') ?? el.parentElement;
    holder?.append(h('p', { class: 'field-error', id: msgId, 'data-key': issue.path }, issue.message));
  }
}

function showIssues(issues: ApiIssue[]): void {
  editor.setIssues(issues);
  showFieldIssues(issues);
}

async function loadFrom(what: 'parameters' | 'defaults'): Promise<void> {
  say(editorStatus, what === 'parameters' ? 'Loading the stored parameters…' : 'Loading the backend defaults…');
  try {
    if (what === 'parameters') {
      const stored = await api.storedParameters();
      load(stored.config);
      say(
        editorStatus,
        stored.source === 'stored'
          ? `Loaded the stored parameters${stored.updated_at ? ` (saved ${new Date(stored.updated_at).toLocaleString()})` : ''}.`
          : 'Loaded the stored parameters: nothing is stored yet, so these are the backend defaults.',
        'ok',
      );
    } else {
      load(await api.defaults());
      say(editorStatus, 'Loaded the backend defaults (not stored until Validate).', 'ok');
    }
  } catch (e) {
    say(editorStatus, `Could not load: ${errText(e)}`, 'error');
  }
}

/** "a.b (3 → 5)" for each key the form replaced in the editor's JSON. */
function overrideText(list: Override[]): string {
  const show = (v: unknown) => (v === undefined ? '–' : JSON.stringify(v));
  return list.map((o) => `${o.path} (${show(o.before)} → ${show(o.after)})`).join(', ');
}

async function validate(): Promise<void> {
  let config: Json;
  let overrides: Override[];
  try {
    const typed = editor.getConfig();
    config = effectiveConfig();
    // The visible fields win over the editor's JSON: say which of the editor's values they replaced.
    overrides = overriddenKeys(typed, config);
  } catch {
    say(editorStatus, 'The editor does not hold valid JSON; see the marked line.', 'error');
    return;
  }
  // The editor shows exactly what is sent, so issue lines point into it.
  editor.setConfig(config);
  say(editorStatus, 'Validating…');
  const note = overrides.length > 0 ? ` The form's fields replaced ${overrides.length} value${overrides.length === 1 ? '' : 's'} typed in the editor: ${overrideText(overrides)}.` : '';
  try {
    const stored = await api.patchParameters(config);
    load(Object.keys(stored).length > 0 ? stored : config);
    say(editorStatus, `Valid. Stored for the next Raw Stack starts.${note}`, 'ok');
  } catch (e) {
    if (e instanceof ApiError && e.issues.length > 0) {
      showIssues(e.issues);
      say(editorStatus, `${e.issues.length} validation error${e.issues.length === 1 ? '' : 's'}: see the marked keys.${note}`, 'error');
    } else say(editorStatus, `Validation failed: ${errText(e)}`, 'error');
  }
}

// ---- import from a tiled-workflow YAML -------------------------------------------------------

async function importYaml(): Promise<void> {
  const status = byId('import-status');
  const yaml = byId<HTMLTextAreaElement>('import-yaml').value;
  const path = byId<HTMLInputElement>('import-path').value.trim();
  if (!yaml.trim() && !path) {
    say(status, 'Paste YAML, choose a local file or give a server path.', 'error');
    return;
  }
  say(status, 'Importing…');
  try {
    const result = await api.importYaml(yaml.trim() ? { yaml } : { path });
    let current: Json;
    try {
      current = editor.getConfig();
    } catch {
      current = result.config;
    }
    // Only the mapped keys change, so the rest of the editor stays as the user left it.
    for (const m of result.mapped) setPath(current, m.to, structuredClone(getPath(result.config, m.to)));
    load({ ...current, queue: queue.items });
    const mappedBody = byId('import-mapped');
    clear(mappedBody);
    for (const m of result.mapped) mappedBody.append(h('tr', { 'data-to': m.to }, h('td', {}, h('code', {}, m.from)), h('td', {}, h('code', {}, m.to)), h('td', {}, h('code', {}, JSON.stringify(getPath(result.config, m.to))))));
    const ignored = byId('import-ignored');
    clear(ignored);
    for (const i of result.ignored) ignored.append(h('li', { 'data-path': i.path }, h('code', {}, i.path || '(root)'), `: ${i.reason}`));
    if (result.ignored.length === 0) ignored.append(h('li', { class: 'muted' }, 'nothing'));
    byId('import-result').hidden = false;
    say(status, `Imported ${result.mapped.length} parameter${result.mapped.length === 1 ? '' : 's'}, ignored ${result.ignored.length}. Validate to store them.`, 'ok');
  } catch (e) {
    say(status, `Import failed: ${errText(e)}`, 'error');
  }
}

// ---- run: start, cancel, follow -------------------------------------------------------------

function setRunButtons(job: JobRecord | null): void {
  const active = job !== null && !TERMINAL_JOB_STATES.has(job.state);
  cancelBtn.disabled = !active || job?.state === 'cancelling';
  startBtn.disabled = active;
  monitorBtn.disabled = jobId === null;
}

async function start(): Promise<void> {
  let config: Json;
  try {
    config = effectiveConfig();
  } catch {
    say(runStatus, 'The parameters editor does not hold valid JSON; see the marked line.', 'error');
    return;
  }
  const queueItems = queue.items;
  if (queueItems.length === 0 && !String(config.lights_dir ?? '').trim()) {
    say(runStatus, 'Choose an input folder (or add queue entries) before starting.', 'error');
    byId('lights_dir').focus();
    return;
  }
  editor.setIssues([]);
  showFieldIssues([]);
  startBtn.disabled = true;
  say(runStatus, 'Starting…');
  const body: Json = { config };
  for (const key of ['lights_dir', 'pattern', 'runs_dir', 'run_name'] as const) {
    const v = config[key];
    if (typeof v === 'string' && v.trim() !== '') body[key] = v;
  }
  if (queueItems.length > 0) body.queue = queueItems;
  try {
    const started = await api.start(body);
    follow(started.job_id, started.run_id ?? null);
    byId('inline-monitor').scrollIntoView({ block: 'start' });
  } catch (e) {
    startBtn.disabled = false;
    if (e instanceof ApiError && e.issues.length > 0) {
      editor.setConfig(config);
      showIssues(e.issues);
      say(runStatus, `Not started: ${e.issues.length} validation error${e.issues.length === 1 ? '' : 's'} (marked at the keys).`, 'error');
    } else say(runStatus, `Not started: ${errText(e)}`, 'error');
  }
}

async function confirmCancel(): Promise<void> {
  if (!(await askCancel()) || !jobId) return;
  cancelBtn.disabled = true;
  say(runStatus, 'Cancelling…');
  api.cancel(jobId).catch((e: unknown) => {
    say(runStatus, `Cancel failed: ${errText(e)}`, 'error');
    cancelBtn.disabled = false;
  });
}

function renderRun(): void {
  renderChips(byId('phase-chips'), state);
  renderNotes(byId('run-notes'), state);
  renderLog(byId('event-log'), state, LOG_LINES);
}

async function refreshArtifacts(): Promise<ArtifactEntry[]> {
  const rid = runId;
  if (!rid) return [];
  try {
    const entries = await api.artifacts(rid);
    if (rid !== runId) return [];
    renderArtifactLinks(byId('artifact-links'), rid, entries);
    return entries;
  } catch {
    return [];
  }
}

function follow(id: string, knownRunId: string | null): void {
  follower?.stop();
  jobId = id;
  runId = knownRunId;
  localStorage.setItem(LAST_JOB_KEY, id);
  state = new RunState(rawStackPlan);
  byId('monitor-run').textContent = `job ${id}`;
  byId('frames').hidden = true;
  clear(byId('artifact-links'));
  reportBtn.disabled = true;
  setRunButtons({ job_id: id, kind: 'rawstack', state: 'pending' });
  renderRun();
  const mine = state;
  follower = followJob(id, {
    onLine: (line) => {
      if (state !== mine || !state.apply(line)) return;
      if (!runId && typeof line.run_id === 'string') runId = line.run_id;
      if (runId) byId('monitor-run').textContent = `${runId} (job ${id})`;
      renderRun();
      if (line.type === 'phase_end') {
        if (line.reason === 'pattern_mismatch' && typeof line.suggested_pattern === 'string') showPatternHint({ suggested_pattern: line.suggested_pattern, message: String(line.message ?? '') });
        void refreshArtifacts();
        if (line.phase === 'REPORT') reportBtn.disabled = false;
      }
    },
    onJob: (job) => {
      if (state !== mine) return;
      if (job.run_id && !runId) runId = job.run_id;
      setRunButtons(job);
      if (!TERMINAL_JOB_STATES.has(job.state)) say(runStatus, `Job ${job.state}${job.progress?.phase ? `: ${job.progress.phase}` : ''}`);
    },
    onMode: (mode) => {
      byId('live-mode').textContent = mode === 'done' ? '' : `(${mode === 'sse' ? 'live' : mode})`;
    },
    onDone: (job) => {
      if (state !== mine) return; // a newer run took over the monitor
      setRunButtons(job);
      const end = runEndNotice(state.runStatus, job, 'Run', failedPhase(state));
      say(runStatus, end.text, end.kind);
      void refreshArtifacts().then((entries) => {
        if (entries.some((e) => e.path === REPORT_PATH)) reportBtn.disabled = false;
        // A run that stopped before FRAME_FILTERING has no frame table.
        if (entries.some((e) => e.path === FRAME_CSV)) void loadFrames(entries.map((e) => e.path));
      });
    },
    onError: (message) => {
      if (state === mine) say(runStatus, message, 'error');
    },
  });
}

// ---- frame table ----------------------------------------------------------------------------

async function storedOverrides(): Promise<Overrides> {
  const v = getPath(await api.parameters(), 'quality_filter.manual_overrides');
  return isObject(v) ? (v as Overrides) : {};
}

/** `files`: the run's artifact paths (which calibrated frames can be opened). */
async function loadFrames(files: string[]): Promise<void> {
  const rid = runId;
  if (!rid) return;
  let rows: FrameRow[];
  try {
    const view = await api.view(rid, FRAME_CSV);
    if (rid !== runId) return;
    rows = frameRows(typeof view.text === 'string' ? view.text : '');
  } catch {
    return; // no frame table for a run that stopped before FRAME_FILTERING
  }
  byId('frames').hidden = false;
  frameTable.show(rows, frameContext(state.events, files), await storedOverrides().catch(() => ({})));
}

/** Writes the stored parameters' manual_overrides (GET, change one key, PATCH) and mirrors it in the editor. */
async function writeOverrides(change: (o: Overrides) => void, message: string): Promise<void> {
  const status = byId('frames-status');
  say(status, 'Storing…');
  try {
    const stored = await api.parameters();
    const current = getPath(stored, 'quality_filter.manual_overrides');
    const overrides: Overrides = isObject(current) ? { ...(current as Overrides) } : {};
    change(overrides);
    setPath(stored, 'quality_filter.manual_overrides', overrides);
    const saved = await api.patchParameters(stored);
    const result = getPath(saved, 'quality_filter.manual_overrides');
    const final = isObject(result) ? (result as Overrides) : overrides;
    try {
      const cfg = editor.getConfig();
      setPath(cfg, 'quality_filter.manual_overrides', final);
      editor.setConfig(cfg);
    } catch {
      // the editor holds broken JSON: leave the user's text alone
    }
    frameTable.setOverrides(final);
    say(status, `${message} Stored quality_filter.manual_overrides = ${JSON.stringify(final)}`, 'ok');
  } catch (e) {
    say(status, `Could not store the override: ${errText(e)}`, 'error');
  }
}

function setOverride(row: FrameRow, include: boolean): Promise<void> {
  return writeOverrides((o) => {
    delete o[String(row.index)];
    o[row.file] = include;
  }, `${row.file} will be ${include ? 'included' : 'excluded'} in the next run.`);
}

/** Queue entry from the input folder; under colour mode auto the folder's headers decide OSC. */
async function addToQueue(): Promise<void> {
  const status = byId('queue-status');
  const dir = byId<HTMLInputElement>('lights_dir').value.trim();
  const pattern = byId<HTMLInputElement>('pattern').value;
  let mode = byId<HTMLSelectElement>('input_mode').value;
  const refused = queue.refuse(dir);
  if (refused) {
    say(status, refused, 'error');
    return;
  }
  say(status, `Scanning ${dir}…`);
  let note = '';
  let filter: string | null = null;
  try {
    const scan = await api.scan(dir, pattern);
    if (mode === 'auto' && scan.colorMode) mode = scan.colorMode;
    filter = scan.filters.length === 1 ? (scan.filters[0] ?? null) : null;
    note = ` ${scan.frames} frame${scan.frames === 1 ? '' : 's'} match ${pattern}${scan.colorMode ? ` (${scan.colorMode})` : ''}.`;
    if (scan.frames === 0) note = ` Warning: no file matches ${pattern} there.${scan.hint ? ` Found FITS files that ${scan.hint.suggested_pattern} takes (button under the pattern field).` : ''}`;
    showPatternHint(scan.frames === 0 ? scan.hint : null);
  } catch (e) {
    note = ` (not scanned: ${errText(e)})`;
  }
  const err = queue.addFrom(dir, mode, pattern, filter);
  say(status, err ?? `Entry added.${note}`, err ? 'error' : 'ok');
}

// ---- wiring ---------------------------------------------------------------------------------

async function pick(target: string, mode: 'dir' | 'file', title: string, fileFilter?: RegExp, frames?: (name: string) => boolean): Promise<void> {
  const input = byId<HTMLInputElement>(target);
  const startAt = input.value.trim() || byId<HTMLInputElement>('lights_dir').value.trim() || byId<HTMLInputElement>('runs_dir').value.trim();
  const chosen = await browse({ start: mode === 'file' && input.value.trim() ? input.value.trim().replace(/\/[^/]*$/, '') : startAt, mode, title, ...(fileFilter ? { fileFilter } : {}), ...(frames ? { frames } : {}) });
  if (chosen !== null) {
    input.value = chosen;
    input.dispatchEvent(new Event('change', { bubbles: true }));
  }
  input.focus();
}

function wire(): void {
  byId('rawstack-form').addEventListener('submit', (e) => {
    e.preventDefault();
    void start();
  });
  byId('btn-defaults').addEventListener('click', () => void loadFrom('parameters'));
  byId('btn-reset').addEventListener('click', () => void loadFrom('defaults'));
  byId('btn-validate').addEventListener('click', () => void validate());
  byId('btn-import').addEventListener('click', () => void importYaml());
  byId('import-file').addEventListener('change', async (e) => {
    const file = (e.target as HTMLInputElement).files?.[0];
    if (!file) return;
    byId<HTMLTextAreaElement>('import-yaml').value = await file.text();
    say(byId('import-status'), `Read ${file.name} (${file.size} bytes); press Import.`);
  });
  cancelBtn.addEventListener('click', () => void confirmCancel());
  reportBtn.addEventListener('click', () => {
    if (runId) window.open(api.rawUrl(runId, REPORT_PATH), '_blank', 'noopener');
  });
  monitorBtn.addEventListener('click', () => {
    if (jobId) window.open(`run-monitor.html?preprocessing_job_id=${encodeURIComponent(jobId)}`, '_blank', 'noopener');
  });
  byId('browse-lights').addEventListener('click', () => void pick('lights_dir', 'dir', 'Input folder (lights)', undefined, isFitsPath));
  byId('browse-runs').addEventListener('click', () => void pick('runs_dir', 'dir', 'Output folder (runs dir)'));
  for (const b of document.querySelectorAll<HTMLButtonElement>('.browse-dir')) b.addEventListener('click', () => void pick(b.dataset.target!, 'dir', b.getAttribute('aria-label') ?? 'Choose a folder'));
  for (const b of document.querySelectorAll<HTMLButtonElement>('.browse-file')) {
    const filter = b.dataset.filter === 'yaml' ? /\.ya?ml$/i : b.dataset.filter === 'catalog' ? /\.(csv|dat|txt)$/i : /\.(fits?|fts)(\.gz)?$|\.fz$/i;
    b.addEventListener('click', () => void pick(b.dataset.target!, 'file', b.getAttribute('aria-label') ?? 'Choose a file', filter));
  }
  byId('queue-add').addEventListener('click', () => void addToQueue());
  wirePatternHint();
  byId('pcc_catalog_file').addEventListener('input', showCatalogNote);
  byId('pcc_catalog_file').addEventListener('change', showCatalogNote);
  byId('btn-clear-overrides').addEventListener('click', () => void writeOverrides((o) => Object.keys(o).forEach((k) => delete o[k]), 'Manual overrides cleared.'));
}

/** Installed catalogues the server found (GET /api/system/info capabilities.pcc.catalogs). */
let installedCatalog: { id: string; description: string; files: string[]; mag_limit: number | null; package: string | null } | null | undefined;

/** Says which catalogue PCC takes: the file given, else the installed one, else that PCC will skip. */
function showCatalogNote(): void {
  const note = byId('pcc-catalog-note');
  const given = byId<HTMLInputElement>('pcc_catalog_file').value.trim();
  if (given) note.textContent = `PCC reads ${given}.`;
  else if (installedCatalog === undefined) note.textContent = '';
  else if (installedCatalog) note.textContent = `Empty: PCC uses the installed ${installedCatalog.package ?? ''} catalogue ${installedCatalog.files.join(', ')}${installedCatalog.mag_limit !== null ? ` (stars to V ${installedCatalog.mag_limit})` : ''}.`;
  else note.textContent = 'Empty, and the server has no catalogue package installed (Debian: kstars-data): PCC will be skipped (no_catalog_stars).';
}

async function showServerInfo(): Promise<void> {
  const info = await showServerLine(byId('server-info'));
  if (info) {
    const catalogs = getPath(info, 'capabilities.pcc.catalogs');
    const list = Array.isArray(catalogs) ? (catalogs as NonNullable<typeof installedCatalog>[]) : [];
    installedCatalog = list.find((c) => (c as unknown as { source?: string }).source === 'installed') ?? null;
    const pipelines = getPath(info, 'capabilities.pipelines');
    const plan = Array.isArray(pipelines) ? (pipelines as { name?: unknown; phases?: unknown }[]).find((p) => p.name === 'rawstack')?.phases : undefined;
    if (Array.isArray(plan) && rawStackPlan.length === 0) {
      rawStackPlan = plan as PhasePlanEntry[];
      // The idle monitor shows the plan; a followed run keeps its own (from its run_start).
      if (jobId === null) {
        state = new RunState(rawStackPlan);
        renderRun();
      }
    }
  }
  showCatalogNote();
}

wire();
renderRun();
void showServerInfo();
// Show the run this browser started last, else the server's newest Raw Stack job (another
// browser's, or one started before a reload), so the monitor and frame table survive reloads.
void loadFrom('parameters').then(async () => {
  const last = localStorage.getItem(LAST_JOB_KEY);
  const job = (last ? await api.job(last).catch(() => null) : null) ?? (await api.latestRawStackJob().catch(() => null));
  if (job) follow(job.job_id, job.run_id ?? null);
  else localStorage.removeItem(LAST_JOB_KEY);
});
