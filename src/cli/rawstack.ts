// `skystack rawstack`: one Raw Stack run from the terminal. The configuration is the stored
// JSON file, or YAML when its name ends in .yaml/.yml (if any), overlaid with
// --lights (or --input-dir, as `tiled` names it)/--bias/--darks/--flats/--darkflats/--pattern/--runs-dir/--run-name, --queue FILTER=DIR entries (replacing the file's
// queue) and --set pairs, validated once. Progress: a bar on a TTY, one line per phase otherwise. Ctrl-C cancels the
// run cleanly (events closed, REPORT written); a second Ctrl-C exits at once.
// Exit codes: 0 ok, 1 run error or cancelled, 2 usage or configuration error.

import { parseArgs } from 'node:util';
import { mergeLayers, setPath } from '../config/merge.js';
import { parseRawStackConfig } from '../config/rawstack.js';
import { runRawStack } from '../pipeline/rawstack/run.js';
import { readConfigFile, runInTerminal } from './run-terminal.js';
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
      // What `tiled` calls the lights folder: a user switching pipelines keeps the same option.
      'input-dir': { type: 'string' },
      bias: { type: 'string' },
      darks: { type: 'string' },
      flats: { type: 'string' },
      darkflats: { type: 'string' },
      pattern: { type: 'string' },
      'runs-dir': { type: 'string' },
      'run-name': { type: 'string' },
      set: { type: 'string', multiple: true, default: [] },
      queue: { type: 'string', multiple: true, default: [] },
      json: { type: 'boolean', default: false },
    },
  });
  const fileLayer = values.config ? await readConfigFile(values.config) : {};
  const flags: Record<string, unknown> = {};
  if (values.lights !== undefined && values['input-dir'] !== undefined && values.lights !== values['input-dir']) throw new UsageError('--lights and --input-dir name the same folder: give one');
  const lights = values.lights ?? values['input-dir'];
  if (lights !== undefined) flags.lights_dir = lights;
  // The calibration folders, as `tiled` takes them (Raw Stack's keys are top level).
  for (const k of ['bias', 'darks', 'flats', 'darkflats'] as const) if (values[k] !== undefined) flags[`${k}_dir`] = values[k];
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

  const runsDir = values['runs-dir'];
  return runInTerminal((signal, onEvent) => runRawStack(config, { ...(runsDir ? { runsDir } : {}), signal, onEvent }), values.json);
}
