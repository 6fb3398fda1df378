// One frame's local-normalization fit as the stacking setup pass makes it (local-norm.ts), in a
// form both the main thread and the fit worker (ln-fit-worker.ts) run: the frame's raw binned
// planes (frame geometry, per channel) are cropped (superpixel), moved into the reference's
// geometry (warpBinned, nearest block) and normalised globally, then fitted against the
// reference's with its prepared star mask; the model, folded with the global normalization, is
// packed into the frame's coefficient rows. Pure: same inputs, same bits on any thread.

import type { Affine } from '../../../algorithms/affine.js';
import { warpBinned, type BinnedPlane } from '../../../algorithms/binned-plane.js';
import { compactModel, composeGlobal, fitLocalNormalization, type GridGeometry, type LnFitOptions, type LnModel, type PreparedReference } from '../../../algorithms/local-normalization.js';
import { packLnCoefficients } from '../../../cpu/ln-apply.js';

/** Output geometry of the stack and the setup pass's binning factor. */
export interface FitGeometry {
  width: number;
  height: number;
  binning: 1 | 2;
  factor: number;
}

/** What toReference and fitFrame need of a frame. */
export interface FitFrame {
  /** Output pixel → frame pixel (affine, row-major 2×3). */
  toFrame: number[];
  /** Global normalization per channel: v·scale + offset. */
  scale: number[];
  offset: number[];
}

/** A fitted frame: per channel its compact model, its coefficient rows (nodes × (a, b)) and their grid. */
export interface FrameFit {
  models: LnModel[];
  coefficients: Float32Array[];
  grids: GridGeometry[];
}

const asAffine = (m: number[]): Affine => [
  [m[0]!, m[1]!, m[2]!],
  [m[3]!, m[4]!, m[5]!],
];

const isIdentity = (m: number[]) => m[0] === 1 && m[1] === 0 && m[2] === 0 && m[3] === 0 && m[4] === 1 && m[5] === 0;

/** A binned plane's data cut to `w` × `h` blocks (a superpixel relabel may need fewer). */
function cropBinned(p: BinnedPlane, w: number, h: number): Float32Array {
  if (w === p.width && h === p.height) return p.data;
  const out = new Float32Array(w * h).fill(NaN);
  for (let y = 0; y < Math.min(h, p.height); y++) out.set(p.data.subarray(y * p.width, y * p.width + Math.min(w, p.width)), y * w);
  return out;
}

/** A frame's raw binned planes cropped (superpixel), warped into the reference geometry and globally normalised. */
export function toReference(g: FitGeometry, f: FitFrame, raw: BinnedPlane[]): BinnedPlane[] {
  const D = g.factor;
  return raw.map((p0, c) => {
    // Premeasured planes are the caller's: normalise a copy when no warp made one.
    let p = p0;
    if (g.binning === 2) p = { ...p, factor: D / 2, fullWidth: g.width, fullHeight: g.height, width: Math.ceil(g.width / (D / 2)), height: Math.ceil(g.height / (D / 2)), data: cropBinned(p, Math.ceil(g.width / (D / 2)), Math.ceil(g.height / (D / 2))) };
    const warped = isIdentity(f.toFrame) && p.fullWidth === g.width && p.fullHeight === g.height ? p : warpBinned(p, asAffine(f.toFrame), g.width, g.height, { nearest: true });
    const s = f.scale[c]!;
    const off = f.offset[c]!;
    const data = warped.data === p0.data ? Float32Array.from(warped.data) : warped.data;
    for (let i = 0; i < data.length; i++) data[i] = data[i]! * s + off;
    return { ...warped, data };
  });
}

/**
 * Fits one frame against the reference: `raw` its raw binned planes (null: the frame is the
 * reference, whose planes `ref` already are in reference geometry, normalised).
 */
export function fitFrame(g: FitGeometry, ref: BinnedPlane[], prepared: PreparedReference[], options: LnFitOptions, raw: BinnedPlane[] | null, f: FitFrame): FrameFit {
  return fitReferenced(ref, prepared, options, raw === null ? ref : toReference(g, f, raw), f);
}

/** fitFrame for planes already in the reference's geometry and normalised (toReference's output). */
export function fitReferenced(ref: BinnedPlane[], prepared: PreparedReference[], options: LnFitOptions, frame: BinnedPlane[], f: FitFrame): FrameFit {
  const out: FrameFit = { models: [], coefficients: [], grids: [] };
  frame.forEach((p, c) => {
    const m = fitLocalNormalization(ref[c]!, p, options, prepared[c]!);
    const one = packLnCoefficients([composeGlobal(m, f.scale[c]!, f.offset[c]!)]);
    out.models.push(compactModel(m));
    out.coefficients.push(one.coefficients);
    out.grids.push(one.grid);
  });
  return out;
}
