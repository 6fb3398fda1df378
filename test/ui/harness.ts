// Browser-test harness for the web UI (issue 10): the real server (startServer) on an ephemeral
// loopback port with a temp runs dir, a tiny generated OSC light set as an allowed data root,
// and Debian's chromium driven by playwright-core with a fresh profile and no network features.
// Chromium missing (or the UI not built) → `skipReason` says why, printed once; tests skip.

import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import type { Test } from 'uvu';
import { generateDataset } from '../../fixtures/generator/index.js';
import { startServer, type RunningServer } from '../../src/server/app.js';

const here = dirname(fileURLToPath(import.meta.url));
/** dist/test/ui → dist/test-artifacts/ui (screenshots, kept after the run). */
export const ARTIFACT_DIR = join(here, '..', '..', 'test-artifacts', 'ui');
/** dist/test/ui → dist/ui (the built front end). */
export const UI_DIR = join(here, '..', '..', 'ui');

// SKYSTACK_CHROMIUM, when set, is the only browser considered (a missing one skips the tests).
const CANDIDATES = process.env.SKYSTACK_CHROMIUM ? [process.env.SKYSTACK_CHROMIUM] : ['/usr/bin/chromium', '/usr/bin/chromium-browser'];
export const chromiumPath = CANDIDATES.find((p) => existsSync(p)) ?? null;
const uiBuilt = existsSync(join(UI_DIR, 'index.html'));

export const skipReason = !chromiumPath ? `no chromium at ${CANDIDATES.join(', ')} (apt-get install chromium)` : !uiBuilt ? `the UI is not built (${UI_DIR})` : null;
if (skipReason) console.log(`  [ui] browser tests SKIPPED: ${skipReason}`);

export interface UiEnv {
  dir: string;
  /** A folder outside the allowed roots (with one subfolder, `night1`) for the grant test. */
  outsideDir: string;
  dataDir: string;
  lightsDir: string;
  runsDir: string;
  server: RunningServer;
  browser: Browser;
  context: BrowserContext;
  /** Every URL the browser requested (to prove no external requests). */
  requests: string[];
  /** Uncaught page errors and console errors other than failed resource loads. */
  pageErrors: string[];
  /** `status METHOD path` of every answer >= 400 the browser received. */
  failedResponses: string[];
  close(): Promise<void>;
}

/** `token`: the server requires it (as when bound off loopback), so the page must sign in. */
export async function startUiEnv(opts: { token?: string } = {}): Promise<UiEnv> {
  const { chromium } = await import('playwright-core');
  const dir = await mkdtemp(join(tmpdir(), 'skystack-ui-'));
  const dataDir = join(dir, 'data');
  const runsDir = join(dir, 'runs');
  const outsideDir = join(dir, 'elsewhere');
  await mkdir(join(outsideDir, 'night1'), { recursive: true });
  await mkdir(ARTIFACT_DIR, { recursive: true });
  // 8 OSC frames of 192×128: stars enough to register, small enough to stack in about a second.
  await generateDataset({ out: dataDir, kind: 'osc', pattern: 'RGGB', frames: 8, width: 192, height: 128, seed: 1010, calibration: false, badFrames: 'none' });
  const server = await startServer({
    host: '127.0.0.1',
    port: 0,
    runsDir,
    roots: [dataDir],
    maxConcurrentJobs: 1,
    uiDir: UI_DIR,
    killGraceMs: 1000,
    log: () => {},
    ...(opts.token ? { token: opts.token } : {}),
  });
  const browser = await chromium.launch({
    executablePath: chromiumPath!,
    headless: true,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--disable-dev-shm-usage'],
  });
  // A fresh context is a fresh profile (playwright launches with a temporary user-data-dir).
  const context = await browser.newContext({ viewport: { width: 1280, height: 800 }, baseURL: server.url, acceptDownloads: false });
  const requests: string[] = [];
  const pageErrors: string[] = [];
  const failedResponses: string[] = [];
  context.on('request', (r) => requests.push(r.url()));
  context.on('response', (r) => {
    if (r.status() < 400) return;
    const from = (() => {
      try {
        return new URL(r.frame().url()).pathname + new URL(r.frame().url()).search;
      } catch {
        return '?';
      }
    })();
    failedResponses.push(`${r.status()} ${r.request().method()} ${new URL(r.url()).pathname}${new URL(r.url()).search} (from ${from})`);
  });
  context.on('page', (p) => watch(p, pageErrors));
  return {
    dir,
    outsideDir,
    dataDir,
    lightsDir: join(dataDir, 'lights'),
    runsDir,
    server,
    browser,
    context,
    requests,
    pageErrors,
    failedResponses,
    async close() {
      await context.close().catch(() => {});
      await browser.close().catch(() => {});
      await server.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

function watch(page: Page, errors: string[]): void {
  page.on('pageerror', (e) => errors.push(`${page.url()}: ${e.message}`));
  page.on('console', (m) => {
    // Failed loads are checked from the responses themselves (failedResponses).
    if (m.type() === 'error' && !m.text().startsWith('Failed to load resource')) errors.push(`${page.url()}: ${m.text()}`);
  });
}

/** JSON from the server with the headers a same-origin browser request would carry. */
export async function apiJson<T>(env: UiEnv, method: string, path: string, body?: unknown): Promise<T> {
  const res = await fetch(`${env.server.url}${path}`, {
    method,
    headers: { 'content-type': 'application/json', origin: env.server.url },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  const data = (await res.json()) as T;
  if (!res.ok) throw new Error(`${method} ${path}: ${res.status} ${JSON.stringify(data)}`);
  return data;
}

/** Saves `<name>.png`; with `docs`, also `docs-<name>.jpg` (smaller, the copy committed to docs/). */
export async function shot(page: Page, name: string, fullPage = true, docs = false): Promise<string> {
  const file = join(ARTIFACT_DIR, `${name}.png`);
  // In a full-page picture the sticky Start bar would sit in the middle of the form.
  if (fullPage) await page.addStyleTag({ content: '.actions { position: static !important; }' });
  await page.screenshot({ path: file, fullPage });
  if (docs) await page.screenshot({ path: join(ARTIFACT_DIR, `docs-${name}.jpg`), fullPage, type: 'jpeg', quality: 72 });
  return file;
}

/**
 * The `run(name, fn)` of a browser suite: a test of `ui` that saves the page as
 * `<prefix>failure-<n>.png` beside the screenshots when it fails, and skips where the UI tests
 * cannot run (skipReason).
 */
export function uiTestRunner(ui: Test, prefix: string, page: () => Page | undefined, fullPage = true): (name: string, fn: () => Promise<void>) => void {
  let testNo = 0;
  return (name, fn) => {
    const n = ++testNo;
    const wrapped = async () => {
      try {
        await fn();
      } catch (e) {
        await page()?.screenshot({ path: join(ARTIFACT_DIR, `${prefix}failure-${n}.png`), fullPage }).catch(() => {});
        throw e;
      }
    };
    if (skipReason) ui.skip(name, wrapped);
    else ui(name, wrapped);
  };
}
