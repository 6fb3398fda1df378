// `skystack rawstack`: one Raw Stack run from the terminal. The configuration is the stored
// JSON file, or YAML when its name ends in .yaml/.yml (if any), overlaid with
// --lights/--pattern/--runs-dir/--run-name, --queue FILTER=DIR entries (replacing the file's
// queue) and --set pairs, validated once. Progress: a bar on a TTY, one line per phase otherwise. Ctrl-C cancels the
// run cleanly (events closed, REPORT written); a second Ctrl-C exits at once.
// Exit codes: 0 ok, 1 run error or cancelled, 2 usage or configuration error.

import { readFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { parse as parseYaml } from 'yaml';
import { jsonDepth, MAX_NESTING, yamlDepth } from '../config/nesting.js';
import { mergeLayers, setPath } from '../config/merge.js';
import { parseRawStackConfig } from '../config/rawstack.js';
import type { EventLine } from '../pipeline/events.js';
import { RunProgress } from '../shared/run-progress.js';
import { runRawStack } from '../pipeline/rawstack/run.js';
import { progress } from './progress.js';
import { stderrIsTerminal } from './quiet-native.js';
import { UsageError } from './usage.js';

/** `key.path=value`: the value as JSON when it parses (numbers, booleans, arrays), else a string. */
export function parseSetPair(pair: string): [string, unknown] {
  const eq = pair.indexOf('=');
  if (eq <= 0) throw new UsageError(`--set expects key.path=value, got "${pair}"`);
  const key = pair.slice(0, eq).trim();
  const text = pair.slice(eq + 1);
  if (!/^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z0-9_]+)*$/.test(key)) throw new UsageError(`--set: "${key}" is not a key path`);
  try {
    return [key, JSON.parse(text)];
  } catch {
    return [key, text];
  }
}

/** `--queue FILTER=DIR`: one active run-queue entry (the run's pattern applies). */
export function parseQueueFlag(text: string): { filter: string; input_dir: string } {
  const eq = text.indexOf('=');
  if (eq <= 0 || eq === text.length - 1) throw new UsageError(`--queue expects FILTER=DIR, got "${text}"`);
  return { filter: text.slice(0, eq).trim(), input_dir: text.slice(eq + 1) };
}

export async function runRawStackCli(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      config: { type: 'string' },
      lights: { type: 'string' },
      pattern: { type: 'string' },
      'runs-dir': { type: 'string' },
      'run-name': { type: 'string' },
      set: { type: 'string', multiple: true, default: [] },
      queue: { type: 'string', multiple: true, default: [] },
      json: { type: 'boolean', default: false },
    },
  });
  let fileLayer: Record<string, unknown> = {};
  if (values.config) {
    let text: string;
    try {
      text = await readFile(values.config, 'utf8');
    } catch (e) {
      throw new UsageError(`cannot read --config ${values.config}: ${(e as Error).message}`);
    }
    const yaml = /\.ya?ml$/i.test(values.config);
    if ((yaml ? yamlDepth(text, MAX_NESTING) : jsonDepth(text, MAX_NESTING)) > MAX_NESTING) throw new UsageError(`--config ${values.config} nests deeper than ${MAX_NESTING} levels`);
    try {
      // YAML without custom tags (docs/threat-model.md); a document that is not a mapping is refused below.
      fileLayer = (yaml ? parseYaml(text, { customTags: [] }) : JSON.parse(text)) as Record<string, unknown>;
    } catch (e) {
      throw new UsageError(`--config ${values.config} is not valid ${yaml ? 'YAML' : 'JSON'}: ${(e as Error).message}`);
    }
    if (fileLayer === null || typeof fileLayer !== 'object' || Array.isArray(fileLayer)) throw new UsageError(`--config ${values.config} must hold a mapping of parameters`);
  }
  const flags: Record<string, unknown> = {};
  if (values.lights !== undefined) flags.lights_dir = values.lights;
  if (values.pattern !== undefined) flags.pattern = values.pattern;
  if (values['run-name'] !== undefined) flags.run_name = values['run-name'];
  if (values.queue && values.queue.length > 0) flags.queue = values.queue.map(parseQueueFlag);
  for (const pair of values.set ?? []) {
    const [key, value] = parseSetPair(pair);
    setPath(flags, key, value);
  }
  const parsed = parseRawStackConfig(mergeLayers(fileLayer, flags));
  if (!parsed.ok) {
    throw new UsageError(`invalid configuration:\n${parsed.issues.map((i) => `  ${i.path || '(root)'}: ${i.message}`).join('\n')}`);
  }
  const config = parsed.config;

  const controller = new AbortController();
  let interrupts = 0;
  const onSigint = () => {
    interrupts++;
    if (interrupts > 1) process.exit(130);
    process.stderr.write('\ncancelling (Ctrl-C again to quit at once)...\n');
    controller.abort();
  };
  process.on('SIGINT', onSigint);
  const bar = progress(process.stderr, '');
  const tty = stderrIsTerminal();
  // The bar's fraction: the run's progress over the plan run_start carries (shared/run-progress.ts).
  const run = new RunProgress();
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
      if (line.reason === 'pattern_mismatch' && typeof suggested === 'string') process.stderr.write(`hint: run again with --pattern '${suggested}'\n`);
    } else if (line.type === 'warning') {
      process.stderr.write(`warning ${line.code}: ${line.message}\n`);
    }
  };
  try {
    const runsDir = values['runs-dir'];
    const result = await runRawStack(config, { ...(runsDir ? { runsDir } : {}), signal: controller.signal, onEvent });
    process.stderr.write(`run ${result.runId}: ${result.status} (device ${result.device.kind}${result.device.adapter ? `, ${result.device.adapter}` : ''})\n`);
    process.stderr.write(`run folder: ${result.runDir}\n`);
    for (const [name, file] of Object.entries(result.outputs)) process.stderr.write(`  ${name}: ${file}\n`);
    if (values.json) {
      process.stdout.write(`${JSON.stringify({ run_id: result.runId, run_dir: result.runDir, status: result.status, phases: result.phases })}\n`);
    }
    return result.status === 'ok' ? 0 : 1;
  } finally {
    process.off('SIGINT', onSigint);
  }
}
