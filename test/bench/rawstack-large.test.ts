// The large Raw Stack benches' plumbing without Siril or large data: the Siril scripts' text,
// the scale and versus-Siril verdicts on given numbers, and --size / --frames parsing.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseScaleArgs } from '../../bench/rawstack-large.js';
import { scaleVerdict, versusSiril } from '../../bench/scale-verdict.js';
import { parseSteps, SIRIL_SCRIPT, sirilScript } from '../../bench/siril.js';

test('Siril scripts: OSC calibrates as CFA, equalizes and debayers; mono unchanged', () => {
  const osc = sirilScript('osc').split('\n');
  const mono = sirilScript('mono').split('\n');
  assert.is(SIRIL_SCRIPT, sirilScript('mono'));
  assert.ok(osc.includes('preprocess light -dark=dark_stacked -flat=pp_flat_stacked -cfa -equalize_cfa -debayer'));
  assert.ok(mono.includes('preprocess light -dark=dark_stacked -flat=pp_flat_stacked'));
  assert.not.ok(mono.some((l) => l.includes('-cfa') || l.includes('-debayer')));
  for (const s of [osc, mono]) {
    assert.is(s[0], 'requires 1.0.0');
    assert.ok(s.includes('register pp_light'));
    assert.ok(s.includes('stack r_pp_light rej 3 3 -norm=addscale -out=../result'));
    assert.ok(s.includes('stack pp_flat rej 3 3 -norm=mul'));
  }
  // Only the lights' preprocess line differs.
  assert.equal(osc.filter((l, i) => l !== mono[i]), ['preprocess light -dark=dark_stacked -flat=pp_flat_stacked -cfa -equalize_cfa -debayer']);
});

test('Siril step times: ms, s, and minutes past a minute', () => {
  const log = ['log: Running command: stack', 'log: Execution time: 18.73 s', 'log: Running command: preprocess', 'log: Execution time: 850.50 ms', 'log: Running command: register', 'log: Execution time: 2 min 05 s', 'log: Running command: stack', 'log: Execution time: 1 h 02 min 03.5 s'].join('\n');
  assert.equal(parseSteps(log), [
    { command: 'stack', ms: 18730 },
    { command: 'preprocess', ms: 850.5 },
    { command: 'register', ms: 125_000 },
    { command: 'stack', ms: 3_723_500 },
  ]);
});

test('scale verdict: fixed cost plus a constant per frame is linear, flat memory met', () => {
  // 5 s fixed + 300 ms wall / 150 ms CPU per frame.
  const pts = [30, 120, 1000].map((n) => ({ frames: n, wall_ms: 5000 + 300 * n, cpu_ms: 2000 + 150 * n, max_rss_mib: n === 1000 ? 560 : 500 }));
  const v = scaleVerdict([pts[2]!, pts[0]!, pts[1]!]); // any order
  assert.ok(Math.abs(v.wallSlopeRatio - 1) < 1e-12);
  assert.ok(Math.abs(v.cpuSlopeRatio - 1) < 1e-12);
  assert.ok(v.wallLinear && v.cpuLinear);
  assert.ok(Math.abs(v.rssRatio - 1.12) < 1e-12);
  assert.ok(v.rssMet);
  assert.match(v.text, /Peak RSS 1000 \/ 30 frames: \*\*1\.120\*\* \(bar ≤ 1\.15: met\)/);
  assert.match(v.text, /30: 467 ms wall \/ 217 ms CPU, 120: 342 ms wall \/ 167 ms CPU, 1000: 305 ms wall \/ 152 ms CPU/);
  assert.match(v.text, /wall: 30→120 300, 120→1000 300; CPU: 30→120 150, 120→1000 150/);
});

test('scale verdict: a per-frame cost that grows, or memory that grows, is NOT met', () => {
  // Quadratic term: 0.2 ms per frame squared.
  const pts = [30, 120, 1000].map((n) => ({ frames: n, wall_ms: 300 * n + 0.2 * n * n, cpu_ms: 150 * n, max_rss_mib: 500 + n * 0.1 }));
  const v = scaleVerdict(pts);
  // (300 + 0.2·1120) / (300 + 0.2·150) = 524 / 330
  assert.ok(Math.abs(v.wallSlopeRatio - 524 / 330) < 1e-9);
  assert.not.ok(v.wallLinear);
  assert.ok(v.cpuLinear);
  assert.ok(Math.abs(v.rssRatio - 600 / 503) < 1e-12);
  assert.not.ok(v.rssMet);
  assert.match(v.text, /wall \*\*1\.59\*\* \(NOT met\), CPU \*\*1\.00\*\* \(met\)/);
  // Much cheaper per frame at scale is also not linear (two-sided bar).
  const sub = scaleVerdict([30, 120, 1000].map((n) => ({ frames: n, wall_ms: n < 200 ? 300 * n : 36000 + 100 * (n - 120), cpu_ms: 150 * n, max_rss_mib: 500 })));
  assert.ok(Math.abs(sub.wallSlopeRatio - 1 / 3) < 1e-12);
  assert.not.ok(sub.wallLinear);
  assert.throws(() => scaleVerdict(pts.slice(0, 2)), /three runs/);
  assert.throws(() => scaleVerdict([pts[0]!, pts[0]!, pts[1]!]), /distinct/);
});

test('versus Siril: ratios and the 0.7 target', () => {
  const r = versusSiril({ wall_ms: 60_100, cpu_ms: 90_000, max_rss_mib: 1230 }, { wall_ms: 87_100, cpu_ms: 100_000, max_rss_mib: 1812 });
  assert.ok(Math.abs(r.wall - 60.1 / 87.1) < 1e-12);
  assert.ok(Math.abs(r.cpu! - 0.9) < 1e-12);
  assert.ok(Math.abs(r.rss - 1230 / 1812) < 1e-12);
  assert.match(r.text, /\| defaults \| \*\*0\.69×\*\* \| 0\.90× \| \*\*0\.68×\*\* \|/);
  assert.match(r.text, /wall met, memory met/);
  const slow = versusSiril({ wall_ms: 80, cpu_ms: null, max_rss_mib: 60 }, { wall_ms: 100, cpu_ms: null, max_rss_mib: 100 });
  assert.is(slow.cpu, null);
  assert.match(slow.text, /wall NOT met, memory met/);
});

test('scale options: defaults, quick, --size and --frames', () => {
  assert.equal(parseScaleArgs(undefined, undefined, false), { width: 2048, height: 1536, counts: [30, 120, 1000] });
  assert.equal(parseScaleArgs(undefined, undefined, true), { width: 1024, height: 768, counts: [10, 20, 60] });
  assert.equal(parseScaleArgs('1024x768', '30,120,1000', false), { width: 1024, height: 768, counts: [30, 120, 1000] });
  assert.type(parseScaleArgs('1024', undefined, false), 'string');
  assert.type(parseScaleArgs('32x32', undefined, false), 'string');
  assert.type(parseScaleArgs(undefined, '30,120', false), 'string');
  assert.type(parseScaleArgs(undefined, '120,30,1000', false), 'string');
  assert.type(parseScaleArgs(undefined, '30,30.5,1000', false), 'string');
});

test.run();
