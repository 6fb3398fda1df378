// `skystack resume`: resumes a tiled run from a phase in the terminal (docs/tiled-workflow.md
// "Resume"). The configuration is the run's config.yaml, or --config FILE.yaml (validated with
// line numbers, resolved like `skystack tiled`'s; without input.input_dir the run's lights). --dry-run prints the feasibility verdict and
// writes nothing (with --json as one stdout line {run_id, run_dir, from_phase, feasible, ...}).
// The resume runs like `skystack tiled` (run-terminal.ts: progress over the whole plan, Ctrl-C
// cancels and the earlier outputs stay, --json's last line {run_id, run_dir, status, phases,
// from_phase}).
// Exit codes: 0 ok (dry run: feasible), 1 run error or cancelled (dry run: not feasible),
// 2 usage or configuration error, a Raw Stack run, or a resume that is not feasible.

import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { parseArgs } from 'node:util';
import { resolveTiledConfig, type TiledRunConfig } from '../config/tiled-run.js';
import { validateTiledYaml } from '../config/tiled.js';
import { RunBusy } from '../pipeline/run-lock.js';
import { checkResume, ResumeRefused, resumeTiled, runDefaults } from '../pipeline/tiled/resume.js';
import { parseEventLines } from '../shared/events.js';
import { RUN_LAYOUTS } from '../shared/run-layout.js';
import { readConfigText, runInTerminal } from './run-terminal.js';
import { UsageError } from './usage.js';

async function configOf(path: string, runDir: string): Promise<TiledRunConfig> {
  const file = await readConfigText(path);
  let document: Record<string, unknown> = file.value;
  if (file.yaml) {
    const v = validateTiledYaml(file.text);
    for (const w of v.warnings) process.stderr.write(`warning ${path}:${w.line ?? '?'}: ${w.message}\n`);
    if (!v.ok) throw new UsageError(`invalid configuration ${path}:\n${v.errors.map((e) => `  ${e.path || '(root)'} (line ${e.line ?? '?'}): ${e.message}`).join('\n')}`);
    document = v.config ?? {};
  }
  const r = resolveTiledConfig(document, { ...(await runDefaults(runDir, document)), 'output.runs_dir': resolve(runDir, '..') });
  if (!r.ok) throw new UsageError(`invalid configuration:\n${r.issues.map((i) => `  ${i.path || '(root)'}: ${i.message}`).join('\n')}`);
  return r.config;
}

export async function runResumeCli(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'run-dir': { type: 'string' },
      'from-phase': { type: 'string' },
      config: { type: 'string' },
      'dry-run': { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
    },
  });
  const runDirArg = values['run-dir'];
  const fromPhase = values['from-phase'];
  if (!runDirArg) throw new UsageError('resume needs --run-dir DIR (a tiled run folder)');
  if (!fromPhase) throw new UsageError('resume needs --from-phase PHASE (the first phase to run again)');
  const runDir = resolve(runDirArg);
  const config = values.config ? await configOf(values.config, runDir) : null;
  const refused = (e: ResumeRefused): number => {
    process.stderr.write(`skystack resume: ${e.message}\n`);
    for (const [k, v] of Object.entries(e.details)) if (v !== undefined) process.stderr.write(`  ${k}: ${Array.isArray(v) ? v.join(', ') : String(v)}\n`);
    if (values.json) process.stdout.write(`${JSON.stringify({ run_dir: runDir, from_phase: fromPhase, status: 'refused', error: { code: e.code, details: e.details } })}\n`);
    return 2;
  };
  try {
    if (values['dry-run']) {
      const { facts, verdict } = await checkResume(runDir, fromPhase, config);
      const { message, ...rest } = verdict;
      const body = { run_id: facts.record.run_id, run_dir: runDir, from_phase: fromPhase, ...rest };
      process.stderr.write(verdict.feasible ? `resume from ${fromPhase} is feasible; it runs again: ${verdict.would_rerun.join(', ')}\n` : `resume from ${fromPhase} is not feasible: ${message ?? verdict.reason}\n`);
      if (!verdict.feasible) {
        for (const f of verdict.missing_files ?? []) process.stderr.write(`  missing or changed: ${f}\n`);
        for (const k of verdict.changed_keys ?? []) process.stderr.write(`  changed: ${k}\n`);
      }
      process.stderr.write(`earliest phase that has to run again: ${verdict.earliest_feasible_phase ?? '(none)'}\n`);
      if (values.json) process.stdout.write(`${JSON.stringify(body)}\n`);
      return verdict.feasible ? 0 : 1;
    }
    // The bar starts from the log the resume continues, so the earlier phases show as done.
    const prior = parseEventLines(await readFile(join(runDir, ...RUN_LAYOUTS.tiled.events.split('/')), 'utf8').catch(() => ''));
    return await runInTerminal(
      async (signal, onEvent) => {
        const r = await resumeTiled(runDir, fromPhase, { config, signal, onEvent });
        return { ...r, jsonExtra: { from_phase: fromPhase } };
      },
      values.json,
      (p) => `--config with input.pattern: '${p}'`,
      prior,
    );
  } catch (e) {
    if (e instanceof ResumeRefused) return refused(e);
    if (e instanceof RunBusy) {
      process.stderr.write(`skystack resume: ${e.message}\n`);
      if (values.json) process.stdout.write(`${JSON.stringify({ run_dir: runDir, from_phase: fromPhase, status: 'refused', error: { code: e.code, details: { holder: e.holder } } })}\n`);
      return 2;
    }
    throw e;
  }
}
