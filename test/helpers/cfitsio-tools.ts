// cfitsio's command-line tools (Debian libcfitsio-bin: fpack, funpack) for tests that need files
// written by a real tile-compression writer. Tests skip, printing this reason, when they are missing.
import { spawnSync } from 'node:child_process';

function probe(): string | null {
  for (const tool of ['fpack', 'funpack']) {
    const r = spawnSync(tool, ['-V'], { encoding: 'utf8' });
    if (r.error || r.status !== 0) return `${tool} not found (apt-get install libcfitsio-bin)`;
  }
  return null;
}

/** Why the cfitsio tools cannot be used here, or null when they can. */
export const cfitsioMissing: string | null = probe();

function run(tool: string, args: string[]): void {
  const r = spawnSync(tool, args, { encoding: 'utf8' });
  if (r.error || r.status !== 0) throw new Error(`${tool} ${args.join(' ')} failed: ${r.error?.message ?? r.stderr}`);
}

/** `fpack [options] -O out in`: compresses `input` into `out` (tile compression, an .fz file). */
export function fpack(input: string, out: string, options: string[] = []): string {
  run('fpack', [...options, '-O', out, input]);
  return out;
}

/** `funpack -O out in`: cfitsio's own decompression of `input`, as a plain FITS file. */
export function funpack(input: string, out: string): string {
  run('funpack', ['-O', out, input]);
  return out;
}
