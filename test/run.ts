// Test entry point (`npm test`): runs every compiled `test/**/*.test.js` with uvu in one
// process and closes with the plain `N passed, N failed, N skipped` line CI reads.
// An optional argument filters test files by a regular expression on their path.

import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const here = dirname(fileURLToPath(import.meta.url));
const uvuBin = join(here, '..', '..', 'node_modules', 'uvu', 'bin.js');
const filter = process.argv[2];
const pattern = filter ? `${filter}.*\\.test\\.js$` : '\\.test\\.js$';

const child = spawnSync(process.execPath, [uvuBin, here, pattern, '-i', 'run\\.js'], {
  env: { ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k !== 'FORCE_COLOR')), NO_COLOR: '1' },
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'pipe'],
  maxBuffer: 256 * 1024 * 1024,
});
process.stdout.write(child.stdout ?? '');
process.stderr.write(child.stderr ?? '');

const count = (label: string) => Number(new RegExp(`${label}:\\s+(\\d+)`).exec(child.stdout ?? '')?.[1] ?? NaN);
const total = count('Total');
const passed = count('Passed');
const skipped = count('Skipped');
if (Number.isNaN(total) || Number.isNaN(passed)) {
  // uvu died before its summary (a test file threw at import): count that as one failure.
  console.log(`\n0 passed, 1 failed`);
  process.exit(1);
}
const failed = total - passed;
const ok = failed === 0 && child.status === 0;
console.log(`\n${passed} passed, ${ok ? failed : Math.max(failed, 1)} failed, ${Number.isNaN(skipped) ? 0 : skipped} skipped`);
process.exit(ok ? 0 : 1);
