// Browser test of signing in to a server that requires a token: the studio's first request is
// refused, the sign-in dialog appears, a wrong token is refused in the dialog, the right one
// reloads a working page (stored parameters, run list); a fresh profile opened at `#token=…`
// (the address `skystack serve` prints) is signed in without the dialog and the token leaves the
// address bar; the run monitor's requests work with the session cookie alone.

import { suite } from 'uvu';
import * as assert from 'uvu/assert';
import type { BrowserContext, Page } from 'playwright-core';
import { shot, skipReason, startUiEnv, type UiEnv, uiTestRunner } from './harness.js';

/* eslint-disable @typescript-eslint/no-explicit-any */
declare const document: any;
declare const location: any;

const TOKEN = 'correct-horse-battery-staple-42';
const ui = suite('web UI sign-in');
let env: UiEnv | null = null;
let page: Page;

ui.before(async () => {
  if (skipReason) return;
  env = await startUiEnv({ token: TOKEN });
  page = await env.context.newPage();
});

ui.after(async () => {
  await env?.close();
});

const run = uiTestRunner(ui, 'sign-in-', () => page);

run('without a session the studio asks for the token; a wrong one is refused, the right one reloads a working page', async () => {
  await page.goto('/ui/');
  await page.waitForSelector('#sign-in[open]');
  assert.ok(env!.failedResponses.some((r) => r.startsWith('401 GET /api/')), env!.failedResponses.join('\n'));
  await shot(page, 'sign-in-dialog', false);
  await page.fill('#sign-in-token', 'not-the-token');
  await page.click('#sign-in button[type=submit]');
  await page.waitForFunction(() => /Not accepted/.test(document.querySelector('#sign-in .status')?.textContent ?? ''));
  await page.fill('#sign-in-token', TOKEN);
  await Promise.all([page.waitForEvent('load'), page.click('#sign-in button[type=submit]')]);
  await page.waitForFunction(() => (document.getElementById('params-json')?.value ?? '').includes('"quality_filter"'));
  assert.is(await page.$('#sign-in[open]'), null, 'no dialog once signed in');
  const cookies = await env!.context.cookies();
  const session = cookies.find((c) => c.name === `skystack_session_${env!.server.port}`);
  assert.ok(session, 'session cookie set');
  assert.ok(session!.httpOnly);
  assert.is(session!.sameSite, 'Strict');
  assert.not.ok(session!.value.includes(TOKEN));
  // The run monitor's requests (job list, run list) go through with the cookie alone.
  const before = env!.failedResponses.length;
  await page.goto('/ui/run-monitor.html');
  await page.waitForLoadState('networkidle');
  assert.equal(env!.failedResponses.slice(before).filter((r) => r.startsWith('401')), []);
  assert.is(await page.$('#sign-in[open]'), null);
});

run('a fresh profile opened at #token=… is signed in without the dialog, and the token leaves the address', async () => {
  let fresh: BrowserContext | null = null;
  try {
    fresh = await env!.browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: env!.server.url });
    const p = await fresh.newPage();
    const refused: string[] = [];
    p.on('response', (r) => {
      if (r.status() === 401) refused.push(r.url());
    });
    await p.goto(`/ui/#token=${encodeURIComponent(TOKEN)}`);
    await p.waitForFunction(() => (document.getElementById('params-json')?.value ?? '').includes('"quality_filter"'));
    assert.is(await p.evaluate(() => location.hash), '');
    assert.not.ok((await p.evaluate(() => location.href)).includes(TOKEN));
    assert.is(await p.$('#sign-in[open]'), null);
    assert.equal(refused, []);
  } finally {
    await fresh?.close();
  }
});

ui.run();
