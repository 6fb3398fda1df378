// The registration of a frame as the report plots it, from its registration.json matrix (frame
// pixel → reference pixel, src/algorithms/affine.ts): the shift of the frame's centre and the
// rotation.
// - dx_px, dy_px: where the frame's centre pixel ((w−1)/2, (h−1)/2) lands on the reference,
//   minus that centre (x = column, y = row, px). The centre rather than the matrix translation
//   (c, f), which is the image of pixel (0, 0): with field rotation the corner moves by
//   rotation × distance even when the pointing did not drift, the centre does not.
// - rotation_deg: decomposeAffine's rotation of the frame's x axis in the reference, degrees in
//   (−180, 180], positive from +x towards +y (clockwise on a screen, rows going down).
// Values are rounded (3 decimals px, 4 decimals degrees): the report plots them.

import { applyAffine, decomposeAffine, type Affine } from '../algorithms/affine.js';

export interface RegistrationShift {
  dx_px: number;
  dy_px: number;
  rotation_deg: number;
}

const round = (v: number, d: number) => Number(v.toFixed(d));

export function registrationShift(matrix: Readonly<Affine>, width: number, height: number): RegistrationShift {
  const cx = (width - 1) / 2;
  const cy = (height - 1) / 2;
  const [x, y] = applyAffine(matrix, cx, cy);
  return { dx_px: round(x - cx, 3), dy_px: round(y - cy, 3), rotation_deg: round(decomposeAffine(matrix).rotation_deg, 4) };
}
