// STACKING's outlier pre-mask on the device (shaders/premask/premask_*.wgsl) against its
// TypeScript reference (src/cpu/premask.ts): seeded bands with trails,
// hot and cold pixels, a star, NaN holes, ±Inf samples, odd widths (mask rows padded to words),
// frames without noise estimate, and the keep rule. Masks, compacted bands and tallies must be
// identical (both compute in f32 step by step). The noise-model seed bound (NOISE = 1): the
// reference computes τ in f64, the kernel in f32, so they may part only for a sample within
// rounding distance of a bound; the seeded cases assert that none lies within 1e-5 (relative)
// of one, and then require identical results too.
import * as assert from 'uvu/assert';
import { test } from 'uvu';
import { stack } from '../../src/cpu/stack.js';
import { packPremaskNoiseFrames, premaskMaskBytes, premaskResident, scatterNanListed, scatterNanResident } from '../../src/gpu/kernels/premask.js';
import { ALPHA, compactOwned, premaskApply, premaskFlag } from '../../src/cpu/premask.js';
import { gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

interface Case {
  width: number;
  rows: number;
  frames: number;
  ownedY0: number;
  ownedRows: number;
  minFraction: number;
  seed: number;
}

function makeBand(c: Case) {
  const rnd = seededRandom(c.seed);
  const gauss = () => Math.sqrt(-2 * Math.log(1 - rnd())) * Math.cos(2 * Math.PI * rnd());
  const { width: W, rows: R, frames: N } = c;
  const band = new Float32Array(N * R * W);
  const scale = Array.from({ length: N }, () => 0.9 + 0.2 * rnd());
  const offset = Array.from({ length: N }, () => -20 + 40 * rnd());
  for (let f = 0; f < N; f++) {
    for (let y = 0; y < R; y++) {
      for (let x = 0; x < W; x++) {
        let v = 1000 + 0.5 * x + 8 * gauss();
        // A star common to all frames (peak varies by seeing), at (W/2, R/2).
        v += 3000 * (0.85 + 0.3 * rnd()) * Math.exp(-((x - W / 2) ** 2 + (y - R / 2) ** 2) / 2.2);
        band[(f * R + y) * W + x] = (v - offset[f]!) / scale[f]!;
      }
    }
  }
  // A diagonal trail in frame 1, hot and cold pixels, NaN holes, infinities.
  for (let y = 0; y < R; y++) for (let x = 0; x < W; x++) band[(1 * R + y) * W + x]! += 2500 * Math.exp(-((x - y - 3) ** 2) / 2.5);
  for (let k = 0; k < 12; k++) {
    const f = Math.floor(rnd() * N);
    const i = Math.floor(rnd() * R * W);
    band[f * R * W + i]! += k % 3 === 0 ? -400 : 300 + 3000 * rnd();
  }
  for (let k = 0; k < 20; k++) band[Math.floor(rnd() * N * R * W)] = NaN;
  band[(2 * R + 1) * W + 2] = Infinity;
  band[(3 * R + 2) * W + 5] = -Infinity;
  // The per-pixel median of the normalised samples (as the median pass gives it).
  const med = stack(band, { width: W, rows: R, frames: N, method: 'median', low: 3, high: 3, maxIters: 1, minFraction: 0, scale, offset }).mean;
  const sigma = Array.from({ length: N }, (_, f) => (f === N - 1 ? NaN : 8));
  return { band, median: med, scale, offset, sigma };
}

function reference(c: Case, d: ReturnType<typeof makeBand>) {
  const band = d.band.slice();
  const mask = new Uint8Array(c.frames * c.rows * c.width);
  const rejected = new Uint32Array(2 * c.frames);
  const args = {
    band,
    median: d.median,
    mask,
    width: c.width,
    rows: c.rows,
    frames: c.frames,
    scale: d.scale,
    offset: d.offset,
    sigma: d.sigma,
    kLow: 3,
    kHigh: 3,
    level: 1000,
    minFraction: c.minFraction,
    ownedY0: c.ownedY0,
    ownedRows: c.ownedRows,
    rejected,
    counts: new BigUint64Array(2),
  };
  premaskFlag(args, 0, c.frames);
  premaskApply(args, c.ownedY0, c.ownedY0 + c.ownedRows);
  return { out: compactOwned(band, c.width, c.rows, c.frames, c.ownedY0, c.ownedRows).slice(), rejected };
}

async function device(c: Case, d: ReturnType<typeof makeBand>) {
  const ctx = gpu.ctx!;
  const band = ctx.upload(d.band);
  const median = ctx.upload(d.median);
  const mask = ctx.storage(premaskMaskBytes(c.width, c.rows, c.frames), 'mask');
  const out = ctx.storage(c.frames * c.ownedRows * c.width * 4, 'out');
  const tallies = ctx.upload(new Uint32Array(2 * c.frames));
  const frame = new Float32Array(4 * c.frames);
  for (let f = 0; f < c.frames; f++) {
    const s = d.sigma[f]!;
    frame.set([d.scale[f]!, d.offset[f]!, s > 0 ? 3 * s : Infinity, s > 0 ? 3 * s : Infinity], 4 * f);
  }
  try {
    const encoder = ctx.device.createCommandEncoder();
    await premaskResident(ctx, band, median, mask, out, tallies, { width: c.width, rows: c.rows, frames: c.frames, ownedY0: c.ownedY0, ownedRows: c.ownedRows, level: 1000, alpha: ALPHA, minFraction: c.minFraction, frame }, encoder);
    ctx.submit(encoder);
    const result = await ctx.readFloat32(out, c.frames * c.ownedRows * c.width);
    const rejected = new Uint32Array(await ctx.readback(tallies, 8 * c.frames));
    return { out: result, rejected };
  } finally {
    for (const b of [band, median, mask, out, tallies]) ctx.pool.release(b);
  }
}

/** Noise-model inputs of a case: sky below the band's level by a gradient, NaN holes; K, α per frame. */
function noiseInputs(c: Case) {
  const rnd = seededRandom(100 + c.seed);
  const sky = new Float32Array(c.rows * c.width);
  for (let i = 0; i < sky.length; i++) sky[i] = 990 + 0.5 * (i % c.width) + 4 * rnd();
  sky[3] = NaN;
  sky[sky.length - 2] = NaN;
  const poisson = Array.from({ length: c.frames }, () => 0.2 + 0.8 * rnd());
  const seeing = Array.from({ length: c.frames }, () => 0.3 + 0.9 * rnd());
  return { sky, poisson, seeing };
}

function referenceNoise(c: Case, d: ReturnType<typeof makeBand>, n: ReturnType<typeof noiseInputs>) {
  const band = d.band.slice();
  const rejected = new Uint32Array(2 * c.frames);
  const args = { band, median: d.median, mask: new Uint8Array(c.frames * c.rows * c.width), width: c.width, rows: c.rows, frames: c.frames, scale: d.scale, offset: d.offset, sigma: d.sigma, kLow: 3, kHigh: 3, level: 1000, minFraction: c.minFraction, ownedY0: c.ownedY0, ownedRows: c.ownedRows, rejected, counts: new BigUint64Array(2), noiseModel: { background: n.sky, poisson: n.poisson, seeing: n.seeing } };
  premaskFlag(args, 0, c.frames);
  premaskApply(args, c.ownedY0, c.ownedY0 + c.ownedRows);
  return { out: compactOwned(band, c.width, c.rows, c.frames, c.ownedY0, c.ownedRows).slice(), rejected, mask: args.mask };
}

/** Smallest relative distance of any sample's deviation to a seed or strong-seed bound (f64). */
function closestToBound(c: Case, d: ReturnType<typeof makeBand>, n: ReturnType<typeof noiseInputs>): number {
  let closest = Infinity;
  const plane = c.rows * c.width;
  for (let f = 0; f < c.frames; f++) {
    const s = d.sigma[f]!;
    if (!(s > 0)) continue;
    for (let i = 0; i < plane; i++) {
      const m = d.median[i]!;
      const v = Math.fround(d.band[f * plane + i]! * d.scale[f]! + d.offset[f]!);
      if (!(m === m) || !(v === v) || !Number.isFinite(v)) continue;
      const b = n.sky[i]!;
      const S = b === b ? Math.max(m - b, 0) : 0;
      const tau = Math.sqrt(s * s + n.poisson[f]! * S + n.seeing[f]! ** 2 * S * S);
      const dev = v - m;
      for (const bound of [3 * tau, 6 * tau]) for (const x of [dev, -dev]) closest = Math.min(closest, Math.abs(x - bound) / (Math.abs(m) + bound));
    }
  }
  return closest;
}

async function deviceNoise(c: Case, d: ReturnType<typeof makeBand>, n: ReturnType<typeof noiseInputs>) {
  const ctx = gpu.ctx!;
  const band = ctx.upload(d.band);
  const median = ctx.upload(d.median);
  const sky = ctx.upload(n.sky);
  const mask = ctx.storage(premaskMaskBytes(c.width, c.rows, c.frames), 'mask');
  const out = ctx.storage(c.frames * c.ownedRows * c.width * 4, 'out');
  const tallies = ctx.upload(new Uint32Array(2 * c.frames));
  try {
    const encoder = ctx.device.createCommandEncoder();
    const table = packPremaskNoiseFrames(d.scale, d.offset, d.sigma, n.poisson, n.seeing);
    await premaskResident(ctx, band, median, mask, out, tallies, { width: c.width, rows: c.rows, frames: c.frames, ownedY0: c.ownedY0, ownedRows: c.ownedRows, level: 1000, alpha: ALPHA, minFraction: c.minFraction, frame: new Float32Array(0), noise: { table, sky, kHigh: 3, kLow: 3 } }, encoder);
    ctx.submit(encoder);
    const result = await ctx.readFloat32(out, c.frames * c.ownedRows * c.width);
    const rejected = new Uint32Array(await ctx.readback(tallies, 8 * c.frames));
    return { out: result, rejected };
  } finally {
    for (const b of [band, median, sky, mask, out, tallies]) ctx.pool.release(b);
  }
}

const cases: Case[] = [
  { width: 37, rows: 24, frames: 7, ownedY0: 2, ownedRows: 20, minFraction: 0.4, seed: 1 },
  { width: 64, rows: 16, frames: 5, ownedY0: 0, ownedRows: 14, minFraction: 0.4, seed: 2 },
  { width: 33, rows: 12, frames: 3, ownedY0: 2, ownedRows: 10, minFraction: 0.9, seed: 3 },
  { width: 130, rows: 40, frames: 12, ownedY0: 2, ownedRows: 36, minFraction: 0.2, seed: 4 },
];

test('reference: the trail frame is masked, frames without a noise estimate are not flagged', () => {
  const c = cases[0]!;
  const d = makeBand(c);
  const r = reference(c, d);
  assert.ok(r.rejected[c.frames + 1]! > 3 * c.ownedRows, `trail frame high tally ${r.rejected[c.frames + 1]}`);
  assert.is(r.rejected[c.frames - 1]! + r.rejected[2 * c.frames - 1]!, 0);
});

for (const c of cases) {
  gpuTest(`device pre-mask = reference (${c.width}x${c.rows}, ${c.frames} frames, owned ${c.ownedY0}+${c.ownedRows}, min_fraction ${c.minFraction})`, async () => {
    const d = makeBand(c);
    const want = reference(c, d);
    const got = await device(c, d);
    assert.equal(Array.from(got.rejected), Array.from(want.rejected), 'tallies');
    let diff = 0;
    for (let i = 0; i < want.out.length; i++) {
      const a = got.out[i]!;
      const b = want.out[i]!;
      if (!(Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b)))) diff++;
    }
    assert.is(diff, 0, `${diff} of ${want.out.length} samples differ`);
  });
}

test('reference, noise-model seeds: the trail is masked, the star (within its seeing bound) is not, frames without noise are never flagged', () => {
  const c = cases[0]!;
  const d = makeBand(c);
  const r = referenceNoise(c, d, noiseInputs(c));
  assert.ok(r.rejected[c.frames + 1]! > 3 * c.ownedRows, `trail frame high tally ${r.rejected[c.frames + 1]}`);
  assert.is(r.rejected[c.frames - 1]! + r.rejected[2 * c.frames - 1]!, 0);
});

for (const c of cases) {
  gpuTest(`device pre-mask, noise-model seeds = reference (${c.width}x${c.rows}, ${c.frames} frames, owned ${c.ownedY0}+${c.ownedRows})`, async () => {
    const d = makeBand(c);
    const n = noiseInputs(c);
    const closest = closestToBound(c, d, n);
    assert.ok(closest > 1e-5, `a sample lies within ${closest} (relative) of a bound, where f32 and f64 may part: pick another seed`);
    const want = referenceNoise(c, d, n);
    const got = await deviceNoise(c, d, n);
    assert.ok(want.mask.some((m) => m !== 0), 'the case flags something');
    assert.equal(Array.from(got.rejected), Array.from(want.rejected), 'tallies');
    let diff = 0;
    for (let i = 0; i < want.out.length; i++) {
      const a = got.out[i]!;
      const b = want.out[i]!;
      if (!(Object.is(a, b) || (Number.isNaN(a) && Number.isNaN(b)))) diff++;
    }
    assert.is(diff, 0, `${diff} of ${want.out.length} samples differ`);
  });
}


/** got is values with NaN at exactly the listed indices. */
function assertNanExactlyAt(got: Float32Array, values: Float32Array, list: ArrayLike<number>): void {
  const listed = new Set(Array.from(list));
  for (let i = 0; i < values.length; i++) {
    if (listed.has(i)) assert.ok(Number.isNaN(got[i]!), `index ${i} not NaN`);
    else assert.is(got[i], values[i]);
  }
}

gpuTest('scatter_nan over a target larger than the binding (windows, forced small): NaN at exactly the listed indices, the host list unchanged', async () => {
  const ctx = gpu.ctx!;
  const n = 5000;
  const values = Float32Array.from({ length: n }, (_, i) => i + 0.5);
  const rnd = seededRandom(10);
  // Unordered, window ends included.
  const list = Uint32Array.from(new Set([...Array.from({ length: 400 }, () => Math.floor(rnd() * n)), 0, 1023, 1024, 4999]));
  const host = list.slice();
  const indices = ctx.storage(4 * list.length);
  const dst = ctx.upload(values);
  try {
    const encoder = ctx.device.createCommandEncoder();
    await scatterNanListed(ctx, host, list.length, indices, dst, n, encoder, 4096); // windows of 1024 values
    ctx.submit(encoder);
    assertNanExactlyAt(await ctx.readFloat32(dst, n), values, list);
    assert.equal(Array.from(host), Array.from(list));
  } finally {
    ctx.pool.release(indices);
    ctx.pool.release(dst);
  }
});

gpuTest('scatter_nan: NaN at exactly the listed indices, the rest untouched; the host pre-mask lists what it masked', async () => {
  const ctx = gpu.ctx!;
  const n = 5000;
  const values = Float32Array.from({ length: n }, (_, i) => i + 0.5);
  const rnd = seededRandom(9);
  const list = Array.from(new Set(Array.from({ length: 300 }, () => Math.floor(rnd() * n))));
  const indices = ctx.upload(Uint32Array.from(list));
  const dst = ctx.upload(values);
  try {
    const encoder = ctx.device.createCommandEncoder();
    await scatterNanResident(ctx, indices, list.length, dst, n, encoder);
    ctx.submit(encoder);
    assertNanExactlyAt(await ctx.readFloat32(dst, n), values, list);
  } finally {
    ctx.pool.release(indices);
    ctx.pool.release(dst);
  }
  // The host pre-mask's index list names exactly the samples it set to NaN (two calls, one list).
  const c: Case = { width: 53, rows: 12, frames: 7, ownedY0: 2, ownedRows: 8, minFraction: 0.3, seed: 21 };
  const m = makeBand(c);
  const before = m.band.slice();
  const nanIndex = new Uint32Array(c.frames * c.rows * c.width);
  const nanCount = new Uint32Array(1);
  const args = { band: m.band, median: m.median, mask: new Uint8Array(c.frames * c.rows * c.width), width: c.width, rows: c.rows, frames: c.frames, scale: m.scale, offset: m.offset, sigma: m.sigma, kLow: 3, kHigh: 3, level: 1000, minFraction: c.minFraction, ownedY0: c.ownedY0, ownedRows: c.ownedRows, rejected: new Uint32Array(2 * c.frames), counts: new BigUint64Array(2), nanIndex, nanCount };
  premaskFlag(args, 0, c.frames);
  premaskApply(args, 0, 6);
  premaskApply(args, 6, c.rows);
  const masked = new Set<number>();
  for (let i = 0; i < before.length; i++) if (!Number.isNaN(before[i]!) && Number.isNaN(m.band[i]!)) masked.add(i);
  assert.ok(masked.size > 10, `${masked.size} masked`);
  assert.is(nanCount[0], masked.size);
  assert.equal(new Set(nanIndex.subarray(0, nanCount[0])), masked);
  assert.is(Number(args.counts[1]), masked.size);
});

test.run();
