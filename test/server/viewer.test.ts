// Image viewer endpoints (src/server/routes/images.ts) against a real server and a hand-made run
// folder: info and the cache, tiles that decode to the FITS values, the pixel readout equal to
// the value src/fits reads (float with NaN, scaled integers, RA/Dec from the WCS), the HMS-look
// tile, the export endpoint, hostile paths answered 403/404/422 in the envelope (never 500), a
// planted cache link refused, and the server answering other requests while a pyramid is built
// on a worker thread.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { mkdir, readdir, stat, symlink, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'node:http';
import { decode as decodePng } from 'fast-png';
import { TanWcs } from '../../src/astro/wcs.js';
import { FitsHeader, FitsReader, writeFits } from '../../src/fits/index.js';
import { fromHalf, toHalf } from '../../src/shared/half-float.js';
import { fitsRow } from '../../src/shared/pyramid-math.js';
import { renderFits } from '../../src/viewer/export.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';
import { http, testServer } from './helpers.js';

const RUN = 'run_a';

async function fitsValue(file: string, x: number, y: number): Promise<(number | null)[]> {
  const r = await FitsReader.open(file);
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

/** GET returning the raw body bytes. */
function getBytes(base: string, path: string): Promise<{ status: number; headers: Record<string, unknown>; body: Buffer }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: url.hostname, port: url.port, path, method: 'GET' }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** A BITPIX 16 file with BSCALE 0.5, BZERO 100 (written by hand: the writer derives scaling from the data). */
function scaledInt16(w: number, h: number, value: (i: number) => number): Buffer {
  const card = (s: string) => s.padEnd(80, ' ');
  const num = (k: string, v: string) => card(`${k.padEnd(8, ' ')}= ${v.padStart(20, ' ')}`);
  const cards = [card('SIMPLE  =                    T'), num('BITPIX', '16'), num('NAXIS', '2'), num('NAXIS1', String(w)), num('NAXIS2', String(h)), num('BSCALE', '0.5'), num('BZERO', '100.0'), card("ROWORDER= 'TOP-DOWN'"), card('END')];
  const head = Buffer.from(cards.join('').padEnd(2880, ' '), 'latin1');
  const data = Buffer.alloc(Math.ceil((w * h * 2) / 2880) * 2880);
  for (let i = 0; i < w * h; i++) data.writeInt16BE(value(i), 2 * i);
  return Buffer.concat([head, data]);
}

interface Fixture {
  runsDir: string;
  runDir: string;
  rgb: string;
  ints: string;
  outside: string;
}

async function fixture(dir: string): Promise<Fixture> {
  const runsDir = join(dir, 'runs');
  const runDir = join(runsDir, RUN);
  await mkdir(join(runDir, 'outputs', 'masters'), { recursive: true });
  await mkdir(join(runDir, 'artifacts', 'preprocess'), { recursive: true });
  await writeFile(join(runDir, 'run.json'), JSON.stringify({ run_id: RUN, kind: 'rawstack', status: 'ok', created_at: '2025-01-01T00:00:00.000Z' }));
  const rnd = seededRandom(11);
  const w = 300;
  const h = 200;
  const data = new Float32Array(3 * w * h).map(() => 0.05 + 0.01 * rnd());
  data[(0 * h + 17) * w + 23] = NaN;
  const header = new FitsHeader();
  for (const [k, v] of [['CTYPE1', 'RA---TAN'], ['CTYPE2', 'DEC--TAN']] as const) header.set(k, v);
  for (const [k, v] of [['CRVAL1', 83.8], ['CRVAL2', -5.4], ['CRPIX1', 150.5], ['CRPIX2', 100.5], ['CD1_1', -0.0005], ['CD1_2', 0], ['CD2_1', 0], ['CD2_2', 0.0005]] as const) header.set(k, v);
  const rgb = join(runDir, 'outputs', 'stacked_rgb.fits');
  await writeFits(rgb, { width: w, height: h, planes: 3, data }, { header });
  // A scaled integer image (BSCALE/BZERO), as some masters are.
  const ints = join(runDir, 'outputs', 'masters', 'master_bias.fits');
  await writeFile(ints, scaledInt16(64, 48, (i) => (i * 7919) % 30000));
  await writeFile(join(runDir, 'outputs', 'bad.fits'), 'SIMPLE? no, this is text\n'.repeat(200));
  await writeFile(join(runDir, 'artifacts', 'preprocess', 'note.json'), '{}');
  const outside = join(dir, 'outside');
  await mkdir(outside);
  await writeFits(join(outside, 'secret.fits'), { width: 4, height: 4, data: new Float32Array(16).fill(7) });
  await symlink(join(outside, 'secret.fits'), join(runDir, 'outputs', 'link.fits'));
  return { runsDir, runDir, rgb, ints, outside };
}

const q = (path: string) => encodeURIComponent(path);

test('info builds the pyramid once (then from the cache); tiles decode to the FITS values in display order', async () => {
  await withTempDir('viewer-api', async (dir) => {
    const f = await fixture(dir);
    const server = await testServer({ runsDir: f.runsDir });
    try {
      const first = await http(server.url, 'GET', `/api/runs/${RUN}/image/info?path=outputs/stacked_rgb.fits`);
      assert.is(first.status, 200, first.text);
      assert.equal([first.json.width, first.json.height, first.json.planes, first.json.channels, first.json.flipped, first.json.wcs, first.json.cache], [300, 200, 3, 3, true, true, 'built']);
      const again = await http(server.url, 'GET', `/api/runs/${RUN}/image/info?path=outputs/stacked_rgb.fits`);
      assert.is(again.json.cache, 'hit');
      assert.is(again.json.version, first.json.version);
      assert.ok((await readdir(join(f.runDir, '.cache', 'viewer'))).length === 1);
      const tile = await getBytes(server.url, `/api/runs/${RUN}/image/tile?path=outputs/stacked_rgb.fits&level=0&x=1&y=0`);
      assert.is(tile.status, 200);
      assert.is(tile.body.length, 3 * 256 * 256 * 2);
      assert.is(tile.headers['x-tile-scale'], '1');
      const half = new Uint16Array(tile.body.buffer.slice(tile.body.byteOffset, tile.body.byteOffset + tile.body.length));
      for (const [x, yd] of [[256, 0], [299, 199], [270, 42]] as const) {
        const want = await fitsValue(f.rgb, x, fitsRow(yd, 200, true));
        for (let c = 0; c < 3; c++) assert.is(fromHalf(half[c * 65536 + yd * 256 + (x - 256)]!), fromHalf(toHalf(want[c]!)), `(${x}, ${yd}) c${c}`);
      }
      const outside = await http(server.url, 'GET', `/api/runs/${RUN}/image/tile?path=outputs/stacked_rgb.fits&level=0&x=2&y=0`);
      assert.is(outside.status, 400);
      assert.is(outside.json.error.code, 'VALIDATION_ERROR');
      const noLevel = await http(server.url, 'GET', `/api/runs/${RUN}/image/tile?path=outputs/stacked_rgb.fits&level=9&x=0&y=0`);
      assert.is(noLevel.status, 400);
    } finally {
      await server.close();
    }
  });
});

test('pixel readout: the value src/fits reads (NaN → null, BSCALE/BZERO applied), RA/Dec from the WCS', async () => {
  await withTempDir('viewer-pixel', async (dir) => {
    const f = await fixture(dir);
    const server = await testServer({ runsDir: f.runsDir });
    try {
      const wcs = TanWcs.fromHeader((await FitsReader.open(f.rgb).then(async (r) => (await r.close(), r))).header)!;
      for (const [x, y] of [[0, 0], [299, 199], [23, 17], [150, 100], [77, 3]] as const) {
        const r = await http(server.url, 'GET', `/api/runs/${RUN}/image/pixel?path=outputs/stacked_rgb.fits&x=${x}&y=${y}`);
        assert.is(r.status, 200, r.text);
        assert.equal(r.json.values, await fitsValue(f.rgb, x, y), `(${x}, ${y})`);
        const [ra, dec] = wcs.pixelToSky(x, y);
        assert.is(r.json.ra, ra);
        assert.is(r.json.dec, dec);
      }
      const nan = await http(server.url, 'GET', `/api/runs/${RUN}/image/pixel?path=outputs/stacked_rgb.fits&x=23&y=17`);
      assert.is(nan.json.values[0], null);
      for (const [x, y] of [[0, 0], [63, 47], [5, 30]] as const) {
        const r = await http(server.url, 'GET', `/api/runs/${RUN}/image/pixel?path=outputs/masters/master_bias.fits&x=${x}&y=${y}`);
        assert.equal(r.json.values, await fitsValue(f.ints, x, y));
        assert.is(r.json.ra, null);
        const rawIndex = y * 64 + x;
        assert.is(r.json.values[0], 0.5 * ((rawIndex * 7919) % 30000) + 100);
      }
      const off = await http(server.url, 'GET', `/api/runs/${RUN}/image/pixel?path=outputs/stacked_rgb.fits&x=300&y=0`);
      assert.is(off.status, 400);
      assert.is(off.json.error.code, 'VALIDATION_ERROR');
      const neg = await http(server.url, 'GET', `/api/runs/${RUN}/image/pixel?path=outputs/stacked_rgb.fits&x=-1&y=0`);
      assert.is(neg.status, 400);
    } finally {
      await server.close();
    }
  });
});

test('hostile or wrong paths: 403, 404 or 422 in the error envelope, never 500; nothing written through a planted cache link', async () => {
  await withTempDir('viewer-hostile', async (dir) => {
    const f = await fixture(dir);
    const r2 = join(f.runsDir, 'run_b');
    await mkdir(join(r2, 'outputs'), { recursive: true });
    await writeFits(join(r2, 'outputs', 'x.fits'), { width: 8, height: 8, data: new Float32Array(64) });
    await symlink(f.outside, join(r2, '.cache'));
    const server = await testServer({ runsDir: f.runsDir });
    try {
      const cases: [string, number, string][] = [
        [`/api/runs/${RUN}/image/info?path=${q('../run_b/outputs/x.fits')}`, 403, 'PATH_NOT_ALLOWED'],
        [`/api/runs/${RUN}/image/info?path=${q('/etc/passwd')}`, 403, 'PATH_NOT_ALLOWED'],
        [`/api/runs/${RUN}/image/info?path=outputs/x.fits%00.fits`, 403, 'PATH_NOT_ALLOWED'],
        [`/api/runs/${RUN}/image/info?path=outputs/link.fits`, 403, 'PATH_NOT_ALLOWED'],
        [`/api/runs/${RUN}/image/pixel?path=outputs/link.fits&x=0&y=0`, 403, 'PATH_NOT_ALLOWED'],
        [`/api/runs/${RUN}/image/export?path=outputs/link.fits`, 403, 'PATH_NOT_ALLOWED'],
        [`/api/runs/${RUN}/image/info?path=outputs/missing.fits`, 404, 'NOT_FOUND'],
        [`/api/runs/${RUN}/image/info?path=outputs`, 422, 'NOT_A_FILE'],
        [`/api/runs/${RUN}/image/info?path=artifacts/preprocess/note.json`, 422, 'UNSUPPORTED_TYPE'],
        [`/api/runs/${RUN}/image/info?path=outputs/bad.fits`, 422, 'UNREADABLE_INPUT'],
        [`/api/runs/${RUN}/image/pixel?path=outputs/bad.fits&x=0&y=0`, 422, 'UNREADABLE_INPUT'],
        [`/api/runs/..%2F${RUN}/image/info?path=outputs/stacked_rgb.fits`, 404, 'NOT_FOUND'],
        [`/api/runs/no_such_run/image/info?path=outputs/stacked_rgb.fits`, 404, 'NOT_FOUND'],
        [`/api/runs/${RUN}/image/info`, 400, 'VALIDATION_ERROR'],
        [`/api/runs/${RUN}/image/info?path=outputs/stacked_rgb.fits&extra=1`, 400, 'VALIDATION_ERROR'],
        [`/api/runs/run_b/image/info?path=outputs/x.fits`, 403, 'PATH_NOT_ALLOWED'],
      ];
      for (const [path, status, code] of cases) {
        const r = await http(server.url, 'GET', path);
        assert.is(r.status, status, `${path}: ${r.text}`);
        assert.is(r.json?.error?.code, code, path);
      }
      const bad = await http(server.url, 'GET', `/api/runs/${RUN}/image/info?path=outputs/bad.fits`);
      assert.is(bad.json.error.details.fits_code, 'FITS_NOT_FITS');
      assert.not.match(bad.text, /proc\/self/);
      assert.equal((await readdir(f.outside)).sort(), ['secret.fits']);
    } finally {
      await server.close();
    }
  });
});

test('export endpoint: the picture renderFits makes with the same levels; bad options 400, HMS look on mono 422', async () => {
  await withTempDir('viewer-export', async (dir) => {
    const f = await fixture(dir);
    const server = await testServer({ runsDir: f.runsDir });
    try {
      const res = await getBytes(server.url, `/api/runs/${RUN}/image/export?path=outputs/stacked_rgb.fits&format=png&bits=16&stretch=auto&black=0.05&mid=0.2&white=0.06`);
      assert.is(res.status, 200, res.body.toString());
      assert.is(res.headers['content-type'], 'image/png');
      assert.is(res.headers['content-disposition'], 'attachment; filename="stacked_rgb.png"');
      const png = decodePng(res.body);
      const want = await renderFits(f.rgb, { stretch: 'auto', bits: 16, levels: [{ black: 0.05, mid: 0.2, white: 0.06, beta: 0 }] });
      assert.equal([png.width, png.height, png.depth, png.channels], [300, 200, 16, 3]);
      assert.equal(Array.from(png.data.slice(0, 3000)), Array.from(want.data.slice(0, 3000)));
      const tif = await getBytes(server.url, `/api/runs/${RUN}/image/export?path=outputs/masters/master_bias.fits&format=tif`);
      assert.is(tif.status, 200);
      assert.is(tif.headers['content-type'], 'image/tiff');
      for (const [path, status, code] of [
        [`/api/runs/${RUN}/image/export?path=outputs/stacked_rgb.fits&format=jpg&bits=16`, 400, 'VALIDATION_ERROR'],
        [`/api/runs/${RUN}/image/export?path=outputs/stacked_rgb.fits&black=1&mid=0.5&white=0`, 400, 'VALIDATION_ERROR'],
        [`/api/runs/${RUN}/image/export?path=outputs/stacked_rgb.fits&black=1`, 400, 'VALIDATION_ERROR'],
        [`/api/runs/${RUN}/image/export?path=outputs/stacked_rgb.fits&black=x&mid=0.5&white=2`, 400, 'VALIDATION_ERROR'],
        [`/api/runs/${RUN}/image/export?path=outputs/stacked_rgb.fits&format=gif`, 400, 'VALIDATION_ERROR'],
        [`/api/runs/${RUN}/image/export?path=outputs/stacked_rgb.fits&channel=7`, 400, 'VALIDATION_ERROR'],
        [`/api/runs/${RUN}/image/export?path=outputs/masters/master_bias.fits&stretch=hms`, 422, 'UNSUPPORTED_TYPE'],
        [`/api/runs/${RUN}/image/tile?path=outputs/masters/master_bias.fits&level=0&x=0&y=0&look=hms`, 422, 'UNSUPPORTED_TYPE'],
      ] as const) {
        const r = await http(server.url, 'GET', path);
        assert.is(r.status, status, `${path}: ${r.text}`);
        assert.is(r.json.error.code, code, path);
      }
      // The HMS look of a linear RGB image without an HMS run: solved on the image, values in [0, 1].
      const look = await getBytes(server.url, `/api/runs/${RUN}/image/tile?path=outputs/stacked_rgb.fits&level=0&x=0&y=0&look=hms`);
      assert.is(look.status, 200);
      assert.is(look.headers['x-tile-look'], 'hms-solved');
      const lh = new Uint16Array(look.body.buffer.slice(look.body.byteOffset, look.body.byteOffset + look.body.length));
      let finite = 0;
      for (let i = 0; i < lh.length; i++) {
        const v = fromHalf(lh[i]!);
        if (Number.isNaN(v)) continue;
        finite++;
        assert.ok(v >= 0 && v <= 1, String(v));
      }
      assert.ok(finite > 3 * 200 * 200);
      const list = await http(server.url, 'GET', `/api/runs/${RUN}/images`);
      assert.equal(
        list.json.items.map((i: { path: string; width: number | null }) => [i.path, i.width]),
        [
          ['outputs/bad.fits', null],
          ['outputs/masters/master_bias.fits', 64],
          ['outputs/stacked_rgb.fits', 300],
        ],
      );
    } finally {
      await server.close();
    }
  });
});

test('pyramid builds run on a worker thread: the server keeps answering while one is built', async () => {
  await withTempDir('viewer-busy', async (dir) => {
    const f = await fixture(dir);
    const w = 3000;
    const h = 2000;
    const big = new Float32Array(3 * w * h);
    for (let i = 0; i < big.length; i++) big[i] = (i * 2654435761) % 1000;
    await writeFits(join(f.runDir, 'outputs', 'big.fits'), { width: w, height: h, planes: 3, data: big });
    const server = await testServer({ runsDir: f.runsDir });
    try {
      let done = false;
      const info = http(server.url, 'GET', `/api/runs/${RUN}/image/info?path=outputs/big.fits`).then((r) => {
        done = true;
        return r;
      });
      let answeredWhileBuilding = 0;
      while (!done) {
        const hres = await http(server.url, 'GET', '/api/system/health');
        assert.is(hres.status, 200);
        if (!done) answeredWhileBuilding++;
      }
      const r = await info;
      assert.is(r.status, 200, r.text);
      assert.is(r.json.cache, 'built');
      assert.ok(answeredWhileBuilding >= 3, `health answered ${answeredWhileBuilding} times during the build`);
      // And the build itself ran off the main thread.
      const src = await (await import('../../src/server/run-files.js')).openRunFile(f.runDir, 'outputs/masters/master_bias.fits');
      try {
        const p = await server.context.viewer.prepare(f.runDir, 'outputs/masters/master_bias.fits', src);
        assert.ok(p.thread > 0, `thread ${p.thread}`);
      } finally {
        await src.fh.close();
      }
      assert.ok((await stat(join(f.runDir, 'outputs', 'big.fits'))).size > 0);
    } finally {
      await server.close();
    }
  });
});

test.run();
