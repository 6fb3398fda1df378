// stats/tile_metrics: per rectangle of one f32 plane, what the tiled workflow's structure
// measure is made of (TypeScript reference with the same contract: src/cpu/tile-metrics.ts).
// For every pixel p = (x, y) of the rectangle whose neighbours (x + s, y) and (x, y + s) also lie
// in it (s = params.step: 1 mono, 2 on a Bayer mosaic) and all three samples are finite:
//   count += 1; sum += I(p); e = ((I(x+s, y) − I(p))² + (I(x, y+s) − I(p))²) / 2 goes into the
//   rectangle's histogram; and when I(p) ≤ params.bg_cut: bg_count += 1; bg_sum += I(p).
// E is the params.quantile of e read from the histogram (robust: an artefact covering under
// 1 − quantile of the rectangle cannot dominate it, as the mean of e could).
// Histogram: BINS bins in workgroup memory, on a log scale: v = e · params.inv_unit (1/σ² of the
// frame); bin = (bits(v) >> (23 − SUB_LOG2)) − ((127 + LOG2_MIN) << SUB_LOG2), clamped to
// [0, BINS − 1] (2^SUB_LOG2 bins per octave from 2^LOG2_MIN; zero and below in bin 0, whose lower
// edge is 0; above the range in the top bin, so E saturates). With t = quantile · count (f32), E
// is inside the first bin whose cumulative count exceeds t, linear between its edges, divided by
// inv_unit.
// Output per rectangle r (5 f32 at 5r): count, sum / count, E, bg_count, bg_sum / bg_count (NaN
// when its count is 0).
// Bindings: 0 uniform Params; 1 read-only plane (row-major, `width` per row); 2 read-only
//           rectangles as vec4<i32> (x, y, w, h), clipped to the plane by the caller;
//           3 read_write out, 5 f32 per rectangle.
// Workgroup: WG x 1 x 1, one workgroup per rectangle (grid x = rectangles); invocation i takes
//            positions i, i + WG, … of the rectangle's (w − s)·(h − s) positions; bins are
//            cleared by all invocations, counted with atomics, scanned by invocation 0.
// Overrides: WG, BINS, SUB_LOG2, LOG2_MIN (the wrapper passes the reference's HIST).
// Precision: the counts and the histogram are exact (u32); e is f32 as in the reference (a
//            fused multiply-add may move a sample on a bin edge to the next bin); f32 sums per
//            invocation, then a tree over WG in workgroup memory; the quantile's interpolation
//            in f32.
// No-data: NaN and ±Inf (tested on the bits: WGSL may assume floats are finite) skip the pixel.

struct Params {
  width: u32,
  step: u32,
  rects: u32,
  bg_cut: f32,
  inv_unit: f32,
  quantile: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> plane: array<f32>;
@group(0) @binding(2) var<storage, read> rects: array<vec4<i32>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

override WG: u32 = 64;
override BINS: u32 = 256;
override SUB_LOG2: u32 = 3;
override LOG2_MIN: i32 = -10;

// WGSL rejects NaN in constant expressions: its bits live in a private variable.
var<private> NAN_BITS: u32 = 0x7fc00000u;

var<workgroup> w_count: array<u32, WG>;
var<workgroup> w_sum: array<f32, WG>;
var<workgroup> w_bg_count: array<u32, WG>;
var<workgroup> w_bg_sum: array<f32, WG>;
var<workgroup> w_hist: array<atomic<u32>, BINS>;

fn finite(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

fn bin_base() -> i32 {
  return (127 + LOG2_MIN) << SUB_LOG2;
}

fn hist_bin(v: f32) -> u32 {
  if (!(v > 0.0)) {
    return 0u;
  }
  let b = i32(bitcast<u32>(v) >> (23u - SUB_LOG2)) - bin_base();
  return u32(clamp(b, 0, i32(BINS) - 1));
}

fn hist_edge(b: u32) -> f32 {
  if (b == 0u) {
    return 0.0;
  }
  return bitcast<f32>(u32(i32(b) + bin_base()) << (23u - SUB_LOG2));
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let r = wid.x;
  let rect = rects[r];
  let s = params.step;
  for (var b = li; b < BINS; b += WG) {
    atomicStore(&w_hist[b], 0u);
  }
  workgroupBarrier();
  let cols = u32(max(rect.z - i32(s), 0));
  let rows = u32(max(rect.w - i32(s), 0));
  let total = cols * rows;
  var count = 0u;
  var sum = 0.0;
  var bg_count = 0u;
  var bg_sum = 0.0;
  for (var k = li; k < total; k += WG) {
    let x = u32(rect.x) + k % cols;
    let y = u32(rect.y) + k / cols;
    let i = y * params.width + x;
    let v = plane[i];
    let a = plane[i + s];
    let b = plane[i + s * params.width];
    if (finite(v) && finite(a) && finite(b)) {
      let dx = a - v;
      let dy = b - v;
      count += 1u;
      sum += v;
      let dx2 = dx * dx;
      let dy2 = dy * dy;
      let e = 0.5 * (dx2 + dy2);
      atomicAdd(&w_hist[hist_bin(e * params.inv_unit)], 1u);
      if (v <= params.bg_cut) {
        bg_count += 1u;
        bg_sum += v;
      }
    }
  }
  w_count[li] = count;
  w_sum[li] = sum;
  w_bg_count[li] = bg_count;
  w_bg_sum[li] = bg_sum;
  workgroupBarrier();
  for (var half = WG / 2u; half > 0u; half /= 2u) {
    if (li < half) {
      w_count[li] += w_count[li + half];
      w_sum[li] += w_sum[li + half];
      w_bg_count[li] += w_bg_count[li + half];
      w_bg_sum[li] += w_bg_sum[li + half];
    }
    workgroupBarrier();
  }
  if (li == 0u) {
    let n = w_count[0];
    let nan = bitcast<f32>(NAN_BITS);
    let nb = w_bg_count[0];
    // The quantile: the first bin whose cumulative count passes t, linear inside it.
    var e_q = hist_edge(BINS);
    let t = params.quantile * f32(n);
    var before = 0u;
    for (var b = 0u; b < BINS; b++) {
      let c = atomicLoad(&w_hist[b]);
      if (f32(before + c) > t) {
        let lo = hist_edge(b);
        e_q = lo + (t - f32(before)) / f32(c) * (hist_edge(b + 1u) - lo);
        break;
      }
      before += c;
    }
    let o = 5u * r;
    out[o] = f32(n);
    out[o + 1u] = select(nan, w_sum[0] / f32(n), n > 0u);
    out[o + 2u] = select(nan, e_q / params.inv_unit, n > 0u);
    out[o + 3u] = f32(nb);
    out[o + 4u] = select(nan, w_bg_sum[0] / f32(nb), nb > 0u);
  }
}
