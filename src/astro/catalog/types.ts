// The one interface every photometric star catalogue of PCC implements (a CSV file, KStars'
// star lists, later others): describe() says what it is without reading it, query() returns the
// stars of a cone on the sky within a magnitude window, positions carried to the requested epoch
// when the catalogue has proper motions.
//
// Invariants: query() never returns a star outside the cone or the magnitude window; positions
// are degrees in ICRS/J2000 axes at `epoch` (proper motion applied from the catalogue's epoch);
// mag is Johnson V and bv Johnson B−V (a source in another system converts before returning);
// failures are PccError with a catalogue code (PCC_CATALOG_UNREADABLE / PCC_CATALOG_INVALID /
// PCC_CANCELLED).

export interface CatalogStar {
  /** Degrees, ICRS axes, at the query's epoch. */
  ra: number;
  dec: number;
  /** Johnson V. */
  mag: number;
  /** Johnson B−V, or null when only a temperature is known. */
  bv: number | null;
  /** Effective temperature (K), or null. */
  teff: number | null;
}

export interface Cone {
  /** Centre, degrees. */
  ra: number;
  dec: number;
  /** Radius, degrees (> 0, ≤ 180). */
  radius: number;
}

export interface CatalogQuery {
  cone: Cone;
  /** Brightest and faintest V kept (inclusive); default all. */
  magMin?: number;
  magMax?: number;
  /** Julian epoch (years, e.g. 2026.2) the positions are wanted at; default the catalogue's own. */
  epoch?: number;
  signal?: AbortSignal;
}

export interface CatalogQueryResult {
  stars: CatalogStar[];
  /** Records looked at (before the cone and magnitude filter). */
  rows_read: number;
  /** Records without a usable colour, skipped. */
  skipped_no_colour: number;
  /** What part of the catalogue was read, in words (e.g. "9 of 512 HTM trixels"). */
  read: string;
  /** Epoch of the returned positions (Julian years). */
  epoch: number;
  /** Stars whose position was moved by their proper motion. */
  proper_motion_applied: number;
}

export type CatalogKind = 'csv' | 'kstars_text' | 'kstars_binary';

export interface CatalogInfo {
  /** Stable name, e.g. `kstars:stars.dat` or `catalog_file:/data/cat.csv`. */
  id: string;
  kind: CatalogKind;
  /** Debian package that installs it, or null (a user's file). */
  package: string | null;
  description: string;
  files: string[];
  /** Faintest V in the catalogue when known (from its header or its last record). */
  mag_limit: number | null;
  /** Number of stars when known without reading the whole file. */
  stars: number | null;
  /** Photometric system of the file and what query() returns. */
  photometry: string;
  /** Epoch of the stored positions (Julian years), null when unknown. */
  epoch: number | null;
  /** Whether positions carry proper motions (null: depends on the file's columns). */
  proper_motion: boolean | null;
}

export interface StarCatalog {
  readonly id: string;
  describe(): CatalogInfo;
  query(q: CatalogQuery): Promise<CatalogQueryResult>;
}

const DEG = Math.PI / 180;

/** Unit vector of (ra, dec) in degrees. */
export function unitVector(ra: number, dec: number): [number, number, number] {
  const a = ra * DEG;
  const d = dec * DEG;
  const c = Math.cos(d);
  return [c * Math.cos(a), c * Math.sin(a), Math.sin(d)];
}

/** A cone as a unit vector and the cosine of its radius, for cheap membership tests. */
export function coneTest(cone: Cone): (ra: number, dec: number) => boolean {
  const [cx, cy, cz] = unitVector(cone.ra, cone.dec);
  const cosR = Math.cos(Math.min(180, cone.radius) * DEG);
  return (ra, dec) => {
    const [x, y, z] = unitVector(ra, dec);
    return x * cx + y * cy + z * cz >= cosR;
  };
}

/** Julian epoch (years) of an ISO date such as a FITS DATE-OBS; null when it does not parse. */
export function julianEpoch(iso: string): number | null {
  const t = Date.parse(/[zZ]|[+-]\d\d:?\d\d$/.test(iso) ? iso : `${iso}Z`);
  if (!Number.isFinite(t)) return null;
  // J2000.0 = 2000-01-01T12:00:00 TT ≈ UTC (the 64 s difference is irrelevant at catalogue precision).
  return 2000 + (t - Date.UTC(2000, 0, 1, 12)) / (365.25 * 86400e3);
}

/**
 * Position at `epoch` of a star at (ra, dec) at `from`, with proper motion pmRa = μα·cos δ and
 * pmDec in mas/yr: linear in the tangent plane, which is exact to far below a pixel for the few
 * decades between catalogue and observation (except within arcseconds of a pole).
 */
export function applyProperMotion(ra: number, dec: number, pmRa: number, pmDec: number, from: number, epoch: number): [number, number] {
  const dt = epoch - from;
  const dDec = (pmDec * dt) / 3.6e6;
  const c = Math.cos(dec * DEG);
  const dRa = c > 1e-9 ? (pmRa * dt) / 3.6e6 / c : 0;
  let r = (ra + dRa) % 360;
  if (r < 0) r += 360;
  return [r, Math.max(-90, Math.min(90, dec + dDec))];
}
