// TypeScript reference for shaders/debayer/ (bilinear.wgsl and bilinear_vec4.wgsl; mhc.wgsl at
// the end of this file): one CFA mosaic band to three planar f32 planes (R, G, B) for the
// band's owned rows, plus the CFA phase helper used by callers.
// Bilinear contract (the WGSL kernels follow it exactly):
// - The pattern is the *effective* one of stored pixel (0, 0) of the FULL image (see cfaPhase);
//   a pixel's colour follows from its full-image coordinates, so a band starting at an odd row
//   keeps the right phase.
// - Each site keeps its own colour as measured (NaN stays NaN). A missing colour is the mean of
//   the nearest same-colour neighbours: at R/B sites G from the 4 orthogonal and the other
//   chroma from the 4 diagonal ones; at G sites the chroma of the site's row from left/right and
//   the other from up/down.
// - Image borders reflect without repeating the edge (-1 -> 1, W -> W-2), which keeps CFA
//   parity. A dimension of 1 has no reflection: such neighbours are absent.
// - Non-finite neighbours (NaN, ±Inf) are skipped; the mean is over the finite ones, NaN if none.
// - The input holds rows readY0 .. readY0+readRows-1; it must include one halo row above and
//   below the owned rows wherever the image has them (two for MHC; the reflected rows at the
//   image's top and bottom edges are then inside the band too).
// Arithmetic: sums in f64, rounded once to f32 on store; the WGSL kernel sums in f32 (tests
// state the tolerance). debayerBilinear and debayerBilinearParallel run the same row function
// and are bit-identical.

import { sharedFloat32, sharedPool, toShared, type PoolKernel } from './worker-pool.js';

export type CfaPattern = 'RGGB' | 'GBRG' | 'GRBG' | 'BGGR';
export const CFA_PATTERNS: readonly CfaPattern[] = ['RGGB', 'GBRG', 'GRBG', 'BGGR'];
export type RowOrder = 'TOP-DOWN' | 'BOTTOM-UP';

/** Column and row parity of the red site in a pattern (blue is at the opposite parities). */
export function redSite(pattern: CfaPattern): { rx: number; ry: number } {
  switch (pattern) {
    case 'RGGB':
      return { rx: 0, ry: 0 };
    case 'GRBG':
      return { rx: 1, ry: 0 };
    case 'GBRG':
      return { rx: 0, ry: 1 };
    case 'BGGR':
      return { rx: 1, ry: 1 };
  }
}

function patternFromRed(rx: number, ry: number): CfaPattern {
  return rx === 0 ? (ry === 0 ? 'RGGB' : 'GBRG') : ry === 0 ? 'GRBG' : 'BGGR';
}

export function parseCfaPattern(text: string): CfaPattern {
  const p = text.trim().toUpperCase();
  if ((CFA_PATTERNS as readonly string[]).includes(p)) return p as CfaPattern;
  throw new Error(`unknown Bayer pattern "${text}" (expected one of ${CFA_PATTERNS.join(', ')})`);
}

/**
 * The effective pattern at stored pixel (0, 0) of the full image.
 * Convention: BAYERPAT names the 2x2 cell at the image's top-left corner in top-down order
 * (the order sensors read out and most capture programs write). XBAYROFF/YBAYROFF shift the
 * pattern's origin: top-down pixel (x, t) has the colour of pattern cell ((x + xOff) mod 2,
 * (t + yOff) mod 2). With ROWORDER = BOTTOM-UP, stored row s is top-down row height-1-s, so the
 * row parity changes by height-1. A missing ROWORDER means TOP-DOWN.
 */
export function cfaPhase(pattern: CfaPattern, xOff = 0, yOff = 0, rowOrder: RowOrder | undefined = 'TOP-DOWN', height = 0): CfaPattern {
  if (rowOrder === 'BOTTOM-UP' && !(Number.isInteger(height) && height > 0)) throw new Error('cfaPhase: BOTTOM-UP row order needs the image height');
  const { rx, ry } = redSite(pattern);
  const mod2 = (v: number) => ((Math.trunc(v) % 2) + 2) % 2;
  // Red sits where (x + xOff) mod 2 = rx, i.e. at x parity rx - xOff.
  let redY = mod2(ry - yOff);
  if (rowOrder === 'BOTTOM-UP') redY = mod2(height - 1 - redY);
  return patternFromRed(mod2(rx - xOff), redY);
}

/** Parameters shared by the CPU reference and the WGSL wrapper. */
export interface DebayerParams {
  /** Full-image width (every band row holds all columns). */
  width: number;
  /** Full-image height (bottom-edge reflection needs it). */
  height: number;
  /** Effective pattern of the full image's stored pixel (0, 0) (cfaPhase). */
  pattern: CfaPattern;
  /** First owned row (full-image index); default 0. */
  y0?: number;
  /** Owned rows; default height - y0. */
  rows?: number;
  /** Full-image index of the input's first row; default 0. The row count is input length / width. */
  readY0?: number;
}

export interface DebayerPlanes {
  r: Float32Array;
  g: Float32Array;
  b: Float32Array;
}

export interface ResolvedDebayer {
  width: number;
  height: number;
  rx: number;
  ry: number;
  y0: number;
  rows: number;
  readY0: number;
  readRows: number;
}

/**
 * Validates a band against the contract (halo present, sizes consistent) and fills defaults.
 * `halo` is the rows of context each side the method needs: 1 for bilinear, 2 for MHC.
 */
export function resolveDebayer(params: DebayerParams, inputLength: number, halo = 1): ResolvedDebayer {
  const { width, height } = params;
  const y0 = params.y0 ?? 0;
  const rows = params.rows ?? height - y0;
  const readY0 = params.readY0 ?? 0;
  const readRows = inputLength / width;
  const ints = { width, height, y0, rows, readY0 };
  for (const [k, v] of Object.entries(ints)) {
    if (!Number.isInteger(v) || v < 0) throw new Error(`debayer: ${k} = ${v} must be a non-negative integer`);
  }
  if (width < 1 || height < 1) throw new Error(`debayer: empty image ${width}x${height}`);
  if (!Number.isInteger(readRows)) throw new Error(`debayer: input length ${inputLength} is not a multiple of width ${width}`);
  if (y0 + rows > height) throw new Error(`debayer: owned rows ${y0}..${y0 + rows - 1} exceed height ${height}`);
  const needFrom = Math.max(0, y0 - halo);
  const needTo = Math.min(height, y0 + rows + halo);
  if (rows > 0 && (readY0 > needFrom || readY0 + readRows < needTo)) {
    throw new Error(`debayer: input rows ${readY0}..${readY0 + readRows - 1} must cover ${needFrom}..${needTo - 1} (owned rows plus ${halo} halo row(s) each side)`);
  }
  if (readY0 + readRows > height) throw new Error(`debayer: input rows end at ${readY0 + readRows}, past height ${height}`);
  const { rx, ry } = redSite(params.pattern);
  return { width, height, rx, ry, y0, rows, readY0, readRows };
}

/** Mean of the finite values among a, b (f64); NaN if neither is finite. */
function mean2(a: number, b: number): number {
  const s = a + b;
  if (s - s === 0) return s * 0.5;
  const fa = a - a === 0;
  const fb = b - b === 0;
  return fa ? (fb ? s * 0.5 : a) : fb ? b : NaN;
}

/** Mean of the finite values among a, b, c, d (f64); NaN if none is finite. */
function mean4(a: number, b: number, c: number, d: number): number {
  const s = a + b + c + d;
  if (s - s === 0) return s * 0.25;
  let sum = 0;
  let n = 0;
  if (a - a === 0) (sum += a), n++;
  if (b - b === 0) (sum += b), n++;
  if (c - c === 0) (sum += c), n++;
  if (d - d === 0) (sum += d), n++;
  return n === 0 ? NaN : sum / n;
}

/** Arguments of the row kernel (typed arrays may be shared; see worker-pool.ts). */
export interface DebayerRowArgs extends ResolvedDebayer {
  input: Float32Array;
  r: Float32Array;
  g: Float32Array;
  b: Float32Array;
}

/** Row offset value for "this neighbour row does not exist" (1-row images). */
const NONE = -1;

/** Value at column x of the row starting at `row`, reflected at the borders; NaN where absent. */
function reflected(input: Float32Array, W: number, row: number, x: number): number {
  if (row === NONE) return NaN;
  const m = x < 0 ? -x : x >= W ? 2 * W - 2 - x : x;
  return m < 0 || m >= W ? NaN : input[row + m]!;
}

/**
 * One pixel with full border handling (used for the first and last columns, and for images too
 * small for the fast loop). P is the plane of the row's own chroma, Q the other chroma; sites
 * with x parity `cp` carry the row's chroma, the others are green.
 */
function borderPixel(input: Float32Array, W: number, cur: number, up: number, dn: number, o: number, cp: number, x: number, P: Float32Array, G: Float32Array, Q: Float32Array): void {
  const l = reflected(input, W, cur, x - 1);
  const r = reflected(input, W, cur, x + 1);
  const u = reflected(input, W, up, x);
  const d = reflected(input, W, dn, x);
  if ((x & 1) === cp) {
    P[o + x] = input[cur + x]!;
    G[o + x] = mean4(l, r, u, d);
    Q[o + x] = mean4(reflected(input, W, up, x - 1), reflected(input, W, up, x + 1), reflected(input, W, dn, x - 1), reflected(input, W, dn, x + 1));
  } else {
    G[o + x] = input[cur + x]!;
    P[o + x] = mean2(l, r);
    Q[o + x] = mean2(u, d);
  }
}

/**
 * Interior fast path: pairs (chroma site x, green site x+1) for x = x0, x0+2, ... while x+1 < x1,
 * with every neighbour in range. The sum of finite values is finite, so `s - s === 0` selects
 * the plain mean and only pairs with a non-finite neighbour take mean2/mean4. Returns the first
 * column not done.
 */
function interiorPairs(input: Float32Array, cur: number, up: number, dn: number, o: number, x0: number, x1: number, P: Float32Array, G: Float32Array, Q: Float32Array): number {
  let left = input[cur + x0 - 1]!;
  let own = input[cur + x0]!;
  let x = x0;
  for (; x + 1 < x1; x += 2) {
    const right = input[cur + x + 1]!;
    const right2 = input[cur + x + 2]!;
    const u0 = input[up + x - 1]!;
    const u1 = input[up + x]!;
    const u2 = input[up + x + 1]!;
    const d0 = input[dn + x - 1]!;
    const d1 = input[dn + x]!;
    const d2 = input[dn + x + 1]!;
    // Chroma site x: green from the 4 orthogonal, the other chroma from the 4 diagonal neighbours.
    P[o + x] = own;
    const so = left + right + u1 + d1;
    G[o + x] = so - so === 0 ? so * 0.25 : mean4(left, right, u1, d1);
    const sd = u0 + u2 + d0 + d2;
    Q[o + x] = sd - sd === 0 ? sd * 0.25 : mean4(u0, u2, d0, d2);
    // Green site x+1: the row's chroma from left/right, the other from up/down.
    G[o + x + 1] = right;
    const sh = own + right2;
    P[o + x + 1] = sh - sh === 0 ? sh * 0.5 : mean2(own, right2);
    const sv = u2 + d2;
    Q[o + x + 1] = sv - sv === 0 ? sv * 0.5 : mean2(u2, d2);
    left = right;
    own = right2;
  }
  return x;
}

/**
 * Computes owned rows [y0 + start, y0 + end) of the band. Exported for the worker pool; the
 * same function serves the single-threaded path, which is what makes the two bit-identical.
 */
export function debayerBilinearRows(args: DebayerRowArgs, start: number, end: number): void {
  const { input, width: W, height: H, rx, ry, y0, readY0 } = args;
  // Start of a full-image row in `input`, after reflection; NONE when a 1-row image has no neighbour.
  const rowAt = (y: number): number => {
    const m = y < 0 ? -y : y >= H ? 2 * H - 2 - y : y;
    return m < 0 || m >= H ? NONE : (m - readY0) * W;
  };
  for (let k = start; k < end; k++) {
    const y = y0 + k;
    const cur = rowAt(y);
    const up = rowAt(y - 1);
    const dn = rowAt(y + 1);
    const o = k * W;
    // Red rows have parity ry; there red sites have x parity rx, in blue rows blue sites 1 - rx.
    const redRow = (y & 1) === ry;
    const P = redRow ? args.r : args.b;
    const Q = redRow ? args.b : args.r;
    const cp = redRow ? rx : 1 - rx;
    let x = 0;
    if (W >= 4 && up !== NONE) {
      // Columns before the first interior chroma site, then pairs, then the rest.
      const x0 = cp === 1 ? 1 : 2;
      for (; x < x0; x++) borderPixel(input, W, cur, up, dn, o, cp, x, P, args.g, Q);
      x = interiorPairs(input, cur, up, dn, o, x0, W - 1, P, args.g, Q);
    }
    for (; x < W; x++) borderPixel(input, W, cur, up, dn, o, cp, x, P, args.g, Q);
  }
}

function allocPlanes(n: number, shared: boolean): DebayerPlanes {
  const make = shared ? sharedFloat32 : (k: number) => new Float32Array(k);
  return { r: make(n), g: make(n), b: make(n) };
}

/** Single-threaded reference: the owned rows' R, G, B planes (rows x width each). */
export function debayerBilinear(input: Float32Array, params: DebayerParams, out?: DebayerPlanes): DebayerPlanes {
  const p = resolveDebayer(params, input.length);
  const planes = out ?? allocPlanes(p.rows * p.width, false);
  debayerBilinearRows({ ...p, input, ...planes }, 0, p.rows);
  return planes;
}

/** debayerBilinearRows as a worker-pool kernel (the stacking engine runs it on band rows). */
export const ROWS_KERNEL: PoolKernel = { module: import.meta.url, name: 'debayerBilinearRows' };

export interface ParallelOptions {
  /** Worker threads (the process-wide pool of this size is used). Default 2. */
  workers?: number;
}

/**
 * debayerBilinear on the worker pool. `input` should already be shared memory (else it is
 * copied once); the returned planes are SharedArrayBuffer-backed (`out`, if given, must be).
 * Output is bit-identical to debayerBilinear.
 */
export async function debayerBilinearParallel(input: Float32Array, params: DebayerParams, options: ParallelOptions = {}, out?: DebayerPlanes): Promise<DebayerPlanes> {
  const p = resolveDebayer(params, input.length);
  const planes = out ?? allocPlanes(p.rows * p.width, true);
  const pool = sharedPool(options.workers ?? 2);
  // Rows are independent; small chunks keep both cores busy when other processes compete.
  await pool.run(ROWS_KERNEL, { ...p, input: toShared(input), ...planes }, 0, p.rows, { minChunk: 16 });
  return planes;
}

// ---- Malvar-He-Cutler (debayer_mhc) ----------------------------------------------------------
// Gradient-corrected bilinear (Malvar, He, Cutler, ICASSP 2004): each missing colour is the
// bilinear estimate plus a scaled Laplacian of the site's own colour, as 5x5 filters / 8:
//   G at R/B:          4c + 2(l+r+u+d) - (l2+r2+u2+d2)
//   other chroma at R/B: 6c + 2(ul+ur+dl+dr) - 1.5(l2+r2+u2+d2)
//   row chroma at G:   5c + 4(l+r) - (ul+ur+dl+dr) - (l2+r2) + 0.5(u2+d2)
//   column chroma at G: 5c + 4(u+d) - (ul+ur+dl+dr) - (u2+d2) + 0.5(l2+r2)
// (l2 = two columns left, same colour as c). The weights sum to 8, so flat colours are exact
// and linear ramps are reproduced; near sharp edges values may overshoot (no clamping: data
// can be negative after calibration anyway). Borders reflect (-2 -> 2). No-data: if any of
// the 13 taps of an output is non-finite or absent (images under 3 pixels in a dimension),
// that output takes the bilinear value instead, whose rule skips non-finite neighbours.
// Band inputs need two halo rows each side.

/** One MHC site from its 13 taps; falls back to the bilinear means unless every tap is finite. */
function mhcSite(chroma: boolean, c: number, l: number, r: number, u: number, d: number, l2: number, r2: number, u2: number, d2: number, ul: number, ur: number, dl: number, dr: number, P: Float32Array, G: Float32Array, Q: Float32Array, i: number): void {
  const all = c + l + r + u + d + l2 + r2 + u2 + d2 + ul + ur + dl + dr;
  const ok = all - all === 0;
  if (chroma) {
    P[i] = c;
    G[i] = ok ? (4 * c + 2 * (l + r + u + d) - (l2 + r2 + u2 + d2)) * 0.125 : mean4(l, r, u, d);
    Q[i] = ok ? (6 * c + 2 * (ul + ur + dl + dr) - 1.5 * (l2 + r2 + u2 + d2)) * 0.125 : mean4(ul, ur, dl, dr);
  } else {
    const diag = ul + ur + dl + dr;
    G[i] = c;
    P[i] = ok ? (5 * c + 4 * (l + r) - diag - (l2 + r2) + 0.5 * (u2 + d2)) * 0.125 : mean2(l, r);
    Q[i] = ok ? (5 * c + 4 * (u + d) - diag - (u2 + d2) + 0.5 * (l2 + r2)) * 0.125 : mean2(u, d);
  }
}

/** Arguments of the MHC row kernel (same shape as the bilinear one). */
export type DebayerMhcRowArgs = DebayerRowArgs;

/** One MHC output pixel with reflected reads (borders, small images). */
function mhcBorderPixel(input: Float32Array, W: number, u2: number, u: number, c: number, d: number, d2: number, o: number, cp: number, x: number, P: Float32Array, G: Float32Array, Q: Float32Array): void {
  const at = (row: number, xx: number) => reflected(input, W, row, xx);
  mhcSite((x & 1) === cp, input[c + x]!, at(c, x - 1), at(c, x + 1), at(u, x), at(d, x), at(c, x - 2), at(c, x + 2), at(u2, x), at(d2, x), at(u, x - 1), at(u, x + 1), at(d, x - 1), at(d, x + 1), P, G, Q, o + x);
}

/**
 * Interior columns [x0, x1) of one row, every tap in range (rows u2 .. d2 all exist). The
 * formulas are written out here (not via mhcSite) so that V8 keeps the taps unboxed: a call
 * with 13 number arguments that is not inlined costs ~5x. Taps with a non-finite value go to
 * mhcSite, which falls back to the bilinear means.
 */
function mhcInterior(input: Float32Array, u2: number, u: number, c: number, d: number, d2: number, o: number, cp: number, x0: number, x1: number, P: Float32Array, G: Float32Array, Q: Float32Array): void {
  // Chroma sites have x parity cp, green sites the other.
  for (let x = x0 + ((x0 & 1) === cp ? 0 : 1); x < x1; x += 2) {
    const i = c + x;
    const cc = input[i]!;
    const l = input[i - 1]!;
    const r = input[i + 1]!;
    const uu = input[u + x]!;
    const dd = input[d + x]!;
    const far = input[i - 2]! + input[i + 2]! + input[u2 + x]! + input[d2 + x]!;
    const diag = input[u + x - 1]! + input[u + x + 1]! + input[d + x - 1]! + input[d + x + 1]!;
    const orth = l + r + uu + dd;
    const all = cc + orth + far + diag;
    if (all - all !== 0) {
      mhcSite(true, cc, l, r, uu, dd, input[i - 2]!, input[i + 2]!, input[u2 + x]!, input[d2 + x]!, input[u + x - 1]!, input[u + x + 1]!, input[d + x - 1]!, input[d + x + 1]!, P, G, Q, o + x);
      continue;
    }
    P[o + x] = cc;
    G[o + x] = (4 * cc + 2 * orth - far) * 0.125;
    Q[o + x] = (6 * cc + 2 * diag - 1.5 * far) * 0.125;
  }
  for (let x = x0 + ((x0 & 1) === cp ? 1 : 0); x < x1; x += 2) {
    const i = c + x;
    const cc = input[i]!;
    const l = input[i - 1]!;
    const r = input[i + 1]!;
    const uu = input[u + x]!;
    const dd = input[d + x]!;
    const l2 = input[i - 2]!;
    const r2 = input[i + 2]!;
    const uu2 = input[u2 + x]!;
    const dd2 = input[d2 + x]!;
    const diag = input[u + x - 1]! + input[u + x + 1]! + input[d + x - 1]! + input[d + x + 1]!;
    const all = cc + l + r + uu + dd + l2 + r2 + uu2 + dd2 + diag;
    if (all - all !== 0) {
      mhcSite(false, cc, l, r, uu, dd, l2, r2, uu2, dd2, input[u + x - 1]!, input[u + x + 1]!, input[d + x - 1]!, input[d + x + 1]!, P, G, Q, o + x);
      continue;
    }
    G[o + x] = cc;
    P[o + x] = (5 * cc + 4 * (l + r) - diag - (l2 + r2) + 0.5 * (uu2 + dd2)) * 0.125;
    Q[o + x] = (5 * cc + 4 * (uu + dd) - diag - (uu2 + dd2) + 0.5 * (l2 + r2)) * 0.125;
  }
}

/** Owned rows [y0 + start, y0 + end) with MHC. Exported for the worker pool. */
export function debayerMhcRows(args: DebayerMhcRowArgs, start: number, end: number): void {
  const { input, width: W, height: H, rx, ry, y0, readY0, g: G } = args;
  const rowAt = (y: number): number => {
    const m = y < 0 ? -y : y >= H ? 2 * H - 2 - y : y;
    return m < 0 || m >= H ? NONE : (m - readY0) * W;
  };
  for (let k = start; k < end; k++) {
    const y = y0 + k;
    const u2 = rowAt(y - 2);
    const u = rowAt(y - 1);
    const c = rowAt(y);
    const d = rowAt(y + 1);
    const d2 = rowAt(y + 2);
    const o = k * W;
    const redRow = (y & 1) === ry;
    const P = redRow ? args.r : args.b;
    const Q = redRow ? args.b : args.r;
    const cp = redRow ? rx : 1 - rx;
    // Interior columns with all five rows present read directly; the rest reflect.
    let x = 0;
    if (u2 !== NONE && d2 !== NONE && W >= 5) {
      for (; x < 2; x++) mhcBorderPixel(input, W, u2, u, c, d, d2, o, cp, x, P, G, Q);
      mhcInterior(input, u2, u, c, d, d2, o, cp, 2, W - 2, P, G, Q);
      x = W - 2;
    }
    for (; x < W; x++) mhcBorderPixel(input, W, u2, u, c, d, d2, o, cp, x, P, G, Q);
  }
}

/** Single-threaded MHC reference: the owned rows' R, G, B planes (rows x width each). */
export function debayerMhc(input: Float32Array, params: DebayerParams, out?: DebayerPlanes): DebayerPlanes {
  const p = resolveDebayer(params, input.length, 2);
  const planes = out ?? allocPlanes(p.rows * p.width, false);
  debayerMhcRows({ ...p, input, ...planes }, 0, p.rows);
  return planes;
}

const MHC_ROWS_KERNEL: PoolKernel = { module: import.meta.url, name: 'debayerMhcRows' };

/** debayerMhc on the worker pool; bit-identical to debayerMhc (see debayerBilinearParallel). */
export async function debayerMhcParallel(input: Float32Array, params: DebayerParams, options: ParallelOptions = {}, out?: DebayerPlanes): Promise<DebayerPlanes> {
  const p = resolveDebayer(params, input.length, 2);
  const planes = out ?? allocPlanes(p.rows * p.width, true);
  await sharedPool(options.workers ?? 2).run(MHC_ROWS_KERNEL, { ...p, input: toShared(input), ...planes }, 0, p.rows, { minChunk: 16 });
  return planes;
}
