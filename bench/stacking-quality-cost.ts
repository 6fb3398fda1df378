// What local normalization and the noise-model rejection cost next to today's stack, per band:
//   node dist/bench/stacking-quality-cost.js [--frames 120] [--width 1024] [--rows 64] [--repeat 3]
// One seeded band (sky, stars with seeing-dependent peaks, noise, outliers, 3 % NaN) of N frames;
// times (median of --repeat) of: the stack kernel's sigma (today) and median (the pre-mask's
// start centre), ln_apply, reject_noise sigma — as TypeScript (one thread) and as WGSL on the
// device path SKYSTACK_DEVICE picks (a software adapter on a machine without a GPU), device
// buffers resident (upload and readback excluded, as in STACKING's band loop).

import { parseArgs } from 'node:util';
import { lnApply, type LnApplyParams } from '../src/cpu/ln-apply.js';
import { rejectNoiseModel, type NoiseRejectParams } from '../src/cpu/reject-noise.js';
import { stack, type StackParams } from '../src/cpu/stack.js';
import { GpuContext } from '../src/gpu/context.js';
import { lnApplyResident } from '../src/gpu/kernels/ln-apply.js';
import { packRejectFrames, rejectNoiseResident } from '../src/gpu/kernels/reject-noise.js';
import { stackResident } from '../src/gpu/kernels/stack.js';
import { mulberry32 } from '../src/algorithms/ransac.js';

const { values } = parseArgs({ options: { frames: { type: 'string', default: '120' }, width: { type: 'string', default: '1024' }, rows: { type: 'string', default: '64' }, repeat: { type: 'string', default: '3' } } });
const N = Number(values.frames);
const W = Number(values.width);
const R = Number(values.rows);
const repeat = Number(values.repeat);

const rnd = mulberry32(3);
const g = () => (rnd() + rnd() + rnd() + rnd() - 2) * Math.sqrt(3);
const band = new Float32Array(N * R * W);
const peak = Array.from({ length: N }, () => 0.6 + 1.2 * rnd());
for (let f = 0; f < N; f++) {
  for (let r = 0; r < R; r++) {
    for (let x = 0; x < W; x++) {
      let v = 1000 + 0.05 * x + 30 * g();
      const sx = (x % 64) - 32;
      const sy = (r % 32) - 16;
      v += 3000 * peak[f]! * Math.exp(-(sx * sx + sy * sy) / (3 * peak[f]!));
      if (rnd() < 0.01) v += 500 + 3000 * rnd();
      if (rnd() < 0.03) v = NaN;
      band[(f * R + r) * W + x] = v;
    }
  }
}
const base: StackParams = { width: W, rows: R, frames: N, method: 'sigma', low: 3, high: 3, maxIters: 3, minFraction: 0.4 };
const noise: NoiseRejectParams = { ...base, method: 'sigma', noise: new Array(N).fill(30), poisson: new Array(N).fill(4), seeing: new Array(N).fill(0.5) };
const nx = 16;
const ny = 12;
const grid = { width: W, height: 768, nx, ny, x0: W / nx / 2 - 0.5, y0: 768 / ny / 2 - 0.5, dx: W / nx, dy: 768 / ny };
const coefficients = Float32Array.from({ length: N * nx * ny * 2 }, (_, i) => (i % 2 === 0 ? 1 + 0.01 * rnd() : 20 * rnd()));
const ln: LnApplyParams = { width: W, rows: R, frames: N, y0: 100, grid, coefficients };
const median = stack(band, { ...base, method: 'median' }).mean;
const background = new Float32Array(W * R).fill(1000);

function time(f: () => void): number {
  const t: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    f();
    t.push(performance.now() - t0);
  }
  return t.sort((a, b) => a - b)[t.length >> 1]!;
}
async function timeAsync(f: () => Promise<void>): Promise<number> {
  await f(); // warm-up (pipeline compilation)
  const t: number[] = [];
  for (let i = 0; i < repeat; i++) {
    const t0 = performance.now();
    await f();
    t.push(performance.now() - t0);
  }
  return t.sort((a, b) => a - b)[t.length >> 1]!;
}

const rows: [string, number, number | null][] = [];
const ts = {
  sigma: time(() => stack(band, base)),
  median: time(() => stack(band, { ...base, method: 'median' })),
  ln: time(() => lnApply(band.slice(), ln)),
  reject: time(() => rejectNoiseModel(band, noise, { centre: median, background })),
};
const { ctx, info } = await GpuContext.create();
let dev: typeof ts | null = null;
if (ctx) {
  const src = ctx.upload(band);
  const work = ctx.upload(band);
  const coef = ctx.upload(coefficients);
  const frameTable = ctx.upload(packRejectFrames(noise));
  const centre = ctx.upload(median);
  const bg = ctx.upload(background);
  const mean = ctx.storage(W * R * 4);
  const count = ctx.storage(W * R * 4);
  const rejected = ctx.upload(new Uint32Array(2 * N));
  dev = {
    sigma: await timeAsync(async () => {
      await stackResident(ctx, src, mean, count, rejected, base);
      await ctx.done();
    }),
    median: await timeAsync(async () => {
      await stackResident(ctx, src, mean, count, rejected, { ...base, method: 'median' });
      await ctx.done();
    }),
    ln: await timeAsync(async () => {
      await lnApplyResident(ctx, work, coef, ln);
      await ctx.done();
    }),
    reject: await timeAsync(async () => {
      await rejectNoiseResident(ctx, src, frameTable, centre, bg, mean, count, rejected, noise);
      await ctx.done();
    }),
  };
}
rows.push(['stack sigma (today)', ts.sigma, dev?.sigma ?? null]);
rows.push(['stack median (pre-mask centre, today too)', ts.median, dev?.median ?? null]);
rows.push(['ln_apply', ts.ln, dev?.ln ?? null]);
rows.push(['reject_noise sigma', ts.reject, dev?.reject ?? null]);
const mpf = (N * R * W) / 1e6;
console.log(`band ${N} frames × ${R} rows × ${W} px (${mpf.toFixed(1)} M samples); device: ${ctx ? `${info.kind} (${info.adapter})` : 'none'}; median of ${repeat}`);
console.log('| kernel | TypeScript ms | device ms |');
console.log('|---|---|---|');
for (const [name, a, b] of rows) console.log(`| ${name} | ${a.toFixed(1)} | ${b === null ? '–' : b.toFixed(1)} |`);
ctx?.destroy();
