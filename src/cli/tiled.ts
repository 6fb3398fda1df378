// `skystack tiled`: one tiled-workflow run from the terminal. The configuration is a tiled YAML
// (--config; validated with line numbers, unknown keys printed as warnings and ignored),
// overlaid with --input-dir, --bias/--darks/--flats (calibration.*_dir), --runs-dir, --run-name
// and --set key.path=value pairs (tiled key paths: --set tile.size_factor=24), resolved once
// (config/tiled-run.ts). The run in the terminal (progress, Ctrl-C, --json): run-terminal.ts.
// Exit codes: 0 ok, 1 run error or cancelled, 2 usage or configuration error.

import { parseArgs } from 'node:util';
import { resolveTiledConfig } from '../config/tiled-run.js';
import { validateTiledYaml } from '../config/tiled.js';
import { runTiled } from '../pipeline/tiled/run.js';
import { parseSetPair } from './rawstack.js';
import { readConfigText, runInTerminal } from './run-terminal.js';
import { UsageError } from './usage.js';

export async function runTiledCli(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      'input-dir': { type: 'string' },
      bias: { type: 'string' },
      darks: { type: 'string' },
      flats: { type: 'string' },
      config: { type: 'string' },
      'runs-dir': { type: 'string' },
      'run-name': { type: 'string' },
      set: { type: 'string', multiple: true, default: [] },
      json: { type: 'boolean', default: false },
    },
  });
  let document: Record<string, unknown> = {};
  if (values.config) {
    const file = await readConfigText(values.config);
    if (file.yaml) {
      const v = validateTiledYaml(file.text);
      for (const w of v.warnings) process.stderr.write(`warning ${values.config}:${w.line ?? '?'}: ${w.message}\n`);
      if (!v.ok) throw new UsageError(`invalid configuration ${values.config}:\n${v.errors.map((e) => `  ${e.path || '(root)'} (line ${e.line ?? '?'}): ${e.message}`).join('\n')}`);
      document = v.config ?? {};
    } else document = file.value;
  }
  const overrides: Record<string, unknown> = {};
  if (values['input-dir'] !== undefined) overrides['input.input_dir'] = values['input-dir'];
  if (values.bias !== undefined) overrides['calibration.bias_dir'] = values.bias;
  if (values.darks !== undefined) overrides['calibration.darks_dir'] = values.darks;
  if (values.flats !== undefined) overrides['calibration.flats_dir'] = values.flats;
  if (values['run-name'] !== undefined) overrides['output.run_name'] = values['run-name'];
  for (const pair of values.set ?? []) {
    const [key, value] = parseSetPair(pair);
    overrides[key] = value;
  }
  const r = resolveTiledConfig(document, overrides);
  if (!r.ok) throw new UsageError(`invalid configuration:\n${r.issues.map((i) => `  ${i.path || '(root)'}: ${i.message}`).join('\n')}`);
  if (r.config.tiled.input.input_dir.trim() === '') throw new UsageError('tiled needs --input-dir (or input.input_dir in the configuration)');
  const runsDir = values['runs-dir'];
  return runInTerminal((signal, onEvent) => runTiled(r.config, { ...(runsDir ? { runsDir } : {}), signal, onEvent }), values.json, (p) => `--set input.pattern='${p}'`);
}

