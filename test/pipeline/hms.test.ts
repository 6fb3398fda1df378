// HYPERMETRIC_STRETCH phase (issue 8 item 2): skip reasons (disabled, no RGB stack, PCC failed
// with require_successful_pcc true / false), input choice PCC > BGE > linear, sensor profiles,
// fixed and auto log-D, ready_to_use and scientific bars (background median within 0.01 of
// target_bg, monotone curve, finite output), output name and diagnostics.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { readFitsImage } from '../../src/fits/index.js';
import { failed, skipped } from '../../src/pipeline/phase.js';
import { curveAt, resolveProfile, solveLogD, softClip } from '../../src/pipeline/stages/hms/solve.js';
import { bgePhase } from '../../src/pipeline/rawstack/phases/bge.js';
import { hmsPhase } from '../../src/pipeline/rawstack/phases/hms.js';
import { withTempDir } from '../helpers/tmp.js';
import { config, quantile, runOn, starMask, synthRgb, type PostRun } from './postprocess-helpers.js';

const img = synthRgb({ seed: 5, width: 480, height: 360, gradient: 0, stars: 90 });
const n = img.width * img.height;
const bgMask = starMask(img, 8);
const REC = [0.2126, 0.7152, 0.0722];
const off = { astrometry: false, pcc: false, bge: false, hypermetric_stretch: true };
const free = { require_successful_pcc: false };

async function diag(r: PostRun): Promise<any> {
  return JSON.parse(await readFile(join(r.result.runDir, 'artifacts', 'preprocess', 'hms_diagnostics.json'), 'utf8'));
}

function lum(data: Float32Array, i: number): number {
  return REC[0]! * data[i]! + REC[1]! * data[n + i]! + REC[2]! * data[2 * n + i]!;
}

function backgroundMedian(data: Float32Array): { all: number; sky: number } {
  const all: number[] = [];
  const sky: number[] = [];
  for (let i = 0; i < n; i++) {
    const v = lum(data, i);
    all.push(v);
    if (!bgMask[i]) sky.push(v);
  }
  return { all: quantile(all, 0.5), sky: quantile(sky, 0.5) };
}

test('skips: disabled, no_rgb_stack, pcc_failed (require_successful_pcc true, PCC skipped or absent)', async () => {
  await withTempDir('hms-skip', async (dir) => {
    const a = await runOn(img, config({ postprocess: { ...off, hypermetric_stretch: false } }), join(dir, 'a'), [hmsPhase]);
    assert.is(a.end('HYPERMETRIC_STRETCH')?.reason, 'disabled');
    const b = await runOn(img, config({ postprocess: off, hypermetric_stretch: free }), join(dir, 'b'), [hmsPhase], { rgb: false });
    assert.is(b.end('HYPERMETRIC_STRETCH')?.reason, 'no_rgb_stack');
    const c = await runOn(img, config({ postprocess: off }), join(dir, 'c'), [hmsPhase], { pcc: skipped('no_wcs', 'no WCS') });
    assert.is(c.end('HYPERMETRIC_STRETCH')?.status, 'skipped');
    assert.is(c.end('HYPERMETRIC_STRETCH')?.reason, 'pcc_failed');
    const d = await runOn(img, config({ postprocess: off }), join(dir, 'd'), [hmsPhase]);
    assert.is(d.end('HYPERMETRIC_STRETCH')?.reason, 'pcc_failed');
    assert.not.ok(existsSync(join(d.result.runDir, 'outputs', 'stacked_rgb_hms.fits')));
    assert.is(d.result.status, 'ok');
  });
});

test('require_successful_pcc false: runs after a failed PCC, on the BGE output', async () => {
  await withTempDir('hms-nopcc', async (dir) => {
    const r = await runOn(img, config({ postprocess: { ...off, bge: true }, hypermetric_stretch: free }), dir, [bgePhase, hmsPhase], { pcc: failed('solver_failed', 'no stars') });
    assert.is(r.end('BGE')?.status, 'ok');
    assert.is(r.end('HYPERMETRIC_STRETCH')?.status, 'ok', JSON.stringify(r.end('HYPERMETRIC_STRETCH')));
    const d = await diag(r);
    assert.is(d.input.kind, 'bge');
    assert.is(d.input.file, 'outputs/stacked_rgb_bge.fits');
  });
});

test('PCC ok: runs with require_successful_pcc true on the PCC output', async () => {
  await withTempDir('hms-pcc', async (dir) => {
    const r = await runOn(img, config({ postprocess: off }), dir, [hmsPhase], { pcc: { status: 'ok' } });
    assert.is(r.end('HYPERMETRIC_STRETCH')?.status, 'ok');
    assert.is((await diag(r)).input.kind, 'pcc');
  });
});

for (const [target, mode] of [[0.15, 'ready_to_use'], [0.25, 'ready_to_use'], [0.15, 'scientific']] as const) {
  test(`${mode}, target_bg ${target}: background median within 0.01, finite, diagnostics`, async () => {
    await withTempDir('hms-bar', async (dir) => {
      const t0 = Date.now();
      const r = await runOn(img, config({ postprocess: off, hypermetric_stretch: { ...free, mode, target_bg: target } }), dir, [hmsPhase]);
      const ms = Date.now() - t0;
      assert.is(r.end('HYPERMETRIC_STRETCH')?.status, 'ok', JSON.stringify(r.end('HYPERMETRIC_STRETCH')));
      const out = await readFitsImage(join(r.result.runDir, 'outputs', 'stacked_rgb_hms.fits'));
      assert.is(out.planes, 3);
      assert.ok(out.data.every((v) => Number.isFinite(v) && v >= 0 && v <= 1), 'finite, in [0, 1]');
      const m = backgroundMedian(out.data);
      const d = await diag(r);
      console.log(`  ${mode} ${target}: median ${m.all.toFixed(4)}, sky median ${m.sky.toFixed(4)}; anchor ${d.anchor.value.toExponential(3)} (${d.anchor.method}), logD ${d.log_d.value.toFixed(3)}, clips ${d.clip.black_percent.toFixed(3)}% / ${d.clip.white_percent.toFixed(3)}% (${ms} ms)`);
      assert.ok(Math.abs(m.all - target) <= 0.01, `median ${m.all} vs ${target}`);
      assert.ok(Math.abs(m.sky - target) <= 0.01, `sky median ${m.sky} vs ${target}`);
      assert.is(d.success, true);
      assert.is(d.mode, mode);
      assert.is(d.input.kind, 'linear');
      assert.is(d.input.divisor, 65535);
      assert.is(d.profile.used, 'rec709');
      assert.is(d.profile.profile_source, 'sensor_profile');
      assert.is(d.anchor.method, 'adaptive_histogram');
      // The anchor sits below the sky peak (sky luminance ≈ 1000–1100 ADU of 65535).
      assert.ok(d.anchor.value > 0.012 && d.anchor.value < 1050 / 65535, `anchor ${d.anchor.value}`);
      assert.is(d.log_d.mode, 'auto');
      assert.ok(d.log_d.value > 0 && d.log_d.value < 7);
      assert.is(d.color.strategy, 0);
      assert.is(d.color.grip, 1);
      assert.ok(d.clip.black_percent < 1 && d.clip.white_percent < 1, `clips ${d.clip.black_percent} / ${d.clip.white_percent}`);
      // The coloured sky (R 1000, G 1100, B 900 ADU) keeps every channel above black.
      for (let c = 0; c < 3; c++) assert.ok(quantile(out.data.subarray(c * n, (c + 1) * n), 0.5) > 0.03, `channel ${c} sky`);
      assert.is(d.output, 'outputs/stacked_rgb_hms.fits');
      assert.is(r.state.outputs.stacked_rgb_hms, join(r.result.runDir, 'outputs', 'stacked_rgb_hms.fits'));
      assert.equal(r.state.summaries.HYPERMETRIC_STRETCH?.log_d, d.log_d.value);
      const manifest = JSON.parse(await readFile(join(r.result.runDir, 'artifacts', 'preprocess', 'artifacts_manifest.json'), 'utf8'));
      const paths = manifest.artifacts.map((a: { path: string }) => a.path);
      assert.ok(paths.includes('outputs/stacked_rgb_hms.fits') && paths.includes('artifacts/preprocess/hms_diagnostics.json'));
    });
  });
}

test('monotone: on a grey image the output is a non-decreasing function of the input', async () => {
  const grey = synthRgb({ seed: 3, width: 320, height: 240, gradient: 200, stars: 60, neutral: true });
  const m = grey.width * grey.height;
  await withTempDir('hms-mono', async (dir) => {
    for (const mode of ['ready_to_use', 'scientific']) {
      const r = await runOn(grey, config({ postprocess: off, hypermetric_stretch: { ...free, mode } }), join(dir, mode), [hmsPhase]);
      const out = await readFitsImage(join(r.result.runDir, 'outputs', 'stacked_rgb_hms.fits'));
      const order = Array.from({ length: m }, (_, i) => i).sort((a, b) => grey.data[a]! - grey.data[b]!);
      let worst = 0;
      for (let k = 1; k < m; k++) worst = Math.max(worst, out.data[order[k - 1]!]! - out.data[order[k]!]!);
      assert.ok(worst <= 1e-6, `${mode}: output decreases by ${worst}`);
      assert.ok(out.data[order[m - 1]!]! > out.data[order[0]!]!);
    }
  });
  // The curve and the soft clip themselves.
  let prev = -1;
  for (let v = 0; v <= 1; v += 1 / 4096) {
    const f = curveAt(2.5, 6, v);
    assert.ok(f >= prev);
    prev = f;
  }
  prev = -1;
  for (let v = 0.9; v <= 1; v += 1e-4) {
    const s = softClip(v);
    assert.ok(s >= prev && s <= 1);
    prev = s;
  }
  assert.ok(Math.abs(softClip(1) - 1) < 1e-12);
});

test('fixed log-D, profiles, output_rgb and write_channels', async () => {
  await withTempDir('hms-opts', async (dir) => {
    const r = await runOn(
      img,
      config({ postprocess: off, hypermetric_stretch: { ...free, log_d_mode: 'fixed', fixed_log_d: 3.25, sensor_profile: 'Sony IMX571 (ASI2600/QHY268)', output_rgb: 'my_hms.fits', write_channels: true, adaptive_anchor: false, fixed_color_strategy: -0.5 } }),
      dir,
      [hmsPhase],
    );
    assert.is(r.end('HYPERMETRIC_STRETCH')?.status, 'ok');
    const d = await diag(r);
    assert.is(d.log_d.mode, 'fixed');
    assert.is(d.log_d.value, 3.25);
    assert.is(d.profile.used, 'imx571');
    assert.equal(d.profile.weights, [0.2944, 0.5021, 0.2035]);
    assert.is(d.anchor.method, 'statistical');
    assert.is(d.color.strategy, -0.5);
    assert.is(d.color.shadow_convergence, 1.5);
    assert.is(d.output, 'outputs/my_hms.fits');
    for (const f of ['my_hms.fits', 'my_hms_R.fits', 'my_hms_G.fits', 'my_hms_B.fits']) assert.ok(existsSync(join(r.result.runDir, 'outputs', f)), f);
    const u = await runOn(img, config({ postprocess: off, hypermetric_stretch: { ...free, sensor_profile: 'no such camera', fallback_profile: 'imx455' } }), join(dir, 'u'), [hmsPhase]);
    const du = await diag(u);
    assert.is(du.profile.used, 'imx455');
    assert.is(du.profile.profile_source, 'fallback_profile');
    assert.ok(u.lines.some((l) => l.type === 'warning' && l.code === 'hms_profile_fallback'));
  });
  assert.is(resolveProfile('auto', 'rec709').source, 'auto_fallback_profile');
  assert.is(resolveProfile('IMX585', 'rec709').profile.key, 'imx585');
  assert.is(resolveProfile('zwo seestar s50', 'rec709').profile.key, 'seestar_s50');
  const x = resolveProfile('nope', 'also nope');
  assert.is(x.profile.key, 'rec709');
  assert.is(x.source, 'fallback');
  const s = solveLogD(0.002, 0.2, 6);
  assert.ok(s.reached && Math.abs(curveAt(s.logD, 6, 0.002) - 0.2) < 1e-3);
});

test('WGSL path (device auto, when an adapter exists) matches the TypeScript path', async () => {
  await withTempDir('hms-gpu', async (dir) => {
    const cfg = config({ postprocess: off, hypermetric_stretch: free });
    const cpu = await runOn(img, cfg, join(dir, 'cpu'), [hmsPhase]);
    const gpu = await runOn(img, cfg, join(dir, 'gpu'), [hmsPhase], {}, 'auto');
    const dg = await diag(gpu);
    if (dg.device !== 'wgsl') {
      console.log(`  no adapter for the stretch kernel (${gpu.result.device.kind}); TS only`);
      return;
    }
    const a = (await readFitsImage(join(cpu.result.runDir, 'outputs', 'stacked_rgb_hms.fits'))).data;
    const b = (await readFitsImage(join(gpu.result.runDir, 'outputs', 'stacked_rgb_hms.fits'))).data;
    let worst = 0;
    for (let i = 0; i < a.length; i++) worst = Math.max(worst, Math.abs(a[i]! - b[i]!));
    console.log(`  WGSL (${gpu.result.device.adapter}) vs TS: max |diff| ${worst.toExponential(2)}`);
    assert.ok(worst < 1e-4, `max diff ${worst}`);
    assert.is((await diag(cpu)).device, 'typescript');
  });
});

test.run();
