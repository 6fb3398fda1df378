// `node dist/bench/compare-runs.js RUN_A RUN_B [--quiet] [--ignore-keys K1,K2]`: are two Raw Stack run folders the
// same run? Used to show that a refactor changed no output (bench/same-outputs.sh runs a fixed
// set of sessions on two commits and calls this on each pair). Exit 0 when they match, 1 when
// they differ, 2 on a usage error.
// What "the same" means, file by file (both folders must hold the same relative paths; the
// scratch folder is ignored):
// - FITS (.fits, .fit, .fts): every HDU's data bytes identical; header cards identical except
//   DATE and cards that carry the run's id or folder (replaced by a placeholder, then compared).
//   The HDUs are split by this file's own reader (80-byte cards, 2880-byte blocks), not by the
//   code under test.
// - JSON and JSON lines: equal after dropping the keys that record when or how fast something ran
//   (VOLATILE_KEYS) and replacing the run id and folder by placeholders.
// - PNG and other binary files: identical bytes.
// - Reports (.md, .html) and other text: equal after the same replacements and after masking
//   timestamps, durations and shares of the run time (the report prints phase times).
// Differences are listed per file; a FITS data difference gives the first differing byte and
// the largest difference as float32 when the HDU is BITPIX -32. `--ignore-keys` drops more JSON
// keys (a field a change adds on purpose, e.g. a new event field), so the rest still compares.

import { readdir, readFile } from 'node:fs/promises';
import { join, relative } from 'node:path';

/** Keys whose values depend on the clock, the machine's load or the process, not on the data (and every `*_ms`). */
const VOLATILE_KEYS = new Set([
  'ts',
  'seq', // event numbering shifts when a run emits a different number of (timing) events
  'created_at',
  'generated_at',
  'peak_rss_mib',
  'timings_ms',
  'timing_ms',
  'timing',
  'timings',
  'device_pool_peak_bytes',
]);

const SKIP_DIRS = new Set(['.scratch']);

export interface Difference {
  file: string;
  what: string;
}

async function listFiles(root: string, dir = root): Promise<string[]> {
  const out: string[] = [];
  for (const e of await readdir(dir, { withFileTypes: true })) {
    if (e.isDirectory()) {
      if (!SKIP_DIRS.has(e.name)) out.push(...(await listFiles(root, join(dir, e.name))));
    } else if (e.isFile()) out.push(relative(root, join(dir, e.name)));
  }
  return out.sort();
}

interface Hdu {
  cards: string[];
  data: Buffer;
  bitpix: number;
}

/** Splits a FITS file into HDUs: header cards (80 bytes each) and the data bytes (padding excluded). */
export function splitFits(buf: Buffer): Hdu[] {
  const hdus: Hdu[] = [];
  let at = 0;
  while (at + 2880 <= buf.length) {
    const cards: string[] = [];
    let end = false;
    while (!end) {
      if (at + 2880 > buf.length) throw new Error('header runs past the end of the file');
      for (let i = 0; i < 36; i++) {
        const card = buf.toString('latin1', at + 80 * i, at + 80 * (i + 1));
        if (card.startsWith('END') && card.slice(3).trim() === '') {
          end = true;
          break;
        }
        cards.push(card);
      }
      at += 2880;
    }
    const num = (key: string) => {
      const c = cards.find((x) => x.slice(0, 8).trim() === key);
      return c ? Number(c.slice(10, 30).trim()) : 0;
    };
    const bitpix = num('BITPIX');
    const naxis = num('NAXIS');
    let count = naxis > 0 ? 1 : 0;
    for (let k = 1; k <= naxis; k++) count *= num(`NAXIS${k}`);
    const bytes = (Math.abs(bitpix) / 8) * (num('GCOUNT') || 1) * (num('PCOUNT') + count);
    hdus.push({ cards, data: buf.subarray(at, at + bytes), bitpix });
    at += Math.ceil(bytes / 2880) * 2880;
  }
  return hdus;
}

/** Replaces the run's id and folder in text by placeholders, so two runs' texts compare. */
function anonymize(text: string, run: { id: string; dir: string }): string {
  let t = text.split(run.dir).join('<run_dir>');
  if (run.id) t = t.split(run.id).join('<run_id>');
  // The plate solver's temporary folder (mkdtemp) appears in the recorded solver arguments.
  return t.replace(/skystack-solve-[A-Za-z0-9]{6}/g, 'skystack-solve-<tmp>');
}

function compareFits(file: string, a: Buffer, b: Buffer, runA: RunNames, runB: RunNames): Difference[] {
  const out: Difference[] = [];
  const ha = splitFits(a);
  const hb = splitFits(b);
  if (ha.length !== hb.length) return [{ file, what: `${ha.length} vs ${hb.length} HDUs` }];
  ha.forEach((x, i) => {
    const y = hb[i]!;
    const keep = (cards: string[], run: RunNames) => cards.filter((c) => c.slice(0, 8).trim() !== 'DATE').map((c) => anonymize(c, run).trimEnd());
    const ca = keep(x.cards, runA);
    const cb = keep(y.cards, runB);
    const onlyA = ca.filter((c) => !cb.includes(c));
    const onlyB = cb.filter((c) => !ca.includes(c));
    if (onlyA.length || onlyB.length || ca.length !== cb.length) out.push({ file, what: `HDU ${i} header: only in A ${JSON.stringify(onlyA.slice(0, 3))}, only in B ${JSON.stringify(onlyB.slice(0, 3))}` });
    else if (ca.join('\n') !== cb.join('\n')) out.push({ file, what: `HDU ${i} header: same cards in another order` });
    if (x.data.length !== y.data.length) out.push({ file, what: `HDU ${i} data: ${x.data.length} vs ${y.data.length} bytes` });
    else if (!x.data.equals(y.data)) {
      let first = 0;
      while (x.data[first] === y.data[first]) first++;
      let detail = '';
      if (x.bitpix === -32) {
        let max = 0;
        let n = 0;
        for (let k = 0; k + 4 <= x.data.length; k += 4) {
          const u = x.data.readFloatBE(k);
          const v = y.data.readFloatBE(k);
          if (u !== v && !(Number.isNaN(u) && Number.isNaN(v))) {
            n++;
            if (Number.isFinite(u - v)) max = Math.max(max, Math.abs(u - v));
          }
        }
        detail = `, ${n} float32 values differ, largest by ${max}`;
      }
      out.push({ file, what: `HDU ${i} data differs from byte ${first}${detail}` });
    }
  });
  return out;
}

/** Extra keys to drop (--ignore-keys). */
const ignoredKeys = new Set<string>();

/** The JSON value without volatile keys; strings anonymised. */
function normalizeJson(v: unknown, run: RunNames): unknown {
  if (typeof v === 'string') return anonymize(v, run);
  if (Array.isArray(v)) return v.map((x) => normalizeJson(x, run));
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (!VOLATILE_KEYS.has(k) && !ignoredKeys.has(k) && !k.endsWith('_ms')) out[k] = normalizeJson(x, run);
    return out;
  }
  return v;
}

/** Paths (a.b[2].c) where two JSON values differ, at most `limit`. */
function jsonDiffs(a: unknown, b: unknown, path = '', out: string[] = [], limit = 5): string[] {
  if (out.length >= limit) return out;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    if (Array.isArray(a) && Array.isArray(b) && a.length !== b.length) {
      out.push(`${path || '(root)'}: ${a.length} vs ${b.length} items`);
      return out;
    }
    const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
    for (const k of keys) jsonDiffs((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k], Array.isArray(a) ? `${path}[${k}]` : path ? `${path}.${k}` : k, out, limit);
    return out;
  }
  if (JSON.stringify(a) !== JSON.stringify(b)) out.push(`${path || '(root)'}: ${JSON.stringify(a)?.slice(0, 120)} vs ${JSON.stringify(b)?.slice(0, 120)}`);
  return out;
}

/** Event lines without the ones that exist only for timing (progress ticks are rate-limited by the clock). */
function eventLines(text: string, run: RunNames): unknown[] {
  return text
    .split('\n')
    .filter((l) => l.trim())
    .map((l) => JSON.parse(l) as Record<string, unknown>)
    .filter((e) => e.type !== 'phase_progress')
    .map((e) => normalizeJson(e, run));
}

/** Masks what a report prints about time: ISO timestamps, durations (and the chart drawn from them), memory peaks. */
function maskText(text: string, run: RunNames): string {
  return anonymize(text, run)
    .replace(/<svg[^>]*aria-label="Phase durations"[\s\S]*?<\/svg>/g, '<phase durations chart>')
    .replace(/(_ms(?:<\/th><td>|\W){0,4})\d+(\.\d+)?/g, '$1<time>')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, '<ts>')
    .replace(/\d+(\.\d+)?(\s|&nbsp;|&#160;)?(ms|s)(?![A-Za-z0-9])/g, '<time>')
    .replace(/\d+(\.\d+)?(\s|&nbsp;|&#160;)?(MiB|%)(?![A-Za-z0-9])/g, '<n $3>');
}

interface RunNames {
  id: string;
  dir: string;
}

async function runNames(given: string): Promise<RunNames> {
  // Without a trailing slash (`ls -d */` adds one), as the run's texts spell the folder.
  const dir = given.replace(/\/+$/, '');
  try {
    const rec = JSON.parse(await readFile(join(dir, 'run.json'), 'utf8')) as { run_id?: string };
    return { id: rec.run_id ?? '', dir };
  } catch {
    return { id: '', dir };
  }
}

export async function compareRuns(dirA: string, dirB: string): Promise<{ files: number; differences: Difference[] }> {
  const [fa, fb] = await Promise.all([listFiles(dirA), listFiles(dirB)]);
  const runA = await runNames(dirA);
  const runB = await runNames(dirB);
  const differences: Difference[] = [];
  for (const f of fa.filter((x) => !fb.includes(x))) differences.push({ file: f, what: 'only in A' });
  for (const f of fb.filter((x) => !fa.includes(x))) differences.push({ file: f, what: 'only in B' });
  const both = fa.filter((x) => fb.includes(x));
  for (const file of both) {
    const [a, b] = await Promise.all([readFile(join(dirA, file)), readFile(join(dirB, file))]);
    const lower = file.toLowerCase();
    if (/\.(fits|fit|fts)$/.test(lower)) differences.push(...compareFits(file, a, b, runA, runB));
    else if (lower.endsWith('.jsonl')) {
      const d = jsonDiffs(eventLines(a.toString('utf8'), runA), eventLines(b.toString('utf8'), runB));
      for (const what of d) differences.push({ file, what });
    } else if (lower.endsWith('.json')) {
      const d = jsonDiffs(normalizeJson(JSON.parse(a.toString('utf8')), runA), normalizeJson(JSON.parse(b.toString('utf8')), runB));
      for (const what of d) differences.push({ file, what });
    } else if (/\.(md|html|csv|txt|wcs|yaml)$/.test(lower)) {
      const ta = maskText(a.toString('utf8'), runA).split('\n');
      const tb = maskText(b.toString('utf8'), runB).split('\n');
      const at = ta.findIndex((l, i) => l !== tb[i]);
      if (at >= 0 || ta.length !== tb.length) {
        const i = at >= 0 ? at : Math.min(ta.length, tb.length);
        const la = ta[i] ?? '';
        const lb = tb[i] ?? '';
        let col = 0;
        while (col < la.length && la[col] === lb[col]) col++;
        const from = Math.max(0, col - 60);
        differences.push({ file, what: `line ${i + 1} col ${col + 1}: ${JSON.stringify(la.slice(from, col + 100))} vs ${JSON.stringify(lb.slice(from, col + 100))}` });
      }
    } else if (!a.equals(b)) differences.push({ file, what: `${a.length} vs ${b.length} bytes, content differs` });
  }
  return { files: both.length, differences };
}

async function main(argv: string[]): Promise<number> {
  const args: string[] = [];
  let quiet = false;
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--quiet') quiet = true;
    else if (argv[i] === '--ignore-keys') {
      for (const k of (argv[++i] ?? '').split(',')) if (k) ignoredKeys.add(k);
    } else args.push(argv[i]!);
  }
  if (args.length !== 2) {
    process.stderr.write('usage: compare-runs RUN_A RUN_B [--quiet] [--ignore-keys K1,K2]\n');
    return 2;
  }
  const { files, differences } = await compareRuns(args[0]!, args[1]!);
  if (!quiet || differences.length) for (const d of differences) process.stdout.write(`  ${d.file}: ${d.what}\n`);
  process.stdout.write(`${differences.length === 0 ? 'same' : 'DIFFERENT'}: ${files} files compared, ${differences.length} difference(s)\n`);
  return differences.length === 0 ? 0 : 1;
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop()!)) {
  main(process.argv.slice(2)).then(
    (code) => process.exit(code),
    (e: unknown) => {
      process.stderr.write(`compare-runs: ${(e as Error).message}\n`);
      process.exit(2);
    },
  );
}
