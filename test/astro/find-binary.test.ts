// findBinary: a configured path must be executable itself; a configured bare name (the server
// accepts `solve-field`, `astap`, `astap_cli`) is looked up on PATH, like the defaults.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { chmod, writeFile } from 'node:fs/promises';
import { delimiter, join } from 'node:path';
import { findBinary } from '../../src/astro/find-binary.js';
import { withTempDir } from '../helpers/tmp.js';

test('configured bare names are found on PATH, configured paths are taken as they are', async () => {
  await withTempDir('find-binary', async (dir) => {
    const exe = join(dir, 'fake-solver');
    await writeFile(exe, '#!/bin/sh\nexit 0\n');
    await chmod(exe, 0o755);
    await writeFile(join(dir, 'not-executable'), 'x');
    const saved = process.env.PATH;
    process.env.PATH = `${dir}${delimiter}${saved ?? ''}`;
    try {
      assert.is(await findBinary('fake-solver', ['solve-field']), exe);
      assert.is(await findBinary('', ['no-such-binary-here', 'fake-solver']), exe);
      assert.is(await findBinary(exe, []), exe);
      assert.is(await findBinary('not-executable', []), null);
      assert.is(await findBinary(join(dir, 'missing'), ['fake-solver']), null, 'a configured path is not replaced by a default');
    } finally {
      process.env.PATH = saved;
    }
  });
});

test.run();
