import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { CFA_PATTERNS, cfaPhase, debayerBilinear, debayerBilinearParallel, type CfaPattern, type DebayerPlanes, type RowOrder } from '../../src/cpu/debayer.js';
import { sharedFloat32 } from '../../src/cpu/worker-pool.js';
import { debayerBilinearGpu, debayerBilinearResident } from '../../src/gpu/kernels/debayer.js';
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

function assertClose(got: DebayerPlanes, want: DebayerPlanes, what: string): void {
  for (const k of PLANES) {
    const d = compareArrays(got[k], want[k]);
    assert.is(d.nanMismatches, 0, `${what} ${k}: NaN positions differ`);
    assert.ok(d.maxAbs <= TOL, `${what} ${k}: max |diff| ${d.maxAbs} at ${d.worstIndex}`);
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

test.run();
