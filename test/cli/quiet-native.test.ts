// Dawn's native warnings on a terminal: the filtering child's stream drops exactly Dawn's expected
// lines (and their trace), passes everything else, and passes a progress redraw (no newline yet)
// at once instead of holding it; the CLI run through the child ends as it would alone, with its
// exit code and without Dawn's lines.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile, spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { generateDataset } from '../../fixtures/generator/index.js';
import { NoiseStream, wantsAllocatorChild, wantsQuietChild } from '../../src/cli/quiet-native.js';
import { MALLOC_TUNING, needsAllocatorRelaunch, V8_TUNING_FLAG, withAllocatorTuning } from '../../src/cli/allocator-env.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

const DAWN = [
  "Warning: Couldn't load Vulkan: libvulkan.so.1: cannot open shared object file: No such file or directory",
  '    at operator() (/home/runner/work/node-webgpu/node-webgpu/third_party/dawn/src/dawn/native/vulkan/BackendVk.cpp:368)',
  '',
  'Warning: maxDynamicUniformBuffersPerPipelineLayout artificially reduced from 90 to 16 to fit dynamic offset allocation limit.',
  'Warning: maxDynamicStorageBuffersPerPipelineLayout artificially reduced from 80 to 16 to fit dynamic offset allocation limit.',
].join('\n');
const OURS = 'warning device_fallback: no hardware GPU\nWarning: a warning that is not Dawn\'s\n\r[####    ] 1/4 CALIBRATION\r[########] 2/4 STACKING\r\x1b[2KSTACKING: ok in 1.0 s\n';

test('NoiseStream: Dawn lines go, ours stay, however the text is cut into chunks', () => {
  const text = `${DAWN}\n${OURS}`;
  const random = seededRandom(5);
  for (let trial = 0; trial < 50; trial++) {
    const s = new NoiseStream();
    let out = '';
    for (let at = 0; at < text.length; ) {
      const n = 1 + Math.floor(random() * 40);
      out += s.push(text.slice(at, at + n));
      at += n;
    }
    out += s.end();
    assert.is(out, OURS, `trial ${trial}`);
    assert.is(s.filter.hidden, 3);
  }
});

test('NoiseStream: a progress redraw is passed at once, not held until its newline', () => {
  const s = new NoiseStream();
  assert.is(s.push(`${DAWN}\n`), '');
  assert.is(s.push('\r[##  ] 1/2 STACKING'), '\r[##  ] 1/2 STACKING');
  assert.is(s.push('\r[####] 2/2 REPORT'), '\r[####] 2/2 REPORT');
  assert.is(s.push('\n    indented text of ours\n'), '\n    indented text of ours\n');
  assert.is(s.push('Warn'), '', 'could still become a Dawn line');
  assert.is(s.push('ing: disk nearly full\n'), 'Warning: disk nearly full\n');
});

test('wantsQuietChild: device commands on a terminal only (or when asked), never inside the child', () => {
  assert.ok(wantsQuietChild('rawstack', {}, true));
  assert.ok(wantsQuietChild('demo', {}, true));
  assert.not.ok(wantsQuietChild('rawstack', {}, false), 'piped output stays as it is');
  assert.not.ok(wantsQuietChild('inspect', {}, true));
  assert.not.ok(wantsQuietChild('rawstack', { SKYSTACK_CLI_CHILD: '1' }, true));
  assert.not.ok(wantsQuietChild('rawstack', { SKYSTACK_NATIVE_WARNINGS: '1' }, true));
  assert.ok(wantsQuietChild('rawstack', { SKYSTACK_FILTER_NATIVE: '1' }, false));
});

test('allocator settings: added where missing on Linux, a user value wins, one relaunch at most', () => {
  const env = withAllocatorTuning({ PATH: '/bin', MALLOC_ARENA_MAX: '4' }, 'linux');
  assert.is(env.MALLOC_ARENA_MAX, '4', "the user's value stays");
  assert.is(env.MALLOC_MMAP_THRESHOLD_, MALLOC_TUNING.MALLOC_MMAP_THRESHOLD_);
  assert.is(env.GLIBC_TUNABLES, 'glibc.malloc.hugetlb=1', 'huge pages for the mmap\'d frame buffers');
  assert.is(withAllocatorTuning({ GLIBC_TUNABLES: 'glibc.cpu.x86_ibt=off' }, 'linux').GLIBC_TUNABLES, 'glibc.cpu.x86_ibt=off', "the user's tunables stay whole");
  assert.is(env.PATH, '/bin');
  assert.not.ok(needsAllocatorRelaunch(env, 'linux'), 'a child started with them does not relaunch');
  assert.equal(withAllocatorTuning({ PATH: '/bin' }, 'darwin'), { PATH: '/bin' });
  assert.ok(needsAllocatorRelaunch({}, 'linux'));
  assert.not.ok(needsAllocatorRelaunch({}, 'darwin'));
  // Every name set by hand: nothing to add, no child; without the V8 flag, a child that has it.
  assert.not.ok(needsAllocatorRelaunch({ ...MALLOC_TUNING, NODE_OPTIONS: V8_TUNING_FLAG }, 'linux'));
  assert.ok(needsAllocatorRelaunch({ ...MALLOC_TUNING }, 'linux'));
  assert.not.ok(needsAllocatorRelaunch({ ...MALLOC_TUNING, NODE_OPTIONS: '--max-semi-space-size=8' }, 'linux'), "the user's own young-generation size wins");
  assert.ok(wantsAllocatorChild('rawstack', {}, 'linux'));
  assert.ok(wantsAllocatorChild('tiled', {}, 'linux'));
  assert.not.ok(wantsAllocatorChild('serve', {}, 'linux'), "serve's job children get them from the job manager");
  assert.not.ok(wantsAllocatorChild('inspect', {}, 'linux'));
  assert.not.ok(wantsAllocatorChild('rawstack', { SKYSTACK_CLI_CHILD: '1' }, 'linux'));
});

test('V8 setting: NODE_OPTIONS gets --max-semi-space-size=1 appended, a user size is kept', () => {
  assert.is(withAllocatorTuning({}, 'linux').NODE_OPTIONS, V8_TUNING_FLAG);
  assert.is(withAllocatorTuning({ NODE_OPTIONS: '--enable-source-maps' }, 'linux').NODE_OPTIONS, `--enable-source-maps ${V8_TUNING_FLAG}`);
  assert.is(withAllocatorTuning({ NODE_OPTIONS: '--max-semi-space-size=4 --trace-gc' }, 'linux').NODE_OPTIONS, '--max-semi-space-size=4 --trace-gc');
  assert.is(withAllocatorTuning({ NODE_OPTIONS: '  ' }, 'linux').NODE_OPTIONS, V8_TUNING_FLAG);
  assert.is(withAllocatorTuning({ NODE_OPTIONS: '--x' }, 'darwin').NODE_OPTIONS, '--x', 'off Linux nothing changes');
});

test('skystack rawstack through the filtering child: run ok, exit 0, no Dawn line on stderr; a usage error keeps exit 2', async () => {
  const cli = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'cli.js');
  await withTempDir('cli-quiet', async (dir) => {
    await generateDataset({ out: join(dir, 'data'), kind: 'osc', pattern: 'RGGB', frames: 8, width: 192, height: 128, seed: 1010, calibration: false, badFrames: 'none' });
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [cli, ...args], { env: { ...process.env, SKYSTACK_FILTER_NATIVE: '1' }, timeout: 120_000 }, (err, stdout, stderr) => {
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        });
      });
    const ok = await run(['rawstack', '--lights', join(dir, 'data', 'lights'), '--runs-dir', join(dir, 'runs'), '--set', 'postprocess.astrometry=false', '--json']);
    assert.is(ok.code, 0, ok.stderr);
    assert.match(ok.stderr, /STACKING: ok/);
    assert.match(ok.stderr, /\r\[#+ *\] \d+\/\d+ /, 'the child drew the terminal progress bar');
    assert.not.match(ok.stderr, /\] \d+\.\d+\//, 'whole step counts on the bar');
    assert.not.match(ok.stderr, /artificially reduced|Couldn't load Vulkan|at operator\(\)/);
    assert.is((JSON.parse(ok.stdout.trim().split('\n').pop()!) as { status: string }).status, 'ok');
    const usage = await run(['rawstack', '--no-such-option']);
    assert.is(usage.code, 2);
  });
});

test('skystack rawstack piped, started without the allocator settings: runs in a child that has them, same output and exit codes', async () => {
  const cli = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'cli.js');
  await withTempDir('cli-alloc', async (dir) => {
    await generateDataset({ out: join(dir, 'data'), kind: 'mono', frames: 6, width: 160, height: 120, seed: 1011, calibration: false, badFrames: 'none' });
    const { MALLOC_ARENA_MAX: _a, MALLOC_MMAP_THRESHOLD_: _m, GLIBC_TUNABLES: _g, SKYSTACK_ALLOCATOR_SET: _s, SKYSTACK_CLI_CHILD: _c, ...bare } = process.env;
    const run = (args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(process.execPath, [cli, ...args], { env: { ...bare, SKYSTACK_DEVICE: 'cpu' }, timeout: 120_000 }, (err, stdout, stderr) => {
          resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
        });
      });
    const ok = await run(['rawstack', '--lights', join(dir, 'data', 'lights'), '--runs-dir', join(dir, 'runs'), '--set', 'postprocess.astrometry=false', '--set', 'quality_filter.min_stars=3', '--json']);
    assert.is(ok.code, 0, ok.stderr);
    assert.match(ok.stderr, /STACKING: ok/);
    assert.is((JSON.parse(ok.stdout.trim().split('\n').pop()!) as { status: string }).status, 'ok');
    assert.is((await run(['rawstack', '--no-such-option'])).code, 2);

    // The CLI killed outright (SIGKILL: nothing to pass on): its child notices it was orphaned
    // and cancels its run instead of running on unwatched.
    await generateDataset({ out: join(dir, 'long'), kind: 'mono', frames: 24, width: 640, height: 480, seed: 1012, calibration: false, badFrames: 'none' });
    const parent = spawn(process.execPath, [cli, 'rawstack', '--lights', join(dir, 'long', 'lights'), '--runs-dir', join(dir, 'runs-kill'), '--set', 'postprocess.astrometry=false'], { env: { ...bare, SKYSTACK_DEVICE: 'cpu' }, stdio: ['ignore', 'pipe', 'pipe'] });
    let text = '';
    const started = Date.now();
    const closed = new Promise<number>((resolve) => {
      parent.stderr.setEncoding('utf8');
      parent.stderr.on('data', (c: string) => {
        text += c;
        if (/INPUT_SCAN: ok/.test(text) && parent.exitCode === null && !parent.killed) parent.kill('SIGKILL');
      });
      // The pipe closes when its last writer, the child, has exited.
      parent.stderr.on('close', () => resolve(Date.now() - started));
    });
    const ms = await closed;
    const runDir = join(dir, 'runs-kill', (await readdir(join(dir, 'runs-kill')))[0]!);
    const record = JSON.parse(await readFile(join(runDir, 'run.json'), 'utf8')) as { status: string };
    assert.is(record.status, 'cancelled', `${text.slice(-600)} (${ms} ms)`);
  });
});

test.run();
