// `skystack demo`: generates a realistic synthetic session (lights with bad frames, bias,
// darks, flats, truth.json) with the fixture generator, inspects a light, and runs the Raw
// Stack pipeline on it with full calibration (`--no-run` stops after generating).
// `--sky orion` (default) places the real Tycho-2 stars of that field (fixtures/astrometry) by a
// known WCS with a camera lens (focal length for a field of a few degrees, f/4), so ASTROMETRY can solve it
// against Debian's astrometry-data-tycho2-10-19 index when astrometry.net is installed; the
// generator's own star list (with its B−V colours) is written as the PCC catalogue, so the whole
// chain ASTROMETRY → BGE → PCC → HYPERMETRIC_STRETCH runs. `--sky random` uses the generator's
// random star field (ASTROMETRY then cannot solve; PCC and HMS are skipped).
// `--kind lrgb`: four mono filter sets of one sky (fixtures/generator/lrgb.ts) in <out>/L, R, G,
// B, all flats gathered in <out>/flats (FILTER tells them apart), and a run-queue run with one
// entry per filter (bias and darks of the L set).
// `--pipeline tiled`: the tiled workflow instead of Raw Stack, on a session whose seeing varies
// across the field (`--seeing swap-halves`, default; `drifting-patch`, `cloud-quadrant`, or
// `uniform`, the control; fixtures/generator/presets.ts), so the local weights have something to
// do; its report shows the tile grid, N_eff and where the local weights sharpened the stack.

import { parseArgs } from 'node:util';
import { join, resolve } from 'node:path';
import { copyFile, mkdir, readdir, writeFile } from 'node:fs/promises';
import { TYCHO2_FIELDS, tycho2Field, type Tycho2Field } from '../../fixtures/astrometry/tycho2.js';
import { generateDataset, MONO_FILTERS, OptionsError, type DatasetOptions } from '../../fixtures/generator/index.js';
import { generateLrgb, type LrgbSet } from '../../fixtures/generator/lrgb.js';
import { TILED_SEEING_SCENARIOS, tiledSeeingOptions, type TiledSeeingScenario } from '../../fixtures/generator/presets.js';
import { resolveTiledConfig } from '../config/tiled-run.js';
import { runTiled } from '../pipeline/tiled/run.js';
import { runInTerminal } from './run-terminal.js';
import { inspectFile } from './inspect.js';
import { progress } from './progress.js';
import { parseRawStackConfig, type RawStackConfig } from '../config/rawstack.js';
import { runRawStack } from '../pipeline/rawstack/run.js';
import { RUN_LAYOUTS } from '../shared/run-layout.js';
import { UsageError } from './usage.js';

/**
 * The generator's sky and optics of the demo (also used by test/pipeline/pcc-e2e.test.ts): for a
 * Tycho-2 field, its stars and a field about 3.5° wide whatever the width (inside the 1°–30° range
 * of the tycho2-10-19 index). The short focal length is a camera lens, so the aperture shrinks with
 * it (f/4): with the refractor's 106 mm it would be an f/0.6 optic and 92 of the field's 105 stars
 * would saturate, leaving PCC only grey, clipped cores to measure.
 */
export function demoSkyOptions(sky: 'random' | Tycho2Field, width: number): Pick<DatasetOptions, 'skyStars' | 'ra' | 'dec' | 'focalLengthMm' | 'apertureMm'> {
  if (sky === 'random') return {};
  const focalLengthMm = Math.round((width * 3.76 * 206.265) / (3.5 * 3600));
  return { skyStars: tycho2Field(sky), ...TYCHO2_FIELDS[sky], focalLengthMm, apertureMm: Math.round((focalLengthMm / 4) * 10) / 10 };
}

export async function runDemo(argv: string[]): Promise<number> {
  const { values } = parseArgs({
    args: argv,
    options: {
      out: { type: 'string', default: 'runs/demo-data' },
      kind: { type: 'string', default: 'osc' },
      pattern: { type: 'string', default: 'RGGB' },
      frames: { type: 'string', default: '16' },
      width: { type: 'string', default: '1024' },
      height: { type: 'string', default: '768' },
      seed: { type: 'string', default: '1' },
      sky: { type: 'string', default: 'orion' },
      'runs-dir': { type: 'string', default: 'runs' },
      'no-run': { type: 'boolean', default: false },
      pipeline: { type: 'string', default: 'rawstack' },
      seeing: { type: 'string' },
    },
  });
  const pipeline = values.pipeline!;
  if (pipeline !== 'rawstack' && pipeline !== 'tiled') throw new UsageError(`--pipeline must be rawstack or tiled (got '${pipeline}')`);
  const seeing = values.seeing ?? (pipeline === 'tiled' ? 'swap-halves' : undefined);
  if (seeing !== undefined && !TILED_SEEING_SCENARIOS.includes(seeing as TiledSeeingScenario)) throw new UsageError(`--seeing must be one of ${TILED_SEEING_SCENARIOS.join(', ')} (got '${seeing}')`);
  if (values.kind === 'lrgb' && pipeline === 'tiled') throw new UsageError('--kind lrgb runs the Raw Stack run queue; the tiled demo takes --kind osc or mono');
  const int = (name: string, text: string) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive integer, got "${text}"`);
    return n;
  };
  const out = resolve(values.out!);
  if (values.kind === 'lrgb') return runLrgbDemo(out, { frames: int('frames', values.frames!), width: int('width', values.width!), height: int('height', values.height!), seed: int('seed', values.seed!) }, resolve(values['runs-dir']!), values['no-run']!);
  const sky = values.sky!;
  if (sky !== 'random' && !(sky in TYCHO2_FIELDS)) throw new UsageError(`--sky must be random or one of ${Object.keys(TYCHO2_FIELDS).join(', ')} (got '${sky}')`);
  const width = int('width', values.width!);
  const height = int('height', values.height!);
  const frames = int('frames', values.frames!);
  const skyOptions = demoSkyOptions(sky as 'random' | Tycho2Field, width);
  const seeingOptions = seeing ? tiledSeeingOptions(seeing as TiledSeeingScenario, { width, height, frames }) : {};
  const bar = progress(process.stderr, 'generating ');
  const started = performance.now();
  let truth;
  try {
    truth = await generateDataset({
      out,
      kind: values.kind as 'osc' | 'mono',
      pattern: values.pattern!.toUpperCase() as 'RGGB',
      frames,
      width,
      height,
      seed: int('seed', values.seed!),
      ...skyOptions,
      ...seeingOptions,
      onProgress: (e) => bar.update(e.done, e.total, e.file),
    });
  } catch (e) {
    if (e instanceof OptionsError) throw new UsageError(e.message);
    throw e;
  }
  bar.finish(`generated ${truth.frames.length} lights and their calibration frames in ${((performance.now() - started) / 1000).toFixed(1)} s into ${out}`);

  const bad = truth.frames.filter((f) => f.bad !== null).map((f) => `${f.file} (${f.bad})`);
  console.log(`dataset: ${truth.kind.toUpperCase()}${truth.kind === 'osc' ? ` ${truth.pattern}` : ''}, ${truth.image.width}x${truth.image.height}, ${truth.stars.length} catalogue stars, seed ${truth.seed}`);
  console.log(`bad frames the quality filter should catch: ${bad.length ? bad.join(', ') : 'none'}`);
  if (seeing) console.log(`seeing across the field: ${seeing}`);
  const first = join(out, truth.frames[0]!.file);
  const { report, stats } = await inspectFile(first);
  const s = stats[0]!;
  console.log(`${truth.frames[0]!.file}: ${report.naxis.join('x')} BITPIX ${report.bitpix}, median ${s.median.toFixed(1)} ADU, robust sigma ${s.sigma.toFixed(2)} ADU, max ${s.max}`);
  // The generator's stars with their colours as the local PCC catalogue (ra,dec,mag,bv).
  const catalog = join(out, 'catalogue.csv');
  await writeFile(catalog, 'ra,dec,mag,bv\n' + truth.stars.map((st) => `${st.ra},${st.dec},${st.mag},${st.bv}`).join('\n') + '\n');
  console.log(`PCC catalogue: ${catalog} (${truth.stars.length} stars${sky === 'random' ? '' : `, Tycho-2 field ${sky}`})`);
  if (values['no-run']) return 0;
  if (pipeline === 'tiled') return runTiledDemo(out, catalog, resolve(values['runs-dir']!));

  // The whole Raw Stack on the generated session, with full calibration.
  const parsed = parseRawStackConfig({
    lights_dir: join(out, 'lights'),
    bias_dir: join(out, 'bias'),
    darks_dir: join(out, 'darks'),
    flats_dir: join(out, 'flats'),
    run_name: 'demo',
    pcc: { catalog_file: catalog },
  });
  if (!parsed.ok) throw new Error(`demo configuration invalid: ${parsed.issues.map((i) => i.message).join('; ')}`);
  console.log(`\nrunning Raw Stack on ${join(out, 'lights')} ...`);
  return runWithProgress(parsed.config, resolve(values['runs-dir']!));
}

/** `demo --pipeline tiled`: the tiled workflow on the generated session, with full calibration, in the terminal as `skystack tiled` runs. */
async function runTiledDemo(out: string, catalog: string, runsDir: string): Promise<number> {
  const r = resolveTiledConfig(
    {},
    {
      'input.input_dir': join(out, 'lights'),
      'calibration.bias_dir': join(out, 'bias'),
      'calibration.darks_dir': join(out, 'darks'),
      'calibration.flats_dir': join(out, 'flats'),
      'output.run_name': 'demo-tiled',
      'pcc.catalog_file': catalog,
    },
  );
  if (!r.ok) throw new Error(`demo configuration invalid: ${r.issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
  console.log(`\nrunning the tiled workflow on ${join(out, 'lights')} ...`);
  let runDir = '';
  const code = await runInTerminal(async (signal, onEvent) => {
    const result = await runTiled(r.config, { runsDir, signal, onEvent });
    runDir = result.runDir;
    return result;
  }, false);
  if (runDir) console.log(`report: ${join(runDir, RUN_LAYOUTS.tiled.report.html)}`);
  return code;
}

/** `demo --kind lrgb`: generate an LRGB session and stack it through the run queue. */
async function runLrgbDemo(out: string, o: { frames: number; width: number; height: number; seed: number }, runsDir: string, noRun: boolean): Promise<number> {
  const bar = progress(process.stderr, 'generating ');
  const started = performance.now();
  let set: LrgbSet;
  try {
    let filter = 0;
    set = await generateLrgb(out, { ...o, onProgress: (e) => (e.done === 1 && filter++, bar.update(e.done, e.total, `filter ${filter}/4 ${e.file}`)) });
  } catch (e) {
    if (e instanceof OptionsError) throw new UsageError(e.message);
    throw e;
  }
  const flats = join(out, 'flats');
  await mkdir(flats, { recursive: true });
  for (const f of MONO_FILTERS) for (const name of await readdir(join(set.dirs[f], 'flats'))) await copyFile(join(set.dirs[f], 'flats', name), join(flats, `${f}_${name}`));
  bar.finish(`generated 4 filters x ${o.frames} lights and their calibration frames in ${((performance.now() - started) / 1000).toFixed(1)} s into ${out}`);
  for (const f of MONO_FILTERS) console.log(`filter ${f}: ${join(set.dirs[f], 'lights')} (${set.truths[f].frames.length} lights)`);
  if (noRun) return 0;
  const parsed = parseRawStackConfig({
    queue: MONO_FILTERS.map((f) => ({ filter: f, input_dir: join(set.dirs[f], 'lights'), label: `demo ${f}` })),
    bias_dir: join(set.dirs.L, 'bias'),
    darks_dir: join(set.dirs.L, 'darks'),
    flats_dir: flats,
    run_name: 'demo-lrgb',
  });
  if (!parsed.ok) throw new Error(`demo configuration invalid: ${parsed.issues.map((i) => i.message).join('; ')}`);
  console.log('\nrunning Raw Stack on the run queue L, R, G, B ...');
  return runWithProgress(parsed.config, runsDir);
}

/** Runs Raw Stack with a progress bar per phase and prints where the results went; exit code. */
async function runWithProgress(config: RawStackConfig, runsDir: string): Promise<number> {
  const runBar = progress(process.stderr, '');
  const result = await runRawStack(config, {
    runsDir,
    onEvent: (line) => {
      if (line.type === 'phase_progress') runBar.update(line.current, line.total, `${line.phase}${line.substep ? ` ${line.substep}` : ''}`);
      if (line.type === 'phase_end') runBar.finish(`  ${line.phase}: ${line.status}${line.reason ? ` (${line.reason}${typeof line.message === 'string' ? `: ${line.message}` : ''})` : ''} in ${(line.duration_ms / 1000).toFixed(1)} s`);
    },
  });
  console.log(`run ${result.runId}: ${result.status} on device ${result.device.kind}${result.device.adapter ? ` (${result.device.adapter})` : ''}`);
  console.log(`run folder: ${result.runDir}`);
  for (const [name, file] of Object.entries(result.outputs)) console.log(`  ${name}: ${file}`);
  console.log(`  report: ${join(result.runDir, RUN_LAYOUTS.rawstack.report.html)}`);
  return result.status === 'ok' ? 0 : 1;
}
