// The full run monitor (/ui/run-monitor.html). With `?preprocessing_job_id=<id>` it is in
// preprocessing mode (seed "Front-end views" 2): phase list with status and progress, live log,
// output previews, artifact list and viewer (JSON tree, CSV table, JSONL lines, Markdown, HTML
// served raw), the run's configuration. For tiled runs also the tile grid and weight maps
// (tile-map-view.ts), the revision list and Resume from phase (run-config-panel.ts), and Resume,
// New revision and Save as template work; for Raw Stack runs they are visibly disabled, since
// Raw Stack runs are not resumable. `?run_id=<id>` shows a run no job of this server owns
// (started from the CLI, or by an earlier server) the same way, from its event lines. Without either parameter it
// lists every run under the runs dir, whoever started it, with links into these modes.
// `&live=poll` skips Server-Sent Events and polls (the fallback path, also for proxies that
// buffer event streams).

import { api, errText, runEndNotice, TERMINAL_JOB_STATES, type ArtifactEntry, type StartResult } from './api.js';
import { RAWSTACK_WHY, RunConfigPanel } from './run-config-panel.js';
import { TileMapView } from './tile-map-view.js';
import { yamlDropBlock, yamlSetPath } from './yaml-edit.js';
import { showArtifact } from './artifact-viewer.js';
import { byId, clear, formatBytes, formatDateTime, h, say } from './dom.js';
import { frameContext } from './frame-data.js';
import { FrameTable, frameRows, openFrameInViewer, type FrameRow } from './frame-table.js';
import { followJob, followRun, type FollowCallbacks, type Follower } from './live.js';
import { renderLog, renderNotes, renderPhaseTable, renderPreviews } from './monitor-views.js';
import { failedPhase, RunState } from './run-state.js';
import { layoutOf } from '../shared/run-layout.js';

/** Where this run's report and frame table lie (its kind from run_start; Raw Stack until then). */
const layout = () => layoutOf(state.kind);
const params = new URLSearchParams(location.search);
const jobId = params.get('preprocessing_job_id');
const runParam = params.get('run_id');
const forcePolling = params.get('live') === 'poll';
const status = byId('job-status');
const state = new RunState();
let runId: string | null = null;
let artifacts: ArtifactEntry[] = [];
let selected: string | null = params.get('artifact');


/** Resume, New revision and Save as template: working for tiled runs, disabled with the reason otherwise. */
function runFunctions(kind: string | null = null): void {
  const tiled = kind === 'tiled';
  for (const id of ['btn-resume', 'btn-revision', 'btn-template']) {
    const b = byId<HTMLButtonElement>(id);
    b.disabled = !tiled;
    if (tiled) {
      b.removeAttribute('title');
      b.removeAttribute('aria-describedby');
    } else {
      b.title = RAWSTACK_WHY;
      b.setAttribute('aria-describedby', 'mode-note');
    }
  }
  byId('mode-note').textContent = tiled ? 'Tiled run: resume from a phase, configuration revisions and templates below.' : kind === null ? 'Preprocessing mode.' : `Preprocessing mode. ${RAWSTACK_WHY}`;
}

const panel = new RunConfigPanel({ onResumeStarted: (job) => followResume(job) });
const tileMaps = new TileMapView(byId('tile-maps'));
let panelRun = '';

/** Once the run and its kind are known: the panel for it, the phase picker from its plan. */
function runKnown(): void {
  if (!runId || !state.kind) return;
  panel.setPhases([...state.phases.keys()]);
  const key = `${runId}|${state.kind}`;
  if (key === panelRun) return;
  panelRun = key;
  runFunctions(state.kind);
  void panel.setRun(runId, state.kind);
}

let resumeFollower: Follower | null = null;

/**
 * A resume job of this run: its lines into the views until the job ends. The same follower as a
 * run's (live.ts), which knows that a resumed run's log goes on after its first run_end.
 */
function followResume(job: StartResult): void {
  const resumeStatus = byId('resume-status');
  resumeFollower?.stop();
  resumeFollower = followJob(
    job.job_id,
    {
      onLine: (line) => {
        if (!state.apply(line)) return;
        render();
        if (line.type === 'phase_end') void refreshArtifacts();
      },
      onJob: (rec) => {
        if (!TERMINAL_JOB_STATES.has(rec.state)) say(resumeStatus, `Resume job ${job.job_id} ${rec.state}${rec.progress?.phase ? `: ${rec.progress.phase}` : ''}…`);
      },
      onDone: (rec) => {
        const end = runEndNotice(null, rec, 'Resume');
        say(resumeStatus, `${end.text} (job ${job.job_id}).`, end.kind);
        void refreshArtifacts();
        void panel.loadConfig();
        void panel.loadRevisions();
      },
      onError: (message) => say(resumeStatus, message, 'error'),
    },
    { forcePolling },
  );
}

/**
 * Save as template: the run's configuration under a name from the run id (loaded in the run
 * studio), without the `_runtime` block the run recorded about itself (device, version) and
 * without its input folder: a template says how to process, and a start from it without a
 * folder is refused (input_dir is required) rather than stacking the old session again.
 */
async function saveAsTemplate(): Promise<void> {
  if (!runId) return;
  const name = runId.replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[._-]+/, '').slice(0, 64) || 'run';
  try {
    const c = await api.runConfig(runId);
    await api.saveTemplate(name, yamlSetPath(yamlDropBlock(c.text, '_runtime'), ['input', 'input_dir'], ''));
    say(status, `Saved the run's configuration as template ${name} (load it in the run studio).`, 'ok');
  } catch (e) {
    say(status, `Not saved as a template: ${errText(e)}`, 'error');
  }
}

function render(): void {
  renderPhaseTable(byId('phase-body'), state);
  renderNotes(byId('run-notes'), state);
  renderLog(byId('event-log'), state, 500);
}

function renderArtifactList(): void {
  const list = byId('artifact-list');
  clear(list);
  if (!runId) return;
  for (const a of artifacts) {
    const btn = h('button', { type: 'button', class: 'entry', 'data-path': a.path, 'aria-pressed': String(a.path === selected) }, a.path.replace(/^artifacts\/preprocess\//, ''), h('span', { class: 'muted' }, ` ${formatBytes(a.size)}`));
    btn.addEventListener('click', () => void select(a.path));
    list.append(h('li', {}, btn));
  }
  if (artifacts.length === 0) list.append(h('li', { class: 'muted' }, 'no artifacts yet'));
}

async function select(path: string): Promise<void> {
  if (!runId) return;
  selected = path;
  const url = new URL(location.href);
  url.searchParams.set('artifact', path);
  history.replaceState(null, '', url);
  renderArtifactList();
  const entry = artifacts.find((a) => a.path === path) ?? { path };
  const viewer = byId('viewer');
  await showArtifact(viewer, runId, entry);
  viewer.focus();
}

async function refreshArtifacts(): Promise<void> {
  if (!runId) return;
  try {
    artifacts = await api.artifacts(runId);
  } catch (e) {
    say(status, `Artifacts: ${errText(e)}`, 'error');
    return;
  }
  renderArtifactList();
  renderPreviews(byId('previews'), runId, artifacts, layout());
  if (state.kind === 'tiled') void tileMaps.update(runId, artifacts);
  if (artifacts.some((a) => a.path === layout().report.html)) byId<HTMLButtonElement>('btn-report').disabled = false;
  const csv = artifacts.find((a) => a.path === layout().frameTable);
  if (csv && csv.mtime !== framesShown) void showFrames(csv.mtime);
  else showFrameTable();
  if (selected && byId('viewer').dataset.path !== selected && artifacts.some((a) => a.path === selected)) void select(selected);
}

/** The run's frame table, read-only, with excluded frames marked (seed "Quality filter"), and its plots. */
const frameTable = new FrameTable(byId<HTMLTableElement>('frame-table'), byId('frame-plots'), {
  onOpenFrame: (frame) => {
    const why = runId ? openFrameInViewer(runId, frame) : 'no run';
    if (why) say(status, why, 'error');
  },
});
let framesShown: string | undefined;
let shownRows: FrameRow[] | null = null;
let shownContext = '';
/** (Re)draws the table when the rows or what the events say about them (still arriving while a replay runs) changed. */
function showFrameTable(): void {
  if (!shownRows) return;
  const context = frameContext(state.events, artifacts.map((a) => a.path));
  const key = `${context.referenceIndex}|${context.dateObs.size}|${context.paths.size}`;
  if (key === shownContext) return;
  shownContext = key;
  frameTable.show(shownRows, context);
}
async function showFrames(version: string | undefined): Promise<void> {
  if (!runId) return;
  framesShown = version;
  try {
    const v = await api.view(runId, layout().frameTable!);
    shownRows = frameRows(typeof v.text === 'string' ? v.text : '');
    shownContext = '';
    showFrameTable();
    byId('frames').hidden = false;
  } catch (e) {
    say(status, `Frames: ${errText(e)}`, 'error');
  }
}

/** The monitor's views, fed by `follow` (a job's or a run's events). */
function monitorMode(title: string, follow: (cb: FollowCallbacks) => void): void {
  byId('pp-mode').hidden = false;
  byId('run-title').textContent = title;
  runFunctions();
  byId('btn-resume').addEventListener('click', () => {
    byId('resume-box').scrollIntoView({ block: 'start' });
    byId('resume-phase').focus();
  });
  byId('btn-revision').addEventListener('click', () => {
    byId('resume-box').scrollIntoView({ block: 'start' });
    void panel.saveRevision();
  });
  byId('btn-template').addEventListener('click', () => void saveAsTemplate());
  byId('btn-report').addEventListener('click', () => {
    if (runId) window.open(api.rawUrl(runId, layout().report.html), '_blank', 'noopener');
  });
  render();
  follow({
    onLine: (line) => {
      if (!state.apply(line)) return;
      if (!runId && typeof line.run_id === 'string') {
        runId = line.run_id;
        byId('run-title').textContent = jobId ? `${runId} (job ${jobId})` : runId;
      }
      runKnown();
      render();
      if (line.type === 'phase_end' || line.type === 'run_start') void refreshArtifacts();
    },
    onJob: (job) => {
      if (job.run_id && !runId) {
        runId = job.run_id;
        byId('run-title').textContent = `${runId} (job ${job.job_id})`;
        runKnown();
        void refreshArtifacts();
      }
      if (!TERMINAL_JOB_STATES.has(job.state)) say(status, `Job ${job.state}`);
    },
    onMode: (mode) => {
      byId('live-mode').textContent = mode === 'done' ? '' : `(${mode === 'sse' ? 'live' : mode})`;
    },
    onDone: (job) => {
      const end = runEndNotice(state.runStatus, job, 'Run', failedPhase(state));
      say(status, end.text, end.kind);
      void refreshArtifacts();
      void panel.loadConfig();
      void panel.loadRevisions();
    },
    onError: (message) => say(status, message, 'error'),
  });
}

function preprocessingMode(id: string): void {
  monitorMode(`job ${id}`, (cb) => followJob(id, cb, { forcePolling }));
}

/** A run without a job on this server: its artifacts are there from the start. */
function runMode(id: string): void {
  runId = id;
  monitorMode(id, (cb) => followRun(id, cb, { forcePolling }));
  void refreshArtifacts();
}

async function runsList(): Promise<void> {
  byId('runs-list-box').hidden = false;
  byId('mode-note').textContent = 'Open a run to monitor it.';
  const list = byId('runs-list');
  try {
    const runs = await api.runs();
    for (const r of runs) {
      const job = typeof r.job_id === 'string' ? r.job_id : null;
      const name = String(r.run_id ?? r.id ?? '');
      const href = job ? `run-monitor.html?preprocessing_job_id=${encodeURIComponent(job)}` : `run-monitor.html?run_id=${encodeURIComponent(name)}`;
      // When it started and what it read tell apart runs of the same kind and status.
      const started = typeof r.created_at === 'string' && r.created_at ? [' · started ', h('time', { datetime: r.created_at }, formatDateTime(r.created_at))] : [];
      const input = typeof r.input_dir === 'string' ? [' · ', h('code', { class: 'run-input' }, r.input_dir)] : [];
      list.append(h('li', { 'data-run': name }, name ? h('a', { href }, name) : '(unnamed)', ` ${String(r.kind ?? '')} ${String(r.status ?? '')}`, ...started, ...input, job ? '' : ' · no job on this server (CLI or earlier)'));
    }
    if (runs.length === 0) list.append(h('li', { class: 'muted' }, 'no runs yet'));
  } catch (e) {
    say(status, `Runs: ${errText(e)}`, 'error');
  }
}

if (jobId) preprocessingMode(jobId);
else if (runParam) runMode(runParam);
else void runsList();
