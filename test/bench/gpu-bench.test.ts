// The GPU bench's pure parts (bench/gpu/): bandwidth arithmetic and byte models, repetition
// choice, option parsing, the report's tables and verdicts, and the package list pack.sh
// carries. No timing is asserted: the inputs are synthetic.
import { test } from 'uvu';
import * as assert from 'uvu/assert';
import { parseGpuBenchArgs, type GpuBenchOptions } from '../../bench/gpu/args.js';
import { busyCores, bytesOf, fractionOf, gbPerSecond, median, repsFor } from '../../bench/gpu/model.js';
import { importsOf, packageClosure, packageOf, reachablePackages } from '../../bench/gpu/pack-list.js';
import { idleLine, kernelTable, markdown, pixelShare, streamGoal, type GpuBenchReport, type KernelRow } from '../../bench/gpu/report.js';

test('bandwidth arithmetic: GB/s from bytes and ms, fractions of the reference', () => {
  assert.is(gbPerSecond(3e9, 1000), 3);
  assert.ok(Math.abs(gbPerSecond(480e6, 0.16) - 3000) < 1e-9);
  assert.ok(Number.isNaN(gbPerSecond(1e9, 0)));
  assert.is(fractionOf(1500, 3000), 0.5);
  assert.is(fractionOf(10, null), null);
  assert.is(fractionOf(10, 0), null);
  assert.is(fractionOf(NaN, 100), null);
});

test('byte models: inputs read once, outputs written once', () => {
  const px = 6000 * 4000;
  assert.is(bytesOf.calibrate(px), px * 20); // light, bias, dark, flat, out
  assert.is(bytesOf.decode(px, 2), px * 6);
  assert.is(bytesOf.debayer(px), px * 16); // mosaic in, R, G, B out
  assert.is(bytesOf.stack(px, 16), px * (16 * 4 + 8));
  assert.is(bytesOf.stretch(px, 3), px * 24);
  assert.is(bytesOf.premask(1000, 16), 1000 * (16 * 14 + 4));
  assert.is(bytesOf.scatter(100), 800);
});

test('repetitions per batch: about targetMs long, within 1..maxReps', () => {
  assert.is(repsFor(0.2, 25, 200), 125);
  assert.is(repsFor(0.01, 25, 200), 200);
  assert.is(repsFor(100, 25, 200), 1);
  assert.is(repsFor(0, 25, 50), 50, 'an unmeasurably short repetition gets the most');
  assert.is(repsFor(1, 25, 0), 1);
  assert.is(median([5, 1, 3]), 3);
  assert.is(median([4, 1, 3, 2]), 2.5);
  assert.ok(Number.isNaN(median([])));
  assert.is(busyCores({ wallMs: 2000, cpuMs: 2000 }), 1);
});

test('options: defaults, --quick sizes, usage errors', () => {
  const d = parseGpuBenchArgs({}) as GpuBenchOptions;
  assert.equal([d.paths, d.frames, d.width, d.height, d.budget, d.rawstack, d.record, d.allowSoftware], [['gpu', 'software'], 30, 2048, 1536, 256, true, true, false]);
  const q = parseGpuBenchArgs({ quick: true, 'allow-software': true, 'no-record': true, paths: 'software', only: '^stack' }) as GpuBenchOptions;
  assert.equal([q.frames, q.width, q.height, q.paths, q.record, q.allowSoftware], [10, 1024, 768, ['software'], false, true]);
  assert.ok(q.only!.test('stack none N=16'));
  const r = parseGpuBenchArgs({ frames: '12', size: '800x600', 'no-rawstack': true, out: 'x.md', json: 'x.json', label: 'H100', 'software-icd': '/x/icd.json' }) as GpuBenchOptions;
  assert.equal([r.frames, r.width, r.height, r.rawstack, r.out, r.json, r.label, r.softwareIcd], [12, 800, 600, false, 'x.md', 'x.json', 'H100', '/x/icd.json']);
  assert.is(d.softwareIcd, undefined);
  assert.match(parseGpuBenchArgs({ paths: 'gpu,tpu' }) as string, /--paths/);
  assert.match(parseGpuBenchArgs({ size: '800' }) as string, /--size/);
  assert.match(parseGpuBenchArgs({ frames: '2' }) as string, /--frames/);
  assert.match(parseGpuBenchArgs({ budget: '10' }) as string, /--budget/);
  assert.match(parseGpuBenchArgs({ only: '(' }) as string, /--only/);
  assert.match(parseGpuBenchArgs({ 'deadline-s': '0' }) as string, /--deadline-s/);
  assert.is((parseGpuBenchArgs({ 'deadline-s': '300' }) as GpuBenchOptions).deadlineS, 300);
});

function row(name: string, cls: 'stream' | 'compute', fraction: number | null, extra: Partial<KernelRow> = {}): KernelRow {
  return { name, kernels: [name], cls, size: '10x10', bytes: 2e8, mpix: 24, ms: 0.1, timing: 'timestamp', wall_ms: 0.12, span_ms: 0.105, reps: 100, gbs: 2000, fraction, mpix_s: 240000, ...extra };
}

test('report: stream goal, kernel table cells, idle verdict, pixel share', () => {
  const rows = [
    row('calibrate', 'stream', 0.8),
    row('decode_int16', 'stream', 0.42),
    row('warp_lanczos3', 'compute', 0.1),
    row('stack none', 'stream', null, { error: 'boom' }),
    row('stretch_mtf', 'stream', 0.3, { skipped: 'skipped: 301 s past the start, over --deadline-s 300' }),
  ];
  assert.equal(streamGoal(rows), { met: 1, of: 2, missed: ['decode_int16'] });
  const t = kernelTable({ path: 'gpu', available: true, kernels: rows });
  assert.match(t, /\| calibrate \| stream \| 10x10 \| 200 MB \| 0\.100 \(ts\) \| 0\.105 \| 0\.120 \| 240000 \| 2000\.0 \| 80 % \|/);
  assert.match(t, /\| stack none \|.*FAILED: boom \|/);
  assert.match(t, /\| stretch_mtf \|.*\| skipped: 301 s past the start, over --deadline-s 300 \|/);
  const quiet = { wallMs: 3000, cpuMs: 30 };
  const spin = { wallMs: 3000, cpuMs: 2950 };
  assert.match(idleLine({ before: quiet, after_request: quiet, after_work: quiet, after_destroy: quiet }), /no spinning thread/);
  assert.match(idleLine({ before: quiet, after_request: spin, after_work: spin, after_destroy: quiet }), /after requestDevice 0\.98.*a thread spins/);
  const phases = [
    { phase: 'INPUT_SCAN', status: 'ok', duration_ms: 100, peak_rss_mib: null },
    { phase: 'CALIBRATION', status: 'ok', duration_ms: 3000, peak_rss_mib: null },
    { phase: 'STACKING', status: 'ok', duration_ms: 1000, peak_rss_mib: null },
  ];
  assert.is(pixelShare({ path: 'gpu', wall_ms: 8000, phases }), 0.5);
  assert.is(pixelShare({ path: 'gpu', error: 'x' }), null);
});

test('report: the Markdown section names the device, the tables and the Raw Stack runs', () => {
  const report: GpuBenchReport = {
    schema: 'skystack-gpu-bench/1',
    date: '2026-11-26T10:00:00.000Z',
    machine: { cpu: 'EPYC', cores: 16, memory_gib: 128, node: 'v20.20.2', platform: 'linux-x64', load: [0.5, 1.25], label: 'lent H100' },
    options: { quick: false, paths: ['gpu', 'software'], allow_software: false, software_icd: '/tmp/ss/vk_swiftshader_icd.json' },
    paths: [
      {
        path: 'gpu',
        available: true,
        device: {
          adapter: { vendor: 'nvidia', architecture: 'hopper', device: 'NVIDIA H100 80GB HBM3', description: 'NVIDIA: 580.159.04', isFallbackAdapter: false, subgroupMinSize: 32, subgroupMaxSize: 32 },
          driver: 'NVIDIA: 580.159.04',
          acquisition: { preference: 'gpu', kind: 'gpu', adapter: 'NVIDIA H100', backend: 'default (vulkan)', featureLevel: 'core', attempts: [] },
          features: ['timestamp-query'],
          limits: { maxStorageBufferBindingSize: 2 ** 31, maxBufferSize: 2 ** 32, maxComputeWorkgroupSizeX: 1024, maxComputeInvocationsPerWorkgroup: 1024 },
        },
        timestamp_granularity_ns: 32,
        bandwidth: [{ probe: 'copy kernel', bytes: 536870912, ms: 0.2, timing: 'timestamp', gbs: 2684.4, reps: 100 }],
        reference_gbs: 2684.4,
        kernels: [row('calibrate', 'stream', 0.8)],
      },
      { path: 'software', available: false, reason: 'NO_ADAPTER: none' },
    ],
    rawstack: {
      dataset: 'mono30-2048x1536-s9-cal',
      frames: 30,
      width: 2048,
      height: 1536,
      budget_mib: 256,
      generate_s: null,
      runs: [
        { path: 'gpu', device: 'gpu (NVIDIA H100)', wall_ms: 4000, cpu_ms: 9000, max_rss_mib: 600, phases: [{ phase: 'CALIBRATION', status: 'ok', duration_ms: 1000, cpu_ms: 3000, peak_rss_mib: 400, timing: { masters: 200 } }] },
        { path: 'cpu', error: 'child ended 1' },
        { path: 'software', skipped: 'skipped: over --deadline-s 300' },
      ],
    },
    complete: false,
  };
  const md = markdown(report);
  assert.match(md, /^\n## 2026-11-26 — GPU bench \(`npm run bench -- gpu`\), lent H100, EPYC, 16 cores/);
  assert.match(md, /### gpu: nvidia NVIDIA H100 80GB HBM3 — NVIDIA: 580\.159\.04 \(default \(vulkan\), core\)/);
  assert.match(md, /timestamp queries: yes \(grain 32 ns\)/);
  assert.match(md, /Load average 0\.5 at the start, 1\.3 at the end, on 16 cores\./);
  assert.match(md, /\| copy kernel \| 537 MB \| 0\.200 \| timestamp \| 2684\.4 \|/);
  assert.match(md, /### software: not available \(NO_ADAPTER: none\)\n\nVulkan drivers for this path: `VK_DRIVER_FILES=\/tmp\/ss\/vk_swiftshader_icd\.json`/);
  assert.match(md, /\| CALIBRATION ⁽ᵖ⁾ \| 1000 \(25 %\) \/ 3000 \|/);
  assert.match(md, /Raw Stack on cpu: FAILED child ended 1\nRaw Stack on software: skipped: over --deadline-s 300/);
  assert.match(md, /\*\*Incomplete: the bench was still running when this was written\.\*\*\n$/);
  assert.match(md, /gpu: pixel phases 25 % of the run/);
  assert.match(md, /- gpu CALIBRATION: `\{"masters":200\}`/);
});

test('pack list: imports of compiled modules, package names, closure over installed dependencies', () => {
  const src = [
    "import { a } from './a.js';",
    "import sharp from 'sharp';",
    'import {\n  x,\n  y,\n} from "@img/colour/sub";',
    "export { z } from '../z.js';",
    "const m = await import('./lazy.js');",
    "import 'side-effect';",
    "import { readFile } from 'node:fs/promises';",
  ].join('\n');
  assert.equal(importsOf(src), ['./a.js', 'sharp', '@img/colour/sub', '../z.js', './lazy.js', 'side-effect', 'node:fs/promises']);
  assert.equal(['sharp', '@img/colour/sub', './a.js', 'node:fs', 'fs', 'uvu/assert'].map(packageOf), ['sharp', '@img/colour', null, null, null, 'uvu']);
  const files: Record<string, string> = {
    '/d/main.js': "import './b.js'; import zod from 'zod';",
    '/d/b.js': "import { x } from 'webgpu'; import './gone.js';",
  };
  const reach = reachablePackages(['/d/main.js'], (f) => files[f] ?? null);
  assert.equal([...reach.packages].sort(), ['webgpu', 'zod']);
  assert.equal(reach.missing, ['/d/gone.js']);
  const manifests: Record<string, { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string> }> = {
    sharp: { dependencies: { semver: '^7' }, optionalDependencies: { '@img/sharp-linux-x64': '1', '@img/sharp-darwin-arm64': '1' } },
    semver: {},
    '@img/sharp-linux-x64': { optionalDependencies: { '@img/sharp-libvips-linux-x64': '1' } },
    '@img/sharp-libvips-linux-x64': {},
    uvu: { dependencies: { kleur: '^4' } },
  };
  const closure = packageClosure(['sharp', 'uvu'], (n) => manifests[n] ?? null);
  assert.equal(closure.packages, ['@img/sharp-libvips-linux-x64', '@img/sharp-linux-x64', 'semver', 'sharp', 'uvu']);
  assert.equal(closure.notInstalled, ['kleur'], 'a required dependency that is not installed is reported; an absent optional one is not');
});

test.run();
