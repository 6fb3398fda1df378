// Test entry point (`npm test`): runs every compiled `test/**/*.test.js` with uvu in one
// process, streaming its progress as it goes, and closes with the plain
// `N passed, N failed, N skipped` line CI reads.
// An optional argument filters test files by a regular expression on their path.

import { spawn } from 'node:child_process';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { DawnNoiseFilter } from '../src/server/jobs/dawn-noise.js';

const here = dirname(fileURLToPath(import.meta.url));
const uvuBin = join(here, '..', '..', 'node_modules', 'uvu', 'bin.js');
const filter = process.argv[2];
const pattern = filter ? `(?:${filter}).*\\.test\\.js$` : '\\.test\\.js$';

const child = spawn(process.execPath, [uvuBin, here, pattern, '-i', 'run\\.js', '--no-color'], { stdio: ['ignore', 'pipe', 'pipe'] });

// uvu's stdout is its progress (a line per suite) and summary: passed through as it comes, and
// kept for the summary counts. stderr goes through the Dawn filter line by line.
let stdoutText = '';
child.stdout.setEncoding('utf8');
child.stdout.on('data', (chunk: string) => {
  stdoutText += chunk;
  process.stdout.write(chunk);
});
// Dawn's expected adapter warnings are counted, not shown (the same filter as the job logs').
const noise = new DawnNoiseFilter();
const stderrLines = createInterface({ input: child.stderr });
stderrLines.on('line', (line) => {
  if (noise.keep(line)) process.stderr.write(line + '\n');
});

const [exitCode] = (await Promise.all([
  new Promise<number | null>((resolve) => child.on('close', (code) => resolve(code))),
  new Promise<void>((resolve) => stderrLines.on('close', () => resolve())),
])) as [number | null, void];
if (noise.hidden > 0) process.stderr.write(`(${noise.hidden} expected Dawn adapter warnings hidden)\n`);

const count = (label: string) => Number(new RegExp(`${label}:\\s+(\\d+)`).exec(stdoutText)?.[1] ?? NaN);
const total = count('Total');
const passed = count('Passed');
const skipped = count('Skipped');
if (Number.isNaN(total) || Number.isNaN(passed)) {
  // uvu died before its summary (a test file threw at import): count that as one failure.
  console.log(`\n0 passed, 1 failed`);
  process.exit(1);
}
const failed = total - passed;
const ok = failed === 0 && exitCode === 0;
console.log(`\n${passed} passed, ${ok ? failed : Math.max(failed, 1)} failed, ${Number.isNaN(skipped) ? 0 : skipped} skipped`);
process.exit(ok ? 0 : 1);
