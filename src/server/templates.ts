// Configuration templates: named tiled-workflow YAML configurations a user saves in the run studio
// and loads into a later run. One JSON file per template under <state_dir>/templates
// ({name, yaml, updated_at}), written to a temp name and renamed, so a crash leaves the old
// version or the new one, never half a file. Names are a closed alphabet (letters, digits, ".",
// "_", "-", not starting with "."), which keeps every name a plain file name in that folder.

import { mkdir, readdir, readFile, rm } from 'node:fs/promises';
import { join } from 'node:path';
import { writeJsonAtomic } from '../pipeline/atomic.js';

export const TEMPLATE_NAME_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;
/** How many templates one server keeps (a list the UI shows whole). */
export const TEMPLATE_LIMIT = 500;

export interface Template {
  name: string;
  yaml: string;
  updated_at: string;
}

export type TemplateSummary = Omit<Template, 'yaml'> & { bytes: number };

export class TemplateStore {
  constructor(private readonly dir: string) {}

  private file(name: string): string {
    if (!TEMPLATE_NAME_RE.test(name)) throw new Error(`not a template name: ${name.slice(0, 80)}`);
    return join(this.dir, `${name}.json`);
  }

  /** The template, or null when there is none of that name (or its file is not a template). */
  async get(name: string): Promise<Template | null> {
    let text: string;
    try {
      text = await readFile(this.file(name), 'utf8');
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return null;
      throw e;
    }
    try {
      const v = JSON.parse(text) as Partial<Template>;
      if (typeof v.yaml !== 'string') return null;
      return { name, yaml: v.yaml, updated_at: typeof v.updated_at === 'string' ? v.updated_at : new Date(0).toISOString() };
    } catch {
      return null;
    }
  }

  /** Every template, by name. */
  async list(): Promise<TemplateSummary[]> {
    let names: string[];
    try {
      names = await readdir(this.dir);
    } catch (e) {
      if ((e as NodeJS.ErrnoException).code === 'ENOENT') return [];
      throw e;
    }
    const out: TemplateSummary[] = [];
    for (const f of names.sort()) {
      const name = f.replace(/\.json$/, '');
      if (!f.endsWith('.json') || !TEMPLATE_NAME_RE.test(name)) continue; // temp files of a write in progress
      const t = await this.get(name);
      if (t) out.push({ name, updated_at: t.updated_at, bytes: Buffer.byteLength(t.yaml) });
    }
    return out;
  }

  /** Creates or replaces `name`; null when the store is full and `name` is new. */
  async put(name: string, yaml: string, now = new Date()): Promise<Template | null> {
    const file = this.file(name);
    await mkdir(this.dir, { recursive: true });
    if ((await this.get(name)) === null && (await this.list()).length >= TEMPLATE_LIMIT) return null;
    const t: Template = { name, yaml, updated_at: now.toISOString() };
    await writeJsonAtomic(file, t);
    return t;
  }

  /** Removes `name`; false when there was none. */
  async delete(name: string): Promise<boolean> {
    const file = this.file(name);
    if ((await this.get(name)) === null) return false;
    await rm(file, { force: true });
    return true;
  }
}
