// Memory-flat streaming (issue 6), the light CI version of `npm run bench -- rawstack-memory`:
// two whole Raw Stack runs (mono, bias/darks/flats, memory_budget 64 MiB, postprocess off), each
// in its own child process (bench/rawstack-child.ts) with the README's malloc settings, on 6 and
// 24 frames of 2048×1536. Peak RSS must not grow with the frame count.
// Why these sizes and this bound: a run's peak scatters by tens of MiB with GC timing, glibc and
// llvmpipe (growth of 12–87 MiB was measured between 10 and 40 frames of 1024×768 on a busy
// machine), while the failure this guards against — frames kept alive — costs 12 MiB per
// 2048×1536 calibrated frame, 216 MiB for the 18 extra frames here. So growth must stay under
// 120 MiB: well above the scatter, well below a leak. The 15 % bar (30 vs 120 frames of
// 1024×768, and the 1000-frame run) is measured by the bench and recorded in bench/RESULTS.md.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { benchConfig, ensureData, runChild, type ChildResult, type DataSpec } from '../../bench/rawstack-data.js';
import { MALLOC_TUNING } from '../../bench/rawstack.js';
import { withTempDir } from '../helpers/tmp.js';

test('peak RSS of 24 frames within 120 MiB of 6 frames at 2048×1536 (memory_budget 64 MiB)', async () => {
  await withTempDir('memflat', async (dir) => {
    const results: ChildResult[] = [];
    for (const frames of [6, 24]) {
      const spec: DataSpec = { frames, width: 2048, height: 1536, seed: 31, calibration: true };
      const data = await ensureData(dir, spec, () => undefined);
      results.push(await runChild(benchConfig(data, true, 64, spec), join(dir, 'runs'), MALLOC_TUNING));
    }
    const [few, many] = results as [ChildResult, ChildResult];
    const stacked = (r: ChildResult) => r.phases.find((p) => p.phase === 'STACKING')?.status;
    assert.is(stacked(few), 'ok');
    assert.is(stacked(many), 'ok');
    const ratio = many.max_rss_mib / few.max_rss_mib;
    console.log(`  [memory] peak RSS 6 frames ${few.max_rss_mib.toFixed(0)} MiB, 24 frames ${many.max_rss_mib.toFixed(0)} MiB (ratio ${ratio.toFixed(3)}, ${many.device})`);
    assert.ok(many.max_rss_mib - few.max_rss_mib <= 120, `grew by ${(many.max_rss_mib - few.max_rss_mib).toFixed(0)} MiB`);
  });
});

test.run();
