// Masters bench: INPUT_SCAN + CALIBRATION of the Raw Stack bench dataset with one light, so the
// phase is almost all master building (bias 8, darks 6 + 6, flats 8 at 2048×1536). Each run is a
// fresh child process (cold JIT and shader pipeline, as in a real run); it prints the phase's own
// timing_ms.masters (wall), the CPU time of all threads over CALIBRATION and the peak RSS.
// Usage: node dist/bench/masters.js [--repeat N] [--data DIR] [--budget MIB]
// (the dataset defaults to the Raw Stack bench's cache; build it with `npm run bench -- rawstack`).

import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { parseRawStackConfig } from '../src/config/rawstack.js';
import { calibrationPhase } from '../src/pipeline/rawstack/phases/calibration.js';
import { inputScanPhase } from '../src/pipeline/rawstack/phases/input-scan.js';
import { runRawStack } from '../src/pipeline/rawstack/run.js';

const { values } = parseArgs({
  options: {
    child: { type: 'string' },
    repeat: { type: 'string', default: '3' },
    data: { type: 'string', default: '/tmp/skystack-bench-data/mono30-2048x1536-s9-cal' },
    budget: { type: 'string', default: '256' },
  },
});

if (values.child !== undefined) {
  const d = values.data;
  const parsed = parseRawStackConfig({
    lights_dir: join(d, 'lights'),
    bias_dir: join(d, 'bias'),
    darks_dir: join(d, 'darks'),
    flats_dir: join(d, 'flats'),
    max_frames: 1,
    frames_min: 1,
    runtime_limits: { memory_budget: Number(values.budget) },
  });
  if (!parsed.ok) throw new Error(JSON.stringify(parsed.issues));
  let cpu0 = process.cpuUsage();
  let cpuMs = 0;
  let summary: Record<string, unknown> | undefined;
  const r = await runRawStack(parsed.config, {
    runsDir: values.child,
    phases: [
      inputScanPhase,
      {
        ...calibrationPhase,
        run: async (ctx) => {
          const outcome = await calibrationPhase.run(ctx);
          summary = ctx.state.summaries.CALIBRATION as Record<string, unknown>;
          return outcome;
        },
      },
    ],
    onEvent: (line) => {
      if (line.type === 'phase_start' && line.phase === 'CALIBRATION') cpu0 = process.cpuUsage();
      if (line.type === 'phase_end' && line.phase === 'CALIBRATION') {
        const c = process.cpuUsage(cpu0);
        cpuMs = Math.round((c.user + c.system) / 1000);
      }
    },
  });
  const timing = (summary as { timing_ms?: { masters: number; lights: number } } | undefined)?.timing_ms;
  // Peak RSS of the process (VmHWM): with one light, the masters' peak.
  const hwm = /VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'));
  const peakMiB = hwm ? Math.round(Number(hwm[1]) / 1024) : null;
  console.log(JSON.stringify({ status: r.status, masters_ms: timing?.masters ?? null, lights_ms: timing?.lights ?? null, calibration_cpu_ms: cpuMs, peak_rss_mib: peakMiB }));
} else {
  const self = fileURLToPath(import.meta.url);
  const repeat = Number(values.repeat);
  console.log(`[masters] load ${loadavg()[0]!.toFixed(2)}`);
  for (let i = 0; i < repeat; i++) {
    const runs = mkdtempSync(join(tmpdir(), 'masters-bench-'));
    try {
      const out = execFileSync(process.execPath, [self, '--child', runs, '--data', values.data, '--budget', values.budget], {
        encoding: 'utf8',
        env: { ...process.env, MALLOC_ARENA_MAX: '2', MALLOC_MMAP_THRESHOLD_: '131072' },
      });
      console.log(out.trim().split('\n').pop());
    } finally {
      rmSync(runs, { recursive: true, force: true });
    }
  }
  console.log(`[masters] load ${loadavg()[0]!.toFixed(2)}`);
}
