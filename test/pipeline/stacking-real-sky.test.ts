// Raw Stack's STACKING on a generated real-sky session (fixtures/generator realSkyOptions: sky
// gradients that change from frame to frame, a moving glow, seeing that varies across the field
// and through the night with a soft patch, extra satellites, cosmic rays): 32 mono frames of
// 384 × 288, registration and weights from the truth (stacking-helpers.ts). With the defaults
// (local normalization on, sigma rejection with the noise-model bounds) against the same stack
// without rejection, per region of a 3 × 2 grid:
//   (a) background noise (neighbour differences over star-free pixels) at most 2 % higher;
//   (b) star FWHM (Moffat fits of isolated, unsaturated truth stars, median per region) within 2 %;
//   photometric scatter (aperture magnitudes of bright unsaturated stars) at most 1.2×;
//   (c) every satellite trail removed: residual against the stack without that frame < 0.5 σ
//       (99th percentile) and no line (|mean| < 0.1 σ at every distance), away from stars and
//       the edges (trailView).
// Winsor with the noise model is held to (a) and (b) too. The seed's behaviour (global
// normalization only, sample-σ bounds) is run as well and its figures
// printed, and it must do worse on (a) or (b) in some region: the data really has the problems
// the defaults fix.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { realSkyOptions } from '../../fixtures/generator/index.js';
import { MoffatFitter } from '../../src/algorithms/moffat-fit.js';
import { config, makeDataset, pixelNoise, plane, robust, runStack, trailResiduals, type Dataset, type StackRun } from './stacking-helpers.js';

const W = 384;
const H = 288;
const FRAMES = 32;
const GX = 3;
const GY = 2;

let root = '';
let ds: Dataset;
const runs: Record<string, StackRun> = {};
const runsDir = () => join(root, 'runs');
const lights = () => join(ds.dir, 'lights');

const region = (x: number, y: number) => Math.min(GX - 1, Math.floor((x * GX) / W)) + GX * Math.min(GY - 1, Math.floor((y * GY) / H));

/** Star positions in the stack (the reference's geometry) that are unsaturated, isolated and clear of the edges. */
function starsInStack(): { x: number; y: number; peak: number; mag: number }[] {
  const t0 = ds.truth.frames[0]!.transform;
  const pos = ds.truth.stars.map((s) => {
    // Sky → reference frame (frame 0) position.
    const x = t0[0]![0]! * s.x + t0[0]![1]! * s.y + t0[0]![2]!;
    const y = t0[1]![0]! * s.x + t0[1]![1]! * s.y + t0[1]![2]!;
    // The star's own brightness in this band (electrons), so colour terms do not enter the scatter.
    return { x, y, peak: s.peak_e, sat: s.saturated, mag: -2.5 * Math.log10(s.flux_e.l ?? Object.values(s.flux_e)[0]!) };
  });
  return pos.filter((p, i) => !p.sat && p.x > 16 && p.y > 16 && p.x < W - 17 && p.y < H - 17 && pos.every((q, j) => j === i || Math.hypot(q.x - p.x, q.y - p.y) > 14 || q.peak < 0.05 * p.peak));
}

/** Median FWHM of Moffat fits per region. */
function fwhmByRegion(img: Float32Array, stars: { x: number; y: number }[]): number[] {
  const fitter = new MoffatFitter();
  const sky = robust(img).median;
  const per: number[][] = Array.from({ length: GX * GY }, () => []);
  const half = 10;
  const size = 2 * half + 1;
  for (const s of stars) {
    const x0 = Math.round(s.x) - half;
    const y0 = Math.round(s.y) - half;
    const values = new Float64Array(size * size);
    for (let j = 0; j < size; j++) for (let i = 0; i < size; i++) values[j * size + i] = img[(y0 + j) * W + x0 + i]! - sky;
    const m = (3 / 2.3548) ** 2;
    const fit = fitter.fit({ values, size, x0, y0 }, { x: s.x, y: s.y, amplitude: values[half * size + half]!, mxx: m, myy: m, mxy: 0 });
    if (fit.ok) per[region(s.x, s.y)]!.push((fit.fwhmMajor + fit.fwhmMinor) / 2);
  }
  return per.map((v) => (v.length >= 3 ? robust(v).median : NaN));
}

/**
 * Photometric scatter: aperture magnitudes (r = 5 px, sky the median of a 8–12 px annulus) of
 * the stars against their true fluxes (as magnitudes), robust σ of the residuals about their median.
 * Only stars whose truth peak is ≥ 300 e- per frame (~100σ in the stack), so the scatter is the stack's
 * doing, not the photon noise's.
 */
function photometricScatter(img: Float32Array, stars: { x: number; y: number; peak: number; mag: number }[]): number {
  const res: number[] = [];
  for (const st of stars) {
    if (st.peak < 300) continue;
    const ring: number[] = [];
    let sum = 0;
    let n = 0;
    for (let y = Math.floor(st.y - 12); y <= Math.ceil(st.y + 12); y++) {
      for (let x = Math.floor(st.x - 12); x <= Math.ceil(st.x + 12); x++) {
        const r = Math.hypot(x - st.x, y - st.y);
        const v = img[y * W + x]!;
        if (r <= 5) {
          sum += v;
          n++;
        } else if (r >= 8 && r <= 12) ring.push(v);
      }
    }
    const flux = sum - n * robust(ring).median;
    if (flux > 0) res.push(-2.5 * Math.log10(flux) - st.mag);
  }
  assert.ok(res.length >= 12, `${res.length} stars measured`);
  return robust(res).sigma;
}

/** Background noise per region: neighbour differences over pixel pairs below the sky + 3σ. */
function noiseByRegion(img: Float32Array): number[] {
  const { median, sigma } = robust(img);
  const cut = median + 3 * sigma;
  const per: number[][] = Array.from({ length: GX * GY }, () => []);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x + 1 < W; x += 2) {
      const a = img[y * W + x]!;
      const b = img[y * W + x + 1]!;
      if (a < cut && b < cut) per[region(x, y)]!.push(a - b);
    }
  }
  return per.map((d) => robust(d).sigma / Math.SQRT2);
}

/**
 * Copies of two stacks with NaN where a trail residual means nothing: a 16 px border (dithered
 * frames drop out near the edges, so leaving one more out changes the stack there) and 5 px
 * around every star of `ref` (a sharp frame's star core is higher than the others': a stack
 * with it differs there, as it should, which is not the trail).
 */
function trailView(a: Float32Array, ref: Float32Array): [Float32Array, Float32Array] {
  const { median } = robust(ref);
  const cut = median + 8 * pixelNoise(ref);
  const out = [a.slice(), ref.slice()];
  const R = 5;
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const border = x < 16 || y < 16 || x >= W - 16 || y >= H - 16;
      if (border) for (const o of out) o[y * W + x] = NaN;
      if (!(ref[y * W + x]! > cut)) continue;
      for (let yy = Math.max(0, y - R); yy <= Math.min(H - 1, y + R); yy++) for (let xx = Math.max(0, x - R); xx <= Math.min(W - 1, x + R); xx++) for (const o of out) o[yy * W + xx] = NaN;
    }
  }
  return [out[0]!, out[1]!];
}

const ratio = (a: number[], b: number[]) => a.map((v, k) => v / b[k]! - 1);
const pct = (r: number[]) => r.map((v) => `${(100 * v).toFixed(1)} %`).join(', ');

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-stacking-real-sky-'));
  ds = await makeDataset(join(root, 'data'), { kind: 'mono', frames: FRAMES, width: W, height: H, seed: 23, badFrames: 'none', ...realSkyOptions({ width: W, height: H, frames: FRAMES }) });
  runs.none = await runStack(ds, runsDir(), config(lights(), { rejection: { method: 'none' } }), { truth: { exclude: () => null } });
  runs.sigma = await runStack(ds, runsDir(), config(lights()), { truth: { exclude: () => null } });
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

test('real sky: both stacks ran with local normalization, the default with the noise-model bounds', () => {
  for (const r of Object.values(runs)) assert.is(r.result.status, 'ok');
  assert.is(runs.sigma!.diagnostics!.parameters.rejection.bounds, 'noise_model');
  assert.is(runs.sigma!.diagnostics!.local_normalization.frames.length, FRAMES);
  // The gradients changed from frame to frame: local normalization had work to do.
  const ranges = runs.sigma!.diagnostics!.local_normalization.frames.map((f: any) => f.channels.L.fit.offset_range as number);
  assert.ok(Math.max(...ranges) > 5 * runs.sigma!.diagnostics!.local_normalization.frames[0].channels.L.fit.noise_ref / 8, `offset ranges ${ranges.join(', ')}`);
});

test('real sky: (a) background noise with rejection within 2 % of without, per region', async () => {
  const none = noiseByRegion(plane(runs.none!.image!, 0));
  const sigma = noiseByRegion(plane(runs.sigma!.image!, 0));
  const r = ratio(sigma, none);
  console.log(`  background noise, sigma vs none per region: ${pct(r)}`);
  // The issue is rejection raising the noise (good frames thrown away where the backgrounds
  // disagree); lower is fine: the stack without rejection keeps cosmic rays and hot pixels.
  for (const [k, v] of r.entries()) assert.ok(v <= 0.02, `region ${k}: noise ${sigma[k]} vs ${none[k]} without rejection`);
});

test('real sky: (b) star FWHM with rejection within 2 % of without, per region (soft patch included)', async () => {
  const stars = starsInStack();
  const none = fwhmByRegion(plane(runs.none!.image!, 0), stars);
  const sigma = fwhmByRegion(plane(runs.sigma!.image!, 0), stars);
  const r = ratio(sigma, none);
  console.log(`  FWHM, sigma vs none per region: ${pct(r)} (none: ${none.map((v) => v.toFixed(2)).join(', ')} px)`);
  assert.ok(none.filter((v) => Number.isFinite(v)).length === GX * GY, `stars measured in every region: ${none.join(', ')}`);
  for (const [k, v] of r.entries()) assert.ok(Math.abs(v) <= 0.02, `region ${k}: FWHM ${sigma[k]} vs ${none[k]} without rejection`);
});

test('real sky: photometric scatter with rejection at most 1.2× without', () => {
  const stars = starsInStack();
  const none = photometricScatter(plane(runs.none!.image!, 0), stars);
  const sigma = photometricScatter(plane(runs.sigma!.image!, 0), stars);
  console.log(`  photometric scatter: ${sigma.toFixed(4)} mag with rejection, ${none.toFixed(4)} without (${(sigma / none).toFixed(2)}×)`);
  assert.ok(sigma <= 1.2 * none, `scatter ${sigma} vs ${none}`);
});

test('real sky: (c) every satellite trail removed (residual < 0.5 σ against the stack without that frame)', async () => {
  const sats = ds.truth.frames.filter((f) => f.satellite);
  assert.ok(sats.length >= 2, `${sats.length} satellite frames`);
  for (const sat of sats) {
    const without = await runStack(ds, runsDir(), config(lights()), { truth: { exclude: (f) => (f.index === sat.index ? 'manual' : null) } });
    const [withSat, withoutSat] = trailView(plane(runs.sigma!.image!, 0), plane(without.image!, 0));
    const t = trailResiduals(ds.truth, sat.index, withSat, withoutSat, W, H);
    assert.ok(t.pixels > 500, `frame ${sat.index}: ${t.pixels} trail pixels`);
    const worst = Math.max(...[...t.meanByOffset.values()].map(Math.abs));
    console.log(`  trail of frame ${sat.index}: 99th percentile |residual| ${t.p99.toFixed(3)} σ, largest mean per offset ${worst.toFixed(3)} σ`);
    for (const [k, mean] of t.meanByOffset) assert.ok(Math.abs(mean) < 0.1, `frame ${sat.index}: mean residual ${mean.toFixed(3)} σ at ${k} px from the trail`);
    assert.ok(t.p99 < 0.5, `frame ${sat.index}: 99th percentile |residual| ${t.p99.toFixed(3)} σ`);
  }
});

test('real sky: winsor with the noise model keeps the same promises (noise, FWHM) and rejects the satellite frames\' trails', async () => {
  const w = await runStack(ds, runsDir(), config(lights(), { rejection: { method: 'winsor' } }), { truth: { exclude: () => null } });
  assert.is(w.result.status, 'ok');
  assert.is(w.diagnostics!.parameters.rejection.bounds, 'noise_model');
  const noise = ratio(noiseByRegion(plane(w.image!, 0)), noiseByRegion(plane(runs.none!.image!, 0)));
  const stars = starsInStack();
  const fwhm = ratio(fwhmByRegion(plane(w.image!, 0), stars), fwhmByRegion(plane(runs.none!.image!, 0), stars));
  console.log(`  winsor: background noise ${pct(noise)}; FWHM ${pct(fwhm)}`);
  for (const [k, v] of noise.entries()) assert.ok(v <= 0.02, `region ${k}: noise ${pct([v])}`);
  for (const [k, v] of fwhm.entries()) assert.ok(Math.abs(v) <= 0.02, `region ${k}: FWHM ${pct([v])}`);
  const high = (i: number) => w.diagnostics!.frames.find((f: { index: number }) => f.index === i).rejected[0].high as number;
  const typical = robust(ds.truth.frames.filter((f) => !f.satellite).map((f) => high(f.index))).median;
  for (const sat of ds.truth.frames.filter((f) => f.satellite)) assert.ok(high(sat.index) > typical + 200, `frame ${sat.index}: ${high(sat.index)} high rejections vs ${typical} typical`);
});

test('real sky: the seed behaviour (global normalization, sample-σ bounds) does worse on the same data', async () => {
  const old = await runStack(ds, runsDir(), config(lights(), { stacking: { local_normalization: false }, rejection: { bounds: 'sample' } }), { truth: { exclude: () => null } });
  const oldNone = await runStack(ds, runsDir(), config(lights(), { stacking: { local_normalization: false }, rejection: { method: 'none' } }), { truth: { exclude: () => null } });
  const noise = ratio(noiseByRegion(plane(old.image!, 0)), noiseByRegion(plane(oldNone.image!, 0)));
  const stars = starsInStack();
  const fwhm = ratio(fwhmByRegion(plane(old.image!, 0), stars), fwhmByRegion(plane(oldNone.image!, 0), stars));
  const phot = photometricScatter(plane(old.image!, 0), stars) / photometricScatter(plane(oldNone.image!, 0), stars);
  console.log(`  seed behaviour: background noise ${pct(noise)}; FWHM ${pct(fwhm)}; photometric scatter ${phot.toFixed(2)}× its no-rejection stack's`);
  assert.ok([...noise, ...fwhm].some((v) => Math.abs(v) > 0.02), 'the seed behaviour stays within 2 % everywhere: the data does not show the problem');
});

test.run();
