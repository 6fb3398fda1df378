// Star detection and measurement against ground truth: the Moffat fit and the centroids on
// noise-free pixel-integrated stars (the fixture generator's own renderer), then real generated
// frames (noise, sky gradient, vignetting, hot pixels, bad frames) of a mono and an OSC camera:
// completeness, false detections, centroid accuracy, per-frame FWHM, shapes of trailed and
// bad-seeing frames, hot pixels and saturation.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { readFitsImage } from '../../src/fits/index.js';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { renderStar } from '../../fixtures/generator/psf.js';
import { detectStars, luminanceProxy, proxyToFull, type Star, type StarDetection } from '../../src/algorithms/stars.js';
import { frameMetrics } from '../../src/algorithms/frame-metrics.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';
import { falseDetections, frameStars, mean, median, PointIndex } from './star-truth.js';

function gaussian(random: () => number): number {
  let u = 0;
  while (u === 0) u = random();
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * random());
}

/** A field of isolated, bright, pixel-integrated Moffat stars on a flat sky with slight noise. */
function syntheticField(seed: number, fwhm: number, beta: number, cfa: boolean): { data: Float32Array; width: number; height: number; stars: { x: number; y: number }[] } {
  const width = 400;
  const height = 400;
  const random = seededRandom(seed);
  const data = new Float32Array(width * height);
  const stars: { x: number; y: number }[] = [];
  // A grid with random sub-pixel phases keeps stars isolated (wide, low-β wings need more room).
  const step = fwhm > 4 ? 50 : 34;
  for (let gy = 30; gy < height - 30; gy += step) {
    for (let gx = 30; gx < width - 30; gx += step) {
      const x = gx + random();
      const y = gy + random();
      stars.push({ x, y });
      // On the mosaic a reddish star: sites (0,0) 1.0, (1,0) and (0,1) 0.7, (1,1) 0.4.
      const f = 4e5;
      renderStar(data, width, height, x, y, cfa ? [f, 0.7 * f, 0.7 * f, 0.4 * f] : [f, f, f, f], { fwhm, beta, trail: [0, 0] });
    }
  }
  for (let i = 0; i < data.length; i++) data[i] = data[i]! + 1000 + 2 * gaussian(random);
  return { data, width, height, stars };
}

test('Moffat FWHM, β and centroids of noise-free pixel-integrated stars (mono and coloured stars on a mosaic)', () => {
  const rows: string[] = [];
  for (const cfa of [false, true]) {
    for (const [fwhm, beta] of [[2.5, 3], [3.5, 4.5], [5, 2.5], [3, 20]] as const) {
      const field = syntheticField(7, fwhm, beta, cfa);
      const r = detectStars(field.data, field.width, field.height, { cfa });
      assert.ok(r.ok, 'detection succeeds');
      const det = r as StarDetection;
      const index = new PointIndex(det.stars);
      const errors: number[] = [];
      const dx: number[] = [];
      for (const s of field.stars) {
        const m = index.nearest(s.x, s.y, 2);
        assert.ok(m, `star at ${s.x.toFixed(2)},${s.y.toFixed(2)} detected`);
        errors.push(m.d);
        dx.push(m.p.x - s.x);
      }
      assert.is(det.stars.length, field.stars.length, 'no extra detections');
      const fitted = det.stars.filter((s) => s.shape === 'fit');
      assert.ok(fitted.length >= 30, `fitted ${fitted.length}`);
      const f = median(fitted.map((s) => s.fwhm));
      const b = median(fitted.map((s) => s.beta!));
      const e = median(fitted.map((s) => s.eccentricity));
      rows.push(`${cfa ? 'osc ' : 'mono'} fwhm ${fwhm} β ${beta}: fwhm ${f.toFixed(4)} β ${b.toFixed(2)} ecc ${e.toFixed(3)} centroid median ${median(errors).toExponential(1)} max ${Math.max(...errors).toExponential(1)} px`);
      // Pixel integration is modelled: no FWHM bias beyond 0.6 % (measured ≤ 0.3 %).
      assert.ok(Math.abs(f / fwhm - 1) < 0.006, `${cfa ? 'osc' : 'mono'} FWHM ${f} vs ${fwhm}`);
      assert.ok(Math.abs(b / beta - 1) < 0.06, `β ${b} vs ${beta}`);
      assert.ok(e < 0.1, `round stars: eccentricity ${e}`);
      // Windowed centroids are unbiased for symmetric profiles (mosaic sites re-normalised).
      assert.ok(median(errors) < 2e-3, `centroid median error ${median(errors)}`);
      assert.ok(Math.max(...errors) < 0.01, `centroid max error ${Math.max(...errors)}`);
      assert.ok(Math.abs(mean(dx)) < 1e-3, `no systematic x shift: ${mean(dx)}`);
    }
  }
  console.log(`  ${rows.join('\n  ')}`);
});

test("localBackground 'annulus' agrees with the model sky on a flat sky (mosaic)", () => {
  const field = syntheticField(5, 3, 3, true);
  const a = detectStars(field.data, field.width, field.height, { cfa: true }) as StarDetection;
  const b = detectStars(field.data, field.width, field.height, { cfa: true, localBackground: 'annulus' }) as StarDetection;
  assert.is(b.stars.length, a.stars.length);
  const index = new PointIndex(b.stars);
  for (const s of a.stars) {
    const m = index.nearest(s.x, s.y, 0.01);
    assert.ok(m, 'same star');
    assert.ok(Math.abs(m.p.flux / s.flux - 1) < 0.01, `flux ${m.p.flux} vs ${s.flux}`);
    // The annulus also holds the bright star's own far wing (a few ADU here).
    assert.ok(Math.abs(m.p.background / s.background - 1) < 0.01, `sky ${m.p.background} vs ${s.background}`);
  }
});

test('luminance proxy: each 2×2 cell summed; proxy pixel centres map to 2·xb + 0.5', () => {
  const width = 6;
  const height = 4;
  const cfa = Float32Array.from({ length: width * height }, (_, i) => i);
  const p = luminanceProxy(cfa, width, height);
  assert.is(p.width, 3);
  assert.is(p.height, 2);
  // Cell (1, 1) covers full pixels (2..3, 2..3): 14 + 15 + 20 + 21.
  assert.is(p.data[1 * 3 + 1], 14 + 15 + 20 + 21);
  assert.is(proxyToFull(0), 0.5);
  assert.is(proxyToFull(1.25), 3);
  // Odd sizes drop the last row/column.
  assert.is(luminanceProxy(new Float32Array(7 * 5), 7, 5).width, 3);
});

test('failures are data: wrong sizes and noiseless planes', () => {
  const bad = detectStars(new Float32Array(10), 4, 4);
  assert.is(bad.ok, false);
  assert.is((bad as { code: string }).code, 'bad_input');
  const flat = detectStars(new Float32Array(64 * 64).fill(100), 64, 64);
  assert.is(flat.ok, false);
  assert.is((flat as { code: string }).code, 'no_noise');
  const nan = detectStars(new Float32Array(64 * 64).fill(NaN), 64, 64);
  assert.is((nan as { code: string }).code, 'no_data');
});

interface FrameReport {
  label: string;
  completeness: number;
  bright: number;
  falseRate: number;
  fwhm: number;
  fwhmTrue: number;
  ecc: number;
}

async function checkSequence(kind: 'mono' | 'osc', seed: number): Promise<void> {
  await withTempDir(`stars-${kind}`, async (out) => {
    const truth: Truth = await generateDataset({ out, kind, frames: 8, width: 1024, height: 768, seed, calibration: false });
    const gain = truth.sensor.gain_e_per_adu;
    const saturationAdu = truth.sensor.saturation_e / gain;
    const reports: FrameReport[] = [];
    const centroidErrors: number[] = [];
    const cdx: number[] = [];
    const cdy: number[] = [];
    let hotChecked = 0;
    let satChecked = 0;
    for (const frame of truth.frames) {
      const image = await readFitsImage(`${out}/${frame.file}`);
      const r = detectStars(image.data, image.width, image.height, { cfa: kind === 'osc' });
      assert.ok(r.ok, `frame ${frame.index} detection`);
      const det = r as StarDetection;
      const metrics = frameMetrics(det);
      const rms = det.backgroundRms;
      const truthStars = frameStars(truth, frame.index);
      const truthIndex = new PointIndex(truthStars);
      const starIndex = new PointIndex(det.stars);
      const label = `${kind} #${frame.index} ${frame.bad ?? 'good'}`;
      const margin = 12;
      const inside = truthStars.filter((s) => s.x >= margin && s.y >= margin && s.x <= image.width - 1 - margin && s.y <= image.height - 1 - margin);
      // Completeness for stars whose peak is ≥ 20× the pixel noise.
      const bright = inside.filter((s) => s.peakAdu >= 20 * rms);
      const found = bright.filter((s) => starIndex.nearest(s.x, s.y, Math.max(2, 0.5 * frame.fwhm_px)) !== null).length;
      const falses = falseDetections(det.stars, truthIndex, Math.max(2, 0.5 * frame.fwhm_px));
      reports.push({
        label,
        completeness: found / bright.length,
        bright: bright.length,
        falseRate: falses.length / det.stars.length,
        fwhm: metrics.fwhm,
        fwhmTrue: frame.fwhm_px,
        ecc: metrics.eccentricity,
      });
      if (frame.bad !== 'trailed') {
        assert.ok(found / bright.length >= 0.95, `${label}: completeness ${found}/${bright.length}`);
        assert.ok(falses.length / det.stars.length < 0.02, `${label}: ${falses.length} false of ${det.stars.length}`);
        assert.ok(Math.abs(metrics.fwhm / frame.fwhm_px - 1) < 0.05, `${label}: FWHM ${metrics.fwhm} vs true ${frame.fwhm_px}`);
      }
      if (frame.bad === null || frame.bad === 'satellite' || frame.bad === 'clouds') {
        assert.ok(metrics.eccentricity < 0.5, `${label}: eccentricity ${metrics.eccentricity}`);
      }
      if (frame.bad === 'trailed') assert.ok(metrics.eccentricity > 0.65, `${label}: trailed eccentricity ${metrics.eccentricity}`);

      // Centroids of bright, unsaturated, isolated stars on the good frames.
      if (frame.bad === null) {
        for (const s of inside) {
          if (s.peakAdu < 50 * rms || s.peakAdu > 0.5 * saturationAdu) continue;
          if (truthIndex.within(s.x, s.y, 10).some((o) => o.p.id !== s.id && o.p.flux > 0.01 * s.flux)) continue;
          const m = starIndex.nearest(s.x, s.y, 2);
          assert.ok(m, `${label}: bright star ${s.id} detected`);
          if (m.p.saturated || m.p.blended) continue;
          centroidErrors.push(m.d);
          cdx.push(m.p.x - s.x);
          cdy.push(m.p.y - s.y);
        }
      }

      // Hot pixels: visible ones (≥ 5σ in this exposure) away from stars (and trails) are never detections.
      const clearance = 4 + (frame.trail ? frame.trail.length_px / 2 : 0);
      for (const hp of truth.sensor.hot_pixels.list) {
        const adu = (hp.rate_e_per_s * frame.exptime) / gain;
        if (adu < 5 * rms || truthIndex.within(hp.x, hp.y, clearance).some((o) => o.p.peakAdu > 2 * rms)) continue;
        hotChecked++;
        const hit = starIndex.nearest(hp.x, hp.y, 1.5);
        assert.is(hit, null, `${label}: hot pixel at ${hp.x},${hp.y} (${adu.toFixed(0)} ADU) detected as a star`);
      }

      // Saturation: truth-saturated stars of the reference frame are flagged; clearly unsaturated ones are not.
      if (frame.index === 0) {
        for (const s of inside) {
          const m = starIndex.nearest(s.x, s.y, 2);
          if (!m) continue;
          if (s.saturated) {
            satChecked++;
            assert.ok(m.p.saturated, `${label}: saturated star ${s.id} flagged`);
          } else if (s.peakAdu < 0.3 * saturationAdu) {
            assert.not.ok(m.p.saturated, `${label}: star ${s.id} (peak ${s.peakAdu.toFixed(0)} ADU) not saturated`);
          }
        }
      }
    }
    const good = reports.filter((r) => r.label.endsWith('good'));
    const seeing = reports.find((r) => r.label.endsWith('bad_seeing'))!;
    assert.ok(seeing.fwhm > 1.7 * median(good.map((r) => r.fwhm)), `bad seeing FWHM ${seeing.fwhm} clearly above the good frames'`);
    assert.ok(centroidErrors.length >= 40, `${kind}: ${centroidErrors.length} bright stars for centroids`);
    const med = median(centroidErrors);
    assert.ok(med <= 0.03, `${kind}: median centroid error ${med} px`);
    assert.ok(Math.abs(mean(cdx)) < 0.01 && Math.abs(mean(cdy)) < 0.01, `${kind}: centroid bias (${mean(cdx)}, ${mean(cdy)})`);
    assert.ok(hotChecked >= 20, `${kind}: ${hotChecked} hot pixels checked`);
    if (kind === 'mono') assert.ok(satChecked >= 1, 'a saturated star was checked');
    console.log(
      `  ${reports.map((r) => `${r.label.padEnd(20)} complete ${(100 * r.completeness).toFixed(1)}% of ${r.bright}, false ${(100 * r.falseRate).toFixed(2)}%, fwhm ${r.fwhm.toFixed(3)} (true ${r.fwhmTrue.toFixed(3)}, ${(100 * (r.fwhm / r.fwhmTrue - 1)).toFixed(1)}%), ecc ${r.ecc.toFixed(2)}`).join('\n  ')}\n` +
        `  ${kind}: centroids of ${centroidErrors.length} bright stars: median error ${med.toFixed(4)} px, mean offset (${mean(cdx).toFixed(4)}, ${mean(cdy).toFixed(4)}); ${hotChecked} hot pixels, ${satChecked} saturated stars checked`,
    );
  });
}

test('mono frames: completeness, false detections, centroids, FWHM, shapes, hot pixels, saturation', async () => {
  await checkSequence('mono', 5);
});

test('OSC mosaic frames: the same bars through the luminance proxy and per-site measurement', async () => {
  await checkSequence('osc', 6);
});

test('stars are sorted by flux and carry consistent fields', async () => {
  const field = syntheticField(3, 3, 3, false);
  const r = detectStars(field.data, field.width, field.height) as StarDetection;
  const s: Star[] = r.stars;
  for (let i = 1; i < s.length; i++) assert.ok(s[i - 1]!.flux >= s[i]!.flux, 'flux descending');
  for (const star of s) {
    assert.ok(star.fwhmMajor >= star.fwhmMinor);
    assert.ok(Math.abs(star.fwhm - Math.sqrt(star.fwhmMajor * star.fwhmMinor)) < 1e-9);
    assert.ok(star.angle >= 0 && star.angle < 180);
    assert.ok(star.snr > 0 && star.peak > 0);
  }
  assert.ok(r.timings.total >= 0 && r.counts.candidates >= s.length);
});

test.run();
