// Raw Stack on uncalibrated and partly calibrated lights (issue 15, item 1): a mono and an OSC
// bright-sky wide-field session (test/helpers/bright-sky.ts: Orion Tycho-2 stars, mostly
// saturated, plus faint field stars; vignetting, dust, hot pixels, bad frames), each stacked four
// times: bias + darks + flats ("full"), lights only, bias + darks, flats only. For every run:
// the excluded frames are exactly the truth's clouds, trailed and bad-seeing frames (the
// satellite frame stays: rejection removes its trail), the reference is a good frame, the stack's
// FWHM is within 10 % of the full run's, and without darks the cosmetic pass is reported. The
// lights-only stack is plate-solved on real stars: the solver's list (brightest first) holds only
// detections at true star positions, none at a hot pixel; with solve-field installed the OSC
// stack is solved (within 30″ of the true centre), else that part prints why it is skipped.
// (Before issue 15 the OSC lights-only and bias + darks runs excluded a good frame as a FWHM
// outlier of hot pixels and halo bumps, the flat-calibrated ones another for fitting clipped
// cores; the lights-only solve ran out its time on noise "stars".)

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Truth } from '../../fixtures/generator/index.js';
import { applyAffine } from '../../fixtures/generator/index.js';
import { frameMetrics } from '../../src/algorithms/frame-metrics.js';
import { detectStars, saturationPlateau, type StarDetection } from '../../src/algorithms/stars.js';
import { luminanceOf, prepareImageSolve } from '../../src/astro/solve-image.js';
import { lookupSolvers } from '../../src/astro/solve.js';
import { angularSeparationDeg } from '../../src/astro/wcs.js';
import { parseRawStackConfig } from '../../src/config/rawstack.js';
import { keys, readFitsHeader, readFitsImage } from '../../src/fits/index.js';
import type { EventLine } from '../../src/pipeline/events.js';
import { runRawStack, type RawStackRunResult } from '../../src/pipeline/rawstack/run.js';
import { brightSkySession } from '../helpers/bright-sky.js';

type Combo = 'full' | 'lights' | 'bias_darks' | 'flats';
const COMBOS: readonly Combo[] = ['full', 'lights', 'bias_darks', 'flats'];
const KINDS = ['osc', 'mono'] as const;

interface Session {
  truth: Truth;
  data: string;
  stackFwhm: Partial<Record<Combo, number>>;
}

let root = '';
const sessions: Record<string, Session> = {};

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-uncal-'));
  for (const kind of KINDS) {
    const data = join(root, kind);
    sessions[kind] = { truth: await brightSkySession(data, { kind }), data, stackFwhm: {} };
  }
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

function sources(data: string, combo: Combo): Record<string, string> {
  const bd = { bias_dir: join(data, 'bias'), darks_dir: join(data, 'darks') };
  const flats = { flats_dir: join(data, 'flats') };
  return combo === 'full' ? { ...bd, ...flats } : combo === 'bias_darks' ? bd : combo === 'flats' ? flats : {};
}

async function events(run: RawStackRunResult): Promise<EventLine[]> {
  const text = await readFile(join(run.runDir, 'artifacts', 'preprocess', 'events.jsonl'), 'utf8');
  return text
    .trim()
    .split('\n')
    .map((l) => JSON.parse(l) as EventLine);
}

const details = (lines: EventLine[], phase: string): Record<string, unknown> => {
  const end = lines.find((l) => l.type === 'phase_end' && (l as { phase: string }).phase === phase);
  return (end ?? {}) as Record<string, unknown>;
};

/**
 * FWHM of a stack: detectStars on its luminance (resampled: its noise is correlated) with the
 * reference frame's saturation level (its calibrated SATURATE, or the light's plateau: the
 * stack is in the reference's photometric scale, so clipped cores stack to about that level),
 * through frameMetrics, i.e. from the unsaturated stars.
 */
async function stackFwhm(run: RawStackRunResult, s: Session, ref: number): Promise<number> {
  const img = await readFitsImage((run.outputs.stacked_rgb ?? run.outputs.stacked_linear)!);
  const calibrated = join(run.runDir, 'outputs', 'calibrated', `cal_${String(ref + 1).padStart(5, '0')}.fit`);
  const level = existsSync(calibrated) ? keys.saturationLevel((await readFitsHeader(calibrated)).header) : saturationPlateau((await readFitsImage(join(s.data, s.truth.frames[ref]!.file))).data);
  assert.ok(level !== undefined && level !== null && level > 0, 'reference saturation level');
  const det = detectStars(luminanceOf(img), img.width, img.height, { resampled: true, saturationLevel: 0.95 * level! });
  assert.ok(det.ok, 'stack detection');
  return frameMetrics(det as StarDetection).fwhm;
}

for (const kind of KINDS) {
  for (const combo of COMBOS) {
    test(`${kind}, ${combo}: truth's bad frames excluded, good reference, stack FWHM, cosmetic pass`, async () => {
      const s = sessions[kind]!;
      const { truth } = s;
      const solve = combo === 'lights';
      const parsed = parseRawStackConfig({
        lights_dir: join(s.data, 'lights'),
        ...sources(s.data, combo),
        run_name: `${kind}_${combo}`,
        postprocess: { astrometry: solve, bge: false, pcc: false, hypermetric_stretch: false },
        runtime_limits: { parallel_workers: 2, memory_budget: 256 },
      });
      assert.ok(parsed.ok);
      if (!parsed.ok) return;
      const run = await runRawStack(parsed.config, { runsDir: join(root, 'runs'), device: 'cpu' });
      assert.is(run.status, 'ok', JSON.stringify(run.phases));
      const lines = await events(run);

      // Frame decisions against the truth.
      const csv = (await readFile(join(run.runDir, 'artifacts', 'preprocess', 'frame_quality.csv'), 'utf8')).trim().split('\n').slice(1);
      const rows = csv.map((l) => l.split(','));
      const excluded = rows.filter((r) => r[2] === 'excluded').map((r) => Number(r[0]));
      const bad = truth.frames.filter((f) => f.bad === 'clouds' || f.bad === 'trailed' || f.bad === 'bad_seeing').map((f) => f.index);
      const why = rows.map((r) => `${r[0]}:${truth.frames[Number(r[0])]!.bad ?? 'good'}:${r[2]}:${r[3]}:fwhm ${r[5]}`).join(' ');
      assert.equal(excluded, bad, `${kind} ${combo}: ${why}`);

      // The reference is a good frame.
      const ref = details(lines, 'REFERENCE_SELECTION').reference_index as number;
      assert.is(truth.frames[ref]!.bad, null, `${kind} ${combo}: reference ${ref} is ${truth.frames[ref]!.bad}`);

      // Without darks the cosmetic pass ran before detection and in the stack, and says so.
      const noDarks = combo === 'lights' || combo === 'flats';
      const cosmetic = details(lines, 'REFERENCE_SELECTION').cosmetic as { reason: string; hot_per_frame_median: number } | null;
      const stacking = details(lines, 'STACKING').cosmetic as string;
      const report = await readFile(join(run.runDir, 'artifacts', 'preprocess', 'preprocessing_report.md'), 'utf8');
      if (noDarks) {
        assert.is(cosmetic?.reason, 'no_darks');
        assert.ok(cosmetic!.hot_per_frame_median > 0, 'hot pixels replaced');
        assert.match(stacking, /per-frame k=5 \(no darks\)/);
        assert.match(report, /No darks applied: hot and cold pixels/);
      } else {
        assert.is(cosmetic, null);
        assert.match(stacking, /per-frame off/);
        assert.not.match(report, /No darks applied/);
      }

      // The stack is as sharp as the fully calibrated one.
      const fwhm = await stackFwhm(run, s, ref);
      s.stackFwhm[combo] = fwhm;
      const full = s.stackFwhm.full!;
      console.log(`  ${kind} ${combo}: excluded ${excluded.join(',')}, reference ${ref}, stack FWHM ${fwhm.toFixed(3)} (full ${full.toFixed(3)})${cosmetic ? `, cosmetic ${cosmetic.hot_per_frame_median} hot px/frame` : ''}`);
      assert.ok(Math.abs(fwhm / full - 1) <= 0.1, `${kind} ${combo}: stack FWHM ${fwhm} vs ${full}`);

      if (solve) await checkSolve(run, lines, s, ref, kind);
    });
  }
}

/** The lights-only stack's solver list is real stars (brightest first), and the OSC stack solves. */
async function checkSolve(run: RawStackRunResult, lines: EventLine[], s: Session, ref: number, kind: string): Promise<void> {
  const { truth } = s;
  const img = await readFitsImage((run.outputs.stacked_rgb ?? run.outputs.stacked_linear)!);
  const prep = prepareImageSolve(img, 180);
  const frame = truth.frames[ref]!;
  const stars = truth.stars.map((t) => applyAffine(frame.transform, t.x, t.y));
  // Hot pixels sit on the sensor: in the stack (the reference frame's grid) the reference's own are where they are.
  const hot = truth.sensor.hot_pixels.list.map((h): [number, number] => [h.x, h.y]);
  const near = (list: [number, number][], x: number, y: number, r: number) => list.some(([px, py]) => Math.hypot(px - x, py - y) <= r);
  const inside = stars.filter(([x, y]) => x >= 8 && y >= 8 && x <= img.width - 9 && y <= img.height - 9).length;
  assert.ok(prep.stars.length >= 40, `${kind}: ${prep.stars.length} solver stars`);
  // Within 3 px (about one FWHM) of a true star: that star (a blended double's centroid, a
  // faint star's noisy one, may sit 2–3 px from either: with local normalization the OSC stack's
  // 14.4 mag star at the top edge, (192.1, 9.9), is found 2.6 px off, within 2.5 px without it).
  const off = prep.stars.map((p, i) => ({ p, i })).filter(({ p }) => !near(stars, p.x, p.y, 3));
  console.log(`  ${kind} lights-only stack: ${prep.stars.length} solver stars of ${inside} true stars inside, ${off.length} off a true star${off.length ? ` (ranks ${off.map((o) => o.i).join(',')})` : ''}`);
  // The brightest 50 (what quad matching works from) are all real, and nearly all the rest.
  assert.ok(off.every((o) => o.i >= 50), `${kind}: non-stars among the brightest 50 (ranks ${off.map((o) => o.i).join(',')})`);
  assert.ok(off.length <= 0.02 * prep.stars.length, `${kind}: ${off.length} of ${prep.stars.length} solver stars are not stars`);
  for (const p of prep.stars) assert.ok(!near(hot, p.x, p.y, 1) || near(stars, p.x, p.y, 3), `${kind}: solver star at hot pixel ${p.x.toFixed(1)},${p.y.toFixed(1)}`);

  const ast = details(lines, 'ASTROMETRY');
  if (kind === 'mono') {
    assert.is(ast.reason, 'no_rgb_stack');
    return;
  }
  const [an] = await lookupSolvers({ solver: 'astrometry_net', astrometry_net_bin: '', astrometry_net_data_dir: '', astap_bin: '', astap_data_dir: '' });
  if (!an!.ok) {
    assert.is(ast.reason, 'solver_missing');
    console.log(`  plate solve skipped: ${an!.reason}`);
    return;
  }
  assert.is(ast.status, 'ok', JSON.stringify(ast));
  const sep = angularSeparationDeg(ast.ra as number, ast.dec as number, frame.centre.ra, frame.centre.dec) * 3600;
  console.log(`  solved by ${String(ast.solver)} (${String(ast.index)}) in ${ast.duration_ms as number} ms from ${ast.stars_detected as number} stars: centre off ${sep.toFixed(1)}″`);
  assert.ok(sep < 30, `centre ${sep}″ off`);
}

test.run();
