// A wide-field session under a bright sky, as a short astrograph or camera lens records it: the
// real Tycho-2 stars of the Orion field (so a stack can be plate-solved against Debian's
// tycho2 index), most of them saturated, plus a seeded sprinkle of fainter field stars
// (V 11–15) that carry the unsaturated shapes; 24″/px, a sky of ~7000 e⁻ per pixel, the
// generator's vignetting, dust shadow and bad frames (clouds, trailed, satellite, bad seeing),
// and 4× its default share of hot pixels, up to 300 e⁻/s. Uncorrected, the vignetting of such a sky leaves residues of several σ and the few
// real faint stars are outnumbered by hot pixels and halo bumps: the case of issue 15.

import { generateDataset, type SkyStarSpec, type Truth } from '../../fixtures/generator/index.js';
import { TYCHO2_FIELDS, tycho2Field } from '../../fixtures/astrometry/tycho2.js';
import { seededRandom } from './tmp.js';

export interface BrightSkyOptions {
  kind: 'mono' | 'osc';
  frames?: number;
  width?: number;
  height?: number;
  seed?: number;
  /** Extra field stars (V 11–15). Default 150. */
  faintStars?: number;
  /** Write bias, darks and flats. Default true. */
  calibration?: boolean;
}

/** The session's star list: the Orion Tycho-2 stars and the seeded faint ones around the centre. */
export function brightSkyStars(count: number, seed: number): SkyStarSpec[] {
  const { ra, dec } = TYCHO2_FIELDS.orion;
  const random = seededRandom(seed);
  const cosDec = Math.cos((dec * Math.PI) / 180);
  const faint = Array.from({ length: count }, () => ({
    ra: ra + ((random() - 0.5) * 4.4) / cosDec,
    dec: dec + (random() - 0.5) * 3.4,
    // More faint than bright ones, as on the sky.
    mag: 11 + 4 * Math.sqrt(random()),
    bv: 0.2 + random(),
  }));
  return [...tycho2Field('orion'), ...faint];
}

/** Generates the session into `out` (lights, bias, darks, flats, truth.json). */
export async function brightSkySession(out: string, o: BrightSkyOptions): Promise<Truth> {
  const { ra, dec } = TYCHO2_FIELDS.orion;
  return generateDataset({
    out,
    kind: o.kind,
    frames: o.frames ?? 12,
    width: o.width ?? 512,
    height: o.height ?? 384,
    seed: o.seed ?? 3,
    calibration: o.calibration ?? true,
    skyStars: brightSkyStars(o.faintStars ?? 150, 1000 + (o.seed ?? 3)),
    ra,
    dec,
    focalLengthMm: 32,
    // Mono (L) collects ~2.4× the sky of one colour site: a shorter exposure keeps both near 7000 e⁻.
    exptime: o.kind === 'mono' ? 10 : 30,
    // An uncooled-camera's share of hot pixels, strong enough to stand out of this sky in 10 s.
    sensor: { hot_pixel_fraction: 4e-4, hot_rate_min_e_per_s: 1, hot_rate_max_e_per_s: 300 },
  });
}
