// Same science? Compares the stacks of two Raw Stack run folders (outputs/stacked_linear.fits,
// first plane): the stars the detector measures in both (src/algorithms/stars.ts detectStars,
// matched within 1 px), their median FWHM and SNR and the median per-star ratios B/A, and the
// pixel difference (max, RMS). For changes that alter the stack's values (e.g. a different warp)
// where compare-runs.js can only say "different".
// Usage: node dist/bench/stack-science.js RUN_A RUN_B

import { join } from 'node:path';
import { detectStars } from '../src/algorithms/stars.js';
import { readFitsImage } from '../src/fits/read.js';

const [a, b] = process.argv.slice(2);
if (!a || !b) throw new Error('usage: stack-science.js RUN_A RUN_B');
const A = await readFitsImage(join(a, 'outputs/stacked_linear.fits'));
const B = await readFitsImage(join(b, 'outputs/stacked_linear.fits'));
const n = A.width * A.height;
const pa = A.data.subarray(0, n);
const pb = B.data.subarray(0, n);
let max = 0;
let ss = 0;
let cnt = 0;
for (let i = 0; i < n; i++) {
  const d = pa[i]! - pb[i]!;
  if (Number.isFinite(d)) (max = Math.max(max, Math.abs(d))), (ss += d * d), cnt++;
}
const sa = detectStars(pa, A.width, A.height);
const sb = detectStars(pb, B.width, B.height);
if (!sa.ok || !sb.ok) throw new Error('star detection failed');
const med = (v: number[]) => {
  const s = [...v].sort((x, y) => x - y);
  return s[s.length >> 1]!;
};
const fw: number[] = [];
const sn: number[] = [];
let matched = 0;
for (const s of sa.stars) {
  let best = null;
  let bd = 1;
  for (const t of sb.stars) {
    const d = Math.hypot(s.x - t.x, s.y - t.y);
    if (d < bd) (bd = d), (best = t);
  }
  if (!best) continue;
  matched++;
  if (Number.isFinite(s.fwhm) && Number.isFinite(best.fwhm)) fw.push(best.fwhm / s.fwhm);
  sn.push(best.snr / s.snr);
}
console.log(JSON.stringify({
  stars: [sa.stars.length, sb.stars.length, matched],
  fwhm_median: [med(sa.stars.map((s) => s.fwhm).filter(Number.isFinite)), med(sb.stars.map((s) => s.fwhm).filter(Number.isFinite))],
  snr_median: [med(sa.stars.map((s) => s.snr)), med(sb.stars.map((s) => s.snr))],
  per_star_ratio_median: { fwhm: med(fw), snr: med(sn) },
  background_rms: [sa.backgroundRms, sb.backgroundRms],
  pixel_diff: { max, rms: Math.sqrt(ss / cnt) },
}));
