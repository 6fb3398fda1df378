// Micro-bench of the Lanczos-3 warp alone (issue 22): one output band through the GPU kernels on
// the adapter SKYSTACK_DEVICE picks (Dawn on llvmpipe here), the 2-D kernel against the separable
// two-pass path, interleaved (A B A B …), kernel time with the source resident (submit → done),
// plus the TypeScript references. Bands as STACKING plans them: 2048×238 rows (30 × 2048×1536
// mono) and 6248×236 (osc-large), and a whole 2048×1536 frame; transform rotation 0.3°, scale
// 1.0005, shift (3.37, −2.71) about the centre.
// Usage: node dist/bench/warp-micro.js [ROUNDS] [--ts]

import { GpuContext } from '../src/gpu/context.js';
import { warpLanczos3, warpLanczos3Separable, type Affine, type WarpParams } from '../src/cpu/warp.js';
import { warpLanczos3Resident, type WarpGpuOptions } from '../src/gpu/kernels/warp.js';

function field(W: number, H: number): Float32Array {
  let seed = 12345;
  const rnd = () => ((seed = (Math.imul(seed, 1664525) + 1013904223) >>> 0), seed / 4294967296);
  const img = new Float32Array(W * H);
  for (let i = 0; i < img.length; i++) img[i] = 1000 + 20 * (rnd() - 0.5);
  return img;
}

function affine(W: number, H: number): Affine {
  const a = (0.3 * Math.PI) / 180;
  const c = 1.0005 * Math.cos(a);
  const n = 1.0005 * Math.sin(a);
  const cx = (W - 1) / 2;
  const cy = (H - 1) / 2;
  return [c, -n, cx - c * cx + n * cy + 3.37, n, c, cy - n * cx - c * cy - 2.71];
}

const rounds = Number(process.argv[2] ?? 3);
const ts = process.argv.includes('--ts');
const { ctx, info } = await GpuContext.create((process.env.SKYSTACK_DEVICE as 'software') ?? 'software');
if (!ctx) throw new Error('no GPU context');
console.log(`# ${info.kind} ${info.adapter ?? ''}; load ${(await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').trim()}`);
const cases = [
  { name: '2048x238 band', W: 2048, H: 1536, y0: 640, rows: 238 },
  { name: '6248x236 band', W: 6248, H: 4176, y0: 2000, rows: 236 },
  { name: '2048x1536 frame', W: 2048, H: 1536, y0: 0, rows: 1536 },
];
for (const c of cases) {
  const src = field(c.W, c.H);
  const base: WarpParams = { affine: affine(c.W, c.H), width: c.W, y0: c.y0, rows: c.rows, srcWidth: c.W, srcHeight: c.H, srcY0: 0, srcRows: c.H };
  const input = ctx.upload(src);
  const out = ctx.storage(c.W * c.rows * 4, 'out');
  const mpx = (c.W * c.rows) / 1e6;
  const time = async (mode: WarpGpuOptions['lanczosShape'], reps: number) => {
    const ms: number[] = [];
    for (let i = 0; i < reps + 1; i++) {
      const t0 = performance.now();
      const e = ctx.device.createCommandEncoder();
      await warpLanczos3Resident(ctx, input, out, base, e, { lanczosShape: mode });
      ctx.submit(e);
      await ctx.done();
      if (i > 0) ms.push(performance.now() - t0);
    }
    return Math.min(...ms);
  };
  const a: number[] = [];
  const b: number[] = [];
  for (let r = 0; r < rounds; r++) {
    a.push(await time('2d', 3));
    b.push(await time('separable', 3));
  }
  const med = (v: number[]) => [...v].sort((x, y) => x - y)[Math.floor(v.length / 2)]!;
  console.log(`${c.name}: 2-D ${a.map((v) => v.toFixed(1)).join('/')} ms (median ${(med(a) / mpx).toFixed(1)} ms/Mpx); separable ${b.map((v) => v.toFixed(1)).join('/')} ms (median ${(med(b) / mpx).toFixed(1)} ms/Mpx); ratio ${(med(b) / med(a)).toFixed(2)}`);
  if (ts) {
    const t0 = performance.now();
    warpLanczos3(src, base);
    const t1 = performance.now();
    warpLanczos3Separable(src, base);
    const t2 = performance.now();
    console.log(`  TypeScript: 2-D ${((t1 - t0) / mpx).toFixed(1)} ms/Mpx, separable reference ${((t2 - t1) / mpx).toFixed(1)} ms/Mpx`);
  }
  ctx.pool.release(input);
  ctx.pool.release(out);
}
console.log(`# load after ${(await import('node:fs')).readFileSync('/proc/loadavg', 'utf8').trim()}`);
ctx.destroy();
