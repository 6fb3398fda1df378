// Image export (src/viewer/export.ts, `skystack export`): orientation (FITS rows bottom-up unless
// ROWORDER = 'TOP-DOWN'; pictures top-down) checked on an asymmetric image, bit depth and exact
// sample values read back with decoders that share nothing with the encoder (fast-png for PNG,
// the `tiff` package for TIFF; sharp only for JPEG's size), channel choice, the HMS look (the
// run's recipe applied to HMS's input reproduces the HMS output), and the command's exit codes
// and messages.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { decode as decodePng } from 'fast-png';
import sharp from 'sharp';
import { decode as decodeTiff } from 'tiff';
import { FitsHeader, readFitsImage, writeFits } from '../../src/fits/index.js';
import { failed } from '../../src/pipeline/phase.js';
import { bgePhase } from '../../src/pipeline/rawstack/phases/bge.js';
import { hmsPhase } from '../../src/pipeline/rawstack/phases/hms.js';
import { encodeImage, ExportError, formatOf, parseChannel, renderFits } from '../../src/viewer/export.js';
import { applyRecipe, hmsSettings, recipeFromDiagnostics } from '../../src/viewer/hms-look.js';
import { config, runOn, synthRgb } from '../pipeline/postprocess-helpers.js';
import { withTempDir } from '../helpers/tmp.js';

const cli = fileURLToPath(new URL('../../src/cli.js', import.meta.url));
const run = (...args: string[]) => spawnSync(process.execPath, [cli, ...args], { encoding: 'utf8' });

const W = 7;
const H = 4;
/** Planar RGB where value = 100·plane + 10·y + x (+1000 so all are positive): no symmetry. */
function asymmetric(): Float32Array {
  const d = new Float32Array(3 * W * H);
  for (let p = 0; p < 3; p++) for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) d[(p * H + y) * W + x] = 1000 + 100 * p + 10 * y + x;
  return d;
}

async function writeAsym(file: string, order: string | null): Promise<Float32Array> {
  const data = asymmetric();
  const header = new FitsHeader();
  if (order) header.set('ROWORDER', order);
  await writeFits(file, { width: W, height: H, planes: 3, data }, { header });
  return data;
}

/** The linear stretch, linked: one range over all channels. */
const linear16 = (v: number, lo: number, hi: number) => Math.round((65535 * (v - lo)) / (hi - lo));

for (const order of [null, 'TOP-DOWN'] as const) {
  test(`16-bit PNG and TIFF, linear: exact values, picture row 0 = ${order ? 'FITS row 0 (ROWORDER TOP-DOWN)' : 'the last FITS row (no ROWORDER: bottom-up)'}`, async () => {
    await withTempDir('export-orient', async (dir) => {
      const file = join(dir, 'a.fits');
      const data = await writeAsym(file, order);
      const lo = 1000;
      const hi = 1000 + 200 + 30 + 6;
      const img = await renderFits(file, { stretch: 'linear', bits: 16 });
      assert.is(img.flipped, order === null);
      const png = decodePng(await encodeImage(img, 'png'));
      assert.equal([png.width, png.height, png.depth, png.channels], [W, H, 16, 3]);
      const [tif] = decodeTiff(await encodeImage(img, 'tiff'));
      assert.equal([tif!.width, tif!.height, tif!.bitsPerSample, tif!.samplesPerPixel], [W, H, 16, 3]);
      for (let y = 0; y < H; y++) {
        const fy = order === 'TOP-DOWN' ? y : H - 1 - y;
        for (let x = 0; x < W; x++) {
          for (let c = 0; c < 3; c++) {
            const want = linear16(data[(c * H + fy) * W + x]!, lo, hi);
            assert.is(png.data[(y * W + x) * 3 + c], want, `png (${x}, ${y}) c${c}`);
            assert.is(tif!.data[(y * W + x) * 3 + c], want, `tiff (${x}, ${y}) c${c}`);
          }
        }
      }
    });
  });
}

test('8-bit PNG, one channel as greyscale 16-bit TIFF, JPEG keeps size and orientation', async () => {
  await withTempDir('export-bits', async (dir) => {
    const file = join(dir, 'a.fits');
    const data = await writeAsym(file, null);
    const png8 = decodePng(await encodeImage(await renderFits(file, { stretch: 'linear', bits: 8 }), 'png'));
    assert.equal([png8.depth, png8.channels], [8, 3]);
    // Top-left of the picture = FITS (0, H-1), plane 0; bottom-right = FITS (W-1, 0), plane 2.
    assert.is(png8.data[0], Math.round((255 * (1000 + 30 - 1000)) / 236));
    assert.is(png8.data[((H - 1) * W + W - 1) * 3 + 2], Math.round((255 * (1200 + 6 - 1000)) / 236));
    const g = await renderFits(file, { stretch: 'linear', bits: 16, channel: parseChannel('g') });
    assert.is(g.channels, 1);
    const [tif] = decodeTiff(await encodeImage(g, 'tiff'));
    assert.equal([tif!.bitsPerSample, tif!.samplesPerPixel], [16, 1]);
    // One channel: its own range (1100 … 1136).
    assert.is(tif!.data[0], linear16(data[(1 * H + H - 1) * W]!, 1100, 1136));
    assert.is(tif!.data[W * H - 1], linear16(data[1 * H * W + W - 1]!, 1100, 1136));
    // JPEG: a picture whose top half is bright (FITS rows 2..3, bottom-up) and bottom half dark.
    const big = new Float32Array(64 * 64).map((_, i) => (Math.floor(i / 64) >= 32 ? 1 : 0));
    const jfile = join(dir, 'half.fits');
    await writeFits(jfile, { width: 64, height: 64, data: big });
    const jpg = await encodeImage(await renderFits(jfile, { stretch: 'linear', bits: 8 }), 'jpeg');
    const raw = await sharp(jpg).raw().toBuffer({ resolveWithObject: true });
    assert.equal([raw.info.width, raw.info.height], [64, 64]);
    const px = (x: number, y: number) => raw.data[(y * 64 + x) * raw.info.channels]!;
    assert.ok(px(10, 5) > 240 && px(10, 60) < 15, `${px(10, 5)} ${px(10, 60)}`);
    try {
      await encodeImage(await renderFits(jfile, { stretch: 'linear', bits: 16 }), 'jpeg');
      assert.unreachable('16-bit JPEG');
    } catch (e) {
      assert.instance(e, ExportError);
      assert.is((e as ExportError).code, 'BAD_OPTION');
    }
  });
});

test('export errors: output formats, channels, an RGB choice on a mono image, a plane that does not exist', async () => {
  assert.is(formatOf('x.PNG'), 'png');
  assert.is(formatOf('x.tif'), 'tiff');
  assert.is(formatOf('x.tiff'), 'tiff');
  assert.is(formatOf('x.jpeg'), 'jpeg');
  assert.throws(() => formatOf('x.gif'), /unsupported output extension "\.gif"/);
  assert.throws(() => formatOf('x'), /\(none\)/);
  assert.equal([parseChannel('rgb'), parseChannel('R'), parseChannel('blue'), parseChannel('4')], ['rgb', 0, 2, 4]);
  assert.throws(() => parseChannel('alpha'), /--channel must be/);
  await withTempDir('export-errors', async (dir) => {
    const mono = join(dir, 'm.fits');
    await writeFits(mono, { width: 4, height: 4, data: new Float32Array(16) });
    for (const [o, code] of [
      [{ stretch: 'auto', bits: 16, channel: 'rgb' }, 'NOT_RGB'],
      [{ stretch: 'auto', bits: 16, channel: 1 }, 'CHANNEL_OUT_OF_RANGE'],
      [{ stretch: 'hms', bits: 16 }, 'NOT_RGB'],
      [{ stretch: 'auto', bits: 12 }, 'BAD_OPTION'],
      [{ stretch: 'linear', bits: 16, levels: [{ black: 1, mid: 0.5, white: 0, beta: 0 }] }, 'BAD_OPTION'],
    ] as const) {
      try {
        await renderFits(mono, o as never);
        assert.unreachable(code);
      } catch (e) {
        assert.instance(e, ExportError);
        assert.is((e as ExportError).code, code);
      }
    }
  });
});

test('HMS look: the run recipe applied to the HMS input reproduces stacked_rgb_hms (16-bit, ±1)', async () => {
  await withTempDir('export-hms', async (dir) => {
    const img = synthRgb({ seed: 9, width: 160, height: 120, gradient: 0, stars: 40 });
    const r = await runOn(img, config({ postprocess: { astrometry: false, pcc: false, bge: true, hypermetric_stretch: true }, hypermetric_stretch: { require_successful_pcc: false } }), dir, [bgePhase, hmsPhase], { pcc: failed('solver_failed', 'none') });
    assert.is(r.end('HYPERMETRIC_STRETCH')?.status, 'ok');
    const runDir = r.result.runDir;
    const pre = join(runDir, 'artifacts', 'preprocess');
    const cfgText = existsSync(join(pre, 'effective_config.json')) ? await readFile(join(pre, 'effective_config.json'), 'utf8') : null;
    const recipe = recipeFromDiagnostics(await readFile(join(pre, 'hms_diagnostics.json'), 'utf8'), hmsSettings(cfgText));
    assert.ok(recipe, 'a recipe from the diagnostics');
    assert.is(recipe!.source, 'run');
    // Float comparison first: the recipe on the BGE output against the phase's output.
    const bge = await readFitsImage(join(runDir, 'outputs', 'stacked_rgb_bge.fits'));
    const hms = await readFitsImage(join(runDir, 'outputs', 'stacked_rgb_hms.fits'));
    const n = bge.width * bge.height;
    const mine = applyRecipe(bge.data.subarray(0, n), bge.data.subarray(n, 2 * n), bge.data.subarray(2 * n), recipe!);
    let worst = 0;
    for (let c = 0; c < 3; c++) for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(mine[c]![i]! - hms.data[c * n + i]!));
    assert.ok(worst < 2e-5, `largest difference ${worst}`);
    // Through the export: both pictures agree to one step of 65535.
    const look = await renderFits(join(runDir, 'outputs', 'stacked_rgb_bge.fits'), { stretch: 'hms', bits: 16, hms: { recipe, settings: hmsSettings(cfgText) } });
    const asIs = await renderFits(join(runDir, 'outputs', 'stacked_rgb_hms.fits'), { stretch: 'hms', bits: 16 });
    assert.is(look.hms, 'run');
    assert.is(asIs.hms, 'as_is');
    let d = 0;
    for (let i = 0; i < look.data.length; i++) d = Math.max(d, Math.abs(look.data[i]! - asIs.data[i]!));
    assert.ok(d <= 1, `largest 16-bit difference ${d}`);
    // The command finds the run from the file's place in it.
    const out = join(dir, 'look.png');
    const res = run('export', join(runDir, 'outputs', 'stacked_rgb_bge.fits'), out, '--stretch', 'hms');
    assert.is(res.status, 0, res.stderr);
    assert.match(res.stdout, /the run's HMS solution/);
    const back = decodePng(await readFile(out));
    for (let i = 0; i < back.data.length; i += 997) assert.ok(Math.abs(back.data[i]! - look.data[i]!) <= 1);
  });
});

test('skystack export: exit 0 and the file; 1 for a missing or non-FITS input; 2 for usage errors', async () => {
  await withTempDir('export-cli', async (dir) => {
    const file = join(dir, 'a.fits');
    await writeAsym(file, null);
    const ok = run('export', file, join(dir, 'a.tif'), '--stretch', 'linear', '--bits', '16');
    assert.is(ok.status, 0, ok.stderr);
    assert.match(ok.stdout, /7×4 RGB, 16-bit TIFF, stretch linear; FITS rows flipped/);
    assert.ok(existsSync(join(dir, 'a.tif')));
    const [tif] = decodeTiff(await readFile(join(dir, 'a.tif')));
    assert.is(tif!.data[0], linear16(1030, 1000, 1236));
    const grey = run('export', file, join(dir, 'b.png'), '--channel', 'b', '--bits', '8');
    assert.is(grey.status, 0, grey.stderr);
    assert.is(decodePng(await readFile(join(dir, 'b.png'))).channels, 1);
    const cases: [string[], number, RegExp][] = [
      [[join(dir, 'missing.fits'), join(dir, 'x.png')], 1, /FITS_NOT_FOUND/],
      [[join(dir, 'notfits.fits'), join(dir, 'x.png')], 1, /FITS_NOT_FITS/],
      [[file, join(dir, 'x.gif')], 2, /unsupported output extension "\.gif"/],
      [[file, join(dir, 'x.png'), '--bits', '12'], 2, /--bits must be 8 or 16/],
      [[file, join(dir, 'x.png'), '--stretch', 'log'], 2, /--stretch must be one of auto, linear, asinh, hms/],
      [[file, join(dir, 'x.png'), '--channel', 'alpha'], 2, /--channel must be rgb, r, g, b or a plane number/],
      [[file, join(dir, 'x.jpg'), '--bits', '16'], 2, /JPEG holds 8 bits/],
      [[file, join(dir, 'x.png'), '--channel', '5'], 1, /CHANNEL_OUT_OF_RANGE: plane 5 does not exist/],
      [[file, join(dir, 'x.png'), '--frobnicate'], 2, /Unknown option '--frobnicate'/],
      [[file], 2, /export takes an input FITS file and an output file/],
      [[file, join(dir, 'no', 'such', 'x.png')], 1, /cannot write/],
    ];
    await writeFile(join(dir, 'notfits.fits'), 'hello, not a FITS file\n');
    for (const [args, code, msg] of cases) {
      const r = run('export', ...args);
      assert.is(r.status, code, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, msg, args.join(' '));
      assert.not.match(r.stderr, /INTERNAL|    at /, 'no stack trace');
    }
    assert.not.ok(existsSync(join(dir, 'x.png')));
  });
});

test.run();
