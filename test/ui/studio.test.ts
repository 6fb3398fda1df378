// Browser tests of the run studio and the tiled run monitor (issue 20), in one session against the
// real server on generated data: key completion in the YAML editor (Ctrl-Space, Enter, Tab, Esc),
// suggestions applied as tiled keys, templates saved, loaded and deleted, a tiled run started from
// the studio and watched to its end in the monitor (phases, tile grid over N_eff, configuration,
// revision rev_0001 and its YAML, the Resume from phase control answering a Check, a user
// revision rev_0002 saved from an edit, Save as template), and a Raw
// Stack run whose revision and resume controls are disabled with the reason. Screenshots:
// dist/test-artifacts/ui/ (docs-ui-run-studio.jpg and docs-ui-tiled-monitor.jpg are docs/ copies).

import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { execFile } from 'node:child_process';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { parse } from 'yaml';
import { apiJson, shot, skipReason, startUiEnv, type UiEnv, uiTestRunner } from './harness.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const getComputedStyle: any;
type El = any;

const ui = suite('run studio');
let env: UiEnv | null = null;
let page: Page;

ui.before(async () => {
  if (skipReason) return;
  env = await startUiEnv();
  page = await env.context.newPage();
  page.on('dialog', (d) => void d.accept());
});

ui.after(async () => {
  await env?.close();
});

/** A test of the session; on failure the page is saved as studio-failure-<n>.png beside the screenshots. */
const run = uiTestRunner(ui, 'studio-', () => page);

const editor = () => page.inputValue('#config_yaml');
const completions = '#config_yaml-completions';

/** Fast settings for the 192×128 test frames (no solver, no PCC, few stars per tile). */
const QUICK = 'tile:\n  star_min_count: 2\nastrometry:\n  enabled: false\nbge:\n  method: none\npcc:\n  enabled: false\nhypermetric_stretch:\n  enabled: false\n';

run('header: the studio shows the Raw Stack page\'s "skystack <version> · device <kind>" line', async () => {
  const info = await apiJson<{ name: string; version: string; capabilities: { device: { kind: string } } }>(env!, 'GET', '/api/system/info');
  const expected = `${info.name} ${info.version} · device ${info.capabilities.device.kind}`;
  const line = async (path: string) => {
    await page.goto(path);
    await page.waitForFunction(() => (document.getElementById('server-info')?.textContent ?? '') !== '');
    return page.textContent('#server-info');
  };
  assert.is(await line('/ui/tiled.html'), expected);
  assert.is(await line('/ui/'), expected);
});

run('key completion: Ctrl-Space lists the valid keys at the cursor with description and default; Enter, Tab and Esc', async () => {
  await page.goto('/ui/tiled.html');
  await page.click('#config_yaml');
  await page.keyboard.type('stacking:\n  wei');
  await page.keyboard.press('Control+Space');
  const item = page.locator(`${completions} li[data-key="weight_mode"]`);
  await item.waitFor();
  assert.match((await item.textContent()) ?? '', /"local" \| "global" \| "uniform" = "local".*per-tile weight field/);
  assert.equal(await page.$$eval(`${completions} li`, (els) => els.map((e) => (e as El).dataset.key)), ['weight_mode', 'weighting'], 'filtered by the typed prefix, in schema order');
  // The list opens just under the cursor's line (line 2): its top within half a line of that line's bottom.
  const where = await page.evaluate(() => {
    const a = document.getElementById('config_yaml');
    const st = getComputedStyle(a);
    const lh = parseFloat(st.lineHeight);
    const lineBottom = a.getBoundingClientRect().top + parseFloat(st.paddingTop) + 2 * lh - a.scrollTop;
    return { gap: document.getElementById('config_yaml-completions').getBoundingClientRect().top - lineBottom, lh };
  });
  assert.ok(Math.abs(where.gap) <= where.lh / 2, `list ${where.gap.toFixed(1)} px from the line's bottom`);
  await page.keyboard.press('Enter');
  assert.is(await editor(), 'stacking:\n  weight_mode: ');
  assert.ok(await page.locator(completions).isHidden());
  await page.keyboard.type('global\n  sig');
  await page.keyboard.press('Control+Space');
  await page.locator(`${completions} li[data-key="sigma_clip"]`).waitFor();
  // Typing filters the open list; ↓ moves; Tab inserts the block key and opens its indented line.
  const before = await page.$$eval(`${completions} li`, (els) => els.map((e) => (e as El).dataset.key));
  assert.equal(before, ['sigma_clip']);
  await page.keyboard.press('Tab');
  assert.is(await editor(), 'stacking:\n  weight_mode: global\n  sigma_clip:\n    ');
  await page.keyboard.press('Control+Space');
  await page.locator(`${completions} li[data-key="sigma_low"]`).waitFor();
  assert.equal((await page.$$eval(`${completions} li`, (els) => els.map((e) => (e as El).dataset.key))).slice(0, 2), ['sigma_low', 'sigma_high']);
  await page.keyboard.press('ArrowDown');
  assert.is(await page.getAttribute(`${completions} li[data-key="sigma_high"]`, 'aria-selected'), 'true');
  await page.keyboard.press('Escape');
  assert.ok(await page.locator(completions).isHidden());
  assert.is(await editor(), 'stacking:\n  weight_mode: global\n  sigma_clip:\n    ', 'Esc changes nothing');
  // Keys already written in the block are not offered again.
  await page.fill('#config_yaml', 'stacking:\n  method: sigma\n  ');
  await page.focus('#config_yaml');
  await page.keyboard.press('End');
  await page.evaluate(() => {
    const a = document.getElementById('config_yaml');
    a.setSelectionRange(a.value.length, a.value.length);
  });
  await page.keyboard.press('Control+Space');
  await page.locator(`${completions} li[data-key="weight_mode"]`).waitFor();
  assert.is(await page.locator(`${completions} li[data-key="method"]`).count(), 0);
  await page.keyboard.press('Escape');
});

run('Browse… picks the input folder in the folder browser, which counts the FITS files of a folder (none above lights/)', async () => {
  await page.goto('/ui/tiled.html');
  await page.click('#browse-input');
  await page.locator('#browser[open]').waitFor();
  // A mistyped path is said as the pages say every refusal: the message, then the code.
  await page.fill('#browser-path', `${env!.dataDir}/nope`);
  await page.click('#browser-go');
  await page.waitForFunction(() => /does not exist \(PATH_NOT_FOUND\)$/.test(document.getElementById('browser-status')?.textContent ?? ''));
  await page.fill('#browser-path', env!.dataDir);
  await page.click('#browser-go');
  await page.waitForFunction(() => /No FITS files here: open the subfolder/.test(document.getElementById('browser-status')?.textContent ?? ''));
  await page.click('#browser-list button[data-name="lights"]');
  await page.waitForFunction(() => /\d+ of them FITS$/.test(document.getElementById('browser-status')?.textContent ?? ''));
  await page.click('#browser-choose');
  assert.is(await page.inputValue('#input_dir'), env!.lightsDir);
});

run('suggestions: tiled keys from the server (kind tiled), applied into the editor one by one', async () => {
  await page.goto('/ui/tiled.html');
  await page.fill('#input_dir', env!.lightsDir);
  await page.fill('#config_yaml', QUICK);
  await page.click('#btn-suggest');
  await page.waitForFunction(() => /suggestions? for tiled keys/.test(document.getElementById('suggest-status')?.textContent ?? ''), null, { timeout: 30_000 });
  const paths = await page.$$eval('#suggest-body tr', (els) => els.map((e) => (e as El).dataset.path as string));
  // The data were measured: the tile size from the seeing and the weighting from the frame count, beside rejection and the machine's.
  for (const p of ['stacking.method', 'stacking.weight_mode', 'tile.min_size', 'runtime_limits.parallel_workers']) assert.ok(paths.includes(p), `${p} in ${paths.join(', ')}`);
  // At 1280 px the table fits its panel: long reasons wrap, the Apply buttons are in view.
  const fit = await page.$eval('#suggest-body', (el) => {
    const wrap = (el as El).closest('.table-wrap');
    return { scroll: wrap.scrollWidth, client: wrap.clientWidth };
  });
  assert.ok(fit.scroll <= fit.client + 1, `suggestions table ${fit.scroll} px in a ${fit.client} px panel`);
  const value = (await page.textContent('#suggest-body tr[data-path="stacking.method"] td:nth-child(2) code'))!.trim();
  await page.click('#suggest-body tr[data-path="stacking.method"] button');
  let cfg = parse(await editor());
  assert.is(cfg.stacking.method, value, 'the suggested method is in the editor');
  assert.is(cfg.tile.star_min_count, 2, 'the rest is kept');
  const size = Number((await page.textContent('#suggest-body tr[data-path="tile.min_size"] td:nth-child(2) code'))!.trim());
  await page.click('#suggest-body tr[data-path="tile.min_size"] button');
  cfg = parse(await editor());
  assert.is(cfg.tile.min_size, size);
  assert.is(cfg.tile.star_min_count, 2, 'a key of the same block is kept');
  await page.waitForFunction(() => document.getElementById('yaml-status')?.textContent === 'Valid.');
  await page.click('#config_yaml');
  await page.keyboard.press('Control+End');
  // The editor ends in the stacking block: the list offers its other keys (the picture for docs/).
  await page.keyboard.type('  ');
  await page.keyboard.press('Control+Space');
  await page.locator(`${completions} li[data-key="weight_mode"]`).waitFor();
  await shot(page, 'ui-run-studio', true, true);
  await page.keyboard.press('Escape');
});

run('templates: save the editor under a name, load it back, refuse a bad name and YAML errors, delete', async () => {
  await page.goto('/ui/tiled.html');
  await page.fill('#config_yaml', 'stacking:\n  method: winsor\n');
  await page.fill('#template-name', '../evil');
  await page.click('#btn-template-save');
  assert.match((await page.textContent('#template-status')) ?? '', /template name is 1–64 letters/);
  await page.fill('#template-name', 'winsor-osc');
  await page.click('#btn-template-save');
  await page.waitForFunction(() => /^Saved template winsor-osc/.test(document.getElementById('template-status')?.textContent ?? ''));
  assert.is(await page.inputValue('#template-list'), 'winsor-osc');
  const stored = await apiJson<{ yaml: string }>(env!, 'GET', '/api/config/templates/winsor-osc');
  assert.is(stored.yaml, 'stacking:\n  method: winsor\n');
  // A configuration with errors is refused by the server, its line marked in the editor.
  await page.fill('#config_yaml', 'stacking:\n  method: fancy\n');
  await page.fill('#template-name', 'broken');
  await page.click('#btn-template-save');
  await page.waitForFunction(() => /^Not saved/.test(document.getElementById('template-status')?.textContent ?? ''));
  assert.ok(await page.locator('#yaml-gutter .gutter-error[data-line="2"]').isVisible());
  // Load into a fresh page.
  await page.goto('/ui/tiled.html');
  await page.locator('#template-list option[value="winsor-osc"]').waitFor({ state: 'attached' });
  await page.selectOption('#template-list', 'winsor-osc');
  assert.is(await page.inputValue('#template-name'), 'winsor-osc');
  await page.click('#btn-template-load');
  await page.waitForFunction(() => /^Loaded template winsor-osc/.test(document.getElementById('template-status')?.textContent ?? ''));
  assert.is(await editor(), 'stacking:\n  method: winsor\n');
  await page.click('#btn-template-delete');
  await page.waitForFunction(() => /^Deleted template winsor-osc/.test(document.getElementById('template-status')?.textContent ?? ''));
  assert.equal((await apiJson<{ items: unknown[] }>(env!, 'GET', '/api/config/templates')).items, []);
  assert.ok(await page.isDisabled('#btn-template-load'));
});

run('a tiled run started in the studio, watched to its end in the monitor: phases, tile grid, configuration, rev_0001, Resume check, New revision, Save as template', async () => {
  await page.goto('/ui/tiled.html');
  await page.fill('#input_dir', env!.lightsDir);
  await page.fill('#run_name', 'studio_run');
  await page.fill('#config_yaml', QUICK);
  await page.click('#btn-start');
  const link = page.locator('#monitor-link');
  await link.waitFor();
  // Cancel asks first, as on the Raw Stack page; "Keep running" keeps the run (it ends ok below).
  await page.click('#btn-cancel', { timeout: 5_000 }).catch(() => {}); // the run may have ended already
  if (await page.locator('#confirm-cancel[open]').count()) {
    await page.click('#confirm-no');
    assert.not.ok(await page.locator('#confirm-cancel').evaluate((d) => (d as El).open));
  }
  await link.click();
  await page.waitForURL(/run-monitor\.html\?preprocessing_job_id=/);
  await page.waitForFunction(() => /^Run (ok|error|cancelled)/.test(document.getElementById('job-status')?.textContent ?? ''), null, { timeout: 180_000 });
  assert.match((await page.textContent('#job-status')) ?? '', /^Run ok/);
  assert.is(await page.getAttribute('#phase-body tr[data-phase="STACKING"]', 'data-status'), 'ok');
  assert.is(await page.getAttribute('#phase-body tr[data-phase="TILE_RECONSTRUCTION"]', 'data-status'), 'ok');
  const runId = ((await page.textContent('#run-title')) ?? '').split(' ')[0]!;
  assert.match(runId, /^studio_run_/);
  // The tile grid: one rectangle per tile of tile_grid.json, numbered with N_eff from tile_reconstruction.json.
  const grid = (await apiJson<{ json: { num_tiles: number } }>(env!, 'GET', `/api/runs/${runId}/artifacts/view?path=artifacts/tile_grid.json`)).json;
  const recon = (await apiJson<{ json: { tiles: { n_eff: number }[] } }>(env!, 'GET', `/api/runs/${runId}/artifacts/view?path=artifacts/tile_reconstruction.json`)).json;
  await page.locator('#tiles-box figure[data-map="n_eff"] svg rect').first().waitFor({ timeout: 20_000 });
  assert.is(await page.locator('#tiles-box figure[data-map="n_eff"] svg rect').count(), grid.num_tiles);
  const labels = await page.$$eval('#tiles-box figure[data-map="n_eff"] svg text', (els) => els.map((e) => (e as El).textContent));
  assert.equal(labels, recon.tiles.map((t) => t.n_eff.toFixed(1)));
  await page.locator('#tiles-box figure[data-map="n_eff"] svg image').waitFor({ state: 'attached', timeout: 20_000 });
  // Configuration and revisions.
  await page.waitForFunction(() => /star_min_count: 2/.test(document.getElementById('config-text')?.textContent ?? ''));
  const rev = page.locator('#revision-list li[data-rev="rev_0001"]');
  await rev.waitFor();
  assert.match((await rev.textContent()) ?? '', /run_start/);
  await rev.locator('button').click();
  await page.waitForFunction(() => /star_min_count: 2/.test(document.getElementById('revision-view')?.textContent ?? ''));
  // Resume from phase: enabled for a tiled run, STACKING picked, Check finds it feasible.
  assert.ok(await page.isEnabled('#btn-resume-check'));
  assert.ok(await page.isEnabled('#btn-resume'));
  assert.ok(await page.isDisabled('#btn-resume-start'), 'Start resume waits for a check');
  assert.is(await page.inputValue('#resume-phase'), 'STACKING');
  await page.click('#btn-resume-check');
  await page.waitForFunction(() => (document.getElementById('resume-result')?.dataset.feasible ?? '') !== '');
  assert.is(await page.getAttribute('#resume-result', 'data-feasible'), 'true', (await page.textContent('#resume-result')) ?? '');
  assert.ok(await page.isEnabled('#btn-resume-start'));
  assert.match((await page.textContent('#resume-result')) ?? '', /Would re-run: STACKING/);
  // Another choice on screen takes the check back; checking again gives it back.
  await page.check('input[name="resume-source"][value="edited"]');
  assert.ok(await page.isDisabled('#btn-resume-start'));
  await page.check('input[name="resume-source"][value="current"]');
  await page.click('#btn-resume-check');
  await page.waitForFunction(() => (document.getElementById('resume-result')?.dataset.feasible ?? '') === 'true');
  assert.ok(await page.isEnabled('#btn-resume-start'));
  // The picture for docs/: the tile maps, the configuration with its revisions and the resume control.
  await page.setViewportSize({ width: 1280, height: 1250 });
  await page.locator('#tiles-box').evaluate((e) => (e as El).scrollIntoView({ block: 'start' }));
  await shot(page, 'ui-tiled-monitor', false, true);
  await page.setViewportSize({ width: 1280, height: 800 });
  assert.ok(await page.locator('#resume-yaml-box').isHidden(), 'the YAML box only for an edited configuration');
  // Save as template: the run's configuration under its run id, in the studio's list.
  await page.click('#btn-template');
  await page.waitForFunction(() => /^Saved the run's configuration as template/.test(document.getElementById('job-status')?.textContent ?? ''));
  const t = await apiJson<{ yaml: string }>(env!, 'GET', `/api/config/templates/${runId}`);
  // New revision: first it opens the editor with the current configuration, then it saves the edit.
  await page.click('#btn-revision');
  await page.waitForFunction(() => /^Edit the configuration here/.test(document.getElementById('resume-status')?.textContent ?? ''));
  assert.ok(await page.locator('#resume-yaml-box').isVisible());
  const yaml = await page.inputValue('#resume-yaml');
  assert.match(yaml, /star_min_count: 2/);
  await page.fill('#resume-yaml', yaml.replace(/^(stacking:\n(?: {2}.*\n)*? {2}method: )sigma/m, '$1winsor'));
  await page.click('#btn-revision');
  await page.waitForFunction(() => /^Saved rev_0002/.test(document.getElementById('resume-status')?.textContent ?? ''));
  await page.locator('#revision-list li[data-rev="rev_0002"]').waitFor();
  assert.match((await page.textContent('#revision-list li[data-rev="rev_0002"]')) ?? '', /user/);
  await page.click('#revision-list li[data-rev="rev_0002"] button');
  await page.waitForFunction(() => /method: winsor/.test(document.getElementById('revision-view')?.textContent ?? ''));
  const saved = parse(t.yaml);
  assert.is(saved.tile.star_min_count, 2);
  assert.is(saved.pcc.enabled, false);
  assert.not.ok('_runtime' in saved, 'what the run recorded about itself is left out');
  // A template holds how to process, not which session: the run's input folder is left empty.
  assert.is(saved.input.input_dir, '');
  assert.is(saved.input.pattern, '*.fits');
});

run('a Raw Stack run: revisions, resume and template controls disabled, each saying why', async () => {
  const cli = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'cli.js');
  await promisify(execFile)(process.execPath, [cli, 'rawstack', '--lights', env!.lightsDir, '--runs-dir', env!.runsDir, '--run-name', 'raw_cli', '--set', 'postprocess.astrometry=false', '--set', 'postprocess.pcc=false', '--set', 'postprocess.hypermetric_stretch=false', '--set', 'postprocess.bge=false', '--json'], { env: { ...process.env, SKYSTACK_DEVICE: 'cpu' }, timeout: 120_000 });
  await page.goto('/ui/run-monitor.html');
  await page.locator('#runs-list li[data-run^="raw_cli_"] a').click();
  await page.waitForFunction(() => /^Run ok/.test(document.getElementById('job-status')?.textContent ?? ''), null, { timeout: 20_000 });
  await page.waitForFunction(() => /Raw Stack runs keep no configuration revisions/.test(document.getElementById('revision-list')?.textContent ?? ''));
  for (const id of ['btn-resume', 'btn-revision', 'btn-template', 'resume-phase', 'btn-resume-check', 'btn-resume-start']) {
    assert.ok(await page.isDisabled(`#${id}`), id);
    assert.match((await page.getAttribute(`#${id}`, 'title')) ?? '', /not available for Raw Stack runs: they are not resumable/i, id);
  }
  assert.match((await page.getAttribute('#resume-controls', 'title')) ?? '', /Raw Stack/);
  assert.match((await page.textContent('#config-note')) ?? '', /effective_config\.json/);
  assert.ok(await page.locator('#tiles-box').isHidden(), 'no tile grid for Raw Stack');
});

run('no request left the server; no page errors; only the refusals the tests provoked', async () => {
  const origin = new URL(env!.server.url).origin;
  const external = env!.requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:') && u !== 'about:blank');
  assert.equal(external, []);
  assert.equal(env!.pageErrors, []);
  // The template with YAML errors, and the mistyped path in the folder browser.
  const provoked = /^(400 PUT \/api\/config\/templates\/broken|422 GET \/api\/files\/list\?path=[^ ]*%2Fnope) /;
  assert.equal(env!.failedResponses.filter((r) => !provoked.test(r)), [], env!.failedResponses.join('\n'));
});

ui.run();
