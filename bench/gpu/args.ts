// Options of `npm run bench -- gpu` (bench/gpu/suite.ts), parsed from bench/run.ts's parseArgs
// values; pure, so the defaults and usage errors are unit-tested.

export interface GpuBenchOptions {
  quick: boolean;
  /** Append the section to bench/RESULTS.md. */
  record: boolean;
  json?: string;
  /** Write the Markdown section to this file (instead of, or besides, RESULTS.md). */
  out?: string;
  paths: ('gpu' | 'software')[];
  allowSoftware: boolean;
  /** Kernel cases whose name matches (all by default). */
  only?: RegExp;
  rawstack: boolean;
  frames: number;
  width: number;
  height: number;
  budget: number;
  data?: string;
  /** Free text naming the machine in the heading (e.g. "lent H100"). */
  label?: string;
  /**
   * A Vulkan ICD file (VK_DRIVER_FILES) for the software path only, e.g. a carried SwiftShader
   * on a GPU machine without Mesa; where Mesa's GL ES is present its llvmpipe is still taken first.
   */
  softwareIcd?: string;
  /** Seconds after which kernel cases and Raw Stack runs not yet started are skipped (recorded as such). */
  deadlineS?: number;
}

/**
 * Options from `npm run bench -- gpu …` (parseArgs values of bench/run.ts); a string is the
 * usage error. Raw Stack dataset: 30 × 2048×1536 (the `rawstack` bench's), --quick 10 × 1024×768.
 */
export function parseGpuBenchArgs(v: Record<string, string | boolean | undefined>): GpuBenchOptions | string {
  const quick = v.quick === true;
  const paths = String(v.paths ?? 'gpu,software').split(',').map((s) => s.trim()).filter(Boolean);
  if (paths.length === 0 || paths.some((p) => p !== 'gpu' && p !== 'software')) return `--paths takes gpu and/or software, comma-separated (got "${v.paths}")`;
  const frames = Number(v.frames ?? (quick ? 10 : 30));
  const size = /^(\d+)x(\d+)$/.exec(String(v.size ?? (quick ? '1024x768' : '2048x1536')));
  if (!Number.isInteger(frames) || frames < 3) return `--frames takes a whole number of at least 3 (got "${v.frames}")`;
  if (!size || Number(size[1]) < 64 || Number(size[2]) < 64) return `--size takes WIDTHxHEIGHT, each at least 64 (got "${v.size}")`;
  const budget = v.budget === undefined ? 256 : Number(v.budget);
  if (!(budget >= 64)) return `--budget takes MiB, at least 64 (got "${v.budget}")`;
  const deadline = v['deadline-s'] === undefined ? undefined : Number(v['deadline-s']);
  if (deadline !== undefined && !(deadline > 0)) return `--deadline-s takes seconds (got "${v['deadline-s']}")`;
  let only: RegExp | undefined;
  try {
    only = typeof v.only === 'string' ? new RegExp(v.only) : undefined;
  } catch {
    return `--only takes a regular expression (got "${v.only}")`;
  }
  return {
    quick,
    record: v['no-record'] !== true,
    ...(typeof v.json === 'string' ? { json: v.json } : {}),
    ...(typeof v.out === 'string' ? { out: v.out } : {}),
    paths: [...new Set(paths)] as ('gpu' | 'software')[],
    allowSoftware: v['allow-software'] === true,
    ...(only ? { only } : {}),
    rawstack: v['no-rawstack'] !== true,
    frames,
    width: Number(size[1]),
    height: Number(size[2]),
    budget,
    ...(typeof v.data === 'string' ? { data: v.data } : {}),
    ...(typeof v.label === 'string' ? { label: v.label } : {}),
    ...(typeof v['software-icd'] === 'string' ? { softwareIcd: v['software-icd'] } : {}),
    ...(deadline !== undefined ? { deadlineS: deadline } : {}),
  };
}

