// Browser test of Resume from phase in the run monitor (issue 20 item 5): a tiled run started in
// the run studio; its configuration changed at a key only STACKING reads; a Check from STACKING
// says feasible and would re-run STACKING and later phases only; a change upstream
// (tile.size_factor, read by TILE_GRID) says not feasible and why; Start resume runs to its end and
// the revision list gains an entry with the new configuration.
// Skips only where the UI tests cannot run at all (no Chromium: harness.ts says why).

import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { Page } from 'playwright-core';
import { skipReason, startUiEnv, type UiEnv, uiTestRunner } from './harness.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
type El = any;

const QUICK = 'tile:\n  star_min_count: 2\nastrometry:\n  enabled: false\nbge:\n  method: none\npcc:\n  enabled: false\nhypermetric_stretch:\n  enabled: false\nstacking:\n  method: sigma\n';

let env: UiEnv | null = null;

const ui = suite('run monitor: resume from phase');
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

/** A test of the session; on failure the page is saved as resume-failure-<n>.png beside the screenshots. */
const run = uiTestRunner(ui, 'resume-', () => page);

/** Sets the edited YAML box to the current configuration with `edit` applied to its text. */
async function editYaml(edit: [RegExp, string]): Promise<void> {
  await page.check('input[name="resume-source"][value="edited"]');
  const text = await page.inputValue('#resume-yaml');
  const next = text.replace(edit[0], edit[1]);
  assert.is.not(next, text, `the edit ${String(edit[0])} applies`);
  await page.fill('#resume-yaml', next);
}

run('a tiled run from the studio, then Check and Start resume from STACKING after a config change; the revision list gains an entry', async () => {
  await page.goto('/ui/tiled.html');
  await page.fill('#input_dir', env!.lightsDir);
  await page.fill('#run_name', 'resume_run');
  await page.fill('#config_yaml', QUICK);
  await page.click('#btn-start');
  await page.locator('#monitor-link').waitFor();
  await page.click('#monitor-link');
  await page.waitForFunction(() => /^Run ok/.test(document.getElementById('job-status')?.textContent ?? ''), null, { timeout: 180_000 });
  await page.locator('#revision-list li[data-rev="rev_0001"]').waitFor();
  const revsBefore = await page.locator('#revision-list li[data-rev]').count();
  await page.waitForFunction(() => (document.getElementById('resume-yaml') as El).value.includes('stacking:'));
  assert.is(await page.inputValue('#resume-phase'), 'STACKING');

  // Upstream change: tile.size_factor is read by TILE_GRID, before STACKING.
  await editYaml([/^(tile:\n(?: {2}.*\n)*? {2}size_factor: )[\d.]+/m, '$148']);
  await page.click('#btn-resume-check');
  await page.waitForFunction(() => (document.getElementById('resume-result')?.dataset.feasible ?? '') === 'false');
  assert.is(await page.getAttribute('#resume-result', 'data-reason'), 'config_changed_upstream');
  assert.match((await page.textContent('#resume-result')) ?? '', /Earliest phase it can resume from: TILE_GRID/);
  assert.match((await page.textContent('#resume-result')) ?? '', /tile\.size_factor/);
  assert.ok(await page.isDisabled('#btn-resume-start'));

  // A change only STACKING reads: feasible, re-runs STACKING and what follows, nothing before.
  await page.fill('#resume-yaml', '');
  await page.check('input[name="resume-source"][value="current"]');
  await page.check('input[name="resume-source"][value="edited"]');
  const current = await page.textContent('#config-text');
  await page.fill('#resume-yaml', current ?? '');
  await editYaml([/^(stacking:\n(?: {2}.*\n)*? {2}method: )sigma/m, '$1winsor']);
  await page.click('#btn-resume-check');
  await page.waitForFunction(() => (document.getElementById('resume-result')?.dataset.feasible ?? '') !== '');
  assert.is(await page.getAttribute('#resume-result', 'data-feasible'), 'true', (await page.textContent('#resume-result')) ?? '');
  const rerun = ((await page.textContent('#resume-rerun')) ?? '').replace('Would re-run:', '').trim().split(/\s+/);
  assert.is(rerun[0], 'STACKING');
  for (const early of ['SCAN_INPUT', 'REGISTRATION', 'TILE_GRID', 'LOCAL_METRICS', 'TILE_RECONSTRUCTION']) assert.not.ok(rerun.includes(early), early);
  assert.ok(await page.isEnabled('#btn-resume-start'));

  await page.click('#btn-resume-start');
  await page.waitForFunction(() => /^Resume (ok|error|cancelled)/.test(document.getElementById('resume-status')?.textContent ?? ''), null, { timeout: 180_000 });
  assert.match((await page.textContent('#resume-status')) ?? '', /^Resume ok/);
  await page.waitForFunction((n) => document.querySelectorAll('#revision-list li[data-rev]').length > n, revsBefore, { timeout: 20_000 });
  const sources = await page.$$eval('#revision-list li[data-rev]', (els) => els.map((e) => (e as El).textContent));
  assert.ok(sources.length > revsBefore, sources.join(' | '));
  await page.waitForFunction(() => /method: winsor/.test(document.getElementById('config-text')?.textContent ?? ''));
  assert.match((await page.textContent('#event-log')) ?? '', /resume from STACKING/);

  // The finished, resumed run opened later by its id (no job): its log goes on after the first
  // run_end, so both the stream and polling must follow it to the resume's end.
  const runId = new URL(page.url()).searchParams.get('run_id') ?? (await page.textContent('#run-title'))?.split(' ')[0] ?? '';
  assert.ok(runId, 'the run id is shown');
  for (const live of ['', '&live=poll']) {
    await page.goto(`/ui/run-monitor.html?run_id=${encodeURIComponent(runId)}${live}`);
    await page.waitForFunction(() => /^Run /.test(document.getElementById('job-status')?.textContent ?? ''), null, { timeout: 30_000 });
    const log = (await page.textContent('#event-log')) ?? '';
    assert.match(log, /resume from STACKING/, `${live || 'stream'}: the resume's lines are shown`);
    assert.match(log, /resume ok/, `${live || 'stream'}: up to the resume's end`);
    assert.match((await page.textContent('#job-status')) ?? '', /^Run ok/);
  }
});

ui.run();
