// The tiled workflow end to end on generated sessions of 12 frames at 256×192 whose left half is
// soft (1.8× the FWHM) in every odd frame (generator option softHalf), mono and OSC: every phase
// in the predecessor's order with one start and one end, the artifacts present and consistent
// with each other (grid, tables, records), the stack finite where covered, and, against the
// uniform-weight run of the same frames, the left half sharper (FWHM ≤ 0.92×; the issue aims at
// 0.90×; the defaults, Raw Stack's quality weights as G and the FWHM penalty law a = 4 on the
// seeing map fwhm_map local, reach 0.886× mono and 0.902× OSC here at 1.21× the noise; the
// predecessor's formula G with the z-score law reached 0.896× and 0.913×; mono is also run
// with fwhm_map surface, 0.886×, each frame's surface recorded), the right half
// not softer (≤ 1.05×), the background level unchanged (±1 %) and the noise not much higher
// (≤ 1.25×). On the same session without the soft half (a uniform-seeing control) it equals the
// uniform stack (FWHM within 2 %, noise within 5 %). The report's FWHM-vs-global map expects the
// soft half sharper than a global-weighted stack. A cloud over one quadrant in a third of the
// frames (fixtures preset): more star light there than in the uniform stack, the same elsewhere. Five frames: local weights off with a warning, global weights recorded as the mode.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { access, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parse as parseYaml } from 'yaml';
import { generateDataset, tiledSeeingOptions } from '../../fixtures/generator/index.js';
import { detectStars } from '../../src/algorithms/stars.js';
import { resolveTiledConfig } from '../../src/config/tiled-run.js';
import { readFitsImage } from '../../src/fits/index.js';
import { parseEventLines, type EventLine } from '../../src/shared/events.js';
import { TILED } from '../../src/pipeline/tiled/definition.js';
import { runTiled, type TiledRunResult } from '../../src/pipeline/tiled/run.js';
import { withTempDir } from '../helpers/tmp.js';

const ARTIFACTS = ['normalization.json', 'global_metrics.json', 'tile_grid.json', 'global_registration.json', 'common_overlap.json', 'local_metrics.json', 'tile_reconstruction.json', 'state_clustering.json', 'synthetic_frames.json', 'validation.json', 'phase_records.json', 'report.html', 'report.json', 'report.md', 'artifacts_manifest.json'];

const median = (v: number[]) => {
  const s = v.filter(Number.isFinite).sort((a, b) => a - b);
  return s.length % 2 ? s[s.length >> 1]! : 0.5 * (s[s.length / 2 - 1]! + s[s.length / 2]!);
};

async function run(lights: string, runs: string, mode: string, extra: Record<string, unknown> = {}): Promise<TiledRunResult> {
  const r = resolveTiledConfig({
    input: { input_dir: lights },
    tile: { star_min_count: 4 },
    stacking: { weight_mode: mode },
    astrometry: { enabled: false },
    bge: { method: 'none' },
    pcc: { enabled: false },
    hypermetric_stretch: { enabled: false },
    runtime_limits: { memory_budget: 256, parallel_workers: 2 },
    output: { run_name: mode },
    ...extra,
  });
  assert.ok(r.ok, JSON.stringify(r));
  if (!r.ok) throw new Error('config');
  return runTiled(r.config, { runsDir: runs, device: 'cpu' });
}

/** Luminance of a stack, with its per-half median star FWHM, its median level and a robust pixel noise. */
async function measure(file: string): Promise<{ left: number; right: number; level: number; noise: number; nonFinite: number; width: number }> {
  const img = await readFitsImage(file);
  const W = img.width;
  const H = img.height;
  const lum = new Float32Array(W * H);
  for (let i = 0; i < W * H; i++) {
    let s = 0;
    for (let p = 0; p < img.planes; p++) s += img.data[p * W * H + i]!;
    lum[i] = s / img.planes;
  }
  let nonFinite = 0;
  for (const v of lum) if (!Number.isFinite(v)) nonFinite++;
  const det = detectStars(lum, W, H);
  assert.ok(det.ok);
  if (!det.ok) throw new Error('no stars');
  const shape = det.stars.filter((s) => !s.saturated);
  const diffs: number[] = [];
  for (let y = 0; y < H; y++) for (let x = 0; x + 1 < W; x += 2) diffs.push(Math.abs(lum[y * W + x + 1]! - lum[y * W + x]!));
  return {
    left: median(shape.filter((s) => s.x < W / 2 - 8).map((s) => s.fwhm)),
    right: median(shape.filter((s) => s.x >= W / 2 + 8).map((s) => s.fwhm)),
    level: median(Array.from(lum)),
    noise: (1.4826 * median(diffs)) / Math.SQRT2,
    nonFinite,
    width: W,
  };
}

async function json(dir: string, name: string): Promise<any> {
  return JSON.parse(await readFile(join(dir, 'artifacts', name), 'utf8'));
}

for (const kind of ['mono', 'osc'] as const) {
  test(`tiled end to end (${kind}): phases, artifacts, and a sharper soft half than the uniform-weight stack`, () =>
    withTempDir(`tiled-e2e-${kind}`, async (dir) => {
      await generateDataset({ out: join(dir, 'data'), kind, frames: 12, width: 256, height: 192, seed: 5, calibration: false, badFrames: 'none', starDensity: 8000, softHalf: { side: 'left', factor: 1.8, frames: 'odd' } });
      const lights = join(dir, 'data', 'lights');
      const tiled = await run(lights, join(dir, 'runs'), 'local');
      assert.is(tiled.status, 'ok', JSON.stringify(tiled.phases));
      const d = tiled.runDir;

      // Phases in order, one start and one end each; skips with their reasons.
      const lines = parseEventLines(await readFile(join(d, 'logs', 'run_events.jsonl'), 'utf8'));
      const first = lines[0] as Extract<EventLine, { type: 'run_start' }> & { phases: { name: string }[]; input: unknown };
      assert.is(first.type, 'run_start');
      assert.equal(first.phases.map((p) => p.name), TILED.phases.map((p) => p.name));
      assert.equal(first.input, { input_dir: lights, pattern: '*.fits' });
      assert.equal(lines.filter((l) => l.type === 'phase_start').map((l) => (l as { phase: string }).phase), TILED.phases.map((p) => p.name));
      const ends = Object.fromEntries(tiled.phases.map((p) => [p.phase, `${p.status}${p.reason ? `/${p.reason}` : ''}`]));
      assert.equal([ends.PREWARP, ends.STATE_CLUSTERING, ends.SYNTHETIC_FRAMES, ends.DEBAYER, ends.CALIBRATION], ['skipped/not_needed', 'skipped/reduced_mode', 'skipped/reduced_mode', 'skipped/not_needed', 'skipped/not_configured']);
      for (const p of ['SCAN_INPUT', 'NORMALIZATION', 'GLOBAL_METRICS', 'TILE_GRID', 'REGISTRATION', 'COMMON_OVERLAP', 'LOCAL_METRICS', 'TILE_RECONSTRUCTION', 'STACKING', 'REPORT']) assert.is(ends[p], 'ok', p);

      // Run folder: record, effective configuration, artifacts.
      const rec = JSON.parse(await readFile(join(d, 'run.json'), 'utf8'));
      assert.equal([rec.kind, rec.status, rec.input.input_dir], ['tiled', 'ok', lights]);
      const cfg = parseYaml(await readFile(join(d, 'config.yaml'), 'utf8')) as { tile: { size_factor: number }; stacking: { weight_mode: string } };
      assert.equal([cfg.tile.size_factor, cfg.stacking.weight_mode], [32, 'local']);
      for (const a of ARTIFACTS) await access(join(d, 'artifacts', a));
      const out = join(d, 'outputs', kind === 'osc' ? 'stacked_rgb.fits' : 'stacked.fits');
      await access(out);

      // Consistency between the artifacts.
      const grid = await json(d, 'tile_grid.json');
      const local = await json(d, 'local_metrics.json');
      const rec2 = await json(d, 'tile_reconstruction.json');
      const glob = await json(d, 'global_metrics.json');
      assert.is(grid.tiles.length, grid.num_tiles);
      assert.equal([local.num_tiles, rec2.num_tiles, local.mode, rec2.mode], [grid.num_tiles, grid.num_tiles, 'local', 'local']);
      assert.is(local.num_frames, 12);
      // Sparse tiles borrow their neighbours' stars (poolStars), so this field has STAR tiles throughout.
      assert.is(local.tile_types.length, grid.num_tiles);
      assert.is(local.star_tiles + local.structure_tiles, grid.num_tiles);
      assert.is(local.star_tiles, grid.num_tiles, local.tile_types.join(','));
      for (let t = 0; t < grid.num_tiles; t++) {
        const col = rec2.weight_table.reduce((s: number, row: number[]) => s + row[t]!, 0);
        assert.ok(Math.abs(col - 1) < 1e-3, `tile ${t}: weights sum to ${col}`);
      }
      // The report's tiles section: N_eff per tile from the same table, G per frame, L heat maps,
      // and the grid drawn in the HTML.
      const report = await json(d, 'report.json');
      assert.is(report.tiled.n_eff.length, grid.num_tiles);
      for (let t = 0; t < grid.num_tiles; t++) {
        const col = rec2.weight_table.map((row: number[]) => row[t]!);
        const want = col.reduce((a: number, b: number) => a + b, 0) ** 2 / col.reduce((a: number, b: number) => a + b * b, 0);
        assert.ok(Math.abs(report.tiled.n_eff[t] - want) < 1e-3 * want, `tile ${t}: N_eff ${report.tiled.n_eff[t]} vs ${want}`);
        assert.ok(report.tiled.n_eff[t] >= 1 && report.tiled.n_eff[t] <= 12);
      }
      assert.is(report.tiled.frames.length, 12);
      assert.ok(report.tiled.local.length > 0 && report.tiled.local.length <= 4);
      // FWHM against a global-weighted stack, per tile: expected sharper in the soft (left) half, where L differs.
      assert.is(report.tiled.fwhm_vs_global.length, grid.num_tiles);
      const leftRatio = median(grid.tiles.map((r: { x: number; width: number }, t: number) => (r.x + r.width <= 128 ? report.tiled.fwhm_vs_global[t] : NaN)));
      assert.ok(leftRatio < 0.97, `left-half FWHM vs global weights: ${leftRatio}`);
      const html = await readFile(join(d, 'artifacts', 'report.html'), 'utf8');
      assert.is((html.match(/<svg class="tiled-grid"/g) ?? []).length, 2 + report.tiled.local.length, 'N_eff grid, FWHM-ratio grid, L maps');
      assert.match(html, /FWHM of this stack over a stack with the global weights G only/);
      const gridSvg = /<svg class="tiled-grid"[\s\S]*?<\/svg>/.exec(html)?.[0] ?? '';
      assert.is((gridSvg.match(/<rect /g) ?? []).length, grid.num_tiles, 'one rectangle per tile over the stack');
      assert.match(html, /<svg class="tiled-g"/);
      // Seeing counts globally: the soft (odd) frames get a lower G than the sharp ones.
      const g = (odd: number) => median(glob.metrics.filter((m: { index: number }) => m.index % 2 === odd).map((m: { global_weight: number }) => m.global_weight));
      assert.ok(g(1) < g(0), `G odd ${g(1)} vs even ${g(0)}`);
      // Locally: in the left half the odd frames weigh less than the even ones; on the right they weigh more than globally.
      const leftTiles = grid.tiles.map((r: { x: number; width: number }, t: number) => [r, t]).filter(([r]: [{ x: number; width: number }]) => r.x + r.width <= 128).map(([, t]: [unknown, number]) => t);
      assert.ok(leftTiles.length >= 2);
      const w = (odd: number, tiles: number[]) => median(rec2.frames.flatMap((f: number, k: number) => (f % 2 === odd ? tiles.map((t) => rec2.weight_table[k][t]) : [])));
      assert.ok(w(1, leftTiles) < 0.8 * w(0, leftTiles), `left: odd ${w(1, leftTiles)}, even ${w(0, leftTiles)}`);
      const records = await json(d, 'phase_records.json');
      assert.equal(Object.keys(records), TILED.phases.map((p) => p.name));
      for (const [name, r] of Object.entries(records) as [string, { config_hash: string; inputs: { previous: string | null } }][]) {
        assert.match(r.config_hash, /^[0-9a-f]{64}$/, name);
        if (name !== 'SCAN_INPUT') assert.match(r.inputs.previous ?? '', /^[0-9a-f]{64}$/, name);
      }
      const md = await readFile(join(d, 'artifacts', 'report.md'), 'utf8');
      assert.match(md, /^# Tiled workflow report: /);
      assert.match(md, /- weighting: local: W = G·L per tile/);
      assert.match(md, /- state_clustering: off \(reduced_mode: /);
      assert.match(md, /\[report\.html\]\(report\.html#frame-plots\)/);
      const validation = await json(d, 'validation.json');
      assert.is(validation.seams.pass, true, JSON.stringify(validation.seams));

      // Against the uniform-weight stack of the same frames.
      const uniform = await run(lights, join(dir, 'runs'), 'uniform');
      assert.is(uniform.status, 'ok');
      assert.is((await json(uniform.runDir, 'tile_reconstruction.json')).mode, 'uniform');
      const a = await measure(out);
      const b = await measure(join(uniform.runDir, 'outputs', kind === 'osc' ? 'stacked_rgb.fits' : 'stacked.fits'));
      const summary = `tiled L ${a.left.toFixed(3)} R ${a.right.toFixed(3)} noise ${a.noise.toFixed(2)} level ${a.level.toFixed(1)}; uniform L ${b.left.toFixed(3)} R ${b.right.toFixed(3)} noise ${b.noise.toFixed(2)} level ${b.level.toFixed(1)}`;
      assert.is(a.nonFinite, validation.no_data_pixels);
      assert.ok(a.nonFinite < 0.02 * a.width * 192, 'finite where covered');
      assert.ok(a.left <= 0.92 * b.left, summary);
      assert.ok(a.right <= 1.05 * b.right, summary);
      assert.ok(Math.abs(a.level - b.level) <= 0.01 * Math.abs(b.level), summary);
      assert.ok(a.noise <= 1.25 * b.noise, summary);
      console.log(`  ${kind}: ${summary}; report: left-half FWHM vs global weights ${leftRatio.toFixed(3)}`);

      // The default seeing map (fwhm_map local) recorded a surface per frame; the FWHM penalty law
      // (a 4, reference the frames' 10 % quantile, deadband 0.03) over Raw Stack's quality weights as G.
      const lmDefault = await json(d, 'local_metrics.json');
      assert.equal([lmDefault.fwhm_map, lmDefault.fwhm_penalty, lmDefault.fwhm_reference_quantile, lmDefault.fwhm_deadband, lmDefault.fwhm_surfaces.length], ['local', 4, 0.1, 0.03, lmDefault.frames.length]);
      assert.is(glob.mode, 'quality');

      // The surface alone (fwhm_map surface): one surface per frame recorded, the soft half's
      // tiles read off it, and the same aims as the default.
      if (kind !== 'mono') return;
      const mapped = await run(lights, join(dir, 'runs'), 'local', { local_metrics: { star_mode: { fwhm_map: 'surface' } }, output: { run_name: 'surface' } });
      assert.is(mapped.status, 'ok');
      const lm = await json(mapped.runDir, 'local_metrics.json');
      assert.equal([lm.fwhm_map, lm.fwhm_penalty, lm.fwhm_surfaces.length], ['surface', 4, lm.frames.length]);
      for (const sf of lm.fwhm_surfaces) {
        assert.ok(['quadratic', 'plane', 'constant'].includes(sf.model), sf.model);
        assert.ok(sf.stars >= sf.inliers && sf.inliers > 0 && sf.range[0] <= sf.range[1], JSON.stringify(sf));
      }
      // The odd frames' maps rise towards the soft left (u < 0): their x slope is negative, the even frames' not.
      const slope = (i: number) => (lm.fwhm_surfaces[i].model === 'constant' ? 0 : lm.fwhm_surfaces[i].coefficients[1]);
      const odd = lm.frames.map((f: { index: number }, i: number) => [f.index, slope(i)]).filter(([ix]: number[]) => ix! % 2 === 1).map(([, v]: number[]) => v!);
      const even = lm.frames.map((f: { index: number }, i: number) => [f.index, slope(i)]).filter(([ix]: number[]) => ix! % 2 === 0).map(([, v]: number[]) => v!);
      assert.ok(median(odd) < median(even) - 0.1, `x slopes: odd ${odd}, even ${even}`);
      const c = await measure(join(mapped.runDir, 'outputs', 'stacked.fits'));
      const mapSummary = `surface L ${c.left.toFixed(3)} R ${c.right.toFixed(3)} noise ${c.noise.toFixed(2)}; uniform L ${b.left.toFixed(3)} R ${b.right.toFixed(3)} noise ${b.noise.toFixed(2)}`;
      assert.ok(c.left <= 0.92 * b.left, mapSummary);
      assert.ok(c.right <= 1.05 * b.right, mapSummary);
      assert.ok(Math.abs(c.level - b.level) <= 0.01 * Math.abs(b.level), mapSummary);
      assert.ok(c.noise <= 1.25 * b.noise, mapSummary);
      console.log(`  ${kind}: ${mapSummary}`);
    }),
  );
}

test('uniform-seeing control: the tiled stack equals the uniform-weight stack (FWHM within 2 %, noise within 5 %)', () =>
  withTempDir('tiled-e2e-control', async (dir) => {
    await generateDataset({ out: join(dir, 'data'), kind: 'mono', frames: 12, width: 256, height: 192, seed: 5, calibration: false, badFrames: 'none', starDensity: 8000 });
    const lights = join(dir, 'data', 'lights');
    const tiled = await run(lights, join(dir, 'runs'), 'local');
    const uniform = await run(lights, join(dir, 'runs'), 'uniform');
    const a = await measure(join(tiled.runDir, 'outputs', 'stacked.fits'));
    const b = await measure(join(uniform.runDir, 'outputs', 'stacked.fits'));
    const summary = `tiled L ${a.left.toFixed(3)} R ${a.right.toFixed(3)} noise ${a.noise.toFixed(2)}; uniform L ${b.left.toFixed(3)} R ${b.right.toFixed(3)} noise ${b.noise.toFixed(2)}`;
    for (const half of ['left', 'right'] as const) assert.ok(Math.abs(a[half] / b[half] - 1) <= 0.02, summary);
    assert.ok(a.noise <= 1.05 * b.noise, summary);
    console.log(`  control: ${summary}`);
  }),
);

/**
 * Star light in a rectangle of two mono stacks of the same frames: aperture sums (radius 6 px,
 * sky the median of the 9–14 px annulus) at the stars detected in the second, summed over the
 * stars inside the rectangle. Per star the sky is local, so a stack's background shape does not count.
 */
async function starLight(files: [string, string], x0: number, y0: number, x1: number, y1: number): Promise<[number, number, number]> {
  const [a, b] = await Promise.all(files.map((f) => readFitsImage(f)));
  const W = b!.width;
  const H = b!.height;
  const plane = b!.data.subarray(0, W * H).map((v) => (Number.isFinite(v) ? v : 0));
  const det = detectStars(plane, W, H);
  assert.ok(det.ok);
  if (!det.ok) throw new Error('no stars');
  const stars = det.stars.filter((s) => s.x >= x0 && s.x < x1 && s.y >= y0 && s.y < y1 && s.x > 15 && s.y > 15 && s.x < W - 16 && s.y < H - 16);
  const flux = (img: Float32Array, x: number, y: number) => {
    const sky: number[] = [];
    let sum = 0;
    let n = 0;
    for (let j = -14; j <= 14; j++) {
      for (let i = -14; i <= 14; i++) {
        const r = Math.hypot(i, j);
        const v = img[(Math.round(y) + j) * W + Math.round(x) + i]!;
        if (!Number.isFinite(v)) continue;
        if (r <= 6) (sum += v), n++;
        else if (r >= 9) sky.push(v);
      }
    }
    return sum - n * median(sky);
  };
  let fa = 0;
  let fb = 0;
  for (const s of stars) {
    fa += flux(a!.data, s.x, s.y);
    fb += flux(b!.data, s.x, s.y);
  }
  return [fa, fb, stars.length];
}

test('cloud over a quadrant (fixtures preset cloud-quadrant): the clouded quadrant keeps more star light than in the uniform stack, the clear one the same', () =>
  withTempDir('tiled-e2e-cloud', async (dir) => {
    const shape = { width: 256, height: 192, frames: 12 };
    const truth = await generateDataset({ out: join(dir, 'data'), kind: 'mono', ...shape, seed: 5, calibration: false, badFrames: 'none', starDensity: 8000, ...tiledSeeingOptions('cloud-quadrant', shape) });
    assert.is(truth.frames.filter((f) => f.clouds).length, 4);
    const lights = join(dir, 'data', 'lights');
    const tiled = await run(lights, join(dir, 'runs'), 'local');
    const uniform = await run(lights, join(dir, 'runs'), 'uniform');
    const out = (r: TiledRunResult) => join(r.runDir, 'outputs', 'stacked.fits');
    // In the cloud (top right, 1.5 edge scales from its edges: ≥ 2/3 of its depth) and the opposite, clear quadrant.
    const e = Math.ceil(1.5 * 0.04 * 256);
    const cloud = [128 + e, 8, 248, 96 - e] as const;
    const clear = [8, 96 + e, 128 - e, 184] as const;
    const [tc, uc, nc] = await starLight([out(tiled), out(uniform)], ...cloud);
    const [tk, uk, nk] = await starLight([out(tiled), out(uniform)], ...clear);
    assert.ok(nc >= 4 && nk >= 4, `${nc} stars in the cloud, ${nk} in the clear quadrant`);
    const summary = `cloud (${nc} stars): tiled/uniform ${(tc / uc).toFixed(4)}; clear (${nk} stars): ${(tk / uk).toFixed(4)}`;
    console.log(`  ${summary}`);
    // Four of twelve frames at half the light: the uniform stack keeps 5/6 of it there; weighting the clouded frames down keeps more.
    assert.ok(tc / uc >= 1.01, summary);
    assert.ok(Math.abs(tk / uk - 1) <= 0.01, summary);
  }),
);

test('five frames: local weights off with a warning, global weights recorded as the mode', () =>
  withTempDir('tiled-e2e-few', async (dir) => {
    await generateDataset({ out: join(dir, 'data'), kind: 'mono', frames: 5, width: 192, height: 144, seed: 8, calibration: false, badFrames: 'none', starDensity: 8000 });
    const r = await run(join(dir, 'data', 'lights'), join(dir, 'runs'), 'local');
    assert.is(r.status, 'ok', JSON.stringify(r.phases));
    const lines = parseEventLines(await readFile(join(r.runDir, 'logs', 'run_events.jsonl'), 'utf8'));
    assert.ok(lines.some((l) => l.type === 'warning' && l.code === 'local_weights_off'));
    const local = await json(r.runDir, 'local_metrics.json');
    const rec = await json(r.runDir, 'tile_reconstruction.json');
    assert.equal([local.mode, rec.mode], ['global', 'global']);
    assert.match(rec.reason, /fewer than local_metrics\.min_frames \(8\)/);
    // Global weights only: every tile has the same table column.
    for (const row of rec.weight_table as number[][]) for (const v of row) assert.ok(Math.abs(v - row[0]!) < 1e-4);
    await access(join(r.runDir, 'outputs', 'stacked.fits'));
    // With the reduced-mode threshold lowered, the frames are clustered and the stack blends the clusters' tables.
    const c = await run(join(dir, 'data', 'lights'), join(dir, 'runs'), 'local', { assumptions: { frames_reduced_threshold: 4 }, synthetic: { clustering: { cluster_count_range: [2, 3] } } });
    assert.is(c.status, 'ok', JSON.stringify(c.phases));
    const st = await json(c.runDir, 'state_clustering.json');
    const syn = await json(c.runDir, 'synthetic_frames.json');
    assert.equal([st.mode, st.n_clusters, st.cluster_sizes.reduce((a: number, b: number) => a + b, 0), syn.mode, syn.num_synthetic], ['clustered', 2, 5, 'virtual', 2]);
    assert.match((await json(c.runDir, 'validation.json')).weight_reason, /blended over 2 synthetic frames/);
    assert.match((await json(r.runDir, 'state_clustering.json')).message, /below assumptions\.frames_reduced_threshold = 200/);
  }),
);

test.run();
