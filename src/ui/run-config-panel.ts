// The run monitor's configuration and resume panel. For every run: the configuration it used
// (GET /api/runs/:id/config). For tiled runs: the revision list (GET …/config/revisions, a click
// shows one), and Resume from phase — a phase picker, the configuration to use (the current one,
// a revision, or YAML edited here), Check (POST /api/jobs/resume with dry_run: feasible or why
// not, and the phases it would re-run) and Start resume, enabled only by a feasible check of
// exactly the choices on screen. For Raw Stack runs the revision and resume controls stay
// disabled with a tooltip: Raw Stack runs are not resumable (seed). A server that does not resume
// tiled runs (409 RESUME_NOT_SUPPORTED) is said so plainly, as is every other refusal.

import { api, ApiError, errText, type ResumeCheck, type ResumeRequest, type RevisionRecord, type StartResult } from './api.js';
import { byId, clear, h, say } from './dom.js';

export const RAWSTACK_WHY = 'Not available for Raw Stack runs: they are not resumable (no resume, revision or template).';

const REASONS: Record<string, string> = {
  unsupported_resume_phase: 'this phase cannot be resumed from',
  config_missing: 'the run has no recorded configuration',
  input_missing: 'input files of the run are missing',
  artifacts_missing: 'artifacts of earlier phases are missing or changed',
  config_changed_upstream: 'the configuration changes keys an earlier phase read',
};

export interface PanelHooks {
  /** A resume job started (202). */
  onResumeStarted(job: StartResult): void;
}

export class RunConfigPanel {
  private runId: string | null = null;
  private kind: string | null = null;
  private currentText = '';
  /** The choices the last feasible check was for (Start resume needs the same on screen). */
  private checked: string | null = null;
  private readonly phase = byId<HTMLSelectElement>('resume-phase');
  private readonly revSelect = byId<HTMLSelectElement>('resume-revision');
  private readonly yaml = byId<HTMLTextAreaElement>('resume-yaml');
  private readonly result = byId('resume-result');
  private readonly status = byId('resume-status');
  private readonly startBtn = byId<HTMLButtonElement>('btn-resume-start');

  constructor(private readonly hooks: PanelHooks) {
    for (const el of [this.phase, this.revSelect, this.yaml, ...this.sources()]) {
      el.addEventListener('change', () => this.choicesChanged());
      el.addEventListener('input', () => this.choicesChanged());
    }
    byId('btn-resume-check').addEventListener('click', () => void this.check());
    this.startBtn.addEventListener('click', () => void this.start());
    this.disable('Waiting for the run to start (its kind decides what can be done).');
  }

  private sources(): HTMLInputElement[] {
    return [...document.querySelectorAll<HTMLInputElement>('input[name="resume-source"]')];
  }

  private source(): 'current' | 'revision' | 'edited' {
    return (this.sources().find((r) => r.checked)?.value ?? 'current') as 'current' | 'revision' | 'edited';
  }

  /** The panel's controls off, each saying why. */
  private disable(why: string): void {
    const box = byId<HTMLFieldSetElement>('resume-controls');
    box.disabled = true;
    box.title = why;
    for (const el of box.querySelectorAll<HTMLElement>('select, textarea, input, button')) el.title = why;
    byId('resume-note').textContent = why;
    this.startBtn.disabled = true;
  }

  /** The run is known: load its configuration, and for a tiled run its revisions. */
  async setRun(runId: string, kind: string | null): Promise<void> {
    const again = this.runId === runId && this.kind === kind;
    this.runId = runId;
    this.kind = kind;
    if (again) return;
    await this.loadConfig();
    if (kind !== 'tiled') {
      this.disable(RAWSTACK_WHY);
      const list = byId('revision-list');
      clear(list);
      list.append(h('li', { class: 'muted', title: RAWSTACK_WHY }, 'Raw Stack runs keep no configuration revisions.'));
      return;
    }
    const box = byId<HTMLFieldSetElement>('resume-controls');
    box.disabled = false;
    box.removeAttribute('title');
    for (const el of box.querySelectorAll<HTMLElement>('select, textarea, input, button')) el.removeAttribute('title');
    byId('resume-note').textContent = 'Re-runs the chosen phase and every later one; earlier phases keep their outputs. Check first: it says whether the run can resume there with this configuration.';
    this.startBtn.disabled = true;
    await this.loadRevisions();
  }

  /** The phases of the run's plan (for the picker), keeping the choice; STACKING first chosen. */
  setPhases(names: readonly string[]): void {
    const keep = this.phase.value;
    if ([...this.phase.options].map((o) => o.value).join() === names.join()) return;
    clear(this.phase);
    for (const n of names) this.phase.append(h('option', { value: n }, n));
    this.phase.value = names.includes(keep) ? keep : names.includes('STACKING') ? 'STACKING' : (names[0] ?? '');
  }

  async loadConfig(): Promise<void> {
    if (!this.runId) return;
    const pre = byId('config-text');
    try {
      const c = await api.runConfig(this.runId);
      this.currentText = c.text;
      pre.textContent = c.text || '(empty: the defaults)';
      byId('config-note').textContent = `${c.path}${c.revision_id ? ` · latest revision ${c.revision_id}` : ''}`;
      if (this.yaml.value === '') this.yaml.value = c.format === 'yaml' ? c.text : '';
    } catch (e) {
      pre.textContent = '';
      byId('config-note').textContent = e instanceof ApiError && e.status === 404 ? 'No configuration recorded yet.' : `Configuration: ${errText(e)}`;
    }
  }

  async loadRevisions(): Promise<void> {
    if (!this.runId || this.kind !== 'tiled') return;
    const list = byId('revision-list');
    let items: RevisionRecord[];
    try {
      items = await api.revisions(this.runId);
    } catch (e) {
      clear(list);
      list.append(h('li', { class: 'error' }, `Revisions: ${errText(e)}`));
      return;
    }
    clear(list);
    const keep = this.revSelect.value;
    clear(this.revSelect);
    for (const r of items) {
      const btn = h('button', { type: 'button', class: 'linklike', 'data-rev': r.revision_id }, r.revision_id);
      btn.addEventListener('click', () => void this.showRevision(r.revision_id));
      list.append(h('li', { 'data-rev': r.revision_id }, btn, h('span', { class: 'muted' }, ` ${r.source} · ${new Date(r.created_at).toLocaleString()}`)));
      this.revSelect.append(h('option', { value: r.revision_id }, `${r.revision_id} (${r.source})`));
    }
    if (items.length === 0) list.append(h('li', { class: 'muted' }, 'no revisions yet'));
    if (items.some((r) => r.revision_id === keep)) this.revSelect.value = keep;
    else if (items.length) this.revSelect.value = items[items.length - 1]!.revision_id;
  }

  private async showRevision(rev: string): Promise<void> {
    if (!this.runId) return;
    const view = byId('revision-view');
    try {
      const r = await api.revision(this.runId, rev);
      view.textContent = r.yaml || '(empty: the defaults)';
      view.dataset.rev = rev;
      byId('revision-view-title').textContent = `${rev} · ${r.source} · ${new Date(r.created_at).toLocaleString()}`;
      byId('revision-view-box').hidden = false;
      for (const li of byId('revision-list').children) (li as HTMLElement).classList.toggle('current', (li as HTMLElement).dataset.rev === rev);
    } catch (e) {
      view.textContent = `Revision ${rev}: ${errText(e)}`;
      byId('revision-view-box').hidden = false;
    }
  }

  private request(dryRun: boolean): ResumeRequest | null {
    if (!this.runId || !this.phase.value) return null;
    const body: ResumeRequest = { run_id: this.runId, from_phase: this.phase.value, ...(dryRun ? { dry_run: true } : {}) };
    const src = this.source();
    if (src === 'revision') {
      if (!this.revSelect.value) return null;
      body.config_revision_id = this.revSelect.value;
    } else if (src === 'edited') body.config_yaml = this.yaml.value;
    return body;
  }

  private choiceKey(): string {
    const r = this.request(false);
    return r ? JSON.stringify(r) : '';
  }

  private choicesChanged(): void {
    byId('resume-yaml-box').hidden = this.source() !== 'edited';
    this.revSelect.disabled = this.source() !== 'revision';
    if (this.checked !== null && this.checked !== this.choiceKey()) {
      this.checked = null;
      this.startBtn.disabled = true;
      clear(this.result);
      say(this.status, 'The choices changed: Check again before starting.');
    }
  }

  async check(): Promise<void> {
    const body = this.request(true);
    this.checked = null;
    this.startBtn.disabled = true;
    clear(this.result);
    // A verdict is the last check's only: nothing of an earlier one may stand while this one runs.
    delete this.result.dataset.feasible;
    delete this.result.dataset.reason;
    delete this.result.dataset.code;
    if (!body) {
      say(this.status, this.source() === 'revision' ? 'Choose a revision.' : 'Choose a phase.', 'error');
      return;
    }
    say(this.status, `Checking a resume from ${body.from_phase}…`);
    try {
      const r = (await api.resume(body)) as ResumeCheck;
      const rerun = Array.isArray(r.would_rerun) ? r.would_rerun : [];
      this.result.dataset.feasible = String(r.feasible);
      if (r.feasible) {
        this.result.append(h('p', { 'data-feasible': 'true' }, `Feasible from ${r.from_phase}.`));
        if (rerun.length) this.result.append(h('p', { id: 'resume-rerun' }, 'Would re-run: ', ...rerun.map((p) => h('code', { class: 'phase-name' }, `${p} `))));
        this.checked = this.choiceKey();
        this.startBtn.disabled = false;
        say(this.status, 'Check passed: Start resume is enabled.', 'ok');
      } else this.showVerdict(r, `Not feasible from ${r.from_phase}`);
    } catch (e) {
      this.result.dataset.feasible = 'false';
      this.showRefusal(e);
    }
  }

  /** Why a resume is not feasible: the dry run's verdict (200) and the refusal's details (409) say the same. */
  private showVerdict(d: { reason?: string; missing_files?: string[]; changed_keys?: string[]; earliest_feasible_phase?: string | null }, lead: string, message?: string): void {
    if (d.reason) this.result.dataset.reason = d.reason;
    this.result.append(h('p', { 'data-feasible': 'false' }, `${lead}${d.reason ? `: ${REASONS[d.reason] ?? d.reason}` : ''}.`, ...(message ? [h('span', { class: 'muted' }, ` (${message})`)] : [])));
    if (d.changed_keys?.length) this.result.append(h('p', {}, 'Changed keys read earlier: ', ...d.changed_keys.map((k) => h('code', {}, `${k} `))));
    if (d.missing_files?.length) this.result.append(h('p', {}, 'Missing: ', ...d.missing_files.slice(0, 20).map((k) => h('code', {}, `${k} `))));
    const earliest = d.earliest_feasible_phase;
    if (earliest) {
      const pick = h('button', { type: 'button', class: 'small', id: 'btn-resume-earliest' }, `Pick ${earliest}`);
      pick.addEventListener('click', () => {
        this.phase.value = earliest;
        this.choicesChanged();
        void this.check();
      });
      this.result.append(h('p', {}, `Earliest phase it can resume from: ${earliest} `, pick));
    }
    say(this.status, 'Not feasible: see why.', 'error');
  }

  private showRefusal(e: unknown): void {
    if (!(e instanceof ApiError)) {
      say(this.status, String(e), 'error');
      return;
    }
    const d = (e.details ?? {}) as { reason?: string; missing_files?: string[]; changed_keys?: string[]; earliest_feasible_phase?: string | null };
    this.result.dataset.code = e.code;
    if (e.code === 'RESUME_PHASE_NOT_FEASIBLE') this.showVerdict(d, 'Not feasible', e.message);
    else if (e.code === 'RESUME_NOT_SUPPORTED') {
      this.result.append(h('p', {}, `This server does not resume this run: ${e.message}`));
      say(this.status, `Resume not supported (${e.code}).`, 'error');
    } else if (e.code === 'VALIDATION_ERROR') {
      const issues = e.issues;
      this.result.append(h('p', {}, e.message), h('ul', { class: 'issues' }, ...issues.map((i) => h('li', { class: 'issue', 'data-key': i.path }, h('code', {}, i.path || '(root)'), `: ${i.message}`))));
      say(this.status, 'The request was refused: see the issues.', 'error');
    } else {
      this.result.append(h('p', {}, `${e.message}`));
      say(this.status, `Refused: ${e.code}.`, 'error');
    }
  }

  private async start(): Promise<void> {
    const body = this.request(false);
    if (!body || this.checked !== this.choiceKey()) {
      this.startBtn.disabled = true;
      say(this.status, 'Check first.', 'error');
      return;
    }
    this.startBtn.disabled = true;
    say(this.status, `Starting a resume from ${body.from_phase}…`);
    try {
      const r = (await api.resume(body)) as StartResult;
      this.checked = null;
      say(this.status, `Resume started: job ${r.job_id}.`, 'ok');
      this.hooks.onResumeStarted(r);
    } catch (e) {
      clear(this.result);
      this.showRefusal(e);
    }
  }

  /**
   * New revision: the YAML edited here saved as a user revision of the run. Without an edit in
   * progress it opens the editor (prefilled with the current configuration) and says so, rather
   * than storing a copy of the current configuration.
   */
  async saveRevision(): Promise<void> {
    if (!this.runId || this.kind !== 'tiled') return;
    if (this.source() !== 'edited') {
      const edited = this.sources().find((r) => r.value === 'edited');
      if (edited) edited.checked = true;
      if (this.yaml.value === '') this.yaml.value = this.currentText;
      this.choicesChanged();
      this.yaml.focus();
      say(this.status, 'Edit the configuration here, then press New revision again to save it as a revision.');
      return;
    }
    try {
      const r = await api.saveRevision(this.runId, this.yaml.value);
      say(this.status, `Saved ${r.revision_id}.`, 'ok');
      await this.loadRevisions();
    } catch (e) {
      clear(this.result);
      this.showRefusal(e);
    }
  }
}

