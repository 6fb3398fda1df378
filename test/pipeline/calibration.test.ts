// CALIBRATION on generated sets: a noise-free mono set whose calibrated lights are compared
// pixel by pixel with the truth signal (a companion set with the same seed and no optics, dark
// current or bias pattern), and a noisy OSC set for the masters' levels, flat normalisation per
// CFA site, dark auto-select and exposure scaling, master files, dark flats, skips, errors and
// cancellation. Dark grouping and selection rules are unit-tested on header values.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFile, mkdir, mkdtemp, readdir, rm, truncate } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { renderFlat } from '../../fixtures/generator/optics.js';
import { FitsHeader, readFitsImage, writeFits } from '../../src/fits/index.js';
import { GpuError } from '../../src/gpu/errors.js';
import { ok, type Phase } from '../../src/pipeline/phase.js';
import type { RawStackState } from '../../src/pipeline/rawstack/state.js';
import { imageStats } from '../../src/cpu/stats.js';
import { calibrate, DEFAULT_FLAT_FLOOR } from '../../src/cpu/calibrate.js';
import { calibratedHeader, FrameCalibrator } from '../../src/pipeline/stages/calibration/apply.js';
import { combineFrames } from '../../src/pipeline/stages/calibration/masters.js';
import { groupDarks, selectDark, type DarkFrameHeader } from '../../src/pipeline/stages/calibration/dark-select.js';
import { calibrationPhase } from '../../src/pipeline/rawstack/phases/calibration.js';
import { sharedFloat32 } from '../../src/cpu/worker-pool.js';
import { gpu, gpuTest, compareArrays } from '../helpers/gpu.js';
import { boxMedian, config, image, median, runPhasesOn, type PhaseRun } from './calibration-helpers.js';

const W = 256;
const H = 192;
let root = '';
let mono: Truth; // noise-free, full calibration
let monoSignal: string; // companion: same scene, no optics / dark / bias pattern, no calibration frames
let osc: Truth; // noisy OSC RGGB, full calibration
let oscDir = '';
let oscRun: PhaseRun;

const ONLY_CAL = [calibrationPhase];

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-calibration-'));
  const common = { kind: 'mono' as const, frames: 3, width: W, height: H, seed: 11, noise: false, badFrames: 'none' as const };
  mono = await generateDataset({ ...common, out: join(root, 'mono') });
  monoSignal = join(root, 'mono-signal');
  await generateDataset({ ...common, out: monoSignal, calibration: false, optics: false, sensor: { dark_current_e_per_s: 0, hot_pixel_fraction: 0, column_sigma_adu: 0 } });
  oscDir = join(root, 'osc');
  osc = await generateDataset({ out: oscDir, kind: 'osc', pattern: 'RGGB', frames: 5, width: W, height: H, seed: 7, badFrames: 'none' });
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

const dirs = (d: string) => ({ lights_dir: join(d, 'lights'), bias_dir: join(d, 'bias'), darks_dir: join(d, 'darks'), flats_dir: join(d, 'flats') });

test('mono, noise off: masters written, calibrated lights equal the truth signal (vignetting and dust removed)', async () => {
  const run = await runPhasesOn(config(dirs(join(root, 'mono'))), { runsDir: join(root, 'runs'), phases: ONLY_CAL });
  const end = run.end('CALIBRATION')!;
  assert.is(end.status, 'ok');
  const runDir = run.result.runDir;
  const masters = (await readdir(join(runDir, 'outputs/masters'))).sort();
  // Only the dark group some light uses is combined; the 300 s group is listed but not built.
  assert.equal(masters, ['master_bias.fits', 'master_dark_120s.fits', 'master_flat.fits']);
  const groups = (end.dark as { groups: { name: string; lights: number; master: string | null }[] }).groups;
  assert.equal(groups.map((g) => [g.name, g.lights, g.master]), [
    ['master_dark_120s.fits', 3, 'outputs/masters/master_dark_120s.fits'],
    ['master_dark_300s.fits', 0, null],
  ]);
  assert.is(end.frames_calibrated, 3);
  assert.is(end.calibrated_dir, 'outputs/calibrated');
  const st = run.state!;
  assert.equal(st.masters.bias, join(runDir, 'outputs/masters/master_bias.fits'));
  assert.equal(st.masters.dark, join(runDir, 'outputs/masters/master_dark_120s.fits'));
  assert.equal(st.masters.flat, join(runDir, 'outputs/masters/master_flat.fits'));
  assert.is(st.masters.darkflat, null);
  const manifest = st.artifacts.filter((a) => a.phase === 'CALIBRATION').map((a) => [a.type, a.path]);
  assert.equal(manifest, [
    ['master_bias', 'outputs/masters/master_bias.fits'],
    ['master_dark', 'outputs/masters/master_dark_120s.fits'],
    ['master_flat', 'outputs/masters/master_flat.fits'],
    // REPORT's manifest scan lists the calibrated frames' folder once (not every frame).
    ['calibrated_frames', 'outputs/calibrated/'],
  ]);
  assert.equal(await readdir(join(runDir, 'outputs/calibrated')), ['cal_00001.fit', 'cal_00002.fit', 'cal_00003.fit']);
  assert.equal(st.frames.map((f) => [f.calibratedFile, f.darkUsed]), [1, 2, 3].map((i) => [join(runDir, `outputs/calibrated/cal_0000${i}.fit`), 'master_dark_120s.fits']));
  assert.equal(run.frames('CALIBRATION').map((f) => f.outcome), ['ok', 'ok', 'ok']);

  // The flat divides by flat/median(flat): a calibrated pixel is the signal times the median flat.
  const flat = renderFlat(mono.optics, W, H);
  const flatMedian = median(flat);
  const hot = new Set(mono.sensor.hot_pixels.list.map((h) => h.y * W + h.x));
  const tolerance = (expected: number) => 2.5 + 2e-4 * Math.abs(expected);
  for (let k = 1; k <= 3; k++) {
    const cal = await image(join(runDir, `outputs/calibrated/cal_0000${k}.fit`));
    const raw = await image(join(root, 'mono/lights', `light_0000${k}.fits`));
    const signal = await image(join(monoSignal, 'lights', `light_0000${k}.fits`));
    assert.is(cal.layout.bitpix, -32);
    let worst = 0;
    let sum = 0;
    let n = 0;
    for (let i = 0; i < W * H; i++) {
      // Hot pixels differ by the lights' and darks' temperature; saturated cores clip differently with and without the flat.
      if (hot.has(i) || signal.data[i]! > 40000 || raw.data[i]! > 40000) continue;
      const expected = (signal.data[i]! - mono.sensor.bias_adu) * flatMedian;
      const err = cal.data[i]! - expected;
      worst = Math.max(worst, Math.abs(err) / tolerance(expected));
      sum += err;
      n++;
    }
    console.log(`  mono frame ${k}: worst |error| ${worst.toFixed(2)} x tolerance, mean error ${(sum / n).toFixed(4)} ADU over ${n} px`);
    assert.ok(worst <= 1, `frame ${k}: worst error ${worst.toFixed(2)} x tolerance (2.5 ADU + 2e-4 x signal)`);
    assert.ok(Math.abs(sum / n) < 0.1, `frame ${k}: mean error ${(sum / n).toFixed(3)} ADU`);
    // Vignetting: a corner against the centre, before and after, against the unvignetted truth.
    const ratio = (d: ArrayLike<number>, offset: number) => (boxMedian(d, W, 8, 8, 6) - offset) / (boxMedian(d, W, W >> 1, H >> 1, 6) - offset);
    const truthRatio = ratio(signal.data, mono.sensor.bias_adu);
    const rawRatio = ratio(raw.data, mono.sensor.bias_adu);
    const calRatio = ratio(cal.data, 0);
    assert.ok(rawRatio < truthRatio * 0.85, `raw corner/centre ${rawRatio.toFixed(3)} shows the vignetting (truth ${truthRatio.toFixed(3)})`);
    assert.ok(Math.abs(calRatio / truthRatio - 1) < 0.01, `calibrated corner/centre ${calRatio.toFixed(4)} vs truth ${truthRatio.toFixed(4)}`);
    // Dust: the shadow's ring is gone after calibration.
    for (const d of mono.optics.dust) {
      const x = Math.round(d.x + (d.r_inner + d.r_outer) / 2);
      const y = Math.round(d.y);
      const before = (raw.data[y * W + x]! - mono.sensor.bias_adu) / (signal.data[y * W + x]! - mono.sensor.bias_adu);
      const after = cal.data[y * W + x]! / (signal.data[y * W + x]! - mono.sensor.bias_adu);
      assert.ok(before < flat[(y * W + x)]! + 0.02 && before < flatMedian - d.depth / 2, `dust at ${x},${y} darkens the raw light (${before.toFixed(3)})`);
      assert.ok(Math.abs(after / flatMedian - 1) < 0.01, `dust at ${x},${y} removed (${after.toFixed(4)} vs ${flatMedian.toFixed(4)})`);
    }
  }

  // Header of a calibrated frame: the light's cards plus the calibration provenance.
  const cal = await image(join(runDir, 'outputs/calibrated/cal_00002.fit'));
  const h = cal.header;
  assert.equal([h.getBoolean('CALIBRAT'), h.getBoolean('BIASCORR'), h.getBoolean('DARKCORR'), h.getBoolean('FLATCORR')], [true, true, true, true]);
  assert.is(h.getString('DARKSEL'), 'master_dark_120s.fits');
  assert.is(h.getNumber('DARKSCAL'), 1);
  assert.is(h.getNumber('EXPTIME'), 120);
  assert.is(h.getString('IMAGETYP'), 'Light Frame');
  assert.is(h.getNumber('BZERO'), undefined);
  const history = h.commentary('HISTORY').filter((l) => l.startsWith('skystack CALIBRATION'));
  assert.is(history.length, 3, history.join(' | '));
  const flatHeader = (await image(join(runDir, 'outputs/masters/master_flat.fits'))).header;
  assert.equal([flatHeader.getString('IMAGETYP'), flatHeader.getNumber('NCOMBINE'), flatHeader.getBoolean('BIASCORR'), flatHeader.getBoolean('FLATNORM')], ['Master Flat', 8, true, true]);
  // Progress counts every calibration file combined and every light.
  const progress = run.lines.filter((l) => l.type === 'phase_progress' && l.phase === 'CALIBRATION') as Extract<PhaseRun['lines'][number], { type: 'phase_progress' }>[];
  assert.equal([progress.at(-1)!.current, progress.at(-1)!.total], [8 + 6 + 8 + 3, 8 + 6 + 8 + 3]);
});

test('OSC with noise: master bias and dark levels against the truth, flat median 1 per CFA site, 120 s darks for 120 s lights', async () => {
  // The default device: the masters' stack kernel runs in WGSL where an adapter exists.
  oscRun = await runPhasesOn(config(dirs(oscDir)), { runsDir: join(root, 'runs'), phases: ONLY_CAL, device: 'auto' });
  const end = oscRun.end('CALIBRATION')!;
  assert.is(end.status, 'ok');
  const runDir = oscRun.result.runDir;
  const sensor = osc.sensor;
  const bias = await image(join(runDir, 'outputs/masters/master_bias.fits'));
  assert.ok(Math.abs(median(bias.data) - sensor.bias_adu) < 0.5, `master bias median ${median(bias.data)}`);
  assert.is(bias.header.getNumber('NCOMBINE'), 8);
  // Dark: bias-corrected, dark current x exposure at each dark's temperature, plus hot pixels.
  const darks120 = osc.calibration!.darks.filter((d) => d.nominal_exptime === 120);
  const thermal = (rate: number) => darks120.reduce((a, d) => a + rate * d.exptime * 2 ** ((d.temperature - sensor.set_temp_c) / sensor.dark_doubling_c), 0) / darks120.length / sensor.gain_e_per_adu;
  const dark = await image(join(runDir, 'outputs/masters/master_dark_120s.fits'));
  const darkMedian = median(dark.data);
  console.log(`  OSC masters: bias median ${median(bias.data)} (truth ${sensor.bias_adu}), dark median ${darkMedian.toFixed(3)} (truth ${thermal(sensor.dark_current_e_per_s).toFixed(3)}) ADU, ${end.timing_ms ? JSON.stringify(end.timing_ms) : ''} ${JSON.stringify(end.device)}`);
  assert.ok(Math.abs(darkMedian - thermal(sensor.dark_current_e_per_s)) < 0.25, `master dark median ${darkMedian.toFixed(3)} vs ${thermal(sensor.dark_current_e_per_s).toFixed(3)} ADU`);
  assert.is(dark.header.getBoolean('BIASCORR'), true);
  assert.ok(Math.abs(dark.header.getNumber('EXPTIME')! - 120) < 0.1);
  const hotChecked = sensor.hot_pixels.list.filter((h) => h.rate_e_per_s * 120 > 400);
  assert.ok(hotChecked.length >= 2, `${hotChecked.length} hot pixels to check`);
  for (const hp of hotChecked) {
    const want = thermal(hp.rate_e_per_s + sensor.dark_current_e_per_s);
    const got = dark.data[hp.y * W + hp.x]!;
    const sigma = Math.sqrt(want * sensor.gain_e_per_adu) / sensor.gain_e_per_adu / Math.sqrt(darks120.length);
    assert.ok(Math.abs(got - want) < 5 * sigma + 10, `hot pixel ${hp.x},${hp.y}: ${got.toFixed(1)} vs ${want.toFixed(1)} ADU`);
  }
  // Flat: median 1 at each of the 4 CFA sites.
  const flat = await image(join(runDir, 'outputs/masters/master_flat.fits'));
  const siteMedians = imageStats(flat.data, { width: W, height: H, mode: 'bayer' }).map((s) => s.median);
  for (const m of siteMedians) assert.ok(Math.abs(m - 1) < 1e-5, `flat site median ${m}`);
  // Before normalisation the sites carried the panel's tint (r 0.886, g 1, b 0.763).
  const raw = (end.flat as { site_medians: number[] }).site_medians;
  assert.ok(Math.abs(raw[0]! / raw[1]! - osc.calibration!.flat_tint.r!) < 0.01 && Math.abs(raw[3]! / raw[1]! - osc.calibration!.flat_tint.b!) < 0.01, `site medians ${raw}`);
  // Auto-select: the 120 s darks for every 120 s light, unscaled.
  assert.equal(oscRun.state!.frames.map((f) => f.darkUsed), Array(5).fill('master_dark_120s.fits'));
  for (const f of oscRun.frames('CALIBRATION')) assert.equal([f.metrics?.dark, f.metrics?.dark_scale], ['master_dark_120s.fits', 1]);
  assert.is(oscRun.warnings('dark_scaled').length, 0);
  const cal = await image(join(runDir, 'outputs/calibrated/cal_00005.fit'));
  assert.is(cal.header.getString('DARKSEL'), 'master_dark_120s.fits');
  assert.is(cal.header.getString('BAYERPAT'), 'RGGB');
});

test('a light exposure with no dark group within tolerance: the closest group, scaled by the exposure ratio, with a warning', async () => {
  const only300 = join(root, 'darks300');
  await mkdir(only300, { recursive: true });
  for (const d of osc.calibration!.darks.filter((x) => x.nominal_exptime === 300)) await copyFile(join(oscDir, d.file), join(only300, d.file.split('/').pop()!));
  const run = await runPhasesOn(config({ ...dirs(oscDir), darks_dir: only300 }), { runsDir: join(root, 'runs'), phases: ONLY_CAL });
  assert.is(run.end('CALIBRATION')!.status, 'ok');
  const warn = run.warnings('dark_scaled');
  assert.is(warn.length, 1, 'one warning for the 5 lights of one exposure');
  assert.match(warn[0]!.message, /no dark within 8 % of the 120 s exposure of 5 lights .*master_dark_300s\.fits .*scaled by 0\.400/);
  const cal = await image(join(run.result.runDir, 'outputs/calibrated/cal_00001.fit'));
  const scale = cal.header.getNumber('DARKSCAL')!;
  assert.ok(Math.abs(scale - 0.4) < 0.001, `DARKSCAL ${scale}`);
  assert.is(cal.header.getString('DARKSEL'), 'master_dark_300s.fits');
  // Dark current is linear in exposure: the scaled dark calibrates like the matching one.
  const matched = await image(join(oscRun.result.runDir, 'outputs/calibrated/cal_00001.fit'));
  const diff = Array.from(cal.data, (v, i) => v - matched.data[i]!);
  console.log(`  scaled dark: DARKSCAL ${scale}, median difference to the matched dark ${median(diff).toFixed(3)} ADU`);
  assert.ok(Math.abs(median(diff)) < 0.5, `median difference ${median(diff)}`);
  const rawLight = await image(join(oscDir, 'lights/light_00001.fits'));
  for (const hp of osc.sensor.hot_pixels.list.filter((h) => h.rate_e_per_s * 120 > 1000)) {
    const i = hp.y * W + hp.x;
    const hotSignal = hp.rate_e_per_s * 120 / osc.sensor.gain_e_per_adu;
    assert.ok(Math.abs(diff[i]!) < 0.1 * hotSignal, `hot pixel ${hp.x},${hp.y}: scaled-dark residual ${diff[i]!.toFixed(1)} of ${hotSignal.toFixed(0)} ADU (raw ${rawLight.data[i]})`);
  }
});

test('master files instead of folders give the same frames; dark flats are subtracted from the flats', async () => {
  const m = (name: string) => join(oscRun.result.runDir, 'outputs/masters', name);
  const cfg = config({
    lights_dir: join(oscDir, 'lights'),
    calibration: {
      bias_use_master: true,
      bias_master: m('master_bias.fits'),
      dark_use_master: true,
      dark_master: m('master_dark_120s.fits'),
      flat_use_master: true,
      flat_master: m('master_flat.fits'),
    },
  });
  const run = await runPhasesOn(cfg, { runsDir: join(root, 'runs'), phases: ONLY_CAL });
  const end = run.end('CALIBRATION')!;
  assert.is(end.status, 'ok', JSON.stringify(end));
  assert.equal([(end.bias as { source: string }).source, (end.dark as { source: string }).source, (end.flat as { source: string }).source], ['master', 'master', 'master']);
  // Our masters say they are already bias-corrected: nothing is subtracted twice.
  assert.is((end.flat as { offset: string }).offset, 'already corrected (header)');
  assert.equal(await readdir(join(run.result.runDir, 'outputs/masters')), []);
  assert.is(run.state!.masters.dark, m('master_dark_120s.fits'));
  for (const k of [1, 3]) {
    const a = await image(join(run.result.runDir, `outputs/calibrated/cal_0000${k}.fit`));
    const b = await image(join(oscRun.result.runDir, `outputs/calibrated/cal_0000${k}.fit`));
    const d = compareArrays(a.data, b.data);
    assert.ok(d.maxAbs < 0.02 && d.nanMismatches === 0, `frame ${k}: max difference ${d.maxAbs}`);
  }
  // Dark flats: the bias frames stand in for them (same exposure-free offset), so the result matches.
  const df = await runPhasesOn(config({ ...dirs(oscDir), darkflats_dir: join(oscDir, 'bias') }), { runsDir: join(root, 'runs'), phases: ONLY_CAL });
  const dfEnd = df.end('CALIBRATION')!;
  assert.is(dfEnd.status, 'ok');
  assert.is((dfEnd.flat as { offset: string }).offset, 'master_darkflat.fits');
  assert.is((dfEnd.darkflat as { master: string }).master, 'outputs/masters/master_darkflat.fits');
  assert.ok(df.state!.masters.darkflat?.endsWith('master_darkflat.fits'));
  const a = await image(join(df.result.runDir, 'outputs/calibrated/cal_00002.fit'));
  const b = await image(join(oscRun.result.runDir, 'outputs/calibrated/cal_00002.fit'));
  assert.ok(compareArrays(a.data, b.data).maxAbs < 1e-3);
});

test('skipped without calibration sources (lights pass on unchanged), disabled when switched off, one stage off', async () => {
  const none = await runPhasesOn(config({ lights_dir: join(oscDir, 'lights') }), { runsDir: join(root, 'runs') });
  const end = none.end('CALIBRATION')!;
  assert.equal([end.status, end.reason], ['skipped', 'not_configured']);
  assert.ok(none.state!.frames.every((f) => f.calibratedFile === null && f.darkUsed === null));
  assert.is(none.end('CFA_CHANNEL_PREP')!.status, 'ok', 'the next phase reads the lights');
  assert.is(none.end('CFA_CHANNEL_PREP')!.source, 'lights');
  const off = await runPhasesOn(config({ ...dirs(oscDir), calibration: { use_bias: false, use_dark: false, use_flat: false } }), { runsDir: join(root, 'runs'), phases: ONLY_CAL });
  assert.equal([off.end('CALIBRATION')!.status, off.end('CALIBRATION')!.reason], ['skipped', 'disabled']);
  const noDark = await runPhasesOn(config({ ...dirs(oscDir), calibration: { use_dark: false } }), { runsDir: join(root, 'runs'), phases: ONLY_CAL });
  assert.is(noDark.end('CALIBRATION')!.status, 'ok');
  assert.is((noDark.end('CALIBRATION')!.dark as { source: string }).source, 'disabled');
  const h = (await image(join(noDark.result.runDir, 'outputs/calibrated/cal_00001.fit'))).header;
  assert.equal([h.getBoolean('BIASCORR'), h.getBoolean('DARKCORR'), h.getBoolean('FLATCORR'), h.getString('DARKSEL')], [true, false, true, 'none']);
  assert.ok(noDark.state!.frames.every((f) => f.darkUsed === null));
});

test('a missing or empty calibration folder and a master of another size are errors naming them; REPORT still runs', async () => {
  const missing = join(root, 'no-such-darks');
  const run = await runPhasesOn(config({ ...dirs(oscDir), darks_dir: missing }), { runsDir: join(root, 'runs') });
  const end = run.end('CALIBRATION')!;
  assert.equal([end.status, end.reason], ['error', 'calibration_error']);
  assert.match(String(end.message), `darks_dir "${missing}": folder does not exist`);
  assert.is(run.end('CFA_CHANNEL_PREP'), undefined, 'later core phases do not start');
  assert.is(run.end('REPORT')!.status, 'ok');
  assert.is(run.result.status, 'error');
  const empty = join(root, 'empty-flats');
  await mkdir(empty, { recursive: true });
  const e2 = (await runPhasesOn(config({ ...dirs(oscDir), flats_dir: empty }), { runsDir: join(root, 'runs'), phases: ONLY_CAL })).end('CALIBRATION')!;
  assert.equal([e2.status, e2.reason], ['error', 'calibration_error']);
  assert.match(String(e2.message), `flats_dir "${empty}" holds no file matching "*.fit;*.fits;*.fts;*.fit.gz;*.fits.gz;*.fts.gz;*.fz"`);
  const small = join(root, 'small_bias.fits');
  await writeFits(small, { width: 64, height: 48, data: new Float32Array(64 * 48).fill(800) });
  const e3 = (await runPhasesOn(config({ ...dirs(oscDir), calibration: { bias_use_master: true, bias_master: small } }), { runsDir: join(root, 'runs'), phases: ONLY_CAL })).end('CALIBRATION')!;
  assert.equal([e3.status, e3.reason], ['error', 'calibration_error']);
  assert.match(String(e3.message), `calibration.bias_master "${small}" is 64x48x1, the lights are ${W}x${H}x1`);
  const e4 = (await runPhasesOn(config({ ...dirs(oscDir), calibration: { flat_use_master: true } }), { runsDir: join(root, 'runs'), phases: ONLY_CAL })).end('CALIBRATION')!;
  assert.match(String(e4.message), 'calibration.flat_use_master is true but calibration.flat_master is empty');
});

test('cancellation between frames: the phase ends error/cancelled, no further frame is written, REPORT runs', async () => {
  const controller = new AbortController();
  const run = await runPhasesOn(config({ ...dirs(oscDir), runtime_limits: { parallel_workers: 1 } }), {
    runsDir: join(root, 'runs'),
    phases: ONLY_CAL,
    signal: controller.signal,
    onEvent: (l) => {
      if (l.type === 'frame' && l.phase === 'CALIBRATION' && l.index === 1) controller.abort();
    },
  });
  const end = run.end('CALIBRATION')!;
  assert.equal([end.status, end.reason], ['error', 'cancelled']);
  assert.is(run.result.status, 'cancelled');
  assert.is(run.end('REPORT')!.status, 'ok');
  assert.equal(await readdir(join(run.result.runDir, 'outputs/calibrated')), ['cal_00001.fit', 'cal_00002.fit']);
  assert.is(run.lines.at(-1)!.type, 'run_end');
});

test('cancellation with frame workers: cancelled within seconds, only whole calibrated frames are left', async () => {
  const controller = new AbortController();
  let abortedAt = 0;
  const run = await runPhasesOn(config({ ...dirs(oscDir), runtime_limits: { parallel_workers: 2 } }), {
    runsDir: join(root, 'runs'),
    phases: ONLY_CAL,
    signal: controller.signal,
    onEvent: (l) => {
      if (l.type === 'frame' && l.phase === 'CALIBRATION' && abortedAt === 0) {
        abortedAt = performance.now();
        controller.abort();
      }
    },
  });
  const endedAt = performance.now();
  const end = run.end('CALIBRATION')!;
  assert.equal([end.status, end.reason], ['error', 'cancelled']);
  assert.ok(endedAt - abortedAt < 5000, `cancel took ${(endedAt - abortedAt).toFixed(0)} ms`);
  // A worker terminated mid-write leaves no temporary file; what is there reads back whole.
  const left = await readdir(join(run.result.runDir, 'outputs/calibrated'));
  assert.ok(left.every((n) => /^cal_\d{5}\.fit$/.test(n)), left.join(', '));
  assert.ok(left.length < 4, `${left.length} frames written before the cancel took effect`);
  for (const n of left) {
    const img = await readFitsImage(join(run.result.runDir, 'outputs/calibrated', n), 'float32');
    assert.equal([img.width, img.height], [W, H]);
  }
});

test('a light that fails to calibrate is excluded as calibration_failed and the run goes on', async () => {
  const dir = join(root, 'lights-sabotaged');
  await mkdir(dir, { recursive: true });
  for (const k of [1, 2, 3]) await copyFile(join(oscDir, 'lights', `light_0000${k}.fits`), join(dir, `light_0000${k}.fits`));
  // Cut the second light short after INPUT_SCAN has read its header.
  const sabotage: Phase<RawStackState> = {
    name: 'SABOTAGE',
    optional: false,
    async run() {
      await truncate(join(dir, 'light_00002.fits'), 2880 + 1000);
      return ok();
    },
  };
  const run = await runPhasesOn(config({ ...dirs(oscDir), lights_dir: dir }), { runsDir: join(root, 'runs'), phases: [sabotage, calibrationPhase] });
  const end = run.end('CALIBRATION')!;
  assert.equal([end.status, end.frames_calibrated, end.frames_failed], ['ok', 2, 1]);
  const f = run.state!.frames[1]!;
  assert.equal([f.status, f.exclusions[0]!.code, f.calibratedFile], ['excluded', 'calibration_failed', null]);
  console.log(`  sabotaged light: ${f.exclusions[0]!.detail}`);
  assert.match(f.exclusions[0]!.detail, /light_00002.fits/);
  assert.equal(await readdir(join(run.result.runDir, 'outputs/calibrated')), ['cal_00001.fit', 'cal_00003.fit']);
});

test('masters stream in bands: many small bands give the same master as one; the WGSL stack agrees; a budget below one band is refused', async () => {
  const files = osc.calibration!.bias.map((b) => join(oscDir, b.file));
  const base = { width: W, height: H, kappa: 3, gpu: null, workers: 2, checkCancelled: () => undefined };
  const one = await combineFrames(files, { ...base, budgetBytes: 1 << 30 });
  assert.is(one.bands, 1);
  const reads: number[] = [];
  const banded = await combineFrames(files, { ...base, budgetBytes: 16 * (files.length * W * 4 + 12 * W), onProgress: (r) => reads.push(r) });
  assert.equal([banded.bands, banded.rowsPerBand], [12, 16]);
  assert.equal(reads, Array.from({ length: 12 }, (_, i) => (i + 1) * files.length));
  assert.equal(compareArrays(banded.data, one.data).maxAbs, 0);
  if (gpu.ctx) {
    const dev = await combineFrames(files, { ...base, gpu: gpu.ctx, budgetBytes: 40 * (files.length * W * 4 + 12 * W) });
    assert.is(dev.device, 'gpu');
    const d = compareArrays(dev.data, one.data);
    assert.ok(d.maxAbs < 0.01 && d.nanMismatches === 0, `WGSL vs TypeScript master: ${d.maxAbs}`);
  }
  try {
    await combineFrames(files, { ...base, budgetBytes: 4 * files.length * W * 4 });
    assert.unreachable('a budget below a 16-row band must be refused');
  } catch (e) {
    assert.ok(e instanceof GpuError && e.code === 'BUDGET_TOO_SMALL', String(e));
    assert.match((e as Error).message, /raise runtime_limits.memory_budget/);
  }
});

test('calibrated header: SATURATE moves to the calibrated scale, provenance cards', () => {
  const light = new FitsHeader();
  light.set('EXPTIME', 120, { real: true });
  light.set('SATURATE', 65535);
  const h = calibratedHeader(light, { bias: 'master_bias.fits', dark: 'master_dark_300s.fits', darkScale: 0.4, flat: null, biasLevel: 800, darkLevel: 2, flatHigh: 1.1 });
  assert.ok(Math.abs(h.getNumber('SATURATE')! - (65535 - 800 - 2) / 1.1) < 1e-3);
  assert.equal([h.getBoolean('CALIBRAT'), h.getBoolean('BIASCORR'), h.getBoolean('DARKCORR'), h.getBoolean('FLATCORR'), h.getString('DARKSEL'), h.getNumber('DARKSCAL')], [true, true, true, false, 'master_dark_300s.fits', 0.4]);
  assert.is(light.getBoolean('CALIBRAT'), undefined, 'the light header is not modified');
});

const dk = (exptime: number | null, temperature: number | null): DarkFrameHeader => ({ exptime, temperature });

test('dark grouping and selection rules', () => {
  const darks = [dk(119.98, -10.2), dk(120.03, -9.8), dk(300.01, -10), dk(299.95, -10.1), dk(120, -4.9), dk(120.02, -5.1)];
  const g = groupDarks(darks, { autoSelect: true, useTemp: false, tempToleranceC: 3 });
  assert.equal(g.map((x) => [x.name, x.members.length]), [['master_dark_120s.fits', 4], ['master_dark_300s.fits', 2]]);
  const gt = groupDarks(darks, { autoSelect: true, useTemp: true, tempToleranceC: 1 });
  assert.equal(gt.map((x) => [x.name, x.members.length]), [['master_dark_120s_-10.0C.fits', 2], ['master_dark_120s_-5.0C.fits', 2], ['master_dark_300s.fits', 2]]);
  const opts = { autoSelect: true, useTemp: true, tempToleranceC: 1, exposureTolerancePercent: 8, biasCorrected: true };
  assert.equal(selectDark(gt, dk(120, -5.3), opts), { groupId: 1, scale: 1, note: 'exact' });
  assert.equal(selectDark(gt, dk(125, -9.5), opts), { groupId: 0, scale: 1, note: 'exact' });
  assert.equal(selectDark(gt, dk(120, -20), opts), { groupId: 0, scale: 1, note: 'temperature_mismatch' });
  const scaled = selectDark(gt, dk(600, -10), opts);
  assert.equal([scaled.groupId, scaled.note], [2, 'scaled']);
  assert.ok(Math.abs(scaled.scale - 2) < 1e-3);
  assert.equal(selectDark(gt, dk(600, -10), { ...opts, biasCorrected: false }), { groupId: 2, scale: 1, note: 'unscaled_no_bias' });
  assert.equal(selectDark(gt, dk(null, -10), opts).note, 'exposure_unknown');
  // Tolerance edge: 8 % of 120 s.
  const g120 = groupDarks([dk(120, null)], { autoSelect: true, useTemp: false, tempToleranceC: 3 });
  assert.equal(selectDark(g120, dk(120 / 1.08 + 0.01, null), { ...opts, useTemp: false }).note, 'exact');
  assert.equal(selectDark(g120, dk(130, null), { ...opts, useTemp: false }).note, 'exact');
  assert.equal(selectDark(g120, dk(131, null), { ...opts, useTemp: false }).note, 'scaled');
  // Without auto-select: one group of everything, never scaled.
  const all = groupDarks(darks, { autoSelect: false, useTemp: false, tempToleranceC: 3 });
  assert.is(all.length, 1);
  assert.equal(selectDark(all, dk(600, -10), { ...opts, autoSelect: false }), { groupId: 0, scale: 1, note: 'single' });
});

gpuTest('the WGSL calibrator (masters resident on the device) matches the TypeScript one', async () => {
  const n = W * H;
  const fill = (f: (i: number) => number) => {
    const a = sharedFloat32(n);
    for (let i = 0; i < n; i++) a[i] = f(i);
    return a;
  };
  const masters = { bias: fill((i) => 800 + (i % 7)), flat: fill((i) => (i % 97 === 0 ? 0.01 : 0.8 + (i % 13) / 40)), darks: new Map([[0, fill((i) => (i % 101) / 10)]]) };
  const light = Float32Array.from({ length: n }, (_, i) => 900 + ((i * 7919) % 3000));
  // The reference: the TypeScript calibrate of the light task.
  const cpu = calibrate(light, { bias: masters.bias, dark: masters.darks.get(0)!, flat: masters.flat }, { darkScale: 0.4, flatFloor: DEFAULT_FLAT_FLOOR });
  const dev = new FrameCalibrator(masters, gpu.ctx!);
  try {
    for (let k = 0; k < 2; k++) {
      const got = await dev.calibrate(light, 0, 0.4);
      const d = compareArrays(got, cpu);
      assert.is(d.nanMismatches, 0);
      assert.ok(d.maxAbs < 1e-3, `max difference ${d.maxAbs}`);
    }
  } finally {
    dev.dispose();
  }
  assert.ok(Number.isNaN(cpu[0]!), 'a dead flat pixel is NaN');
});

test.run();
