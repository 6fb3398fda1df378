// The tiled-quality bench's front end, without runs: bad arguments exit 2 with the reason, and
// a saved result (--from-json) renders its region table, ratios and verdicts (a region softer
// than Raw Stack's quality weights is a miss, the control's aims hold).
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { spawnSync } from 'node:child_process';
import { writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pairedRatio } from '../../bench/quality/measure.js';
import { withTempDir } from '../helpers/tmp.js';

const script = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'bench', 'tiled-quality.js');
const run = (args: string[]) => spawnSync(process.execPath, [script, ...args], { encoding: 'utf8' });

test('bad arguments: exit 2 with the reason, nothing generated', () => {
  for (const [args, why] of [
    [['--frames', '3'], /--frames takes a count of at least 8/],
    [['--size', '10x10'], /--size takes WxH of at least 256x192/],
    [['--scenarios', 'fog'], /unknown scenario fog/],
  ] as const) {
    const r = run([...args]);
    assert.is(r.status, 2, r.stderr);
    assert.match(r.stderr, why);
  }
});

test('--from-json: the region table with c/a, c/b and the verdicts of a saved result', () =>
  withTempDir('tiled-bench-json', async (dir) => {
    const region = (name: string, a: number, b: number, c: number, span: number) => ({ name, span, bound: 0.9, stars: 10, fwhm: { 'raw-uniform': a, 'raw-quality': b, tiled: c }, cOverA: c / a, cOverB: c / b, bOverA: b / a, verdict: c / a <= 0.9 ? 'pass' : '**miss**' });
    const timing = (variant: string, wall: number) => ({ variant, wall_ms: wall, cpu_ms: wall, rss_mib: 400, load: [1, 1] });
    const saved = [
      {
        scenario: 'swap-halves',
        references: { 'raw-uniform': 'l1.fits', 'raw-quality': 'l1.fits', tiled: 'l1.fits' },
        regions: [region('top-left', 2.5, 2.4, 2.2, 1.4), region('top-centre', 2.5, 2.4, 2.45, 1.0)],
        noise: { 'raw-uniform': 10, 'raw-quality': 10.2, tiled: 11 },
        flux: { outsideCloud: { ratio: 1.002, stars: 40 } },
        timings: [timing('raw-uniform', 1000), timing('raw-quality', 1000), timing('tiled', 1300)],
        wall: { raw: 1000, tiled: 1300, ratio: 1.3 },
        rss: { raw: 400, tiled: 400, ratio: 1 },
        device: 'cpu',
        misses: ['top-centre: c/b ≤ 1 (c/a 0.980, c/b 1.021)'],
      },
    ];
    const file = join(dir, 'saved.json');
    await writeFile(file, JSON.stringify(saved));
    const r = run(['--from-json', file]);
    assert.is(r.status, 0, r.stderr);
    assert.match(r.stdout, /\| top-left \| 1\.40 \| 0\.900 \| 10 \| 2\.500 \| 2\.400 \| 2\.200 \| 0\.880 \| 0\.917 \| – \| 0\.960 \| pass \|/, 'a saved result without paired ratios shows –');
    assert.match(r.stdout, /Background noise \(a\) 10\.000, \(b\) 10\.200, \(c\) 11\.000 ADU: c\/a 1\.100/);
    assert.match(r.stdout, /Best tiled vs best \(b\): wall 1\.300×, CPU 1\.300×, peak RSS 1\.000×/);
    assert.match(r.stdout, /Misses: top-centre: c\/b ≤ 1/);
  }),
);

test('pairedRatio: the per-star median ratio, a bootstrap error that shrinks with agreement, stars without both values left out', () => {
  const ids = Array.from({ length: 40 }, (_, i) => i);
  const b = new Map(ids.map((i) => [i, 2 + 0.3 * Math.sin(i)] as const));
  // c = b × (1.01 ± 0.5 %): the paired ratio sees the 1 % though the stars' FWHMs spread by 15 %.
  const c = new Map(ids.map((i) => [i, b.get(i)! * (1.01 + 0.005 * Math.cos(3 * i))] as const));
  c.set(99, 5);
  const p = pairedRatio(c, b, [...ids, 99]);
  assert.is(p.stars, 40);
  assert.ok(Math.abs(p.ratio - 1.01) < 0.003, String(p.ratio));
  assert.ok(p.se > 0 && p.se < 0.002, String(p.se));
  assert.ok(p.ratio - 2 * p.se > 1, 'a 1 % softer stack is found softer');
  // The same ratios with 5 % scatter: a larger error, and 1 % no longer stands out.
  const noisy = new Map(ids.map((i) => [i, b.get(i)! * (1.01 + 0.05 * Math.cos(3 * i))] as const));
  const q = pairedRatio(noisy, b, ids);
  assert.ok(q.se > 3 * p.se, `${q.se} vs ${p.se}`);
  assert.ok(q.ratio - 2 * q.se <= 1);
  assert.equal(pairedRatio(c, b, ids), p, 'seeded: the same error every time');
  assert.is(pairedRatio(c, new Map(), ids).stars, 0);
});

test.run();
