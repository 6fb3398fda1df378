// registration_cc on generated frames (mono and OSC mosaics, rotations up to 2°, a meridian
// flip and the four labelled defects): ≥ 0.9 for good frames under the true registration,
// clearly lower under a wrong transform and for the cloudy frame; a satellite trail does not
// sink a well-registered frame below the default min_correlation; NaN regions and
// non-overlapping transforms are handled.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { composeAffine, identity, type Affine } from '../../src/algorithms/affine.js';
import { CcProxyBuilder, makeCcProxy, registrationCc, type CcProxy } from '../../src/algorithms/registration-cc.js';
import { readFitsImage } from '../../src/fits/index.js';
import { generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';
import { similarityAbout, trueMatrix } from './star-lists.js';

const W = 1024;
const H = 768;

interface Set {
  truth: Truth;
  proxies: CcProxy[];
  /** The reference's raw plane, for the NaN test. */
  plane0: Float32Array;
}

async function load(kind: 'mono' | 'osc'): Promise<Set> {
  return withTempDir(`cc-${kind}`, async (out) => {
    const truth = await generateDataset({ out, kind, frames: 10, width: W, height: H, seed: 11, calibration: false, maxRotationDeg: 2, meridianFlip: 5 });
    const proxies: CcProxy[] = [];
    let plane0: Float32Array = new Float32Array(0);
    for (const f of truth.frames) {
      const image = await readFitsImage(`${out}/${f.file}`);
      if (f.index === 0) plane0 = image.data;
      proxies.push(makeCcProxy(image.data, image.width, image.height));
    }
    return { truth, proxies, plane0 };
  });
}

const sets: Partial<Record<'mono' | 'osc', Set>> = {};

test.before(async () => {
  sets.mono = await load('mono');
  sets.osc = await load('osc');
});

function cc(set: Set, frame: number, m: Affine): number {
  const r = registrationCc(set.proxies[0]!, set.proxies[frame]!, m);
  assert.ok(r.ok, r.ok ? '' : r.detail);
  return r.ok ? r.cc : NaN;
}

for (const kind of ['mono', 'osc'] as const) {
  test(`${kind}: good frames ≥ 0.9 when correctly registered; a wrong transform and the cloudy frame clearly lower`, () => {
    const set = sets[kind]!;
    const { truth } = set;
    const good: number[] = [];
    let cloudy = NaN;
    let satellite = NaN;
    for (const f of truth.frames) {
      if (f.index === 0) continue;
      const m = trueMatrix(truth, f.index);
      const value = cc(set, f.index, m);
      assert.ok(value >= -1 && value <= 1);
      if (f.bad === null) good.push(value);
      if (f.bad === 'clouds') cloudy = value;
      if (f.bad === 'satellite') satellite = value;
      // Wrong transforms: 10 px off, 1° off about the centre, and no registration at all.
      for (const wrong of [composeAffine([[1, 0, 8], [0, 1, -6]], m), composeAffine(similarityAbout(1, 1, false, (W - 1) / 2, (H - 1) / 2), m)]) {
        const w = cc(set, f.index, wrong);
        assert.ok(w < 0.65 && w < value - 0.25, `${kind} frame ${f.index} (${f.bad ?? 'good'}): wrong transform scores ${w.toFixed(3)} vs ${value.toFixed(3)}`);
      }
      if (Math.abs(f.rotation_deg) > 90) assert.ok(cc(set, f.index, identity()) < 0.2, 'a flipped frame taken as unrotated');
    }
    const minGood = Math.min(...good);
    assert.ok(good.length >= 4);
    assert.ok(minGood >= 0.9, `${kind}: good frames ${good.map((v) => v.toFixed(3)).join(', ')}`);
    assert.ok(cloudy < minGood - 0.04, `${kind}: cloudy ${cloudy.toFixed(3)} vs good ≥ ${minGood.toFixed(3)}`);
    // A bright trail across the frame is an artefact of a small area: the frame stays usable.
    assert.ok(satellite >= 0.75, `${kind}: satellite frame ${satellite.toFixed(3)}`);
  });
}

test('reference against itself is 1; NaN regions are excluded; no overlap is a typed failure', () => {
  const set = sets.mono!;
  const self = registrationCc(set.proxies[0]!, set.proxies[0]!, identity());
  assert.ok(self.ok && Math.abs(self.cc - 1) < 1e-9 && self.overlap === 1);
  // Blank the left third of the reference plane: the overlap shrinks, the score stays high.
  const holed = set.plane0.slice();
  for (let y = 0; y < H; y++) holed.fill(NaN, y * W, y * W + Math.floor(W / 3));
  const proxy = makeCcProxy(holed, W, H);
  const m = trueMatrix(set.truth, 1);
  const r = registrationCc(proxy, set.proxies[1]!, m);
  assert.ok(r.ok);
  if (r.ok) {
    assert.ok(r.overlap > 0.6 && r.overlap < 0.7, `overlap ${r.overlap}`);
    assert.ok(r.cc >= 0.9, `cc ${r.cc}`);
  }
  const away = registrationCc(set.proxies[0]!, set.proxies[1]!, [[1, 0, 5000], [0, 1, 0]]);
  assert.equal([away.ok, away.ok ? '' : away.code], [false, 'no_overlap']);
  const singular = registrationCc(set.proxies[0]!, set.proxies[1]!, [[1, 1, 0], [1, 1, 0]]);
  assert.equal([singular.ok, singular.ok ? '' : singular.code], [false, 'no_overlap']);
  const flat = makeCcProxy(new Float32Array(W * H).fill(7), W, H);
  const none = registrationCc(set.proxies[0]!, flat, identity());
  assert.equal([none.ok, none.ok ? '' : none.code], [false, 'no_signal']);
});

test('a proxy built band by band equals the whole-plane proxy (bins 2 and 3, odd sizes, NaN blocks)', () => {
  const rnd = seededRandom(77);
  for (const [w, h, bin, band] of [[203, 157, 2, 16], [203, 157, 3, 9], [64, 1, 2, 2], [128, 96, 2, 128]] as const) {
    const plane = new Float32Array(w * h);
    for (let i = 0; i < plane.length; i++) plane[i] = 100 + 20 * rnd() + (i % 97 === 0 ? 5000 : 0);
    // A whole NaN block (the slow, renormalising blur path) and single NaN pixels.
    for (let y = 10; y < Math.min(h, 16); y++) for (let x = 30; x < 40; x++) plane[y * w + x] = NaN;
    plane[Math.min(h - 1, 3) * w + 5] = NaN;
    const whole = makeCcProxy(plane, w, h, { bin });
    const builder = new CcProxyBuilder(w, h, { bin });
    for (let y0 = 0; y0 < builder.rowsUsed; y0 += band) builder.addRows(y0, plane.subarray(y0 * w, Math.min(h, y0 + band) * w));
    const banded = builder.finish();
    assert.equal([banded.width, banded.height, banded.bin], [whole.width, whole.height, whole.bin]);
    assert.ok(banded.data.every((v, i) => Object.is(v, whole.data[i])), `${w}x${h} bin ${bin}: identical values`);
  }
  // Out-of-order bands are refused, and a missing band is noticed.
  const b = new CcProxyBuilder(64, 64, { bin: 2 });
  assert.throws(() => b.addRows(2, new Float32Array(64 * 2)), /in order/);
  b.addRows(0, new Float32Array(64 * 32));
  assert.throws(() => b.finish(), /missing/);
});

test.run();
