// Frame metrics, quality score and stacking weights: the records of a generated mono sequence
// against its truth (FWHM, sky, noise, transparency, saturation), the score's ranking of the bad
// frames, and the score's monotonicity and bounds on constructed records.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFitsImage } from '../../src/fits/index.js';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { detectStars, type StarDetection } from '../../src/algorithms/stars.js';
import { emptyMetrics, frameMetrics, qualityRatios, qualityWeights, scoreFrames, type FrameMetrics } from '../../src/algorithms/frame-metrics.js';
import { withTempDir } from '../helpers/tmp.js';
import { median, vignetting } from './star-truth.js';

/** Median over the frame of the expected sky electrons (docs/fixtures.md, Sky and Optical flat). */
function medianSkyE(truth: Truth, index: number): number {
  const f = truth.frames[index]!;
  const { width, height } = truth.image;
  const cx = (width - 1) / 2;
  const cy = (height - 1) / 2;
  const r = Math.hypot(width, height) / 2;
  const phi = (f.sky_gradient.angle_deg * Math.PI) / 180;
  const values: number[] = [];
  for (let y = 0; y < height; y += 8) {
    for (let x = 0; x < width; x += 8) {
      const u = (x - cx) / r;
      const v = (y - cy) / r;
      const shape = 1 + f.sky_gradient.linear * (u * Math.cos(phi) + v * Math.sin(phi)) + f.sky_gradient.quadratic * (u * u + v * v);
      values.push(f.sky_e.l! * shape * vignetting(truth, x, y));
    }
  }
  return median(values);
}

test('metrics of a generated sequence match the truth; the score ranks bad frames below good ones', async () => {
  await withTempDir('metrics', async (out) => {
    const truth: Truth = await generateDataset({ out, kind: 'mono', frames: 9, width: 800, height: 600, seed: 31, calibration: false });
    const records: FrameMetrics[] = [];
    for (const frame of truth.frames) {
      const image = await readFitsImage(`${out}/${frame.file}`);
      const det = detectStars(image.data, image.width, image.height) as StarDetection;
      assert.ok(det.ok);
      records.push(frameMetrics(det, { registrationCc: frame.index === 0 ? 1 : null }));
    }
    const scored = scoreFrames(records);
    const s = truth.sensor;
    const lines: string[] = [];
    truth.frames.forEach((frame, i) => {
      const m = scored[i]!;
      lines.push(
        `#${i} ${(frame.bad ?? 'good').padEnd(10)} stars ${m.star_count} fwhm ${m.fwhm.toFixed(2)} (${frame.fwhm_px.toFixed(2)}) ` +
          `ecc ${m.eccentricity.toFixed(2)} sky ${m.background_median.toFixed(0)} rms ${m.background_rms.toFixed(1)} flux ${m.median_star_flux.toFixed(0)} ` +
          `snr ${m.snr_estimate.toFixed(1)} sat ${m.saturation.toExponential(1)} score ${m.quality_score.toFixed(3)}`,
      );
      if (frame.bad !== 'trailed') assert.ok(Math.abs(m.fwhm / frame.fwhm_px - 1) < 0.05, `#${i} fwhm ${m.fwhm} vs ${frame.fwhm_px}`);
      assert.ok(m.fwhm_x >= m.fwhm_y, 'fwhm_x is the major axis');
      // The frame's median sky from the truth's sky model (gradient, curvature) through the vignetting.
      const skyAdu = s.bias_adu + medianSkyE(truth, i) / s.gain_e_per_adu;
      assert.ok(Math.abs(m.background_median - skyAdu) < 0.02 * (skyAdu - s.bias_adu), `#${i} sky ${m.background_median} vs ${skyAdu}`);
      const noise = Math.sqrt(frame.sky_e.l! + s.read_noise_e ** 2) / s.gain_e_per_adu;
      assert.ok(Math.abs(m.background_rms / noise - 1) < 0.08, `#${i} noise ${m.background_rms} vs ~${noise}`);
      assert.ok(m.quality_score >= 0 && m.quality_score < 1, 'score in [0, 1)');
    });
    console.log(`  ${lines.join('\n  ')}`);
    assert.is(scored[0]!.registration_cc, 1);
    const good = truth.frames.filter((f) => f.bad === null || f.bad === 'satellite').map((f) => scored[f.index]!);
    const byKind = (k: string) => scored[truth.frames.find((f) => f.bad === k)!.index]!;
    const worstGood = Math.min(...good.map((m) => m.quality_score));
    for (const k of ['clouds', 'bad_seeing', 'trailed']) assert.ok(byKind(k).quality_score < worstGood, `${k} scores ${byKind(k).quality_score} below every good frame (${worstGood})`);
    // Transparency shows in the rank-matched star flux: clouds pass ~30 % of the light.
    const clouds = truth.frames.find((f) => f.bad === 'clouds')!;
    const flux = byKind('clouds').median_star_flux / median(good.map((m) => m.median_star_flux));
    assert.ok(Math.abs(flux / clouds.transparency - 1) < 0.25, `clouds flux ratio ${flux} vs transparency ${clouds.transparency}`);
    // Not constant: good frames differ too, and the median frame sits near 0.5.
    const scores = scored.map((m) => m.quality_score);
    assert.ok(Math.max(...scores) - Math.min(...scores) > 0.3, 'scores spread');
    assert.ok(Math.abs(median(scores) - 0.5) < 0.1, `median score ${median(scores)}`);
    // The reference frame has saturated stars (truth), so its saturated fraction is positive.
    if (truth.stars.some((st) => st.saturated)) assert.ok(scored[0]!.saturation > 0, 'saturation measured');
  });
});

function record(over: Partial<FrameMetrics>): FrameMetrics {
  return {
    star_count: 300,
    fwhm: 2.5,
    fwhm_x: 2.6,
    fwhm_y: 2.4,
    eccentricity: 0.3,
    background_median: 1000,
    background_rms: 20,
    snr_estimate: 100,
    saturation: 0,
    median_star_flux: 50000,
    registration_cc: null,
    quality_score: NaN,
    ...over,
  };
}

test('score is monotone in stars, SNR (noise, FWHM, transparency) and roundness; bounded; 0 without stars', () => {
  const base = Array.from({ length: 5 }, () => record({}));
  const score = (f: FrameMetrics) => scoreFrames([...base, f])[5]!.quality_score;
  const ref = score(record({}));
  assert.ok(Math.abs(ref - 0.5) < 1e-12, `a median frame scores 0.5 (${ref})`);
  assert.ok(score(record({ star_count: 400 })) > ref, 'more stars');
  assert.ok(score(record({ snr_estimate: 120 })) > ref, 'higher SNR (lower noise / FWHM, more light)');
  assert.ok(score(record({ eccentricity: 0.1 })) > ref, 'rounder');
  assert.ok(score(record({ star_count: 100 })) < ref, 'fewer stars');
  assert.ok(score(record({ snr_estimate: 50 })) < ref, 'lower SNR');
  assert.ok(score(record({ eccentricity: 0.9 })) < ref, 'elongated');
  assert.ok(score(record({ snr_estimate: 1e6, star_count: 1e6 })) < 1, 'bounded above');
  assert.is(score(record({ star_count: 0 })), 0, 'no stars, score 0');
  assert.is(score(record({ snr_estimate: NaN })), 0, 'no metrics, score 0');
  assert.is(score(emptyMetrics()), 0);
  // q = (snr/snr~)²·√(n/n~)·(1−e)/(1−e~): doubling the SNR quadruples q.
  const q = qualityRatios([...base, record({ snr_estimate: 200 })]);
  assert.ok(Math.abs(q[5]! - 4) < 1e-9, `q ${q[5]}`);
});

test('weights: ∝ q on included frames, mean 1, 0 on excluded; uniform fallback', () => {
  const scores = [0.5, 0.8, 0.2, 0.5];
  const included = [true, true, false, true];
  const w = qualityWeights(scores, included);
  assert.is(w[2], 0);
  const inc = w.filter((_, i) => included[i]);
  assert.ok(Math.abs(inc.reduce((a, b) => a + b, 0) / inc.length - 1) < 1e-12, 'mean 1 over included');
  // q = s/(1 − s): 1, 4, 1 → weights 0.5, 2, 0.5.
  assert.ok(Math.abs(w[0]! - 0.5) < 1e-12 && Math.abs(w[1]! - 2) < 1e-12 && Math.abs(w[3]! - 0.5) < 1e-12, `weights ${w}`);
  assert.equal(qualityWeights([0, 0], [true, true]), [1, 1], 'no positive score: uniform');
  assert.equal(qualityWeights([0.5], [false]), [0], 'nothing included');
});

test.run();
