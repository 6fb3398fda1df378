// Downsampled copies of image planes for fits of smooth surfaces (local normalization): block
// means of factor × factor pixels, accumulated row band by row band so a frame never has to be
// whole in memory, and a bilinear warp of a binned plane into another geometry.
//
// Invariants:
// - Binned pixel (I, J) covers full-resolution pixels [I·D, I·D + D) × [J·D, J·D + D); its
//   centre is full-resolution ((I + 0.5)·D − 0.5, (J + 0.5)·D − 0.5). Edge blocks that stick
//   out of the image hold only the pixels inside it.
// - NaN is no data: a block's value is the mean of its valid samples, NaN when fewer than
//   `minValid` (default half of the samples the block can hold) are valid, so warped borders do
//   not leak half-empty blocks into a fit.
// - CFA mosaics bin one channel: only the listed sites ((y & 1)·2 + (x & 1), 0..3) of each
//   block are averaged; D must then be even so every block holds whole 2×2 cells.
// - addRows may be called with any row bands, in any order, each row at most once; the result
//   depends only on the pixel values.

import { applyAffine, type Affine } from './affine.js';

export interface BinnedPlane {
  /** Binned size: ceil(full / factor). */
  width: number;
  height: number;
  factor: number;
  /** Full-resolution size the plane was binned from. */
  fullWidth: number;
  fullHeight: number;
  /** Mean of the valid samples per block, NaN where too few were valid. */
  data: Float32Array;
}

export interface BinnerOptions {
  /** CFA sites to average (mosaic channel), e.g. [0] for R of RGGB; absent: every pixel. */
  sites?: readonly number[];
  /** Fewest valid samples for a block value (default: half of the samples a block can hold). */
  minValid?: number;
}

export class PlaneBinner {
  readonly binnedWidth: number;
  readonly binnedHeight: number;
  private readonly sum: Float64Array;
  private readonly count: Uint32Array;
  private readonly siteMask: number;
  private readonly minValid: number;

  constructor(
    readonly width: number,
    readonly height: number,
    readonly factor: number,
    options: BinnerOptions = {},
  ) {
    if (!Number.isInteger(factor) || factor < 1) throw new RangeError(`binning factor ${factor} must be a positive integer`);
    if (!Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) throw new RangeError(`plane size ${width}×${height} invalid`);
    const sites = options.sites ?? null;
    if (sites && factor % 2 !== 0) throw new RangeError('CFA binning needs an even factor');
    this.siteMask = sites ? sites.reduce((m, s) => m | (1 << s), 0) : 0xf;
    this.binnedWidth = Math.ceil(width / factor);
    this.binnedHeight = Math.ceil(height / factor);
    this.sum = new Float64Array(this.binnedWidth * this.binnedHeight);
    this.count = new Uint32Array(this.binnedWidth * this.binnedHeight);
    const perBlock = sites ? (factor * factor * sites.length) / 4 : factor * factor;
    this.minValid = options.minValid ?? Math.max(1, Math.ceil(perBlock / 2));
  }

  /** Adds full-resolution rows [y0, y0 + rows) held row-major in `data` (width per row). */
  addRows(data: Float32Array, y0: number, rows: number): void {
    const { width: W, factor: D, binnedWidth: BW, sum, count, siteMask } = this;
    if (y0 < 0 || y0 + rows > this.height || data.length < rows * W) throw new RangeError(`rows ${y0}..${y0 + rows} outside the plane or data too short`);
    const all = siteMask === 0xf;
    for (let r = 0; r < rows; r++) {
      const y = y0 + r;
      const base = Math.floor(y / D) * BW;
      const row = r * W;
      const rowSites = (y & 1) * 2;
      // Whole blocks of D pixels at a time (one accumulator per block, no division per pixel);
      // a CFA channel takes every other pixel from its first site in the row.
      let step = 1;
      let first = 0;
      if (!all) {
        const s0 = (siteMask >> rowSites) & 1;
        const s1 = (siteMask >> (rowSites + 1)) & 1;
        if (!s0 && !s1) continue;
        if (!(s0 && s1)) {
          step = 2;
          first = s0 ? 0 : 1;
        }
      }
      for (let bx = 0, x0 = 0; x0 < W; bx++, x0 += D) {
        const x1 = Math.min(W, x0 + D);
        let acc = 0;
        let n = 0;
        for (let x = x0 + first; x < x1; x += step) {
          const v = data[row + x]!;
          if (v === v) {
            acc += v;
            n++;
          }
        }
        if (n > 0) {
          sum[base + bx] = sum[base + bx]! + acc;
          count[base + bx] = count[base + bx]! + n;
        }
      }
    }
  }

  result(): BinnedPlane {
    const data = new Float32Array(this.sum.length);
    for (let i = 0; i < data.length; i++) data[i] = this.count[i]! >= this.minValid ? this.sum[i]! / this.count[i]! : NaN;
    return { width: this.binnedWidth, height: this.binnedHeight, factor: this.factor, fullWidth: this.width, fullHeight: this.height, data };
  }
}

/** Bins a whole plane (see PlaneBinner). */
export function binPlane(plane: Float32Array, width: number, height: number, factor: number, options: BinnerOptions = {}): BinnedPlane {
  const b = new PlaneBinner(width, height, factor, options);
  b.addRows(plane, 0, height);
  return b.result();
}

/**
 * The binned plane `src` (in frame geometry) seen in the reference geometry: binned pixel (I, J)
 * of the result takes `src` bilinearly at toFrame(centre of (I, J)), where `toFrame` maps
 * full-resolution reference pixels to frame pixels; NaN outside `src` or next to a NaN. The
 * result has the binning and size of a reference of `width` × `height` full-resolution pixels.
 * For smooth surfaces (backgrounds) only: stars are blurred by the bilinear step. `nearest`:
 * the nearest block instead (displaced by up to half a block, noise left uncorrelated).
 */
export function warpBinned(src: BinnedPlane, toFrame: Readonly<Affine>, width: number, height: number, options: { nearest?: boolean } = {}): BinnedPlane {
  const D = src.factor;
  const BW = Math.ceil(width / D);
  const BH = Math.ceil(height / D);
  const out = new Float32Array(BW * BH);
  for (let J = 0; J < BH; J++) {
    for (let I = 0; I < BW; I++) {
      const [fx, fy] = applyAffine(toFrame, (I + 0.5) * D - 0.5, (J + 0.5) * D - 0.5);
      const bx = (fx + 0.5) / D - 0.5;
      const by = (fy + 0.5) / D - 0.5;
      const i0 = Math.floor(bx);
      const j0 = Math.floor(by);
      const tx = bx - i0;
      const ty = by - j0;
      let v = NaN;
      if (options.nearest) {
        // Nearest block: no interpolation, so the noise stays uncorrelated between binned pixels
        // (a bilinear step correlates neighbours, and a noise estimate from neighbour
        // differences then reads ~2× low).
        const i = Math.round(bx);
        const j = Math.round(by);
        if (i >= 0 && j >= 0 && i < src.width && j < src.height) v = src.data[j * src.width + i]!;
      } else if (bx >= -0.5 && by >= -0.5 && bx <= src.width - 0.5 && by <= src.height - 0.5) {
        // Clamp at the outer half block so the plane's own border blocks are used up to its edge.
        const ia = Math.max(0, i0);
        const ib = Math.min(src.width - 1, i0 + 1);
        const ja = Math.max(0, j0);
        const jb = Math.min(src.height - 1, j0 + 1);
        const d = src.data;
        const v00 = d[ja * src.width + ia]!;
        const v10 = d[ja * src.width + ib]!;
        const v01 = d[jb * src.width + ia]!;
        const v11 = d[jb * src.width + ib]!;
        v = (1 - ty) * ((1 - tx) * v00 + tx * v10) + ty * ((1 - tx) * v01 + tx * v11);
      }
      out[J * BW + I] = v;
    }
  }
  return { width: BW, height: BH, factor: D, fullWidth: width, fullHeight: height, data: out };
}
