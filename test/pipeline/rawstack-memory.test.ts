// Memory-flat streaming (issue 6), the light CI version of `npm run bench -- rawstack-memory`:
// two whole Raw Stack runs (mono, bias/darks/flats, memory_budget 64 MiB, postprocess off), each
// in its own child process (bench/rawstack-child.ts), on 10 and 40 frames of 1024×768. Peak RSS
// must not grow with the frame count: the 40-frame run stays within 15 % (and 48 MiB) of the
// 10-frame one. The frames are large enough that both runs fill the budget (STACKING's band of
// all frames) and pass the worker pool's collection threshold; with tiny frames the 10-frame
// run would simply use less of the budget (measured on 320×240: 270 vs 325 MiB, legitimately).
// The bench records the bar itself (30 vs 120 frames, 1000 frames) in bench/RESULTS.md.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { benchConfig, ensureData, runChild, type ChildResult, type DataSpec } from '../../bench/rawstack-data.js';
import { withTempDir } from '../helpers/tmp.js';

test('peak RSS of 40 frames within 15 % of 10 frames (memory_budget 64 MiB)', async () => {
  await withTempDir('memflat', async (dir) => {
    const results: ChildResult[] = [];
    for (const frames of [10, 40]) {
      const spec: DataSpec = { frames, width: 1024, height: 768, seed: 31, calibration: true };
      const data = await ensureData(dir, spec, () => undefined);
      results.push(await runChild(benchConfig(data, true, 64, spec), join(dir, 'runs')));
    }
    const [few, many] = results as [ChildResult, ChildResult];
    const stacked = (r: ChildResult) => r.phases.find((p) => p.phase === 'STACKING')?.status;
    assert.is(stacked(few), 'ok');
    assert.is(stacked(many), 'ok');
    const ratio = many.max_rss_mib / few.max_rss_mib;
    console.log(`  [memory] peak RSS 10 frames ${few.max_rss_mib.toFixed(0)} MiB, 40 frames ${many.max_rss_mib.toFixed(0)} MiB (ratio ${ratio.toFixed(3)}, ${many.device})`);
    assert.ok(ratio <= 1.15, `40 frames peak ${many.max_rss_mib.toFixed(0)} MiB vs 10 frames ${few.max_rss_mib.toFixed(0)} MiB`);
    assert.ok(many.max_rss_mib - few.max_rss_mib <= 48, `grew by ${(many.max_rss_mib - few.max_rss_mib).toFixed(0)} MiB`);
  });
});

test.run();
