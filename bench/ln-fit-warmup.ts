// `node dist/bench/ln-fit-warmup.js [--fits 30]`
// CPU of local normalization's fits in a fresh process, as STACKING's setup pass meets them: the
// fits run in no other phase, so a run's first fits run mostly unoptimised code. Fits a synthetic
// 2048 × 1536 frame binned by 8 (the bench's 256 × 192 planes: sky gradient, noise, 3000 stars)
// against a reference: prepareReference + fitReferenceBackground once, then `--fits` fits over 4
// frames. Prints one JSON line: CPU ms of the reference, of each fit, of the first 12 and the
// last 10. For A/B runs of two builds, alternate the builds' processes (one process = one cold
// start); does not write bench/RESULTS.md.

import { parseArgs } from 'node:util';
import { binPlane } from '../src/algorithms/binned-plane.js';
import { fitLocalNormalization, fitReferenceBackground, prepareReference } from '../src/algorithms/local-normalization.js';

const { values } = parseArgs({ options: { fits: { type: 'string', default: '30' } } });
const fits = Number(values.fits);
const W = 2048;
const H = 1536;
let seed = 7;
const rnd = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
function frame(k: number): Float32Array {
  const a = new Float32Array(W * H);
  for (let i = 0; i < a.length; i++) a[i] = 1000 + k * 3 + (i % W) * 0.01 * k + 10 * (rnd() - 0.5);
  for (let s = 0; s < 3000; s++) {
    const x = 5 + Math.floor(rnd() * (W - 10));
    const y = 5 + Math.floor(rnd() * (H - 10));
    for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) a[(y + dy) * W + x + dx] = a[(y + dy) * W + x + dx]! + 500 * Math.exp(-(dx * dx + dy * dy) / 2);
  }
  return a;
}
const ref = binPlane(frame(1), W, H, 8);
const frames = [2, 3, 4, 5].map((k) => binPlane(frame(k), W, H, 8));
const options = { cells: 16, scale: 'none' as const };
const cpu = (fn: () => void): number => {
  const c0 = process.cpuUsage();
  fn();
  const c = process.cpuUsage(c0);
  return (c.user + c.system) / 1000;
};
let prepared: ReturnType<typeof prepareReference> | null = null;
const refMs = cpu(() => {
  prepared = prepareReference(ref, options);
  fitReferenceBackground(ref, options, prepared);
});
const each = Array.from({ length: fits }, (_, i) => cpu(() => fitLocalNormalization(ref, frames[i % 4]!, options, prepared)));
const sum = (xs: number[]) => Math.round(xs.reduce((a, b) => a + b, 0));
console.log(JSON.stringify({ ref_ms: Math.round(refMs), total_ms: Math.round(refMs) + sum(each), first12_ms: sum(each.slice(0, 12)), last10_ms: sum(each.slice(-10)), fits_ms: each.map((x) => Math.round(x * 10) / 10) }));
