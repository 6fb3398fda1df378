// Band I/O of master combining: readBandInto must give exactly what FitsReader.readRows plus the
// old separate f32 subtraction gave (uint16 fast path and the generic decode), count the NaN
// samples it wrote (odd sample counts included: the uint16 path flips sign bits two at a time),
// and stripLevel must read the same strips as a file-based level.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { truncate } from 'node:fs/promises';
import { join } from 'node:path';
import { medianInPlace } from '../../src/algorithms/robust-stats.js';
import { FitsReader, writeFits, type PixelArray } from '../../src/fits/index.js';
import { hasNaN, levelStrips, readBandInto, stripLevel } from '../../src/pipeline/stages/calibration/bands.js';
import { seededRandom, withTempDir } from '../helpers/tmp.js';

const W = 37;
const H = 23;

function offsetMaster(seed: number, withNaN: boolean): Float32Array {
  const rnd = seededRandom(seed);
  const a = new Float32Array(W * H);
  for (let i = 0; i < a.length; i++) a[i] = 500 + 40 * rnd() + 0.37;
  if (withNaN) a[5 * W + 3] = NaN;
  return a;
}

async function expected(file: string, y0: number, rows: number, sub: Float32Array | null): Promise<Float32Array> {
  const r = await FitsReader.open(file);
  try {
    const band = (await r.readRows(y0, rows, { planes: [0] })).data;
    const out = Float32Array.from(band);
    if (sub) for (let i = 0; i < out.length; i++) out[i]! -= sub[y0 * W + i]!;
    return out;
  } finally {
    await r.close();
  }
}

function sameBits(a: Float32Array, b: Float32Array, label: string): void {
  assert.is(a.length, b.length, `${label}: length`);
  for (let i = 0; i < a.length; i++) {
    if (Object.is(a[i], b[i])) continue;
    assert.unreachable(`${label}: sample ${i} is ${a[i]}, expected ${b[i]}`);
  }
}

const kinds: [string, (rnd: () => number) => PixelArray][] = [
  ['uint16', (rnd) => Uint16Array.from({ length: W * H }, () => Math.floor(65536 * rnd()))],
  ['int16', (rnd) => Int16Array.from({ length: W * H }, () => Math.floor(65536 * rnd()) - 32768)],
  [
    'float32',
    (rnd) => {
      const a = Float32Array.from({ length: W * H }, () => 1000 * rnd() - 100);
      a[7] = NaN;
      a[W * 10 + 1] = NaN;
      return a;
    },
  ],
];

for (const [kind, make] of kinds) {
  test(`readBandInto ${kind}: bit-identical to readRows (- offset), NaN samples counted`, async () => {
    await withTempDir('cal-bands', async (dir) => {
      const file = join(dir, `${kind}.fits`);
      await writeFits(file, { width: W, height: H, data: make(seededRandom(kind.length)) });
      const reader = await FitsReader.open(file);
      const raw = { bytes: new Uint8Array(0) };
      try {
        for (const sub of [null, offsetMaster(3, false), offsetMaster(4, true)]) {
          for (const [y0, rows] of [
            [0, H],
            [4, 6],
            [H - 3, 3],
          ] as const) {
            const out = new Float32Array(5 + rows * W).fill(-1);
            const nan = await readBandInto(reader, y0, rows, out, 5, sub, raw);
            const want = await expected(file, y0, rows, sub);
            sameBits(out.subarray(5), want, `${kind} rows ${y0}+${rows} ${sub ? 'minus offset' : 'plain'}`);
            assert.is(out[4], -1, 'nothing written before `at`');
            assert.is(nan, want.filter((v) => v !== v).length, 'NaN count');
            if (sub && !hasNaN(sub)) {
              // The caller's promise that the offset has no NaN: same values, nothing counted.
              const fast = new Float32Array(5 + rows * W);
              assert.is(await readBandInto(reader, y0, rows, fast, 5, sub, raw, false), nan);
              sameBits(fast.subarray(5), want, `${kind} rows ${y0}+${rows} offset without NaN`);
            }
          }
        }
      } finally {
        await reader.close();
      }
    });
  });
}

test('readBandInto: a truncated file is a FITS_TRUNCATED_DATA error', async () => {
  await withTempDir('cal-bands', async (dir) => {
    const file = join(dir, 'a.fits');
    await writeFits(file, { width: W, height: H, data: new Uint16Array(W * H) });
    const reader = await FitsReader.open(file);
    try {
      // A file cut short after its header was read: the last rows are gone.
      await truncate(file, 2880 + 2 * W * 5);
      const err = await readBandInto(reader, 10, 5, new Float32Array(5 * W), 0, null, { bytes: new Uint8Array(0) }).catch((e: Error) => e);
      assert.instance(err, Error);
      assert.match(String((err as Error).message), /FITS_TRUNCATED_DATA/);
    } finally {
      await reader.close();
    }
  });
});

test('stripLevel: the median of the level strips of decoded data (finite samples only)', () => {
  for (const h of [1, 2, 3, 16, 23, 1536]) {
    const strips = levelStrips(h);
    assert.ok(strips.length >= 1 && strips.length <= 8, `h=${h}: ${strips.length} strips`);
    for (const s of strips) assert.ok(s.y0 >= 0 && s.y0 + s.rows <= h && s.rows >= 1, `h=${h}: strip ${JSON.stringify(s)}`);
  }
  const rnd = seededRandom(9);
  const data = new Float32Array(3 + W * H);
  for (let i = 0; i < data.length; i++) data[i] = 100 * rnd();
  data[3 + levelStrips(H)[0]!.y0 * W] = NaN;
  const values: number[] = [];
  for (const s of levelStrips(H)) for (let i = s.y0 * W; i < (s.y0 + s.rows) * W; i++) if (Number.isFinite(data[3 + i]!)) values.push(data[3 + i]!);
  assert.is(stripLevel(data, 3, W, H), medianInPlace(Float32Array.from(values)));
});

test.run();
