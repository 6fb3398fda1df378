// shaders/stack/ln_apply.wgsl (local normalization applied to a band in place) against its
// TypeScript reference src/cpu/ln-apply.ts on seeded bands: odd widths, 5 % NaN, rows inside
// larger frame slots (src_rows/src_row0, the rows outside must stay bit-identical), grids of
// one column or row (nx or ny = 1), a band starting deep in the image (y0), 70 frames.
// Tolerance: |device − reference| ≤ 2e-6 · (|a|·|v| + |b|) per sample (the device interpolates
// and multiplies in f32, a few ulps; a wrong node or weight errs by percent), NaN exactly where
// the input is NaN. The GPU path must really run (dispatch count), and the model fitted on
// real frames goes through the same check.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import type { GridGeometry } from '../../src/algorithms/local-normalization.js';
import { lnApply, type LnApplyParams } from '../../src/cpu/ln-apply.js';
import { lnApplyGpu } from '../../src/gpu/kernels/ln-apply.js';
import { lnMode, lnTableBytes, warpLanczos3Resident, type WarpGpuOptions, type WarpLn } from '../../src/gpu/kernels/warp.js';
import { sourceRowsFor, type WarpParams } from '../../src/cpu/warp.js';
import { gpu, gpuTest } from '../helpers/gpu.js';
import { seededRandom } from '../helpers/tmp.js';

interface Case {
  width: number;
  rows: number;
  frames: number;
  y0: number;
  srcRows: number;
  srcRow0: number;
  nx: number;
  ny: number;
  height: number;
  seed: number;
}

function setup(c: Case): { band: Float32Array; p: LnApplyParams } {
  const rnd = seededRandom(c.seed);
  const band = new Float32Array(c.frames * c.srcRows * c.width);
  for (let i = 0; i < band.length; i++) band[i] = rnd() < 0.05 ? NaN : 800 + 400 * rnd() + (rnd() < 0.01 ? 20000 * rnd() : 0);
  const dx = c.width / c.nx;
  const dy = c.height / c.ny;
  const grid: GridGeometry = { width: c.width, height: c.height, nx: c.nx, ny: c.ny, x0: dx / 2 - 0.5, y0: dy / 2 - 0.5, dx, dy };
  const coefficients = new Float32Array(c.frames * c.nx * c.ny * 2);
  for (let k = 0; k < coefficients.length; k += 2) {
    coefficients[k] = 0.9 + 0.2 * rnd();
    coefficients[k + 1] = -60 + 120 * rnd();
  }
  return { band, p: { width: c.width, rows: c.rows, frames: c.frames, y0: c.y0, srcRows: c.srcRows, srcRow0: c.srcRow0, grid, coefficients } };
}

const CASES: Case[] = [
  { width: 37, rows: 23, frames: 5, y0: 0, srcRows: 23, srcRow0: 0, nx: 6, ny: 4, height: 120, seed: 1 },
  { width: 64, rows: 9, frames: 3, y0: 111, srcRows: 15, srcRow0: 4, nx: 5, ny: 5, height: 120, seed: 2 },
  { width: 41, rows: 11, frames: 4, y0: 30, srcRows: 11, srcRow0: 0, nx: 1, ny: 3, height: 64, seed: 3 },
  { width: 129, rows: 7, frames: 70, y0: 5, srcRows: 10, srcRow0: 2, nx: 9, ny: 1, height: 12, seed: 4 },
];

gpuTest('GPU ln_apply equals the reference (NaN kept, rows outside the band untouched, nx/ny = 1, 70 frames)', async () => {
  const ctx = gpu.ctx!;
  const before = ctx.dispatches.get('ln_apply') ?? 0;
  let worst = 0;
  for (const c of CASES) {
    const { band, p } = setup(c);
    const want = band.slice();
    lnApply(want, p);
    const got = await lnApplyGpu(ctx, band, p);
    const nodes = c.nx * c.ny;
    for (let f = 0; f < c.frames; f++) {
      let aMax = 0;
      let bMax = 0;
      for (let k = 0; k < nodes; k++) {
        aMax = Math.max(aMax, Math.abs(p.coefficients[(f * nodes + k) * 2]!));
        bMax = Math.max(bMax, Math.abs(p.coefficients[(f * nodes + k) * 2 + 1]!));
      }
      for (let r = 0; r < c.srcRows; r++) {
        for (let x = 0; x < c.width; x++) {
          const i = (f * c.srcRows + r) * c.width + x;
          const v = band[i]!;
          if (r < c.srcRow0 || r >= c.srcRow0 + c.rows) {
            assert.ok(Object.is(got[i], v) || (Number.isNaN(got[i]!) && Number.isNaN(v)), `case ${c.seed}: row ${r} outside the band changed`);
            continue;
          }
          if (Number.isNaN(v)) {
            assert.ok(Number.isNaN(got[i]!), `case ${c.seed}: NaN must stay NaN`);
            continue;
          }
          const scale = aMax * Math.abs(v) + bMax;
          const err = Math.abs(got[i]! - want[i]!) / scale;
          worst = Math.max(worst, err);
          assert.ok(err <= 2e-6, `case ${c.seed} frame ${f} row ${r} x ${x}: device ${got[i]} vs reference ${want[i]}`);
          // The normalisation really changed the sample (a is 0.9..1.1, b ±60).
          assert.ok(Math.abs(want[i]! - v) > 0 || Math.abs(v) < 1);
        }
      }
    }
  }
  assert.ok((ctx.dispatches.get('ln_apply') ?? 0) >= before + CASES.length, 'the WGSL kernel ran');
  assert.equal(ctx.uncapturedErrors, []);
  console.log(`  [ln_apply] worst relative difference ${worst.toExponential(2)} of |a·v| + |b|`);
});

/** A device Lanczos warp of `src` (whole plane) into a band, read back. */
async function deviceWarp(src: Float32Array, params: WarpParams, options: WarpGpuOptions): Promise<Float32Array> {
  const ctx = gpu.ctx!;
  const input = ctx.upload(src.subarray(params.srcY0 * params.srcWidth, (params.srcY0 + params.srcRows) * params.srcWidth));
  const out = ctx.storage(params.rows * params.width * 4, 'warped');
  try {
    await warpLanczos3Resident(ctx, input, out, params, undefined, options);
    return await ctx.readFloat32(out, params.rows * params.width);
  } finally {
    ctx.pool.release(input);
    ctx.pool.release(out);
  }
}

gpuTest('GPU Lanczos warp with local normalization fused into its store equals the warp followed by lnApply (every group shape and the separable pass, a frame deep in the table, grids of 1, 2, 7 and 40 node columns: nodes per group or per pixel; node rows inside the band and clamps in it, one node row, rows finer than a group)', async () => {
  const ctx = gpu.ctx!;
  const W = 203;
  const H = 90;
  const rnd = seededRandom(9);
  const src = new Float32Array(W * H);
  for (let i = 0; i < src.length; i++) src[i] = rnd() < 0.02 ? NaN : 900 + 300 * rnd();
  let worst = 0;
  // 7 columns: 29 px apart (groups load their nodes once, lnMode 1); 40: 5 px apart (finer
  // than a group of 8: each pixel looks its nodes up, lnMode 2); 1 and 2: the clamped ends.
  // Rows: 3 nodes 30 px apart (one node row inside the band); 4 nodes 12 px apart from y = 30
  // (the low clamp at y = 24 and two node rows inside the band: the separable pass's groups
  // of 8 rows meet a clamp or a node); 1 node row; 20 rows 4.5 px apart (finer than a group of
  // 8 rows: the separable pass does not apply, 'auto' takes the 2-D kernel).
  const colsBefore = ctx.dispatches.get('warp_lanczos3_cols') ?? 0;
  const grids: { nx: number; ny: number; y0?: number; dy?: number }[] = [{ nx: 7, ny: 3 }, { nx: 40, ny: 3 }, { nx: 2, ny: 3 }, { nx: 1, ny: 3 }, { nx: 7, ny: 4, y0: 30, dy: 12 }, { nx: 7, ny: 1 }, { nx: 7, ny: 20 }];
  for (const gr of grids) {
    const nx = gr.nx;
    const { p } = setup({ width: W, rows: 1, frames: 4, y0: 0, srcRows: 1, srcRow0: 0, nx, ny: gr.ny, height: H, seed: 5 + nx + 100 * gr.ny });
    if (gr.y0 !== undefined) p.grid = { ...p.grid, y0: gr.y0, dy: gr.dy! };
    const nodes = p.grid.nx * p.grid.ny;
    const rowsFine = Math.fround(p.grid.dy) < 8 && p.grid.ny > 1;
    // Frames 2 and 3 of the table, each with its own buffer for the warp's table.
    const tables = [2, 3].map(() => ctx.storage(lnTableBytes(p.grid, 29, W), 'ln table'));
    const lnOf = (frame: number): WarpLn => ({ table: tables[frame - 2]!, grid: p.grid, coefficients: p.coefficients.subarray(frame * nodes * 2, (frame + 1) * nodes * 2) });
    assert.is(lnMode(lnOf(2), 8), nx === 40 ? 2 : 1);
    try {
      // A shift (groups of 8), a small rotation (groups of 4 or 8) and a larger one (single pixels).
      for (const [k, affine] of [[1, 0, 1.3, 0, 1, -2.6], [0.9995, -0.03, 2.2, 0.03, 0.9995, 1.1], [0.94, -0.34, 20, 0.34, 0.94, -15]].entries()) {
        const y0 = 17;
        const rows = 29;
        const need = sourceRowsFor(affine, y0, rows, W, H, 'lanczos3');
        const params: WarpParams = { affine, width: W, y0, rows, srcWidth: W, srcHeight: H, srcY0: need.y0, srcRows: need.rows };
        const frame = 2 + (k % 2);
        const separable = k < 2;
        if (separable && rowsFine) {
          let refused = '';
          await deviceWarp(src, params, { lanczosShape: 'separable', ln: lnOf(frame) }).catch((e: Error) => (refused = e.message));
          assert.match(refused, /node rows at least 8 px apart/);
        }
        for (const shape of separable && !rowsFine ? (['auto', 'separable', '2d', 'group4', 'single'] as const) : (['auto', '2d', 'group4', 'single'] as const)) {
          // (With rows finer than a group, 'auto' warps with LN on the 2-D kernel, and without
          // on the separable pair where it applies: compare with the 2-D kernel's plain warp.)
          const plain = await deviceWarp(src, params, { lanczosShape: rowsFine && shape === 'auto' ? '2d' : shape });
          const fused = await deviceWarp(src, params, { lanczosShape: shape, ln: lnOf(frame) });
          const want = plain.slice();
          lnApply(want, { width: W, rows, frames: 1, y0, grid: p.grid, coefficients: p.coefficients.subarray(frame * nodes * 2, (frame + 1) * nodes * 2) });
          let changed = 0;
          for (let i = 0; i < want.length; i++) {
            if (Number.isNaN(want[i]!)) {
              assert.ok(Number.isNaN(fused[i]!), `transform ${k}: NaN must stay NaN at ${i}`);
              continue;
            }
            const err = Math.abs(fused[i]! - want[i]!) / (1.1 * Math.abs(plain[i]!) + 60);
            worst = Math.max(worst, err);
            assert.ok(err <= 2e-6, `grid ${nx}×${gr.ny}, transform ${k} (${shape}) at ${i}: fused ${fused[i]} vs warp + lnApply ${want[i]}`);
            if (Math.abs(want[i]! - plain[i]!) > 1) changed++;
          }
          assert.ok(changed > want.length / 2, 'the normalisation changed the samples');
        }
      }
    } finally {
      for (const t of tables) ctx.pool.release(t);
    }
  }
  assert.ok((ctx.dispatches.get('warp_lanczos3_cols') ?? 0) >= colsBefore + 6 * 2 * 2 * 2, 'the separable column pass ran with and without LN');
  assert.equal(ctx.uncapturedErrors, []);
  console.log(`  [warp_lanczos3 + LN] worst relative difference ${worst.toExponential(2)}`);
});

gpuTest('GPU ln_apply rejects bad arguments', async () => {
  const { band, p } = setup(CASES[0]!);
  let message = '';
  try {
    await lnApplyGpu(gpu.ctx!, band, { ...p, srcRow0: 5 });
  } catch (e) {
    message = (e as Error).message;
  }
  assert.match(message, /outside/);
});

test.run();
