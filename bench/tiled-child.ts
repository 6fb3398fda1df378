// Child process of bench/tiled-quality.ts: runs one tiled run from a tiled document given as
// JSON in argv[2] (runs folder argv[3], device preference from SKYSTACK_DEVICE) and prints one
// JSON line with the run status, wall time, CPU time and peak RSS of the whole process, in the
// same shape as bench/rawstack-child.ts prints for a Raw Stack run, so the two compare.
// Peak RSS is the process's VmHWM at the end (a fresh process: its own high-water mark), with
// getrusage's maxRSS where /proc is not readable.

import { readFileSync } from 'node:fs';
import { resolveTiledConfig } from '../src/config/tiled-run.js';
import { runTiled } from '../src/pipeline/tiled/run.js';

function hwmKiB(): number {
  try {
    const m = /VmHWM:\s+(\d+)/.exec(readFileSync('/proc/self/status', 'utf8'));
    if (m) return Number(m[1]);
  } catch {
    // fall through
  }
  return process.resourceUsage().maxRSS;
}

const [doc, runsDir] = [process.argv[2], process.argv[3]];
if (doc === undefined || runsDir === undefined) {
  console.error('usage: node tiled-child.js TILED_DOCUMENT_JSON RUNS_DIR');
  process.exit(2);
}
const resolved = resolveTiledConfig(JSON.parse(doc) as unknown);
if (!resolved.ok) {
  console.log(JSON.stringify({ status: 'config_error', issues: resolved.issues }));
  process.exit(2);
}
const t0 = performance.now();
const cpu0 = process.cpuUsage();
const result = await runTiled(resolved.config, { runsDir });
const wallMs = performance.now() - t0;
const cpu = process.cpuUsage(cpu0);
console.log(
  JSON.stringify({
    status: result.status,
    wall_ms: Math.round(wallMs),
    cpu_ms: Math.round((cpu.user + cpu.system) / 1000),
    max_rss_mib: hwmKiB() / 1024,
    device: result.device.kind + (result.device.adapter ? ` (${result.device.adapter})` : ''),
    phases: result.phases,
    run_dir: result.runDir,
  }),
);
