// CFA_CHANNEL_PREP on generated sets: per-channel background location against the truth sky
// level (calibrated OSC RGGB, raw OSC GBRG, raw mono), the median against the exact median,
// the frame's own CFA phase (XBAYROFF), blank frames excluded by CALIBRATION or here, and the
// histogram statistics against exact clipping on synthetic data, with their cost at 2048×1536,
// and the measurements CALIBRATION hands on (premeasure.ts) against those read from the files.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { copyFile, mkdir, mkdtemp, rm, unlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { renderFlat } from '../../fixtures/generator/optics.js';
import { skyShape } from '../../fixtures/generator/sky.js';
import { writeFits } from '../../src/fits/index.js';
import { MAD_TO_SIGMA } from '../../src/algorithms/robust-stats.js';
import { measureChannels, MONO_PHASES, phaseChannels } from '../../src/pipeline/stages/frames/channel-stats.js';
import { ok, type Phase } from '../../src/pipeline/phase.js';
import { calibrationPhase } from '../../src/pipeline/rawstack/phases/calibration.js';
import { cfaChannelPrepPhase } from '../../src/pipeline/rawstack/phases/cfa-channel-prep.js';
import { referenceSelectionPhase } from '../../src/pipeline/rawstack/phases/reference-selection.js';
import type { RawStackState } from '../../src/pipeline/rawstack/state.js';
import { seededRandom } from '../helpers/tmp.js';
import { config, image, median, runPhasesOn, sites, type PhaseRun } from './calibration-helpers.js';

const W = 256;
const H = 192;
let root = '';
let rggb: Truth;
let gbrg: Truth;
let mono: Truth;

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-cfa-prep-'));
  rggb = await generateDataset({ out: join(root, 'rggb'), kind: 'osc', pattern: 'RGGB', frames: 4, width: W, height: H, seed: 21, badFrames: 'none' });
  gbrg = await generateDataset({ out: join(root, 'gbrg'), kind: 'osc', pattern: 'GBRG', frames: 3, width: W, height: H, seed: 22, badFrames: 'none', calibration: false });
  mono = await generateDataset({ out: join(root, 'mono'), kind: 'mono', frames: 3, width: W, height: H, seed: 23, badFrames: 'none', calibration: false });
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

const CHANNEL_OF = (pattern: string, phase: number) => 'rgb'['RGB'.indexOf(pattern[phase]!)]!;

/**
 * Expected background per channel (r, g, b or l) of frame k: the median over the channel's sites of
 * offset + sky(x, y) · response(x, y) / gain, with response = the flat (raw) or its site median
 * (calibrated: (flat·sky)/(flat/median) = sky·median).
 */
function expectedSky(truth: Truth, k: number, calibrated: boolean): Record<string, number> {
  const frame = truth.frames[k]!;
  const shape = new Float32Array(W * H);
  skyShape(shape, W, H, frame.sky_gradient);
  const flat = renderFlat(truth.optics, W, H);
  const gain = truth.sensor.gain_e_per_adu;
  const darkE = truth.sensor.dark_current_e_per_s * frame.exptime * 2 ** ((frame.temperature - truth.sensor.set_temp_c) / truth.sensor.dark_doubling_c);
  const out: Record<string, number[]> = {};
  for (let p = 0; p < 4; p++) {
    const c = truth.pattern ? CHANNEL_OF(truth.pattern, p) : 'l';
    const siteFlat = median(sites(flat, W, H, p));
    for (let y = p >> 1; y < H; y += 2) {
      for (let x = p & 1; x < W; x += 2) {
        const i = y * W + x;
        const sky = frame.sky_e[c]! * shape[i]!;
        const v = calibrated ? (sky * siteFlat) / gain : truth.sensor.bias_adu + (sky * flat[i]! + darkE) / gain;
        (out[c] ??= []).push(v);
      }
    }
  }
  return Object.fromEntries(Object.entries(out).map(([c, v]) => [c, median(v)]));
}

function checkAgainstTruth(run: PhaseRun, truth: Truth, calibrated: boolean, label: string): void {
  const channels = truth.pattern ? ['r', 'g', 'b'] : ['l'];
  const frames = run.state!.frames;
  for (const f of frames) {
    const norm = f.normalization!;
    assert.is(norm.length, channels.length);
    const want = expectedSky(truth, f.index, calibrated);
    const offset = calibrated ? 0 : truth.sensor.bias_adu;
    const got = norm.map((n) => n.location);
    const rel = channels.map((c, i) => (got[i]! - want[c]!) / (want[c]! - offset));
    console.log(`  ${label} frame ${f.index}: location ${got.map((v) => v.toFixed(1)).join('/')} vs truth ${channels.map((c) => want[c]!.toFixed(1)).join('/')} (${rel.map((r) => (100 * r).toFixed(2)).join('/')} %)`);
    for (let i = 0; i < channels.length; i++) assert.ok(Math.abs(rel[i]!) < 0.015, `${label} frame ${f.index} channel ${channels[i]}: ${(100 * rel[i]!).toFixed(2)} % off`);
    for (const n of norm) {
      assert.equal([n.scale, n.offset], [1, 0], 'scale and offset are left for STACKING');
      assert.ok(n.spread > 0 && n.median >= n.location, 'stars lift the plain median above the clipped location');
    }
  }
}

test('OSC RGGB, calibrated: per-channel sky location within 1.5 % of the truth, median exact, events and summary', async () => {
  const d = join(root, 'rggb');
  const run = await runPhasesOn(config({ lights_dir: join(d, 'lights'), bias_dir: join(d, 'bias'), darks_dir: join(d, 'darks'), flats_dir: join(d, 'flats') }), { runsDir: join(root, 'runs') });
  const end = run.end('CFA_CHANNEL_PREP')!;
  assert.is(end.status, 'ok');
  assert.equal([end.channels, end.source, end.frames_measured, end.cfa_phases], [['R', 'G', 'B'], 'calibrated', 4, { RGGB: 4 }]);
  checkAgainstTruth(run, rggb, true, 'RGGB calibrated');
  // The median is the median of all the channel's pixels (G = both G sites).
  const f = run.state!.frames[2]!;
  const cal = await image(f.calibratedFile!);
  const exact = [median(sites(cal.data, W, H, 0)), median([...sites(cal.data, W, H, 1), ...sites(cal.data, W, H, 2)]), median(sites(cal.data, W, H, 3))];
  f.normalization!.forEach((n, c) => assert.ok(Math.abs(n.median - exact[c]!) < 0.05, `channel ${c}: median ${n.median} vs exact ${exact[c]}`));
  const events = run.frames('CFA_CHANNEL_PREP');
  // Frames run parallel_workers at a time: events come in completion order.
  assert.equal(events.map((e) => [e.index, e.outcome]).sort((a, b) => (a[0] as number) - (b[0] as number)), [0, 1, 2, 3].map((i) => [i, 'ok']));
  const third = events.find((e) => e.index === 2)!;
  assert.equal(third.metrics!.channels, ['R', 'G', 'B']);
  const progress = run.lines.filter((l) => l.type === 'phase_progress' && l.phase === 'CFA_CHANNEL_PREP').at(-1) as Extract<PhaseRun['lines'][number], { type: 'phase_progress' }>;
  assert.equal([progress.current, progress.total], [4, 4]);
  const perChannel = end.per_channel as { channel: string; location_median: number }[];
  assert.equal(perChannel.map((c) => c.channel), ['R', 'G', 'B']);
  assert.is(run.state!.summaries.CFA_CHANNEL_PREP!.frames_measured, 4);
});

test('OSC GBRG and mono raw lights (no calibration): the pattern decides which sites are R and B; mono has one channel', async () => {
  const g = await runPhasesOn(config({ lights_dir: join(root, 'gbrg/lights') }), { runsDir: join(root, 'runs'), phases: [cfaChannelPrepPhase] });
  assert.is(g.end('CFA_CHANNEL_PREP')!.source, 'lights');
  checkAgainstTruth(g, gbrg, false, 'GBRG raw');
  const r = g.state!.frames[0]!.normalization!;
  assert.ok(r[0]!.location - 800 > 1.5 * (r[2]!.location - 800), 'the sky is redder than blue (1.04 vs 0.57 e/s): R and B not swapped');
  const m = await runPhasesOn(config({ lights_dir: join(root, 'mono/lights') }), { runsDir: join(root, 'runs'), phases: [cfaChannelPrepPhase] });
  assert.equal(m.end('CFA_CHANNEL_PREP')!.channels, ['L']);
  checkAgainstTruth(m, mono, false, 'mono raw');
});

test("each frame's own CFA phase: XBAYROFF = 1 on a frame shifted by one column gives the same channel statistics", async () => {
  const dir = join(root, 'shifted');
  await mkdir(dir, { recursive: true });
  await copyFile(join(root, 'gbrg/lights/light_00001.fits'), join(dir, 'light_00001.fits'));
  const src = await image(join(root, 'gbrg/lights/light_00001.fits'));
  const shifted = new Uint16Array(W * H);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) shifted[y * W + x] = src.data[y * W + Math.min(W - 1, x + 1)]!;
  const header = src.header.clone();
  header.set('XBAYROFF', 1);
  await writeFits(join(dir, 'light_00002.fits'), { width: W, height: H, data: shifted }, { header });
  const run = await runPhasesOn(config({ lights_dir: dir }), { runsDir: join(root, 'runs'), phases: [cfaChannelPrepPhase] });
  const end = run.end('CFA_CHANNEL_PREP')!;
  assert.equal(end.cfa_phases, { GBRG: 1, BGGR: 1 });
  const [a, b] = run.state!.frames.map((f) => f.normalization!);
  for (let c = 0; c < 3; c++) {
    const rel = Math.abs(b![c]!.location - a![c]!.location) / (a![c]!.location - 800);
    assert.ok(rel < 0.005, `channel ${c}: ${b![c]!.location} vs ${a![c]!.location}`);
  }
});

test('blank frames (zero padding, constant value) are excluded as blank_frame by CALIBRATION or, without it, here; the run goes on', async () => {
  const dir = join(root, 'with-blanks');
  await mkdir(dir, { recursive: true });
  for (const k of [1, 2, 3]) await copyFile(join(root, 'rggb/lights', `light_0000${k}.fits`), join(dir, `light_0000${k}.fits`));
  const src = await image(join(root, 'rggb/lights/light_00001.fits'));
  const padded = new Uint16Array(W * H);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) padded[y * W + x] = x < 0.4 * W ? src.data[y * W + x]! : 0;
  await writeFits(join(dir, 'light_00004.fits'), { width: W, height: H, data: padded }, { header: src.header });
  await writeFits(join(dir, 'light_00005.fits'), { width: W, height: H, data: new Uint16Array(W * H).fill(1000) }, { header: src.header });
  const plain = await runPhasesOn(config({ lights_dir: dir }), { runsDir: join(root, 'runs'), phases: [cfaChannelPrepPhase] });
  const end = plain.end('CFA_CHANNEL_PREP')!;
  assert.is(end.status, 'ok');
  assert.equal([end.frames_measured, end.frames_excluded], [3, { blank_frame: 2 }]);
  const ex = plain.state!.frames.filter((f) => f.status === 'excluded');
  assert.equal(ex.map((f) => [f.index, f.exclusions[0]!.code]), [[3, 'blank_frame'], [4, 'blank_frame']]);
  assert.match(ex[0]!.exclusions[0]!.detail, /59\.8 % of the pixels are zero or NaN \(padding/);
  assert.match(ex[1]!.exclusions[0]!.detail, /100\.0 % of the pixels hold one value/);
  assert.is(ex[0]!.normalization, null);
  const d = join(root, 'rggb');
  const cal = await runPhasesOn(config({ lights_dir: dir, bias_dir: join(d, 'bias'), darks_dir: join(d, 'darks'), flats_dir: join(d, 'flats') }), { runsDir: join(root, 'runs') });
  // Frame events arrive in completion order (frames are processed concurrently), so sort by index.
  assert.equal([cal.end('CALIBRATION')!.frames_calibrated, cal.end('CALIBRATION')!.frames_blank], [3, 2]);
  assert.equal(cal.frames('CALIBRATION').filter((e) => e.outcome === 'excluded').sort((a, b) => a.index - b.index).map((e) => [e.index, e.code]), [[3, 'blank_frame'], [4, 'blank_frame']]);
  assert.equal(cal.frames('CFA_CHANNEL_PREP').map((e) => e.index).sort((a, b) => a - b), [0, 1, 2], 'excluded frames are not measured again');
});

test('a calibrated frame that cannot be read is excluded as unreadable; the others are measured', async () => {
  const d = join(root, 'rggb');
  // CALIBRATION measured every frame while writing it; frame 1's measurement is dropped, so
  // CFA_CHANNEL_PREP has to read its (now missing) calibrated file.
  const lose: Phase<RawStackState> = {
    name: 'LOSE_FRAME',
    optional: false,
    async run(ctx) {
      await unlink(ctx.state.frames[1]!.calibratedFile!);
      ctx.state.frames[1]!.premeasured = null;
      return ok();
    },
  };
  const run = await runPhasesOn(config({ lights_dir: join(d, 'lights'), bias_dir: join(d, 'bias'), darks_dir: join(d, 'darks'), flats_dir: join(d, 'flats') }), {
    runsDir: join(root, 'runs'),
    phases: [calibrationPhase, lose, cfaChannelPrepPhase],
  });
  const end = run.end('CFA_CHANNEL_PREP')!;
  assert.equal([end.status, end.frames_measured, end.frames_excluded, end.measured_by_calibration], ['ok', 3, { unreadable: 1 }, 3]);
  const f = run.state!.frames[1]!;
  assert.equal([f.status, f.exclusions[0]!.code, f.normalization], ['excluded', 'unreadable', null]);
});

test('statistics and stars measured by CALIBRATION equal those measured from the calibrated files', async () => {
  // OSC RGGB with bias, darks and flats: CALIBRATION measures each light on its frame worker
  // before it leaves memory; forgetting those measurements makes CFA_CHANNEL_PREP and
  // REFERENCE_SELECTION read the calibrated files instead. Both must agree exactly.
  const d = join(root, 'rggb');
  const forget: Phase<RawStackState> = {
    name: 'FORGET',
    optional: false,
    async run(ctx) {
      for (const f of ctx.state.frames) f.premeasured = null;
      return ok();
    },
  };
  const cfg = config({ lights_dir: join(d, 'lights'), bias_dir: join(d, 'bias'), darks_dir: join(d, 'darks'), flats_dir: join(d, 'flats') });
  const early = await runPhasesOn(cfg, { runsDir: join(root, 'runs'), phases: [calibrationPhase, cfaChannelPrepPhase, referenceSelectionPhase] });
  const late = await runPhasesOn(cfg, { runsDir: join(root, 'runs'), phases: [calibrationPhase, forget, cfaChannelPrepPhase, referenceSelectionPhase] });
  assert.equal([early.end('CALIBRATION')!.frames_measured, early.end('CFA_CHANNEL_PREP')!.measured_by_calibration, early.end('REFERENCE_SELECTION')!.measured_earlier], [4, 4, 4]);
  // Without CALIBRATION's measurements CFA_CHANNEL_PREP reads each frame once and measures its stars on that read.
  assert.equal([late.end('CFA_CHANNEL_PREP')!.measured_by_calibration, late.end('REFERENCE_SELECTION')!.measured_earlier], [0, 4]);
  const a = early.state!.frames;
  const b = late.state!.frames;
  assert.equal(a.length, 4);
  for (let i = 0; i < a.length; i++) {
    assert.equal(a[i]!.normalization, b[i]!.normalization, `frame ${i} normalization`);
    assert.equal(a[i]!.metrics, b[i]!.metrics, `frame ${i} metrics`);
    assert.equal(a[i]!.stars, b[i]!.stars, `frame ${i} stars`);
    assert.ok((a[i]!.stars?.xyf.length ?? 0) / 3 > 10, `frame ${i} has stars`);
    assert.equal(a[i]!.premeasured ?? null, null, 'measurements are dropped once used');
  }
  assert.equal(early.state!.referenceIndex, late.state!.referenceIndex);
});

/** Exact kappa-sigma clipped median and MAD sigma by sorting (the reference for the histogram path). */
function exactClipped(values: Float32Array, kappa: number): { location: number; spread: number; median: number } {
  const med = (a: number[]) => {
    const s = [...a].sort((x, y) => x - y);
    const n = s.length;
    return n % 2 ? s[n >> 1]! : (s[n / 2 - 1]! + s[n / 2]!) / 2;
  };
  const all = Array.from(values);
  const m0 = med(all);
  let m = m0;
  let s = MAD_TO_SIGMA * med(all.map((v) => Math.abs(v - m)));
  for (let it = 0; it < 10; it++) {
    const kept = all.filter((v) => v >= m - kappa * s && v <= m + kappa * s);
    const m2 = med(kept);
    const s2 = MAD_TO_SIGMA * med(kept.map((v) => Math.abs(v - m2)));
    const stable = Math.abs(m2 - m) <= 1e-4 * s && Math.abs(s2 - s) <= 1e-4 * s;
    m = m2;
    s = s2;
    if (stable) break;
  }
  return { location: m, spread: s, median: m0 };
}

test('histogram statistics agree with exact clipping (sky + gradient + stars + NaN), and cost well under 100 ms at 2048x1536', () => {
  const rnd = seededRandom(5);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const w = 400;
  const h = 300;
  const data = new Float32Array(w * h);
  const level = [1000, 700, 400];
  const sigma = [30, 22, 15];
  const map = phaseChannels('RGGB');
  for (let y = 0; y < h; y++) {
    for (let x = 0; x < w; x++) {
      const c = map[((y & 1) << 1) | (x & 1)]!;
      let v = level[c]! * (1 + 0.02 * (x / w - 0.5)) + sigma[c]! * gauss();
      if (rnd() < 0.03) v += 2000 * rnd();
      if (rnd() < 0.001) v = NaN;
      data[y * w + x] = v;
    }
  }
  const got = measureChannels(data, w, h, map, 3);
  assert.is(got.blank.blank, false);
  for (let c = 0; c < 3; c++) {
    const values: number[] = [];
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) if (map[((y & 1) << 1) | (x & 1)] === c && Number.isFinite(data[y * w + x]!)) values.push(data[y * w + x]!);
    const want = exactClipped(Float32Array.from(values), 3);
    const g = got.channels[c]!;
    assert.is(g.count, values.length);
    assert.ok(Math.abs(g.location - want.location) < 0.01 * sigma[c]!, `channel ${c} location ${g.location} vs ${want.location}`);
    assert.ok(Math.abs(g.median - want.median) < 0.01 * sigma[c]!, `channel ${c} median ${g.median} vs ${want.median}`);
    assert.ok(Math.abs(g.spread / want.spread - 1) < 0.01, `channel ${c} spread ${g.spread} vs ${want.spread}`);
  }
  // Mono: one channel over every pixel.
  const one = measureChannels(data, w, h, MONO_PHASES, 1);
  assert.is(one.channels.length, 1);
  assert.is(one.channels[0]!.count, got.channels.reduce((a, c) => a + c.count, 0));
  // A mono frame against the exact clipped statistics of its finite pixels (the rough sample
  // statistics that place its histogram go through the Float32 selections).
  const monoData = new Float32Array(w * h);
  for (let i = 0; i < monoData.length; i++) {
    let v = 800 * (1 + 0.02 * ((i % w) / w - 0.5)) + 25 * gauss();
    if (rnd() < 0.03) v += 2000 * rnd();
    if (rnd() < 0.001) v = NaN;
    monoData[i] = v;
  }
  const monoGot = measureChannels(monoData, w, h, MONO_PHASES, 1).channels[0]!;
  const monoFinite = Float32Array.from(Array.from(monoData).filter((v) => Number.isFinite(v)));
  const monoWant = exactClipped(monoFinite, 3);
  assert.is(monoGot.count, monoFinite.length);
  assert.ok(Math.abs(monoGot.location - monoWant.location) < 0.01 * 25, `mono location ${monoGot.location} vs ${monoWant.location}`);
  assert.ok(Math.abs(monoGot.median - monoWant.median) < 0.01 * 25, `mono median ${monoGot.median} vs ${monoWant.median}`);
  assert.ok(Math.abs(monoGot.spread / monoWant.spread - 1) < 0.01, `mono spread ${monoGot.spread} vs ${monoWant.spread}`);
  // Cost at 2048x1536 (best of 3 on this shared machine).
  const big = new Float32Array(2048 * 1536);
  for (let i = 0; i < big.length; i++) big[i] = 500 + 40 * gauss();
  let best = Infinity;
  for (let k = 0; k < 3; k++) {
    const t0 = performance.now();
    measureChannels(big, 2048, 1536, map, 3);
    best = Math.min(best, performance.now() - t0);
  }
  console.log(`  channel statistics at 2048x1536: ${best.toFixed(1)} ms`);
  assert.ok(best < 100, `${best.toFixed(1)} ms`);
});

test.run();
