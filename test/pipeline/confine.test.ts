// Read confinement of frame scans (src/pipeline/stages/scan/confine.ts): under a confinement, entries that
// resolve outside the roots (or into a denied folder) are left out exactly like dangling links;
// links inside the roots stay; the process-wide setting applies when a scan passes none.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FitsHeader, writeFits } from '../../src/fits/index.js';
import { setReadConfinement } from '../../src/pipeline/stages/scan/confine.js';
import { scanFolder } from '../../src/pipeline/stages/scan/scan.js';
import { withTempDir } from '../helpers/tmp.js';

async function frame(file: string): Promise<void> {
  await writeFits(file, { width: 4, height: 3, planes: 1, data: new Uint16Array(12) }, { header: new FitsHeader() });
}

test('confined scans leave out links to outside, denied and missing targets alike', async () => {
  await withTempDir('confine', async (dir) => {
    const root = join(dir, 'root');
    const lights = join(root, 'lights');
    await mkdir(join(root, '.state'), { recursive: true });
    await mkdir(lights, { recursive: true });
    await mkdir(join(dir, 'outside'));
    await frame(join(lights, 'a.fits'));
    await frame(join(dir, 'outside', 'x.fits'));
    await frame(join(root, '.state', 'y.fits'));
    await writeFile(join(dir, 'outside', 'text.fits'), 'not fits');
    await symlink(join(dir, 'outside', 'x.fits'), join(lights, 'b_out.fits'));
    await symlink(join(dir, 'outside', 'nothing.fits'), join(lights, 'c_missing.fits'));
    await symlink(join(root, '.state', 'y.fits'), join(lights, 'd_denied.fits'));
    await symlink(join(dir, 'outside', 'text.fits'), join(lights, 'e_text.fits'));
    await symlink(join(lights, 'a.fits'), join(lights, 'f_inside.fits'));
    const confine = { roots: [root], denied: [join(root, '.state')] };
    const names = async (o: Parameters<typeof scanFolder>[1]) => (await scanFolder(lights, o)).map((f) => `${f.name}:${f.ok ? 'ok' : f.code}`);
    assert.equal(await names({ pattern: '*.fits', confine }), ['a.fits:ok', 'f_inside.fits:ok']);
    // without a confinement every entry is read (the CLI): the dangling link is unreadable
    const open = await names({ pattern: '*.fits', confine: null });
    assert.equal(open.length, 6);
    assert.ok(open.includes('b_out.fits:ok') && open.some((n) => n.startsWith('c_missing.fits:') && !n.endsWith(':ok')));
    // a folder outside the roots holds nothing under the confinement
    assert.equal(await names({ pattern: '*.fits', confine: { roots: [join(dir, 'elsewhere')], denied: [] } }), []);
    // the process-wide confinement (set by a job child) applies when a scan passes none
    setReadConfinement(confine);
    try {
      assert.equal(await names({ pattern: '*.fits' }), ['a.fits:ok', 'f_inside.fits:ok']);
    } finally {
      setReadConfinement(null);
    }
  });
});

test.run();
