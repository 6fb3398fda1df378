// GPU test helpers: one shared device per test process (SKYSTACK_DEVICE picks the path), a
// `gpuTest` that is skipped — with the reason printed once — where no adapter exists, and
// tolerance comparison of GPU output with the TypeScript reference.
import { test } from 'uvu';
import { sharedGpu } from '../../src/gpu/context.js';

export const gpu = await sharedGpu();

let announced = false;
function announce(): void {
  if (announced) return;
  announced = true;
  const { info } = gpu;
  if (gpu.ctx) console.log(`  [gpu] kernel tests run on device path "${info.kind}" (${info.adapter}, ${info.backend}, ${info.featureLevel})`);
  else console.log(`  [gpu] GPU-differential tests SKIPPED: ${info.fallbackReason ?? 'no adapter'}`);
}
announce();

/** A test that needs a device; skipped (and counted as skipped) without one. */
export const gpuTest: typeof test = (gpu.ctx ? test : test.skip) as typeof test;

export interface Difference {
  maxAbs: number;
  maxRel: number;
  worstIndex: number;
  /** Positions where exactly one side is NaN. */
  nanMismatches: number;
}

/** Element-wise comparison; NaN equals NaN. */
export function compareArrays(got: ArrayLike<number>, want: ArrayLike<number>): Difference {
  let maxAbs = 0;
  let maxRel = 0;
  let worstIndex = -1;
  let nanMismatches = 0;
  if (got.length !== want.length) throw new Error(`length ${got.length} != ${want.length}`);
  for (let i = 0; i < got.length; i++) {
    const a = got[i]!;
    const b = want[i]!;
    if (Number.isNaN(a) || Number.isNaN(b)) {
      if (Number.isNaN(a) !== Number.isNaN(b)) nanMismatches++;
      continue;
    }
    const d = Math.abs(a - b);
    if (d > maxAbs) {
      maxAbs = d;
      worstIndex = i;
    }
    const r = d / Math.max(Math.abs(b), 1e-30);
    if (r > maxRel) maxRel = r;
  }
  return { maxAbs, maxRel, worstIndex, nanMismatches };
}
