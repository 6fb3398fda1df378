// `skystack rawstack` takes run-queue entries from a YAML (or JSON) config file and from
// --queue FILTER=DIR flags. Cheap runs: the active entry's folder holds no matching file, so
// INPUT_SCAN ends the run early, and run_queue.json shows the entries the CLI passed on.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseQueueFlag, runRawStackCli } from '../../src/cli/rawstack.js';
import { UsageError } from '../../src/cli/usage.js';
import { withTempDir } from '../helpers/tmp.js';

async function queueOf(runs: string): Promise<{ filter: string; label: string | null; active: boolean; status: string; input_dir: string }[]> {
  const [run] = await readdir(runs);
  return JSON.parse(await readFile(join(runs, run!, 'artifacts/preprocess/run_queue.json'), 'utf8')).entries;
}

test('rawstack CLI: queue entries from a YAML config', async () => {
  await withTempDir('cli-queue', async (dir) => {
    await mkdir(join(dir, 'empty'));
    const cfg = join(dir, 'cfg.yaml');
    await writeFile(
      cfg,
      `queue:\n  - filter: lum\n    input_dir: ${join(dir, 'empty')}\n    label: night 1\n  - filter: Ha\n    input_dir: ${join(dir, 'nowhere')}\n    active: false\npostprocess:\n  astrometry: false\n`,
    );
    const write = process.stderr.write;
    process.stderr.write = () => true;
    let code: number;
    try {
      code = await runRawStackCli(['--config', cfg, '--runs-dir', join(dir, 'runs')]);
    } finally {
      process.stderr.write = write;
    }
    assert.is(code, 1, 'no lights: the run ends in error');
    const q = await queueOf(join(dir, 'runs'));
    assert.equal(q.map((e) => [e.filter, e.label, e.active, e.status]), [['L', 'night 1', true, 'scanned'], ['Ha', null, false, 'inactive']]);
  });
});

test('rawstack CLI: --queue FILTER=DIR replaces the config queue; bad flags are usage errors', async () => {
  assert.equal(parseQueueFlag('R=/data/red'), { filter: 'R', input_dir: '/data/red' });
  assert.throws(() => parseQueueFlag('/data/red'), (e: unknown) => e instanceof UsageError);
  assert.throws(() => parseQueueFlag('R='), (e: unknown) => e instanceof UsageError);
  await withTempDir('cli-queue-flag', async (dir) => {
    await mkdir(join(dir, 'r'));
    const cfg = join(dir, 'cfg.json');
    await writeFile(cfg, JSON.stringify({ queue: [{ filter: 'L', input_dir: '/elsewhere' }] }));
    const write = process.stderr.write;
    process.stderr.write = () => true;
    try {
      await runRawStackCli(['--config', cfg, '--queue', `R=${join(dir, 'r')}`, '--runs-dir', join(dir, 'runs')]);
    } finally {
      process.stderr.write = write;
    }
    const q = await queueOf(join(dir, 'runs'));
    assert.equal(q.map((e) => [e.filter, e.input_dir]), [['R', join(dir, 'r')]]);
  });
});

test.run();
