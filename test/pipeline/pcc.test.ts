// PCC phase (issue 7 item 2) through runRawStack: every skip reason (disabled, no_rgb_stack,
// no_wcs, no_catalog_stars), errors that let the run go on (fit_failed, input_error), the
// success path (stacked_rgb_pcc.fits, pcc_diagnostics.json, 0.02 mag bar, BGE output as input,
// HMS on the PCC output) and require_successful_pcc making HMS skip after a real PCC failure;
// the REPORT carries the factors and the star colour plot.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { FitsHeader, readFitsImage } from '../../src/fits/index.js';
import { ok, type Phase } from '../../src/pipeline/phase.js';
import { bgePhase } from '../../src/pipeline/rawstack/phases/bge.js';
import { hmsPhase } from '../../src/pipeline/rawstack/phases/hms.js';
import { pccPhase } from '../../src/pipeline/rawstack/phases/pcc.js';
import type { RawStackState } from '../../src/pipeline/rawstack/state.js';
import { catalogCsv, magError, pccFixture, truthRatios } from '../astro/pcc-fixture.js';
import { withTempDir } from '../helpers/tmp.js';
import { config, runOn, type PostRun } from './postprocess-helpers.js';

const fx = pccFixture({ width: 640, height: 480, stars: 90 });
const pp = { astrometry: false, bge: false, pcc: true, hypermetric_stretch: false };

async function diag(r: PostRun): Promise<any> {
  return JSON.parse(await readFile(join(r.result.runDir, 'artifacts', 'preprocess', 'pcc_diagnostics.json'), 'utf8'));
}

async function catalogue(dir: string, stars = fx.stars): Promise<string> {
  const f = join(dir, `cat-${stars.length}.csv`);
  await writeFile(f, catalogCsv(stars));
  return f;
}

const fakeAstrometry: Phase<RawStackState> = { name: 'ASTROMETRY', optional: true, run: async () => ok() };

test('skips: disabled, no_rgb_stack, no_wcs (no header WCS; unsolved header WCS), no_catalog_stars', async () => {
  await withTempDir('pcc-skip', async (dir) => {
    const cat = await catalogue(dir);
    const a = await runOn(fx, config({ postprocess: { ...pp, pcc: false }, pcc: { catalog_file: cat } }), join(dir, 'a'), [pccPhase], { header: fx.header });
    assert.is(a.end('PCC')?.reason, 'disabled');
    const b = await runOn(fx, config({ postprocess: pp, pcc: { catalog_file: cat } }), join(dir, 'b'), [pccPhase], { rgb: false });
    assert.is(b.end('PCC')?.reason, 'no_rgb_stack');
    const c = await runOn(fx, config({ postprocess: pp, pcc: { catalog_file: cat } }), join(dir, 'c'), [pccPhase]);
    assert.is(c.end('PCC')?.status, 'skipped');
    assert.is(c.end('PCC')?.reason, 'no_wcs');
    assert.is((await diag(c)).failure_reason, 'PCC_NO_WCS');
    // A WCS the capture program wrote (no PLTSOLVD, no ASTROMETRY success) is not a solve...
    const unsolved = fx.header.clone();
    unsolved.delete('PLTSOLVD');
    const d = await runOn(fx, config({ postprocess: pp, pcc: { catalog_file: cat } }), join(dir, 'd'), [pccPhase], { header: unsolved });
    assert.is(d.end('PCC')?.reason, 'no_wcs');
    // ...but after a successful ASTROMETRY the header WCS is the solve.
    const e = await runOn(fx, config({ postprocess: pp, pcc: { catalog_file: cat } }), join(dir, 'e'), [fakeAstrometry, pccPhase], { header: unsolved });
    assert.is(e.end('PCC')?.status, 'ok');
    const f = await runOn(fx, config({ postprocess: pp }), join(dir, 'f'), [pccPhase], { header: fx.header });
    assert.is(f.end('PCC')?.reason, 'no_catalog_stars');
    const far = join(dir, 'far.csv');
    await writeFile(far, catalogCsv(fx.stars.map((s) => ({ ...s, dec: s.dec + 30 }))));
    const g = await runOn(fx, config({ postprocess: pp, pcc: { catalog_file: far } }), join(dir, 'g'), [pccPhase], { header: fx.header });
    assert.is(g.end('PCC')?.reason, 'no_catalog_stars');
    assert.is((await diag(g)).failure_reason, 'PCC_NO_CATALOG_STARS');
    for (const r of [a, b, c, d, f, g]) {
      assert.is(r.result.status, 'ok');
      assert.not.ok(existsSync(join(r.result.runDir, 'outputs', 'stacked_rgb_pcc.fits')));
    }
  });
});

test('success: stacked_rgb_pcc.fits with the WCS, diagnostics, factors within 0.02 mag, HMS on the PCC output, report plot', async () => {
  await withTempDir('pcc-ok', async (dir) => {
    const cat = await catalogue(dir);
    const r = await runOn(fx, config({ postprocess: { ...pp, hypermetric_stretch: true }, pcc: { catalog_file: cat } }), join(dir, 'r'), [pccPhase, hmsPhase], { header: fx.header });
    assert.is(r.end('PCC')?.status, 'ok');
    const d = await diag(r);
    assert.is(d.success, true);
    assert.is(d.apply_mode, 'diagonal');
    // Run-relative paths, like the BGE and HMS diagnostics.
    assert.equal([d.input, d.output], ['outputs/stacked_rgb.fits', 'outputs/stacked_rgb_pcc.fits']);
    const [tr, tb] = truthRatios(fx.gains, d.white_reference.bv);
    const eR = magError(d.factors.R / d.factors.G, tr);
    const eB = magError(d.factors.B / d.factors.G, tb);
    console.log(`  PCC phase: R/G ${eR.toFixed(4)} mag, B/G ${eB.toFixed(4)} mag from the truth, ${d.stars_used} stars`);
    assert.ok(eR < 0.02 && eB < 0.02, `${eR} ${eB}`);
    const out = await readFitsImage(join(r.result.runDir, 'outputs', 'stacked_rgb_pcc.fits'));
    assert.is(out.header.getString('CTYPE1'), 'RA---TAN');
    assert.ok(r.state.artifacts.some((a) => a.path === 'outputs/stacked_rgb_pcc.fits'));
    assert.ok(r.state.artifacts.some((a) => a.path === 'artifacts/preprocess/pcc_diagnostics.json'));
    assert.is(r.end('HYPERMETRIC_STRETCH')?.status, 'ok');
    assert.is(r.state.summaries.HYPERMETRIC_STRETCH?.input, 'pcc');
    // REPORT: PCC section with the factors and the colour relations (catalogue vs calibrated
    // image colour per ratio): the fixture's stars have the model's own colours, so the used
    // stars lie on y = x within noise and the slopes are near 1.
    const s = r.state.summaries.PCC!;
    const rel = s.colour_relations as Record<'rg' | 'bg', { points: { x: number; y: number; used: boolean }[]; slope: number; scatter: number }>;
    for (const key of ['rg', 'bg'] as const) {
      assert.is(rel[key].points.filter((p) => p.used).length, d.stars_used);
      for (const p of rel[key].points.filter((q) => q.used)) assert.ok(Math.abs(p.y - p.x) < 0.05, JSON.stringify(p));
      assert.ok(Math.abs(rel[key].slope - 1) < 0.05, `${key} slope ${rel[key].slope}`);
      assert.is(rel[key].slope, Number(d.lines[key].slope.toFixed(4)));
    }
    const html = await readFile(join(r.result.runDir, 'artifacts', 'preprocess', 'preprocessing_report.html'), 'utf8');
    assert.match(html, /id="pp-PCC"/);
    assert.match(html, /PCC R\/G: image vs catalogue colour<\/text>/);
    assert.match(html, /factors/);
    const json = JSON.parse(await readFile(join(r.result.runDir, 'artifacts', 'preprocess', 'preprocessing_report.json'), 'utf8'));
    assert.ok(JSON.stringify(json).includes('stacked_rgb_pcc.fits'));
  });
});

test('input is the BGE output when BGE ran', async () => {
  await withTempDir('pcc-bge', async (dir) => {
    const cat = await catalogue(dir);
    const r = await runOn(fx, config({ postprocess: { ...pp, bge: true }, pcc: { catalog_file: cat } }), join(dir, 'r'), [bgePhase, pccPhase], { header: fx.header });
    assert.is(r.end('BGE')?.status, 'ok');
    assert.is(r.end('PCC')?.status, 'ok');
    assert.is(r.state.summaries.PCC?.input, 'outputs/stacked_rgb_bge.fits');
  });
});

test('failures: fit_failed and input_error end PCC in error, the run goes on, HMS skips with require_successful_pcc', async () => {
  await withTempDir('pcc-err', async (dir) => {
    // 14 catalogue stars where the image has none (moved 60 px): too few found.
    const few = await catalogue(dir, fx.stars.slice(0, 14).map((s) => ({ ...s, dec: s.dec + (60 * 2.1) / 3600 })));
    const cfg = (catalog_file: string, require = true) => config({ postprocess: { ...pp, hypermetric_stretch: true }, pcc: { catalog_file }, hypermetric_stretch: { require_successful_pcc: require } });
    const a = await runOn(fx, cfg(few), join(dir, 'a'), [pccPhase, hmsPhase], { header: fx.header });
    assert.is(a.end('PCC')?.status, 'error');
    assert.is(a.end('PCC')?.reason, 'fit_failed');
    assert.is((await diag(a)).failure_reason, 'PCC_TOO_FEW_STARS');
    assert.is(a.end('HYPERMETRIC_STRETCH')?.reason, 'pcc_failed');
    // The monitor and the report show HMS's message: why, and which switch changes it.
    const hmsMsg = String(a.end('HYPERMETRIC_STRETCH')?.message ?? '');
    assert.match(hmsMsg, /PCC ended error \(fit_failed\) and hypermetric_stretch\.require_successful_pcc is true; set hypermetric_stretch\.require_successful_pcc to false/);
    assert.is(a.result.status, 'ok');
    const b = await runOn(fx, cfg(join(dir, 'missing.csv')), join(dir, 'b'), [pccPhase, hmsPhase], { header: fx.header });
    assert.is(b.end('PCC')?.reason, 'input_error');
    assert.is(b.end('HYPERMETRIC_STRETCH')?.reason, 'pcc_failed');
    // Skipped PCC (no WCS) also makes HMS skip; with require_successful_pcc false HMS runs on the linear stack.
    const c = await runOn(fx, cfg(few), join(dir, 'c'), [pccPhase, hmsPhase]);
    assert.is(c.end('PCC')?.reason, 'no_wcs');
    assert.is(c.end('HYPERMETRIC_STRETCH')?.reason, 'pcc_failed');
    const e = await runOn(fx, cfg(few, false), join(dir, 'e'), [pccPhase, hmsPhase], { header: fx.header });
    assert.is(e.end('PCC')?.status, 'error');
    assert.is(e.end('HYPERMETRIC_STRETCH')?.status, 'ok');
    assert.is(e.state.summaries.HYPERMETRIC_STRETCH?.input, 'linear');
  });
});

/** Runs `f` with the installed-catalogue search pointed at `dirs` (SKYSTACK_KSTARS_DATA). */
async function withKStarsDirs<T>(dirs: string, f: () => Promise<T>): Promise<T> {
  const before = process.env.SKYSTACK_KSTARS_DATA;
  process.env.SKYSTACK_KSTARS_DATA = dirs;
  try {
    return await f();
  } finally {
    if (before === undefined) delete process.env.SKYSTACK_KSTARS_DATA;
    else process.env.SKYSTACK_KSTARS_DATA = before;
  }
}

test('no catalogue at all: skipped no_catalog_stars (PCC_NO_CATALOG) naming the package; star_white fallback writes its own output, HMS still needs a real PCC', async () => {
  await withTempDir('pcc-none', async (dir) => {
    await withKStarsDirs('', async () => {
      const cfg = (over: Record<string, unknown>, require = true) => config({ postprocess: { ...pp, hypermetric_stretch: true }, hypermetric_stretch: { require_successful_pcc: require }, ...over });
      const a = await runOn(fx, cfg({}), join(dir, 'a'), [pccPhase, hmsPhase], { header: fx.header });
      assert.is(a.end('PCC')?.status, 'skipped');
      assert.is(a.end('PCC')?.reason, 'no_catalog_stars');
      assert.match(String(a.end('PCC')?.message), /no catalogue package is installed .*kstars-data/);
      assert.is((await diag(a)).failure_reason, 'PCC_NO_CATALOG');
      assert.not.ok(existsSync(join(a.result.runDir, 'outputs', 'stacked_rgb_starwhite.fits')));
      // pcc.fallback star_white: the median star colour made neutral, labelled, warned about.
      const b = await runOn(fx, cfg({ pcc: { fallback: 'star_white' } }), join(dir, 'b'), [pccPhase, hmsPhase], { header: fx.header });
      const end = b.end('PCC')!;
      assert.is(end.status, 'skipped');
      assert.is(end.reason, 'no_catalog_stars');
      assert.match(String(end.message), /star_white .*NOT photometric/);
      assert.is((end as { fallback?: string }).fallback, 'star_white');
      assert.ok(existsSync(join(b.result.runDir, 'outputs', 'stacked_rgb_starwhite.fits')));
      assert.not.ok(existsSync(join(b.result.runDir, 'outputs', 'stacked_rgb_pcc.fits')));
      const d = await diag(b);
      assert.equal([d.method, d.success, d.failure_reason, d.output], ['star_white', false, 'PCC_NO_CATALOG', 'outputs/stacked_rgb_starwhite.fits']);
      assert.ok(d.star_white.stars_used >= 10);
      assert.ok(b.lines.some((l) => l.type === 'warning' && l.code === 'pcc_star_white'));
      assert.is(b.state.summaries.PCC?.method, 'star_white');
      // A white balance is not a successful PCC: HMS with require_successful_pcc skips and says why…
      assert.is(b.end('HYPERMETRIC_STRETCH')?.reason, 'pcc_failed');
      assert.match(String(b.end('HYPERMETRIC_STRETCH')?.message), /PCC ended skipped \(no_catalog_stars\) \(its star_white fallback is a white balance, not a colour calibration\) and hypermetric_stretch\.require_successful_pcc is true/);
      // …and without the requirement it stretches the white-balanced stack.
      const c = await runOn(fx, cfg({ pcc: { fallback: 'star_white' } }, false), join(dir, 'c'), [pccPhase, hmsPhase], { header: fx.header });
      assert.is(c.end('HYPERMETRIC_STRETCH')?.status, 'ok');
      assert.is(c.state.summaries.HYPERMETRIC_STRETCH?.input, 'star_white');
      // The report names the fallback and HMS's reason.
      const md = await readFile(join(b.result.runDir, 'artifacts', 'preprocess', 'preprocessing_report.md'), 'utf8');
      assert.match(md, /Status: skipped · no_catalog_stars: .*star_white/);
      assert.match(md, /set hypermetric_stretch\.require_successful_pcc to false/);
    });
  });
});

test('installed catalogue when catalog_file is empty: kstars-data is queried (skips without it)', async () => {
  if (!existsSync('/usr/share/kstars/stars.dat')) {
    console.log('  kstars-data not installed: installed-catalogue phase test skipped');
    return;
  }
  await withTempDir('pcc-ks', async (dir) => {
    await withKStarsDirs('/usr/share/kstars', async () => {
      // The fixture field (0.37° × 0.28° in Orion) holds fewer V ≤ 9 stars than min_stars.
      const r = await runOn(fx, config({ postprocess: pp }), join(dir, 'r'), [pccPhase], { header: fx.header });
      assert.is(r.end('PCC')?.reason, 'no_catalog_stars');
      const d = await diag(r);
      assert.is(d.failure_reason, 'PCC_NO_CATALOG_STARS');
      assert.is(d.used_source, 'kstars:stars.dat');
      assert.is(d.catalog.package, 'kstars-data');
      assert.is(d.catalog.epoch_source, 'J2000 (no DATE-OBS)');
      assert.ok(d.catalog.stars_returned < 10, `${d.catalog.stars_returned}`);
    });
  });
});

test('a WCS on the run state (ASTROMETRY) wins over the header', async () => {
  await withTempDir('pcc-state', async (dir) => {
    const cat = await catalogue(dir);
    const put: Phase<RawStackState> = {
      name: 'ASTROMETRY',
      optional: true,
      async run(ctx) {
        (ctx.state as RawStackState & { wcs?: unknown }).wcs = fx.wcs;
        return ok();
      },
    };
    const r = await runOn(fx, config({ postprocess: pp, pcc: { catalog_file: cat } }), join(dir, 'r'), [put, pccPhase], { header: new FitsHeader() });
    assert.is(r.end('PCC')?.status, 'ok');
    assert.is(r.state.summaries.PCC?.wcs_source, 'astrometry');
    const out = await readFitsImage(join(r.result.runDir, 'outputs', 'stacked_rgb_pcc.fits'));
    assert.is(out.header.getString('CTYPE2'), 'DEC--TAN');
  });
});

test.run();
