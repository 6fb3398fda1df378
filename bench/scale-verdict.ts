// The printed verdicts of the large Raw Stack benches (bench/rawstack-large.ts), pure so a unit
// test can check them on given numbers (test/bench/rawstack-large.test.ts).
// Scale: runs of increasing frame counts over the same session. Memory is flat when the largest
// run's peak RSS is within `rssBar` (1.15) of the smallest's. Time is linear when the marginal
// cost per frame (wall or CPU difference over frame difference) between the two largest runs is
// within ±(linearBar − 1) of the one between the two smallest: differences cancel the fixed
// costs (masters, reference, the stack's final write) that make time / frames fall with size.
// Large frames: skystack / Siril ratios of wall, CPU and peak RSS against a target (0.7).

export interface ScalePoint {
  frames: number;
  wall_ms: number;
  cpu_ms: number;
  max_rss_mib: number;
}

export interface ScaleVerdict {
  /** Peak RSS of the largest run over the smallest's. */
  rssRatio: number;
  rssMet: boolean;
  /** Marginal wall / CPU ms per frame between the two largest runs over that between the two smallest. */
  wallSlopeRatio: number;
  cpuSlopeRatio: number;
  wallLinear: boolean;
  cpuLinear: boolean;
  text: string;
}

const slope = (a: ScalePoint, b: ScalePoint, key: 'wall_ms' | 'cpu_ms'): number => (b[key] - a[key]) / (b.frames - a.frames);

/** Needs at least three runs of distinct frame counts; they are taken in frame order. */
export function scaleVerdict(points: ScalePoint[], rssBar = 1.15, linearBar = 1.15): ScaleVerdict {
  const p = [...points].sort((a, b) => a.frames - b.frames);
  if (p.length < 3 || new Set(p.map((x) => x.frames)).size !== p.length) throw new Error('scaleVerdict: at least three runs of distinct frame counts');
  const first = p[0]!;
  const last = p[p.length - 1]!;
  const rssRatio = last.max_rss_mib / first.max_rss_mib;
  const ratioOf = (key: 'wall_ms' | 'cpu_ms') => {
    const lo = slope(p[0]!, p[1]!, key);
    const hi = slope(p[p.length - 2]!, last, key);
    return lo > 0 ? hi / lo : NaN;
  };
  const wallSlopeRatio = ratioOf('wall_ms');
  const cpuSlopeRatio = ratioOf('cpu_ms');
  const within = (r: number) => Number.isFinite(r) && r <= linearBar && r >= 2 - linearBar;
  const rssMet = rssRatio <= rssBar;
  const perFrame = p.map((x) => `${x.frames}: ${(x.wall_ms / x.frames).toFixed(0)} ms wall / ${(x.cpu_ms / x.frames).toFixed(0)} ms CPU`).join(', ');
  const marginal = (key: 'wall_ms' | 'cpu_ms') => p.slice(1).map((x, i) => `${p[i]!.frames}→${x.frames} ${slope(p[i]!, x, key).toFixed(0)}`).join(', ');
  const bar = `${(2 - linearBar).toFixed(2)}–${linearBar.toFixed(2)}`;
  const text = [
    `Peak RSS ${last.frames} / ${first.frames} frames: **${rssRatio.toFixed(3)}** (bar ≤ ${rssBar}: ${rssMet ? 'met' : 'NOT met'}).`,
    `Time per frame (whole run / frames): ${perFrame}.`,
    `Marginal ms per frame, wall: ${marginal('wall_ms')}; CPU: ${marginal('cpu_ms')}.`,
    `Linear growth (marginal cost ${p[p.length - 2]!.frames}→${last.frames} over ${first.frames}→${p[1]!.frames}, bar ${bar}): wall **${wallSlopeRatio.toFixed(2)}** (${within(wallSlopeRatio) ? 'met' : 'NOT met'}), CPU **${cpuSlopeRatio.toFixed(2)}** (${within(cpuSlopeRatio) ? 'met' : 'NOT met'}).`,
  ].join('\n');
  return { rssRatio, rssMet, wallSlopeRatio, cpuSlopeRatio, wallLinear: within(wallSlopeRatio), cpuLinear: within(cpuSlopeRatio), text };
}

export interface Measured {
  wall_ms: number;
  cpu_ms: number | null;
  max_rss_mib: number;
}

/** skystack / Siril ratios and whether wall time and peak RSS are at or under `target`. */
export function versusSiril(sky: Measured, siril: Measured, target = 0.7): { wall: number; cpu: number | null; rss: number; text: string } {
  const wall = sky.wall_ms / siril.wall_ms;
  const cpu = sky.cpu_ms !== null && siril.cpu_ms ? sky.cpu_ms / siril.cpu_ms : null;
  const rss = sky.max_rss_mib / siril.max_rss_mib;
  const x = (r: number | null) => (r === null ? '–' : `${r.toFixed(2)}×`);
  const text = [
    '| skystack / Siril | wall time | CPU time | peak RSS |',
    '|---|---|---|---|',
    `| defaults | **${x(wall)}** | ${x(cpu)} | **${x(rss)}** |`,
    '',
    `Target ≤ ${target}× Siril's wall time and peak RSS: wall ${wall <= target ? 'met' : 'NOT met'}, memory ${rss <= target ? 'met' : 'NOT met'}.`,
  ].join('\n');
  return { wall, cpu, rss, text };
}
