// Browser tests of the web UI (issue 10 bars), in one session against the real server: the Raw
// Stack page's first load, a validation error shown at its key, a tiled-workflow YAML import
// (pasted, local file and server path), the folder browser and the run queue, a run started
// from the form whose every phase reaches its final state, the report, the full run monitor with
// events.jsonl in the artifact viewer, a frame-table toggle stored as manual_overrides, the frame
// table's sort and plots and its open-frame hook, Cancel's confirmation, labelled controls and the
// narrow layout, and no request leaving the server.
// Screenshots of each page go to dist/test-artifacts/ui/.

import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync } from 'node:fs';
import { copyFile, mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { fileURLToPath } from 'node:url';
import type { Page } from 'playwright-core';
import { apiJson, ARTIFACT_DIR, shot, skipReason, startUiEnv, type UiEnv, uiTestRunner } from './harness.js';

// The page callbacks below run in the browser. The Node project has no DOM types (adding the DOM
// lib would retype Node code), so the globals they touch are declared loosely for this file.
/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const window: any;
declare const localStorage: any;
declare const getComputedStyle: any;
type El = any;

const PHASES = ['INPUT_SCAN', 'CALIBRATION', 'CFA_CHANNEL_PREP', 'REFERENCE_SELECTION', 'REGISTRATION', 'QUALITY_ANALYSIS', 'FRAME_FILTERING', 'STACKING', 'ASTROMETRY', 'BGE', 'PCC', 'HYPERMETRIC_STRETCH', 'REPORT'];
const FINAL = new Set(['ok', 'skipped', 'error']);

const ui = suite('web UI');
let env: UiEnv | null = null;
let page: Page;
let jobId = '';

ui.before(async () => {
  if (skipReason) return;
  env = await startUiEnv();
  page = await env.context.newPage();
});

ui.after(async () => {
  await env?.close();
});

/** A test of the session; on failure the page is saved as failure-<n>.png beside the screenshots. */
const run = uiTestRunner(ui, '', () => page);

type Cfg = { config: Record<string, unknown> };
const stored = async () => (await apiJson<Cfg>(env!, 'GET', '/api/tools/preprocessing/parameters')).config;
const get = (o: unknown, path: string): unknown => path.split('.').reduce<unknown>((n, k) => (n && typeof n === 'object' ? (n as Record<string, unknown>)[k] : undefined), o);

run('first load: fields from the stored parameters; editor buttons enabled, Report and Run Monitor disabled', async () => {
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"quality_filter"'));
  for (const id of ['btn-defaults', 'btn-validate', 'btn-reset', 'btn-start']) assert.ok(await page.isEnabled(`#${id}`), id);
  for (const id of ['btn-report', 'btn-monitor', 'btn-cancel']) assert.ok(await page.isDisabled(`#${id}`), id);
  // A pointed-at Start stays a dark button under its white text (it turned light grey and looked disabled).
  await page.hover('#btn-start');
  const bg = await page.$eval('#btn-start', (b) => getComputedStyle(b as El).backgroundColor as string);
  const [r, g, b] = bg.match(/\d+/g)!.map(Number);
  assert.ok(0.2126 * r! + 0.7152 * g! + 0.0722 * b! < 128, `hovered Start background ${bg}`);
  await page.mouse.move(0, 0);
  // The form shows the seed's defaults.
  assert.is(await page.inputValue('#pattern'), '*.fits');
  assert.is(await page.inputValue('#qf_min_stars'), '30');
  assert.is(await page.inputValue('#qf_min_correlation'), '0.75');
  assert.is(await page.inputValue('#rej_low'), '3');
  assert.is(await page.inputValue('#stack_normalization'), 'addscale');
  assert.is(await page.inputValue('#stack_weighting'), 'quality');
  for (const id of ['pp_astrometry', 'pp_bge', 'pp_pcc', 'pp_hms']) assert.ok(await page.isChecked(`#${id}`), id);
  // The PCC catalogue field: empty by default, with a note of the catalogue the server would use.
  assert.is(await page.inputValue('#pcc_catalog_file'), '');
  await page.waitForFunction(() => (document.getElementById('pcc-catalog-note')?.textContent ?? '') !== '');
  const note = (await page.textContent('#pcc-catalog-note')) ?? '';
  if (existsSync('/usr/share/kstars/stars.dat')) assert.match(note, /^Empty: PCC uses the installed kstars-data catalogue \/usr\/share\/kstars\/stars\.dat \(stars to V 8\.99\)/);
  else assert.match(note, /no catalogue package installed .*PCC will be skipped/);
  await page.fill('#pcc_catalog_file', '/data/my-catalogue.csv');
  assert.is(await page.textContent('#pcc-catalog-note'), 'PCC reads /data/my-catalogue.csv.');
  await page.fill('#pcc_catalog_file', '');
  // Phase chips start pending, one per seed phase.
  assert.equal(await page.$$eval('#phase-chips li', (els) => els.map((e) => (e as El).dataset.phase)), PHASES);
});

run('every control is labelled', async () => {
  for (const url of ['/ui/', '/ui/run-monitor.html', '/ui/tiled.html']) {
    await page.goto(url);
    const unlabelled = await page.$$eval('input, select, textarea, button', (els) =>
      els
        .filter((e) => {
          const el = e as El;
          if (el.type === 'hidden') return false;
          const named = (el.labels?.length ?? 0) > 0 || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || (el.tagName === 'BUTTON' && el.textContent?.trim());
          return !named;
        })
        .map((e) => e.outerHTML.slice(0, 80)),
    );
    assert.equal(unlabelled, [], url);
  }
});

run('editor gutter: row n stands beside text line n at lines 1, 50 and 200 (also with a horizontal scrollbar)', async () => {
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"bge"'));
  // 250 lines, one of them long enough for a horizontal scrollbar.
  const text = ['{', ...Array.from({ length: 248 }, (_, i) => `  "k${i + 2}": ${i === 120 ? `"${'x'.repeat(400)}"` : i},`), '  "end": 0', '}'].join('\n');
  await page.fill('#params-json', text);
  for (const n of [1, 50, 200, 250]) {
    const m = await page.evaluate((line) => {
      const ta = document.getElementById('params-json') as El;
      // As far down as the text area scrolls, or line n near the top.
      ta.scrollTop = Math.min(ta.scrollHeight, (line - 3) * parseFloat(getComputedStyle(ta).lineHeight));
      ta.dispatchEvent(new Event('scroll'));
      const cs = getComputedStyle(ta);
      // The rendered line pitch (layout snaps the computed line height to its units).
      const lh = (ta.scrollHeight - parseFloat(cs.paddingTop) - parseFloat(cs.paddingBottom)) / ta.value.split('\n').length;
      const textTop = ta.getBoundingClientRect().top + parseFloat(cs.borderTopWidth) + parseFloat(cs.paddingTop) + (line - 1) * lh - ta.scrollTop;
      const row = document.querySelectorAll('#editor-gutter > div')[line - 1] as El;
      return { textTop, rowTop: row.getBoundingClientRect().top, rowHeight: row.getBoundingClientRect().height, lh, visible: textTop >= ta.getBoundingClientRect().top - 1 && textTop < ta.getBoundingClientRect().bottom };
    }, n);
    assert.ok(m.visible, `line ${n} is in view`);
    assert.ok(Math.abs(m.rowHeight - m.lh) < 0.05, `gutter row height ${m.rowHeight} = text line height ${m.lh}`);
    assert.ok(Math.abs(m.rowTop - m.textTop) <= 1, `line ${n}: gutter row at ${m.rowTop.toFixed(1)} px, text line at ${m.textTop.toFixed(1)} px`);
  }
});

run('Validate names the editor values a form field replaced; Defaults says it loaded the stored parameters and when they were saved', async () => {
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"min_correlation"'));
  const field = await page.inputValue('#qf_min_correlation');
  const text = await page.inputValue('#params-json');
  const typed = text.replace(/"min_correlation": [0-9.]+/, '"min_correlation": 0.42');
  assert.is.not(typed, text);
  await page.fill('#params-json', typed);
  await page.click('#btn-validate');
  await page.waitForFunction(() => /^Valid\./.test(document.getElementById('editor-status')?.textContent ?? ''));
  const said = (await page.textContent('#editor-status')) ?? '';
  assert.match(said, `quality_filter.min_correlation (0.42 → ${Number(field)})`);
  assert.match(said, /replaced 1 value typed in the editor/);
  assert.is(get(await stored(), 'quality_filter.min_correlation'), Number(field), 'the form value was stored, as the note says');
  await page.click('#btn-defaults');
  await page.waitForFunction(() => /^Loaded the stored parameters/.test(document.getElementById('editor-status')?.textContent ?? ''));
  assert.match((await page.textContent('#editor-status')) ?? '', /\(saved .+\)\.$/);
});

run('Validate shows each error at its key; Reset loads the backend defaults', async () => {
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"target_bg"'));
  const text = await page.inputValue('#params-json');
  await page.fill('#params-json', text.replace('"target_bg": 0.15', '"target_bg": 5'));
  await page.fill('#qf_min_correlation', '2');
  await page.click('#btn-validate');
  const issue = page.locator('#editor-issues li[data-key="hypermetric_stretch.target_bg"]');
  await issue.waitFor();
  // The issue names the line the key is written on, and the gutter marks that line.
  const editorText = await page.inputValue('#params-json');
  const line = editorText.split('\n').findIndex((l) => l.includes('"target_bg"')) + 1;
  assert.ok(line > 0);
  assert.is(await issue.getAttribute('data-line'), String(line));
  assert.match((await issue.textContent()) ?? '', `line ${line}`);
  assert.ok(await page.locator(`#editor-gutter .gutter-error[data-line="${line}"]`).isVisible());
  // A visible field's error is shown at the field too.
  await page.locator('#err-qf_min_correlation').waitFor();
  assert.is(await page.getAttribute('#qf_min_correlation', 'aria-invalid'), 'true');
  assert.ok(await page.locator('#editor-issues li[data-key="quality_filter.min_correlation"]').isVisible());
  assert.match((await page.textContent('#editor-status')) ?? '', /2 validation errors/);
  await shot(page, 'raw-stack-validation');
  // Nothing was stored.
  assert.is(get(await stored(), 'hypermetric_stretch.target_bg'), 0.15);
  await page.click('#btn-reset');
  await page.waitForFunction(() => document.querySelectorAll('#editor-issues li').length === 0);
  assert.match((await page.textContent('#editor-status')) ?? '', /^Loaded the backend defaults/);
  assert.is(await page.inputValue('#qf_min_correlation'), '0.75');
  assert.match(await page.inputValue('#params-json'), /"target_bg": 0.15/);
  assert.is(await page.locator('.field-error').count(), 0);
});

const YAML = `# tiled workflow (predecessor) configuration
runtime_limits:
  parallel_workers: 3
normalization:
  mode: median
stacking:
  weighting: uniform
  sigma_clip:
    sigma_low: 2.5
    sigma_high: 4
bge:
  method: none
  grid_cells: 24
  no_such_key: 1
hypermetric_stretch:
  enabled: false
  target_bg: 0.2
tile_reconstruction:
  enabled: true
`;

async function importedValues(): Promise<Record<string, string>> {
  await page.locator('#import-mapped tr').first().waitFor();
  return Object.fromEntries(await page.$$eval('#import-mapped tr', (rows) => rows.map((r) => [(r as El).dataset.to!, r.querySelectorAll('td')[2]!.textContent ?? ''])));
}

run('import from a pasted tiled-workflow YAML: mapped values in the table, the fields and the editor; ignored keys listed', async () => {
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"bge"'));
  await page.click('#import-box summary');
  await page.fill('#import-yaml', YAML);
  await page.click('#btn-import');
  const mapped = await importedValues();
  assert.is(mapped['stacking.normalization'], '"median"');
  assert.is(mapped['stacking.weighting'], '"uniform"');
  assert.is(mapped['rejection.low'], '2.5');
  assert.is(mapped['rejection.high'], '4');
  assert.is(mapped['runtime_limits.parallel_workers'], '3');
  assert.is(mapped['postprocess.bge'], 'false');
  assert.is(mapped['postprocess.hypermetric_stretch'], 'false');
  assert.is(mapped['bge.grid_cells'], '24');
  assert.is(mapped['hypermetric_stretch.target_bg'], '0.2');
  const ignored = await page.$$eval('#import-ignored li', (els) => els.map((e) => (e as El).dataset.path));
  assert.ok(ignored.includes('bge.no_such_key'), JSON.stringify(ignored));
  // The visible fields show the imported values (they may be overridden before a start).
  assert.is(await page.inputValue('#stack_normalization'), 'median');
  assert.is(await page.inputValue('#stack_weighting'), 'uniform');
  assert.is(await page.inputValue('#rej_low'), '2.5');
  assert.not.ok(await page.isChecked('#pp_bge'));
  assert.not.ok(await page.isChecked('#pp_hms'));
  assert.ok(await page.isChecked('#pp_pcc'));
  const cfg = JSON.parse(await page.inputValue('#params-json')) as Record<string, unknown>;
  assert.is(get(cfg, 'bge.grid_cells'), 24);
  assert.is(get(cfg, 'runtime_limits.parallel_workers'), 3);
  await shot(page, 'raw-stack-import');
});

run('import from a local file (read in the browser) and from a server path', async () => {
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"bge"'));
  await page.click('#import-box summary');
  await page.setInputFiles('#import-file', { name: 'tile_compile.yaml', mimeType: 'text/yaml', buffer: Buffer.from('normalization:\n  mode: background\n') });
  await page.waitForFunction(() => (document.getElementById('import-yaml') as El).value.includes('background'));
  await page.click('#btn-import');
  assert.is((await importedValues())['stacking.normalization'], '"background"');
  assert.is(await page.inputValue('#stack_normalization'), 'background');

  const file = join(env!.dataDir, 'tiled.yaml');
  await writeFile(file, 'stacking:\n  weighting: uniform\npcc:\n  enabled: false\n');
  await page.fill('#import-yaml', '');
  await page.fill('#import-path', file);
  await page.click('#btn-import');
  await page.waitForFunction(() => document.querySelector('#import-mapped tr[data-to="postprocess.pcc"]') !== null);
  assert.not.ok(await page.isChecked('#pp_pcc'));
  assert.is(await page.inputValue('#stack_weighting'), 'uniform');
});

run('folder browser picks the input folder; queue entries are added from it and removed', async () => {
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"bge"'));
  await page.click('#browse-lights');
  await page.locator('#browser[open]').waitFor();
  // Starts at the allowed roots; walk into data/ then lights/.
  await page.locator(`#browser-list button[data-name="${env!.dataDir}"]`).click();
  await page.locator('#browser-list button[data-name="lights"]').click();
  await page.waitForFunction(() => (document.getElementById('browser-path') as El).value.endsWith('/lights'));
  await shot(page, 'folder-browser', false);
  await page.click('#browser-choose');
  assert.is(await page.inputValue('#lights_dir'), env!.lightsDir);

  // A folder outside the roots is refused, and Grant access makes it listable.
  await page.click('#browse-runs');
  await page.locator('#browser-list button[data-name="light_00001.fits"]').waitFor();
  await page.fill('#browser-path', env!.outsideDir);
  await page.press('#browser-path', 'Enter');
  await page.locator('#browser-grant:not([hidden])').waitFor();
  assert.match((await page.textContent('#browser-status')) ?? '', /outside the allowed folders/);
  await page.click('#browser-grant');
  await page.locator('#browser-list button[data-name="night1"]').waitFor();
  await page.keyboard.press('Escape');
  await page.locator('#browser[open]').waitFor({ state: 'detached' }).catch(() => {});
  assert.is(await page.inputValue('#runs_dir'), '');

  // Colour mode auto: the folder's headers (BAYERPAT) make the entry's filter OSC.
  assert.is(await page.inputValue('#input_mode'), 'auto');
  await page.click('#queue-add');
  await page.locator('#queue-body tr').waitFor();
  assert.match((await page.textContent('#queue-status')) ?? '', /8 frames match \*\.fits \(OSC\)/);
  assert.is(await page.locator('#queue-body tr').count(), 1);
  assert.is(await page.inputValue('#queue-body tr .q-filter'), 'OSC');
  assert.match((await page.textContent('#queue-body tr .path-cell')) ?? '', env!.lightsDir);
  await page.click('#queue-add'); // the same folder twice is refused
  await page.waitForFunction(() => /already in the queue/.test(document.getElementById('queue-status')?.textContent ?? ''));
  assert.is(await page.locator('#queue-body tr').count(), 1);
  // Entries are edited in place: label, pattern and active.
  await page.fill('#queue-body tr .q-label', 'night 1');
  await page.uncheck('#queue-body tr .q-active');
  await page.click('#queue-body tr button');
  assert.is(await page.locator('#queue-body tr').count(), 0);
  assert.ok(await page.isVisible('#queue-empty'));
});

run('a folder of .fit files under the default *.fits: the hint names them and one click sets the pattern', async () => {
  const fitDir = join(env!.dataDir, 'fit-lights');
  await mkdir(fitDir, { recursive: true });
  for (const n of ['light_00001', 'light_00002']) await copyFile(join(env!.lightsDir, `${n}.fits`), join(fitDir, `${n}.fit`));
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"bge"'));
  assert.ok(await page.isHidden('#pattern-hint'));
  assert.is(await page.inputValue('#pattern'), '*.fits');
  await page.fill('#lights_dir', fitDir);
  await page.dispatchEvent('#lights_dir', 'change');
  await page.locator('#pattern-hint:not([hidden])').waitFor();
  assert.match((await page.textContent('#pattern-hint')) ?? '', /holds 2 FITS files \(2 × \.fit: light_00001\.fit, light_00002\.fit\); the pattern "\*\.fit" takes them/);
  assert.is(await page.textContent('#pattern-hint-use'), 'Use pattern *.fit');
  await shot(page, 'pattern-hint', false);
  await page.click('#pattern-hint-use');
  assert.is(await page.inputValue('#pattern'), '*.fit');
  await page.locator('#pattern-hint').waitFor({ state: 'hidden' });
});

run('start a run from the form (through a queue entry): every phase reaches its final state; Report and Run Monitor enabled', async () => {
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"bge"'));
  await page.fill('#lights_dir', env!.lightsDir);
  // The run goes through the queue: one entry taken from the input folder, labelled.
  await page.click('#queue-add');
  await page.locator('#queue-body tr').waitFor();
  await page.fill('#queue-body tr .q-label', 'night 1');
  await page.fill('#run_name', 'ui test');
  await page.fill('#qf_min_stars', '3');
  await page.fill('#qf_min_correlation', '0.3');
  await page.uncheck('#pp_astrometry');
  // An editor-only key: the runtime limits come from the JSON.
  const cfg = JSON.parse(await page.inputValue('#params-json')) as Record<string, Record<string, unknown>>;
  cfg.runtime_limits!.memory_budget = 256;
  cfg.rejection!.low = 9; // overridden by the visible field (3)
  await page.fill('#params-json', JSON.stringify(cfg, null, 2));
  await page.click('#btn-start');
  await page.waitForFunction(() => !(document.getElementById('btn-monitor') as El).disabled);
  await page.waitForFunction(
    (n) => {
      const chips = [...document.querySelectorAll('#phase-chips li')] as El[];
      return chips.length === n && chips.every((c) => ['ok', 'skipped', 'error'].includes(c.dataset.status ?? ''));
    },
    PHASES.length,
    { timeout: 60_000 },
  );
  await page.waitForFunction(() => /^Run (ok|error|cancelled)/.test(document.getElementById('run-status')?.textContent ?? ''), null, { timeout: 20_000 });
  const statuses = Object.fromEntries(await page.$$eval('#phase-chips li', (els) => els.map((e) => [(e as El).dataset.phase!, (e as El).dataset.status!])));
  for (const p of PHASES) assert.ok(FINAL.has(statuses[p]!), `${p}: ${statuses[p]}`);
  for (const p of ['INPUT_SCAN', 'CFA_CHANNEL_PREP', 'REFERENCE_SELECTION', 'REGISTRATION', 'QUALITY_ANALYSIS', 'FRAME_FILTERING', 'STACKING', 'REPORT']) assert.is(statuses[p], 'ok', p);
  assert.is(statuses.CALIBRATION, 'skipped');
  assert.is(statuses.ASTROMETRY, 'skipped');
  assert.match((await page.textContent('#run-status')) ?? '', /^Run ok/);
  // Beside the green "Run ok": PCC skipped (no plate solve), and HMS skipped with the switch that changes it.
  const notes = await page.$$eval('#run-notes li', (els) => els.map((e) => [(e as El).dataset.phase, e.textContent ?? '']));
  assert.equal(notes.map((n) => n[0]), ['PCC', 'HYPERMETRIC_STRETCH']);
  assert.match(notes[0]![1]!, /^PCC skipped \(no_wcs\)/);
  assert.match(notes[1]![1]!, /set hypermetric_stretch\.require_successful_pcc to false/);
  assert.ok(await page.isEnabled('#btn-report'));
  assert.ok(await page.isEnabled('#btn-monitor'));
  assert.ok(await page.isDisabled('#btn-cancel'));
  // The log shows the latest events, the artifact links the CSV, JSON and HTML report.
  assert.match((await page.textContent('#event-log')) ?? '', /run ok/);
  const links = await page.$$eval('#artifact-links a', (els) => els.map((e) => (e as El).dataset.path));
  for (const f of ['frame_quality.csv', 'stacking_diagnostics.json', 'preprocessing_report.html', 'events.jsonl']) assert.ok(links.some((l) => l?.endsWith(f)), f);

  jobId = await page.evaluate(() => localStorage.getItem('skystack.rawstack.lastJob') ?? '');
  assert.ok(jobId);
  // The job ran what the page showed: visible fields over the editor.
  const job = await apiJson<{ run_id: string; state: string }>(env!, 'GET', `/api/jobs/${jobId}`);
  assert.is(job.state, 'ok');
  const eff = await apiJson<{ json: Record<string, unknown> }>(env!, 'GET', `/api/runs/${job.run_id}/artifacts/view?path=artifacts/preprocess/effective_config.json`);
  assert.is(get(eff.json, 'rejection.low'), 3);
  assert.is(get(eff.json, 'runtime_limits.memory_budget'), 256);
  assert.is(get(eff.json, 'quality_filter.min_stars'), 3);
  assert.is(get(eff.json, 'postprocess.astrometry'), false);
  assert.equal(get(eff.json, 'queue'), [{ filter: 'OSC', input_dir: env!.lightsDir, label: 'night 1', active: true }]);
  assert.match(job.run_id, /^ui_test_\d{8}_\d{6}/);
  await page.locator('#frames:not([hidden])').waitFor();
  await shot(page, 'raw-stack', true, true);
});

run('Report opens preprocessing_report.html', async () => {
  const [popup] = await Promise.all([page.waitForEvent('popup'), page.click('#btn-report')]);
  await popup.waitForLoadState();
  assert.match(popup.url(), /\/artifacts\/raw\/artifacts\/preprocess\/preprocessing_report\.html$/);
  assert.match((await popup.textContent('body')) ?? '', /INPUT_SCAN/);
  assert.match(await popup.title(), /report/i);
  await shot(popup, 'report');
  await popup.close();
});

run('Run Monitor: preprocessing mode, phase list, disabled run functions, events.jsonl and CSV in the viewer, previews', async () => {
  const [monitor] = await Promise.all([page.waitForEvent('popup'), page.click('#btn-monitor')]);
  await monitor.waitForLoadState();
  assert.match(monitor.url(), new RegExp(`run-monitor\\.html\\?preprocessing_job_id=${jobId}$`));
  await monitor.waitForFunction((n) => [...document.querySelectorAll('#phase-body tr')].filter((r) => ['ok', 'skipped', 'error'].includes((r as El).dataset.status ?? '')).length === n, PHASES.length, { timeout: 20_000 });
  assert.equal(await monitor.$$eval('#phase-body tr', (rows) => rows.map((r) => (r as El).dataset.phase)), PHASES);
  for (const id of ['btn-resume', 'btn-revision', 'btn-template']) {
    assert.ok(await monitor.isDisabled(`#${id}`), id);
    assert.match((await monitor.getAttribute(`#${id}`, 'title')) ?? '', /not available for Raw Stack/i);
  }
  assert.ok(await monitor.isVisible('#mode-note'));
  assert.equal(await monitor.$$eval('#run-notes li', (els) => els.map((e) => (e as El).dataset.phase)), ['PCC', 'HYPERMETRIC_STRETCH']);
  assert.match((await monitor.textContent('#event-log')) ?? '', /REPORT ok/);
  // The frame table marks excluded frames with their reasons.
  await monitor.locator('#frames:not([hidden]) #frame-body tr').first().waitFor();
  const frames = await monitor.$$eval('#frame-body tr', (rows) => rows.map((r: El) => [r.dataset.status, r.querySelectorAll('td')[3].textContent]));
  assert.is(frames.length, 8);
  for (const [st, reason] of frames) assert.ok(st === 'included' ? reason === '' : st === 'excluded' && reason !== '', `${st} ${reason}`);

  await monitor.click('#artifact-list button[data-path="artifacts/preprocess/events.jsonl"]');
  await monitor.locator('#viewer .jsonl li[data-type="run_end"]').waitFor();
  const types = await monitor.$$eval('#viewer .jsonl li', (els) => els.map((e) => (e as El).dataset.type));
  assert.is(types[0], 'run_start');
  assert.is(types.filter((t) => t === 'phase_start').length, PHASES.length);
  assert.is(types.filter((t) => t === 'phase_end').length, PHASES.length);
  // A line opens as a JSON tree.
  await monitor.click('#viewer .jsonl li[data-type="run_end"] summary');
  assert.match((await monitor.textContent('#viewer .jsonl li[data-type="run_end"] .j-node')) ?? '', /status/);
  await shot(monitor, 'run-monitor', true, true);

  await monitor.click('#artifact-list button[data-path="artifacts/preprocess/frame_quality.csv"]');
  await monitor.locator('#viewer table.data tbody tr').first().waitFor();
  assert.is(await monitor.locator('#viewer table.data tbody tr').count(), 8);
  assert.is(await monitor.locator('#viewer table.data thead th').first().textContent(), 'index');

  await monitor.click('#artifact-list button[data-path="artifacts/preprocess/stacking_diagnostics.json"]');
  await monitor.locator('#viewer details.j-node').first().waitFor();

  await monitor.click('#artifact-list button[data-path="artifacts/preprocess/preprocessing_report.md"]');
  await monitor.locator('#viewer .markdown h2').first().waitFor();
  assert.ok((await monitor.locator('#viewer .markdown table').count()) > 0);

  await monitor.click('#artifact-list button[data-path="artifacts/preprocess/preprocessing_report.html"]');
  const frame = monitor.frameLocator('#viewer iframe');
  await frame.locator('body').waitFor();
  assert.match((await frame.locator('body').textContent()) ?? '', /REPORT|STACKING/);

  // Previews of the output images (written by REPORT) load.
  await monitor.locator('#previews img').first().waitFor();
  const loaded = await monitor.$$eval('#previews img', (imgs) => imgs.map((i) => (i as El).complete && (i as El).naturalWidth > 0));
  assert.ok(loaded.length >= 1 && loaded.every(Boolean), JSON.stringify(loaded));
  await monitor.close();

  // The polling fallback (no EventSource) reaches the same final states.
  const polled = await env!.context.newPage();
  await polled.goto(`/ui/run-monitor.html?preprocessing_job_id=${jobId}&live=poll`);
  await polled.waitForFunction((n) => [...document.querySelectorAll('#phase-body tr')].filter((r: El) => ['ok', 'skipped', 'error'].includes(r.dataset.status ?? '')).length === n, PHASES.length, { timeout: 20_000 });
  assert.match((await polled.textContent('#job-status')) ?? '', /^Run ok/);
  assert.ok(env!.requests.some((u) => /\/api\/runs\/[^/]+\/logs$/.test(u)), 'polled the run log');
  await polled.close();
});

run('frame table: rows of frame_quality.csv; a checkbox change stores quality_filter.manual_overrides', async () => {
  await page.locator('#frame-body tr').first().waitFor();
  const rows = await page.$$eval('#frame-body tr', (els) => els.map((e) => ({ file: (e as El).dataset.file!, status: (e as El).dataset.status!, checked: (e.querySelector('input') as El).checked })));
  assert.is(rows.length, 8);
  for (const r of rows) assert.is(r.checked, r.status === 'included', r.file);
  const target = rows.find((r) => r.status === 'included')!;
  await page.locator(`#frame-body tr[data-file="${target.file}"] input`).uncheck();
  await page.waitForFunction(() => /Stored/.test(document.getElementById('frames-status')?.textContent ?? ''));
  assert.equal(get(await stored(), 'quality_filter.manual_overrides'), { [target.file]: false });
  assert.is(await page.textContent(`#frame-body tr[data-file="${target.file}"] td.manual`), 'manual exclude');
  // The editor mirrors what was stored.
  assert.equal(get(JSON.parse(await page.inputValue('#params-json')), 'quality_filter.manual_overrides'), { [target.file]: false });
  await page.locator('#frames').screenshot({ path: join(ARTIFACT_DIR, 'frame-table.png') });
  // A reload shows the last run again with the override checked off.
  await page.reload();
  await page.locator(`#frame-body tr[data-file="${target.file}"]`).waitFor();
  assert.not.ok(await page.isChecked(`#frame-body tr[data-file="${target.file}"] input`));
  await page.click('#btn-clear-overrides');
  await page.waitForFunction(() => /cleared/.test(document.getElementById('frames-status')?.textContent ?? ''));
  assert.equal(get(await stored(), 'quality_filter.manual_overrides'), {});
});

run('frame table sorts by a column header (missing values last, state in aria-sort and the caption); the plots show; a point opens its frame', async () => {
  await page.locator('#frame-body tr').first().waitFor();
  const fwhm = () => page.$$eval('#frame-body tr', (rows) => rows.map((r) => ({ index: Number((r as El).dataset.index), fwhm: (r as El).querySelectorAll('td')[6].textContent as string })));
  const before = await fwhm();
  assert.equal(before.map((r) => r.index), [...before.map((r) => r.index)].sort((a, b) => a - b), 'frame order first');
  assert.match((await page.textContent('#frame-table caption')) ?? '', /In frame order/);
  const header = page.locator('#frame-table th:has(button[data-sort="fwhm"])');
  // The measured columns carry their units, as the plots' axes do.
  assert.match((await header.textContent()) ?? '', /^FWHM \(px\)/);
  assert.match((await page.textContent('#frame-table th:has(button[data-sort="background"])')) ?? '', /^Bkg\. \(ADU\)/);
  await page.click('#frame-table button[data-sort="fwhm"]');
  assert.is(await header.getAttribute('aria-sort'), 'ascending');
  assert.match((await page.textContent('#frame-table caption')) ?? '', /Sorted by FWHM, ascending; missing values last/);
  const check = (rows: { index: number; fwhm: string }[], dir: 1 | -1) => {
    const known = rows.filter((r) => r.fwhm !== '');
    const firstMissing = rows.findIndex((r) => r.fwhm === '');
    if (firstMissing >= 0) assert.ok(rows.slice(firstMissing).every((r) => r.fwhm === ''), `missing values last: ${JSON.stringify(rows)}`);
    for (let i = 1; i < known.length; i++) assert.ok(dir * (Number(known[i]!.fwhm) - Number(known[i - 1]!.fwhm)) >= 0, JSON.stringify(rows));
    assert.is(rows.length, before.length);
  };
  check(await fwhm(), 1);
  await page.click('#frame-table button[data-sort="fwhm"]');
  assert.is(await header.getAttribute('aria-sort'), 'descending');
  check(await fwhm(), -1);
  assert.is(await page.locator('#frame-table th[aria-sort]').count(), 1, 'only the sorted column has aria-sort');
  // The checkboxes still work on the sorted table (their row is found by file, not position).
  const checked = await page.$$eval('#frame-body tr', (rows) => rows.map((r) => [(r as El).dataset.status, (r.querySelector('input') as El).checked]));
  for (const [st, c] of checked) assert.is(c, st === 'included');

  // Five plots, one point per frame in the FWHM plot or its no-value lane for excluded frames.
  assert.equal(await page.$$eval('#frame-plots svg', (els) => els.map((e) => (e as El).dataset.chart)), ['fwhm', 'star_count', 'background', 'eccentricity', 'weight']);
  assert.match((await page.textContent('#frame-plots svg[data-chart="fwhm"]')) ?? '', /FWHM per frame.*FWHM \(px\).*acquisition order/s);
  const excluded = before.length - (await page.locator('#frame-body tr[data-status="included"]').count());
  assert.ok(await page.locator('#frame-plots svg[data-chart="fwhm"] g.pt.excluded').count() === excluded);
  assert.is(await page.locator('#frame-plots svg[data-chart="star_count"] g.pt').count(), before.length, 'every frame has a star count');
  assert.is(await page.locator('#frame-plots svg g.pt.reference').count(), 5, 'the reference point in each plot');
  await page.locator('#frames').screenshot({ path: join(ARTIFACT_DIR, 'frame-plots.png') });
  // A click on a point hands that frame to the open hook; this run has no calibrated copies
  // (no calibration frames), so the default hook says so, naming the frame.
  const target = await page.locator('#frame-plots svg[data-chart="star_count"] g.pt').nth(2).getAttribute('data-frame');
  const file = await page.getAttribute(`#frame-body tr[data-index="${target}"]`, 'data-file');
  await page.locator(`#frame-plots svg[data-chart="star_count"] g.pt[data-frame="${target}"]`).click();
  await page.waitForFunction((t) => (document.getElementById('frames-status')?.textContent ?? '').startsWith(`Frame ${t} `), target);
  assert.match((await page.textContent('#frames-status')) ?? '', new RegExp(`^Frame ${target} \\(${file!.replace(/\./g, '\\.')}\\) has no FITS under the run folder`));
});

run('the open-frame hook is injectable: a plot point and a file name call it with their frame (index, file, run path)', async () => {
  await page.goto('/ui/run-monitor.html');
  await page.evaluate(async () => {
    const { FrameTable, frameRows } = await import('/ui/frame-table.js' as string);
    const box = document.createElement('section');
    box.innerHTML = '<div id="t-plots"></div><table id="t-table"><thead></thead><tbody></tbody></table>';
    document.body.prepend(box);
    (window as El).opened = [];
    const table = new FrameTable(document.getElementById('t-table'), document.getElementById('t-plots'), { onOpenFrame: (f: unknown) => (window as El).opened.push(f) });
    const csv = 'index,file,status,reason,star_count,fwhm,eccentricity,background,weight\n0,a.fits,included,,40,2.5,0.2,1000,1\n1,b.fits,excluded,fwhm_outlier,35,4.1,0.3,1010,\n2,c.fits,included,,42,2.4,0.2,990,1\n';
    // DATE-OBS puts frame 2 first; frame 1 has a calibrated copy.
    const ctx = { referenceIndex: 0, dateObs: new Map([[0, '2026-03-14T21:10:00Z'], [1, '2026-03-14T21:20:00Z'], [2, '2026-03-14T21:00:00Z']]), paths: new Map([[1, 'outputs/calibrated/cal_00002.fit']]) };
    table.show(frameRows(csv), ctx);
  });
  const pts = page.locator('#t-plots svg[data-chart="fwhm"] g.pt');
  assert.equal(await pts.evaluateAll((els) => els.map((e) => (e as El).dataset.frame)), ['2', '0', '1'], 'acquisition order');
  await page.locator('#t-plots svg[data-chart="fwhm"] g.pt[data-frame="1"]').click();
  await page.locator('#t-plots svg[data-chart="weight"] g.pt[data-frame="2"]').click();
  await page.click('#t-table button.frame-open:text("a.fits")');
  assert.equal(await page.evaluate(() => (window as El).opened), [
    { index: 1, file: 'b.fits', path: 'outputs/calibrated/cal_00002.fit' },
    { index: 2, file: 'c.fits', path: null },
    { index: 0, file: 'a.fits', path: null },
  ]);
  assert.is(await page.getAttribute('#t-plots svg[data-chart="fwhm"] g.pt[data-frame="1"]', 'data-reason'), 'fwhm_outlier');
  assert.match((await page.textContent('#t-plots svg[data-chart="fwhm"] g.pt[data-frame="1"] title')) ?? '', /excluded: fwhm_outlier/);
  // Keyboard: the sort buttons and the file buttons are reachable and work with Enter.
  await page.focus('#t-table button[data-sort="fwhm"]');
  await page.keyboard.press('Enter');
  assert.equal(await page.$$eval('#t-table tbody tr', (rows) => rows.map((r) => (r as El).dataset.index)), ['2', '0', '1']);
});

run('Cancel asks for confirmation; "Keep running" keeps the job, confirming cancels it', async () => {
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"bge"'));
  await page.fill('#lights_dir', env!.lightsDir);
  // Many frames' worth of work is not needed: checksums and the full pipeline keep it busy long
  // enough, and the job is cancelled at whatever phase it has reached.
  await page.check('#checksums');
  await page.click('#btn-start');
  await page.waitForFunction(() => !(document.getElementById('btn-cancel') as El).disabled, null, { timeout: 20_000 });
  await page.click('#btn-cancel');
  await page.locator('#confirm-cancel[open]').waitFor();
  await page.click('#confirm-no');
  assert.not.ok(await page.locator('#confirm-cancel').evaluate((d) => (d as El).open));
  const id = await page.evaluate(() => localStorage.getItem('skystack.rawstack.lastJob') ?? '');
  assert.ok(id && id !== jobId);
  const before = await apiJson<{ state: string }>(env!, 'GET', `/api/jobs/${id}`);
  if (before.state === 'ok') return; // finished before the click: nothing left to cancel
  await page.click('#btn-cancel').catch(() => {});
  const open = await page.locator('#confirm-cancel[open]').count();
  if (open) await page.click('#confirm-yes');
  await page.waitForFunction(() => /^Run (ok|error|cancelled)/.test(document.getElementById('run-status')?.textContent ?? ''), null, { timeout: 30_000 });
  const after = await apiJson<{ state: string }>(env!, 'GET', `/api/jobs/${id}`);
  if (open) assert.ok(['cancelled', 'ok'].includes(after.state), after.state);
  if (after.state === 'cancelled') {
    // Cancelled reads as cancelled: no phase chip shows an error, and the status line is not red.
    assert.is(await page.locator('#phase-chips [data-status="error"]').count(), 0, 'no phase shown as an error');
    assert.match((await page.textContent('#run-status')) ?? '', /^Run cancelled/);
    assert.is.not(await page.getAttribute('#run-status', 'data-kind'), 'error');
  }
});

run('tiled start page: YAML findings marked at their lines, Start refused without an input folder or with YAML errors', async () => {
  await page.goto('/ui/tiled.html');
  await page.click('#btn-start');
  assert.match((await page.textContent('#run-status')) ?? '', /Choose an input folder/);
  await page.fill('#input_dir', env!.lightsDir);
  await page.fill('#config_yaml', 'stacking:\n  method: sigma\n  sigma_clip:\n    sigma_low: -3\nnot_a_block: 1\n');
  await page.click('#btn-start');
  await page.waitForFunction(() => /^Not started/.test(document.getElementById('run-status')?.textContent ?? ''));
  const line = await page.getAttribute('#yaml-issues li.issue:not(.warning)', 'data-line');
  assert.is(line, '4', 'the error is at sigma_low\'s line');
  assert.ok(await page.locator('#yaml-gutter .gutter-error[data-line="4"]').isVisible());
  assert.ok(await page.locator('#yaml-issues li.warning[data-key="not_a_block"]').isVisible(), 'unknown blocks are warnings');
  await page.fill('#config_yaml', 'stacking:\n  method: winsor\n');
  await page.click('#btn-validate-yaml');
  await page.waitForFunction(() => document.getElementById('yaml-status')?.textContent === 'Valid.');
  assert.is(await page.locator('#yaml-issues li').count(), 0);
});

run('tiled start page: a tiled run starts, its phases end in the page, and the run monitor shows it as a tiled run', async () => {
  await page.goto('/ui/tiled.html');
  await page.fill('#input_dir', env!.lightsDir);
  await page.fill('#run_name', 'ui_tiled');
  await page.fill('#config_yaml', 'tile:\n  star_min_count: 2\nastrometry:\n  enabled: false\nbge:\n  method: none\npcc:\n  enabled: false\nhypermetric_stretch:\n  enabled: false\n');
  await page.click('#btn-start');
  await page.waitForFunction(() => /^Run (ok|error|cancelled)/.test(document.getElementById('run-status')?.textContent ?? ''), null, { timeout: 120_000 });
  assert.match((await page.textContent('#run-status')) ?? '', /^Run ok/);
  const phases = await page.$$eval('#phase-chips li', (els) => els.map((e) => [(e as El).dataset.phase, (e as El).dataset.status]));
  assert.equal(phases.map(([p]) => p).slice(0, 3), ['SCAN_INPUT', 'CALIBRATION', 'CHANNEL_SPLIT'], 'the tiled plan, in the predecessor\'s phase names');
  assert.ok(phases.some(([p, st]) => p === 'TILE_RECONSTRUCTION' && st === 'ok'));
  assert.ok(phases.some(([p, st]) => p === 'PREWARP' && st === 'skipped'));
  assert.ok(phases.every(([, st]) => st === 'ok' || st === 'skipped'), JSON.stringify(phases));
  await shot(page, 'tiled-start');
  await page.click('#monitor-link');
  await page.waitForFunction(() => /^Run ok/.test(document.getElementById('job-status')?.textContent ?? ''), null, { timeout: 20_000 });
  assert.is(await page.getAttribute('#phase-body tr[data-phase="STACKING"]', 'data-status'), 'ok');
  assert.match((await page.textContent('#mode-note')) ?? '', /^Tiled run/);
  await page.locator('#artifact-list button[data-path="artifacts/tile_grid.json"]').waitFor();
  // At 1280 px the phase table fits its panel (long skip reasons wrap, Duration stays in view).
  const fit = await page.$eval('#phase-body', (el) => {
    const wrap = (el as El).closest('.table-wrap');
    return { scroll: wrap.scrollWidth, client: wrap.clientWidth };
  });
  assert.ok(fit.scroll <= fit.client + 1, `phase table ${fit.scroll} px in a ${fit.client} px panel`);
  await shot(page, 'tiled-monitor');
  // The tiled stack opens in the image viewer from the monitor, as a Raw Stack output does.
  await page.locator('#artifact-list button[data-path="outputs/stacked_rgb.fits"]').click();
  const link = page.locator('#viewer a.open-viewer');
  await link.waitFor();
  const [viewer] = await Promise.all([page.waitForEvent('popup'), link.click()]);
  await viewer.locator('#canvas-box[data-ready=true]').waitFor({ timeout: 30_000 });
  assert.match((await viewer.textContent('#img-info')) ?? '', /192×128, 3 planes, BITPIX -32/);
  await viewer.close();
});

run('a run started from the CLI is listed in the run monitor and opens there (phases, log, artifacts) without a job', async () => {
  const cli = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'src', 'cli.js');
  await promisify(execFile)(process.execPath, [cli, 'rawstack', '--lights', env!.lightsDir, '--runs-dir', env!.runsDir, '--run-name', 'from_cli', '--set', 'postprocess.astrometry=false', '--set', 'postprocess.pcc=false', '--set', 'postprocess.hypermetric_stretch=false', '--set', 'postprocess.bge=false', '--json'], { env: { ...process.env, SKYSTACK_DEVICE: 'cpu' }, timeout: 120_000 });
  await page.goto('/ui/run-monitor.html');
  const link = page.locator('#runs-list li[data-run^="from_cli_"] a');
  await link.waitFor({ timeout: 10_000 });
  assert.match((await page.textContent('#runs-list li[data-run^="from_cli_"]')) ?? '', /no job on this server/);
  // Each run says when it started (run.json created_at, local date and time) and which folder it read.
  assert.is(await page.textContent('#runs-list li[data-run^="from_cli_"] code.run-input'), env!.lightsDir);
  const started = await page.$eval('#runs-list li[data-run^="from_cli_"] time', (t: El) => [t.getAttribute('datetime'), t.textContent, new Date(t.getAttribute('datetime')).toLocaleString([], { hour12: false })]);
  assert.match(started[0]!, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d/);
  assert.is(started[1], started[2]);
  assert.match(started[1]!, new RegExp(String(new Date(started[0]!).getFullYear())));
  await link.click();
  await page.waitForFunction(() => /^Run ok/.test(document.getElementById('job-status')?.textContent ?? ''), null, { timeout: 20_000 });
  assert.is(await page.getAttribute('#phase-body tr[data-phase="STACKING"]', 'data-status'), 'ok');
  assert.is(await page.getAttribute('#phase-body tr[data-phase="PCC"]', 'data-status'), 'skipped');
  assert.match((await page.textContent('#run-title')) ?? '', /^from_cli_/);
  await page.locator('#artifact-list button[data-path$="frame_quality.csv"]').waitFor();
  assert.ok((await page.locator('#event-log li').count()) > 5, 'the log shows the run\'s events');
  await shot(page, 'run-monitor-cli', false);
});

run('narrow window: one column without horizontal scrolling; keyboard reaches Start', async () => {
  await page.setViewportSize({ width: 420, height: 800 });
  await page.goto('/ui/');
  await page.waitForFunction(() => (document.getElementById('params-json') as El).value.includes('"bge"'));
  const overflow = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflow <= 1, `page is ${overflow} px wider than the window`);
  await shot(page, 'raw-stack-narrow');
  await page.goto(`/ui/run-monitor.html?preprocessing_job_id=${jobId}`);
  await page.locator('#phase-body tr').first().waitFor();
  const overflowMonitor = await page.evaluate(() => document.documentElement.scrollWidth - window.innerWidth);
  assert.ok(overflowMonitor <= 1, `monitor is ${overflowMonitor} px wider than the window`);
  await page.setViewportSize({ width: 1280, height: 800 });
  await page.goto('/ui/');
  await page.focus('#lights_dir');
  let reached = false;
  for (let i = 0; i < 120 && !reached; i++) {
    await page.keyboard.press('Tab');
    reached = await page.evaluate(() => document.activeElement?.id === 'btn-start');
  }
  assert.ok(reached, 'Tab from the input folder reaches Start');
});

run('no request left the server; no page errors', async () => {
  const origin = new URL(env!.server.url).origin;
  const external = env!.requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:') && u !== 'about:blank');
  assert.equal(external, []);
  assert.equal(env!.pageErrors, []);
  // The only refusals are the ones the tests provoked: the validation error, the folder outside
  // the roots, and (when the job won the race) a cancel of a job that had just finished.
  const provoked = /^(400 PATCH \/api\/tools\/preprocessing\/parameters|403 GET \/api\/files\/list\?\S*|409 POST \/api\/tools\/preprocessing\/cancel) /;
  assert.equal(env!.failedResponses.filter((r) => !provoked.test(r)), [], env!.failedResponses.join('\n'));
});

ui.run();
