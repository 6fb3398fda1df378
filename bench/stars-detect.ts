// Star detection bench: times detectStars on calibrated frames (the bench dataset's, by default)
// with the options the pipeline's frame measurement uses, and checks results against a baseline.
//
//   node dist/bench/stars-detect.js [--reps N] [--scratch] [--dump FILE] [--compare FILE] [--against STARS_JS] [FITS…]
//
// Prints per frame: median wall ms and CPU ms of detectStars over the reps (after one warm-up),
// stage timings, star count, median FWHM and the frame metrics. --dump writes every frame's star
// list and metrics as JSON; --compare reads such a dump and reports, per frame, the rms position
// difference of matched stars, how many of the brightest 200 are the same stars (within 0.5 px)
// and the relative change of each frame metric. --against takes another build's compiled
// dist/src/algorithms/stars.js and times both, interleaved call by call (on a shared machine the
// only fair comparison), reporting CPU ms per call (min, quartile, median). --scratch lends every
// call one buffer for the significance image, as CALIBRATION's frame workers do (DetectOptions
// .scratch). No asserts: numbers go into bench/RESULTS.md.

import { readFile, writeFile } from 'node:fs/promises';
import { parseArgs } from 'node:util';
import { frameMetrics, type FrameMetrics } from '../src/algorithms/frame-metrics.js';
import { detectStars } from '../src/algorithms/stars.js';
import { keys } from '../src/fits/index.js';
import { readPlane } from '../src/pipeline/stages/frames/tasks.js';

const DEFAULT_DIR = '/tmp/prof/a/runs/run_20261121_141220/outputs/calibrated';
const DEFAULT_FILES = [1, 2, 3, 4].map((i) => `${DEFAULT_DIR}/cal_0000${i}.fit`);

interface FrameDump {
  file: string;
  stars: [number, number, number][];
  metrics: FrameMetrics;
}

const { values, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    reps: { type: 'string', default: '5' },
    dump: { type: 'string' },
    compare: { type: 'string' },
    cfa: { type: 'boolean', default: false },
    against: { type: 'string' },
    scratch: { type: 'boolean', default: false },
  },
});
const files = positionals.length > 0 ? positionals : DEFAULT_FILES;
const reps = Math.max(1, Number(values.reps));

const median = (a: number[]): number => {
  const s = [...a].sort((x, y) => x - y);
  return s.length % 2 ? s[s.length >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
};

const read = readPlane;

type Detect = typeof detectStars;
if (values.against) {
  const other = ((await import(values.against)) as { detectStars: Detect }).detectStars;
  const planes = await Promise.all(files.map(read));
  const cpuOf = (f: () => unknown): number => {
    const c0 = process.cpuUsage();
    f();
    const c = process.cpuUsage(c0);
    return (c.user + c.system) / 1000;
  };
  const times = { this: [] as number[], other: [] as number[] };
  // Two warm-up rounds (JIT), then alternate which build goes first.
  for (let r = 0; r < reps + 2; r++) {
    for (const p of planes) {
      const order: ['this' | 'other', Detect][] = r % 2 ? [['other', other], ['this', detectStars]] : [['this', detectStars], ['other', other]];
      for (const [name, f] of order) {
        const t = cpuOf(() => f(p.data, p.width, p.height, {}));
        if (r >= 2) times[name].push(t);
      }
    }
  }
  const stat = (a: number[]) => {
    const s = [...a].sort((x, y) => x - y);
    return `min ${s[0]!.toFixed(1)} q25 ${s[s.length >> 2]!.toFixed(1)} median ${s[s.length >> 1]!.toFixed(1)}`;
  };
  console.log(`CPU ms per frame over ${times.this.length} calls each: this build ${stat(times.this)} | ${values.against}: ${stat(times.other)}`);
  process.exit(0);
}

let lentBuffer = new Float32Array(0);
/** One buffer for every call (grown when a frame is larger). */
function lent(n: number): Float32Array {
  if (lentBuffer.length < n) lentBuffer = new Float32Array(n);
  return lentBuffer;
}

const baseline: FrameDump[] | null = values.compare ? (JSON.parse(await readFile(values.compare, 'utf8')) as FrameDump[]) : null;
const dumps: FrameDump[] = [];
const allWall: number[] = [];
const allCpu: number[] = [];
for (const file of files) {
  const plane = await read(file);
  const saturation = keys.saturationLevel(plane.header);
  const gain = keys.electronsPerAdu(plane.header);
  const opts = {
    cfa: values.cfa,
    ...(values.scratch ? { scratch: lent(plane.width * plane.height) } : {}),
    ...(saturation !== undefined && saturation > 0 ? { saturationLevel: saturation } : {}),
    ...(gain !== undefined && gain > 0 ? { gain } : {}),
  };
  const wall: number[] = [];
  const cpu: number[] = [];
  const stage = { background: Infinity, filter: Infinity, candidates: Infinity, measure: Infinity, fit: Infinity };
  let det = detectStars(plane.data, plane.width, plane.height, opts);
  for (let r = 0; r < reps; r++) {
    const c0 = process.cpuUsage();
    const t0 = performance.now();
    det = detectStars(plane.data, plane.width, plane.height, opts);
    wall.push(performance.now() - t0);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1000);
    if (det.ok) for (const k of Object.keys(stage) as (keyof typeof stage)[]) stage[k] = Math.min(stage[k], det.timings[k]);
  }
  if (!det.ok) {
    console.log(`${file}: detection failed (${det.code}) ${det.detail}`);
    continue;
  }
  allWall.push(median(wall));
  allCpu.push(median(cpu));
  const m = frameMetrics(det);
  const t = stage;
  const name = file.split('/').pop()!;
  console.log(
    `${name}: ${median(wall).toFixed(1)} ms wall, ${median(cpu).toFixed(1)} ms CPU, min ${Math.min(...wall).toFixed(1)} ms wall | stage minima: bg ${t.background.toFixed(1)} filter ${t.filter.toFixed(1)} cand ${t.candidates.toFixed(1)} measure ${t.measure.toFixed(1)} fit ${t.fit.toFixed(1)} | ` +
      `${det.stars.length} stars, fitted ${det.counts.fitted}, fwhm ${m.fwhm.toFixed(3)}`,
  );
  console.log(`  metrics: ${JSON.stringify(m)}`);
  const dump: FrameDump = { file, stars: det.stars.map((s) => [s.x, s.y, s.flux]), metrics: m };
  dumps.push(dump);
  const base = baseline?.find((b) => b.file === file);
  if (base) compare(base, dump);
}
console.log(`median over frames: ${median(allWall).toFixed(1)} ms wall, ${median(allCpu).toFixed(1)} ms CPU per frame (${reps} reps each)`);
if (values.dump) await writeFile(values.dump, JSON.stringify(dumps));

/** Position rms over stars matched within 0.5 px, top-200 overlap, relative metric changes. */
function compare(base: FrameDump, now: FrameDump): void {
  const cell = 4;
  const grid = new Map<number, number[]>();
  const key = (x: number, y: number) => Math.floor(y / cell) * 100000 + Math.floor(x / cell);
  now.stars.forEach(([x, y], i) => {
    const k = key(x, y);
    (grid.get(k) ?? grid.set(k, []).get(k)!).push(i);
  });
  const nearest = (x: number, y: number): number => {
    let best = -1;
    let bd = 0.25;
    for (let dy = -1; dy <= 1; dy++) {
      for (let dx = -1; dx <= 1; dx++) {
        for (const i of grid.get(key(x + dx * cell, y + dy * cell)) ?? []) {
          const s = now.stars[i]!;
          const d = (s[0] - x) ** 2 + (s[1] - y) ** 2;
          if (d < bd) {
            bd = d;
            best = i;
          }
        }
      }
    }
    return best;
  };
  let sq = 0;
  let n = 0;
  let maxD = 0;
  let top = 0;
  let topSameRank = 0;
  for (let i = 0; i < base.stars.length; i++) {
    const [x, y] = base.stars[i]!;
    const j = nearest(x, y);
    if (j < 0) continue;
    const d2 = (now.stars[j]![0] - x) ** 2 + (now.stars[j]![1] - y) ** 2;
    sq += d2;
    n++;
    maxD = Math.max(maxD, Math.sqrt(d2));
    if (i < 200 && j < 200) top++;
    if (i < 200 && j === i) topSameRank++;
  }
  const rel = (k: keyof FrameMetrics) => {
    const a = base.metrics[k] as number;
    const b = now.metrics[k] as number;
    return `${k} ${(((b - a) / a) * 100).toFixed(3)}%`;
  };
  console.log(
    `  vs baseline: ${base.stars.length} → ${now.stars.length} stars, matched ${n}, rms ${Math.sqrt(sq / Math.max(1, n)).toExponential(2)} px, max ${maxD.toExponential(2)} px, ` +
      `top-200 shared ${top}, same rank ${topSameRank} | ` +
      (['star_count', 'fwhm', 'fwhm_x', 'fwhm_y', 'eccentricity', 'background_median', 'background_rms', 'snr_estimate', 'median_star_flux'] as const).map(rel).join(', '),
  );
}
