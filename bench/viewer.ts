// `node dist/bench/viewer.js [--width 6000 --height 4000] [--repeat 3] [--no-browser] [--no-record]`:
// the image viewer's first view of a large RGB stack (issue 21 bars: under 1 s cached, under 5 s
// uncached). A float32 RGB FITS of the given size (default 6000×4000, 288 MB) is written once into
// a run folder (cached under $TMPDIR/skystack-bench-viewer); `skystack serve` runs as its own
// process. Measured, each with a fresh server process (so a worker thread starts every time):
//   uncached  the pyramid cache removed, then GET /image/info (builds it) plus the tiles of the
//             fit-to-window view of a 1280×800 canvas (what the page fetches first)
//   cached    the same with the cache present
//   1:1 view  the level-0 tiles of one 1280×800 screen at the image centre (cached)
//   browser   with chromium: viewer.html from navigation start to its first complete view (every
//             tile of the fitted level drawn: the page's data-first-view-ms), uncached and cached
// plus the server's event-loop delay while it builds (the largest gap between replies of
// /api/system/health polled in a loop during the build). Best of --repeat runs; appends a section
// to bench/RESULTS.md.

import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { appendFile, mkdir, rm, stat, writeFile } from 'node:fs/promises';
import { Agent, request } from 'node:http';
import { cpus, loadavg, tmpdir, totalmem } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { writeFits } from '../src/fits/index.js';
import { fitZoom, levelForZoom, pyramidLevels, visibleTiles } from '../src/shared/pyramid-math.js';
import { mulberry32 } from '../src/algorithms/ransac.js';

const here = dirname(fileURLToPath(import.meta.url));
const cli = join(here, '..', 'src', 'cli.js');
const resultsFile = join(here, '..', '..', 'bench', 'RESULTS.md');
const { values } = parseArgs({ options: { width: { type: 'string', default: '6000' }, height: { type: 'string', default: '4000' }, repeat: { type: 'string', default: '3' }, 'no-browser': { type: 'boolean', default: false }, 'no-record': { type: 'boolean', default: false } } });
const W = Number(values.width);
const H = Number(values.height);
const repeat = Math.max(1, Number(values.repeat));
const VIEW = { w: 1280, h: 800 };
const RUN = 'bench_viewer';
const REL = 'outputs/stacked_rgb.fits';
const base = join(tmpdir(), 'skystack-bench-viewer');
const runsDir = join(base, `runs-${W}x${H}`);
const runDir = join(runsDir, RUN);
const agent = new Agent({ keepAlive: true, maxSockets: 8 });

function get(url: string, path: string): Promise<{ status: number; bytes: number; body: Buffer }> {
  const u = new URL(url);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path, agent }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const body = Buffer.concat(chunks);
        resolve({ status: res.statusCode ?? 0, bytes: body.length, body });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end();
  });
}

/** A sky with noise, a gradient and stars: realistic statistics, no structure the build cares about. */
async function makeImage(): Promise<void> {
  const file = join(runDir, REL);
  if (existsSync(file)) return;
  await mkdir(dirname(file), { recursive: true });
  await writeFile(join(runDir, 'run.json'), JSON.stringify({ run_id: RUN, kind: 'rawstack', status: 'ok', created_at: new Date().toISOString() }));
  const rnd = mulberry32(42);
  const n = W * H;
  const data = new Float32Array(3 * n);
  for (let c = 0; c < 3; c++) for (let y = 0; y < H; y++) for (let x = 0; x < W; x++) data[c * n + y * W + x] = 900 + 40 * c + (200 * x) / W + 12 * (rnd() + rnd() + rnd() - 1.5);
  for (let s = 0; s < 4000; s++) {
    const cx = Math.floor(rnd() * W);
    const cy = Math.floor(rnd() * H);
    const peak = 500 + 40000 * rnd() ** 3;
    for (let dy = -6; dy <= 6; dy++) for (let dx = -6; dx <= 6; dx++) {
      const x = cx + dx;
      const y = cy + dy;
      if (x < 0 || y < 0 || x >= W || y >= H) continue;
      const v = peak * Math.exp(-(dx * dx + dy * dy) / 4.5);
      for (let c = 0; c < 3; c++) data[c * n + y * W + x] = data[c * n + y * W + x]! + v;
    }
  }
  await writeFits(file, { width: W, height: H, planes: 3, data });
}

async function startServer(): Promise<{ url: string; child: ChildProcess }> {
  const child = spawn(process.execPath, [cli, 'serve', '--port', '0', '--runs-dir', runsDir], { stdio: ['ignore', 'pipe', 'pipe'] });
  const url = await new Promise<string>((resolve, reject) => {
    let text = '';
    const onData = (c: Buffer) => {
      text += c.toString();
      const m = /http:\/\/127\.0\.0\.1:\d+/.exec(text);
      if (m) resolve(m[0]);
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => reject(new Error(`serve exited ${code}: ${text}`)));
  });
  // The first answer from the API (run list built in the background meanwhile).
  for (let i = 0; i < 200; i++) {
    if ((await get(url, '/api/system/health').catch(() => ({ status: 0 }))).status === 200) break;
    await new Promise((r) => setTimeout(r, 25));
  }
  return { url, child };
}

async function stop(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null) return;
  const gone = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await gone;
}

const q = encodeURIComponent(REL);

/** The tiles the page draws first: the coarsest level and the fit level's visible tiles. */
function firstViewTiles(): [number, number, number][] {
  const levels = pyramidLevels(W, H);
  const z = fitZoom(W, H, VIEW.w, VIEW.h);
  const level = levelForZoom(z, levels.length);
  const out: [number, number, number][] = [[levels.length - 1, 0, 0]];
  const left = W / 2 - VIEW.w / 2 / z;
  const top = H / 2 - VIEW.h / 2 / z;
  const r = visibleTiles(levels[level]!, left, top, VIEW.w / z, VIEW.h / z);
  for (let y = r.y0; y < r.y1; y++) for (let x = r.x0; x < r.x1; x++) if (level !== levels.length - 1 || x || y) out.push([level, x, y]);
  return out;
}

function oneToOneTiles(): [number, number, number][] {
  const g = pyramidLevels(W, H)[0]!;
  const r = visibleTiles(g, W / 2 - VIEW.w / 2, H / 2 - VIEW.h / 2, VIEW.w, VIEW.h);
  const out: [number, number, number][] = [];
  for (let y = r.y0; y < r.y1; y++) for (let x = r.x0; x < r.x1; x++) out.push([0, x, y]);
  return out;
}

async function view(url: string, tiles: [number, number, number][], withInfo: boolean): Promise<{ ms: number; bytes: number; build_ms: number | null }> {
  const t0 = performance.now();
  let build: number | null = null;
  if (withInfo) {
    const info = await get(url, `/api/runs/${RUN}/image/info?path=${q}`);
    if (info.status !== 200) throw new Error(`info ${info.status}: ${info.body.toString()}`);
    const j = JSON.parse(info.body.toString()) as { cache: string; build_ms: number };
    build = j.cache === 'built' ? j.build_ms : null;
  }
  const res = await Promise.all(tiles.map(([l, x, y]) => get(url, `/api/runs/${RUN}/image/tile?path=${q}&level=${l}&x=${x}&y=${y}`)));
  for (const r of res) if (r.status !== 200) throw new Error(`tile ${r.status}`);
  return { ms: performance.now() - t0, bytes: res.reduce((a, r) => a + r.bytes, 0), build_ms: build };
}

/** Largest gap between /api/system/health replies while `work` runs. */
async function loopGap(url: string, work: Promise<unknown>): Promise<number> {
  let done = false;
  void work.finally(() => (done = true));
  let last = performance.now();
  let worst = 0;
  while (!done) {
    await get(url, '/api/system/health');
    const now = performance.now();
    worst = Math.max(worst, now - last);
    last = now;
  }
  return worst;
}

async function browserView(url: string): Promise<number | null> {
  if (values['no-browser'] || !existsSync('/usr/bin/chromium')) return null;
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: '/usr/bin/chromium', headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
  try {
    const page = await browser.newPage({ viewport: { width: VIEW.w + 340, height: VIEW.h + 180 } });
    await page.goto(`${url}/ui/viewer.html?run=${RUN}&path=${q}`);
    // The page marks its first complete view with the time since navigation start.
    await page.locator('#canvas-box[data-first-view-ms]').waitFor({ timeout: 60_000 });
    return Number(await page.getAttribute('#canvas-box', 'data-first-view-ms'));
  } finally {
    await browser.close();
  }
}

const best = (xs: number[]) => Math.min(...xs);
const fmt = (ms: number | null) => (ms === null ? '–' : (ms / 1000).toFixed(2));

async function main(): Promise<void> {
  const load0 = loadavg()[0]!;
  await makeImage();
  const size = (await stat(join(runDir, REL))).size;
  const cache = join(runDir, '.cache');
  const first = firstViewTiles();
  const uncached: number[] = [];
  const builds: number[] = [];
  const gaps: number[] = [];
  const cached: number[] = [];
  const oneToOne: number[] = [];
  const bUncached: number[] = [];
  const bCached: number[] = [];
  let firstBytes = 0;
  for (let i = 0; i < repeat; i++) {
    await rm(cache, { recursive: true, force: true });
    let s = await startServer();
    try {
      const work = view(s.url, first, true);
      gaps.push(await loopGap(s.url, work));
      const r = await work;
      uncached.push(r.ms);
      builds.push(r.build_ms ?? NaN);
      firstBytes = r.bytes;
    } finally {
      await stop(s.child);
    }
    s = await startServer();
    try {
      cached.push((await view(s.url, first, true)).ms);
      oneToOne.push((await view(s.url, oneToOneTiles(), false)).ms);
    } finally {
      await stop(s.child);
    }
    await rm(cache, { recursive: true, force: true });
    s = await startServer();
    try {
      const u = await browserView(s.url);
      if (u !== null) bUncached.push(u);
    } finally {
      await stop(s.child);
    }
    s = await startServer();
    try {
      const c = await browserView(s.url);
      if (c !== null) bCached.push(c);
    } finally {
      await stop(s.child);
    }
  }
  const row = {
    image: `${W}×${H}×3 float32 (${(size / 2 ** 20).toFixed(0)} MiB)`,
    uncached: best(uncached),
    build: best(builds),
    cached: best(cached),
    oneToOne: best(oneToOne),
    browserUncached: bUncached.length ? best(bUncached) : null,
    browserCached: bCached.length ? best(bCached) : null,
    gap: best(gaps),
    tiles: first.length,
    firstMiB: firstBytes / 2 ** 20,
  };
  console.log(JSON.stringify(row));
  if (values['no-record']) return;
  const cpu = cpus()[0]?.model.replace(/\s+/g, ' ').trim() ?? 'cpu';
  const date = new Date().toISOString().slice(0, 10);
  const text = [
    '',
    `## ${date} — image viewer first view (\`node dist/bench/viewer.js\`), ${cpu}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}, no GPU`,
    '',
    `${row.image} in a run folder, \`skystack serve\` in its own process (a fresh one per measurement), a ${VIEW.w}×${VIEW.h} canvas; best of ${repeat}; load average at the start ${load0.toFixed(1)} (the machine is shared).`,
    `"first view" = GET /image/info + the ${row.tiles} tiles the page draws first (${row.firstMiB.toFixed(1)} MiB of half floats); "browser" = viewer.html in chromium from navigation to those tiles drawn.`,
    '',
    '| image | first view uncached s | of which pyramid build s | first view cached s | 1:1 screen (cached) s | browser uncached s | browser cached s | largest /health gap during the build ms |',
    '|---|---|---|---|---|---|---|---|',
    `| ${row.image} | ${fmt(row.uncached)} | ${fmt(row.build)} | ${fmt(row.cached)} | ${fmt(row.oneToOne)} | ${fmt(row.browserUncached)} | ${fmt(row.browserCached)} | ${row.gap.toFixed(0)} |`,
    '',
  ].join('\n');
  await appendFile(resultsFile, text);
  console.log(`appended to ${resultsFile}`);
}

await main();
agent.destroy();
