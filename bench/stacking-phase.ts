// STACKING alone, for profiling and A/B runs of the stacking engine without the ~10 s of
// phases before it:
//   node dist/bench/stacking-phase.js capture CONFIG_JSON RUNS_DIR STATE_FILE
//     runs INPUT_SCAN … FRAME_FILTERING and writes the state STACKING reads (frames with their
//     calibrated files, registration, normalisation, weights; size, colour mode, reference) to
//     STATE_FILE (JSON);
//   node dist/bench/stacking-phase.js replay CONFIG_JSON RUNS_DIR STATE_FILE
//     restores that state and runs STACKING only; prints one JSON line: wall and CPU ms of the
//     phase (whole process, all threads), stacking_diagnostics.json's timings and the output path.
//   LN_PREMEASURE=1 node dist/bench/stacking-phase.js replay …
//     as replay, but first (outside the timed phase) bins every frame for local normalization
//     the way QUALITY_ANALYSIS does from its correlation read (ln-premeasured.ts), so STACKING's
//     LN setup finds the planes; also prints what the binning adds to QUALITY_ANALYSIS's read
//     (ccProxyAndBins with and without it, per frame, alternating order): `qa_ln_extra_ms`.
//     Without LN (the seed's configuration) it makes the same reads without binning, so both
//     configurations enter STACKING after the same QUALITY_ANALYSIS-like I/O (A/B runs: set it
//     for both).
// The captured state names the calibrated frames of the capture's run folder: keep that folder.

import { readdirSync, readFileSync } from 'node:fs';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { parseRawStackConfig } from '../src/config/rawstack.js';
import { ok, type Phase } from '../src/pipeline/phase.js';
import { stackingPhase } from '../src/pipeline/rawstack/phases/stacking.js';
import { runRawStack, standardPhases } from '../src/pipeline/rawstack/run.js';
import { includedFrames, pixelSource, type RawStackState } from '../src/pipeline/rawstack/state.js';
import { lnBinSpecOf, lnWanted, rememberLnPlanes } from '../src/pipeline/rawstack/ln-premeasured.js';
import { CC_BIN } from '../src/pipeline/rawstack/phases/quality-analysis.js';
import { ccProxyAndBins } from '../src/pipeline/stages/frames/tasks.js';

const [mode, configJson, runsDir, stateFile] = process.argv.slice(2);
if (!mode || !configJson || !runsDir || !stateFile || (mode !== 'capture' && mode !== 'replay')) {
  console.error('usage: node stacking-phase.js capture|replay CONFIG_JSON RUNS_DIR STATE_FILE');
  process.exit(2);
}
const parsed = parseRawStackConfig(JSON.parse(configJson) as unknown);
if (!parsed.ok) {
  console.error(JSON.stringify(parsed.issues));
  process.exit(2);
}

const KEYS = ['frames', 'colorMode', 'bayer', 'width', 'height', 'masters', 'referenceIndex', 'referenceStrategy', 'queue'] as const;

let premeasure: Record<string, number> | null = null;

const capture: Phase<RawStackState> = {
  name: 'STACKING',
  optional: false,
  async run(ctx) {
    const saved = Object.fromEntries(KEYS.map((k) => [k, ctx.state[k]]));
    await writeFile(stateFile, JSON.stringify(saved));
    return ok({});
  },
};

const restore: Phase<RawStackState> = {
  name: 'FRAME_FILTERING',
  optional: false,
  async run(ctx) {
    const saved = JSON.parse(await readFile(stateFile, 'utf8')) as Record<string, unknown>;
    Object.assign(ctx.state, saved);
    if (process.env.LN_PREMEASURE === '1') {
      // Without LN (the seed's configuration) the same two reads per frame, no binning: the
      // replay's STACKING then starts after the same I/O and garbage as with LN (the heap
      // QUALITY_ANALYSIS leaves is part of what STACKING's threads pay for).
      const ln = lnWanted(ctx.state) !== 'none';
      let plain = 0;
      let binned = 0;
      let k = 0;
      for (const f of includedFrames(ctx.state)) {
        const spec = ln ? await lnBinSpecOf(ctx.state, f) : undefined;
        if (ln && !spec) continue;
        const timed = async (withLn: boolean) => {
          const t = performance.now();
          const r = await ccProxyAndBins(pixelSource(f), CC_BIN, withLn && spec ? spec : undefined);
          return { ms: performance.now() - t, planes: r.lnPlanes };
        };
        const first = k++ % 2 === 0;
        const a = await timed(first);
        const b = await timed(!first);
        const withLn = first ? a : b;
        plain += first ? b.ms : a.ms;
        binned += withLn.ms;
        if (spec) rememberLnPlanes(ctx.state, f, spec, withLn.planes!);
      }
      premeasure = { qa_read_ms: Math.round(plain), qa_read_bin_ms: Math.round(binned), qa_ln_extra_ms: Math.round(binned - plain) };
    }
    return ok({});
  },
};

/** CPU ms per thread name (utime + stime from /proc/self/task; Linux only, else empty). */
function threadCpu(): Record<string, number> {
  const out: Record<string, number> = {};
  try {
    for (const tid of readdirSync('/proc/self/task')) {
      const stat = readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')')) + ':' + tid;
      const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      const ms = ((Number(f[11]) + Number(f[12])) * 1000) / 100;
      out[name] = (out[name] ?? 0) + ms;
    }
  } catch {
    /* not Linux */
  }
  return out;
}

if (mode === 'capture') {
  const phases = standardPhases();
  const upTo = phases.findIndex((p) => p.name === 'STACKING');
  const r = await runRawStack(parsed.config, { runsDir, phases: [...phases.slice(0, upTo), capture] });
  console.log(JSON.stringify({ status: r.status, runDir: r.runDir }));
} else {
  let cpu0 = process.cpuUsage();
  let t0 = 0;
  let wall = 0;
  let cpu = 0;
  let threads0: Record<string, number> = {};
  let threads: Record<string, number> = {};
  const r = await runRawStack(parsed.config, {
    runsDir,
    phases: [restore, stackingPhase],
    onEvent: (line) => {
      if (line.type === 'phase_start' && line.phase === 'STACKING') {
        cpu0 = process.cpuUsage();
        threads0 = threadCpu();
        t0 = performance.now();
      } else if (line.type === 'phase_end' && line.phase === 'STACKING') {
        wall = performance.now() - t0;
        const c = process.cpuUsage(cpu0);
        cpu = (c.user + c.system) / 1000;
        threads = threadCpu();
        for (const k of Object.keys(threads)) threads[k] = Math.round(threads[k]! - (threads0[k] ?? 0));
      }
    },
  });
  const diag = JSON.parse(await readFile(join(r.runDir, 'artifacts/preprocess/stacking_diagnostics.json'), 'utf8')) as { timings_ms: unknown; device: unknown; band_plan: { bands: number }; local_normalization: { premeasured_frames?: number } | null };
  console.log(JSON.stringify({ status: r.status, wall_ms: Math.round(wall), cpu_ms: Math.round(cpu), bands: diag.band_plan.bands, timings: diag.timings_ms, ...(premeasure ? { premeasure } : {}), ln_premeasured_frames: diag.local_normalization?.premeasured_frames ?? null, threads, paths: (diag.device as { paths: unknown }).paths, output: r.outputs.stacked_linear ?? r.outputs.stacked_rgb }));
}
