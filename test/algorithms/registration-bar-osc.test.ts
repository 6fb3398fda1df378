// Issue 4's registration bar on a osc set (see registration-bar.ts): 30 frames of
// 2048×1536 with rotations up to 2° and a meridian flip, real star detection, median error
// ≤ 0.01 px and max ≤ 0.05 px over the good frames, registration_cc ≥ 0.9 for them.

import { test } from 'uvu';
import { checkBar, runBar } from './registration-bar.js';

test('osc: 30 frames, ±2° and a meridian flip: median ≤ 0.01 px, max ≤ 0.05 px over good frames', async () => {
  checkBar('osc', await runBar('osc', 4));
});

test.run();
