// STACKING on a generated mono set (12 frames 384×288 with the generator's bad frames; clouds,
// trailed and bad-seeing frames excluded as FRAME_FILTERING would, the satellite frame kept):
// star positions against truth, provenance header, diagnostics, events, the satellite trail, the
// four normalisation modes and the two weightings.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFitsImage } from '../../src/fits/index.js';
import type { EventLine } from '../../src/pipeline/events.js';
import { checkPositions, config, defaultExclusion, makeDataset, plane, robust, runStack, stackingEnd, trailResiduals, type Dataset, type StackRun } from './stacking-helpers.js';

let root = '';
let ds: Dataset;
let base: StackRun;
const runsDir = () => join(root, 'runs');
const lights = () => join(ds.dir, 'lights');

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-stacking-mono-'));
  ds = await makeDataset(join(root, 'data'), { kind: 'mono', frames: 12, width: 384, height: 288, seed: 11, badFrames: 'auto' });
  base = await runStack(ds, runsDir(), config(lights()));
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

test('mono: run ok, stars at the reference positions within 0.05 px', async () => {
  const { result, image } = base;
  assert.is(result.status, 'ok');
  assert.ok(image);
  assert.is(image!.planes, 1);
  assert.equal([image!.width, image!.height], [384, 288]);
  // 32 px margin: near the edges some dithered frames do not cover a star's whole profile.
  const pos = checkPositions(ds.truth, plane(image!, 0), image!.width, image!.height, 30, 32);
  assert.ok(pos.matched >= 15, `matched ${pos.matched}`);
  assert.ok(pos.medianError < 0.05, `median error ${pos.medianError}`);
  assert.ok(Math.abs(pos.meanDx) < 0.02 && Math.abs(pos.meanDy) < 0.02, `mean offset ${pos.meanDx}, ${pos.meanDy}`);
  assert.ok(pos.rms < 0.1, `rms ${pos.rms}`); // a few blended or edge stars pull the rms; median and mean are the bar
});

test('mono: provenance header (NCOMBINE, total EXPTIME, DATE-OBS, HISTORY per phase), float32', async () => {
  const img = await readFitsImage(base.result.outputs.stacked_linear!);
  const h = img.header;
  const used = ds.truth.frames.filter((f) => defaultExclusion(f) === null);
  assert.is(h.getNumber('BITPIX'), -32);
  assert.is(h.getNumber('NCOMBINE'), used.length);
  assert.is(h.getNumber('EXPTIME'), used.reduce((a, f) => a + f.exptime, 0));
  assert.is(h.getNumber('LIVETIME'), h.getNumber('EXPTIME'));
  assert.is(h.getNumber('SUBEXP'), 120);
  assert.not.ok(h.has('EXPOSURE'));
  const first = used.map((f) => f.date_obs).sort()[0]!;
  assert.is(h.getString('DATE-OBS'), first.length === 19 ? `${first}.000` : first);
  assert.ok(h.has('DATE-END'));
  // Reference cards kept, unknown ones too.
  for (const k of ['INSTRUME', 'TELESCOP', 'OBJECT', 'SWCREATE', 'FILTER', 'CCD-TEMP', 'RA', 'DEC']) assert.ok(h.has(k), k);
  const cards = h.commentary('HISTORY');
  assert.ok(cards.every((c) => c.length <= 72));
  const history = cards.map((c) => c.trim()).join(' ');
  for (const p of ['INPUT_SCAN: ok', 'FRAME_FILTERING: ok', 'STACKING:', 'rejection sigma low 3 high 3 max_iters 3 min_fraction 0.4', 'normalization addscale', 'weighting quality', 'warp lanczos3']) {
    assert.ok(history.includes(p), `HISTORY lacks "${p}":\n${history}`);
  }
  assert.ok(history.includes('synthetic data'), 'the reference light\'s own HISTORY is kept');
});

test('mono: stacking_diagnostics.json shape, summary, manifest, events', async () => {
  const d = base.diagnostics!;
  const used = ds.truth.frames.filter((f) => defaultExclusion(f) === null);
  assert.is(d.frames_used, used.length);
  assert.equal(d.used_frames.map((f: { index: number }) => f.index), used.map((f) => f.index));
  assert.equal(d.parameters.rejection, { method: 'sigma', low: 3, high: 3, max_iters: 3, min_fraction: 0.4, bounds: 'noise_model', seeing_tolerance: 1 });
  assert.is(d.parameters.local_normalization, true);
  // Local normalization: one model per used frame on one grid, fitted (a ≡ 1 by default, b varies
  // across the field where the gradients differ), and the reference's sky for the noise model.
  const ln = d.local_normalization;
  assert.is(ln.applied, true);
  assert.equal([ln.grid.nx, ln.grid.ny], [16, 12]);
  assert.is(ln.frames.length, used.length);
  // No QUALITY_ANALYSIS in these runs (a stand-in): the setup pass read every frame itself.
  assert.is(ln.premeasured_frames, 0);
  assert.equal(ln.frames.map((f: { index: number }) => f.index), used.map((f) => f.index));
  for (const f of ln.frames) {
    const m = f.channels.L;
    assert.is(m.a.length, 192);
    assert.is(m.b.length, 192);
    assert.ok(m.a.every((a: number) => a === 1));
    assert.ok(m.fit.ok && m.fit.cells_measured > 96, `frame ${f.index}: ${JSON.stringify(m.fit)}`);
  }
  assert.ok(ln.frames.some((f: any) => f.channels.L.fit.offset_range > 20), 'some frame has a background that differs across the field');
  assert.is(ln.reference_sky.L.length, 192);
  assert.is(d.noise_model.frames.length, used.length);
  assert.ok(d.noise_model.frames.every((f: { alpha: number; sigma: number[] }) => f.alpha >= 1 && f.sigma[0]! > 0));
  // Shot noise: the generator writes the sensor's e-/ADU as EGAIN; every frame's K = scale / gain.
  const g = ds.truth.sensor.gain_e_per_adu;
  assert.equal(d.noise_model.shot_noise, { source: 'EGAIN', frames_with_gain: used.length, gains: [g] });
  for (const [i, f] of (d.noise_model.frames as { index: number; gain: number; poisson: number[] }[]).entries()) {
    assert.is(f.gain, g);
    const scale = d.frames.find((x: { index: number }) => x.index === f.index).normalization[0].scale;
    assert.ok(Math.abs(f.poisson[0]! / (scale / g) - 1) < 1e-5, `frame ${i}: K ${f.poisson[0]} for scale ${scale}, gain ${g}`);
  }
  assert.is(d.parameters.premask.seeds, 'noise_model');
  assert.is(d.parameters.normalization, 'addscale');
  assert.is(d.parameters.weighting, 'quality');
  assert.is(d.parameters.warp_kernel, 'lanczos3');
  assert.is(d.parameters.cosmetic_correction, false);
  assert.is(d.normalization_source, 'measured');
  assert.is(d.weights.length, used.length);
  assert.ok(Math.abs(d.weights.reduce((a: number, b: number) => a + b, 0) / used.length - 1) < 1e-9);
  for (const key of ['read', 'debayer', 'warp', 'stack', 'premask']) assert.ok(typeof d.device.paths[key] === 'string', key);
  const f0 = d.frames[0];
  assert.is(f0.index, 0);
  assert.equal(f0.normalization[0].scale, 1);
  assert.equal(f0.normalization[0].offset, 0);
  assert.ok(f0.normalization[0].location > 0 && f0.normalization[0].spread > 0);
  assert.ok(Array.isArray(f0.rejected) && typeof f0.rejected[0].low === 'number' && typeof f0.rejected[0].high === 'number');
  const perFrame = d.frames.reduce((a: number, f: { rejected_total: number }) => a + f.rejected_total, 0);
  assert.is(perFrame, d.samples.rejected_low + d.samples.rejected_high);
  assert.ok(d.samples.total > 0.95 * used.length * 384 * 288 && d.samples.total <= used.length * 384 * 288);
  assert.ok(d.samples.rejected_fraction > 0 && d.samples.rejected_fraction < 0.1, `${d.samples.rejected_fraction}`);
  assert.is(d.samples.empty_pixels, 0);
  assert.is(d.band_plan.bands, 1);
  assert.is(d.band_plan.rows_per_band, 288);
  assert.is(d.band_plan.limited_by, 'height');
  assert.is(d.band_plan.memory_budget_mib, 1024);
  for (const k of ['setup', 'band_loop', 'warp', 'stack', 'write', 'total']) assert.type(d.timings_ms[k], 'number');
  assert.equal(d.outputs, { stacked_linear: 'outputs/stacked_linear.fits' });

  const manifest = JSON.parse(await readFile(join(base.result.runDir, 'artifacts/preprocess/artifacts_manifest.json'), 'utf8'));
  const paths = (manifest.artifacts ?? manifest).map((a: { path: string }) => a.path);
  assert.ok(paths.includes('outputs/stacked_linear.fits'));
  assert.ok(paths.includes('artifacts/preprocess/stacking_diagnostics.json'));
  const report = JSON.parse(await readFile(join(base.result.runDir, 'artifacts/preprocess/preprocessing_report.json'), 'utf8'));
  assert.is(report.stacking.frames_used, used.length);
  assert.is(report.stacking.output_linear, 'outputs/stacked_linear.fits');

  const end = stackingEnd(base.events)!;
  assert.is(end.status, 'ok');
  assert.is(end.frames_used, used.length);
  const frames = base.events.filter((l): l is Extract<EventLine, { type: 'frame' }> => l.type === 'frame' && l.phase === 'STACKING');
  assert.equal(frames.map((f) => f.index), used.map((f) => f.index));
  assert.ok(frames.every((f) => f.outcome === 'stacked' && typeof f.metrics?.rejected_high === 'number'));
  const progress = base.events.filter((l) => l.type === 'phase_progress' && l.phase === 'STACKING') as Extract<EventLine, { type: 'phase_progress' }>[];
  assert.ok(progress.some((p) => p.substep === 'bands' && p.current === 1 && p.total === 1));
});

test('mono: the satellite trail leaves < 0.5 sigma per pixel along the trail', async () => {
  const sat = ds.truth.frames.find((f) => f.satellite)!;
  assert.ok(sat && defaultExclusion(sat) === null, 'the satellite frame is stacked');
  const without = await runStack(ds, runsDir(), config(lights()), { truth: { exclude: (f) => (f.satellite ? 'manual' : defaultExclusion(f)) } });
  const t = trailResiduals(ds.truth, sat.index, plane(base.image!, 0), plane(without.image!, 0), 384, 288);
  assert.ok(t.pixels > 2000, `${t.pixels} trail pixels`);
  // Systematic part: the mean residual at each distance from the centre line.
  for (const [k, mean] of t.meanByOffset) assert.ok(Math.abs(mean) < 0.1, `mean residual ${mean.toFixed(3)} sigma at ${k} px from the trail`);
  // Per pixel: (nearly) every trail pixel within 0.5 sigma of the stack without that frame.
  assert.ok(t.p99 < 0.5, `99th percentile |residual| ${t.p99.toFixed(3)} sigma`);
  const L = t.length;
  // The satellite frame's trail samples were rejected (high side), on every trail pixel.
  const satDiag = base.diagnostics!.frames.find((f: { index: number }) => f.index === sat.index);
  assert.ok(satDiag.rejected[0].high > 5 * L, `high rejections of the satellite frame: ${satDiag.rejected[0].high}`);
});

test('mono: the four normalisation modes differ as their names say', async () => {
  const ref = await readFitsImage(join(lights(), 'light_00001.fits'));
  const refLevel = robust(ref.data).median;
  const out: Record<string, Float32Array> = { addscale: plane(base.image!, 0) };
  const diags: Record<string, any> = { addscale: base.diagnostics };
  // The global modes alone (local normalization matches the backgrounds on top of them and is
  // tested on its own): addscale again without it.
  const noLn = { local_normalization: false };
  const add = await runStack(ds, runsDir(), config(lights(), { stacking: { ...noLn } }));
  out.addscale = plane(add.image!, 0);
  diags.addscale = add.diagnostics;
  for (const mode of ['background', 'median', 'none'] as const) {
    const r = await runStack(ds, runsDir(), config(lights(), { stacking: { normalization: mode, ...noLn } }));
    assert.is(r.result.status, 'ok', mode);
    out[mode] = plane(r.image!, 0);
    diags[mode] = r.diagnostics;
  }
  const level = (m: string) => robust(out[m]!).median;
  // Level matched to the reference by addscale, background and median (the stack's median sits
  // a little above the frames' own: rejection and weights act on skewed sky noise); not by none,
  // whose level is the frames' mean level (the sky rises frame to frame).
  for (const m of ['addscale', 'background', 'median']) {
    assert.ok(Math.abs(level(m) - refLevel) < 5, `${m}: level ${level(m)} vs reference ${refLevel}`);
    assert.ok(Math.abs(level(m) - level('addscale')) < 1, `${m}: level ${level(m)} vs addscale ${level('addscale')}`);
  }
  assert.ok(level('none') - level('background') > 10, `none: level ${level('none')} vs background ${level('background')}`);
  // With local normalization the level is the reference's star-masked sky surface instead of its
  // global median (a few ADU apart on this field, noise ~66 ADU).
  assert.ok(Math.abs(robust(plane(base.image!, 0)).median - refLevel) < 10, `local normalization: level ${robust(plane(base.image!, 0)).median} vs reference ${refLevel}`);
  // Scale and offset per mode.
  const so = (m: string): { s: number; o: number }[] => diags[m].frames.slice(1).map((f: any) => ({ s: f.normalization[0].scale, o: f.normalization[0].offset }));
  assert.ok(so('none').every((x) => x.s === 1 && x.o === 0));
  assert.ok(so('background').every((x) => x.s === 1) && so('background').some((x) => Math.abs(x.o) > 5));
  assert.ok(so('median').every((x) => x.o === 0) && so('median').some((x) => Math.abs(x.s - 1) > 0.005));
  assert.ok(so('addscale').some((x) => Math.abs(x.s - 1) > 0.005) && so('addscale').some((x) => Math.abs(x.o) > 5));
  // Every pair of outputs differs measurably (far above float rounding).
  const modes = Object.keys(out);
  for (let i = 0; i < modes.length; i++) {
    for (let j = i + 1; j < modes.length; j++) {
      const a = out[modes[i]!]!;
      const b = out[modes[j]!]!;
      let s = 0;
      for (let k = 0; k < a.length; k++) s += (a[k]! - b[k]!) ** 2;
      const rms = Math.sqrt(s / a.length);
      assert.ok(rms > 0.5, `${modes[i]} vs ${modes[j]}: rms difference ${rms}`);
    }
  }
});

test('mono: normalization none turns local normalization off; the noise-model bounds stay (they need only the reference\'s sky)', async () => {
  const r = await runStack(ds, runsDir(), config(lights(), { stacking: { normalization: 'none' } }));
  assert.is(r.result.status, 'ok');
  assert.is(r.diagnostics!.parameters.local_normalization, false);
  assert.is(r.diagnostics!.local_normalization.applied, false);
  assert.equal(r.diagnostics!.local_normalization.frames, []);
  assert.is(r.diagnostics!.local_normalization.reference_sky.L.length, 192);
  assert.is(r.diagnostics!.parameters.rejection.bounds, 'noise_model');
  assert.is(r.diagnostics!.timings_ms.local_normalization_pass, 0);
});

test('mono: quality and uniform weighting differ', async () => {
  const r = await runStack(ds, runsDir(), config(lights(), { stacking: { weighting: 'uniform' } }));
  assert.ok(r.diagnostics!.weights.every((w: number) => w === 1));
  assert.ok(base.diagnostics!.weights.some((w: number) => Math.abs(w - 1) > 0.05));
  const a = plane(base.image!, 0);
  const b = plane(r.image!, 0);
  let s = 0;
  for (let k = 0; k < a.length; k++) s += (a[k]! - b[k]!) ** 2;
  assert.ok(Math.sqrt(s / a.length) > 0.5, `rms difference ${Math.sqrt(s / a.length)}`);
});

test.run();
