// STACKING's band streaming, device paths and failure handling on a generated OSC set (10 frames
// 320×240, per-frame and final cosmetic correction on, so every halo is exercised): a tiny memory
// budget forces several bands and gives exactly the one-band image; the TypeScript path agrees
// with the device path; a budget below the smallest band is a budget_error; cancellation during
// the band loop closes the run as cancelled with a report; frames without usable registration
// are excluded; no stackable frame is no_frames.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { access, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { EventLine } from '../../src/pipeline/events.js';
import { stackingOptions } from '../../src/pipeline/rawstack/phases/stacking.js';
import { ok, type Phase } from '../../src/pipeline/phase.js';
import type { RawStackState } from '../../src/pipeline/rawstack/state.js';
import { config, defaultExclusion, makeDataset, runStack, stackingEnd, type Dataset, type StackRun } from './stacking-helpers.js';

let root = '';
let ds: Dataset;
let oneBand: StackRun;
const cosmetic = { stacking: { per_frame_cosmetic_correction: true, cosmetic_correction: true } };
const runsDir = () => join(root, 'runs');
const lights = () => join(ds.dir, 'lights');

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-stacking-bands-'));
  ds = await makeDataset(join(root, 'data'), { kind: 'osc', pattern: 'GRBG', frames: 10, width: 320, height: 240, seed: 21, badFrames: 'auto', starDensity: 10000 });
  oneBand = await runStack(ds, runsDir(), config(lights(), cosmetic));
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

function compare(a: Float32Array, b: Float32Array): { maxAbs: number; differing: number; nanMismatch: number } {
  let maxAbs = 0;
  let differing = 0;
  let nanMismatch = 0;
  for (let i = 0; i < a.length; i++) {
    const x = a[i]!;
    const y = b[i]!;
    if (Number.isNaN(x) || Number.isNaN(y)) {
      if (Number.isNaN(x) !== Number.isNaN(y)) nanMismatch++;
      continue;
    }
    const d = Math.abs(x - y);
    if (d > 0) differing++;
    if (d > maxAbs) maxAbs = d;
  }
  return { maxAbs, differing, nanMismatch };
}

test('bands: one band for the default budget; a tiny budget forces several bands and gives the same image', async () => {
  assert.is(oneBand.result.status, 'ok');
  assert.is(oneBand.diagnostics!.band_plan.bands, 1);
  assert.ok(oneBand.diagnostics!.cosmetic.per_frame.hot > 0, 'per-frame cosmetic correction replaced hot pixels');
  assert.ok(oneBand.diagnostics!.cosmetic.final !== null);
  const tiny = await runStack(ds, runsDir(), config(lights(), cosmetic, 3));
  assert.is(tiny.result.status, 'ok');
  const plan = tiny.diagnostics!.band_plan;
  assert.ok(plan.bands >= 4, `${plan.bands} bands`);
  assert.is(plan.limited_by, 'budget');
  assert.ok(plan.bytes_per_band + plan.scratch_bytes <= 3 * 1024 * 1024, `${plan.bytes_per_band} + ${plan.scratch_bytes} bytes`);
  if (plan.device_pool_peak_bytes !== null) assert.ok(plan.device_pool_peak_bytes <= 3 * 1024 * 1024, `device pool peak ${plan.device_pool_peak_bytes}`);
  assert.is(plan.halo_rows, 2);
  // Bands tile the image.
  let next = 0;
  for (const [y0, rows] of plan.bands_rows as [number, number][]) {
    assert.is(y0, next);
    next += rows;
  }
  assert.is(next, 240);
  const c = compare(tiny.image!.data, oneBand.image!.data);
  assert.is(c.nanMismatch, 0);
  assert.is(c.maxAbs, 0, `max difference ${c.maxAbs} on ${c.differing} samples`);
  // Tallies are exact across bands too.
  assert.equal(tiny.diagnostics!.samples, oneBand.diagnostics!.samples);
  assert.equal(
    tiny.diagnostics!.frames.map((f: { rejected: unknown }) => f.rejected),
    oneBand.diagnostics!.frames.map((f: { rejected: unknown }) => f.rejected),
  );
});

test('bands: superpixel with cosmetic correction, tiny budget = one band', async () => {
  const sp = { ...cosmetic, cfa_mode: 'superpixel' as const };
  const one = await runStack(ds, runsDir(), config(lights(), sp));
  const tiny = await runStack(ds, runsDir(), config(lights(), sp, 2));
  assert.is(tiny.result.status, 'ok', String(stackingEnd(tiny.events)?.message));
  assert.is(one.diagnostics!.band_plan.bands, 1);
  assert.ok(tiny.diagnostics!.band_plan.bands >= 3, `${tiny.diagnostics!.band_plan.bands} bands`);
  assert.equal([tiny.image!.width, tiny.image!.height], [160, 120]);
  const c = compare(tiny.image!.data, one.image!.data);
  assert.is(c.nanMismatch, 0);
  assert.is(c.maxAbs, 0);
  assert.equal(tiny.diagnostics!.samples, one.diagnostics!.samples);
});

test('bands: the WGSL pre-mask (hardware-GPU path, forced here) gives the TypeScript pre-mask image exactly', async () => {
  if (oneBand.diagnostics!.device.paths.stack === 'typescript-workers') return; // no adapter: nothing to compare
  // The WGSL pre-mask has the samples'-spread seed bound only (with the noise model the pre-mask
  // stays on the host whatever is forced): both runs with rejection.bounds sample.
  const sample = { ...cosmetic, rejection: { bounds: 'sample' as const } };
  const host = await runStack(ds, runsDir(), config(lights(), sample));
  assert.is(host.diagnostics!.device.paths.premask, 'typescript-workers');
  stackingOptions.premaskOnDevice = true;
  try {
    const dev = await runStack(ds, runsDir(), config(lights(), sample, 3));
    assert.is(dev.result.status, 'ok');
    assert.not.equal(dev.diagnostics!.device.paths.premask, 'typescript-workers');
    const c = compare(dev.image!.data, host.image!.data);
    assert.is(c.nanMismatch, 0);
    assert.is(c.maxAbs, 0, `max difference ${c.maxAbs} on ${c.differing} samples`);
    assert.equal(dev.diagnostics!.samples, host.diagnostics!.samples);
  } finally {
    stackingOptions.premaskOnDevice = null;
  }
});

test('bands: the WGSL pre-mask with the noise-model seed bound (the default bounds; forced here) gives the TypeScript pre-mask image up to samples at a bound', async () => {
  if (oneBand.diagnostics!.device.paths.stack === 'typescript-workers') return; // no adapter: nothing to compare
  assert.is(oneBand.diagnostics!.parameters.premask.seeds, 'noise_model');
  assert.is(oneBand.diagnostics!.device.paths.premask, 'typescript-workers');
  stackingOptions.premaskOnDevice = true;
  try {
    const dev = await runStack(ds, runsDir(), config(lights(), cosmetic, 3));
    assert.is(dev.result.status, 'ok', String(stackingEnd(dev.events)?.message));
    assert.not.equal(dev.diagnostics!.device.paths.premask, 'typescript-workers');
    assert.is(dev.diagnostics!.parameters.premask.seeds, 'noise_model');
    // τ is f32 on the device and f64 on the host: a sample within rounding distance of its bound
    // may be flagged by one only (and grown around when strong). Allow a few such pixels.
    const want = oneBand.diagnostics!.samples.premasked;
    const got = dev.diagnostics!.samples.premasked;
    assert.ok(want > 8, `${want} pre-masked samples`);
    assert.ok(Math.abs(got - want) <= Math.max(2, 1e-3 * want), `pre-masked ${got} on the device, ${want} on the host`);
    const c = compare(dev.image!.data, oneBand.image!.data);
    assert.is(c.nanMismatch, 0);
    assert.ok(c.differing <= 1e-4 * dev.image!.data.length + 25, `${c.differing} pixels differ (max ${c.maxAbs})`);
  } finally {
    stackingOptions.premaskOnDevice = null;
  }
});

test('bands: the host pre-mask beside a device stack gives the same image whether it sends the masked samples as an index list or uploads the band', async () => {
  if (oneBand.diagnostics!.device.paths.stack === 'typescript-workers' || oneBand.diagnostics!.device.paths.premask !== 'typescript-workers') return; // not that path here
  assert.ok(oneBand.diagnostics!.samples.premasked > 8, `${oneBand.diagnostics!.samples.premasked} pre-masked samples`);
  stackingOptions.premaskIndexCapacity = 8; // fewer than are masked: every band takes the whole-band upload
  try {
    const full = await runStack(ds, runsDir(), config(lights(), cosmetic, 3));
    assert.is(full.result.status, 'ok');
    const c = compare(full.image!.data, oneBand.image!.data);
    assert.is(c.nanMismatch, 0);
    assert.is(c.maxAbs, 0, `max difference ${c.maxAbs} on ${c.differing} samples`);
    assert.equal(full.diagnostics!.samples, oneBand.diagnostics!.samples);
  } finally {
    stackingOptions.premaskIndexCapacity = null;
  }
});

/** A run's image, sample tallies and per-frame rejections are exactly the one-band run's. */
function assertLikeOneBand(run: StackRun, label: string): void {
  assert.is(run.result.status, 'ok', label);
  const c = compare(run.image!.data, oneBand.image!.data);
  assert.is(c.nanMismatch, 0, label);
  assert.is(c.maxAbs, 0, `${label}: max difference ${c.maxAbs} on ${c.differing} samples`);
  assert.equal(run.diagnostics!.samples, oneBand.diagnostics!.samples);
  assert.equal(
    run.diagnostics!.frames.map((f: { rejected: unknown }) => f.rejected),
    oneBand.diagnostics!.frames.map((f: { rejected: unknown }) => f.rejected),
  );
}

/**
 * The host pre-mask in row chunks of each [rows, index capacity] (null: the default), or in
 * column windows of each [`${cols} cols`, capacity], in one band and in several.
 */
async function assertChunkedLikeOneBand(variants: readonly (readonly [number | `${number} cols` | null, number | null])[], label: string): Promise<void> {
  try {
    for (const [shape, capacity] of variants) {
      const cols = typeof shape === 'string' ? Number.parseInt(shape, 10) : null;
      stackingOptions.premaskChunkRows = typeof shape === 'number' ? shape : null;
      stackingOptions.premaskChunkCols = cols;
      stackingOptions.premaskIndexCapacity = capacity;
      for (const budget of [undefined, 3]) {
        const run = await runStack(ds, runsDir(), config(lights(), cosmetic, budget));
        assertLikeOneBand(run, `${label}, chunks of ${shape ?? 'default'} rows, capacity ${capacity}, budget ${budget}`);
        const chunks = run.diagnostics!.band_plan.premask_chunks;
        if (cols) assert.equal(chunks, { cols }, 'column windows');
        else assert.ok(chunks.rows > 0 && (typeof shape !== 'number' || chunks.rows <= shape), `row chunks ${JSON.stringify(chunks)}`);
      }
    }
  } finally {
    stackingOptions.premaskChunkRows = null;
    stackingOptions.premaskChunkCols = null;
    stackingOptions.premaskIndexCapacity = null;
  }
}

test('bands: the host pre-mask beside a device stack gives the same image when it masks each band in row chunks (with and without index-list overflow)', async () => {
  if (oneBand.diagnostics!.device.paths.stack === 'typescript-workers' || oneBand.diagnostics!.device.paths.premask !== 'typescript-workers') return; // not that path here
  await assertChunkedLikeOneBand([[5, null], [16, null], [7, 8], ['37 cols', null], ['100 cols', 8]], 'device median');
});

test('bands: the host pre-mask beside a device stack gives the same image when it takes the median on the host (many frames), in chunks and with index-list overflow', async () => {
  if (oneBand.diagnostics!.device.paths.stack === 'typescript-workers' || oneBand.diagnostics!.device.paths.premask !== 'typescript-workers') return; // not that path here
  stackingOptions.premaskHostMedianFrames = 0; // every frame count takes the host median
  try {
    await assertChunkedLikeOneBand([[null, null], [5, null], [7, 8], ['37 cols', null], ['32 cols', 8]], 'host median');
  } finally {
    stackingOptions.premaskHostMedianFrames = null;
  }
});

test('bands: a channel\'s slots over several storage bindings (frame ranges, forced by a small binding size) give the one-band image, tallies included', async () => {
  if (oneBand.diagnostics!.device.paths.stack === 'typescript-workers') return; // no device stack here
  // 256 KiB holds 20 rows of 10 frames x 320 px x 4 B: one binding would allow 16-row bands (less
  // the pre-mask halo); counted as frame ranges the plan takes far taller ones.
  const maxBindingBytes = 256 * 1024;
  stackingOptions.maxBindingBytes = maxBindingBytes;
  try {
    const run = await runStack(ds, runsDir(), config(lights(), cosmetic));
    assert.is(run.result.status, 'ok');
    const plan = run.diagnostics!.band_plan;
    assert.is(plan.limited_by, 'binding');
    const perFrame = (plan.rows_per_band + 2 * plan.halo_rows) * 320 * 4;
    assert.ok(10 * perFrame > 2 * maxBindingBytes, `${plan.rows_per_band}-row bands need several bindings per channel`);
    assertLikeOneBand(run, 'frame ranges');
  } finally {
    stackingOptions.maxBindingBytes = null;
  }
});

test('bands: the TypeScript path (worker pool) gives the device path image, in one band or several', async () => {
  const ts = await runStack(ds, runsDir(), config(lights(), cosmetic), { device: 'cpu' });
  assert.is(ts.result.status, 'ok');
  assert.is(ts.diagnostics!.device.paths.stack, 'typescript-workers');
  assert.is(ts.diagnostics!.device.paths.warp, 'typescript-workers');
  const tsTiny = await runStack(ds, runsDir(), config(lights(), { ...cosmetic, runtime_limits: { parallel_workers: 1 } }, 3), { device: 'cpu' });
  assert.is(tsTiny.diagnostics!.device.paths.stack, 'typescript');
  const same = compare(tsTiny.image!.data, ts.image!.data);
  assert.is(same.maxAbs, 0, `TS one band vs TS bands: ${same.maxAbs}`);
  if (oneBand.diagnostics!.device.paths.stack !== 'typescript-workers') {
    // f32 device arithmetic vs f64 TypeScript: equal up to rounding, except where a sample sits
    // on a rejection bound (rare).
    const c = compare(ts.image!.data, oneBand.image!.data);
    assert.is(c.nanMismatch, 0);
    let close = 0;
    const a = ts.image!.data;
    const b = oneBand.image!.data;
    for (let i = 0; i < a.length; i++) if (Math.abs(a[i]! - b[i]!) <= 1e-3 * Math.max(1, Math.abs(b[i]!))) close++;
    assert.ok(close / a.length > 0.999, `${a.length - close} of ${a.length} samples differ by more than 1e-3`);
  }
});

test('bands: a budget below the smallest band is a budget_error naming the budget', async () => {
  const r = await runStack(ds, runsDir(), config(lights(), {}, 1));
  assert.is(r.result.status, 'error');
  const end = stackingEnd(r.events)!;
  assert.is(end.status, 'error');
  assert.is(end.reason, 'budget_error');
  assert.match(String(end.message), /runtime_limits\.memory_budget/);
  assert.is(r.image, null);
  await access(join(r.result.runDir, 'artifacts/preprocess/preprocessing_report.json'));
});

test('bands: cancelling during the band loop ends STACKING cancelled, REPORT still runs', async () => {
  const controller = new AbortController();
  let abortedAt = -1;
  const r = await runStack(ds, runsDir(), config(lights(), {}, 3), {
    signal: controller.signal,
    onEvent: (l: EventLine) => {
      if (abortedAt < 0 && l.type === 'phase_progress' && l.phase === 'STACKING' && l.current >= 1) {
        abortedAt = l.seq;
        controller.abort();
      }
    },
  });
  assert.ok(abortedAt > 0, 'a band progress event arrived');
  assert.is(r.result.status, 'cancelled');
  const end = stackingEnd(r.events)!;
  assert.is(end.status, 'error');
  assert.is(end.reason, 'cancelled');
  const last = r.events[r.events.length - 1]!;
  assert.is(last.type, 'run_end');
  assert.is((last as Extract<EventLine, { type: 'run_end' }>).status, 'cancelled');
  const report = r.events.find((l) => l.type === 'phase_end' && l.phase === 'REPORT') as Extract<EventLine, { type: 'phase_end' }>;
  assert.is(report.status, 'ok');
  await access(join(r.result.runDir, 'artifacts/preprocess/preprocessing_report.json'));
  assert.is(r.result.outputs.stacked_rgb, undefined);
  // Cancelled promptly: no band finished after the abort was seen.
  const bandsAfter = r.events.filter((l) => l.seq > abortedAt && l.type === 'phase_progress' && l.phase === 'STACKING' && l.substep === 'bands');
  assert.ok(bandsAfter.length <= 1, `${bandsAfter.length} band events after the abort`);
});

test('a lost GPU device ends STACKING with device_error', async () => {
  if (oneBand.diagnostics!.device.paths.stack === 'typescript-workers') return; // no adapter here
  const lose: Phase<RawStackState> = {
    name: 'QUALITY_ANALYSIS',
    optional: false,
    async run(ctx) {
      ctx.state.gpu?.device.destroy();
      await new Promise((r) => setTimeout(r, 50));
      return ok();
    },
  };
  const r = await runStack(ds, runsDir(), config(lights()), { before: [lose] });
  assert.is(r.result.status, 'error');
  const end = stackingEnd(r.events)!;
  assert.is(end.reason, 'device_error', String(end.message));
});

test('frames: no usable registration matrix → excluded (registration_failed); nothing left → no_frames', async () => {
  const victim = ds.truth.frames.find((f) => f.index > 0 && defaultExclusion(f) === null)!;
  const r = await runStack(ds, runsDir(), config(lights()), {
    truth: { exclude: defaultExclusion },
    onEvent: () => undefined,
  });
  assert.is(r.result.status, 'ok');
  // A frame whose matrix is missing while the others have one.
  const broken = await runStack(ds, runsDir(), config(lights()), { truth: { exclude: defaultExclusion, dropMatrix: victim.index } });
  assert.is(broken.result.status, 'ok');
  assert.is(broken.diagnostics!.frames_used, r.diagnostics!.frames_used - 1);
  const ev = broken.events.find((l) => l.type === 'frame' && l.phase === 'STACKING' && l.index === victim.index) as Extract<EventLine, { type: 'frame' }>;
  assert.is(ev.outcome, 'excluded');
  assert.is(ev.code, 'registration_failed');
  const none = await runStack(ds, runsDir(), config(lights()), { truth: { exclude: () => 'manual' } });
  assert.is(none.result.status, 'error');
  const end = stackingEnd(none.events)!;
  assert.is(end.reason, 'no_frames');
});

test.run();
