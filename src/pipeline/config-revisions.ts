// Configuration revisions of a run (tiled runs; Raw Stack runs have none): every configuration a
// run was started or resumed with, or that a user saved for it, as
// `<config_revisions>/<revision_id>.yaml` plus `index.json` listing
// `{revision_id, file_name, source, created_at, run_id}` oldest first. A revision is never
// rewritten: ids are sequential (`rev_0001`, …), each file is created exclusively (a second
// writer takes the next id), and the index is rewritten atomically after the file exists, so a
// reader sees a complete index of complete files. An index that lost entries (a crash between the
// two writes) is completed from the files on the next write. Writes stay inside the run folder.

import { mkdir, open, readdir, readFile, realpath } from 'node:fs/promises';
import { join, sep } from 'node:path';
import { z } from 'zod';
import { configRevisionsPath, RUN_LAYOUTS, type RunLayout } from '../shared/run-layout.js';
import { writeJsonAtomic } from './atomic.js';

export const REVISION_SOURCES = ['run_start', 'resume_previous', 'resume_selected', 'user'] as const;
export type RevisionSource = (typeof REVISION_SOURCES)[number];

export const RevisionEntrySchema = z.object({
  revision_id: z.string().regex(/^rev_\d{4,}$/),
  file_name: z.string().regex(/^rev_\d{4,}\.yaml$/),
  source: z.enum(REVISION_SOURCES),
  created_at: z.string(),
  run_id: z.string(),
});
export type RevisionEntry = z.infer<typeof RevisionEntrySchema>;

export const REVISION_ID_RE = /^rev_\d{4,}$/;
const INDEX = 'index.json';
const MAX_TRIES = 1000;

/** The revisions folder of a run of `layout`'s kind (relative to the run folder). */
export function revisionsDir(layout: RunLayout = RUN_LAYOUTS.tiled): string {
  const dir = configRevisionsPath(layout);
  if (dir === null) throw new Error(`${layout.kind} runs keep no configuration revisions`);
  return dir;
}

/** The entries of an index.json text (entries that do not parse are left out). */
export function parseRevisionIndex(text: string | null): RevisionEntry[] {
  if (!text) return [];
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch {
    return [];
  }
  const list = Array.isArray(raw) ? raw : [];
  return list.flatMap((e) => {
    const r = RevisionEntrySchema.safeParse(e);
    return r.success ? [r.data] : [];
  });
}

const idOf = (n: number): string => `rev_${String(n).padStart(4, '0')}`;
const numberOf = (id: string): number => Number(id.slice(4));

/** The run's revisions, oldest first. */
export async function listRevisions(runDir: string, layout: RunLayout = RUN_LAYOUTS.tiled): Promise<RevisionEntry[]> {
  const dir = join(runDir, revisionsDir(layout));
  return parseRevisionIndex(await readFile(join(dir, INDEX), 'utf8').catch(() => null));
}

/** Stores `yaml` as the run's next revision and lists it in the index. */
export async function recordRevision(
  runDir: string,
  rev: { yaml: string; source: RevisionSource; runId: string; now?: Date },
  layout: RunLayout = RUN_LAYOUTS.tiled,
): Promise<RevisionEntry> {
  const dir = join(runDir, revisionsDir(layout));
  await mkdir(dir, { recursive: true });
  // The folder must really lie inside the run folder (a planted link must not carry writes out);
  // the files are created exclusively (no link followed) and the index is renamed into place.
  const [base, real] = await Promise.all([realpath(runDir), realpath(dir)]);
  if (!real.startsWith(base + sep)) throw new Error(`${revisionsDir(layout)} of ${runDir} leads outside the run folder`);
  const files = (await readdir(dir)).filter((f) => /^rev_\d{4,}\.yaml$/.test(f));
  let n = files.reduce((m, f) => Math.max(m, numberOf(f.slice(0, -5))), 0) + 1;
  let id = '';
  for (let tries = 0; ; tries++, n++) {
    if (tries >= MAX_TRIES) throw new Error(`no free revision id in ${dir}`);
    id = idOf(n);
    const fh = await open(join(dir, `${id}.yaml`), 'wx').catch((e: NodeJS.ErrnoException) => {
      if (e.code === 'EEXIST') return null;
      throw e;
    });
    if (!fh) continue;
    try {
      await fh.writeFile(rev.yaml.endsWith('\n') ? rev.yaml : `${rev.yaml}\n`);
      await fh.sync();
    } finally {
      await fh.close();
    }
    break;
  }
  const entry: RevisionEntry = { revision_id: id, file_name: `${id}.yaml`, source: rev.source, created_at: (rev.now ?? new Date()).toISOString(), run_id: rev.runId };
  const listed = await listRevisions(runDir, layout);
  const known = new Set(listed.map((e) => e.revision_id));
  // Files an earlier writer created but did not list (it stopped between the two writes).
  const orphans: RevisionEntry[] = files
    .map((f) => f.slice(0, -5))
    .filter((fid) => !known.has(fid) && fid !== id)
    .map((fid) => ({ revision_id: fid, file_name: `${fid}.yaml`, source: 'user', created_at: entry.created_at, run_id: rev.runId }));
  const index = [...listed, ...orphans, entry].sort((a, b) => numberOf(a.revision_id) - numberOf(b.revision_id));
  await writeJsonAtomic(join(dir, INDEX), index);
  return entry;
}
