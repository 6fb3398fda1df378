// Per-kernel throughput cases of the GPU bench: every WGSL kernel of src/gpu/registry.ts on
// device-resident data, with the bytes it must move (model.ts) so its speed reads as a fraction
// of the device's copy bandwidth. Sizes: a 6000×4000 frame (24 Mpx; --quick 1536×1024) for the
// per-pixel kernels, 16-frame bands of 4096 px rows (--quick 1024) for stack and the pre-mask.
// Data: seeded sky-like values with noise, stars and outliers (never zeros: rejection, selection
// and stretch branches take their usual paths).

import type { GpuContext } from '../../src/gpu/context.js';
import type { KernelId } from '../../src/gpu/registry.js';
import { planBands } from '../../src/gpu/band-planner.js';
import { calibrateResident } from '../../src/gpu/kernels/calibrate.js';
import { debayerBilinearResident, debayerMhcResident } from '../../src/gpu/kernels/debayer.js';
import { decodeFloat32Resident, decodeInt16Resident, decodeInt32Resident } from '../../src/gpu/kernels/decode.js';
import { premaskMaskBytes, premaskResident, scatterNanResident } from '../../src/gpu/kernels/premask.js';
import { stackResident } from '../../src/gpu/kernels/stack.js';
import { imageStatsResident, statsMinMaxResident, tileStatsResident } from '../../src/gpu/kernels/stats.js';
import { stretchAsinhResident, stretchMtfResident } from '../../src/gpu/kernels/stretch.js';
import { warpBilinearResident, warpLanczos3Resident, type Affine } from '../../src/gpu/kernels/warp.js';
import { REC709, type AsinhParams, type MtfParams } from '../../src/cpu/stretch.js';
import type { StackMethod } from '../../src/cpu/stack.js';
import { ALPHA } from '../../src/cpu/premask.js';
import { bytesOf, type KernelClass } from './model.js';
import type { Rep } from './timing.js';

export interface Prepared {
  /** Case name (kernel id and variant). */
  name: string;
  /** Kernel ids the repetition dispatches. */
  kernels: KernelId[];
  cls: KernelClass;
  size: string;
  /** Megapixels (or Mpix × frames) one repetition processes. */
  mpix: number;
  /** Fewest bytes one repetition moves (model.ts). */
  bytes: number;
  rep: Rep;
  /** The repetition submits its own work (waits for readbacks). */
  selfSubmit?: boolean;
  release(): void;
}

export interface KernelCase {
  name: string;
  prepare(ctx: GpuContext, quick: boolean): Promise<Prepared>;
}

/** Seeded LCG values: `base` + noise of ±`spread`/2, a bright outlier on 1 in 500. */
function field(n: number, base: number, spread: number, seed: number): Float32Array {
  const a = new Float32Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    const u = s / 4294967296;
    a[i] = base + spread * (u - 0.5) + (s % 500 === 0 ? 40 * spread : 0);
  }
  return a;
}

const frameSize = (quick: boolean): [number, number] => (quick ? [1536, 1024] : [6000, 4000]);

/** Tracks pooled buffers of a case for release(). */
function holder(ctx: GpuContext) {
  const held: GPUBuffer[] = [];
  return {
    up(data: ArrayBufferView): GPUBuffer {
      const b = ctx.upload(data);
      held.push(b);
      return b;
    },
    out(bytes: number): GPUBuffer {
      const b = ctx.storage(bytes, 'bench out');
      held.push(b);
      return b;
    },
    release: () => held.forEach((b) => ctx.pool.release(b)),
  };
}

function decodeCase(kind: 'int16' | 'int32' | 'float32'): KernelCase {
  const sampleBytes = kind === 'int16' ? 2 : 4;
  const bzero = kind === 'int16' ? 32768 : kind === 'int32' ? 2 ** 31 : 0;
  return {
    name: `decode_${kind}`,
    async prepare(ctx, quick) {
      const [W, H] = frameSize(quick);
      const n = W * H;
      const h = holder(ctx);
      const raw = new Uint8Array(n * sampleBytes);
      const src = field(n, 1000, 500, 7);
      const view = new DataView(raw.buffer);
      for (let i = 0; i < n; i++) {
        if (kind === 'int16') view.setInt16(2 * i, Math.round(src[i]!) - 32768, false);
        else if (kind === 'int32') view.setInt32(4 * i, Math.round(src[i]!) * 4096 - 2 ** 31, false);
        else view.setFloat32(4 * i, src[i]! / 65535, false);
      }
      const words = h.up(raw);
      const out = h.out(n * 4);
      const params = { count: n, bscale: 1, bzero };
      const run = kind === 'int16' ? decodeInt16Resident : kind === 'int32' ? decodeInt32Resident : decodeFloat32Resident;
      return { name: `decode_${kind}`, kernels: [`decode_${kind}`], cls: 'stream', size: `${W}x${H}`, mpix: n / 1e6, bytes: bytesOf.decode(n, sampleBytes), rep: (e) => run(ctx, words, out, params, e), release: h.release };
    },
  };
}

const calibrateCase: KernelCase = {
  name: 'calibrate',
  async prepare(ctx, quick) {
    const [W, H] = frameSize(quick);
    const n = W * H;
    const h = holder(ctx);
    const light = h.up(field(n, 2500, 3000, 1));
    const masters = { bias: h.up(field(n, 300, 10, 2)), dark: h.up(field(n, 10, 20, 3)), flat: h.up(field(n, 1, 0.8, 4)) };
    const out = h.out(n * 4);
    return { name: 'calibrate (bias, dark, flat)', kernels: ['calibrate'], cls: 'stream', size: `${W}x${H}`, mpix: n / 1e6, bytes: bytesOf.calibrate(n), rep: (e) => calibrateResident(ctx, light, masters, out, n, { darkScale: 1, pedestal: 0 }, e), release: h.release };
  },
};

function statsCase(kind: 'minmax' | 'histogram' | 'tiles'): KernelCase {
  return {
    name: `stats_${kind}`,
    async prepare(ctx, quick) {
      const [W, H] = frameSize(quick);
      const n = W * H;
      const h = holder(ctx);
      const img = field(n, 1000, 80, 42);
      for (let i = 0; i < n; i += 10007) img[i] = NaN;
      const seg = { buffer: h.up(img), y0: 0, rows: H };
      const base = { size: `${W}x${H}`, mpix: n / 1e6, bytes: bytesOf.reduce(n), release: h.release };
      if (kind === 'minmax') {
        const partials = h.out(1 << 20);
        return { ...base, name: 'stats_minmax', kernels: ['stats_minmax'], cls: 'stream', rep: async (e) => void (await statsMinMaxResident(ctx, seg, partials, { width: W, height: H, mode: 'whole' }, e)) };
      }
      if (kind === 'tiles') {
        const T = 128;
        const records = h.out(Math.ceil(W / T) * Math.ceil(H / T) * 32);
        return { ...base, name: `stats_tiles T=${T}`, kernels: ['stats_tiles'], cls: 'compute', rep: (e) => tileStatsResident(ctx, [seg], records, { width: W, height: H, tile: T }, e) };
      }
      // The whole contract (count, min, max, mean, exact median, MAD): minmax, then the
      // histogram selection levels with small readbacks between them.
      return { ...base, name: 'stats_histogram (median + MAD)', kernels: ['stats_minmax', 'stats_histogram'], cls: 'compute', selfSubmit: true, rep: async () => void (await imageStatsResident(ctx, [seg], { width: W, height: H, mode: 'whole' })) };
    },
  };
}

function debayerCase(kernel: 'debayer_bilinear' | 'debayer_bilinear_vec4' | 'debayer_mhc'): KernelCase {
  return {
    name: kernel,
    async prepare(ctx, quick) {
      const [W0, H] = frameSize(quick);
      // The wrapper picks the vec4 kernel when the width allows it; W + 2 forces the scalar one.
      const W = kernel === 'debayer_bilinear' ? W0 + 2 : W0;
      const n = W * H;
      const h = holder(ctx);
      const mosaic = h.up(field(n, 0.3, 0.4, 12345));
      const out = { r: h.out(n * 4), g: h.out(n * 4), b: h.out(n * 4) };
      const params = { width: W, height: H, pattern: 'RGGB' as const, readRows: H };
      const run = kernel === 'debayer_mhc' ? debayerMhcResident : debayerBilinearResident;
      return { name: kernel, kernels: [kernel], cls: kernel === 'debayer_mhc' ? 'compute' : 'stream', size: `${W}x${H}`, mpix: n / 1e6, bytes: bytesOf.debayer(n), rep: (e) => run(ctx, mosaic, out, params, e), release: h.release };
    },
  };
}

/** Registration-like transform: 0.5° rotation, scale 1.001 about the centre, shift (12.3, −7.7). */
function affine(W: number, H: number): Affine {
  const a = (0.5 * Math.PI) / 180;
  const c = 1.001 * Math.cos(a);
  const s = 1.001 * Math.sin(a);
  const cx = (W - 1) / 2;
  const cy = (H - 1) / 2;
  return [c, -s, cx - c * cx + s * cy + 12.3, s, c, cy - s * cx - c * cy - 7.7];
}

/**
 * 'lanczos3' is the 2-D kernel; 'lanczos3_separable' the two-pass path the wrapper picks for
 * near-identity transforms such as this one (its intermediate planes are written and read once:
 * 16 more bytes per pixel).
 */
function warpCase(kind: 'bilinear' | 'lanczos3' | 'lanczos3_separable'): KernelCase {
  return {
    name: `warp_${kind}`,
    async prepare(ctx, quick) {
      const [W, H] = quick ? [1024, 512] : [4096, 2048];
      const n = W * H;
      const h = holder(ctx);
      const src = h.up(field(n, 1000, 40, 99));
      const out = h.out(n * 4);
      const params = { affine: affine(W, H), width: W, y0: 0, rows: H, srcWidth: W, srcHeight: H, srcY0: 0, srcRows: H };
      const sep = kind === 'lanczos3_separable';
      const rep: Rep = (e) => (kind === 'bilinear' ? warpBilinearResident(ctx, src, out, params, e) : warpLanczos3Resident(ctx, src, out, params, e, { lanczosShape: sep ? 'separable' : '2d' }));
      const kernels: KernelId[] = sep ? ['warp_lanczos3_rows', 'warp_lanczos3_cols'] : [`warp_${kind}` as KernelId];
      return { name: `warp_${kind}`, kernels, cls: kind === 'bilinear' ? 'stream' : 'compute', size: `${W}x${H}`, mpix: n / 1e6, bytes: bytesOf.warp(n) + (sep ? n * 16 : 0), rep, release: h.release };
    },
  };
}

function stackCase(method: StackMethod): KernelCase {
  const N = 16;
  return {
    name: `stack.${method}.n${N}`,
    async prepare(ctx, quick) {
      const [W, H] = quick ? [1024, 256] : [4096, 2048];
      const plan = planBands({ width: W, height: H, frames: N, bytesPerPixel: 4, outputBytesPerPixel: 8, haloRows: 0, budgetBytes: ctx.limits.maxBufferSize, maxBindingBytes: ctx.limits.maxStorageBufferBindingSize, minRows: 1 });
      const h = holder(ctx);
      const bands = plan.bands.map((band, b) => {
        const px = band.rows * W;
        return { rows: band.rows, src: h.up(field(N * px, 1000, 30, 100 + b)), mean: h.out(px * 4), count: h.out(px * 4) };
      });
      const rejected = h.out(2 * N * 4);
      const weight = Array.from({ length: N }, (_, f) => 1 / (1 + 0.05 * f));
      const rep: Rep = async (e) => {
        for (const b of bands) await stackResident(ctx, b.src, b.mean, b.count, rejected, { width: W, rows: b.rows, frames: N, method, low: 3, high: 3, maxIters: 3, minFraction: 0.4, weight }, e);
      };
      const px = W * H;
      return { name: `stack ${method} N=${N}`, kernels: ['stack'], cls: method === 'none' ? 'stream' : 'compute', size: `${W}x${H}x${N}`, mpix: (px * N) / 1e6, bytes: bytesOf.stack(px, N), rep, release: h.release };
    },
  };
}

const premaskCase: KernelCase = {
  name: 'premask',
  async prepare(ctx, quick) {
    const N = 16;
    const W = quick ? 1024 : 4096;
    // One band within the binding limit (and at most 128 MiB of samples).
    const rows = Math.max(8, Math.min(quick ? 128 : 512, Math.floor(Math.min(ctx.limits.maxStorageBufferBindingSize, 2 ** 27) / (N * W * 4))));
    const px = W * rows;
    const h = holder(ctx);
    const band = h.up(field(N * px, 1000, 30, 5));
    const median = h.up(field(px, 1000, 2, 6));
    const mask = h.out(premaskMaskBytes(W, rows, N));
    const out = h.out(N * px * 4);
    const tallies = h.out(2 * N * 4);
    const frame = new Float32Array(4 * N);
    for (let f = 0; f < N; f++) frame.set([1, 0, 3 * 9, 3 * 9], 4 * f);
    const p = { width: W, rows, frames: N, ownedY0: 0, ownedRows: rows, level: 1000, alpha: ALPHA, minFraction: 0.4, frame };
    return { name: `premask flag + apply N=${N}`, kernels: ['premask_flag', 'premask_apply'], cls: 'stream', size: `${W}x${rows}x${N}`, mpix: (px * N) / 1e6, bytes: bytesOf.premask(px, N), rep: (e) => premaskResident(ctx, band, median, mask, out, tallies, p, e), release: h.release };
  },
};

const scatterCase: KernelCase = {
  name: 'scatter_nan',
  async prepare(ctx, quick) {
    const [W, H] = frameSize(quick);
    const n = W * H;
    const count = Math.floor(n / 64);
    const h = holder(ctx);
    const idx = new Uint32Array(count);
    let s = 77;
    for (let i = 0; i < count; i++) {
      s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
      idx[i] = s % n;
    }
    const indices = h.up(idx);
    const dst = h.out(n * 4);
    return { name: 'scatter_nan (1 in 64 samples)', kernels: ['scatter_nan'], cls: 'compute', size: `${count} of ${n}`, mpix: count / 1e6, bytes: bytesOf.scatter(count), rep: (e) => scatterNanResident(ctx, indices, count, dst, n, e), release: h.release };
  },
};

const MTF: MtfParams[] = [
  { c0: 0.01, m: 0.12, c1: 1 },
  { c0: 0.012, m: 0.1, c1: 1 },
  { c0: 0.009, m: 0.13, c1: 1 },
];
const HMS: AsinhParams = { anchor: 0.015, weights: REC709, logD: 2, protectB: 6, convergencePower: 3.5, colorGrip: 0.7, shadowConvergence: 0.5, pedestal: 0.005 };

function stretchCase(kind: 'mtf' | 'asinh'): KernelCase {
  return {
    name: `stretch_${kind}`,
    async prepare(ctx, quick) {
      const [W, H] = frameSize(quick);
      const n = W * H;
      const h = holder(ctx);
      const ins = [0, 1, 2].map((c) => h.up(field(n, 0.06, 0.1, 200 + c))) as [GPUBuffer, GPUBuffer, GPUBuffer];
      const outs = [0, 1, 2].map(() => h.out(n * 4)) as [GPUBuffer, GPUBuffer, GPUBuffer];
      const rep: Rep = async (e) => {
        if (kind === 'mtf') for (let c = 0; c < 3; c++) await stretchMtfResident(ctx, ins[c]!, outs[c]!, n, MTF[c]!, e);
        else await stretchAsinhResident(ctx, ins, outs, n, HMS, e);
      };
      return { name: `stretch_${kind} (RGB)`, kernels: [`stretch_${kind}`], cls: kind === 'mtf' ? 'stream' : 'compute', size: `${W}x${H}x3`, mpix: n / 1e6, bytes: bytesOf.stretch(n, 3), rep, release: h.release };
    },
  };
}

/** Every registry kernel at least once. */
export const KERNEL_CASES: KernelCase[] = [
  decodeCase('int16'),
  decodeCase('int32'),
  decodeCase('float32'),
  calibrateCase,
  statsCase('minmax'),
  statsCase('histogram'),
  statsCase('tiles'),
  debayerCase('debayer_bilinear'),
  debayerCase('debayer_bilinear_vec4'),
  debayerCase('debayer_mhc'),
  warpCase('bilinear'),
  warpCase('lanczos3'),
  warpCase('lanczos3_separable'),
  stackCase('none'),
  stackCase('sigma'),
  stackCase('winsor'),
  stackCase('median'),
  premaskCase,
  scatterCase,
  stretchCase('mtf'),
  stretchCase('asinh'),
];
