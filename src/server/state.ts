// Server state that survives restarts: the stored Raw Stack parameters and the
// path grants, each one JSON file under state_dir written atomically. Reads at start-up
// tolerate a missing file (nothing stored yet) but not a corrupt one silently: a corrupt
// parameters file is set aside (renamed *.corrupt) and reported, never overwritten blind.

import { mkdir, readFile, rename } from 'node:fs/promises';
import { join } from 'node:path';
import { parseRawStackConfig, type RawStackConfig } from '../config/rawstack.js';
import { writeJsonAtomic } from '../pipeline/atomic.js';

async function readJson(file: string): Promise<unknown | undefined> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
  try {
    return JSON.parse(text);
  } catch {
    await rename(file, `${file}.corrupt`).catch(() => undefined);
    return undefined;
  }
}

export interface StoredParameters {
  config: RawStackConfig;
  updated_at: string;
}

export class ParameterStore {
  private current: StoredParameters | null = null;
  constructor(private readonly file: string) {}

  async load(): Promise<string[]> {
    const warnings: string[] = [];
    const raw = (await readJson(this.file)) as { config?: unknown; updated_at?: string } | undefined;
    if (raw && typeof raw === 'object') {
      const parsed = parseRawStackConfig(raw.config);
      if (parsed.ok) this.current = { config: parsed.config, updated_at: raw.updated_at ?? new Date(0).toISOString() };
      else warnings.push(`stored parameters no longer validate (${parsed.issues.map((i) => i.path).join(', ')}); using defaults`);
    }
    return warnings;
  }

  get(): StoredParameters | null {
    return this.current;
  }

  /** Applies `fix` to the loaded parameters in memory (the file is rewritten by the next set). */
  async sanitize(fix: (config: RawStackConfig) => Promise<string[]>): Promise<string[]> {
    return this.current ? fix(this.current.config) : [];
  }

  async set(config: RawStackConfig): Promise<StoredParameters> {
    const next = { config, updated_at: new Date().toISOString() };
    await writeJsonAtomic(this.file, next);
    this.current = next;
    return next;
  }
}

export interface Grant {
  path: string;
  granted_at: string;
  granted_by: string;
}

export class GrantStore {
  private grants: Grant[] = [];
  constructor(private readonly file: string) {}

  async load(): Promise<Grant[]> {
    const raw = await readJson(this.file);
    this.grants = Array.isArray(raw) ? raw.filter((g): g is Grant => typeof g?.path === 'string') : [];
    return this.list();
  }

  list(): Grant[] {
    return this.grants.map((g) => ({ ...g }));
  }

  async add(grant: Grant): Promise<void> {
    if (this.grants.some((g) => g.path === grant.path)) return;
    this.grants.push(grant);
    await writeJsonAtomic(this.file, this.grants);
  }
}

export async function ensureStateDir(stateDir: string): Promise<{ parameters: string; grants: string; jobs: string }> {
  const jobs = join(stateDir, 'jobs');
  await mkdir(jobs, { recursive: true });
  return { parameters: join(stateDir, 'parameters.json'), grants: join(stateDir, 'grants.json'), jobs };
}
