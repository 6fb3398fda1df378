// The run folder's lock (src/pipeline/run-lock.ts): one process at a time. A held lock refuses a
// second taker with RUN_BUSY naming the holder; release frees it (and only its own file); a lock
// left by a process that is gone (same host, dead pid) is taken over; one from another host counts
// as held; and a resume refused for the lock leaves the folder as it was (a leftover
// `.resume_previous/` is not restored under a running resume). A whole run takes and frees it. A
// folder that is not a run (missing, or without run.json) is refused as such before any lock.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { mkdir, readdir, readFile, writeFile } from 'node:fs/promises';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { acquireRunLock, RunBusy, runLockHolder } from '../../src/pipeline/run-lock.js';
import { ResumeRefused, resumeTiled } from '../../src/pipeline/tiled/resume.js';
import { RUN_LOCK } from '../../src/shared/run-layout.js';
import { withTempDir } from '../helpers/tmp.js';

async function busy(p: Promise<unknown>): Promise<RunBusy> {
  try {
    await p;
  } catch (e) {
    if (e instanceof RunBusy) return e;
    throw e;
  }
  throw new Error('not refused');
}

/** The pid of a process that has ended. */
function deadPid(): number {
  const r = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
  return Number(r.stdout);
}

test('run lock: held refuses with the holder, release frees, stale taken over, foreign host held', async () => {
  await withTempDir('runlock', async (dir) => {
    const lock = await acquireRunLock(dir, 'run');
    const holder = await runLockHolder(dir);
    assert.equal([holder?.pid, holder?.host, holder?.purpose], [process.pid, hostname(), 'run']);
    const refused = await busy(acquireRunLock(dir, 'resume'));
    assert.is(refused.code, 'RUN_BUSY');
    assert.is(refused.holder.pid, process.pid);
    assert.match(refused.message, new RegExp(`pid ${process.pid}`));
    assert.ok(refused.message.includes(join(dir, RUN_LOCK)), 'the message names the file');
    await lock.release();
    assert.is(await runLockHolder(dir), null);
    assert.not.ok((await readdir(dir)).includes(RUN_LOCK));

    // A killed run's lock (same host, process gone) is stale: not a holder, taken over.
    const dead = deadPid();
    assert.ok(dead > 0);
    await writeFile(join(dir, RUN_LOCK), JSON.stringify({ pid: dead, host: hostname(), purpose: 'resume', since: 'x' }));
    assert.is(await runLockHolder(dir), null);
    const taken = await acquireRunLock(dir, 'resume');
    assert.is(JSON.parse(await readFile(join(dir, RUN_LOCK), 'utf8')).pid, process.pid);
    // Someone replaced the file meanwhile (a takeover): release leaves their lock alone.
    await writeFile(join(dir, RUN_LOCK), JSON.stringify({ pid: process.ppid, host: hostname(), purpose: 'run', since: 'y' }));
    await taken.release();
    assert.is((await runLockHolder(dir))?.pid, process.ppid);

    // Another host's lock cannot be checked: held, whatever the pid.
    await writeFile(join(dir, RUN_LOCK), JSON.stringify({ pid: dead, host: `${hostname()}-elsewhere`, purpose: 'run', since: 'z' }));
    assert.is((await runLockHolder(dir))?.host, `${hostname()}-elsewhere`);
    assert.is((await busy(acquireRunLock(dir, 'run'))).holder.host, `${hostname()}-elsewhere`);

    // Unreadable content is not a holder and does not block for good.
    await writeFile(join(dir, RUN_LOCK), 'not json');
    assert.is(await runLockHolder(dir), null);
    const after = await acquireRunLock(dir, 'run');
    await after.release();
  });
});

test('a resume refused for the lock touches nothing: a leftover set-aside folder stays where it is', async () => {
  await withTempDir('runlock-resume', async (dir) => {
    await mkdir(join(dir, '.resume_previous', 'outputs'), { recursive: true });
    await writeFile(join(dir, '.resume_previous', 'outputs', 'stacked.fits'), 'old');
    await writeFile(join(dir, '.resume_previous', '.aside.json'), JSON.stringify({ moved: ['outputs/stacked.fits'], copied: [] }));
    const before = await readdir(join(dir, '.resume_previous', 'outputs'));
    await writeFile(join(dir, RUN_LOCK), JSON.stringify({ pid: process.ppid, host: hostname(), purpose: 'resume', since: 'now' }));
    const e = await busy(resumeTiled(dir, 'STACKING'));
    assert.is(e.holder.pid, process.ppid);
    assert.equal(await readdir(join(dir, '.resume_previous', 'outputs')), before);
    assert.not.ok((await readdir(dir)).includes('outputs'), 'nothing restored');
  });
});

test('a resume of a folder that is not a run (missing, or without run.json) is refused as such, before any lock', async () => {
  await withTempDir('runlock-notarun', async (dir) => {
    for (const target of [join(dir, 'missing'), dir]) {
      try {
        await resumeTiled(target, 'STACKING');
        assert.unreachable('resumed');
      } catch (e) {
        assert.instance(e, ResumeRefused);
        assert.is((e as ResumeRefused).code, 'RESUME_NOT_SUPPORTED');
        assert.match((e as Error).message, /is not a run folder \(no run\.json there\)/);
      }
    }
    assert.equal(await readdir(dir), [], 'no lock left behind');
  });
});

test.run();
