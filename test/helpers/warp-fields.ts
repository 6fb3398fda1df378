// Seeded images and transforms shared by the warp tests (test/gpu/warp.test.ts,
// warp-separable.test.ts): a star field with a gradient, noise and hot pixels, a similarity
// about the image centre, whole-image warp parameters.

import type { Affine, WarpParams } from '../../src/cpu/warp.js';
import { seededRandom } from './tmp.js';

/** Sky 1000 ADU with a gradient and ±10 noise, Gaussian stars up to ~4000 ADU, two hot pixels. */
export function starField(W: number, H: number, seed: number): Float32Array {
  const rnd = seededRandom(seed);
  const img = new Float32Array(W * H);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) img[y * W + x] = 1000 + (0.2 * x) / W + (30 * y) / H + 20 * (rnd() - 0.5);
  const stars = Math.max(3, Math.floor((W * H) / 400));
  for (let s = 0; s < stars; s++) {
    const cx = rnd() * W;
    const cy = rnd() * H;
    const sigma = 1.1 + 1.4 * rnd();
    const amp = 200 + 3800 * rnd() ** 2;
    const r = Math.ceil(4 * sigma);
    for (let y = Math.max(0, Math.floor(cy - r)); y <= Math.min(H - 1, Math.ceil(cy + r)); y++) {
      for (let x = Math.max(0, Math.floor(cx - r)); x <= Math.min(W - 1, Math.ceil(cx + r)); x++) {
        img[y * W + x] = img[y * W + x]! + amp * Math.exp(-((x - cx) ** 2 + (y - cy) ** 2) / (2 * sigma * sigma));
      }
    }
  }
  img[Math.floor(H / 3) * W + Math.floor(W / 3)] = 12000;
  img[Math.floor((2 * H) / 3) * W + Math.floor((2 * W) / 3)] = 12000;
  return img;
}

/** Output → source map: rotation `deg` and scale `s` about the image centre, then a shift. */
export function similarity(W: number, H: number, deg: number, s: number, shiftX: number, shiftY: number): Affine {
  const a = (deg * Math.PI) / 180;
  const c = s * Math.cos(a);
  const n = s * Math.sin(a);
  const cx = (W - 1) / 2;
  const cy = (H - 1) / 2;
  return [c, -n, cx - c * cx + n * cy + shiftX, n, c, cy - n * cx - c * cy + shiftY];
}

export const shift = (sx: number, sy: number): Affine => [1, 0, sx, 0, 1, sy];

/** Whole-image parameters: output = source size, the source band is the whole image. */
export function full(W: number, H: number, affine: Affine, extra: Partial<WarpParams> = {}): WarpParams {
  return { affine, width: W, y0: 0, rows: H, srcWidth: W, srcHeight: H, srcY0: 0, srcRows: H, ...extra };
}
