import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CFA_PATTERNS, cfaPhase, debayerBilinear, debayerBilinearParallel, debayerMhc, debayerMhcParallel, type CfaPattern, type DebayerPlanes, type RowOrder } from '../../src/cpu/debayer.js';
import { sharedFloat32 } from '../../src/cpu/worker-pool.js';
import { debayerBilinearGpu, debayerBilinearResident, debayerMhcGpu, debayerMhcResident } from '../../src/gpu/kernels/debayer.js';
import { compareArrays, gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

type Colour = 'R' | 'G' | 'B';
const PLANES = ['r', 'g', 'b'] as const;

/** Colour of stored pixel (x, y) read straight off the pattern's letters (independent of the code under test). */
function colourAt(pattern: CfaPattern, x: number, y: number): Colour {
  return pattern[(y % 2) * 2 + (x % 2)] as Colour;
}

function mosaicOf(pattern: CfaPattern, W: number, H: number, value: (c: Colour, x: number, y: number) => number): Float32Array {
  const m = new Float32Array(W * H);
  for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) m[y * W + x] = value(colourAt(pattern, x, y), x, y);
  return m;
}

/** Values in [-1, 1) with about 2% NaN and a few ±Inf. */
function randomMosaic(W: number, H: number, seed: number): Float32Array {
  const rnd = seededRandom(seed);
  const m = new Float32Array(W * H);
  for (let i = 0; i < m.length; i++) {
    const u = rnd();
    m[i] = u < 0.02 ? NaN : u < 0.025 ? (u < 0.0225 ? Infinity : -Infinity) : rnd() * 2 - 1;
  }
  return m;
}

function rowsOf(p: DebayerPlanes, W: number, y0: number, rows: number): DebayerPlanes {
  return { r: p.r.subarray(y0 * W, (y0 + rows) * W), g: p.g.subarray(y0 * W, (y0 + rows) * W), b: p.b.subarray(y0 * W, (y0 + rows) * W) };
}

function assertIdentical(got: DebayerPlanes, want: DebayerPlanes, what: string): void {
  for (const k of PLANES) {
    assert.is(got[k].length, want[k].length, `${what} ${k} length`);
    for (let i = 0; i < want[k].length; i++) {
      if (!Object.is(got[k][i], want[k][i])) assert.unreachable(`${what} ${k}[${i}]: ${got[k][i]} != ${want[k][i]}`);
    }
  }
}

// ---- CFA phase -----------------------------------------------------------------------------

test('cfaPhase: hand-checked offsets and row orders', () => {
  assert.is(cfaPhase('RGGB'), 'RGGB');
  assert.is(cfaPhase('RGGB', 1, 0), 'GRBG');
  assert.is(cfaPhase('RGGB', 0, 1), 'GBRG');
  assert.is(cfaPhase('RGGB', 1, 1), 'BGGR');
  assert.is(cfaPhase('GBRG', 1, 0), 'BGGR');
  // Flipping an even number of rows puts the pattern's second row first; an odd number does not.
  assert.is(cfaPhase('RGGB', 0, 0, 'BOTTOM-UP', 4000), 'GBRG');
  assert.is(cfaPhase('RGGB', 0, 0, 'BOTTOM-UP', 4001), 'RGGB');
  assert.is(cfaPhase('RGGB', 0, 1, 'BOTTOM-UP', 4000), 'RGGB');
  assert.throws(() => cfaPhase('RGGB', 0, 0, 'BOTTOM-UP'), /height/);
});

test('cfaPhase: every pattern, offset and row order matches the definition pixel by pixel', () => {
  for (const pattern of CFA_PATTERNS) {
    for (const xOff of [0, 1]) {
      for (const yOff of [0, 1]) {
        for (const rowOrder of ['TOP-DOWN', 'BOTTOM-UP'] as RowOrder[]) {
          for (const H of [4, 5]) {
            const eff = cfaPhase(pattern, xOff, yOff, rowOrder, H);
            for (let t = 0; t < H; t++) {
              const s = rowOrder === 'BOTTOM-UP' ? H - 1 - t : t;
              for (let x = 0; x < 4; x++) {
                // Definition: top-down pixel (x, t) has pattern cell ((x + xOff) mod 2, (t + yOff) mod 2).
                const want = pattern[((t + yOff) % 2) * 2 + ((x + xOff) % 2)];
                assert.is(colourAt(eff, x, s), want, `${pattern} off ${xOff},${yOff} ${rowOrder} H ${H} at (${x},${s})`);
              }
            }
          }
        }
      }
    }
  }
});

// ---- CPU reference against hand-computed values --------------------------------------------

test('CPU: a uniform-colour mosaic debayers to exactly (a, b, c) everywhere, borders included', () => {
  const value = (c: Colour) => (c === 'R' ? 0.25 : c === 'G' ? 0.5 : 0.75);
  for (const pattern of CFA_PATTERNS) {
    for (const [W, H] of [[2, 2], [3, 3], [7, 5], [6, 4], [5, 8], [2, 9]] as const) {
      const out = debayerBilinear(mosaicOf(pattern, W, H, value), { width: W, height: H, pattern });
      for (let i = 0; i < W * H; i++) {
        assert.is(out.r[i], 0.25, `${pattern} ${W}x${H} R[${i}]`);
        assert.is(out.g[i], 0.5, `${pattern} ${W}x${H} G[${i}]`);
        assert.is(out.b[i], 0.75, `${pattern} ${W}x${H} B[${i}]`);
      }
    }
  }
});

test('CPU: a red point source lands in the R plane with bilinear weights', () => {
  const W = 9;
  const H = 9;
  const m = new Float32Array(W * H);
  m[4 * W + 4] = 1; // (4, 4) is a red site of RGGB
  const out = debayerBilinear(m, { width: W, height: H, pattern: 'RGGB' });
  const want = new Float32Array(W * H);
  want[4 * W + 4] = 1;
  for (const [x, y] of [[3, 4], [5, 4], [4, 3], [4, 5]] as const) want[y * W + x] = 0.5; // green sites next to it
  for (const [x, y] of [[3, 3], [5, 3], [3, 5], [5, 5]] as const) want[y * W + x] = 0.25; // blue sites on its diagonals
  assert.equal(Array.from(out.r), Array.from(want));
  assert.ok(out.g.every((v) => v === 0), 'G plane stays dark');
  assert.ok(out.b.every((v) => v === 0), 'B plane stays dark');
});

test('CPU: borders reflect without repeating the edge (a blue point next to the corner)', () => {
  const W = 4;
  const H = 4;
  const m = new Float32Array(W * H);
  m[1 * W + 1] = 1; // (1, 1) is a blue site of RGGB
  const out = debayerBilinear(m, { width: W, height: H, pattern: 'RGGB' });
  const B = (x: number, y: number) => out.b[y * W + x];
  // Red corner (0,0): its diagonals (-1,-1), (1,-1), (-1,1), (1,1) all reflect onto (1,1).
  assert.is(B(0, 0), 1);
  // Red (2,0): diagonals (1,-1)->(1,1), (3,-1)->(3,1), (1,1), (3,1).
  assert.is(B(2, 0), 0.5);
  // Red (0,2): diagonals (-1,1)->(1,1), (1,1), (-1,3)->(1,3), (1,3).
  assert.is(B(0, 2), 0.5);
  // Green (0,1) in the blue row: left (-1,1) reflects to (1,1) (a repeated edge would give green (0,1)).
  assert.is(B(0, 1), 1);
  // Green (1,0) in the red row: up (1,-1) reflects to (1,1), down is (1,1).
  assert.is(B(1, 0), 1);
});

test('CPU: a linear ramp is reproduced exactly in the interior of every plane', () => {
  const W = 11;
  const H = 8;
  for (const pattern of CFA_PATTERNS) {
    const out = debayerBilinear(mosaicOf(pattern, W, H, (_c, x, y) => x + 10 * y), { width: W, height: H, pattern });
    for (let y = 1; y < H - 1; y++) {
      for (let x = 1; x < W - 1; x++) {
        for (const k of PLANES) assert.is(out[k][y * W + x], x + 10 * y, `${pattern} ${k} (${x},${y})`);
      }
    }
  }
});

test('CPU: non-finite neighbours are skipped, NaN when none is left, own NaN stays', () => {
  const W = 5;
  const H = 5;
  const m = mosaicOf('RGGB', W, H, () => 1);
  m[1 * W + 2] = NaN; // green above red (2,2)
  m[2 * W + 1] = 5; // green left of red (2,2)
  m[3 * W + 3] = Infinity; // blue diagonal of red (2,2)
  m[1 * W + 1] = 4; // blue diagonal of red (2,2)
  m[2 * W + 3] = NaN; // green right of (2,2) ...
  const out = debayerBilinear(m, { width: W, height: H, pattern: 'RGGB' });
  const at = (k: (typeof PLANES)[number], x: number, y: number) => out[k][y * W + x]!;
  assert.is(at('r', 2, 2), 1);
  assert.is(at('g', 2, 2), (5 + 1) / 2); // up and right NaN: mean of left and down
  assert.is(at('b', 2, 2), (4 + 1 + 1) / 3); // +Inf skipped
  // (2,3) is ... a green site in the blue row of RGGB? Row 3 is "G B G B G": x=2 is green; its red comes from up/down.
  assert.is(at('r', 2, 3), 1);
  // Own NaN: green (3,2) keeps NaN in G; its R (left/right reds) and B (up/down blues) are finite.
  assert.ok(Number.isNaN(at('g', 3, 2)));
  assert.is(at('r', 3, 2), 1);
  assert.is(at('b', 3, 2), 1);
  // All neighbours of one kind missing: red (0,0)'s green comes from (1,0) (twice) and (0,1) (twice).
  const n = mosaicOf('RGGB', W, H, () => 1);
  n[1] = NaN;
  n[W] = NaN;
  const o2 = debayerBilinear(n, { width: W, height: H, pattern: 'RGGB' });
  assert.ok(Number.isNaN(o2.g[0]!));
  assert.is(o2.r[0], 1);
  assert.is(o2.b[0], 1);
});

test('CPU: one-row and one-column images have no reflected neighbours', () => {
  // RGGB, one row: R G R G R. Blue has no neighbours anywhere.
  const row = new Float32Array([1, 2, 3, 4, 5]);
  const a = debayerBilinear(row, { width: 5, height: 1, pattern: 'RGGB' });
  assert.equal(Array.from(a.r), [1, 2, 3, 4, 5].map((_, x) => (x % 2 === 0 ? row[x] : (row[x - 1]! + row[x + 1]!) / 2)));
  assert.equal(Array.from(a.g), [2, 2, 3, 4, 4]);
  assert.ok(a.b.every(Number.isNaN));
  // RGGB, one column: R, G, R, G.
  const col = new Float32Array([1, 2, 3, 4]);
  const c = debayerBilinear(col, { width: 1, height: 4, pattern: 'RGGB' });
  assert.equal(Array.from(c.r), [1, 2, 3, 3]);
  assert.equal(Array.from(c.g), [2, 2, 3, 4]);
  assert.ok(c.b.every(Number.isNaN));
});

test('CPU: bands (odd first rows, halos) reproduce the whole image; missing halo is refused', () => {
  const W = 13;
  const H = 17;
  const m = randomMosaic(W, H, 5);
  for (const pattern of CFA_PATTERNS) {
    const whole = debayerBilinear(m, { width: W, height: H, pattern });
    for (const [y0, rows] of [[0, 5], [5, 3], [3, 1], [8, 9], [16, 1], [0, 17]] as const) {
      const readY0 = Math.max(0, y0 - 1);
      const readEnd = Math.min(H, y0 + rows + 1);
      const band = debayerBilinear(m.subarray(readY0 * W, readEnd * W), { width: W, height: H, pattern, y0, rows, readY0 });
      assertIdentical(band, rowsOf(whole, W, y0, rows), `${pattern} band ${y0}+${rows}`);
    }
  }
  assert.throws(() => debayerBilinear(m.subarray(3 * W, 8 * W), { width: W, height: H, pattern: 'RGGB', y0: 3, rows: 5, readY0: 3 }), /halo/);
});

test('CPU: debayerBilinearParallel (2 workers) is bit-identical to debayerBilinear', async () => {
  for (const [W, H] of [[301, 203], [6, 33], [1, 40], [40, 1]] as const) {
    const plain = randomMosaic(W, H, W * H);
    const shared = sharedFloat32(plain.length);
    shared.set(plain);
    for (const pattern of CFA_PATTERNS) {
      const want = debayerBilinear(plain, { width: W, height: H, pattern });
      assertIdentical(await debayerBilinearParallel(shared, { width: W, height: H, pattern }, { workers: 2 }), want, `${pattern} ${W}x${H}`);
    }
    // Not shared: copied once, same result. A band with an odd first row as well.
    assertIdentical(await debayerBilinearParallel(plain, { width: W, height: H, pattern: 'GRBG' }), debayerBilinear(plain, { width: W, height: H, pattern: 'GRBG' }), 'unshared input');
  }
  const W = 64;
  const m = randomMosaic(W, 50, 7);
  const p = { width: W, height: 50, pattern: 'BGGR' as const, y0: 11, rows: 27, readY0: 10 };
  assertIdentical(await debayerBilinearParallel(m.subarray(10 * W, 39 * W), p), debayerBilinear(m.subarray(10 * W, 39 * W), p), 'band');
});

// ---- GPU against the reference ---------------------------------------------------------------

// Tolerance: values are in [-1, 1). The kernel adds up to 4 f32 values (partial sums < 4, each
// rounding ≤ 2^-22) and divides by the finite count (≥ 1 ulp from division on some drivers);
// the reference sums in f64 and rounds once (≤ 2^-25). 2^-21 bounds the sum of these.
const TOL = 2 ** -21;

function assertClose(got: DebayerPlanes, want: DebayerPlanes, what: string, tol = TOL): void {
  for (const k of PLANES) {
    const d = compareArrays(got[k], want[k]);
    assert.is(d.nanMismatches, 0, `${what} ${k}: NaN positions differ`);
    assert.ok(d.maxAbs <= tol, `${what} ${k}: max |diff| ${d.maxAbs} at ${d.worstIndex}`);
  }
}

gpuTest('GPU debayer_bilinear(_vec4) equals the CPU reference: 4 patterns, odd sizes, NaN/Inf, borders', async () => {
  const ctx = gpu.ctx!;
  const count = (): [number, number] => [ctx.dispatches.get('debayer_bilinear') ?? 0, ctx.dispatches.get('debayer_bilinear_vec4') ?? 0];
  const [scalar0, vec40] = count();
  // Widths not a multiple of 4 take the scalar kernel, the others the vec4 kernel.
  const sizes = [[1, 1], [1, 7], [7, 1], [2, 2], [3, 5], [131, 9], [257, 66], [4, 1], [4, 4], [8, 3], [12, 7], [132, 9], [256, 65]] as const;
  for (const [W, H] of sizes) {
    const m = randomMosaic(W, H, 1000 + W * H);
    for (const pattern of CFA_PATTERNS) {
      const params = { width: W, height: H, pattern };
      assertClose(await debayerBilinearGpu(ctx, m, params), debayerBilinear(m, params), `${pattern} ${W}x${H}`);
    }
  }
  const [scalar1, vec41] = count();
  assert.is(scalar1 - scalar0, 7 * 4, 'the scalar WGSL kernel ran for every odd width');
  assert.is(vec41 - vec40, 6 * 4, 'the vec4 WGSL kernel ran for every width divisible by 4');
});

gpuTest('GPU debayer_bilinear: uniform colours come out exact; bands with odd first rows keep the phase', async () => {
  const ctx = gpu.ctx!;
  const value = (c: Colour) => (c === 'R' ? 0.25 : c === 'G' ? 0.5 : 0.75);
  for (const pattern of CFA_PATTERNS) {
    for (const [W, H] of [[7, 5], [8, 5], [4, 2]] as const) {
      const out = await debayerBilinearGpu(ctx, mosaicOf(pattern, W, H, value), { width: W, height: H, pattern });
      assert.ok(out.r.every((v) => v === 0.25) && out.g.every((v) => v === 0.5) && out.b.every((v) => v === 0.75), `${pattern} ${W}x${H} uniform`);
    }
  }
  const H = 23;
  for (const W of [37, 36]) {
    const m = randomMosaic(W, H, 77);
    for (const pattern of CFA_PATTERNS) {
      const whole = debayerBilinear(m, { width: W, height: H, pattern });
      for (const [y0, rows] of [[0, 1], [1, 4], [5, 7], [12, 11], [22, 1], [3, 20]] as const) {
        const readY0 = Math.max(0, y0 - 1);
        const readEnd = Math.min(H, y0 + rows + 1);
        const got = await debayerBilinearGpu(ctx, m.subarray(readY0 * W, readEnd * W), { width: W, height: H, pattern, y0, rows, readY0 });
        assertClose(got, rowsOf(whole, W, y0, rows), `${pattern} ${W}x${H} band ${y0}+${rows}`);
      }
    }
  }
});

gpuTest('GPU debayer_bilinear host form takes a SharedArrayBuffer input (uploaded in chunks)', async () => {
  const ctx = gpu.ctx!;
  const W = 1201; // 1201 x 1000 floats: more than one 4 MiB bounce chunk, not a multiple of it
  const H = 1000;
  const m = randomMosaic(W, H, 11);
  const shared = sharedFloat32(m.length);
  shared.set(m);
  const params = { width: W, height: H, pattern: 'GRBG' as const };
  assertClose(await debayerBilinearGpu(ctx, shared, params), debayerBilinear(m, params), 'shared input');
});

gpuTest('GPU debayerBilinearResident chains bands in one encoder', async () => {
  for (const W of [50, 52]) await residentBands(W);
});

async function residentBands(W: number): Promise<void> {
  const ctx = gpu.ctx!;
  const H = 31;
  const m = randomMosaic(W, H, 3);
  const pattern = 'GBRG';
  const whole = debayerBilinear(m, { width: W, height: H, pattern });
  const mosaic = ctx.upload(m);
  const out = { r: ctx.storage(W * H * 4), g: ctx.storage(W * H * 4), b: ctx.storage(W * H * 4) };
  const lower = { r: ctx.storage(W * H * 4), g: ctx.storage(W * H * 4), b: ctx.storage(W * H * 4) };
  try {
    const encoder = ctx.device.createCommandEncoder();
    // The whole mosaic is resident; two bands read it with their halos (readY0 = 0, all rows).
    await debayerBilinearResident(ctx, mosaic, out, { width: W, height: H, pattern, y0: 0, rows: 15, readRows: H }, encoder);
    await debayerBilinearResident(ctx, mosaic, lower, { width: W, height: H, pattern, y0: 15, rows: 16, readRows: H }, encoder);
    ctx.submit(encoder);
    const top = { r: await ctx.readFloat32(out.r, 15 * W), g: await ctx.readFloat32(out.g, 15 * W), b: await ctx.readFloat32(out.b, 15 * W) };
    const bottom = { r: await ctx.readFloat32(lower.r, 16 * W), g: await ctx.readFloat32(lower.g, 16 * W), b: await ctx.readFloat32(lower.b, 16 * W) };
    assertClose(top, rowsOf(whole, W, 0, 15), `width ${W} top band`);
    assertClose(bottom, rowsOf(whole, W, 15, 16), `width ${W} bottom band`);
  } finally {
    for (const b of [mosaic, ...Object.values(out), ...Object.values(lower)]) ctx.pool.release(b);
  }
  assert.equal(ctx.uncapturedErrors, []);
}


// ---- Malvar-He-Cutler (debayer_mhc) ----------------------------------------------------------

// The paper's 5x5 filters (x 1/8), indexed [dy + 2][dx + 2], transcribed independently of the
// reference's factored formulas.
const H = 0.5;
const MHC_G_AT_CHROMA = [[0, 0, -1, 0, 0], [0, 0, 2, 0, 0], [-1, 2, 4, 2, -1], [0, 0, 2, 0, 0], [0, 0, -1, 0, 0]];
const MHC_ROW_CHROMA_AT_G = [[0, 0, H, 0, 0], [0, -1, 0, -1, 0], [-1, 4, 5, 4, -1], [0, -1, 0, -1, 0], [0, 0, H, 0, 0]];
const MHC_COL_CHROMA_AT_G = [[0, 0, -1, 0, 0], [0, -1, 4, -1, 0], [H, 0, 5, 0, H], [0, -1, 4, -1, 0], [0, 0, -1, 0, 0]];
const MHC_CHROMA_AT_CHROMA = [[0, 0, -1.5, 0, 0], [0, 2, 0, 2, 0], [-1.5, 0, 6, 0, -1.5], [0, 2, 0, 2, 0], [0, 0, -1.5, 0, 0]];

/** Direct 5x5 filtering with reflected borders; for finite data at least 3 pixels each way. */
function naiveMhc(m: Float32Array, W: number, Hh: number, pattern: CfaPattern): DebayerPlanes {
  const refl = (i: number, n: number) => (i < 0 ? -i : i >= n ? 2 * n - 2 - i : i);
  const out = { r: new Float32Array(W * Hh), g: new Float32Array(W * Hh), b: new Float32Array(W * Hh) };
  const apply = (f: number[][], x: number, y: number) => {
    let s = 0;
    for (let dy = -2; dy <= 2; dy++) for (let dx = -2; dx <= 2; dx++) s += f[dy + 2]![dx + 2]! * m[refl(y + dy, Hh) * W + refl(x + dx, W)]!;
    return s / 8;
  };
  for (let y = 0; y < Hh; y++) {
    for (let x = 0; x < W; x++) {
      const i = y * W + x;
      const c = colourAt(pattern, x, y);
      const rowHasRed = colourAt(pattern, 0, y) === 'R' || colourAt(pattern, 1, y) === 'R';
      if (c === 'G') {
        out.g[i] = m[i]!;
        out.r[i] = apply(rowHasRed ? MHC_ROW_CHROMA_AT_G : MHC_COL_CHROMA_AT_G, x, y);
        out.b[i] = apply(rowHasRed ? MHC_COL_CHROMA_AT_G : MHC_ROW_CHROMA_AT_G, x, y);
      } else {
        out.g[i] = apply(MHC_G_AT_CHROMA, x, y);
        out[c === 'R' ? 'r' : 'b'][i] = m[i]!;
        out[c === 'R' ? 'b' : 'r'][i] = apply(MHC_CHROMA_AT_CHROMA, x, y);
      }
    }
  }
  return out;
}

test('CPU MHC: a red impulse gives the filters\' hand-computed responses', () => {
  const W = 11;
  const m = new Float32Array(W * W);
  m[4 * W + 4] = 8; // red site of RGGB
  const out = debayerMhc(m, { width: W, height: W, pattern: 'RGGB' });
  const want = { r: new Float32Array(W * W), g: new Float32Array(W * W), b: new Float32Array(W * W) };
  const set = (k: 'r' | 'g' | 'b', pts: number[][], v: number) => pts.forEach(([x, y]) => (want[k][y! * W + x!] = v));
  set('r', [[4, 4]], 8);
  set('r', [[3, 4], [5, 4], [4, 3], [4, 5]], 4); // 4/8 of the impulse at the neighbouring greens
  set('r', [[3, 3], [5, 3], [3, 5], [5, 5]], 2); // 2/8 at the diagonal blues
  set('g', [[4, 4]], 4); // 4/8: the Laplacian correction puts luminance under the impulse
  set('g', [[2, 4], [6, 4], [4, 2], [4, 6]], -1); // -1/8 at reds two away
  set('b', [[4, 4]], 6); // 6/8
  set('b', [[2, 4], [6, 4], [4, 2], [4, 6]], -1.5); // -1.5/8
  for (const k of PLANES) assert.equal(Array.from(out[k]), Array.from(want[k]), `${k} plane`);
});

test('CPU MHC: uniform colours exact everywhere; linear ramps exact inside; matches direct 5x5 filtering', () => {
  const value = (c: Colour) => (c === 'R' ? 0.25 : c === 'G' ? 0.5 : 0.75);
  for (const pattern of CFA_PATTERNS) {
    for (const [W, Hh] of [[2, 2], [3, 3], [7, 5], [6, 4], [5, 8], [1, 6]] as const) {
      const out = debayerMhc(mosaicOf(pattern, W, Hh, value), { width: W, height: Hh, pattern });
      if (W === 1) {
        // One column: no left/right neighbours, so one chroma per site has nothing to average.
        assert.ok(out.g.every((v) => v === 0.5), `${pattern} 1x${Hh} G`);
        continue;
      }
      for (let i = 0; i < W * Hh; i++) {
        assert.is(out.r[i], 0.25, `${pattern} ${W}x${Hh} R[${i}]`);
        assert.is(out.g[i], 0.5, `${pattern} ${W}x${Hh} G[${i}]`);
        assert.is(out.b[i], 0.75, `${pattern} ${W}x${Hh} B[${i}]`);
      }
    }
    const W = 12;
    const Hh = 9;
    const ramp = debayerMhc(mosaicOf(pattern, W, Hh, (_c, x, y) => 3 * x - 7 * y), { width: W, height: Hh, pattern });
    for (let y = 2; y < Hh - 2; y++) for (let x = 2; x < W - 2; x++) for (const k of PLANES) assert.is(ramp[k][y * W + x], 3 * x - 7 * y, `${pattern} ramp ${k} (${x},${y})`);
    const rnd = seededRandom(9);
    const m = new Float32Array(13 * 10).map(() => rnd());
    const direct = naiveMhc(m, 13, 10, pattern);
    const got = debayerMhc(m, { width: 13, height: 10, pattern });
    for (const k of PLANES) {
      const d = compareArrays(got[k], direct[k]);
      assert.ok(d.maxAbs <= 2 ** -22, `${pattern} ${k} vs direct filtering: ${d.maxAbs}`); // both f64, one f32 rounding each
    }
  }
});

test('CPU MHC: outputs whose taps hold NaN take the bilinear value; others keep MHC', () => {
  const W = 15;
  const Hh = 12;
  const rnd = seededRandom(21);
  const m = new Float32Array(W * Hh).map(() => rnd());
  const clean = debayerMhc(m, { width: W, height: Hh, pattern: 'GBRG' });
  m[6 * W + 7] = NaN;
  const mhc = debayerMhc(m, { width: W, height: Hh, pattern: 'GBRG' });
  const lin = debayerBilinear(m, { width: W, height: Hh, pattern: 'GBRG' });
  let fallbacks = 0;
  for (let y = 0; y < Hh; y++) {
    for (let x = 0; x < W; x++) {
      const i = y * W + x;
      // Every MHC tap lies within |dx| + |dy| <= 2 of its output.
      const reach = Math.abs(x - 7) + Math.abs(y - 6) <= 2;
      for (const k of PLANES) {
        if (x === 7 && y === 6 && Number.isNaN(mhc[k][i]!)) continue; // the site's own colour
        const fromLin = Object.is(mhc[k][i], lin[k][i]);
        if (reach && !Object.is(mhc[k][i], clean[k][i])) {
          assert.ok(fromLin, `(${x},${y}) ${k}: ${mhc[k][i]} is neither MHC nor bilinear ${lin[k][i]}`);
          fallbacks++;
        }
        if (!reach) assert.ok(Object.is(mhc[k][i], clean[k][i]), `(${x},${y}) ${k} changed far from the NaN`);
      }
    }
  }
  assert.ok(fallbacks >= 12, `${fallbacks} outputs fell back`);
});

test('CPU MHC: bands with two halo rows reproduce the whole image; parallel is bit-identical', async () => {
  const W = 21;
  const Hh = 19;
  const m = randomMosaic(W, Hh, 8);
  for (const pattern of CFA_PATTERNS) {
    const whole = debayerMhc(m, { width: W, height: Hh, pattern });
    for (const [y0, rows] of [[0, 5], [5, 3], [3, 1], [9, 10], [18, 1]] as const) {
      const readY0 = Math.max(0, y0 - 2);
      const readEnd = Math.min(Hh, y0 + rows + 2);
      assertIdentical(debayerMhc(m.subarray(readY0 * W, readEnd * W), { width: W, height: Hh, pattern, y0, rows, readY0 }), rowsOf(whole, W, y0, rows), `${pattern} band ${y0}+${rows}`);
    }
    assertIdentical(await debayerMhcParallel(m, { width: W, height: Hh, pattern }), whole, `${pattern} parallel`);
  }
  assert.throws(() => debayerMhc(m.subarray(2 * W, 9 * W), { width: W, height: Hh, pattern: 'RGGB', y0: 3, rows: 5, readY0: 2 }), /2 halo/);
});

// Tolerance for MHC: values in [-1, 1); 13 taps with |weights| summing to at most 20 (÷8), so
// partial sums stay below 20 and each of ~13 f32 roundings is ≤ 2^-20; 2^-18 bounds their sum
// (the ÷8 is exact) plus the reference's one rounding.
const MHC_TOL = 2 ** -18;

gpuTest('GPU debayer_mhc equals the CPU reference: 4 patterns, odd sizes, NaN/Inf, borders, bands', async () => {
  const ctx = gpu.ctx!;
  const before = ctx.dispatches.get('debayer_mhc') ?? 0;
  let runs = 0;
  for (const [W, Hh] of [[1, 1], [1, 7], [7, 1], [2, 2], [3, 5], [4, 4], [131, 9], [256, 66]] as const) {
    const m = randomMosaic(W, Hh, 2000 + W * Hh);
    for (const pattern of CFA_PATTERNS) {
      const params = { width: W, height: Hh, pattern };
      assertClose(await debayerMhcGpu(ctx, m, params), debayerMhc(m, params), `${pattern} ${W}x${Hh}`, MHC_TOL);
      runs++;
    }
  }
  const W = 37;
  const Hh = 23;
  const m = randomMosaic(W, Hh, 78);
  for (const pattern of CFA_PATTERNS) {
    const whole = debayerMhc(m, { width: W, height: Hh, pattern });
    for (const [y0, rows] of [[0, 1], [1, 4], [5, 7], [22, 1], [3, 20]] as const) {
      const readY0 = Math.max(0, y0 - 2);
      const readEnd = Math.min(Hh, y0 + rows + 2);
      const got = await debayerMhcGpu(ctx, m.subarray(readY0 * W, readEnd * W), { width: W, height: Hh, pattern, y0, rows, readY0 });
      assertClose(got, rowsOf(whole, W, y0, rows), `${pattern} band ${y0}+${rows}`, MHC_TOL);
      runs++;
    }
  }
  // Resident form in a caller's encoder.
  const buf = ctx.upload(m);
  const out = { r: ctx.storage(W * Hh * 4), g: ctx.storage(W * Hh * 4), b: ctx.storage(W * Hh * 4) };
  try {
    const encoder = ctx.device.createCommandEncoder();
    await debayerMhcResident(ctx, buf, out, { width: W, height: Hh, pattern: 'BGGR', readRows: Hh }, encoder);
    ctx.submit(encoder);
    const got = { r: await ctx.readFloat32(out.r, W * Hh), g: await ctx.readFloat32(out.g, W * Hh), b: await ctx.readFloat32(out.b, W * Hh) };
    assertClose(got, debayerMhc(m, { width: W, height: Hh, pattern: 'BGGR' }), 'resident', MHC_TOL);
    runs++;
  } finally {
    for (const b of [buf, ...Object.values(out)]) ctx.pool.release(b);
  }
  assert.is((ctx.dispatches.get('debayer_mhc') ?? 0) - before, runs, 'the WGSL kernel ran');
});

test.run();
