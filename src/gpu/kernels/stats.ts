// Wrappers for shaders/stats/{minmax,histogram,tiles}.wgsl: NaN-aware image statistics with
// the contract of src/cpu/stats.ts (exact count/min/max/median/MAD, f64-folded mean).
// Whole image / Bayer phases: pass 1 (stats_minmax) gives per-workgroup partials folded here
// in f64; then radix selection levels (stats_histogram), each a dispatch plus a histogram
// readback, first for the two middle ranks of the values, then of the deviations from the f32
// median. Levels start below the common key prefix of each group's min and max; the first
// level counts every sample in workgroup memory (11 key bits whole, 9 Bayer), the later ones
// only the samples in the chosen bin, straight into an 8 MiB global histogram (20 / 18 bits):
// 5 passes over the data for a key range of up to 31 bits (values of one sign, and always for
// deviations), one more when values span both signs (Bayer: when a range exceeds 27 bits).
// Tiles: one dispatch (stats_tiles) does everything per tile on the device; its records can
// stay resident for a background-map kernel.
// Images larger than one storage binding are passed as several row segments (`StatsSegment`);
// histograms accumulate over all segments of a level.

import type { PlaneStats } from '../../algorithms/robust-stats.js';
import {
  deviationCenter,
  finishStats,
  keyValue,
  newTileStats,
  setTile,
  TILE_RECORD,
  tileGrid,
  valueKey,
  type StatsParams,
  type TileStats,
  type TileStatsParams,
} from '../../cpu/stats.js';
import type { BindingResource, GpuContext } from '../context.js';
import { GpuError } from '../errors.js';
import { packUniform, type UniformField } from '../dispatch.js';
import { vec4Binding } from './vec4-binding.js';

/** Invocations per workgroup of all three stats kernels (even, power of two). */
const WG = 256;
/**
 * Workgroups per pass. Each workgroup pays a fixed cost (workgroup-memory zeroing, the final
 * histogram merge, barriers), which on llvmpipe (2 threads, barriers switch coroutines) is
 * worth few large workgroups; a hardware GPU needs many to fill its cores.
 */
function targetGroups(ctx: GpuContext): { minmax: number; hist: number } {
  return ctx.info.kind === 'software' ? { minmax: 64, hist: 64 } : { minmax: 1024, hist: 512 };
}
/** First-level (workgroup) bins per selection slot: 2 slots (whole) or 8 (Bayer) x bins x 4 B = 16 KiB. */
const SLOT_BINS = { whole: 2048, bayer: 512 } as const;
/** Workgroup shape of stats_tiles (see tileTuning). */
export interface TileTuning {
  /** Invocations per tile workgroup (power of two). */
  wg: number;
  /** Histogram bins per middle rank (power of two; 2 x bins x 4 B of workgroup memory). */
  bins: number;
}

/**
 * stats_tiles shape per device: llvmpipe pays ~10 ns per workgroup atomic and per clear/read of
 * a bin, so small histograms (more, cheaper levels) and small workgroups win there (measured
 * at 6000x4000, T = 128: 64/256 took 1.2 s of CPU against 1.5 s for 64/2048 and 2.6 s for
 * 256/2048); a hardware GPU prefers fewer levels and wide workgroups.
 */
export function tileTuning(ctx: GpuContext): TileTuning {
  return ctx.info.kind === 'software' ? { wg: 64, bins: 256 } : { wg: 256, bins: 2048 };
}

/** Rows `y0 .. y0 + rows` of the image, held in one device buffer (or buffer range). */
export interface StatsSegment {
  buffer: BindingResource;
  y0: number;
  rows: number;
}

interface GroupTotals {
  count: number;
  kmin: number;
  kmax: number;
  sum: number;
}

/** Splits a band's ceil(count / 4) vec4 into at most `target` equal runs (at least one workgroup). */
function split(count: number, target: number): { perGroup: number; groups: number } {
  const n4 = Math.ceil(count / 4);
  const perGroup = Math.max(1, Math.ceil(n4 / target));
  return { perGroup, groups: Math.max(1, Math.ceil(n4 / perGroup)) };
}

function checkSegments(segments: StatsSegment[], height: number, align = 1): void {
  let y = 0;
  for (const s of segments) {
    if (s.y0 !== y || s.rows < 1) throw new GpuError('BAD_ARGUMENT', `stats: segments must tile rows 0..${height} in order (got y0 ${s.y0}, expected ${y})`);
    if (s.y0 % align !== 0) throw new GpuError('BAD_ARGUMENT', `stats: segment y0 ${s.y0} is not a multiple of ${align}`);
    y += s.rows;
  }
  if (y !== height) throw new GpuError('BAD_ARGUMENT', `stats: segments cover ${y} rows of ${height}`);
}

const groupsOf = (params: StatsParams) => (params.mode === 'bayer' ? 4 : 1);

/**
 * Pass 1 for one segment: per-workgroup partials (count, min key, max key, f32 sum bits) per
 * group into `partials` (4 vec4u per workgroup); returns the workgroup count.
 */
export async function statsMinMaxResident(ctx: GpuContext, segment: StatsSegment, partials: BindingResource, params: StatsParams, encoder?: GPUCommandEncoder): Promise<number> {
  const kernel = await ctx.pipeline('stats_minmax', { WG });
  const count = segment.rows * params.width;
  const { perGroup, groups } = split(count, targetGroups(ctx).minmax);
  const uniform = ctx.uniform(
    packUniform([
      ['u32', params.width],
      ['u32', count],
      ['u32', perGroup],
      ['u32', params.mode === 'bayer' ? 1 : 0],
      ['u32', (params.x0 ?? 0) & 1],
      ['u32', ((params.y0 ?? 0) + segment.y0) & 1],
    ]),
  );
  ctx.retire(uniform);
  ctx.dispatch('stats_minmax', kernel, ctx.bindGroup(kernel, [uniform, vec4Binding(segment.buffer, count, 'stats_minmax'), partials]), [groups, 1], encoder);
  return groups;
}

/** Selection state of one slot (a middle rank of one group). */
interface Slot {
  prefix: number;
  rank: number;
}

interface GroupSelection {
  /** Key bits already fixed (32 = done). */
  known: number;
  lo: Slot;
  hi: Slot;
}

const topMask = (bits: number) => (bits === 0 ? 0 : (0xffffffff << (32 - bits)) >>> 0);

/** Shape of the histogram passes for one mode. */
interface HistShape {
  /** Selection slots (2 per group). */
  slots: number;
  /** Bins per slot of the first, workgroup-memory level (16 KiB of workgroup memory in all). */
  wgBins: number;
  /** Key bits per slot of the later levels, counted straight into global memory (8 MiB in all). */
  globalBits: number;
}

function histShape(params: StatsParams): HistShape {
  return params.mode === 'bayer' ? { slots: 8, wgBins: SLOT_BINS.bayer, globalBits: 18 } : { slots: 2, wgBins: SLOT_BINS.whole, globalBits: 20 };
}

/**
 * Key bits the next level resolves for a group with `known` bits fixed: the first level as
 * many as the workgroup histogram holds (the finer it is, the fewer samples later levels
 * count), later levels up to globalBits — two levels for any key range of ≤ 31 bits.
 */
export function levelBits(known: number, first: boolean, shape: HistShape): number {
  return Math.min(32 - known, first ? Math.log2(shape.wgBins) : shape.globalBits);
}

/** Slot records for one level: (prefix, mask, shift, bin_mask) x 8; inactive = (1, 0, 0, 0). */
function slotFields(sel: (GroupSelection | null)[], first: boolean, shape: HistShape): UniformField[] {
  const fields: UniformField[] = [];
  const inactive: UniformField[] = [['u32', 1], ['u32', 0], ['u32', 0], ['u32', 0]];
  for (let g = 0; g < 4; g++) {
    const s = sel[g];
    if (!s || s.known >= 32) {
      fields.push(...inactive, ...inactive);
      continue;
    }
    const b = levelBits(s.known, first, shape);
    const shift = 32 - s.known - b;
    const mask = topMask(s.known);
    const rec = (p: number): UniformField[] => [['u32', p], ['u32', mask], ['u32', shift], ['u32', 2 ** b - 1]];
    fields.push(...rec(s.lo.prefix), ...(s.hi.prefix !== s.lo.prefix ? rec(s.hi.prefix) : inactive));
  }
  return fields;
}

/**
 * One histogram level over all segments: clears the first slots x stride counters of `hist`
 * and counts into them. `direct` = 0 counts in workgroup memory (stride = the workgroup bins
 * per slot); otherwise it is the stride and samples are added to `hist` directly.
 */
export async function statsHistogramResident(
  ctx: GpuContext,
  segments: StatsSegment[],
  hist: GPUBuffer,
  params: StatsParams,
  level: { deviation: boolean; centers: number[]; slots: UniformField[]; direct: number },
  encoder?: GPUCommandEncoder,
): Promise<void> {
  const bayer = params.mode === 'bayer';
  const shape = histShape(params);
  // A direct level needs no workgroup histogram: a 1-bin override keeps its zeroing free.
  const kernel = await ctx.pipeline('stats_histogram', { WG, SLOTS: shape.slots, SLOT_BINS: level.direct ? 1 : shape.wgBins });
  const own = encoder ?? ctx.device.createCommandEncoder({ label: 'stats_histogram' });
  own.clearBuffer(hist, 0, shape.slots * (level.direct || shape.wgBins) * 4);
  for (const seg of segments) {
    const count = seg.rows * params.width;
    const { perGroup, groups } = split(count, targetGroups(ctx).hist);
    const uniform = ctx.uniform(
      packUniform([
        ['u32', params.width],
        ['u32', count],
        ['u32', perGroup],
        ['u32', bayer ? 1 : 0],
        ['u32', (params.x0 ?? 0) & 1],
        ['u32', ((params.y0 ?? 0) + seg.y0) & 1],
        ['u32', level.deviation ? 1 : 0],
        ['u32', level.direct],
        ...[0, 1, 2, 3].map((g): UniformField => ['f32', level.centers[g] ?? 0]),
        ...level.slots,
      ]),
    );
    ctx.retire(uniform);
    ctx.dispatch('stats_histogram', kernel, ctx.bindGroup(kernel, [uniform, vec4Binding(seg.buffer, count, 'stats_histogram'), hist]), [groups, 1], own);
  }
  if (!encoder) ctx.submit(own);
}

/** Bytes of the histogram buffer a selection needs. */
function histBytes(params: StatsParams): number {
  const shape = histShape(params);
  return shape.slots * Math.max(shape.wgBins, 2 ** shape.globalBits) * 4;
}

function locate(hist: Uint32Array, base: number, bins: number, rank: number): [number, number] {
  let r = rank;
  for (let b = 0; b < bins; b++) {
    const c = hist[base + b]!;
    if (r < c) return [b, r];
    r -= c;
  }
  throw new GpuError('BAD_ARGUMENT', 'stats: histogram holds fewer samples than the rank (the data changed between passes)');
}

/** Exact keys of each group's middle ranks among keys in [low, high] (per group). */
async function selectMiddles(
  ctx: GpuContext,
  segments: StatsSegment[],
  params: StatsParams,
  hist: GPUBuffer,
  counts: number[],
  bounds: ([number, number] | null)[],
  deviation: boolean,
  centers: number[],
): Promise<(GroupSelection | null)[]> {
  const shape = histShape(params);
  const sel = bounds.map((b, g): GroupSelection | null => {
    if (!b) return null;
    const known = Math.clz32((b[0] ^ b[1]) >>> 0);
    const prefix = (b[0] & topMask(known)) >>> 0;
    const n = counts[g]!;
    return { known, lo: { prefix, rank: (n - 1) >>> 1 }, hi: { prefix, rank: n >>> 1 } };
  });
  let first = true;
  while (sel.some((s) => s && s.known < 32)) {
    // Bins per slot of this level: the workgroup histogram, or the widest group's global range.
    const stride = first ? shape.wgBins : Math.max(...sel.map((s) => (s && s.known < 32 ? 2 ** levelBits(s.known, false, shape) : 1)));
    await statsHistogramResident(ctx, segments, hist, params, { deviation, centers, slots: slotFields(sel, first, shape), direct: first ? 0 : stride });
    const counted = new Uint32Array(await ctx.readback(hist, shape.slots * stride * 4));
    sel.forEach((s, g) => {
      if (!s || s.known >= 32) return;
      const b = levelBits(s.known, first, shape);
      const shift = 32 - s.known - b;
      const same = s.lo.prefix === s.hi.prefix;
      const [b0, r0] = locate(counted, 2 * g * stride, 2 ** b, s.lo.rank);
      const [b1, r1] = locate(counted, (2 * g + (same ? 0 : 1)) * stride, 2 ** b, s.hi.rank);
      s.lo = { prefix: (s.lo.prefix | (b0 << shift)) >>> 0, rank: r0 };
      s.hi = { prefix: (s.hi.prefix | (b1 << shift)) >>> 0, rank: r1 };
      s.known += b;
    });
    first = false;
  }
  return sel;
}

/**
 * Statistics of an image held on the device as row segments (one result for 'whole', four
 * Bayer phases for 'bayer'). It needs readbacks between its levels, so it submits its own
 * work: a given `encoder` (say, holding the kernels that produce the data) gets the first pass
 * appended and is submitted here. The data must not change until the promise resolves.
 */
export async function imageStatsResident(ctx: GpuContext, segments: StatsSegment[], params: StatsParams, encoder?: GPUCommandEncoder): Promise<PlaneStats[]> {
  checkSegments(segments, params.height);
  const G = groupsOf(params);
  // Pass 1: partials of every segment in one buffer (offsets aligned for binding).
  const align = Math.max(256, ctx.limits.minStorageBufferOffsetAlignment);
  const sizes = segments.map((s) => split(s.rows * params.width, targetGroups(ctx).minmax).groups * 64);
  const offsets: number[] = [];
  let total = 0;
  for (const size of sizes) {
    offsets.push(total);
    total += Math.ceil(size / align) * align;
  }
  const partials = ctx.storage(total, 'stats-partials');
  const hist = ctx.storage(histBytes(params), 'stats-hist');
  try {
    const first = encoder ?? ctx.device.createCommandEncoder({ label: 'stats_minmax' });
    for (let i = 0; i < segments.length; i++) {
      await statsMinMaxResident(ctx, segments[i]!, { buffer: partials, offset: offsets[i]!, size: sizes[i]! }, params, first);
    }
    ctx.submit(first);
    const raw = new Uint32Array(await ctx.readback(partials, total));
    const f32 = new Float32Array(raw.buffer);
    const totals: GroupTotals[] = Array.from({ length: G }, () => ({ count: 0, kmin: 0xffffffff, kmax: 0, sum: 0 }));
    for (let i = 0; i < segments.length; i++) {
      const base = offsets[i]! / 4;
      for (let w = 0; w < sizes[i]! / 64; w++) {
        for (let g = 0; g < G; g++) {
          const o = base + (w * 4 + g) * 4;
          const n = raw[o]!;
          if (n === 0) continue;
          const t = totals[g]!;
          t.count += n;
          t.kmin = Math.min(t.kmin, raw[o + 1]!);
          t.kmax = Math.max(t.kmax, raw[o + 2]!);
          t.sum += f32[o + 3]!;
        }
      }
    }
    const counts = totals.map((t) => t.count);
    const med = await selectMiddles(
      ctx,
      segments,
      params,
      hist,
      counts,
      totals.map((t) => (t.count ? [t.kmin, t.kmax] : null)),
      false,
      [],
    );
    const lo = med.map((s) => (s ? keyValue(s.lo.prefix) : NaN));
    const hi = med.map((s) => (s ? keyValue(s.hi.prefix) : NaN));
    const centers = lo.map((l, g) => (Number.isNaN(l) ? 0 : deviationCenter(l, hi[g]!)));
    // Deviation keys lie in [key(+0), key(max(f32(max - c), f32(c - min)))] (rounding is monotone).
    const devBounds = totals.map((t, g): [number, number] | null => {
      if (!t.count) return null;
      const c = centers[g]!;
      const dmax = Math.max(Math.fround(keyValue(t.kmax) - c), Math.fround(c - keyValue(t.kmin)));
      return [0x80000000, valueKey(dmax)];
    });
    const mad = await selectMiddles(ctx, segments, params, hist, counts, devBounds, true, centers);
    return totals.map((t, g) =>
      finishStats({
        count: t.count,
        min: t.count ? keyValue(t.kmin) : NaN,
        max: t.count ? keyValue(t.kmax) : NaN,
        sum: t.sum,
        medianLo: lo[g]!,
        medianHi: hi[g]!,
        madLo: mad[g] ? keyValue(mad[g]!.lo.prefix) : NaN,
        madHi: mad[g] ? keyValue(mad[g]!.hi.prefix) : NaN,
      }),
    );
  } finally {
    ctx.pool.release(partials);
    ctx.pool.release(hist);
  }
}

/** Rows per upload segment: each segment must fit one storage binding; `align` rows at a time. */
function segmentRows(ctx: GpuContext, width: number, height: number, align: number): number {
  const max = Math.floor(ctx.limits.maxStorageBufferBindingSize / (width * 4));
  const rows = Math.min(height, max - (max % align));
  if (rows < 1) throw new GpuError('BINDING_TOO_LARGE', `stats: a ${align}-row segment of width ${width} exceeds the storage binding limit`);
  return rows;
}

async function withUploadedSegments<T>(ctx: GpuContext, data: Float32Array, width: number, height: number, align: number, f: (segments: StatsSegment[]) => Promise<T>): Promise<T> {
  const per = segmentRows(ctx, width, height, align);
  const segments: StatsSegment[] = [];
  try {
    for (let y0 = 0; y0 < height; y0 += per) {
      const rows = Math.min(per, height - y0);
      segments.push({ buffer: ctx.upload(data.subarray(y0 * width, (y0 + rows) * width)), y0, rows });
    }
    return await f(segments);
  } finally {
    for (const s of segments) ctx.pool.release(s.buffer as GPUBuffer);
  }
}

/** Host to host: upload (in binding-sized row segments), compute, return the statistics. */
export async function imageStatsGpu(ctx: GpuContext, data: Float32Array, params: StatsParams): Promise<PlaneStats[]> {
  if (data.length < params.width * params.height) throw new GpuError('BAD_ARGUMENT', `stats: ${data.length} samples < ${params.width}x${params.height}`);
  return withUploadedSegments(ctx, data, params.width, params.height, 2, (segments) => imageStatsResident(ctx, segments, params));
}

/**
 * Per-tile statistics on the device: writes TILE_RECORD f32 per tile (count, min, max, sum,
 * median lo/hi, MAD lo/hi) into `records` (tilesX * tilesY records, row-major). Segments
 * must start on tile rows. Encoded into `encoder` when given.
 */
export async function tileStatsResident(
  ctx: GpuContext,
  segments: StatsSegment[],
  records: BindingResource,
  params: TileStatsParams,
  encoder?: GPUCommandEncoder,
  tuning: TileTuning = tileTuning(ctx),
): Promise<void> {
  const { width, height, tile } = params;
  const { tilesX } = tileGrid(width, height, tile);
  checkSegments(segments, height, tile);
  const kernel = await ctx.pipeline('stats_tiles', { WG: tuning.wg, BINS: tuning.bins });
  const own = encoder ?? ctx.device.createCommandEncoder({ label: 'stats_tiles' });
  for (const seg of segments) {
    const uniform = ctx.uniform(
      packUniform([
        ['u32', width],
        ['u32', seg.rows],
        ['u32', tile],
        ['u32', tilesX],
        ['u32', seg.y0 / tile],
      ]),
    );
    ctx.retire(uniform);
    const binding = vec4Binding(seg.buffer, seg.rows * width, 'stats_tiles');
    ctx.dispatch('stats_tiles', kernel, ctx.bindGroup(kernel, [uniform, binding, records]), [tilesX, Math.ceil(seg.rows / tile)], own);
  }
  if (!encoder) ctx.submit(own);
}

/** Turns tile records (read back) into per-tile statistics. */
export function tileStatsFromRecords(records: Float32Array, params: TileStatsParams): TileStats {
  const { tilesX, tilesY } = tileGrid(params.width, params.height, params.tile);
  const out = newTileStats(params.tile, tilesX, tilesY);
  for (let i = 0; i < tilesX * tilesY; i++) {
    const o = i * TILE_RECORD;
    setTile(
      out,
      i,
      finishStats({
        count: records[o]!,
        min: records[o + 1]!,
        max: records[o + 2]!,
        sum: records[o + 3]!,
        medianLo: records[o + 4]!,
        medianHi: records[o + 5]!,
        madLo: records[o + 6]!,
        madHi: records[o + 7]!,
      }),
    );
  }
  return out;
}

/** Host to host per-tile statistics. */
export async function tileStatsGpu(ctx: GpuContext, data: Float32Array, params: TileStatsParams, tuning?: TileTuning): Promise<TileStats> {
  const { width, height, tile } = params;
  if (data.length < width * height) throw new GpuError('BAD_ARGUMENT', `stats: ${data.length} samples < ${width}x${height}`);
  const { tilesX, tilesY } = tileGrid(width, height, tile);
  const bytes = tilesX * tilesY * TILE_RECORD * 4;
  const records = ctx.storage(bytes, 'tile-stats');
  try {
    return await withUploadedSegments(ctx, data, width, height, tile, async (segments) => {
      await tileStatsResident(ctx, segments, records, params, undefined, tuning);
      return tileStatsFromRecords(await ctx.readFloat32(records, bytes / 4), params);
    });
  } finally {
    ctx.pool.release(records);
  }
}
