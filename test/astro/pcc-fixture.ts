// PCC test fixture: a linear RGB image with a known TAN WCS, stars at catalogue positions whose
// channel fluxes are the blackbody colour of their B−V (star-color.ts) times known channel gains,
// plus sky and Gaussian noise; the catalogue as CSV text. The truth the bars compare against:
// k_R/k_G = (g_G·W_G)/(g_R·W_R) and k_B/k_G likewise, W the white reference's colour.
import { FitsHeader } from '../../src/fits/index.js';
import { blackbodyRgb, bvToTeff } from '../../src/astro/star-color.js';
import { TanWcs } from '../../src/astro/wcs.js';
import { channelRatios } from '../../fixtures/generator/colour.js';
import { seededRandom } from '../helpers/tmp.js';

export interface FixtureStar {
  ra: number;
  dec: number;
  mag: number;
  bv: number;
  x: number;
  y: number;
}

export interface PccFixture {
  width: number;
  height: number;
  data: Float32Array;
  wcs: TanWcs;
  header: FitsHeader;
  stars: FixtureStar[];
  gains: [number, number, number];
  sky: [number, number, number];
  noise: number;
}

export interface FixtureOptions {
  width?: number;
  height?: number;
  seed?: number;
  stars?: number;
  gains?: [number, number, number];
  sky?: [number, number, number];
  noise?: number;
  fwhm?: number;
  /** Stars sit this far (px) from where the WCS puts them (a slightly wrong solve). */
  wcsOffsetPx?: [number, number];
  /** Total flux of a mag 13 star in G (before the gain). */
  flux13?: number;
  /**
   * Star colours on the image: `blackbody` = the PCC colour model itself (linear sRGB);
   * `osc_sensor` = the fixture generator's IMX571-like Bayer dye responses (fixtures/generator/
   * colour.ts), i.e. camera bands that differ from sRGB as real ones do.
   */
  camera?: 'blackbody' | 'osc_sensor';
  /** Every sample clipped at this level (a saturating sensor). */
  clip?: number;
}

const TELESCOPE = { aperture_mm: 80, throughput: 0.8 };

/** Channel fluxes relative to G of a star of colour `bv` in the fixture's camera (before gains). */
export function cameraRatios(bv: number, camera: 'blackbody' | 'osc_sensor'): [number, number, number] {
  if (camera === 'osc_sensor') {
    const c = channelRatios(bv, 'osc', TELESCOPE);
    return [c.r! / c.g!, 1, c.b! / c.g!];
  }
  const e = blackbodyRgb(bvToTeff(bv));
  return [e[0] / e[1], 1, e[2] / e[1]];
}

function gaussian(rand: () => number): number {
  const u = Math.max(rand(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * rand());
}

export function pccFixture(o: FixtureOptions = {}): PccFixture {
  const width = o.width ?? 800;
  const height = o.height ?? 600;
  const rand = seededRandom(o.seed ?? 11);
  const gains = o.gains ?? [0.72, 1.0, 1.38];
  const sky = o.sky ?? [900, 1000, 1150];
  const noise = o.noise ?? 8;
  const fwhm = o.fwhm ?? 3;
  const off = o.wcsOffsetPx ?? [0, 0];
  const flux13 = o.flux13 ?? 8000;
  const wcs = TanWcs.fromCentre({ ra: 83.82, dec: -5.39, width, height, scaleArcsec: 2.1, rotationDeg: 12 });
  const n = width * height;
  const data = new Float32Array(3 * n);
  for (let c = 0; c < 3; c++) for (let i = 0; i < n; i++) data[c * n + i] = sky[c]! + noise * gaussian(rand);
  const stars: FixtureStar[] = [];
  const count = o.stars ?? 120;
  const sigma = fwhm / 2.3548;
  const r = Math.ceil(5 * sigma);
  for (let k = 0; k < count; k++) {
    const x = 30 + rand() * (width - 60);
    const y = 30 + rand() * (height - 60);
    const mag = 7.5 + rand() * 5.5;
    const bv = -0.2 + rand() * 1.9;
    const [ra, dec] = wcs.pixelToSky(x - off[0], y - off[1]);
    stars.push({ ra, dec, mag, bv, x, y });
    const e = cameraRatios(bv, o.camera ?? 'blackbody');
    const total = flux13 * 10 ** (-0.4 * (mag - 13));
    for (let c = 0; c < 3; c++) {
      const f = total * gains[c]! * e[c]!;
      const amp = f / (2 * Math.PI * sigma * sigma);
      for (let yy = Math.max(0, Math.floor(y) - r); yy <= Math.min(height - 1, Math.floor(y) + r + 1); yy++) {
        for (let xx = Math.max(0, Math.floor(x) - r); xx <= Math.min(width - 1, Math.floor(x) + r + 1); xx++) {
          const d2 = (xx - x) ** 2 + (yy - y) ** 2;
          data[c * n + yy * width + xx]! += amp * Math.exp(-d2 / (2 * sigma * sigma));
        }
      }
    }
  }
  if (o.clip !== undefined) for (let i = 0; i < data.length; i++) if (data[i]! > o.clip) data[i] = o.clip;
  const header = new FitsHeader();
  wcs.writeTo(header);
  header.set('PLTSOLVD', true);
  return { width, height, data, wcs, header, stars, gains, sky, noise };
}

export function catalogCsv(stars: { ra: number; dec: number; mag: number; bv: number }[]): string {
  return 'ra,dec,mag,bv\n' + stars.map((s) => `${s.ra.toFixed(7)},${s.dec.toFixed(7)},${s.mag.toFixed(3)},${s.bv.toFixed(3)}`).join('\n') + '\n';
}

/** Truth factor ratios k_R/k_G, k_B/k_G: those that make a white-reference star (B−V `whiteBv`) neutral. */
export function truthRatios(gains: [number, number, number], whiteBv: number, camera: 'blackbody' | 'osc_sensor' = 'blackbody'): [number, number] {
  const w = cameraRatios(whiteBv, camera);
  return [gains[1] / (gains[0] * w[0]), gains[1] / (gains[2] * w[2])];
}

export const magError = (fit: number, truth: number) => Math.abs(2.5 * Math.log10(fit / truth));

/** Brightest pixel per channel of a fixture star without noise and clipping, sky included (the profile is sampled at pixel centres). */
export function truePeak(f: Pick<PccFixture, 'gains' | 'sky'>, s: FixtureStar, o: { fwhm?: number; flux13?: number; camera?: 'blackbody' | 'osc_sensor' } = {}): [number, number, number] {
  const sigma = (o.fwhm ?? 3) / 2.3548;
  const e = cameraRatios(s.bv, o.camera ?? 'blackbody');
  const total = (o.flux13 ?? 8000) * 10 ** (-0.4 * (s.mag - 13));
  const d2 = (s.x - Math.round(s.x)) ** 2 + (s.y - Math.round(s.y)) ** 2;
  const at = Math.exp(-d2 / (2 * sigma * sigma));
  return [0, 1, 2].map((c) => f.sky[c]! + (at * total * f.gains[c]! * e[c]!) / (2 * Math.PI * sigma * sigma)) as [number, number, number];
}
