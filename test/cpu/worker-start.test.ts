// startWorker (src/cpu/worker-start.ts): a worker starts whatever flags the parent was started
// with. Node refuses V8 and process-wide flags in a worker's execArgv; they are learned from the
// refusal and dropped, and the flags a worker accepts still reach it.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker } from 'node:worker_threads';
import { refusedFlags, startWorker, workerExecArgv } from '../../src/cpu/worker-start.js';

test('workerExecArgv drops what a file entry refuses: -e/-p with their code, --input-type', () => {
  assert.equal(workerExecArgv(['--enable-source-maps', '--input-type=module', '-e', 'code', '--cpu-prof']), ['--enable-source-maps', '--cpu-prof']);
  assert.equal(workerExecArgv(['-p', '1+1', '--eval=x', '--print=y']), []);
});

test('refusedFlags reads the flag names of the error Node throws', () => {
  let message = '';
  try {
    new Worker('0', { eval: true, execArgv: ['--max-old-space-size=64', '--title=x'] });
  } catch (e) {
    assert.is((e as { code?: string }).code, 'ERR_WORKER_INVALID_EXEC_ARGV');
    message = (e as Error).message;
  }
  assert.equal(refusedFlags(message).sort(), ['--max-old-space-size', '--title']);
  assert.equal(refusedFlags('something else entirely'), []);
});

test('startWorker starts under refused flags and passes on the accepted ones', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'skystack-worker-start-'));
  try {
    const file = join(dir, 'echo.mjs');
    await writeFile(file, "import { parentPort } from 'node:worker_threads';\nparentPort.postMessage(process.execArgv);\n");
    const argv = ['--max-old-space-size=512', '--stack-size', '2000', '--enable-source-maps', '--no-flush-bytecode'];
    const w = startWorker(pathToFileURL(file), {}, argv);
    const seen = await new Promise<string[]>((resolve, reject) => {
      w.once('message', resolve);
      w.once('error', reject);
    });
    await w.terminate();
    assert.equal(seen, ['--enable-source-maps']);
    // Learned for the process: the next filter drops them without a refusal (the value of a
    // separate-value flag with it).
    assert.equal(workerExecArgv(argv), ['--enable-source-maps']);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});

test('the kernel pool runs in a process started with V8 flags (they used to fail every worker)', () => {
  const url = new URL('../../src/cpu/debayer.js', import.meta.url).href;
  const script = `
    const { debayerBilinearParallel } = await import(${JSON.stringify(url)});
    const input = new Float32Array(64 * 64).fill(1);
    const p = await debayerBilinearParallel(input, { width: 64, height: 64, pattern: 'RGGB' });
    console.log('done', p.g[100]);
  `;
  const r = spawnSync(process.execPath, ['--max-old-space-size=1024', '--stack-size=2000', '--input-type=module', '-e', script], { encoding: 'utf8', timeout: 30_000 });
  assert.is(r.status, 0, r.stderr);
  assert.is(r.stdout.trim(), 'done 1');
});

test.run();
