// Test entry point (`npm test`): runs every compiled `test/**/*.test.js` with uvu in one
// process and closes with the plain `N passed, N failed, N skipped` line CI reads.
// An optional argument filters test files by a regular expression on their path.

import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

// Dawn prints these from native code on every adapter request (DESIGN §4); they are expected.
const DAWN_NOISE = /^Warning: (maxDynamic(Uniform|Storage)BuffersPerPipelineLayout artificially reduced|Couldn't load Vulkan)/;

function withoutDawnNoise(text: string): string {
  const kept: string[] = [];
  let hidden = 0;
  let skipTrace = false;
  for (const line of text.split('\n')) {
    if (DAWN_NOISE.test(line)) {
      hidden++;
      skipTrace = true;
      continue;
    }
    if (skipTrace && (/^\s+at operator\(\)/.test(line) || line.trim() === '')) continue;
    skipTrace = false;
    kept.push(line);
  }
  if (hidden > 0) kept.push(`(${hidden} expected Dawn adapter warnings hidden)`);
  return kept.join('\n') + '\n';
}

const here = dirname(fileURLToPath(import.meta.url));
const uvuBin = join(here, '..', '..', 'node_modules', 'uvu', 'bin.js');
const filter = process.argv[2];
const pattern = filter ? `(?:${filter}).*\\.test\\.js$` : '\\.test\\.js$';

const child = spawnSync(process.execPath, [uvuBin, here, pattern, '-i', 'run\\.js', '--no-color'], {
  encoding: 'utf8',
  stdio: ['ignore', 'pipe', 'pipe'],
  maxBuffer: 256 * 1024 * 1024,
});
process.stdout.write(child.stdout ?? '');
process.stderr.write(withoutDawnNoise(child.stderr ?? ''));

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
