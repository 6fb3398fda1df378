// Job records on disk: `<state_dir>/jobs/<job_id>.json`, one file per job, written atomically
// so a crash leaves the previous complete version. Specs live beside them as `.spec.json`
// and child logs as `.log`.

import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { writeJsonAtomic } from '../../pipeline/atomic.js';
import type { JobRecord, JobSpec } from './types.js';

export const JOB_ID_RE = /^job_[0-9a-z]{8,40}$/;

export class JobStore {
  constructor(readonly dir: string) {}

  recordFile(id: string): string {
    return join(this.dir, `${id}.json`);
  }
  specFile(id: string): string {
    return join(this.dir, `${id}.spec.json`);
  }
  logFile(id: string): string {
    return join(this.dir, `${id}.log`);
  }

  save(record: JobRecord): Promise<void> {
    return writeJsonAtomic(this.recordFile(record.job_id), record);
  }

  saveSpec(id: string, spec: JobSpec): Promise<void> {
    return writeJsonAtomic(this.specFile(id), spec);
  }

  async loadAll(): Promise<JobRecord[]> {
    const names = await readdir(this.dir).catch(() => [] as string[]);
    const out: JobRecord[] = [];
    for (const name of names) {
      const m = /^(job_[0-9a-z]+)\.json$/.exec(name);
      if (!m) continue;
      try {
        const rec = JSON.parse(await readFile(join(this.dir, name), 'utf8')) as JobRecord;
        if (rec && rec.job_id === m[1]) out.push(rec);
      } catch {
        // A record that does not parse cannot be shown; atomic writes make this a foreign file.
      }
    }
    return out.sort((a, b) => a.created_at.localeCompare(b.created_at) || a.job_id.localeCompare(b.job_id));
  }
}
