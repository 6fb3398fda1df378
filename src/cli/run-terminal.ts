// What every pipeline command does around its run in a terminal (`skystack rawstack`,
// `skystack tiled`): the configuration file read (JSON, or YAML when the name ends in
// .yaml/.yml; nesting bounded, no custom tags), a progress bar on a TTY over the plan run_start
// carries (one line per phase otherwise), warnings on stderr, Ctrl-C cancelling the run cleanly
// (events closed, REPORT written; a second Ctrl-C exits at once), the summary on stderr and with
// --json the last stdout line {run_id, run_dir, status, phases}.
// Exit codes: 0 ok, 1 run error or cancelled (2, usage, is the caller's UsageError).

import { readFile } from 'node:fs/promises';
import { parse as parseYaml } from 'yaml';
import { jsonDepth, MAX_NESTING, yamlDepth } from '../config/nesting.js';
import type { EventLine } from '../pipeline/events.js';
import { RunProgress } from '../shared/run-progress.js';
import { progress } from './progress.js';
import { stderrIsTerminal } from './quiet-native.js';
import { UsageError } from './usage.js';

/** A configuration file as a mapping; its YAML text too when it is YAML (validators want the text for line numbers). */
export async function readConfigFile(path: string): Promise<Record<string, unknown>> {
  return (await readConfigText(path)).value;
}

export async function readConfigText(path: string): Promise<{ value: Record<string, unknown>; text: string; yaml: boolean }> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (e) {
    throw new UsageError(`cannot read --config ${path}: ${(e as Error).message}`);
  }
  const yaml = /\.ya?ml$/i.test(path);
  if ((yaml ? yamlDepth(text, MAX_NESTING) : jsonDepth(text, MAX_NESTING)) > MAX_NESTING) throw new UsageError(`--config ${path} nests deeper than ${MAX_NESTING} levels`);
  let value: unknown;
  try {
    // YAML without custom tags (docs/threat-model.md); a document that is not a mapping is refused below.
    value = yaml ? parseYaml(text, { customTags: [] }) : JSON.parse(text);
  } catch (e) {
    throw new UsageError(`--config ${path} is not valid ${yaml ? 'YAML' : 'JSON'}: ${(e as Error).message}`);
  }
  if (value === null || value === undefined) value = {};
  if (typeof value !== 'object' || Array.isArray(value)) throw new UsageError(`--config ${path} must hold a mapping of parameters`);
  return { value: value as Record<string, unknown>, text, yaml };
}

export interface TerminalRunResult {
  runId: string;
  runDir: string;
  status: string;
  phases: { phase: string; status: string; reason?: string; duration_ms: number }[];
  outputs: Record<string, string | undefined>;
  device: { kind: string; adapter: string | null };
  /** Added to the --json line (a resume adds from_phase). */
  jsonExtra?: Record<string, unknown>;
}

/**
 * Runs `start` in the terminal. `patternOption` names how this command sets the file pattern, for
 * the scan's hint (`--pattern '*.fit'`).
 */
export async function runInTerminal(
  start: (signal: AbortSignal, onEvent: (line: EventLine) => void) => Promise<TerminalRunResult>,
  json: boolean,
  patternOption = (p: string) => `--pattern '${p}'`,
  /** Events already in the run's log (a resume continues it): the bar starts from them. */
  prior: readonly EventLine[] = [],
): Promise<number> {
  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts > 1) process.exit(130);
    process.stderr.write('\ncancelling (Ctrl-C again to quit at once)...\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  // Run as the CLI's child (quiet-native.ts): when the parent dies without passing a signal on
  // (SIGKILL), this process is re-parented; it cancels its run rather than go on unwatched.
  const parent = process.ppid;
  const orphanWatch = process.env.SKYSTACK_CLI_CHILD === '1' ? setInterval(() => process.ppid !== parent && !controller.signal.aborted && controller.abort(), 1000) : null;
  orphanWatch?.unref();
  const bar = progress(process.stderr, '');
  const tty = stderrIsTerminal();
  // The bar's fraction: the run's progress over the plan run_start carries (shared/run-progress.ts).
  const run = new RunProgress();
  for (const l of prior) run.apply(l);
  const onEvent = (line: EventLine) => {
    run.apply(line);
    const total = Math.max(1, run.phases.size);
    if (line.type === 'phase_start') {
      if (tty) bar.update(run.fraction * total, total, line.phase);
    } else if (line.type === 'phase_progress') {
      if (tty) bar.update(run.fraction * total, total, `${line.phase} ${line.current}/${line.total}${line.substep ? ` ${line.substep}` : ''}`);
    } else if (line.type === 'phase_end') {
      const text = `${line.phase}: ${line.status}${line.reason ? ` (${line.reason}${typeof line.message === 'string' ? `: ${line.message}` : ''})` : ''} in ${(line.duration_ms / 1000).toFixed(1)} s`;
      if (tty) bar.finish(text);
      else process.stderr.write(`${text}\n`);
      // The scan's hint in this command's terms: the option that takes the files it found.
      const suggested = (line as { suggested_pattern?: unknown }).suggested_pattern;
      if (line.reason === 'pattern_mismatch' && typeof suggested === 'string') process.stderr.write(`hint: run again with ${patternOption(suggested)}\n`);
    } else if (line.type === 'warning') {
      process.stderr.write(`warning ${line.code}: ${line.message}\n`);
    }
  };
  try {
    const result = await start(controller.signal, onEvent);
    process.stderr.write(`run ${result.runId}: ${result.status} (device ${result.device.kind}${result.device.adapter ? `, ${result.device.adapter}` : ''})\n`);
    process.stderr.write(`run folder: ${result.runDir}\n`);
    for (const [name, file] of Object.entries(result.outputs)) if (file) process.stderr.write(`  ${name}: ${file}\n`);
    if (json) process.stdout.write(`${JSON.stringify({ run_id: result.runId, run_dir: result.runDir, status: result.status, phases: result.phases, ...(result.jsonExtra ?? {}) })}\n`);
    return result.status === 'ok' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSigint);
    if (orphanWatch) clearInterval(orphanWatch);
  }
}
