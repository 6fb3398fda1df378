// The registered frames of a captured session as per-channel cubes (frames × height × width,
// raw calibrated values, NaN outside each frame's footprint), made as STACKING makes its slots:
// calibrated frame → (OSC: bilinear debayer) → Lanczos-3 warp with the inverse of the
// registration matrix (src/cpu/warp.ts). Per frame and channel also: the global normalisation
// (scale, offset from CFA_CHANNEL_PREP), the weight, the pixel noise measured on the calibrated
// frame (same-site neighbour differences, the pre-mask's σ_f before normalisation), the FWHM
// from QUALITY_ANALYSIS, and the binned plane for the local-normalization fit.

import { binPlane, type BinnedPlane } from '../../src/algorithms/binned-plane.js';
import { invertAffine } from '../../src/algorithms/affine.js';
import { lnBinFactor } from '../../src/algorithms/local-normalization.js';
import { MAD_TO_SIGMA, medianInPlace } from '../../src/algorithms/robust-stats.js';
import { debayerBilinear, redSite, type CfaPattern } from '../../src/cpu/debayer.js';
import { warpLanczos3 } from '../../src/cpu/warp.js';
import { readFitsImage } from '../../src/fits/index.js';
import type { Captured } from './session.js';
import type { FrameRecord } from '../../src/pipeline/rawstack/state.js';

export interface FrameInfo {
  record: FrameRecord;
  truthIndex: number;
  isReference: boolean;
  /** Per channel. */
  scale: number[];
  offset: number[];
  location: number[];
  /** Pixel noise of the calibrated frame per channel (raw units). */
  noise: number[];
  weight: number;
  fwhm: number;
}

export interface Cubes {
  width: number;
  height: number;
  channels: number;
  frames: FrameInfo[];
  /** Per channel kept (one): frames × height × width. */
  data: Float32Array[];
  /** Per channel, per frame: the warped plane binned for LN, globally normalised. */
  binned: BinnedPlane[][];
  binFactor: number;
  /** Wall ms of reading + debayer + warp, and of binning. */
  ms: { read_warp: number; bin: number };
}

/** Robust noise of one CFA site (or every pixel, step 1) from differences of same-site neighbours. */
function siteNoise(data: Float32Array, W: number, H: number, step: number, sx: number, sy: number): number {
  const d: number[] = [];
  for (let y = sy; y < H; y += step * 3) {
    for (let x = sx; x + step < W; x += step) {
      const a = data[y * W + x]!;
      const b = data[y * W + x + step]!;
      if (a === a && b === b) d.push(Math.abs(a - b));
    }
  }
  return (medianInPlace(Float64Array.from(d)) * MAD_TO_SIGMA) / Math.SQRT2;
}

/**
 * `keep`: the channel (0 R, 1 G, 2 B for OSC; 0 for mono) whose cube is built, to keep memory
 * at one frames × height × width cube (the bench measures one channel).
 */
export async function buildCubes(state: Captured, frames: { record: FrameRecord; truthIndex: number }[], keep: number, log: (s: string) => void): Promise<Cubes> {
  const W = state.width!;
  const H = state.height!;
  const osc = state.colorMode === 'OSC';
  const C = 1;
  const N = frames.length;
  const plane = W * H;
  const data = Array.from({ length: C }, () => new Float32Array(N * plane));
  const D = lnBinFactor(W, H);
  const binned: BinnedPlane[][] = Array.from({ length: C }, () => []);
  const infos: FrameInfo[] = [];
  let tRead = 0;
  let tBin = 0;
  const pattern = (state.bayer ?? 'RGGB') as CfaPattern;
  for (let k = 0; k < N; k++) {
    const { record, truthIndex } = frames[k]!;
    const t0 = performance.now();
    const img = await readFitsImage(record.calibratedFile ?? record.file);
    if (img.width !== W || img.height !== H) throw new Error(`${record.name}: ${img.width}×${img.height}, expected ${W}×${H}`);
    const raw = img.data.subarray(0, plane);
    let noise: number[];
    let planes: Float32Array[];
    if (osc) {
      const { rx, ry } = redSite(pattern);
      noise = [siteNoise(raw, W, H, 2, rx, ry), 0.5 * (siteNoise(raw, W, H, 2, 1 - rx, ry) + siteNoise(raw, W, H, 2, rx, 1 - ry)), siteNoise(raw, W, H, 2, 1 - rx, 1 - ry)];
      const p = debayerBilinear(raw, { width: W, height: H, pattern });
      planes = [[p.r, p.g, p.b][keep]!];
      noise = [noise[keep]!];
    } else {
      noise = [siteNoise(raw, W, H, 1, 0, 0)];
      planes = [raw];
    }
    const m = record.registration?.matrix;
    const isReference = record.index === state.referenceIndex;
    const toFrame = isReference || !m ? [1, 0, 0, 0, 1, 0] : invertAffine(m)!.flat();
    for (let c = 0; c < C; c++) {
      const warped = warpLanczos3(planes[c]!, { affine: toFrame, width: W, y0: 0, rows: H, srcWidth: W, srcHeight: H, srcY0: 0, srcRows: H });
      data[c]!.set(warped, k * plane);
    }
    tRead += performance.now() - t0;
    const t1 = performance.now();
    const norm = (record.normalization ?? []).slice(osc ? keep : 0, (osc ? keep : 0) + 1);
    // Binned raw; normalised below once every frame's scale and offset are known.
    for (let c = 0; c < C; c++) binned[c]!.push(binPlane(data[c]!.subarray(k * plane, (k + 1) * plane), W, H, D));
    tBin += performance.now() - t1;
    infos.push({
      record,
      truthIndex,
      isReference,
      scale: [1],
      offset: [0],
      location: Array.from({ length: C }, (_, c) => norm[c]?.location ?? NaN),
      noise,
      weight: record.weight ?? 1,
      fwhm: record.metrics?.fwhm ?? NaN,
    });
    if ((k + 1) % 20 === 0 || k + 1 === N) log(`[quality] warped ${k + 1}/${N} frames`);
  }
  const ref = infos.find((f) => f.isReference);
  if (!ref) throw new Error('the reference frame is not among the included frames');
  // STACKING's default normalisation (stacking.normalization addscale, stacking-normalization.ts):
  // scale = ref spread / spread, offset = ref location − location·scale, from CFA_CHANNEL_PREP's
  // statistics (FrameRecord.normalization); the reference keeps 1 and 0.
  for (const f of infos) {
    const st = (f.record.normalization ?? []).slice(osc ? keep : 0, (osc ? keep : 0) + 1)[0];
    const rs = (ref.record.normalization ?? []).slice(osc ? keep : 0, (osc ? keep : 0) + 1)[0];
    if (f.isReference || !st || !rs) continue;
    const sc = rs.spread / st.spread;
    if (!(sc > 0 && Number.isFinite(sc))) continue;
    f.scale = [sc];
    f.offset = [rs.location - st.location * sc];
  }
  infos.forEach((f, k) => {
    const b = binned[0]![k]!;
    for (let i = 0; i < b.data.length; i++) b.data[i] = b.data[i]! * f.scale[0]! + f.offset[0]!;
  });
  return { width: W, height: H, channels: C, frames: infos, data, binned, binFactor: D, ms: { read_warp: tRead, bin: tBin } };
}
