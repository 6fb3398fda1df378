// `skystack demo`: generates a realistic synthetic session (lights with bad frames, bias,
// darks, flats, truth.json) with the fixture generator and inspects it. It grows with the
// project: once the Raw Stack pipeline exists, it runs the whole pipeline on this data.

import { parseArgs } from 'node:util';
import { join, resolve } from 'node:path';
import { generateDataset, OptionsError } from '../../fixtures/generator/index.js';
import { inspectFile } from './inspect.js';
import { progress } from './progress.js';
import { UsageError } from './usage.js';

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
    },
  });
  const int = (name: string, text: string) => {
    const n = Number(text);
    if (!Number.isInteger(n) || n <= 0) throw new UsageError(`--${name} must be a positive integer, got "${text}"`);
    return n;
  };
  const out = resolve(values.out!);
  const bar = progress(process.stderr, 'generating ');
  const started = performance.now();
  let truth;
  try {
    truth = await generateDataset({
      out,
      kind: values.kind as 'osc' | 'mono',
      pattern: values.pattern!.toUpperCase() as 'RGGB',
      frames: int('frames', values.frames!),
      width: int('width', values.width!),
      height: int('height', values.height!),
      seed: int('seed', values.seed!),
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
  const first = join(out, truth.frames[0]!.file);
  const { report, stats } = await inspectFile(first);
  const s = stats[0]!;
  console.log(`${truth.frames[0]!.file}: ${report.naxis.join('x')} BITPIX ${report.bitpix}, median ${s.median.toFixed(1)} ADU, robust sigma ${s.sigma.toFixed(2)} ADU, max ${s.max}`);
  console.log(`inspect any frame with: npx skystack inspect ${first}`);
  console.log('(the Raw Stack pipeline will run on this data once it lands; see README)');
  return 0;
}
