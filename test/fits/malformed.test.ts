// Malformed and hostile FITS files, each built byte by byte in a temporary folder: every failure
// must be a FitsError with the specific code, naming the file (err.file and the message), from
// every entry point, without leaking a file handle or allocating what a header merely claims.

import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { existsSync, readdirSync } from 'node:fs';
import { chmod, mkdir, mkdtemp, readdir, rm, symlink, truncate, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { spawnSync } from 'node:child_process';
import {
  FitsError,
  FitsReader,
  readFitsHeader,
  readFitsImage,
  readFitsNative,
  writeFits,
  type FitsErrorCode,
} from '../../src/fits/index.js';

// ---- byte builders -------------------------------------------------------------------------

const CARD = 80;
const BLOCK = 2880;

/** One 80-character card image (throws on an over-long card so a typo cannot go unnoticed). */
function card(text: string): string {
  if (text.length > CARD) throw new Error(`card longer than 80 characters: ${text}`);
  return text.padEnd(CARD);
}

/** `KEY     = value` with the value right-aligned to column 30 (fixed format). */
function kv(key: string, value: string | number | boolean, comment?: string): string {
  const v = typeof value === 'boolean' ? (value ? 'T' : 'F') : String(value);
  return card(`${key.padEnd(8)}= ${v.padStart(20)}${comment ? ` / ${comment}` : ''}`);
}

const str = (s: string) => `'${s.replace(/'/g, "''").padEnd(8)}'`;

/** Pads `bytes` to whole 2880-byte blocks with `fill`. */
function blocks(bytes: Uint8Array, fill: number): Uint8Array {
  const out = new Uint8Array(Math.ceil(bytes.length / BLOCK) * BLOCK).fill(fill);
  out.set(bytes);
  return out;
}

/** Header blocks from card images; END is appended unless `end` is false. */
function headerBytes(cards: string[], end = true): Uint8Array {
  const text = [...cards, ...(end ? [card('END')] : [])].join('');
  return blocks(Buffer.from(text, 'latin1'), 0x20);
}

function concat(...parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let o = 0;
  for (const p of parts) {
    out.set(p, o);
    o += p.length;
  }
  return out;
}

/** Data bytes padded to whole blocks with zeros. */
const dataBlocks = (n: number, pattern = (i: number) => i & 0xff) => blocks(Uint8Array.from({ length: n }, (_, i) => pattern(i)), 0);

/** Mandatory primary cards for an image. */
function primaryCards(bitpix: number, axes: number[], extra: string[] = []): string[] {
  return [kv('SIMPLE', true, 'conforms to FITS standard'), kv('BITPIX', bitpix), kv('NAXIS', axes.length), ...axes.map((n, i) => kv(`NAXIS${i + 1}`, n)), ...extra];
}

/** A complete, valid primary image file. */
function imageFile(bitpix: number, axes: number[], extra: string[] = []): Uint8Array {
  const n = axes.reduce((a, b) => a * b, 1) * (Math.abs(bitpix) / 8);
  return concat(headerBytes(primaryCards(bitpix, axes, extra)), dataBlocks(n));
}

/**
 * An empty primary and a tile-compressed table for a 4 x 3 (x planes) image with row tiles: the
 * descriptors are zero (no tile data), which is enough for everything decided at open.
 */
function tiledFile(extra: string[], o: { zbitpix?: number; planes?: number; rows?: number; pcount?: number; tform?: string } = {}): Uint8Array {
  const planes = o.planes ?? 1;
  const rows = o.rows ?? 3 * planes;
  return concat(
    headerBytes([kv('SIMPLE', true), kv('BITPIX', 8), kv('NAXIS', 0), kv('EXTEND', true)]),
    headerBytes([
      kv('XTENSION', str('BINTABLE'), 'binary table extension'),
      kv('BITPIX', 8),
      kv('NAXIS', 2),
      kv('NAXIS1', 8),
      kv('NAXIS2', rows),
      kv('PCOUNT', o.pcount ?? 0),
      kv('GCOUNT', 1),
      kv('TFIELDS', 1),
      kv('TTYPE1', str('COMPRESSED_DATA')),
      kv('TFORM1', str(o.tform ?? '1PB(12)')),
      kv('ZIMAGE', true, 'extension contains compressed image'),
      kv('ZBITPIX', o.zbitpix ?? 16),
      kv('ZNAXIS', planes > 1 ? 3 : 2),
      kv('ZNAXIS1', 4),
      kv('ZNAXIS2', 3),
      ...(planes > 1 ? [kv('ZNAXIS3', planes)] : []),
      ...extra,
    ]),
    dataBlocks(8 * rows, () => 0),
  );
}

/** A deterministic byte sequence that looks like noise. */
function noise(n: number, seed = 12345): Uint8Array {
  const out = new Uint8Array(n);
  let s = seed >>> 0;
  for (let i = 0; i < n; i++) {
    s = (Math.imul(s, 1664525) + 1013904223) >>> 0;
    out[i] = s >>> 24;
  }
  return out;
}

// ---- assertions ----------------------------------------------------------------------------

async function expectFitsError(action: () => Promise<unknown>, code: FitsErrorCode, file: string, what: string): Promise<FitsError> {
  let caught: unknown;
  try {
    await action();
  } catch (e) {
    caught = e;
  }
  if (caught === undefined) assert.unreachable(`${what}: expected ${code}, but nothing was thrown`);
  if (!(caught instanceof FitsError)) assert.unreachable(`${what}: expected FitsError ${code}, got ${String(caught)}`);
  const err = caught as FitsError;
  assert.is(err.code, code, `${what}: code (message: ${err.message})`);
  assert.is(err.file, file, `${what}: err.file`);
  assert.ok(err.message.includes(file), `${what}: message names the file: ${err.message}`);
  assert.is(err.name, 'FitsError');
  return err;
}

/** Every reading entry point must fail the same way. */
async function expectAllReadersFail(file: string, code: FitsErrorCode, what: string): Promise<void> {
  await expectFitsError(() => FitsReader.open(file), code, file, `${what} (FitsReader.open)`);
  await expectFitsError(() => readFitsHeader(file), code, file, `${what} (readFitsHeader)`);
  await expectFitsError(() => readFitsImage(file), code, file, `${what} (readFitsImage)`);
  await expectFitsError(() => readFitsImage(file, 'float64'), code, file, `${what} (readFitsImage float64)`);
  await expectFitsError(() => readFitsNative(file), code, file, `${what} (readFitsNative)`);
}

/** Open file descriptors of this process (Linux), or undefined where /proc is absent. */
function openFds(): number | undefined {
  return existsSync('/proc/self/fd') ? readdirSync('/proc/self/fd').length : undefined;
}

// ---- cases ---------------------------------------------------------------------------------

let dir = '';
let counter = 0;
async function fileWith(bytes: Uint8Array | string, name = `case-${++counter}.fits`): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, bytes);
  return path;
}

test.before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'skystack-malformed-'));
});
test.after(async () => {
  await rm(dir, { recursive: true, force: true });
});

interface Case {
  name: string;
  code: FitsErrorCode;
  bytes: () => Uint8Array | string;
}

const CASES: Case[] = [
  { name: 'empty file', code: 'FITS_EMPTY', bytes: () => new Uint8Array(0) },
  { name: 'text file', code: 'FITS_NOT_FITS', bytes: () => 'This is a plain text file, not a FITS image.\nSecond line.\n' },
  { name: 'random binary', code: 'FITS_NOT_FITS', bytes: () => noise(5000) },
  { name: 'gzip magic bytes only', code: 'FITS_TRUNCATED_HEADER', bytes: () => Uint8Array.from([0x1f, 0x8b, 0x08, 0x00]) },
  { name: 'gzip stream cut inside the header', code: 'FITS_TRUNCATED_HEADER', bytes: () => gzipSync(noise(40000)).subarray(0, 20) },
  { name: 'gzip of a text file', code: 'FITS_NOT_FITS', bytes: () => gzipSync(Buffer.from('not FITS at all\n')) },
  { name: 'gzip of nothing', code: 'FITS_EMPTY', bytes: () => gzipSync(new Uint8Array(0)) },
  { name: 'gzip header with corrupt deflate data', code: 'FITS_COMPRESSED_CORRUPT', bytes: () => concat(gzipSync(imageFile(16, [4, 3])).subarray(0, 10), Uint8Array.from([0xff, 0xff, 0xff, 0xff, 0xff, 0xff])) },
  { name: 'SIMPLE = F', code: 'FITS_NONSTANDARD', bytes: () => concat(headerBytes([kv('SIMPLE', false), kv('BITPIX', 16), kv('NAXIS', 2), kv('NAXIS1', 4), kv('NAXIS2', 3)]), dataBlocks(24)) },
  { name: 'SIMPLE = 1 (not a logical)', code: 'FITS_NOT_FITS', bytes: () => imageFile(16, [4, 3]).map((b, i) => (i === 29 ? 0x31 : b)) },
  { name: 'starts with XTENSION', code: 'FITS_NOT_FITS', bytes: () => concat(headerBytes([kv('XTENSION', str('IMAGE')), kv('BITPIX', 16), kv('NAXIS', 2), kv('NAXIS1', 4), kv('NAXIS2', 3), kv('PCOUNT', 0), kv('GCOUNT', 1)]), dataBlocks(24)) },
  { name: 'shorter than one block (a few cards)', code: 'FITS_TRUNCATED_HEADER', bytes: () => headerBytes(primaryCards(16, [4, 3])).subarray(0, 5 * CARD) },
  { name: 'shorter than one card', code: 'FITS_TRUNCATED_HEADER', bytes: () => headerBytes(primaryCards(16, [4, 3])).subarray(0, 40) },
  {
    name: 'second header block cut short',
    code: 'FITS_TRUNCATED_HEADER',
    bytes: () => headerBytes([...primaryCards(16, [4, 3]), ...Array.from({ length: 40 }, (_, i) => kv(`KEY${i}`, i))]).subarray(0, BLOCK + 1000),
  },
  { name: 'whole blocks without END', code: 'FITS_MISSING_END', bytes: () => headerBytes([...primaryCards(16, [4, 3]), ...Array.from({ length: 60 }, (_, i) => kv(`KEY${i}`, i))], false) },
  { name: 'one block of SIMPLE and blanks, no END', code: 'FITS_MISSING_END', bytes: () => headerBytes([kv('SIMPLE', true)], false) },
  { name: 'non-ASCII byte (0xE9) in a card', code: 'FITS_BAD_CARD', bytes: () => imageFile(16, [4, 3], [kv('OBSERVER', str('Ren\u00e9'))]) },
  { name: 'control byte (TAB) in a card', code: 'FITS_BAD_CARD', bytes: () => imageFile(16, [4, 3], [card('COMMENT a\ttab')]) },
  { name: 'lower-case keyword', code: 'FITS_BAD_CARD', bytes: () => imageFile(16, [4, 3], [kv('exptime', 30)]) },
  { name: 'unterminated string value', code: 'FITS_BAD_CARD', bytes: () => imageFile(16, [4, 3], [card("OBJECT  = 'M 42")]) },
  { name: 'missing BITPIX', code: 'FITS_MISSING_KEYWORD', bytes: () => concat(headerBytes([kv('SIMPLE', true), kv('NAXIS', 2), kv('NAXIS1', 4), kv('NAXIS2', 3)]), dataBlocks(24)) },
  { name: 'missing NAXIS', code: 'FITS_MISSING_KEYWORD', bytes: () => concat(headerBytes([kv('SIMPLE', true), kv('BITPIX', 16), kv('NAXIS1', 4), kv('NAXIS2', 3)]), dataBlocks(24)) },
  { name: 'missing NAXIS2', code: 'FITS_MISSING_KEYWORD', bytes: () => concat(headerBytes([kv('SIMPLE', true), kv('BITPIX', 16), kv('NAXIS', 2), kv('NAXIS1', 4)]), dataBlocks(24)) },
  { name: 'BITPIX = 12', code: 'FITS_BAD_BITPIX', bytes: () => concat(headerBytes(primaryCards(12, [4, 3])), dataBlocks(24)) },
  { name: "BITPIX = 'abc'", code: 'FITS_BAD_KEYWORD_VALUE', bytes: () => concat(headerBytes([kv('SIMPLE', true), kv('BITPIX', str('abc')), kv('NAXIS', 2), kv('NAXIS1', 4), kv('NAXIS2', 3)]), dataBlocks(24)) },
  { name: "BITPIX = '16' (quoted number)", code: 'FITS_BAD_KEYWORD_VALUE', bytes: () => concat(headerBytes([kv('SIMPLE', true), kv('BITPIX', str('16')), kv('NAXIS', 2), kv('NAXIS1', 4), kv('NAXIS2', 3)]), dataBlocks(24)) },
  { name: 'BITPIX = 16.0', code: 'FITS_BAD_KEYWORD_VALUE', bytes: () => concat(headerBytes([kv('SIMPLE', true), kv('BITPIX', '16.0'), kv('NAXIS', 2), kv('NAXIS1', 4), kv('NAXIS2', 3)]), dataBlocks(24)) },
  { name: 'NAXIS1 = 4.0', code: 'FITS_BAD_KEYWORD_VALUE', bytes: () => concat(headerBytes([kv('SIMPLE', true), kv('BITPIX', 16), kv('NAXIS', 2), kv('NAXIS1', '4.0'), kv('NAXIS2', 3)]), dataBlocks(24)) },
  { name: 'negative NAXIS1', code: 'FITS_BAD_NAXIS', bytes: () => concat(headerBytes(primaryCards(16, [-4, 3])), dataBlocks(24)) },
  { name: 'negative NAXIS', code: 'FITS_BAD_NAXIS', bytes: () => concat(headerBytes([kv('SIMPLE', true), kv('BITPIX', 16), kv('NAXIS', -1)]), dataBlocks(24)) },
  { name: 'NAXIS = 1000', code: 'FITS_BAD_NAXIS', bytes: () => concat(headerBytes([kv('SIMPLE', true), kv('BITPIX', 16), kv('NAXIS', 1000)]), dataBlocks(24)) },
  { name: 'NAXIS = 1 (spectrum)', code: 'FITS_UNSUPPORTED_NAXIS', bytes: () => imageFile(16, [12]) },
  { name: 'NAXIS = 4 with NAXIS4 = 2', code: 'FITS_UNSUPPORTED_NAXIS', bytes: () => imageFile(16, [4, 3, 2, 2]) },
  { name: 'NAXIS = 5 with NAXIS5 = 3', code: 'FITS_UNSUPPORTED_NAXIS', bytes: () => imageFile(8, [4, 3, 2, 1, 3]) },
  { name: 'NAXIS = 0 and nothing after', code: 'FITS_NO_IMAGE', bytes: () => headerBytes([kv('SIMPLE', true), kv('BITPIX', 8), kv('NAXIS', 0)]) },
  { name: 'zero-length NAXIS2', code: 'FITS_NO_IMAGE', bytes: () => headerBytes(primaryCards(16, [4, 0])) },
  {
    name: 'NAXIS = 0 primary followed by a table and an IMAGE extension without data',
    code: 'FITS_NO_IMAGE',
    bytes: () =>
      concat(
        headerBytes([kv('SIMPLE', true), kv('BITPIX', 8), kv('NAXIS', 0), kv('EXTEND', true)]),
        headerBytes([kv('XTENSION', str('BINTABLE')), kv('BITPIX', 8), kv('NAXIS', 2), kv('NAXIS1', 4), kv('NAXIS2', 3), kv('PCOUNT', 0), kv('GCOUNT', 1), kv('TFIELDS', 1), kv('TFORM1', str('1J'))]),
        dataBlocks(12),
        headerBytes([kv('XTENSION', str('IMAGE')), kv('BITPIX', 16), kv('NAXIS', 0), kv('PCOUNT', 0), kv('GCOUNT', 1)]),
      ),
  },
  {
    name: 'IMAGE extension after an empty primary, its data cut short',
    code: 'FITS_TRUNCATED_DATA',
    bytes: () =>
      concat(
        headerBytes([kv('SIMPLE', true), kv('BITPIX', 8), kv('NAXIS', 0), kv('EXTEND', true)]),
        headerBytes([kv('XTENSION', str('IMAGE')), kv('BITPIX', 16), kv('NAXIS', 2), kv('NAXIS1', 80), kv('NAXIS2', 60), kv('PCOUNT', 0), kv('GCOUNT', 1)]),
        dataBlocks(24),
      ),
  },
  { name: 'HCOMPRESS_1 tiles', code: 'FITS_COMPRESSION_UNSUPPORTED', bytes: () => tiledFile([kv('ZCMPTYPE', str('HCOMPRESS_1'))]) },
  { name: 'PLIO_1 tiles', code: 'FITS_COMPRESSION_UNSUPPORTED', bytes: () => tiledFile([kv('ZCMPTYPE', str('PLIO_1'))]) },
  { name: 'unknown ZCMPTYPE', code: 'FITS_COMPRESSION_UNSUPPORTED', bytes: () => tiledFile([kv('ZCMPTYPE', str('ZSTD_9'))]) },
  { name: 'tiled image without ZCMPTYPE', code: 'FITS_MISSING_KEYWORD', bytes: () => tiledFile([]) },
  { name: '64-bit integer tiled image (ZBITPIX = 64)', code: 'FITS_COMPRESSED_LAYOUT_UNSUPPORTED', bytes: () => tiledFile([kv('ZCMPTYPE', str('RICE_1'))], { zbitpix: 64 }) },
  { name: 'Rice tiles of 8 bytes per pixel', code: 'FITS_COMPRESSED_LAYOUT_UNSUPPORTED', bytes: () => tiledFile([kv('ZCMPTYPE', str('RICE_1')), kv('ZNAME1', str('BYTEPIX')), kv('ZVAL1', 8)]) },
  { name: 'tiles spanning two planes (ZTILE3 = 2)', code: 'FITS_COMPRESSED_LAYOUT_UNSUPPORTED', bytes: () => tiledFile([kv('ZCMPTYPE', str('RICE_1')), kv('ZTILE1', 4), kv('ZTILE2', 3), kv('ZTILE3', 2)], { planes: 2, rows: 1 }) },
  { name: 'unknown ZQUANTIZ', code: 'FITS_COMPRESSED_LAYOUT_UNSUPPORTED', bytes: () => tiledFile([kv('ZCMPTYPE', str('RICE_1')), kv('ZQUANTIZ', str('MAGIC')), kv('ZSCALE', 1), kv('ZZERO', 0)], { zbitpix: -32 }) },
  { name: 'table rows not matching the tile count', code: 'FITS_COMPRESSED_CORRUPT', bytes: () => tiledFile([kv('ZCMPTYPE', str('RICE_1'))], { rows: 2 }) },
  { name: 'tiled image whose heap is cut short', code: 'FITS_TRUNCATED_DATA', bytes: () => tiledFile([kv('ZCMPTYPE', str('RICE_1'))], { pcount: 6000 }) },
  { name: 'tiled image with a malformed TFORM', code: 'FITS_BAD_KEYWORD_VALUE', bytes: () => tiledFile([kv('ZCMPTYPE', str('RICE_1'))], { tform: '1PZ(3)' }) },
  {
    name: 'random groups (GROUPS = T)',
    code: 'FITS_RANDOM_GROUPS_UNSUPPORTED',
    bytes: () => concat(headerBytes([kv('SIMPLE', true), kv('BITPIX', -32), kv('NAXIS', 3), kv('NAXIS1', 0), kv('NAXIS2', 3), kv('NAXIS3', 1), kv('GROUPS', true), kv('PCOUNT', 2), kv('GCOUNT', 4)]), dataBlocks(4 * 5 * 4)),
  },
  { name: 'header only, data missing', code: 'FITS_TRUNCATED_DATA', bytes: () => headerBytes(primaryCards(16, [4, 3])) },
  { name: 'data shorter than NAXIS implies', code: 'FITS_TRUNCATED_DATA', bytes: () => concat(headerBytes(primaryCards(16, [4, 3])), dataBlocks(24).subarray(0, 23)) },
  { name: 'cube missing its last plane', code: 'FITS_TRUNCATED_DATA', bytes: () => concat(headerBytes(primaryCards(-32, [40, 30, 3])), new Uint8Array(40 * 30 * 4 * 2)) },
  { name: 'BSCALE = 0', code: 'FITS_BAD_KEYWORD_VALUE', bytes: () => imageFile(16, [4, 3], [kv('BSCALE', 0), kv('BZERO', 0)]) },
  { name: 'BSCALE = 0.0', code: 'FITS_BAD_KEYWORD_VALUE', bytes: () => imageFile(16, [4, 3], [kv('BSCALE', '0.0')]) },
  { name: "BSCALE = 'x'", code: 'FITS_BAD_KEYWORD_VALUE', bytes: () => imageFile(16, [4, 3], [kv('BSCALE', str('x'))]) },
  { name: 'BZERO = T', code: 'FITS_BAD_KEYWORD_VALUE', bytes: () => imageFile(16, [4, 3], [kv('BZERO', true)]) },
  { name: 'BLANK = 1.5', code: 'FITS_BAD_KEYWORD_VALUE', bytes: () => imageFile(16, [4, 3], [kv('BLANK', '1.5')]) },
];

for (const c of CASES) {
  test(`${c.name} -> ${c.code}`, async () => {
    const file = await fileWith(c.bytes());
    await expectAllReadersFail(file, c.code, c.name);
  });
}

test('nonexistent path -> FITS_NOT_FOUND', async () => {
  await expectAllReadersFail(join(dir, 'no-such-file.fits'), 'FITS_NOT_FOUND', 'nonexistent');
  await expectAllReadersFail(join(dir, 'no-such-dir', 'x.fits'), 'FITS_NOT_FOUND', 'nonexistent folder');
});

test('a directory -> FITS_NOT_A_FILE', async () => {
  const sub = join(dir, 'a-folder.fits');
  await mkdir(sub);
  await expectAllReadersFail(sub, 'FITS_NOT_A_FILE', 'directory');
});

test('symbolic links: dangling -> FITS_NOT_FOUND, loop -> FITS_UNREADABLE', async () => {
  const dangling = join(dir, 'dangling.fits');
  await symlink(join(dir, 'nowhere.fits'), dangling);
  await expectAllReadersFail(dangling, 'FITS_NOT_FOUND', 'dangling symlink');
  const loopA = join(dir, 'loop-a.fits');
  const loopB = join(dir, 'loop-b.fits');
  await symlink(loopB, loopA);
  await symlink(loopA, loopB);
  await expectAllReadersFail(loopA, 'FITS_UNREADABLE', 'symlink loop');
});

test('unreadable file (no permission) -> FITS_UNREADABLE', async () => {
  if (process.platform === 'win32' || process.getuid?.() === 0) return; // root reads anything
  const file = await fileWith(imageFile(16, [4, 3]), 'no-permission.fits');
  await chmod(file, 0o000);
  try {
    await expectAllReadersFail(file, 'FITS_UNREADABLE', 'mode 000');
  } finally {
    await chmod(file, 0o600);
  }
});

test('a character device -> FITS_NOT_A_FILE', async () => {
  if (!existsSync('/dev/zero')) return;
  await expectAllReadersFail('/dev/zero', 'FITS_NOT_A_FILE', '/dev/zero');
});

test('a named pipe -> FITS_NOT_A_FILE at once (opening it would block for ever)', async () => {
  const fifo = join(dir, 'pipe.fits');
  const made = spawnSync('mkfifo', [fifo]);
  if (made.status !== 0) return; // no mkfifo on this system
  await expectAllReadersFail(fifo, 'FITS_NOT_A_FILE', 'named pipe');
});

test('uint64 data with BLANK: the blank pixel is NaN and no other pixel is (exact 64-bit arithmetic)', async () => {
  // Stored int64 values are physical − 2^63; BLANK refers to the stored value 5, i.e. physical 2^63 + 5.
  const stored = [0n, 5n, 7n - 2n ** 63n, 2n ** 63n - 1n];
  const data = new Uint8Array(32);
  const view = new DataView(data.buffer);
  stored.forEach((v, i) => view.setBigInt64(i * 8, v, false));
  const file = await fileWith(
    concat(headerBytes(primaryCards(64, [4, 1], [kv('BZERO', '9223372036854775808'), kv('BSCALE', 1), kv('BLANK', 5)])), blocks(data, 0)),
  );
  const image = await readFitsImage(file, 'float64');
  assert.equal(Array.from(image.data), [2 ** 63, NaN, 7, 2 ** 64]);
  const native = await readFitsNative(file);
  assert.equal(Array.from(native.data as BigUint64Array), [2n ** 63n, 2n ** 63n + 5n, 7n, 2n ** 64n - 1n]);
});

test('huge NAXIS1 x NAXIS2 claim in a tiny file fails fast without allocating it', async () => {
  const claims: [number, number[]][] = [
    [-64, [100000, 100000]], // 10^10 samples: beyond one typed array
    [8, [40000, 40000]], // 1.6 GB: would fit a typed array, but the file is tiny
    [16, [65536, 65536, 65536]],
    [-32, [2147483647, 2147483647]],
  ];
  for (const [bitpix, axes] of claims) {
    const file = await fileWith(concat(headerBytes(primaryCards(bitpix, axes)), dataBlocks(100)));
    const before = process.memoryUsage();
    const t0 = performance.now();
    let code: string | undefined;
    try {
      await readFitsImage(file);
    } catch (e) {
      assert.instance(e, FitsError);
      const err = e as FitsError;
      code = err.code;
      assert.is(err.file, file);
      assert.ok(err.message.includes(file));
    }
    const ms = performance.now() - t0;
    const after = process.memoryUsage();
    assert.ok(code === 'FITS_TRUNCATED_DATA' || code === 'FITS_TOO_LARGE', `${axes.join('x')} BITPIX ${bitpix}: got ${code}`);
    assert.ok(ms < 1000, `${axes.join('x')}: took ${ms.toFixed(0)} ms`);
    const grown = after.arrayBuffers + after.external - before.arrayBuffers - before.external;
    assert.ok(grown < 64 * 2 ** 20, `${axes.join('x')}: buffers grew by ${grown} bytes`);
    await expectFitsError(() => readFitsHeader(file), code as FitsErrorCode, file, `${axes.join('x')} readFitsHeader`);
  }
});

test('NAXIS = 4 with NAXIS4 = 1 is accepted as a cube', async () => {
  const file = await fileWith(imageFile(16, [4, 3, 2, 1]));
  const reader = await FitsReader.open(file);
  try {
    assert.equal(reader.layout.axes, [4, 3, 2, 1]);
    assert.is(reader.layout.width, 4);
    assert.is(reader.layout.height, 3);
    assert.is(reader.layout.planes, 2);
    const native = await reader.readNative();
    assert.instance(native, Int16Array);
    assert.is(native.length, 24);
    // dataBlocks fills byte i with i & 0xff: sample k is big-endian (2k, 2k + 1).
    for (let k = 0; k < 24; k++) assert.is(native[k], (2 * k) * 256 + 2 * k + 1);
    const band = await reader.readRows(1, 2, { planes: [1] });
    assert.equal(Array.from(band.data), Array.from(native.subarray(12 + 4, 12 + 12), Number));
  } finally {
    await reader.close();
  }
  // NAXIS = 5 with trailing axes of 1 too.
  const five = await fileWith(imageFile(8, [4, 3, 2, 1, 1]));
  const h = await readFitsHeader(five);
  assert.is(h.layout.planes, 2);
});

test('readRows outside the image -> FITS_ROW_RANGE', async () => {
  const file = await fileWith(imageFile(16, [4, 3, 2]));
  const reader = await FitsReader.open(file);
  try {
    const bad: [number, number, number[] | undefined][] = [
      [-1, 1, undefined],
      [0, 4, undefined],
      [2, 2, undefined],
      [3, 1, undefined],
      [0, -1, undefined],
      [0.5, 1, undefined],
      [0, 1.5, undefined],
      [Number.NaN, 1, undefined],
      [0, 1, [2]],
      [0, 1, [-1]],
      [0, 1, [0, 1.5]],
    ];
    for (const [y0, rows, planes] of bad) {
      const options = planes === undefined ? {} : { planes };
      await expectFitsError(() => reader.readRows(y0, rows, options), 'FITS_ROW_RANGE', file, `readRows(${y0}, ${rows}, ${JSON.stringify(planes)})`);
      await expectFitsError(() => reader.readRows(y0, rows, { ...options, dtype: 'float64' }), 'FITS_ROW_RANGE', file, `readRows(${y0}, ${rows}) float64`);
    }
    // Edges that are inside: the last row, and an empty band at the end.
    assert.is((await reader.readRows(2, 1)).data.length, 8);
    assert.is((await reader.readRows(3, 0)).data.length, 0);
  } finally {
    await reader.close();
  }
});

test('gzip-compressed FITS whose data is cut short: the header opens, pixel reads -> FITS_TRUNCATED_DATA', async () => {
  // A gzip stream's length is only known once inflated: a header scan does not inflate the data.
  const file = await fileWith(gzipSync(concat(headerBytes(primaryCards(16, [40, 300])), dataBlocks(100))), 'short-data.fits.gz');
  const reader = await FitsReader.open(file);
  try {
    assert.is(reader.layout.compression, 'gzip');
    assert.is((await reader.readRows(0, 1)).data.length, 40, 'rows the stream holds are read');
    await expectFitsError(() => reader.readRows(100, 5), 'FITS_TRUNCATED_DATA', file, 'readRows past the data');
    await expectFitsError(() => reader.readNative(), 'FITS_TRUNCATED_DATA', file, 'readNative');
  } finally {
    await reader.close();
  }
  // A gzip stream cut in the middle (not just short data): the inflate fails, same code.
  const cut = gzipSync(concat(headerBytes(primaryCards(16, [40, 30])), dataBlocks(2400, (i) => (i * 7919) & 0xff)));
  const cutFile = await fileWith(cut.subarray(0, cut.length - 200), 'cut-stream.fits.gz');
  await expectFitsError(() => readFitsImage(cutFile), 'FITS_TRUNCATED_DATA', cutFile, 'cut gzip stream');
});

test('file truncated after open -> FITS_TRUNCATED_DATA from the pixel reads', async () => {
  const file = await fileWith(imageFile(16, [40, 30]));
  const reader = await FitsReader.open(file);
  try {
    await truncate(file, BLOCK + 100);
    await expectFitsError(() => reader.readNative(), 'FITS_TRUNCATED_DATA', file, 'readNative after truncation');
    await expectFitsError(() => reader.readImage(), 'FITS_TRUNCATED_DATA', file, 'readImage after truncation');
    await expectFitsError(() => reader.readRows(10, 5), 'FITS_TRUNCATED_DATA', file, 'readRows after truncation');
    assert.is((await reader.readRows(0, 1)).data.length, 40, 'rows still on disk can be read');
  } finally {
    await reader.close();
  }
});

test('writeFits with inconsistent data -> FITS_BAD_IMAGE, nothing written', async () => {
  const out = join(dir, 'bad-image.fits');
  await expectFitsError(() => writeFits(out, { width: 4, height: 3, data: new Uint16Array(11) }), 'FITS_BAD_IMAGE', out, 'data too short');
  await expectFitsError(() => writeFits(out, { width: 4, height: 3, data: new Float32Array(13) }), 'FITS_BAD_IMAGE', out, 'data too long');
  await expectFitsError(() => writeFits(out, { width: 4, height: 3, planes: 2, data: new Float32Array(12) }), 'FITS_BAD_IMAGE', out, 'planes not matching');
  await expectFitsError(() => writeFits(out, { width: 0, height: 3, data: new Float32Array(0) }), 'FITS_BAD_IMAGE', out, 'zero width');
  await expectFitsError(() => writeFits(out, { width: 2.5, height: 2, data: new Float32Array(5) }), 'FITS_BAD_IMAGE', out, 'fractional width');
  await expectFitsError(() => writeFits(out, { width: 4, height: 3, planes: 0, data: new Float32Array(0) }), 'FITS_BAD_IMAGE', out, 'zero planes');
  assert.equal((await readdir(dir)).filter((n) => n.includes('bad-image')), [], 'no file and no temporary file');
});

test('writeFits into a nonexistent folder -> FITS_WRITE_FAILED, no temporary file left', async () => {
  const parent = join(dir, 'write-parent');
  await mkdir(parent);
  const out = join(parent, 'missing-folder', 'out.fits');
  await expectFitsError(() => writeFits(out, { width: 4, height: 3, data: new Uint16Array(12) }), 'FITS_WRITE_FAILED', out, 'nonexistent folder');
  assert.equal(await readdir(parent), [], 'nothing created next to the missing folder');
});

test('writeFits onto an existing directory (rename fails) -> FITS_WRITE_FAILED, temporary file removed', async () => {
  const parent = join(dir, 'rename-parent');
  const target = join(parent, 'taken.fits');
  await mkdir(target, { recursive: true });
  await writeFile(join(target, 'inside'), 'x'); // a non-empty directory cannot be replaced by a rename
  await expectFitsError(() => writeFits(target, { width: 4, height: 3, data: new Float32Array(12) }), 'FITS_WRITE_FAILED', target, 'target is a directory');
  assert.equal(await readdir(parent), ['taken.fits'], 'no temporary file left beside the target');
  assert.equal(await readdir(target), ['inside']);
});

test('no file handle leaks: 300 failed opens of each kind, then the files can be deleted', async () => {
  const kinds: [string, Uint8Array | string, FitsErrorCode][] = [
    ['leak-empty.fits', new Uint8Array(0), 'FITS_EMPTY'],
    ['leak-text.fits', 'hello\n', 'FITS_NOT_FITS'],
    ['leak-gzip.fits', gzipSync(Buffer.from('gzip of a text file\n')), 'FITS_NOT_FITS'],
    ['leak-noend.fits', headerBytes(primaryCards(16, [4, 3]), false), 'FITS_MISSING_END'],
    ['leak-badcard.fits', imageFile(16, [4, 3], [kv('OBSERVER', str('Ren\u00e9'))]), 'FITS_BAD_CARD'],
    ['leak-trunc.fits', headerBytes(primaryCards(16, [400, 300])), 'FITS_TRUNCATED_DATA'],
    ['leak-naxis.fits', imageFile(16, [4, 3, 2, 2]), 'FITS_UNSUPPORTED_NAXIS'],
    [
      'leak-fz.fits',
      concat(
        headerBytes([kv('SIMPLE', true), kv('BITPIX', 8), kv('NAXIS', 0)]),
        headerBytes([kv('XTENSION', str('BINTABLE')), kv('BITPIX', 8), kv('NAXIS', 2), kv('NAXIS1', 8), kv('NAXIS2', 1), kv('PCOUNT', 0), kv('GCOUNT', 1), kv('ZIMAGE', true), kv('ZCMPTYPE', str('HCOMPRESS_1'))]),
        dataBlocks(8),
      ),
      'FITS_COMPRESSION_UNSUPPORTED',
    ],
  ];
  const fdsBefore = openFds();
  for (const [name, bytes, code] of kinds) {
    const file = await fileWith(bytes, name);
    for (let i = 0; i < 300; i++) {
      try {
        await (i % 3 === 0 ? FitsReader.open(file) : i % 3 === 1 ? readFitsHeader(file) : readFitsImage(file));
        assert.unreachable(`${name}: opened`);
      } catch (e) {
        if (!(e instanceof FitsError) || e.code !== code) throw e;
      }
    }
    await unlink(file);
    assert.not.ok(existsSync(file));
  }
  // readRows failures on an open reader, and a readable file opened and closed many times.
  const good = await fileWith(imageFile(16, [4, 3]), 'leak-good.fits');
  for (let i = 0; i < 300; i++) {
    const r = await FitsReader.open(good);
    await r.readRows(5, 1).catch(() => undefined);
    await r.close();
    await readFitsImage(good);
  }
  await unlink(good);
  const fdsAfter = openFds();
  if (fdsBefore !== undefined && fdsAfter !== undefined) {
    assert.ok(fdsAfter <= fdsBefore + 2, `open file descriptors grew from ${fdsBefore} to ${fdsAfter}`);
  }
});

test.run();
