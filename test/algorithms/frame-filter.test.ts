// Frame filtering: on generated mono and OSC sequences (two seeds) `auto` excludes exactly the
// labelled bad frames that should go, with the expected primary reasons, and keeps every good
// and satellite frame; on constructed records the modes, thresholds, σ floor, transparency rule,
// manual overrides, details, warnings and the no-frames-left error behave as specified; frames
// without a measured star shape never stay; when the absolute rules would exclude more than half
// of the frames, relative rules decide (and say so).

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFitsImage } from '../../src/fits/index.js';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { detectStars, type StarDetection } from '../../src/algorithms/stars.js';
import { frameMetrics, scoreFrames } from '../../src/algorithms/frame-metrics.js';
import { CC_SIGMA_FLOOR, ECC_SIGMA_FLOOR, filterFrames, FWHM_SIGMA_FLOOR, QUALITY_FILTER_DEFAULTS, type FilterFrame, type FilterMetrics } from '../../src/algorithms/frame-filter.js';
import { MAD_TO_SIGMA } from '../../src/algorithms/robust-stats.js';
import { withTempDir } from '../helpers/tmp.js';
import { median } from './star-truth.js';

const EXPECTED: Record<string, string> = { clouds: 'low_transparency', trailed: 'eccentricity', bad_seeing: 'fwhm_outlier' };

async function checkAuto(kind: 'mono' | 'osc', seed: number): Promise<void> {
  await withTempDir(`filter-${kind}`, async (out) => {
    const truth: Truth = await generateDataset({ out, kind, frames: 10, width: 800, height: 600, seed, calibration: false });
    const metrics = [];
    for (const frame of truth.frames) {
      const image = await readFitsImage(`${out}/${frame.file}`);
      const det = detectStars(image.data, image.width, image.height, { cfa: kind === 'osc' }) as StarDetection;
      assert.ok(det.ok);
      metrics.push(frameMetrics(det));
    }
    const scored = scoreFrames(metrics);
    const frames: FilterFrame[] = truth.frames.map((f, i) => ({ index: i, file: f.file, metrics: scored[i]! }));
    const result = filterFrames(frames, { mode: 'auto' });
    // The seed's FWHM rule applied to the *true* FWHMs of the frames that pass the absolute rules
    // must not reject a good frame, or this dataset would not be a fair test of "keeps all good".
    const trueFwhm = truth.frames.filter((f) => f.bad !== 'trailed').map((f) => f.fwhm_px);
    const med = median(trueFwhm);
    const sigma = Math.max(MAD_TO_SIGMA * median(trueFwhm.map((v) => Math.abs(v - med))), FWHM_SIGMA_FLOOR * med);
    for (const f of truth.frames) if (f.bad === null) assert.ok(f.fwhm_px < med + 2 * sigma, `good frame ${f.index} is no true outlier`);
    const lines: string[] = [];
    for (const f of truth.frames) {
      const d = result.frames[f.index]!;
      lines.push(`#${f.index} ${(f.bad ?? 'good').padEnd(10)} ${d.status.padEnd(8)} ${d.details.join(' | ')}`);
      const want = f.bad ? EXPECTED[f.bad] : undefined;
      if (want) {
        assert.is(d.status, 'excluded', `${kind} #${f.index} ${f.bad} excluded`);
        assert.is(d.reasons[0], want, `${kind} #${f.index} ${f.bad}: primary reason ${d.reasons.join(',')}`);
      } else {
        assert.is(d.status, 'included', `${kind} #${f.index} ${f.bad ?? 'good'} kept: ${d.details.join('; ')}`);
      }
    }
    assert.is(result.n_excluded, 3);
    assert.is(result.error, null);
    console.log(`  ${kind} seed ${seed}: fwhm limit ${result.limits.fwhm_limit.toFixed(2)} (median ${result.limits.fwhm_median.toFixed(2)}, σ ${result.limits.fwhm_sigma.toFixed(3)})\n  ${lines.join('\n  ')}`);
  });
}

test('auto mode on a generated mono sequence: clouds, trailed and bad seeing go, the rest stays', async () => {
  await checkAuto('mono', 11);
});

test('auto mode on a generated OSC sequence (another seed): the same', async () => {
  await checkAuto('osc', 12);
});

function m(over: Partial<FilterMetrics> = {}): FilterMetrics {
  return { star_count: 300, fwhm: 3.0, eccentricity: 0.3, median_star_flux: 10000, registration_cc: 0.95, ...over };
}

/** Ten frames with FWHMs 2.7 … 3.3 (median 3.0, MAD 0.15) plus the extra ones given. */
function sequence(extra: Partial<FilterMetrics>[]): FilterFrame[] {
  const fw = [2.7, 2.85, 2.85, 3.0, 3.0, 3.0, 3.0, 3.15, 3.15, 3.3];
  const frames: FilterFrame[] = fw.map((fwhm, i) => ({ index: i, file: `lights/light_${String(i + 1).padStart(5, '0')}.fits`, metrics: m({ fwhm }) }));
  extra.forEach((e, k) => frames.push({ index: fw.length + k, file: `lights/extra_${k}.fits`, metrics: m(e) }));
  return frames;
}

test('modes: k = max_fwhm_sigma (auto), 1.5 (strict), 3.0 (relaxed); off filters nothing', () => {
  // With the two extra frames (3.5, 3.62) the median stays 3.0 and the MAD 0.15: σ = 0.2224.
  const frames = sequence([{ fwhm: 3.5 }, { fwhm: 3.62 }]);
  const sigma = MAD_TO_SIGMA * 0.15;
  const status = (mode: 'auto' | 'strict' | 'relaxed' | 'off', extra: object = {}) => filterFrames(frames, { mode, ...extra }).frames.slice(10).map((d) => d.status);
  // Limits: strict 3.334, auto 3.445, auto with k = 2.5 3.556, relaxed 3.667.
  assert.equal(status('strict'), ['excluded', 'excluded']);
  assert.equal(status('auto'), ['excluded', 'excluded']);
  assert.equal(status('auto', { max_fwhm_sigma: 2.5 }), ['included', 'excluded']);
  assert.equal(status('relaxed'), ['included', 'included']);
  assert.is(filterFrames(frames, { mode: 'strict' }).frames[9]!.status, 'included', '3.30 < 3.334');
  const off = filterFrames([...frames, { index: 99, file: 'x.fits', metrics: m({ star_count: 3, eccentricity: 0.9, registration_cc: 0.1 }) }], { mode: 'off' });
  assert.is(off.n_excluded, 0, 'off: no quality rule applies');
  assert.is(off.limits.k, null);
  const strict = filterFrames(frames, { mode: 'strict' });
  assert.ok(Math.abs(strict.limits.fwhm_sigma - sigma) < 1e-12);
  assert.ok(Math.abs(strict.limits.fwhm_limit - (3.0 + 1.5 * sigma)) < 1e-12);
  assert.is(strict.frames[11]!.details[0], 'fwhm 3.62 > limit 3.33 (median 3.00 + 1.50 × σ 0.22)');
  assert.is(filterFrames(frames).frames[11]!.details[0], 'fwhm 3.62 > limit 3.44 (median 3.00 + 2.00 × σ 0.22)');
});

test('absolute rules: min_stars, min_correlation, max_eccentricity; relative stats ignore frames they exclude', () => {
  const frames = sequence([{ star_count: 29 }, { registration_cc: 0.74 }, { eccentricity: 0.66 }, { registration_cc: null }, { star_count: 30, eccentricity: 0.65, registration_cc: 0.75 }]);
  const r = filterFrames(frames, { mode: 'relaxed' });
  const extra = r.frames.slice(10);
  assert.equal(extra.map((d) => d.reasons[0] ?? null), ['too_few_stars', 'low_correlation', 'eccentricity', null, null]);
  assert.is(extra[0]!.details[0], 'stars 29 < min 30');
  assert.is(extra[1]!.details[0], 'correlation 0.74 < min 0.75');
  assert.is(extra[2]!.details[0], 'eccentricity 0.66 > max 0.65');
  assert.equal(r.counts, { too_few_stars: 1, low_correlation: 1, eccentricity: 1 });
  // Custom thresholds.
  const custom = filterFrames(frames, { mode: 'relaxed', min_stars: 10, min_correlation: 0.5, max_eccentricity: 0.7 });
  assert.is(custom.n_excluded, 0);
});

test('σ floor: a very uniform sequence does not turn 4 % seeing jitter into outliers', () => {
  const frames: FilterFrame[] = Array.from({ length: 12 }, (_, i) => ({ index: i, file: `f${i}.fits`, metrics: m({ fwhm: i === 11 ? 3.12 : 3.0 }) }));
  const r = filterFrames(frames, { mode: 'strict' });
  assert.is(r.limits.fwhm_sigma, FWHM_SIGMA_FLOOR * 3.0, 'MAD 0 → floor 5 % of the median');
  assert.is(r.frames[11]!.status, 'included', '3.12 < 3.0 + 1.5 × 0.15');
  const far = filterFrames([...frames, { index: 12, file: 'f12.fits', metrics: m({ fwhm: 3.5 }) }], { mode: 'strict' });
  assert.is(far.frames[12]!.reasons[0], 'fwhm_outlier');
});

test('transparency rule: auto and strict only; star count or median star flux below 0.6 × median', () => {
  const frames = sequence([{ star_count: 170 }, { median_star_flux: 5900 }, { star_count: 181, median_star_flux: 6100 }]);
  for (const mode of ['auto', 'strict'] as const) {
    const r = filterFrames(frames, { mode });
    assert.equal(r.frames.slice(10).map((d) => d.reasons), [['low_transparency'], ['low_transparency'], []], mode);
    assert.is(r.frames[10]!.details[0], 'stars 170 < 0.60 × median 300.00 = 180.00');
    assert.is(r.frames[11]!.details[0], 'star flux 5900.00 < 0.60 × median 10000.00 = 6000.00');
  }
  assert.is(filterFrames(frames, { mode: 'relaxed' }).n_excluded, 0, 'relaxed: no transparency rule');
  assert.is(filterFrames(frames, { mode: 'auto', min_relative_transparency: 0.5 }).n_excluded, 0, 'configurable fraction');
});

test('manual overrides win both ways, by index, file name or object; frames without data stay out', () => {
  const frames: FilterFrame[] = [
    ...sequence([{ eccentricity: 0.9 }]),
    { index: 11, file: 'lights/broken.fits', metrics: null },
    { index: 12, file: 'lights/lost.fits', metrics: m(), registered: false },
  ];
  const r = filterFrames(frames, {
    manual_overrides: {
      '10': true, // include the trailed frame by index
      'light_00002.fits': false, // exclude a good frame by base name
      'whatever': { include: false, index: 3 },
      'lights/light_00005.fits': { include: false, filename: 'light_00006.fits' },
      'lights/broken.fits': true,
      'nope.fits': false,
    },
  });
  const d = r.frames;
  assert.is(d[10]!.status, 'included');
  assert.is(d[10]!.manual, 'include');
  assert.equal(d[10]!.reasons, ['eccentricity'], 'the overruled rule stays listed');
  assert.is(d[1]!.status, 'excluded');
  assert.equal(d[1]!.reasons, ['manual']);
  assert.is(d[1]!.details[0], 'excluded by manual override');
  assert.is(d[3]!.status, 'excluded', 'object form by index');
  assert.is(d[5]!.status, 'excluded', 'object form by file name');
  assert.is(d[4]!.status, 'included', 'the key of an object entry does not select');
  assert.is(d[11]!.status, 'excluded', 'an unreadable frame cannot be included');
  assert.equal(d[11]!.reasons, ['unreadable']);
  assert.match(d[11]!.details[0]!, /manual include not possible/);
  assert.equal(d[12]!.reasons, ['registration_failed']);
  assert.ok(r.warnings.some((w) => w.includes("'nope.fits'")), 'unmatched override reported');
  assert.is(r.counts.manual, 3);
});

test('off still drops frames without data; warnings and the no-frames-left error', () => {
  const frames: FilterFrame[] = [
    { index: 0, file: 'a.fits', metrics: m() },
    { index: 1, file: 'b.fits', metrics: null },
    { index: 2, file: 'c.fits', metrics: m(), registered: false },
  ];
  const off = filterFrames(frames, { mode: 'off' });
  assert.equal(off.frames.map((d) => d.status), ['included', 'excluded', 'excluded']);
  assert.ok(off.warnings.some((w) => w === '2 of 3 frames excluded'));
  const none = filterFrames([{ index: 0, file: 'a.fits', metrics: m({ star_count: 2 }) }]);
  assert.equal(none.error, { code: 'no_frames_left', detail: 'all 1 frames excluded' });
  assert.ok(none.warnings.some((w) => w.includes('3 are needed')), 'relative rules need 3 frames');
  assert.equal(filterFrames([]).error, { code: 'no_frames_left', detail: 'no frames' });
  assert.equal(QUALITY_FILTER_DEFAULTS, { mode: 'auto', min_stars: 30, min_correlation: 0.75, max_fwhm_sigma: 2.0, max_eccentricity: 0.65, min_relative_transparency: 0.6, relative_fallback: true });
});

test('no_stars_measured: a frame without FWHM or eccentricity (or without stars) never stays, unless a manual include says so', () => {
  const frames = sequence([{ fwhm: NaN, eccentricity: NaN, star_count: 40 }, { star_count: 0, fwhm: NaN, eccentricity: NaN }, { eccentricity: NaN }]);
  for (const mode of ['auto', 'strict', 'relaxed'] as const) {
    const r = filterFrames(frames, { mode });
    assert.equal(r.frames.slice(10).map((d) => [d.status, d.reasons[0]]), [['excluded', 'no_stars_measured'], ['excluded', 'no_stars_measured'], ['excluded', 'no_stars_measured']], mode);
    assert.is(r.frames[10]!.details[0], 'FWHM and eccentricity could not be measured on its 40 stars');
    assert.is(r.frames[11]!.details[0], 'no star measured');
    assert.is(r.n_included, 10);
  }
  assert.is(filterFrames(frames, { mode: 'off' }).n_excluded, 0, 'off: no rule');
  const kept = filterFrames(frames, { manual_overrides: { '10': true } });
  assert.equal([kept.frames[10]!.status, kept.frames[10]!.manual, kept.frames[10]!.reasons[0]], ['included', 'include', 'no_stars_measured']);
});

/** n frames with the given metrics, frame i from f(i). */
const frameSet = (n: number, f: (i: number) => Partial<FilterMetrics>): FilterFrame[] => Array.from({ length: n }, (_, i) => ({ index: i, file: `f${i}.fits`, metrics: m(f(i)) }));

test('systematic cause: the absolute rules would exclude more than half, so relative rules decide (eccentricity, stars, correlation)', () => {
  // Every frame elongated (a tilted sensor): eccentricities 0.68 … 0.77, one trailed frame at 0.95.
  const ecc = [0.7, 0.72, 0.68, 0.74, 0.71, 0.73, 0.69, 0.77, 0.7, 0.72, 0.95];
  const r = filterFrames(frameSet(ecc.length, (i) => ({ eccentricity: ecc[i]! })));
  assert.ok(r.systematic, 'systematic');
  assert.equal([r.systematic!.would_exclude, r.systematic!.measured, r.systematic!.by_rule], [11, 11, { eccentricity: 11 }]);
  assert.equal(r.frames.filter((d) => d.status === 'excluded').map((d) => d.index), [10]);
  // Median 0.72, MAD 0.02 → 1.4826 × 0.02 = 0.030, under the 0.05 floor: limit 0.72 + 2 × 0.05.
  const sigma = Math.max(MAD_TO_SIGMA * 0.02, ECC_SIGMA_FLOOR);
  assert.ok(Math.abs(r.systematic!.limits.eccentricity_limit - (0.72 + 2 * sigma)) < 1e-12);
  assert.match(r.frames[10]!.details[0]!, /^eccentricity 0\.95 > limit 0\.82 \(median 0\.72 \+ 2\.00 × σ 0\.05; relative: the absolute rules would exclude 11 of 11 frames\)$/);

  // Few stars everywhere (a short focal length): min_stars 30 against 12 … 20, one cloudy frame at 5.
  const stars = [14, 16, 12, 18, 15, 20, 17, 16, 15, 5];
  const s = filterFrames(frameSet(stars.length, (i) => ({ star_count: stars[i]! })), { mode: 'relaxed' });
  assert.equal(s.systematic!.by_rule, { too_few_stars: 10 });
  assert.equal(s.frames.filter((d) => d.status === 'excluded').map((d) => [d.index, d.reasons[0]]), [[9, 'too_few_stars']]);
  assert.is(s.systematic!.limits.star_count_limit, 0.6 * 15.5);

  // Correlation low throughout (a nebula filling the field), one frame clearly below the rest.
  const cc = [0.6, 0.62, 0.61, 0.63, 0.6, 0.64, 0.62, 0.61, 0.4];
  const c = filterFrames(frameSet(cc.length, (i) => ({ registration_cc: cc[i]! })));
  assert.equal(c.frames.filter((d) => d.status === 'excluded').map((d) => [d.index, d.reasons[0]]), [[8, 'low_correlation']]);
  const ccSigma = Math.max(MAD_TO_SIGMA * 0.01, CC_SIGMA_FLOOR);
  assert.ok(Math.abs(c.systematic!.limits.correlation_limit! - (0.61 - 2 * ccSigma)) < 1e-12);
});

test('systematic cause: not at half or below, not under 3 frames, not with relative_fallback off', () => {
  // Exactly half fail: the absolute rules stand.
  const half = filterFrames(frameSet(10, (i) => ({ eccentricity: i < 5 ? 0.7 : 0.3 })));
  assert.is(half.systematic, null);
  assert.is(half.n_excluded, 5);
  // Fewer than three measured frames: no median to be relative to.
  const two = filterFrames(frameSet(2, () => ({ eccentricity: 0.7 })));
  assert.is(two.systematic, null);
  assert.is(two.n_excluded, 2);
  // Switched off: the seed's absolute rules alone, the best frames lost with the rest.
  const ecc = [0.7, 0.72, 0.68, 0.74, 0.71, 0.73, 0.69, 0.77, 0.7, 0.72, 0.95];
  const off = filterFrames(frameSet(ecc.length, (i) => ({ eccentricity: ecc[i]! })), { relative_fallback: false });
  assert.is(off.systematic, null);
  assert.is(off.n_excluded, 11);
  assert.equal(off.error?.code, 'no_frames_left');
  // Frames without data or shape do not count toward the share (2 of 4 measured fail: no fallback).
  const mixed = filterFrames([
    ...frameSet(4, (i) => ({ eccentricity: i < 2 ? 0.7 : 0.3 })),
    { index: 4, file: 'x.fits', metrics: null },
    { index: 5, file: 'y.fits', metrics: m({ fwhm: NaN }) },
  ]);
  assert.is(mixed.systematic, null);
});

test.run();
