// The studio's templates: named saved configurations (GET/PUT/DELETE /api/config/templates).
// A list to pick from, a name field (prefilled with the picked name), Load (into the editor),
// Save (the editor's YAML under the name; the server validates it and answers with the issues'
// lines) and Delete (after a confirmation). Names follow the server's alphabet, checked here first
// so a typo is explained before any request.

import { api, ApiError, type TemplateSummary } from './api.js';
import { byId, clear, h, say } from './dom.js';

const NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

export interface TemplateBarHooks {
  getYaml(): string;
  setYaml(yaml: string): void;
  /** The server refused the YAML (VALIDATION_ERROR): show its issues at their lines. */
  showRefusal(e: ApiError): void;
}

export class TemplateBar {
  private readonly select = byId<HTMLSelectElement>('template-list');
  private readonly name = byId<HTMLInputElement>('template-name');
  private readonly status = byId('template-status');
  private templates: TemplateSummary[] = [];

  constructor(private readonly hooks: TemplateBarHooks) {
    this.select.addEventListener('change', () => {
      if (this.select.value) this.name.value = this.select.value;
      this.buttons();
    });
    this.name.addEventListener('input', () => this.buttons());
    byId('btn-template-load').addEventListener('click', () => void this.load());
    byId('btn-template-save').addEventListener('click', () => void this.save());
    byId('btn-template-delete').addEventListener('click', () => void this.remove());
    void this.refresh();
  }

  private buttons(): void {
    byId<HTMLButtonElement>('btn-template-load').disabled = !this.select.value;
    byId<HTMLButtonElement>('btn-template-delete').disabled = !this.select.value;
  }

  async refresh(selected = this.select.value): Promise<void> {
    try {
      this.templates = await api.templates();
    } catch (e) {
      say(this.status, `Templates: ${e instanceof ApiError ? `${e.message} (${e.code})` : String(e)}`, 'error');
      return;
    }
    clear(this.select);
    this.select.append(h('option', { value: '' }, this.templates.length ? '— choose a template —' : '— no templates saved —'));
    for (const t of this.templates) this.select.append(h('option', { value: t.name, selected: t.name === selected }, `${t.name} (${new Date(t.updated_at).toLocaleString()})`));
    this.buttons();
  }

  private async load(): Promise<void> {
    const name = this.select.value;
    if (!name) return;
    try {
      const t = await api.template(name);
      this.hooks.setYaml(t.yaml);
      this.name.value = name;
      say(this.status, `Loaded template ${name} (saved ${new Date(t.updated_at).toLocaleString()}).`, 'ok');
    } catch (e) {
      say(this.status, `Not loaded: ${e instanceof ApiError ? `${e.message} (${e.code})` : String(e)}`, 'error');
    }
  }

  private async save(): Promise<void> {
    const name = this.name.value.trim();
    if (!NAME_RE.test(name)) {
      say(this.status, 'A template name is 1–64 letters, digits, ".", "_" or "-", not starting with ".".', 'error');
      this.name.focus();
      return;
    }
    const replacing = this.templates.some((t) => t.name === name);
    if (replacing && !confirm(`Replace the template "${name}"?`)) return;
    try {
      await api.saveTemplate(name, this.hooks.getYaml());
      await this.refresh(name);
      say(this.status, `${replacing ? 'Replaced' : 'Saved'} template ${name}.`, 'ok');
    } catch (e) {
      if (e instanceof ApiError && e.code === 'VALIDATION_ERROR') this.hooks.showRefusal(e);
      say(this.status, `Not saved: ${e instanceof ApiError ? `${e.message} (${e.code})` : String(e)}`, 'error');
    }
  }

  private async remove(): Promise<void> {
    const name = this.select.value;
    if (!name || !confirm(`Delete the template "${name}"?`)) return;
    try {
      await api.deleteTemplate(name);
      await this.refresh('');
      say(this.status, `Deleted template ${name}.`, 'ok');
    } catch (e) {
      say(this.status, `Not deleted: ${e instanceof ApiError ? `${e.message} (${e.code})` : String(e)}`, 'error');
    }
  }
}
