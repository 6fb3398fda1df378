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
import { config, faintStarSnr, haloMask, haloPreserved, remainingGradient, runOn, starMask, synthRgb } from './postprocess-helpers.js';

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

/** Runs BGE with `bge` settings on `fixture`; returns the output planes and bge_diagnostics.json. */
async function bgeOn(fixture: typeof img, bge: Record<string, unknown>, dir: string) {
  const r = await runOn(fixture, config({ postprocess: { ...off, bge: true }, bge }), dir, [bgePhase]);
  assert.is(r.end('BGE')?.status, 'ok', JSON.stringify(r.end('BGE')));
  const out = await readFitsImage(r.state.outputs.stacked_rgb_bge!);
  const diag = JSON.parse(await readFile(join(r.result.runDir, 'artifacts', 'preprocess', 'bge_diagnostics.json'), 'utf8'));
  return { out: out.data, diag };
}

for (const [name, fixture] of [
  ['quadratic', img],
  ['glow', synthRgb({ seed: 13, gradientShape: 'glow', gradient: 400 })],
] as const) {
  test(`autobge/${name}: remaining gradient ≤ 0.5 noise, faint-star SNR drop ≤ 3%, placement diagnostics`, async () => {
    const fmask = starMask(fixture, 8);
    await withTempDir(`bge-auto-${name}`, async (dir) => {
      const { out, diag } = await bgeOn(fixture, { method: 'autobge' }, dir);
      for (let c = 0; c < 3; c++) {
        const before = remainingGradient(plane(fixture.data, c), fmask, fixture.width, fixture.height, fixture.noise);
        const after = remainingGradient(plane(out, c), fmask, fixture.width, fixture.height, fixture.noise);
        const snrBefore = faintStarSnr(plane(fixture.data, c), fixture);
        const snrAfter = faintStarSnr(plane(out, c), fixture);
        console.log(`  autobge ${name} ch${c}: gradient ${before.toFixed(2)} → ${after.toFixed(3)} noise; faint SNR ${snrBefore.toFixed(3)} → ${snrAfter.toFixed(3)}`);
        assert.ok(after <= 0.5, `remaining gradient ${after} ≤ 0.5`);
        assert.ok(snrAfter >= 0.97 * snrBefore, `SNR ${snrBefore} → ${snrAfter}`);
      }
      // Where the samples ended: every start accounted for, move statistics, rejection reasons.
      const pl = diag.placement;
      console.log(`  placement: ${JSON.stringify({ ...pl, samples: pl.samples.length })}`);
      assert.is(diag.method, 'autobge');
      assert.is(diag.fit.points, 'autobge_placed');
      assert.is(pl.samples.length, pl.starts);
      assert.is(pl.accepted + pl.rejected.masked + pl.rejected.duplicate + pl.rejected.bright_structure, pl.starts);
      assert.is(diag.fit.points_fitted, pl.accepted);
      assert.ok(pl.accepted >= 0.8 * pl.starts, `${pl.accepted} of ${pl.starts} accepted`);
      for (const s of pl.samples) {
        assert.ok(s.moved_px <= pl.reach_px * Math.SQRT2 + 4, `moved ${s.moved_px} > reach ${pl.reach_px}`);
        assert.ok(s.x >= 0 && s.x < fixture.width && s.y >= 0 && s.y < fixture.height);
      }
      assert.ok(pl.moved.max_px <= pl.reach_px * Math.SQRT2 + 4);
      // Starts on the grid's outer ring slide along their edge only: the left and right columns
      // keep their x, the top and bottom rows their y (within one descent block, 4 px).
      type S = { x: number; y: number; start_x: number; start_y: number; status: string };
      const samples = pl.samples as S[];
      const xs = samples.map((q) => q.start_x);
      const ys = samples.map((q) => q.start_y);
      for (const [key, start, edgeVal] of [['x', 'start_x', Math.min(...xs)], ['x', 'start_x', Math.max(...xs)], ['y', 'start_y', Math.min(...ys)], ['y', 'start_y', Math.max(...ys)]] as const) {
        const ring = samples.filter((q) => q[start] === edgeVal && q.status !== 'masked');
        const vals = ring.map((q) => q[key]);
        assert.ok(ring.length >= 3 && Math.max(...vals) - Math.min(...vals) <= 4, `edge ${key}=${edgeVal}: ${vals.join(',')}`);
      }
      assert.is(diag.effective.bge.autobge.gradient_descent_max_iters, 100);
    });
  });
}

test('faint extended halo (2σ peak, wider than a tile): autobge moves samples off it and preserves more of it than classic', async () => {
  const halo = synthRgb({ seed: 17, halo: 2 });
  const hmask = starMask(halo, 8);
  const hm = haloMask(halo, 0.05);
  const both = Uint8Array.from(hmask, (v, i) => v | hm[i]!);
  await withTempDir('bge-halo', async (dir) => {
    const res: Record<string, { kept: number[]; grad: number[]; diag: Record<string, any> }> = {};
    for (const method of ['classic', 'autobge'] as const) {
      const { out, diag } = await bgeOn(halo, { method }, join(dir, method));
      const kept = [0, 1, 2].map((c) => haloPreserved(halo, out, c));
      const grad = [0, 1, 2].map((c) => remainingGradient(plane(out, c), both, halo.width, halo.height, halo.noise));
      res[method] = { kept, grad, diag };
      console.log(`  halo ${method}: halo light kept ${kept.map((v) => v.toFixed(3)).join(' ')}; gradient outside the halo ${grad.map((v) => v.toFixed(3)).join(' ')}`);
      for (const g of grad) assert.ok(g <= 0.5, `${method}: remaining gradient outside the halo ${g}`);
    }
    const classic = res.classic!;
    const auto = res.autobge!;
    for (let c = 0; c < 3; c++) {
      // Classic's samples sit on the halo: the surface takes most of it away.
      assert.ok(classic.kept[c]! < 0.3, `classic kept ${classic.kept[c]}`);
      assert.ok(auto.kept[c]! >= 0.5, `autobge kept ${auto.kept[c]}`);
      assert.ok(auto.kept[c]! >= classic.kept[c]! + 0.3);
    }
    const pl = auto.diag.placement;
    console.log(`  placement: ${JSON.stringify({ ...pl, samples: pl.samples.length })}`);
    assert.ok(pl.rejected.bright_structure >= 5, `bright_structure rejections ${pl.rejected.bright_structure}`);
    assert.ok(pl.moved.count >= 10, `${pl.moved.count} samples moved`);
    // Rejected samples lie on the halo (its core region), none in the far sky.
    const n = halo.width * halo.height;
    let peak = 0;
    for (let i = 0; i < n; i++) peak = Math.max(peak, halo.halo[i]!);
    for (const s of pl.samples.filter((q: { status: string }) => q.status === 'bright_structure')) {
      const h = halo.halo[Math.round(s.y) * halo.width + Math.round(s.x)]!;
      assert.ok(h > 0.2 * peak, `bright_structure sample at (${s.x}, ${s.y}) with halo ${h.toFixed(2)} of ${peak.toFixed(2)}`);
    }
    // Samples that moved went downhill on the halo (to a lower halo value than at their start).
    const haloAt = (x: number, y: number) => halo.halo[Math.round(y) * halo.width + Math.round(x)]!;
    const moved = pl.samples.filter((q: { moved_px: number; x: number; y: number }) => q.moved_px > 8 && haloAt(q.x, q.y) > 0.1 * peak);
    const downhill = moved.filter((q: { x: number; y: number; start_x: number; start_y: number }) => haloAt(q.x, q.y) < haloAt(q.start_x, q.start_y));
    console.log(`  moved on the halo: ${moved.length}, downhill: ${downhill.length}`);
    assert.ok(moved.length >= 5 && downhill.length >= 0.9 * moved.length);
  });
});

test('autobge: num_sample_points, and starts on stars move off them in a crowded field', async () => {
  const crowded = synthRgb({ seed: 19, stars: 1500 });
  const cmask = starMask(crowded, 8);
  await withTempDir('bge-crowded', async (dir) => {
    const { out, diag } = await bgeOn(crowded, { method: 'autobge', autobge: { num_sample_points: 80 } }, dir);
    const pl = diag.placement;
    console.log(`  crowded: ${JSON.stringify({ ...pl, samples: pl.samples.length })}; masked fraction ${diag.mask.masked_fraction.toFixed(3)}`);
    assert.ok(pl.starts >= 64 && pl.starts <= 80, `starts ${pl.starts}`);
    assert.is(diag.effective.bge.autobge.num_sample_points, 80);
    // With ~1500 stars some grid starts land on a masked star: they relocate within reach.
    const relocated = pl.samples.filter((q: { steps: number; status: string }) => q.steps > 0 && q.status === 'accepted');
    assert.ok(relocated.length >= 5, `${relocated.length} relocated`);
    for (let c = 0; c < 3; c++) {
      const after = remainingGradient(plane(out, c), cmask, crowded.width, crowded.height, crowded.noise);
      assert.ok(after <= 0.5, `remaining gradient ${after}`);
    }
  });
});

for (const method of ['classic', 'autobge'] as const) {
  test(`${method}: too few samples → phase error, diagnostics with the reason, run goes on`, async () => {
    await withTempDir(`bge-fail-${method}`, async (dir) => {
      const r = await runOn(img, config({ postprocess: { ...off, bge: true }, bge: { method, min_valid_samples_for_apply: 100000 } }), dir, [bgePhase]);
      assert.is(r.end('BGE')?.status, 'error');
      assert.is(r.result.status, 'ok');
      const diag = JSON.parse(await readFile(join(r.result.runDir, 'artifacts', 'preprocess', 'bge_diagnostics.json'), 'utf8'));
      assert.is(diag.success, false);
      assert.match(diag.failure_reason, /too few valid background samples/);
      if (method === 'autobge') assert.ok(diag.placement.starts > 0);
      assert.not.ok(existsSync(join(r.result.runDir, 'outputs', 'stacked_rgb_bge.fits')));
    });
  });
}

test.run();
