// Browser tests of the image viewer (issue 21), against the real server and a small generated OSC
// run (8 frames of 192×128 stacked through the API with BGE and HMS, so the run has three images
// of one geometry): opened from the run monitor's artifact viewer, fit then 1:1 and 4:1 zoom, the
// pixel readout equal to the FITS value src/fits reads, the HMS look, blink (the other image is
// drawn and read) and split, the download of what is shown. Screenshots go to
// dist/test-artifacts/ui/ (viewer-*.png, docs-viewer.jpg).

import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import { join } from 'node:path';
import { decode as decodePng } from 'fast-png';
import type { Page } from 'playwright-core';
import { FitsReader } from '../../src/fits/index.js';
import { fitsRow } from '../../src/shared/pyramid-math.js';
import { apiJson, shot, skipReason, startUiEnv, type UiEnv, uiTestRunner } from './harness.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const requestAnimationFrame: any;
type El = any;

const ui = suite('image viewer');
let env: UiEnv | null = null;
let page: Page;
let runId = '';
let jobId = '';
let runDir = '';

ui.before(async () => {
  if (skipReason) return;
  env = await startUiEnv();
  page = await env.context.newPage();
  const job = await apiJson<{ job_id: string; run_id: string; run_dir: string }>(env, 'POST', '/api/tools/preprocessing/run', {
    lights_dir: env.lightsDir,
    run_name: 'viewer',
    config: {
      quality_filter: { min_stars: 3, min_correlation: 0.3 },
      postprocess: { astrometry: false, bge: true, pcc: false, hypermetric_stretch: true },
      hypermetric_stretch: { require_successful_pcc: false },
    },
  });
  jobId = job.job_id;
  runId = job.run_id;
  runDir = job.run_dir;
  for (let i = 0; i < 600; i++) {
    const j = await apiJson<{ state: string }>(env, 'GET', `/api/jobs/${jobId}`);
    if (['ok', 'error', 'cancelled'].includes(j.state)) {
      if (j.state !== 'ok') throw new Error(`the run ended ${j.state}`);
      break;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
});

ui.after(async () => {
  await env?.close();
});

/** A test of the session; on failure the page is saved as viewer-failure-<n>.png beside the screenshots. */
const run = uiTestRunner(ui, 'viewer-', () => page, false);

async function fitsValues(rel: string, x: number, y: number): Promise<(number | null)[]> {
  const r = await FitsReader.open(join(runDir, rel));
  try {
    const row = await r.readRows(y, 1, { dtype: 'float64' });
    return row.planes.map((_, p) => {
      const v = row.data[p * r.width + x]!;
      return Number.isFinite(v) ? v : null;
    });
  } finally {
    await r.close();
  }
}

/** Sum and spread of the canvas's pixels: a picture that changed changes them. */
async function canvasPrint(p: Page): Promise<{ sum: number; distinct: number }> {
  return p.evaluate(() => {
    const c = document.getElementById('view') as El;
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data as El;
    let sum = 0;
    const seen = new Set<number>();
    for (let i = 0; i < d.length; i += 4) {
      sum += d[i] + 2 * d[i + 1] + 3 * d[i + 2];
      if (seen.size < 5000) seen.add((d[i] << 16) | (d[i + 1] << 8) | d[i + 2]);
    }
    return { sum, distinct: seen.size };
  });
}

/** Waits until every tile request the page made has been answered and a frame drawn. */
async function settle(p: Page): Promise<void> {
  await p.waitForLoadState('networkidle');
  await p.evaluate(() => new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(r))));
}

let viewer: Page;
const STACK = 'outputs/stacked_rgb.fits';
const BGE = 'outputs/stacked_rgb_bge.fits';
const HMS = 'outputs/stacked_rgb_hms.fits';

run('the run monitor opens a stack in the viewer: fitted, drawn, statistics and row order shown', async () => {
  await page.goto(`/ui/run-monitor.html?preprocessing_job_id=${jobId}`);
  await page.locator(`#artifact-list button[data-path="${STACK}"]`).click();
  const link = page.locator('#viewer a.open-viewer');
  await link.waitFor();
  const [popup] = await Promise.all([page.waitForEvent('popup'), link.click()]);
  viewer = popup;
  await viewer.locator('#canvas-box[data-ready=true]').waitFor({ timeout: 30_000 });
  await settle(viewer);
  assert.match(viewer.url(), /viewer\.html\?run=/);
  assert.match((await viewer.textContent('#viewer-status')) ?? '', /192×128 opened in/);
  assert.match((await viewer.textContent('#img-info')) ?? '', /192×128, 3 planes, BITPIX -32; ROWORDER TOP-DOWN, first FITS row shown at the top/);
  const z = Number(await viewer.getAttribute('#zoom-label', 'data-zoom'));
  assert.ok(z > 1, `a 192×128 image fits the window above 1:1 (zoom ${z})`);
  const print = await canvasPrint(viewer);
  assert.ok(print.distinct > 50, `the canvas shows an image (${print.distinct} colours)`);
  // Every control of the page is labelled.
  const unlabelled = await viewer.$$eval('input, select, textarea, button', (els) =>
    els
      .filter((e) => {
        const el = e as El;
        const named = (el.labels?.length ?? 0) > 0 || el.getAttribute('aria-label') || el.getAttribute('aria-labelledby') || (el.tagName === 'BUTTON' && el.textContent?.trim());
        return !named;
      })
      .map((e) => (e as El).outerHTML.slice(0, 80)),
  );
  assert.equal(unlabelled, []);
  // The preview on the run monitor links to the viewer too.
  assert.ok((await page.locator(`#previews a[data-viewer="${STACK}"]`).count()) === 1);
  await shot(viewer, 'viewer-fit', false);
  // At a phone's width the toolbar wraps inside the page: the image select shrinks, nothing scrolls sideways (414 px in 400 before).
  const size = viewer.viewportSize()!;
  await viewer.setViewportSize({ width: 400, height: 800 });
  const wide = await viewer.evaluate(() => document.documentElement.scrollWidth);
  await viewer.setViewportSize(size);
  await settle(viewer);
  assert.ok(wide <= 400, `the viewer is ${wide} px wide in a 400 px window`);
});

run('zoom 1:1, then read a pixel: the readout shows the FITS value of the pixel under the pointer', async () => {
  await viewer.click('#zoom-1');
  assert.is(await viewer.textContent('#zoom-label'), '1:1');
  await settle(viewer);
  const box = (await viewer.locator('#view').boundingBox())!;
  // At 1:1 around the image centre, the pointer 10.5 px right of and 7.5 px above the canvas
  // centre is over display pixel (96 + 10, 64 − 8).
  const cw = await viewer.evaluate(() => (document.getElementById('view') as El).width);
  const ch = await viewer.evaluate(() => (document.getElementById('view') as El).height);
  await viewer.mouse.move(box.x + cw / 2 + 10.5, box.y + ch / 2 - 7.5);
  await viewer.waitForFunction(() => (document.getElementById('readout') as El).dataset.x !== undefined);
  const x = Number(await viewer.getAttribute('#readout', 'data-x'));
  const y = Number(await viewer.getAttribute('#readout', 'data-y'));
  assert.is(x, 96 + 10);
  assert.is(y, fitsRow(64 - 8, 128, false));
  const shown = JSON.parse((await viewer.getAttribute('#readout', 'data-values'))!) as number[];
  assert.equal(shown, await fitsValues(STACK, x, y));
  // The text shows FITS coordinates (1-based) and the value of each channel.
  const text = (await viewer.textContent('#readout')) ?? '';
  assert.match(text, new RegExp(`${x + 1}, ${y + 1}`));
  assert.match(text, /R.*G.*B/);
  await viewer.click('#zoom-4');
  assert.is(await viewer.textContent('#zoom-label'), '4:1');
  await settle(viewer);
  await shot(viewer, 'viewer-4x', false);
});

run('stretch modes: linear takes the data range, the HMS look draws the run HMS curve from the server', async () => {
  await viewer.click('#zoom-fit');
  const auto = await canvasPrint(viewer);
  const autoBlack = Number(await viewer.inputValue('#lv-black'));
  await viewer.selectOption('#stretch-mode', 'linear');
  await settle(viewer);
  const info = await apiJson<{ stats: { min: number; max: number }[] }>(env!, 'GET', `/api/runs/${runId}/image/info?path=${STACK}`);
  const min = Math.min(...info.stats.map((s) => s.min));
  assert.ok(Math.abs(Number(await viewer.inputValue('#lv-black')) - min) <= Math.abs(min) * 1e-3 + 1e-9, 'linear black = the data minimum');
  assert.ok(Number(await viewer.inputValue('#lv-black')) <= autoBlack);
  await viewer.selectOption('#stretch-mode', 'hms');
  await settle(viewer);
  assert.ok(env!.requests.some((u) => u.includes('/image/tile?') && u.includes('look=hms')), 'HMS-look tiles fetched');
  const hms = await canvasPrint(viewer);
  assert.not.equal(hms.sum, auto.sum);
  await viewer.selectOption('#stretch-mode', 'auto');
  await settle(viewer);
});

run('blink: the other image of the run is drawn and read; split shows both', async () => {
  const options = await viewer.$$eval('#compare-path option', (os) => os.map((o) => (o as El).value));
  assert.ok(options.includes(BGE) && options.includes(HMS), JSON.stringify(options));
  await viewer.selectOption('#compare-path', HMS);
  await viewer.locator('#blink-label:not([hidden])').waitFor();
  assert.is(await viewer.inputValue('#compare-mode'), 'blink');
  await settle(viewer);
  assert.is(await viewer.getAttribute('#blink-label', 'data-showing'), 'a');
  const a = await canvasPrint(viewer);
  await viewer.click('#blink-swap');
  await settle(viewer);
  assert.is(await viewer.getAttribute('#blink-label', 'data-showing'), 'b');
  assert.match((await viewer.textContent('#blink-label')) ?? '', /B: outputs\/stacked_rgb_hms\.fits/);
  const b = await canvasPrint(viewer);
  assert.not.equal(a.sum, b.sum, 'the other image is drawn');
  // The readout reads the image that is shown.
  const box = (await viewer.locator('#view').boundingBox())!;
  await viewer.mouse.move(box.x + box.width / 2 + 3.5, box.y + box.height / 2 + 2.5);
  await viewer.waitForFunction((p) => (document.getElementById('readout') as El).dataset.path === p, HMS);
  const x = Number(await viewer.getAttribute('#readout', 'data-x'));
  const y = Number(await viewer.getAttribute('#readout', 'data-y'));
  assert.equal(JSON.parse((await viewer.getAttribute('#readout', 'data-values'))!), await fitsValues(HMS, x, y));
  await shot(viewer, 'viewer-blink-b', false);
  await viewer.keyboard.press('b');
  assert.is(await viewer.getAttribute('#blink-label', 'data-showing'), 'a');
  assert.match((await viewer.textContent('#compare-note')) ?? '', /share the stack geometry/);
  await viewer.selectOption('#compare-mode', 'split');
  await settle(viewer);
  const split = await canvasPrint(viewer);
  assert.not.equal(split.sum, a.sum);
  assert.not.equal(split.sum, b.sum);
  await viewer.click('#zoom-fit');
  await settle(viewer);
  await shot(viewer, 'viewer', false, true);
});

run('download: the export of what is shown (16-bit PNG of the stack at its size)', async () => {
  await viewer.selectOption('#dl-format', 'png-16');
  await viewer.evaluate(() => {
    // Keep the browser from saving the file: the test fetches the same URL itself.
    (document.getElementById('dl-link') as El).addEventListener('click', (e: Event) => e.preventDefault());
  });
  await viewer.click('#btn-download');
  const href = (await viewer.getAttribute('#dl-link', 'href'))!;
  assert.match(href, /\/image\/export\?path=outputs%2Fstacked_rgb\.fits&format=png&bits=16&stretch=auto&linked=true&black=/);
  const res = await fetch(`${env!.server.url}${href}`);
  assert.is(res.status, 200);
  const png = decodePng(new Uint8Array(await res.arrayBuffer()));
  assert.equal([png.width, png.height, png.depth, png.channels], [192, 128, 16, 3]);
});

run('no request left the server; no page errors; no failed responses', async () => {
  await viewer.close();
  const origin = new URL(env!.server.url).origin;
  assert.equal(env!.requests.filter((u) => !u.startsWith(origin) && !u.startsWith('data:') && !u.startsWith('blob:') && u !== 'about:blank'), []);
  assert.equal(env!.pageErrors, []);
  assert.equal(env!.failedResponses, []);
});

ui.run();
