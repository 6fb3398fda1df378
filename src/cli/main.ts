// The `skystack` command dispatcher. Each subcommand lives in its own module in src/cli/.
// Exit codes: 0 success, 1 the work failed (unreadable input, failed run), 2 usage error.
// Errors print one line naming the file and the error code, never a stack trace.

import { parseArgs } from 'node:util';
import { SKYSTACK_VERSION } from '../version.js';
import { isFitsError } from '../fits/index.js';
import { inspectFile, renderInspectText } from './inspect.js';
import { UsageError } from './usage.js';
import { runInQuietChild, wantsQuietChild } from './quiet-native.js';

const USAGE = `usage: skystack <command> [options]

commands:
  inspect <file.fits> [--json]   dimensions, BITPIX, header cards and per-plane statistics
  demo [--out DIR] [--kind osc|mono|lrgb] [--pattern RGGB] [--frames N] [--width W] [--height H] [--seed S]
       [--runs-dir DIR] [--no-run] [--pipeline rawstack|tiled] [--seeing swap-halves|drifting-patch|cloud-quadrant|uniform]
                                 generate a realistic session (default runs/demo-data) and run Raw Stack on it
                                 (--pipeline tiled: the tiled workflow on seeing that varies across the field)
  rawstack [--config FILE.json|FILE.yaml] [--lights DIR | --input-dir DIR] [--bias DIR] [--darks DIR] [--flats DIR] [--darkflats DIR]
           [--pattern GLOB] [--runs-dir DIR] [--run-name NAME]
           [--queue FILTER=DIR ...] [--set key.path=value ...] [--json]
                                 run the Raw Stack pipeline (exit 0 ok, 1 run error or cancelled, 2 usage);
                                 --queue entries (or the config's queue) stack one folder per filter
  tiled --input-dir DIR [--bias DIR] [--darks DIR] [--flats DIR] [--config FILE.yaml] [--runs-dir DIR]
        [--run-name NAME] [--set key.path=value ...] [--json]
                                 run the tiled reconstruction workflow (local quality weights per tile;
                                 exit 0 ok, 1 run error or cancelled, 2 usage)
  resume --run-dir DIR --from-phase PHASE [--config FILE.yaml] [--dry-run] [--json]
                                 resume a tiled run from a phase (the earlier phases are not run again;
                                 --dry-run only checks feasibility; exit 0 ok, 1 run error or cancelled,
                                 2 usage, a Raw Stack run, or not feasible)
  export <in.fits> <out.png|.tif|.tiff|.jpg> [--stretch auto|linear|asinh|hms] [--bits 8|16] [--channel rgb|r|g|b|N] [--unlinked]
                                 the image as a picture, rows top-down (16-bit PNG/TIFF by default, JPEG 8-bit)
  serve [--host H] [--port P] [--runs-dir DIR] [--state-dir DIR] [--root DIR ...] [--token T] [--max-jobs N]
                                 the REST API and web UI (default 127.0.0.1:8080; a token is required off loopback)
  version                        print the version
  help                           this text`;


async function inspect(argv: string[]): Promise<number> {
  const { values, positionals } = parseArgs({ args: argv, options: { json: { type: 'boolean', default: false } }, allowPositionals: true });
  if (positionals.length !== 1) throw new UsageError('inspect takes exactly one FITS file');
  const file = positionals[0]!;
  const result = await inspectFile(file);
  process.stdout.write((values.json ? JSON.stringify(result.report) : renderInspectText(result)) + '\n');
  return 0;
}

export async function main(argv: string[]): Promise<number> {
  const [command, ...rest] = argv;
  // `skystack rawstack --help` (any command): the usage, not an unknown-option error.
  if (command !== undefined && command !== 'job' && rest.some((a) => a === '--help' || a === '-h')) {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  // On a terminal, device commands run in a child whose stderr drops Dawn's native warnings.
  if (wantsQuietChild(command)) return runInQuietChild(argv);
  try {
    switch (command) {
      case 'inspect':
        return await inspect(rest);
      case 'rawstack': {
        const { runRawStackCli } = await import('./rawstack.js');
        return await runRawStackCli(rest);
      }
      case 'tiled': {
        const { runTiledCli } = await import('./tiled.js');
        return await runTiledCli(rest);
      }
      case 'resume': {
        const { runResumeCli } = await import('./resume.js');
        return await runResumeCli(rest);
      }
      case 'export': {
        const { runExportCli } = await import('./export.js');
        return await runExportCli(rest);
      }
      case 'serve': {
        const { runServe } = await import('./serve.js');
        return await runServe(rest);
      }
      case 'job': {
        // internal: one job in a child process of the server
        const { runJobChild } = await import('../server/jobs/child-main.js');
        return await runJobChild(rest);
      }
      case 'demo': {
        const { runDemo } = await import('./demo.js');
        return await runDemo(rest);
      }
      case 'version':
      case '--version':
        process.stdout.write(`skystack ${SKYSTACK_VERSION}\n`);
        return 0;
      case undefined:
      case 'help':
      case '--help':
      case '-h':
        process.stdout.write(USAGE + '\n');
        return command === undefined ? 2 : 0;
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (e) {
    if (e instanceof UsageError || (e as NodeJS.ErrnoException)?.code?.startsWith?.('ERR_PARSE_ARGS')) {
      process.stderr.write(`skystack: ${(e as Error).message}\n${USAGE}\n`);
      return 2;
    }
    if (isFitsError(e)) {
      process.stderr.write(`skystack ${command}: ${e.message}\n`);
      return 1;
    }
    const err = e as Error;
    process.stderr.write(`skystack ${command}: INTERNAL: ${err?.message ?? String(e)}\n`);
    if (process.env.SKYSTACK_DEBUG) process.stderr.write(`${err?.stack ?? ''}\n`);
    return 1;
  }
}

