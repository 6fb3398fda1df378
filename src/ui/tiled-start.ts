// The run studio for tiled runs (/ui/tiled.html): input folder, runs dir and run name with the
// server-side folder browser; the configuration as tiled-workflow YAML with completion of keys
// from the JSON Schema (yaml-complete.ts: Ctrl-Space), validation by the server (each finding
// marked at its line), suggestions from POST /api/config/suggest (kind tiled) to apply one by
// one, and templates (template-bar.ts); Start
// (POST /api/jobs/run {pipeline: "tiled"}) and Cancel, and the run's phase chips and latest events
// while it runs. The run monitor shows the rest (revisions, resume, tile grid).

import { api, ApiError, errText, runEndNotice, TERMINAL_JOB_STATES, type YamlFinding } from './api.js';
import { TemplateBar } from './template-bar.js';
import { YamlCompleter } from './yaml-complete.js';
import { yamlScalar, yamlSetPath } from './yaml-edit.js';
import { byId, clear, h, say } from './dom.js';
import { browse } from './folder-browser.js';
import { followJob, type Follower } from './live.js';
import { renderLineGutter } from './param-editor.js';
import { renderChips, renderLog } from './monitor-views.js';
import { askCancel } from './confirm-cancel.js';
import { isFitsPath } from './image-viewer.js';
import { showServerLine } from './server-info.js';
import { failedPhase, RunState } from './run-state.js';

const yamlArea = byId<HTMLTextAreaElement>('config_yaml');
const gutter = byId('yaml-gutter');
const issues = byId('yaml-issues');
const yamlStatus = byId('yaml-status');
const runStatus = byId('run-status');
const startBtn = byId<HTMLButtonElement>('btn-start');
const cancelBtn = byId<HTMLButtonElement>('btn-cancel');
let follower: Follower | null = null;
let jobId: string | null = null;


/** Line numbers beside the YAML, the lines with findings marked. */
function renderGutter(findings: YamlFinding[] = []): void {
  renderLineGutter(gutter, yamlArea, findings.flatMap((f) => (f.line !== null ? [{ line: f.line, text: `${f.path || '(root)'}: ${f.message}` }] : [])));
}

function showFindings(errors: YamlFinding[], warnings: YamlFinding[]): void {
  clear(issues);
  for (const f of [...errors, ...warnings]) {
    const where = f.line !== null ? ` (line ${f.line}${f.column !== null ? `, column ${f.column}` : ''})` : '';
    issues.append(h('li', { class: errors.includes(f) ? 'issue' : 'issue warning', 'data-key': f.path, 'data-line': f.line ?? '' }, h('code', {}, f.path || '(root)'), `${where}: ${f.message}`));
  }
  issues.hidden = issues.childElementCount === 0;
  renderGutter(errors);
}

/** Validates the YAML; true when it has no errors (an empty configuration is valid). */
async function validateYaml(): Promise<boolean> {
  const text = yamlArea.value;
  if (text.trim() === '') {
    showFindings([], []);
    say(yamlStatus, 'Empty: the defaults apply.', 'ok');
    return true;
  }
  say(yamlStatus, 'Validating…');
  try {
    const r = await api.validateYaml(text);
    showFindings(r.errors, r.warnings);
    if (r.ok) say(yamlStatus, r.warnings.length ? `Valid, ${r.warnings.length} warning${r.warnings.length === 1 ? '' : 's'} (unknown keys are ignored).` : 'Valid.', 'ok');
    else say(yamlStatus, `${r.errors.length} error${r.errors.length === 1 ? '' : 's'}: see the marked lines.`, 'error');
    return r.ok;
  } catch (e) {
    say(yamlStatus, `Validation failed: ${errText(e)}`, 'error');
    return false;
  }
}

function follow(id: string): void {
  follower?.stop();
  const state = new RunState();
  byId('run-box').hidden = false;
  byId('run-title').textContent = `job ${id}`;
  const link = byId<HTMLAnchorElement>('monitor-link');
  link.href = `run-monitor.html?preprocessing_job_id=${encodeURIComponent(id)}`;
  link.hidden = false;
  const draw = () => {
    renderChips(byId('phase-chips'), state);
    renderLog(byId('event-log'), state, 12);
  };
  draw();
  follower = followJob(id, {
    onLine: (line) => {
      if (!state.apply(line)) return;
      if (state.runId) byId('run-title').textContent = `${state.runId} (job ${id})`;
      draw();
    },
    onJob: (job) => {
      cancelBtn.disabled = TERMINAL_JOB_STATES.has(job.state);
      if (!TERMINAL_JOB_STATES.has(job.state)) say(runStatus, `Job ${job.state}${job.progress?.phase ? `: ${job.progress.phase}` : ''}`);
    },
    onDone: (job) => {
      startBtn.disabled = false;
      cancelBtn.disabled = true;
      const end = runEndNotice(state.runStatus, job, 'Run', failedPhase(state));
      say(runStatus, end.text, end.kind);
    },
    onError: (message) => say(runStatus, message, 'error'),
  });
}

async function start(): Promise<void> {
  const input = byId<HTMLInputElement>('input_dir').value.trim();
  if (!input) {
    say(runStatus, 'Choose an input folder before starting.', 'error');
    return;
  }
  if (!(await validateYaml())) {
    say(runStatus, 'Not started: the configuration has errors (marked at their lines).', 'error');
    return;
  }
  const runsDir = byId<HTMLInputElement>('runs_dir').value.trim();
  const runName = byId<HTMLInputElement>('run_name').value.trim();
  const yaml = yamlArea.value;
  startBtn.disabled = true;
  say(runStatus, 'Starting…');
  try {
    const r = await api.startPipeline({ pipeline: 'tiled', input_dir: input, ...(runsDir ? { runs_dir: runsDir } : {}), ...(runName ? { run_name: runName } : {}), ...(yaml.trim() ? { config_yaml: yaml } : {}) });
    jobId = r.job_id;
    cancelBtn.disabled = false;
    say(runStatus, `Started job ${r.job_id}.`, 'ok');
    follow(r.job_id);
  } catch (e) {
    startBtn.disabled = false;
    if (e instanceof ApiError && e.code === 'VALIDATION_ERROR') showRefusal(e);
    if (e instanceof ApiError && e.issues.length > 0) say(runStatus, `Not started: ${e.issues.map((i) => `${i.path || '(root)'}: ${i.message}`).join('; ')}`, 'error');
    else say(runStatus, `Not started: ${errText(e)}`, 'error');
  }
}

async function pick(id: string, title: string, frames?: (name: string) => boolean): Promise<void> {
  const input = byId<HTMLInputElement>(id);
  const chosen = await browse({ start: input.value.trim(), mode: 'dir', title, ...(frames ? { frames } : {}) });
  if (chosen !== null) input.value = chosen;
}

/** Findings of a refused request (VALIDATION_ERROR with line and column per issue). */
function showRefusal(e: ApiError): void {
  const raw = (e.details as { issues?: unknown[] } | null)?.issues ?? [];
  const findings = raw.map((i) => {
    const f = (i ?? {}) as Partial<YamlFinding>;
    return { path: typeof f.path === 'string' ? f.path : '', message: typeof f.message === 'string' ? f.message : String(i), line: typeof f.line === 'number' ? f.line : null, column: typeof f.column === 'number' ? f.column : null };
  });
  showFindings(findings, []);
}

// Suggestions: what the server suggests for the tiled YAML (kind tiled: tiled key paths), each applied on its own.
interface TiledSuggestion {
  path: string;
  value: unknown;
  current?: unknown;
  reason: string;
}
/** A key path with a break opportunity after each dot (<wbr>, not copied with the text): long keys wrap at their segments. */
const keyParts = (path: string): (string | HTMLElement)[] => path.split('.').flatMap((seg, i) => (i === 0 ? [seg] : [h('wbr'), `.${seg}`]));
let suggestions: TiledSuggestion[] = [];
async function suggest(): Promise<void> {
  const box = byId('suggest-box');
  const status = byId('suggest-status');
  const input = byId<HTMLInputElement>('input_dir').value.trim();
  say(status, input ? `Measuring ${input}…` : 'Suggesting from this machine (choose an input folder to include the data)…');
  try {
    const r = await api.suggest({ kind: 'tiled', ...(input ? { input_dir: input } : {}) });
    suggestions = r.suggestions;
  } catch (e) {
    say(status, `No suggestions: ${errText(e)}`, 'error');
    return;
  }
  const body = byId('suggest-body');
  clear(body);
  suggestions.forEach((sg, i) => {
    const apply = h('button', { type: 'button', class: 'small', 'data-apply': i, title: `set ${sg.path} in the editor` }, 'Apply');
    apply.addEventListener('click', () => applySuggestion(i));
    const same = sg.current !== undefined && JSON.stringify(sg.current) === JSON.stringify(sg.value);
    body.append(h('tr', { 'data-path': sg.path }, h('td', {}, h('code', {}, ...keyParts(sg.path))), h('td', {}, h('code', {}, yamlScalar(sg.value)), same ? h('span', { class: 'muted' }, ' (as now)') : ''), h('td', {}, sg.reason), h('td', {}, apply)));
  });
  box.hidden = false;
  say(status, `${suggestions.length} suggestion${suggestions.length === 1 ? '' : 's'} for tiled keys.`, 'ok');
}

function applySuggestion(i: number): void {
  const sg = suggestions[i];
  if (!sg) return;
  yamlArea.value = yamlSetPath(yamlArea.value, sg.path.split('.'), sg.value);
  renderGutter();
  say(byId('suggest-status'), `Set ${sg.path} to ${yamlScalar(sg.value)} in the editor.`, 'ok');
  void validateYaml();
}

new YamlCompleter(yamlArea, () => api.schema('tiled'), () => renderGutter());
new TemplateBar({
  getYaml: () => yamlArea.value,
  setYaml: (yaml) => {
    yamlArea.value = yaml;
    renderGutter();
    void validateYaml();
  },
  showRefusal: (e) => {
    showRefusal(e);
    say(yamlStatus, `${e.message}: see the marked lines.`, 'error');
  },
});
byId('btn-suggest').addEventListener('click', () => void suggest());
yamlArea.addEventListener('input', () => renderGutter());
yamlArea.addEventListener('scroll', () => {
  gutter.scrollTop = yamlArea.scrollTop;
});
byId('btn-validate-yaml').addEventListener('click', () => void validateYaml());
byId('browse-input').addEventListener('click', () => void pick('input_dir', 'Input folder (lights)', isFitsPath));
byId('browse-runs').addEventListener('click', () => void pick('runs_dir', 'Output folder (runs dir)'));
byId('tiled-form').addEventListener('submit', (e) => {
  e.preventDefault();
  void start();
});
cancelBtn.addEventListener('click', () => {
  void askCancel().then((go) => {
    if (!go || !jobId) return;
    cancelBtn.disabled = true;
    say(runStatus, 'Cancelling…');
    api.cancel(jobId).catch((e: unknown) => {
      say(runStatus, `Cancel failed: ${errText(e)}`, 'error');
      cancelBtn.disabled = false;
    });
  });
});
renderGutter();
void showServerLine(byId('server-info'));
