// BGE phase (issue 8 item 1): skip reasons, the remaining-gradient and faint-star SNR bars on a
// synthetic RGB stack with a known linear + quadratic gradient, and bge_diagnostics.json.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readFitsImage } from '../../src/fits/index.js';
import { bgePhase } from '../../src/pipeline/rawstack/phases/bge.js';
import { withTempDir } from '../helpers/tmp.js';
import { config, faintStarSnr, remainingGradient, runOn, starMask, synthRgb } from './postprocess-helpers.js';

const img = synthRgb({ seed: 11 });
const n = img.width * img.height;
const mask = starMask(img, 8);
const plane = (data: Float32Array, c: number) => data.subarray(c * n, (c + 1) * n);

const off = { astrometry: false, pcc: false, hypermetric_stretch: false };

test('skipped disabled (postprocess.bge false) and no_rgb_stack; bge.method none runs classic', async () => {
  await withTempDir('bge-skip', async (dir) => {
    const a = await runOn(img, config({ postprocess: { ...off, bge: false } }), join(dir, 'a'), [bgePhase]);
    assert.is(a.end('BGE')?.status, 'skipped');
    assert.is(a.end('BGE')?.reason, 'disabled');
    // bge.method none is the tiled workflow's switch; in Raw Stack postprocess.bge decides.
    const b = await runOn(img, config({ postprocess: { ...off, bge: true }, bge: { method: 'none' } }), join(dir, 'b'), [bgePhase]);
    assert.is(b.end('BGE')?.status, 'ok');
    const bd = JSON.parse(await readFile(join(b.result.runDir, 'artifacts', 'preprocess', 'bge_diagnostics.json'), 'utf8'));
    assert.is(bd.method, 'classic');
    assert.is(bd.method_requested, 'none');
    const c = await runOn(img, config({ postprocess: { ...off, bge: true } }), join(dir, 'c'), [bgePhase], { rgb: false });
    assert.is(c.end('BGE')?.status, 'skipped');
    assert.is(c.end('BGE')?.reason, 'no_rgb_stack');
    assert.is(c.result.status, 'ok');
  });
});

for (const fit of ['rbf', 'poly'] as const) {
  test(`classic/${fit}: remaining gradient ≤ 0.5 noise, faint-star SNR drop ≤ 3%, sky level kept`, async () => {
    await withTempDir(`bge-${fit}`, async (dir) => {
      const t0 = Date.now();
      const r = await runOn(img, config({ postprocess: { ...off, bge: true }, bge: { fit_method: fit } }), dir, [bgePhase]);
      const ms = Date.now() - t0;
      assert.is(r.end('BGE')?.status, 'ok', JSON.stringify(r.end('BGE')));
      const file = r.state.outputs.stacked_rgb_bge!;
      assert.ok(file.endsWith(join('outputs', 'stacked_rgb_bge.fits')));
      const out = await readFitsImage(file);
      assert.is(out.planes, 3);
      assert.ok(out.header.commentary('HISTORY').some((h) => h.includes('BGE')));
      for (let c = 0; c < 3; c++) {
        const before = remainingGradient(plane(img.data, c), mask, img.width, img.height, img.noise);
        const after = remainingGradient(plane(out.data, c), mask, img.width, img.height, img.noise);
        const snrBefore = faintStarSnr(plane(img.data, c), img);
        const snrAfter = faintStarSnr(plane(out.data, c), img);
        console.log(`  ${fit} ch${c}: gradient ${before.toFixed(2)} → ${after.toFixed(3)} noise; faint SNR ${snrBefore.toFixed(3)} → ${snrAfter.toFixed(3)} (${ms} ms)`);
        assert.ok(before > 10, `fixture has a gradient (${before})`);
        assert.ok(after <= 0.5, `remaining gradient ${after} ≤ 0.5`);
        assert.ok(snrAfter >= 0.97 * snrBefore, `SNR ${snrBefore} → ${snrAfter}`);
      }
      const diag = JSON.parse(await readFile(join(r.result.runDir, 'artifacts', 'preprocess', 'bge_diagnostics.json'), 'utf8'));
      assert.is(diag.success, true);
      assert.is(diag.failure_reason, null);
      assert.is(diag.effective.bge.fit_method, fit);
      assert.is(diag.effective.tile.size_factor, 32);
      assert.ok(diag.samples.valid >= 16 && diag.samples.valid <= diag.samples.tiles);
      assert.ok(diag.grid.cells_used > 4);
      assert.ok(Number.isFinite(diag.fit.residual_rms));
      assert.is(diag.channels.length, 3);
      // The sky level is kept: the surface median added back lies within the gradient's range.
      for (let c = 0; c < 3; c++) {
        const ch = diag.channels[c];
        assert.ok(ch.sky_level > img.sky[c]! && ch.sky_level < img.sky[c]! + 300, `sky level ${ch.sky_level}`);
      }
      const manifest = JSON.parse(await readFile(join(r.result.runDir, 'artifacts', 'preprocess', 'artifacts_manifest.json'), 'utf8'));
      const paths = manifest.artifacts.map((a: { path: string }) => a.path);
      assert.ok(paths.includes('outputs/stacked_rgb_bge.fits'));
      assert.ok(paths.includes('artifacts/preprocess/bge_diagnostics.json'));
      assert.equal(r.state.summaries.BGE?.success, true);
    });
  });
}

test('classic/rbf on a non-polynomial gradient (corner light dome + vignette)', async () => {
  const glow = synthRgb({ seed: 13, gradientShape: 'glow', gradient: 400 });
  const gmask = starMask(glow, 8);
  await withTempDir('bge-glow', async (dir) => {
    const r = await runOn(glow, config({ postprocess: { ...off, bge: true } }), dir, [bgePhase]);
    assert.is(r.end('BGE')?.status, 'ok');
    const out = await readFitsImage(r.state.outputs.stacked_rgb_bge!);
    for (let c = 0; c < 3; c++) {
      const before = remainingGradient(plane(glow.data, c), gmask, glow.width, glow.height, glow.noise);
      const after = remainingGradient(plane(out.data, c), gmask, glow.width, glow.height, glow.noise);
      const snrBefore = faintStarSnr(plane(glow.data, c), glow);
      const snrAfter = faintStarSnr(plane(out.data, c), glow);
      console.log(`  glow ch${c}: gradient ${before.toFixed(2)} → ${after.toFixed(3)} noise; faint SNR ${snrBefore.toFixed(3)} → ${snrAfter.toFixed(3)}`);
      assert.ok(after <= 0.5, `remaining gradient ${after}`);
      assert.ok(snrAfter >= 0.97 * snrBefore);
    }
  });
});

test('autobge: also removes the gradient', async () => {
  await withTempDir('bge-auto', async (dir) => {
    const r = await runOn(img, config({ postprocess: { ...off, bge: true }, bge: { method: 'autobge' } }), dir, [bgePhase]);
    assert.is(r.end('BGE')?.status, 'ok');
    const out = await readFitsImage(r.state.outputs.stacked_rgb_bge!);
    for (let c = 0; c < 3; c++) assert.ok(remainingGradient(plane(out.data, c), mask, img.width, img.height, img.noise) <= 0.5);
  });
});

test('too few samples: phase error, diagnostics with the reason, run goes on', async () => {
  await withTempDir('bge-fail', async (dir) => {
    const r = await runOn(img, config({ postprocess: { ...off, bge: true }, bge: { min_valid_samples_for_apply: 100000 } }), dir, [bgePhase]);
    assert.is(r.end('BGE')?.status, 'error');
    assert.is(r.result.status, 'ok');
    const diag = JSON.parse(await readFile(join(r.result.runDir, 'artifacts', 'preprocess', 'bge_diagnostics.json'), 'utf8'));
    assert.is(diag.success, false);
    assert.match(diag.failure_reason, /too few valid background samples/);
    assert.not.ok(existsSync(join(r.result.runDir, 'outputs', 'stacked_rgb_bge.fits')));
  });
});

test.run();
