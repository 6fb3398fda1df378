// The registration bar of issue 4, shared by registration-bar-mono.test.ts and
// registration-bar-osc.test.ts: a 30-frame 2048×1536 set from the fixture generator with
// rotations up to 2° and a meridian flip in the middle, stars detected on the real frames
// (stars.ts), every frame registered onto the temporal-midpoint reference (the first frame
// after the flip, so half the frames are turned by ~180° against it), errors measured
// against truth.json: RMS over the frame of the distance between the true and the estimated
// frame → reference mapping.

import * as assert from 'uvu/assert';
import { composeAffine, invertAffine, mappingRms, type Affine } from '../../src/algorithms/affine.js';
import { makeCcProxy, registrationCc, type CcProxy } from '../../src/algorithms/registration-cc.js';
import { registerStars, type RegistrationResult } from '../../src/algorithms/registration.js';
import { detectStars } from '../../src/algorithms/stars.js';
import type { StarPoint } from '../../src/algorithms/match.js';
import { readFitsImage } from '../../src/fits/index.js';
import { generateDataset } from '../../fixtures/generator/index.js';
import { withTempDir } from '../helpers/tmp.js';

export const FRAMES = 30;
export const WIDTH = 2048;
export const HEIGHT = 1536;

export interface BarOutcome {
  /** Per frame: bad label, the registration result and its error in px (NaN when it failed). */
  frames: { index: number; bad: string | null; result: RegistrationResult; error: number; cc: number }[];
  reference: number;
}

export async function runBar(kind: 'mono' | 'osc', seed: number): Promise<BarOutcome> {
  return withTempDir(`bar-${kind}`, async (out) => {
    const truth = await generateDataset({ out, kind, frames: FRAMES, width: WIDTH, height: HEIGHT, seed, calibration: false, maxRotationDeg: 2, meridianFlip: true });
    const lists: StarPoint[][] = [];
    const proxies: CcProxy[] = [];
    for (const f of truth.frames) {
      const image = await readFitsImage(`${out}/${f.file}`);
      const detection = detectStars(image.data, image.width, image.height, { cfa: kind === 'osc' });
      assert.ok(detection.ok, `detection on ${f.file}`);
      lists.push(detection.ok ? detection.stars : []);
      proxies.push(makeCcProxy(image.data, image.width, image.height));
    }
    // Temporal midpoint: frame 15 of 30, the first after the meridian flip.
    const reference = Math.floor(FRAMES / 2);
    assert.ok(Math.abs(truth.frames[reference]!.rotation_deg) > 90 && Math.abs(truth.frames[0]!.rotation_deg) < 90, 'the reference is flipped against frame 0');
    const toRef = truth.frames[reference]!.transform as Affine;
    const frames: BarOutcome['frames'] = [];
    for (const f of truth.frames) {
      if (f.index === reference) continue;
      const result = registerStars(lists[reference]!, lists[f.index]!);
      // Truth: frame pixel → truth reference (frame 0) → chosen reference.
      const expected = composeAffine(toRef, invertAffine(f.transform as Affine)!);
      const error = result.ok ? mappingRms(result.matrix, expected, WIDTH, HEIGHT) : NaN;
      const cc = result.ok ? registrationCc(proxies[reference]!, proxies[f.index]!, result.matrix) : null;
      frames.push({ index: f.index, bad: f.bad, result, error, cc: cc && cc.ok ? cc.cc : NaN });
    }
    return { frames, reference };
  });
}

/** The issue's bar over good frames, plus the bad frames' expected outcomes. */
export function checkBar(kind: string, outcome: BarOutcome): void {
  const good = outcome.frames.filter((f) => f.bad === null);
  assert.ok(good.length >= 24, `${good.length} good frames`);
  for (const f of good) {
    assert.ok(f.result.ok, `${kind} frame ${f.index}: ${f.result.ok ? '' : `${f.result.code} ${f.result.detail}`}`);
    assert.ok(f.cc >= 0.9, `${kind} frame ${f.index}: registration_cc ${f.cc.toFixed(3)}`);
  }
  const errors = good.map((f) => f.error).sort((a, b) => a - b);
  const median = errors[errors.length >> 1]!;
  const max = errors[errors.length - 1]!;
  const summary = `${kind}: median ${median.toFixed(4)} px, max ${max.toFixed(4)} px over ${good.length} good frames`;
  assert.ok(median <= 0.01, summary);
  assert.ok(max <= 0.05, summary);
  // Flipped frames (before the reference) and unflipped ones are all among them.
  assert.ok(good.some((f) => f.index < outcome.reference) && good.some((f) => f.index > outcome.reference));
  // Clouds, a satellite trail and bad seeing still register; a trailed frame may instead
  // fail with a typed reason (its centroids scatter along the trails).
  for (const f of outcome.frames) {
    if (f.bad === 'clouds' || f.bad === 'satellite' || f.bad === 'bad_seeing') {
      assert.ok(f.result.ok && f.error < 0.05, `${kind} ${f.bad} frame ${f.index}: ${f.result.ok ? f.error.toFixed(4) : f.result.code}`);
    }
    if (f.bad === 'trailed' && !f.result.ok) assert.ok(['no_match', 'residual_too_large'].includes(f.result.code));
  }
}
