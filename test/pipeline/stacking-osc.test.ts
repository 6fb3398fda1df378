// STACKING on generated OSC sets (RGGB and GBRG, 10 frames 448×336 with the generator's bad
// frames): debayered RGB output with the right colours (star colour ratios against truth),
// star positions against truth, CFA cards removed from the header.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFitsImage } from '../../src/fits/index.js';
import { checkPositions, config, defaultExclusion, luminance, makeDataset, plane, runStack, trailResiduals, type Dataset, type StackRun } from './stacking-helpers.js';

let root = '';
const sets: Record<string, { ds: Dataset; run: StackRun }> = {};

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-stacking-osc-'));
  for (const pattern of ['RGGB', 'GBRG'] as const) {
    const ds = await makeDataset(join(root, pattern), { kind: 'osc', pattern, frames: 10, width: 448, height: 336, seed: 5, badFrames: 'auto', starDensity: 20000 });
    sets[pattern] = { ds, run: await runStack(ds, join(root, 'runs'), config(join(ds.dir, 'lights'))) };
  }
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

/** Aperture flux (r ≤ 5 px) above the median of an annulus (7–10 px). */
function aperture(p: Float32Array, W: number, H: number, x: number, y: number): number {
  let sum = 0;
  let n = 0;
  const ring: number[] = [];
  for (let dy = -10; dy <= 10; dy++) {
    for (let dx = -10; dx <= 10; dx++) {
      const xx = Math.round(x) + dx;
      const yy = Math.round(y) + dy;
      if (xx < 0 || yy < 0 || xx >= W || yy >= H) continue;
      const d = Math.hypot(xx - x, yy - y);
      const v = p[yy * W + xx]!;
      if (d <= 5) (sum += v), n++;
      else if (d >= 7 && d <= 10) ring.push(v);
    }
  }
  ring.sort((a, b) => a - b);
  return sum - n * ring[ring.length >> 1]!;
}

for (const pattern of ['RGGB', 'GBRG'] as const) {
  test(`OSC ${pattern}: stacked_rgb.fits with 3 planes, CFA cards removed, provenance`, async () => {
    const { ds, run } = sets[pattern]!;
    assert.is(run.result.status, 'ok');
    assert.ok(run.result.outputs.stacked_rgb);
    assert.is(run.result.outputs.stacked_linear, undefined);
    const img = await readFitsImage(run.result.outputs.stacked_rgb!);
    assert.is(img.planes, 3);
    assert.is(img.header.getNumber('NAXIS'), 3);
    assert.is(img.header.getNumber('NAXIS3'), 3);
    assert.is(img.header.getNumber('BITPIX'), -32);
    for (const k of ['BAYERPAT', 'XBAYROFF', 'YBAYROFF', 'COLORTYP']) assert.not.ok(img.header.has(k), `${k} removed`);
    const used = ds.truth.frames.filter((f) => defaultExclusion(f) === null);
    assert.is(img.header.getNumber('NCOMBINE'), used.length);
    assert.is(img.header.getNumber('EXPTIME'), 120 * used.length);
    assert.ok(img.header.commentary('HISTORY').join(' ').includes(`debayer bilinear ${pattern}`));
    const d = run.diagnostics!;
    assert.equal(d.channels, ['R', 'G', 'B']);
    assert.is(d.parameters.bayer_pattern, pattern);
    assert.is(d.parameters.cfa_mode, 'bilinear');
    assert.is(d.frames[0].normalization.length, 3);
    assert.is(d.frames[0].rejected.length, 3);
    assert.is(d.samples.empty_pixels, 0);
  });

  test(`OSC ${pattern}: star colours match the truth (a red star is red), stars at the reference positions`, async () => {
    const { ds, run } = sets[pattern]!;
    const img = run.image!;
    const W = img.width;
    const H = img.height;
    const [R, G, B] = [plane(img, 0), plane(img, 1), plane(img, 2)];
    const stars = ds.truth.stars.filter((s) => s.x > 30 && s.y > 30 && s.x < W - 30 && s.y < H - 30 && !s.saturated && s.mag < 13.5);
    assert.ok(stars.length >= 5, `${stars.length} bright stars`);
    // Isolated stars only (a neighbour within 12 px would enter the aperture or the annulus).
    const clean = stars.filter((s) => !ds.truth.stars.some((t) => t !== s && t.mag < s.mag + 2.5 && Math.hypot(t.x - s.x, t.y - s.y) < 12));
    let reddest = clean[0]!;
    let bluest = clean[0]!;
    for (const s of clean) {
      const measured = aperture(R, W, H, s.x, s.y) / aperture(B, W, H, s.x, s.y);
      const truth = s.flux_e.r! / s.flux_e.b!;
      assert.ok(Math.abs(measured / truth - 1) < 0.06, `star mag ${s.mag} B-V ${s.bv}: R/B ${measured.toFixed(3)} vs truth ${truth.toFixed(3)}`);
      const gr = aperture(G, W, H, s.x, s.y) / aperture(R, W, H, s.x, s.y);
      assert.ok(Math.abs(gr / (s.flux_e.g! / s.flux_e.r!) - 1) < 0.06, `star mag ${s.mag}: G/R ${gr.toFixed(3)}`);
      if (s.bv > reddest.bv) reddest = s;
      if (s.bv < bluest.bv) bluest = s;
    }
    assert.ok(reddest.bv > 0.9, `reddest B-V ${reddest.bv}`);
    const rb = (s: typeof reddest) => aperture(R, W, H, s.x, s.y) / aperture(B, W, H, s.x, s.y);
    assert.ok(rb(reddest) > 1.5, `red star R/B ${rb(reddest)}`);
    assert.ok(rb(reddest) > rb(bluest) * 1.3, `red star R/B ${rb(reddest)} vs blue star ${rb(bluest)}`);
    const pos = checkPositions(ds.truth, luminance(img), W, H, 30, 32);
    assert.ok(pos.matched >= 10, `matched ${pos.matched}`);
    assert.ok(pos.medianError < 0.05, `median error ${pos.medianError}`);
    assert.ok(Math.abs(pos.meanDx) < 0.02 && Math.abs(pos.meanDy) < 0.02, `mean offset ${pos.meanDx}, ${pos.meanDy}`);
  });
}

test('OSC RGGB: the satellite trail leaves < 0.5 sigma per pixel in every channel', async () => {
  const { ds, run } = sets.RGGB!;
  const sat = ds.truth.frames.find((f) => f.satellite)!;
  assert.ok(sat && defaultExclusion(sat) === null);
  const without = await runStack(ds, join(root, 'runs'), config(join(ds.dir, 'lights')), { truth: { exclude: (f) => (f.satellite ? 'manual' : defaultExclusion(f)) } });
  for (let c = 0; c < 3; c++) {
    const t = trailResiduals(ds.truth, sat.index, plane(run.image!, c), plane(without.image!, c), 448, 336);
    assert.ok(t.pixels > 2000, `${t.pixels} trail pixels`);
    for (const [k, mean] of t.meanByOffset) assert.ok(Math.abs(mean) < 0.1, `channel ${c}: mean residual ${mean.toFixed(3)} sigma at ${k} px`);
    assert.ok(t.p99 < 0.5, `channel ${c}: 99th percentile |residual| ${t.p99.toFixed(3)} sigma`);
  }
});

test('OSC superpixel: half-size RGB of whole Bayer cells, colours and positions against truth, binning cards', async () => {
  const { ds } = sets.RGGB!;
  const sp = await runStack(ds, join(root, 'runs'), config(join(ds.dir, 'lights'), { cfa_mode: 'superpixel' }));
  assert.is(sp.result.status, 'ok');
  const img = sp.image!;
  assert.equal([img.width, img.height, img.planes], [224, 168, 3]);
  assert.is(img.header.getNumber('XBINNING'), 2);
  assert.is(img.header.getNumber('YBINNING'), 2);
  assert.is(img.header.getNumber('XPIXSZ'), 7.52);
  assert.ok(img.header.commentary('HISTORY').join(' ').includes('debayer superpixel RGGB'));
  assert.equal(sp.diagnostics!.output_size, { width: 224, height: 168, binning: 2 });
  assert.is(sp.diagnostics!.parameters.debayer, 'superpixel');
  // Local normalization on the cell grid: the mosaic binned in frame pixels as for the bilinear
  // stack (bin factor 2 here, relabelled as 1 cell), the star mask grown by the same reach on
  // the sky, so the fits are the bilinear stack's on a grid of half the spacing.
  const ln = sp.diagnostics!.local_normalization;
  const full = sets.RGGB!.run.diagnostics!.local_normalization;
  assert.equal([ln.grid.width, ln.grid.height, ln.grid.nx, ln.grid.ny, ln.bin_factor], [224, 168, full.grid.nx, full.grid.ny, full.bin_factor]);
  assert.ok(Math.abs(ln.grid.dx - full.grid.dx / 2) < 1e-9);
  ln.frames.forEach((f: any, k: number) => {
    for (const n of ['R', 'G', 'B']) {
      assert.ok(f.channels[n].fit.ok && f.channels[n].fit.cells_measured > 48, `frame ${f.index} ${n}: ${JSON.stringify(f.channels[n].fit)}`);
      assert.equal(f.channels[n].b, full.frames[k].channels[n].b, `frame ${f.index} ${n}: the bilinear stack's fit`);
    }
  });
  // Truth positions on the cell grid: pixel p lies at cell (p − 0.5) / 2.
  const cells = { ...ds.truth, stars: ds.truth.stars.map((s) => ({ ...s, x: (s.x - 0.5) / 2, y: (s.y - 0.5) / 2 })) };
  const pos = checkPositions(cells, luminance(img), img.width, img.height, 30, 16);
  assert.ok(pos.matched >= 8, `matched ${pos.matched}`);
  assert.ok(pos.medianError < 0.05, `median error ${pos.medianError} cells`);
  // Colours: R/B of isolated bright stars against the truth.
  const W = img.width;
  const H = img.height;
  const bright = cells.stars.filter((s) => s.x > 15 && s.y > 15 && s.x < W - 15 && s.y < H - 15 && !s.saturated && s.mag < 13.5);
  const clean = bright.filter((s) => !cells.stars.some((t) => t !== s && t.mag < s.mag + 2.5 && Math.hypot(t.x - s.x, t.y - s.y) < 7));
  assert.ok(clean.length >= 3, `${clean.length} clean bright stars`);
  for (const s of clean) {
    const measured = aperture(plane(img, 0), W, H, s.x, s.y) / aperture(plane(img, 2), W, H, s.x, s.y);
    const truth = s.flux_e.r! / s.flux_e.b!;
    assert.ok(Math.abs(measured / truth - 1) < 0.08, `star mag ${s.mag}: R/B ${measured.toFixed(3)} vs truth ${truth.toFixed(3)}`);
  }
});

test.run();
