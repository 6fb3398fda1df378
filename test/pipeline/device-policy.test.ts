// Kernel placement (src/pipeline/device-policy.ts), decided in one place: per kernel family by
// device kind, the stack kernel's frame limit, and STACKING's band chain (debayer only beside a
// device warp and never for superpixel cells, the WGSL pre-mask only on a hardware GPU with a
// device stack). Contexts are stand-ins: the policy reads only the device kind and the limits.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { gpuFor, stackContextFor, stackingPlacement, withStackOnHost } from '../../src/pipeline/device-policy.js';
import type { GpuContext } from '../../src/gpu/context.js';
import { maxStackFrames } from '../../src/gpu/kernels/stack.js';

const limits = { maxUniformBufferBindingSize: 65536, maxComputeWorkgroupStorageSize: 16384 } as GPUSupportedLimits;
const device = (kind: 'gpu' | 'software') => ({ info: { kind }, limits }) as unknown as GpuContext;
const hw = device('gpu');
const sw = device('software');
const MAX = maxStackFrames(limits);

test('per family: everything on a GPU, only stack and Lanczos on a software adapter, nothing without one', () => {
  const families = ['stack', 'warp_lanczos3', 'warp_bilinear', 'debayer', 'calibrate', 'stats', 'stretch', 'decode'] as const;
  assert.equal(families.map((f) => gpuFor(hw, f) === hw), families.map(() => true));
  assert.equal(families.filter((f) => gpuFor(sw, f) === sw), ['stack', 'warp_lanczos3']);
  assert.equal(families.map((f) => gpuFor(null, f)), families.map(() => null));
  // The tiled workflow's kernels: WGSL on a hardware GPU only.
  assert.equal([gpuFor(hw, 'tile_metrics'), gpuFor(hw, 'stack_weightfield'), gpuFor(sw, 'tile_metrics'), gpuFor(sw, 'stack_weightfield')], [hw, hw, null, null]);
});

test('the stack kernel takes at most maxStackFrames frames in one dispatch', () => {
  assert.is(stackContextFor(hw, MAX), hw);
  assert.is(stackContextFor(hw, MAX + 1), null);
  assert.is(stackContextFor(null, 3), null);
});

test("STACKING's chain: device debayer only feeds a device warp, never superpixel; WGSL pre-mask only on a hardware GPU", () => {
  const gpuOsc = stackingPlacement(hw, { frames: 20, osc: true, superpixel: false, kernel: 'lanczos3' });
  assert.equal([gpuOsc.debayer, gpuOsc.warp, gpuOsc.stack, gpuOsc.premaskOnDevice, gpuOsc.stackOnHost], [hw, hw, hw, true, null]);
  assert.is(stackingPlacement(hw, { frames: 20, osc: true, superpixel: true, kernel: 'lanczos3' }).debayer, null);
  assert.is(stackingPlacement(hw, { frames: 20, osc: false, superpixel: false, kernel: 'lanczos3' }).debayer, null);
  const soft = stackingPlacement(sw, { frames: 20, osc: true, superpixel: false, kernel: 'lanczos3' });
  assert.equal([soft.debayer, soft.warp, soft.stack, soft.premaskOnDevice], [null, sw, sw, false]);
  // Bilinear warps in TypeScript on a software adapter, so its debayer does too.
  const softBilinear = stackingPlacement(sw, { frames: 20, osc: true, superpixel: false, kernel: 'bilinear' });
  assert.equal([softBilinear.debayer, softBilinear.warp, softBilinear.stack], [null, null, sw]);
  // Tests may force the pre-mask's side, but never onto a device without a device stack.
  assert.is(stackingPlacement(sw, { frames: 20, osc: false, superpixel: false, kernel: 'lanczos3', premaskOnDevice: true }).premaskOnDevice, true);
  assert.is(stackingPlacement(null, { frames: 20, osc: false, superpixel: false, kernel: 'lanczos3', premaskOnDevice: true }).premaskOnDevice, false);
  // The WGSL pre-mask has the noise-model seed bound too: with it (the default) the pre-mask runs on a hardware GPU, and where forced.
  assert.is(stackingPlacement(hw, { frames: 20, osc: false, superpixel: false, kernel: 'lanczos3', noiseModel: true }).premaskOnDevice, true);
  assert.is(stackingPlacement(sw, { frames: 20, osc: false, superpixel: false, kernel: 'lanczos3', premaskOnDevice: true, noiseModel: true }).premaskOnDevice, true);
  assert.is(stackingPlacement(sw, { frames: 20, osc: false, superpixel: false, kernel: 'lanczos3', noiseModel: true }).premaskOnDevice, false);
  assert.is(stackingPlacement(hw, { frames: 20, osc: false, superpixel: false, kernel: 'lanczos3', noiseModel: true }).stack, hw);
});

test('too many frames or a band plan too wide for a binding: the stack and the pre-mask move to TypeScript, with the reason', () => {
  const many = stackingPlacement(hw, { frames: MAX + 1, osc: true, superpixel: false, kernel: 'lanczos3' });
  assert.equal([many.stack, many.premaskOnDevice, many.warp, many.debayer], [null, false, hw, hw]);
  assert.match(many.stackOnHost!, `${MAX + 1} frames exceed what one stack dispatch takes (${MAX})`);
  const wide = withStackOnHost(stackingPlacement(hw, { frames: 20, osc: false, superpixel: false, kernel: 'lanczos3' }), 'binding');
  assert.equal([wide.stack, wide.premaskOnDevice, wide.warp, wide.stackOnHost], [null, false, hw, 'binding']);
});

test.run();
