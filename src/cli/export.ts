// `skystack export IN.fits OUT.(png|tif|tiff|jpg|jpeg) [--stretch auto|linear|asinh|hms]
// [--bits 8|16] [--channel rgb|r|g|b|N] [--unlinked]`: one FITS image as a picture for other
// editors (src/viewer/export.ts: stretch, orientation, encoders). Rows are written top-down; FITS
// rows count bottom-up unless ROWORDER = 'TOP-DOWN', so they are flipped unless the header says so.
// --stretch hms on a linear image uses the HMS solution of the run the image belongs to (found
// from its place in a run folder: outputs/, outputs/masters/, outputs/calibrated/), else solves
// one on the image with the default settings.
// Exit codes: 0 written, 1 the input cannot be exported (missing, not FITS, not RGB, no such
// plane, write failed), 2 usage (unknown option, bad option value, unsupported output extension).

import { readFile, stat } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { parseArgs } from 'node:util';
import { artifactPath, layoutOf, RUN_RECORD, type RunLayout } from '../shared/run-layout.js';
import { STRETCH_MODES, type StretchMode } from '../shared/stretch-math.js';
import { encodeImage, ExportError, formatOf, parseChannel, renderFits, writeAtomic } from '../viewer/export.js';
import { hmsSettings, recipeFromDiagnostics } from '../viewer/hms-look.js';
import { UsageError } from './usage.js';

/** The run folder holding `file`, when it lies in one's outputs (run.json beside outputs/). */
export async function runFolderOf(file: string): Promise<string | null> {
  let dir = dirname(file);
  for (let i = 0; i < 3; i++) {
    if (basename(dir) === 'outputs') {
      const run = dirname(dir);
      if (await stat(join(run, RUN_RECORD)).catch(() => null)) return run;
      return null;
    }
    dir = dirname(dir);
  }
  return null;
}

const text = (f: string) => readFile(f, 'utf8').catch(() => null);

/** The layout of the run folder `run` (its run.json names the pipeline kind). */
async function layoutAt(run: string): Promise<RunLayout> {
  try {
    return layoutOf((JSON.parse((await text(join(run, RUN_RECORD))) ?? '{}') as { kind?: unknown }).kind);
  } catch {
    return layoutOf(undefined);
  }
}

export async function runExportCli(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: {
      stretch: { type: 'string', default: 'auto' },
      bits: { type: 'string' },
      channel: { type: 'string' },
      unlinked: { type: 'boolean', default: false },
    },
    allowPositionals: true,
  });
  if (positionals.length !== 2) throw new UsageError('export takes an input FITS file and an output file (.png, .tif, .tiff, .jpg)');
  const [input, output] = positionals as [string, string];
  const stretch = values.stretch as StretchMode;
  if (!STRETCH_MODES.includes(stretch)) throw new UsageError(`--stretch must be one of ${STRETCH_MODES.join(', ')} (got "${values.stretch}")`);
  let format;
  let channel;
  try {
    format = formatOf(output);
    channel = values.channel === undefined ? null : parseChannel(values.channel);
  } catch (e) {
    throw new UsageError((e as Error).message);
  }
  if (values.bits !== undefined && values.bits !== '8' && values.bits !== '16') throw new UsageError(`--bits must be 8 or 16 (got "${values.bits}")`);
  const bits = values.bits ? (Number(values.bits) as 8 | 16) : format === 'jpeg' ? 8 : 16;
  if (format === 'jpeg' && bits === 16) throw new UsageError('JPEG holds 8 bits per channel: use --bits 8, or PNG/TIFF for 16 bits');

  let hms = null;
  if (stretch === 'hms') {
    const run = await runFolderOf(input);
    const layout = run ? await layoutAt(run) : null;
    const settings = hmsSettings(run && layout ? await text(join(run, layout.config)) : null);
    hms = { recipe: run && layout ? recipeFromDiagnostics(await text(join(run, artifactPath(layout, 'hms_diagnostics.json'))), settings) : null, settings };
  }
  let img;
  try {
    img = await renderFits(input, { stretch, bits, channel, linked: !values.unlinked, hms });
  } catch (e) {
    if (e instanceof ExportError) {
      process.stderr.write(`skystack export: ${input}: ${e.code}: ${e.message}\n`);
      return 1;
    }
    throw e; // FITS errors: reported by the dispatcher (exit 1)
  }
  const bytes = await encodeImage(img, format);
  try {
    await writeAtomic(output, bytes);
  } catch (e) {
    process.stderr.write(`skystack export: cannot write ${output}: ${(e as NodeJS.ErrnoException).code ?? (e as Error).message}\n`);
    return 1;
  }
  const look = img.hms === 'run' ? ' (the run\'s HMS solution)' : img.hms === 'solved' ? ' (HMS solved on this image)' : img.hms === 'as_is' ? ' (already stretched: as is)' : '';
  process.stdout.write(
    `wrote ${output}: ${img.width}×${img.height} ${img.channels === 3 ? 'RGB' : 'grey'}, ${bits}-bit ${format.toUpperCase()}, stretch ${stretch}${look}; ` +
      `${img.flipped ? 'FITS rows flipped (bottom-up in the file)' : 'FITS rows kept (ROWORDER TOP-DOWN)'}\n`,
  );
  return 0;
}
