// Run queue (issue 6 item 1 and its bar): an LRGB session from the fixture generator (four mono
// filters of one sky, per-filter pointings and rotations, 6 frames each, 384×288) plus an
// inactive entry, through the whole Raw Stack pipeline: one common reference (an L frame), a
// stack per filter, stacked_linear = L, stacked_rgb composed from R, G, B, and star centroids of
// every channel at the truth positions and at each other's within 0.05 px. Also: the queue in
// the reports and run_queue.json, the filter column of frame_quality.csv, OSC entries becoming
// filter OSC, mixed colour modes and an all-inactive queue refused.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { applyAffine, generateDataset, type Truth } from '../../fixtures/generator/index.js';
import { generateLrgb, type LrgbSet } from '../../fixtures/generator/lrgb.js';
import { parseRawStackConfig, type RawStackConfigInput } from '../../src/config/rawstack.js';
import { readFitsImage } from '../../src/fits/index.js';
import type { EventLine } from '../../src/pipeline/events.js';
import { runRawStack, type RawStackRunResult } from '../../src/pipeline/rawstack/run.js';
import { checkPositions, plane, type PositionCheck } from './stacking-helpers.js';

const FILTERS = ['L', 'R', 'G', 'B'] as const;
const OFF = { astrometry: false, bge: false, pcc: false, hypermetric_stretch: false };

let root = '';
let lrgb: LrgbSet;
let run: RawStackRunResult;
const events: EventLine[] = [];

function configOf(input: RawStackConfigInput) {
  const r = parseRawStackConfig({ postprocess: OFF, ...input });
  if (!r.ok) throw new Error(JSON.stringify(r.issues));
  return r.config;
}

const art = (name: string) => join(run.runDir, 'artifacts/preprocess', name);

test.before(async () => {
  root = await mkdtemp(join(tmpdir(), 'skystack-queue-'));
  lrgb = await generateLrgb(join(root, 'lrgb'), { frames: 6, width: 384, height: 288, seed: 5, calibration: false, badFrames: 'none', starDensity: 9000 });
  const queue = [
    ...FILTERS.map((f) => ({ filter: f, input_dir: join(lrgb.dirs[f], 'lights'), label: `${f} night 1` })),
    { filter: 'Ha', input_dir: join(root, 'no-such-folder'), active: false },
  ];
  run = await runRawStack(configOf({ queue }), { runsDir: join(root, 'runs'), onEvent: (l) => events.push(l) });
});

test.after(async () => {
  await rm(root, { recursive: true, force: true });
});

test('LRGB queue: run ok, a stack per filter, stacked_linear = L, stacked_rgb composed from R, G, B', async () => {
  assert.is(run.status, 'ok', JSON.stringify(run.phases));
  for (const f of FILTERS) {
    const img = await readFitsImage(join(run.runDir, `outputs/stacked_${f}.fits`));
    assert.equal([img.width, img.height, img.planes], [384, 288, 1], f);
    assert.is(img.header.getNumber('NCOMBINE'), 6, f);
    assert.is(img.header.getString('FILTER'), f, `${f}: the group reference's header`);
  }
  const [linear, l] = await Promise.all([readFile(run.outputs.stacked_linear!), readFile(join(run.runDir, 'outputs/stacked_L.fits'))]);
  assert.ok(linear.equals(l), 'stacked_linear.fits is the L stack');
  const rgb = await readFitsImage(run.outputs.stacked_rgb!);
  assert.equal([rgb.width, rgb.height, rgb.planes], [384, 288, 3]);
  assert.not.ok(rgb.header.has('FILTER'));
  assert.is(rgb.header.getNumber('NCOMBINE'), 18);
  for (const [c, f] of ['R', 'G', 'B'].entries()) {
    const single = await readFitsImage(join(run.runDir, `outputs/stacked_${f}.fits`));
    assert.ok(plane(rgb, c).every((v, i) => Object.is(v, single.data[i]!)), `plane ${c} is the ${f} stack`);
  }
  const diag = JSON.parse(await readFile(art('stacking_diagnostics.json'), 'utf8'));
  assert.equal(diag.filters, FILTERS);
  assert.is(diag.frames_used, 24);
  assert.is(diag.rgb_composition.method, 'composed');
  for (const f of FILTERS) assert.is(diag.per_filter[f].frames_used, 6);
});

test('LRGB queue: one common reference, an L frame; every frame registered onto it', async () => {
  const end = events.find((l) => l.type === 'phase_end' && l.phase === 'REFERENCE_SELECTION') as Record<string, any>;
  assert.is(end.reference_filter, 'L');
  assert.is(end.filter, 'L');
  const diag = JSON.parse(await readFile(art('stacking_diagnostics.json'), 'utf8'));
  assert.is(diag.reference.filter, 'L');
  assert.is(diag.reference.index, end.reference_index);
  const reg = events.find((l) => l.type === 'phase_end' && l.phase === 'REGISTRATION') as Record<string, any>;
  assert.is(reg.n_registered, 24);
  // Each filter's stack is normalised to its own group reference (the L one: the common reference).
  assert.is(diag.per_filter.L.reference.index, end.reference_index);
  for (const f of ['R', 'G', 'B']) assert.ok(diag.per_filter[f].reference.index >= 6, `${f} normalises to one of its own frames`);
});

/** Truth with the stars moved into the common reference frame's pixel grid. */
function inReference(truth: Truth, refTransform: Truth['frames'][number]['transform']): Truth {
  return { ...truth, stars: truth.stars.map((s) => ({ ...s, ...xy(applyAffine(refTransform, s.x, s.y)) })) };
}
const xy = ([x, y]: [number, number]) => ({ x, y });

test('LRGB queue: star centroids of L, R, G, B at the truth and at each other within 0.05 px', async () => {
  const diag = JSON.parse(await readFile(art('stacking_diagnostics.json'), 'utf8'));
  const refFile: string = diag.reference.file;
  const refTruth = lrgb.truths.L.frames.find((f) => basename(f.file) === refFile)!;
  const rgb = await readFitsImage(run.outputs.stacked_rgb!);
  const linear = await readFitsImage(run.outputs.stacked_linear!);
  const channels: Record<string, Float32Array> = { L: plane(linear, 0), R: plane(rgb, 0), G: plane(rgb, 1), B: plane(rgb, 2) };
  const checks: Record<string, PositionCheck> = {};
  for (const f of FILTERS) {
    // Same sky in every filter: the L truth's stars (positions are the catalogue's) with this filter's fluxes.
    const truth = inReference(lrgb.truths[f], refTruth.transform);
    checks[f] = checkPositions(truth, channels[f]!, 384, 288, 30, 32);
    const c = checks[f]!;
    assert.ok(c.matched >= 15, `${f}: matched ${c.matched}`);
    assert.ok(c.medianError < 0.05, `${f}: median error ${c.medianError}`);
    assert.ok(Math.abs(c.meanDx) < 0.05 && Math.abs(c.meanDy) < 0.05, `${f}: mean offset ${c.meanDx}, ${c.meanDy}`);
  }
  for (const a of FILTERS) {
    for (const b of FILTERS) {
      if (a >= b) continue;
      const d = Math.hypot(checks[a]!.meanDx - checks[b]!.meanDx, checks[a]!.meanDy - checks[b]!.meanDy);
      assert.ok(d < 0.05, `${a} vs ${b}: ${d.toFixed(4)} px`);
    }
  }
});

test('LRGB queue: inactive entry skipped but recorded; queue and per-phase timings in the reports; filter column', async () => {
  const warn = events.find((l) => l.type === 'warning' && l.code === 'queue_entry_inactive');
  assert.ok(warn, 'a warning names the inactive entry');
  const q = JSON.parse(await readFile(art('run_queue.json'), 'utf8'));
  assert.is(q.entries.length, 5);
  for (const [i, f] of FILTERS.entries()) {
    const e = q.entries[i];
    assert.equal([e.filter, e.label, e.active, e.status, e.frames_found, e.frames_usable, e.frames_used, e.output], [f, `${f} night 1`, true, 'scanned', 6, 6, 6, `outputs/stacked_${f}.fits`]);
    assert.ok(e.stack_ms > 0);
  }
  assert.equal([q.entries[4].filter, q.entries[4].active, q.entries[4].status, q.entries[4].frames_found, q.entries[4].output], ['Ha', false, 'inactive', 0, null]);
  const manifest = JSON.parse(await readFile(art('artifacts_manifest.json'), 'utf8'));
  const paths = manifest.artifacts.map((a: { path: string }) => a.path);
  for (const p of ['artifacts/preprocess/run_queue.json', 'outputs/stacked_L.fits', 'outputs/stacked_B.fits', 'outputs/stacked_rgb.fits', 'outputs/stacked_linear.fits']) assert.ok(paths.includes(p), p);

  const html = await readFile(art('preprocessing_report.html'), 'utf8');
  assert.ok(html.includes('<h2>Run queue</h2>'));
  assert.match(html, /<td><b>R<\/b><\/td><td>R night 1<\/td>.*?<td class="n">6<\/td><td class="n">6<\/td><td class="n">6<\/td>.*?outputs\/stacked_R\.fits/);
  assert.match(html, /<tr class="inactive"><td class="n">4<\/td><td><b>Ha<\/b><\/td>.*?<td>no<\/td><td>inactive/);
  // Phase table: duration, share and peak RSS of each phase with real values.
  assert.ok(html.includes('<th>duration</th><th>share</th><th>peak RSS</th>'));
  const stackingRow = html.match(/<tr><td>STACKING<\/td>.*?<\/tr>/)?.[0] ?? '';
  assert.match(stackingRow, /<td class="n">[\d.]+ (ms|s)<\/td><td class="n">[\d.]+ %<\/td><td class="n">\d+ MiB<\/td>/);
  const ends = events.filter((l) => l.type === 'phase_end') as Record<string, any>[];
  assert.ok(ends.every((e) => typeof e.peak_rss_mib === 'number' && e.peak_rss_mib > 10), 'every phase_end carries peak_rss_mib');
  // Local normalization per filter stack: one table each, a row per stacked frame, and a line each in the Markdown.
  for (const f of FILTERS) {
    const table = html.match(new RegExp(`<h3 id="local-normalization-${f}">Local normalization — ${f} stack</h3>[\\s\\S]*?</table>`))?.[0] ?? '';
    assert.ok(table, `LN table of ${f}`);
    assert.is((table.match(/<tr><td class="n">/g) ?? []).length, 6, `${f}: one row per stacked frame`);
  }
  const md = await readFile(art('preprocessing_report.md'), 'utf8');
  for (const f of FILTERS) assert.ok(md.includes(`- local normalization (${f}): 6 frames`), `Markdown LN line of ${f}`);
  assert.ok(md.includes('## Run queue'));
  assert.match(md, /\| 4 \| Ha \|.*\| no \| inactive/);

  const csv = (await readFile(art('frame_quality.csv'), 'utf8')).trim().split('\n');
  assert.ok(csv[0]!.endsWith(',weight,filter'));
  const filters = csv.slice(1).map((l) => l.split(',').pop());
  assert.equal(FILTERS.map((f) => filters.filter((x) => x === f).length), [6, 6, 6, 6]);
});

test('queue: OSC data gets filter OSC and stacked_rgb.fits; mixed colour modes and an all-inactive queue are input errors', async () => {
  const osc = join(root, 'osc');
  await generateDataset({ out: osc, kind: 'osc', frames: 4, width: 384, height: 288, seed: 8, calibration: false, badFrames: 'none', starDensity: 12000 });
  const r = await runRawStack(configOf({ queue: [{ filter: 'L', input_dir: join(osc, 'lights') }], quality_filter: { mode: 'off' } }), { runsDir: join(root, 'runs-osc') });
  assert.is(r.status, 'ok', JSON.stringify(r.phases));
  const q = JSON.parse(await readFile(join(r.runDir, 'artifacts/preprocess/run_queue.json'), 'utf8'));
  assert.is(q.entries[0].filter, 'OSC');
  assert.is(q.entries[0].output, 'outputs/stacked_OSC.fits');
  const rgb = await readFitsImage(r.outputs.stacked_rgb!);
  assert.is(rgb.planes, 3);
  assert.is(r.outputs.stacked_linear, undefined);

  const mixed = await runRawStack(configOf({ queue: [{ filter: 'L', input_dir: join(lrgb.dirs.L, 'lights') }, { filter: 'OSC', input_dir: join(osc, 'lights') }] }), { runsDir: join(root, 'runs-mixed') });
  assert.is(mixed.status, 'error');
  const scan = mixed.phases.find((p) => p.phase === 'INPUT_SCAN')!;
  assert.equal([scan.status, scan.reason], ['error', 'input_error']);

  const none = await runRawStack(configOf({ queue: [{ filter: 'L', input_dir: join(lrgb.dirs.L, 'lights'), active: false }] }), { runsDir: join(root, 'runs-none') });
  assert.equal([none.phases[0]!.status, none.phases[0]!.reason], ['error', 'input_error']);
  const report = JSON.parse(await readFile(join(none.runDir, 'artifacts/preprocess/preprocessing_report.json'), 'utf8'));
  assert.is(report.queue[0].status, 'inactive');
});

test.run();
