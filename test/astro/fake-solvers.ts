// Stand-in solver executables for tests that must not depend on a real solver install: small
// /bin/sh scripts that log their arguments and then behave as asked (solve with a recorded
// .wcs, find nothing, crash, or hang), plus a data folder holding a dummy index / database file
// so the solver lookup accepts them.
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';

export type FakeBehaviour = 'nosolution' | 'crash' | 'hang';

export interface FakeInstall {
  bin: string;
  dataDir: string;
  /** Each run appends one line: its pid, then its arguments separated by spaces. */
  argsLog: string;
}

async function script(file: string, body: string): Promise<void> {
  await writeFile(file, `#!/bin/sh\n${body}\n`);
  await chmod(file, 0o755);
}

/** A fake `solve-field`: logs "$$ $@", then behaves as `behaviour` says. */
export async function fakeSolveField(dir: string, behaviour: FakeBehaviour): Promise<FakeInstall> {
  const dataDir = join(dir, 'an-data');
  await mkdir(dataDir, { recursive: true });
  await writeFile(join(dataDir, 'index-fake-10.fits'), 'not a real index');
  const argsLog = join(dir, 'solve-field.args');
  const bin = join(dir, 'solve-field');
  const act = behaviour === 'hang' ? 'sleep 30 & wait' : behaviour === 'crash' ? 'echo "segfault" >&2; exit 3' : 'echo "Did not solve (or no WCS file was written)."; exit 0';
  await script(bin, `echo "$$ $*" >> '${argsLog}'\n${act}`);
  return { bin, dataDir, argsLog };
}

/** A fake `astap_cli` that "solves" by copying `recordedWcs` to <-o base>.wcs and writing a PLTSOLVD=T .ini. */
export async function fakeAstap(dir: string, recordedWcs: string): Promise<FakeInstall> {
  const dataDir = join(dir, 'astap-data');
  await mkdir(dataDir, { recursive: true });
  await writeFile(join(dataDir, 'd50_0101.1476'), 'not a real database');
  const argsLog = join(dir, 'astap.args');
  const bin = join(dir, 'astap_cli');
  await script(
    bin,
    [
      `echo "$$ $*" >> '${argsLog}'`,
      'out=""',
      'while [ $# -gt 0 ]; do if [ "$1" = "-o" ]; then out="$2"; fi; shift; done',
      `cp '${recordedWcs}' "$out.wcs"`,
      'printf "PLTSOLVD=T\\n" > "$out.ini"',
      'echo "Solution found: 05: 35  12.0 -05d 24  00"',
      'exit 0',
    ].join('\n'),
  );
  return { bin, dataDir, argsLog };
}
