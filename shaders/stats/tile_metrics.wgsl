// stats/tile_metrics: per rectangle of one f32 plane, the sums of the tiled workflow's structure
// measure (TypeScript reference with the same contract: src/cpu/tile-metrics.ts). For every
// pixel p = (x, y) of the rectangle whose neighbours (x + s, y) and (x, y + s) also lie in it
// (s = params.step: 1 mono, 2 on a Bayer mosaic) and all three samples are finite:
//   count += 1; sum += I(p); energy += ((I(x+s, y) − I(p))² + (I(x, y+s) − I(p))²) / 2;
//   and when I(p) ≤ params.bg_cut: bg_count += 1; bg_sum += I(p).
// Output per rectangle r (5 f32 at 5r): count, sum / count, energy / count, bg_count,
// bg_sum / bg_count (NaN means when their count is 0).
// Bindings: 0 uniform Params; 1 read-only plane (row-major, `width` per row); 2 read-only
//           rectangles as vec4<i32> (x, y, w, h), clipped to the plane by the caller;
//           3 read_write out, 5 f32 per rectangle.
// Workgroup: WG x 1 x 1, one workgroup per rectangle (grid x = rectangles); invocation i takes
//            positions i, i + WG, … of the rectangle's (w − s)·(h − s) positions.
// Precision: f32 sums per invocation, then a tree over WG in workgroup memory; the count is
//            exact (u32).
// No-data: NaN and ±Inf (tested on the bits: WGSL may assume floats are finite) skip the pixel.

struct Params {
  width: u32,
  step: u32,
  rects: u32,
  bg_cut: f32,
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> plane: array<f32>;
@group(0) @binding(2) var<storage, read> rects: array<vec4<i32>>;
@group(0) @binding(3) var<storage, read_write> out: array<f32>;

override WG: u32 = 64;

// WGSL rejects NaN in constant expressions: its bits live in a private variable.
var<private> NAN_BITS: u32 = 0x7fc00000u;

var<workgroup> w_count: array<u32, WG>;
var<workgroup> w_sum: array<f32, WG>;
var<workgroup> w_energy: array<f32, WG>;
var<workgroup> w_bg_count: array<u32, WG>;
var<workgroup> w_bg_sum: array<f32, WG>;

fn finite(v: f32) -> bool {
  return (bitcast<u32>(v) & 0x7f800000u) != 0x7f800000u;
}

@compute @workgroup_size(WG)
fn main(@builtin(workgroup_id) wid: vec3u, @builtin(local_invocation_index) li: u32) {
  let r = wid.x;
  let rect = rects[r];
  let s = params.step;
  let cols = u32(max(rect.z - i32(s), 0));
  let rows = u32(max(rect.w - i32(s), 0));
  let total = cols * rows;
  var count = 0u;
  var sum = 0.0;
  var energy = 0.0;
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
      energy += 0.5 * (dx * dx + dy * dy);
      if (v <= params.bg_cut) {
        bg_count += 1u;
        bg_sum += v;
      }
    }
  }
  w_count[li] = count;
  w_sum[li] = sum;
  w_energy[li] = energy;
  w_bg_count[li] = bg_count;
  w_bg_sum[li] = bg_sum;
  workgroupBarrier();
  for (var half = WG / 2u; half > 0u; half /= 2u) {
    if (li < half) {
      w_count[li] += w_count[li + half];
      w_sum[li] += w_sum[li + half];
      w_energy[li] += w_energy[li + half];
      w_bg_count[li] += w_bg_count[li + half];
      w_bg_sum[li] += w_bg_sum[li + half];
    }
    workgroupBarrier();
  }
  if (li == 0u) {
    let n = w_count[0];
    let nan = bitcast<f32>(NAN_BITS);
    let nb = w_bg_count[0];
    let o = 5u * r;
    out[o] = f32(n);
    out[o + 1u] = select(nan, w_sum[0] / f32(n), n > 0u);
    out[o + 2u] = select(nan, w_energy[0] / f32(n), n > 0u);
    out[o + 3u] = f32(nb);
    out[o + 4u] = select(nan, w_bg_sum[0] / f32(nb), nb > 0u);
  }
}
