// Stacking under real skies (issue 18): does local normalization keep rejection from throwing
// away good data where gradients differ, and does the noise-model rejection keep the sharp
// frames' star cores where seeing varies, while satellites, cosmic rays and hot pixels still go?
//   node dist/bench/stacking-quality.js [--kinds mono,osc] [--frames 120] [--size 1024x768]
//        [--seed 5] [--data DIR] [--runs DIR] [--json FILE] [--record] [--no-pipeline]
//        [--ln-scale none|plane] [--seeing-tolerance A]
// Per kind: a real-sky session (fixtures realSkyOptions), Raw Stack through FRAME_FILTERING
// (calibrated, registered, normalised, weighted frames), STACKING replays with rejection none
// and sigma (today's engine, for reference), then the bench's own re-stacks of the same frames
// (bench/quality: warp as STACKING does, then LN off/on × rejection none / today / noise model)
// measured against the truth (bench/quality/measure.ts): FWHM per region relative to no
// rejection, background noise relative to no rejection (field and corners), photometric
// scatter, trail and cosmic-ray residuals. OSC is measured on its G plane. --record appends
// the tables to bench/RESULTS.md.

import { appendFile, mkdir, writeFile } from 'node:fs/promises';
import { cpus, totalmem, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { composeGlobal, fillGridRows, fitLocalNormalization, fitReferenceBackground, type LnModel } from '../src/algorithms/local-normalization.js';
import { lnApply, packLnCoefficients } from '../src/cpu/ln-apply.js';
import { DEFAULT_SEEING_TOLERANCE, seeingTolerances } from '../src/cpu/reject-noise.js';
import { buildCubes, type Cubes } from './quality/cube.js';
import { combine, REJECTIONS, type ChannelInput, type Combined, type Rejection } from './quality/combine.js';
import { backgroundNoise, cosmicInReference, cosmicResidual, excludeNearDefects, median, photometricScatter, referenceStars, regions, skyMask, starFlux, starFwhm, trailResidual, trailsInReference, type RefStar } from './quality/measure.js';

import { capture, ensureSession, includedFrames, replayStacking, type SessionSpec } from './quality/session.js';
import type { Truth } from '../fixtures/generator/index.js';

const here = dirname(fileURLToPath(import.meta.url));
const resultsFile = join(here, '..', '..', 'bench', 'RESULTS.md');

const { values } = parseArgs({
  options: {
    kinds: { type: 'string', default: 'mono,osc' },
    frames: { type: 'string', default: '120' },
    size: { type: 'string', default: '1024x768' },
    seed: { type: 'string', default: '5' },
    data: { type: 'string', default: join(tmpdir(), 'skystack-bench-quality') },
    runs: { type: 'string' },
    json: { type: 'string' },
    record: { type: 'boolean', default: false },
    'no-pipeline': { type: 'boolean', default: false },
    'ln-scale': { type: 'string', default: 'none' },
    'seeing-tolerance': { type: 'string', default: String(DEFAULT_SEEING_TOLERANCE) },
  },
});
const [W, H] = values.size!.split('x').map(Number) as [number, number];
const log = (s: string) => console.error(s);
const REJECTION = { low: 3, high: 3, maxIters: 3, minFraction: 0.4 };

interface Row {
  label: string;
  ln: boolean;
  rejection: Rejection | 'pipeline-none' | 'pipeline-sigma';
  fwhm: Record<string, { median: number; ratio: number; stars: number }>;
  noise: { all: number; corners: number; ratioAll: number; ratioCorners: number };
  photometry: { scatter: number; ratio: number; stars: number };
  trail: { worst: number; mean: number; points: number };
  cosmic: { mean: number; hits: number };
  masked: number;
  rejected: number;
  ms: number;
}

interface KindResult {
  spec: SessionSpec;
  frames: number;
  rows: Row[];
  timings: Record<string, number>;
}

/** Raw measures of one stack (no ratios). */
interface Measures {
  fwhm: Map<number, number>;
  flux: Map<number, number>;
  noise: { all: number; corners: number };
  scatter: { scatter: number; n: number };
  img: Float32Array;
}

function measures(img: Float32Array, ctx: MeasureContext): Measures {
  const flux = starFlux(img, W, H, ctx.stars);
  return { fwhm: starFwhm(img, W, H, ctx.stars), flux, noise: backgroundNoise(img, W, H, ctx.sky), scatter: photometricScatter(flux, ctx.stars), img };
}

/** A table row: `m` against the base stack `b` (FWHM per star, noise, scatter as ratios). */
function row(label: string, ln: boolean, rejection: Row['rejection'], m: Measures, b: Measures, ctx: MeasureContext, extra: { masked: number; rejected: number; ms: number }): Row {
  const perRegion: Row['fwhm'] = {};
  for (const r of ctx.regionList) {
    const inR = ctx.stars.filter((s) => s.usable && r.contains(s.x, s.y));
    const vals = inR.map((s) => m.fwhm.get(s.id)!).filter((v) => v > 0);
    const ratios = inR.map((s) => m.fwhm.get(s.id)! / b.fwhm.get(s.id)!).filter((v) => v > 0 && Number.isFinite(v));
    perRegion[r.name] = { median: median(vals), ratio: median(ratios), stars: vals.length };
  }
  // Residuals in units of the no-rejection stack's background σ (the same yardstick for all rows).
  const sigma = b.noise.all;
  return {
    label,
    ln,
    rejection,
    fwhm: perRegion,
    noise: { ...m.noise, ratioAll: m.noise.all / b.noise.all, ratioCorners: m.noise.corners / b.noise.corners },
    photometry: { scatter: m.scatter.scatter, ratio: m.scatter.scatter / b.scatter.scatter, stars: m.scatter.n },
    trail: trailResidual(m.img, W, H, ctx.trails, ctx.starsOnly, sigma),
    cosmic: cosmicResidual(m.img, W, H, ctx.truth, ctx.refIndex, ctx.frameIdx, ctx.starsOnly, sigma),
    ...extra,
  };
}

interface MeasureContext {
  truth: Truth;
  refIndex: number;
  frameIdx: number[];
  stars: RefStar[];
  regionList: ReturnType<typeof regions>;
  trails: [number, number, number, number][];
  sky: Uint8Array;
  starsOnly: Uint8Array;
}

async function runKind(kind: 'mono' | 'osc'): Promise<KindResult> {
  const spec: SessionSpec = { kind, frames: Number(values.frames), width: W, height: H, seed: Number(values.seed) };
  const { dir, truth } = await ensureSession(values.data!, spec, log);
  const runsDir = values.runs ?? join(values.data!, 'runs');
  await mkdir(runsDir, { recursive: true });
  log(`[quality] ${kind}: Raw Stack through FRAME_FILTERING`);
  const cap = await capture(dir, runsDir);
  const timings: Record<string, number> = { capture: cap.ms };
  const frames = includedFrames(cap.state, truth);
  log(`[quality] ${kind}: ${frames.length} of ${truth.frames.length} frames included`);
  const channel = kind === 'osc' ? 1 : 0;
  const channelName = kind === 'osc' ? 'g' : 'l';

  const pipeline: { rejection: Row['rejection']; plane: Float32Array; ms: number }[] = [];
  if (!values['no-pipeline']) {
    for (const method of ['none', 'sigma'] as const) {
      log(`[quality] ${kind}: STACKING replay, rejection ${method}`);
      const r = await replayStacking(dir, runsDir, cap.state, { rejection: { method } });
      pipeline.push({ rejection: method === 'none' ? 'pipeline-none' : 'pipeline-sigma', plane: r.planes[channel]!, ms: r.ms });
      timings[`stacking_${method}`] = r.ms;
    }
  }

  const cubes: Cubes = await buildCubes(cap.state, frames, channel, log);
  timings.read_warp = cubes.ms.read_warp;
  timings.bin = cubes.ms.bin;
  const refSlot = cubes.frames.findIndex((f) => f.isReference);
  const refIndex = cubes.frames[refSlot]!.truthIndex;
  const frameIdx = cubes.frames.map((f) => f.truthIndex);
  const N = cubes.frames.length;
  // Stars bright enough for a Moffat fit in the stack: 4000 e- per light in L, 1500 e- in an
  // OSC's G (a narrower band: the same stars deliver ~3× fewer electrons).
  const stars = referenceStars(truth, refIndex, channelName, W, H, kind === 'osc' ? 1500 : 4000);
  const trails = trailsInReference(truth, refIndex, frameIdx);
  excludeNearDefects(stars, cosmicInReference(truth, refIndex, frameIdx), trails, 16, 20);

  // Inputs common to the LN-off and LN-on stacks.
  const gain = truth.sensor.gain_e_per_adu;
  const fwhms = cubes.frames.map((f) => f.fwhm);
  const seeing = seeingTolerances(fwhms, REJECTION.high, Number(values['seeing-tolerance']));
  const refBinned = cubes.binned[0]![refSlot]!;
  const t0 = performance.now();
  const refBg = fitReferenceBackground(refBinned);
  const background = fillGridRows(refBg.grid, refBg.values, 0, H, new Float32Array(W * H));
  timings.reference_background = performance.now() - t0;
  const info = cubes.frames;
  const input = (ln: boolean): ChannelInput => ({
    width: W,
    height: H,
    frames: N,
    cube: cubes.data[0]!,
    scale: info.map((f) => (ln ? 1 : f.scale[0]!)),
    offset: info.map((f) => (ln ? 0 : f.offset[0]!)),
    weight: info.map((f) => f.weight),
    noise: info.map((f) => f.noise[0]! * f.scale[0]!),
    poisson: info.map((f) => f.scale[0]! / gain),
    seeing,
    level: info[refSlot]!.location[0]!,
    background,
  });

  const rows: Row[] = [];
  let ctx: MeasureContext | null = null;
  let offNone: Measures | null = null;
  const measureStacks = (ln: boolean, stacks: Map<Rejection, Combined>) => {
    const none = stacks.get('none')!;
    if (!ctx) {
      const minCount = Math.ceil(0.8 * N);
      ctx = { truth, refIndex, frameIdx, stars, regionList: regions(truth, W), trails, sky: skyMask(W, H, stars, trails, none.count, minCount), starsOnly: skyMask(W, H, stars, [], none.count, minCount) };
    }
    const c = ctx;
    const base = measures(none.mean, c);
    const extra = (k: Rejection) => ({ masked: stacks.get(k)!.masked, rejected: stacks.get(k)!.rejected, ms: stacks.get(k)!.ms });
    if (!ln) {
      offNone = base;
      rows.push(row('none', false, 'none', base, base, c, extra('none')));
      // The pipeline's own STACKING (today's engine), against the bench's LN-off none stack.
      for (const p of pipeline) rows.push(row(`pipeline STACKING ${p.rejection === 'pipeline-none' ? 'none' : 'sigma'}`, false, p.rejection, measures(p.plane, c), base, c, { masked: 0, rejected: 0, ms: p.ms }));
    } else {
      // LN's own effect on the no-rejection stack, against the LN-off one.
      rows.push(row('none + LN (vs none)', true, 'none', base, offNone!, c, extra('none')));
    }
    for (const k of REJECTIONS) {
      if (k === 'none') continue;
      rows.push(row(`${k === 'today' ? 'pre-mask + sigma (today)' : 'noise model (new)'}${ln ? ' + LN' : ''}`, ln, k, measures(stacks.get(k)!.mean, c), base, c, extra(k)));
    }
  };

  log(`[quality] ${kind}: re-stacking without LN`);
  measureStacks(false, combine(input(false), REJECTIONS, REJECTION));

  log(`[quality] ${kind}: fitting and applying LN`);
  const t1 = performance.now();
  const models: LnModel[] = info.map((f, k) => composeGlobal(fitLocalNormalization(refBinned, cubes.binned[0]![k]!, { scale: values['ln-scale'] as 'none' | 'plane' }), f.scale[0]!, f.offset[0]!));
  timings.ln_fit = performance.now() - t1;
  const t2 = performance.now();
  const { grid, coefficients } = packLnCoefficients(models);
  lnApply(cubes.data[0]!, { width: W, rows: H, frames: N, y0: 0, grid, coefficients });
  timings.ln_apply = performance.now() - t2;
  const fits = models.map((m) => m.fit);
  log(`[quality] ${kind}: LN fits ok ${fits.filter((f) => f.ok).length}/${N}, offset range median ${median(fits.map((f) => f.offset_range)).toFixed(1)}, scale ${values['ln-scale']} (stars median ${median(fits.map((f) => f.scale_stars))}, |tilt| median ${median(fits.map((f) => Math.hypot(f.tilt_x, f.tilt_y))).toFixed(4)})`);
  measureStacks(true, combine(input(true), REJECTIONS, REJECTION));
  timings.grid_nodes = grid.nx * grid.ny;
  return { spec, frames: N, rows, timings };
}

function fmt(v: number, d = 3): string {
  return Number.isFinite(v) ? v.toFixed(d) : '–';
}

function table(r: KindResult): string {
  const regionNames = Object.keys(r.rows[0]!.fwhm);
  const head = `| stack | ${regionNames.map((n) => `FWHM ${n}`).join(' | ')} | noise (corners) | phot. scatter mag | trail residual σ (worst) | CR residual σ | masked + rejected |`;
  const sep = `|${'---|'.repeat(regionNames.length + 6)}`;
  const lines = r.rows.map((row) => {
    const f = regionNames.map((n) => `${fmt(row.fwhm[n]!.median, 2)} (${fmt(row.fwhm[n]!.ratio, 3)}×)`).join(' | ');
    return `| ${row.label} | ${f} | ${fmt(row.noise.all, 2)} (${fmt(row.noise.ratioAll, 3)}×), corners ${fmt(row.noise.corners, 2)} (${fmt(row.noise.ratioCorners, 3)}×) | ${fmt(row.photometry.scatter, 4)} (${fmt(row.photometry.ratio, 2)}×, ${row.photometry.stars} stars) | ${fmt(row.trail.mean, 2)} (${fmt(row.trail.worst, 2)}) | ${fmt(row.cosmic.mean, 2)} | ${row.masked} + ${row.rejected} |`;
  });
  return [head, sep, ...lines].join('\n');
}

const results: KindResult[] = [];
for (const kind of values.kinds!.split(',') as ('mono' | 'osc')[]) results.push(await runKind(kind));

const now = new Date().toISOString().slice(0, 10);
const machine = `${cpus()[0]?.model ?? 'cpu'}, ${cpus().length} cores, ${Math.round(totalmem() / 2 ** 30)} GiB, node ${process.version}, no GPU (TypeScript paths)`;
let md = `\n## ${now} — stacking quality under real skies (issue 18; \`node dist/bench/stacking-quality.js\`), ${machine}\n`;
for (const r of results) {
  md += `\n${r.spec.kind} ${r.spec.frames} frames ${r.spec.width}×${r.spec.height}, seed ${r.spec.seed} (realSkyOptions), ${r.frames} frames stacked${r.spec.kind === 'osc' ? ', measured on G' : ''}. Ratios: against the none stack of the same LN setting (FWHM per star, then the median).\n\n${table(r)}\n\nTimings (ms, TypeScript, one thread): ${Object.entries(r.timings)
    .map(([k, v]) => `${k} ${Math.round(v)}`)
    .join(', ')}; per re-stack: ${r.rows.map((x) => `${x.label} ${Math.round(x.ms)}`).join(', ')}.\n`;
}
console.log(md);
if (values.json) await writeFile(values.json, JSON.stringify(results, null, 2));
if (values.record) await appendFile(resultsFile, md);
