// The tiled stack's FWHM check measures stars as the frames' metrics do: saturated stars are left
// out when the level is known (imageFwhm's saturationLevel), although a stack has no plateau left
// to find them by. A seeded field of Gaussian stars of a known FWHM, some of them clipped at a
// level and then multiplied by a smooth flat-like slope (so the clipped cores are no plateau).

import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { stream } from '../../fixtures/generator/rng.js';
import { imageFwhm, STACK_SATURATION_MARGIN } from '../../src/pipeline/tiled/validation.js';

const W = 384;
const H = 288;
const FWHM = 3;
const LEVEL = 40000;

/** Sky 500 ± 10 noise; 35 stars of peak 2000–12000 and 50 of peak 3–8× LEVEL clipped at LEVEL (most stars saturate, as in a wide field of bright stars); then × a 0.9–1.1 slope. */
function field(seed: number): Float32Array {
  const rng = stream(seed, 'tiled-validation');
  const img = new Float32Array(W * H).fill(500);
  const sigma = FWHM / 2.3548;
  const stars: [number, number, number][] = [];
  for (let i = 0; i < 85; i++) stars.push([rng.range(12, W - 12), rng.range(12, H - 12), i < 35 ? rng.range(2000, 12000) : rng.range(3, 8) * LEVEL]);
  for (const [sx, sy, peak] of stars) {
    for (let y = Math.floor(sy - 10); y <= sy + 10; y++) {
      for (let x = Math.floor(sx - 10); x <= sx + 10; x++) {
        if (x < 0 || y < 0 || x >= W || y >= H) continue;
        img[y * W + x]! += peak * Math.exp(-((x - sx) ** 2 + (y - sy) ** 2) / (2 * sigma * sigma));
      }
    }
  }
  for (let i = 0; i < img.length; i++) {
    const v = Math.min(LEVEL, img[i]! + 10 * rng.gaussian());
    img[i] = v * (0.9 + (0.2 * (i % W)) / W);
  }
  return img;
}

const test = suite('tiled validation: stack FWHM');

test('saturated stars are left out with the level given, and only then', () => {
  const img = field(7);
  const withLevel = imageFwhm(img, W, H, 0.9 * LEVEL * STACK_SATURATION_MARGIN);
  const without = imageFwhm(img, W, H);
  assert.ok(withLevel.stars >= 60, `stars ${withLevel.stars}`);
  assert.ok(Math.abs(withLevel.fwhm / FWHM - 1) < 0.1, `with the level: ${withLevel.fwhm.toFixed(3)} px for ${FWHM} px stars`);
  // The clipped, sloped cores read wide when nothing says they are saturated.
  assert.ok(without.fwhm > withLevel.fwhm * 1.1, `without the level: ${without.fwhm.toFixed(3)} px vs ${withLevel.fwhm.toFixed(3)} px`);
  console.log(`  [tiled-validation] ${FWHM} px stars: ${withLevel.fwhm.toFixed(3)} px with the level (${withLevel.stars} stars), ${without.fwhm.toFixed(3)} px without`);
});

test.run();
