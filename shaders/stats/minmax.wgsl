// stats/minmax: per-workgroup partial statistics of the finite samples of an f32 image band:
// count, min, max (as order-preserving u32 keys) and sum, per group. Groups: one for the
// whole image, or the four 2x2 Bayer phases (group = (y&1)*2 + (x&1) in frame coordinates).
// The host folds the partials (count, min, max exactly; sums in f64), which keeps the mean
// accurate for 24 Mpx images: each partial sums only 1/groups of the band.
// Bindings: 0 uniform Params; 1 read-only array<vec4f> samples (row-major, `width` per row;
//           the binding covers ceil(count / 4) vec4, lanes past `count` are ignored);
//           2 read_write array<vec4u> partials, [workgroup * 4 + group] =
//             (count, min key, max key, bitcast<u32>(f32 sum)); only used groups are written.
// Workgroup: WG x 1 x 1; the band's ceil(count / 4) vec4 are split into equal contiguous runs,
//            one per workgroup (per_wg vec4 each); invocation i reads vec4 i, i + WG, ... of
//            its run (4 samples per load: llvmpipe loads per lane, so wide loads matter),
//            tracking each sample's (x, y) incrementally (no division in the loop).
//            Dispatch: (groups, 1, 1).
// Precision: count/min/max exact (min/max compare keys, not floats: no subnormal flush).
//            Sum: f32 per vec4 lane in blocks of BLOCK vec4, blocks added per lane, then the 4
//            lanes, then a tree over WG. With B = ceil(per_wg / (WG * BLOCK)) blocks, the error
//            per partial is <= (BLOCK + B + 2 + log2(WG)) * 2^-24 * sum |x| (first order); the
//            f64 fold on the host adds nothing visible.
// No-data: NaN and +-Inf (exponent bits all set, tested on the bits: WGSL may assume floats
//          are finite) are skipped and not counted.
// Key: order-preserving map f32 -> u32: negative x -> ~bits, else bits | 0x80000000.

struct Params {
  width: u32,
  count: u32,    // samples in this band (rows * width)
  per_wg: u32,   // vec4 per workgroup
  bayer: u32,    // 1: four Bayer-phase groups; 0: one group
  phase_x: u32,  // Bayer column parity of column 0 of this band
  phase_y: u32,  // Bayer row parity of row 0 of this band
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> samples4: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> partials: array<vec4u>;

override WG: u32 = 256;
// vec4 per invocation summed in one block before joining the invocation's total.
const BLOCK: u32 = 16u;

struct Acc {
  sum: vec4f,
  cnt: vec4u,
  kmin: vec4u,
  kmax: vec4u,
}

var<workgroup> w_count: array<atomic<u32>, 4>;
var<workgroup> w_min: array<atomic<u32>, 4>;
var<workgroup> w_max: array<atomic<u32>, 4>;
var<workgroup> w_sum: array<f32, 4 * WG>;

// Finite samples among the 4 at vec4 index j (lanes past the band's end count as missing).
fn valid(j: u32, bits: vec4u) -> vec4<bool> {
  return ((bits & vec4u(0x7f800000u)) != vec4u(0x7f800000u)) & (vec4u(j * 4u) + vec4u(0u, 1u, 2u, 3u) < vec4u(params.count));
}

fn order_key(bits: vec4u) -> vec4u {
  return select(bits | vec4u(0x80000000u), ~bits, (bits & vec4u(0x80000000u)) != vec4u(0u));
}

fn fold(acc: ptr<function, Acc>, v: vec4f, key: vec4u, m: vec4<bool>) {
  (*acc).sum += select(vec4f(0.0), v, m);
  (*acc).cnt += select(vec4u(0u), vec4u(1u), m);
  (*acc).kmin = min((*acc).kmin, select(vec4u(0xffffffffu), key, m));
  (*acc).kmax = max((*acc).kmax, select(vec4u(0u), key, m));
}

fn join(a: Acc, b: Acc) -> Acc {
  return Acc(a.sum + b.sum, a.cnt + b.cnt, min(a.kmin, b.kmin), max(a.kmax, b.kmax));
}

fn empty() -> Acc {
  return Acc(vec4f(0.0), vec4u(0u), vec4u(0xffffffffu), vec4u(0u));
}

// Group of the 4 samples starting at column x of row y (the run may wrap to row y + 1).
fn groups_of(x: u32, y: u32) -> vec4u {
  let xs = vec4u(x) + vec4u(0u, 1u, 2u, 3u);
  let wrap = xs >= vec4u(params.width);
  let cx = select(xs, xs - vec4u(params.width), wrap);
  let cy = vec4u(y) + select(vec4u(0u), vec4u(1u), wrap);
  return ((cy + vec4u(params.phase_y)) & vec4u(1u)) * 2u + ((cx + vec4u(params.phase_x)) & vec4u(1u));
}

fn publish(g: u32, acc: Acc, lid: u32) {
  let n = acc.cnt.x + acc.cnt.y + acc.cnt.z + acc.cnt.w;
  if (n > 0u) {
    atomicAdd(&w_count[g], n);
    atomicMin(&w_min[g], min(min(acc.kmin.x, acc.kmin.y), min(acc.kmin.z, acc.kmin.w)));
    atomicMax(&w_max[g], max(max(acc.kmax.x, acc.kmax.y), max(acc.kmax.z, acc.kmax.w)));
  }
  w_sum[g * WG + lid] = (acc.sum.x + acc.sum.y) + (acc.sum.z + acc.sum.w);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  let lid = lid3.x;
  if (lid < 4u) {
    atomicStore(&w_min[lid], 0xffffffffu);
  }
  workgroupBarrier();

  let n4 = (params.count + 3u) / 4u;
  let j0 = wid.x * params.per_wg;
  let j1 = min(j0 + params.per_wg, n4);
  let bayer = params.bayer == 1u;
  var a0 = empty();
  var a1 = empty();
  var a2 = empty();
  var a3 = empty();
  if (bayer) {
    // Position of this invocation's first sample, then steps of 4 * WG samples.
    let first = (j0 + lid) * 4u;
    var y = first / params.width;
    var x = first % params.width;
    let step = 4u * WG;
    let dy = step / params.width;
    let dx = step % params.width;
    for (var jb = j0 + lid; jb < j1; jb += BLOCK * WG) {
      var b0 = empty();
      var b1 = empty();
      var b2 = empty();
      var b3 = empty();
      for (var j = jb; j < min(jb + BLOCK * WG, j1); j += WG) {
        let v = samples4[j];
        let bits = bitcast<vec4u>(v);
        let ok = valid(j, bits);
        let key = order_key(bits);
        let g = groups_of(x, y);
        fold(&b0, v, key, ok & (g == vec4u(0u)));
        fold(&b1, v, key, ok & (g == vec4u(1u)));
        fold(&b2, v, key, ok & (g == vec4u(2u)));
        fold(&b3, v, key, ok & (g == vec4u(3u)));
        x += dx;
        y += dy;
        if (x >= params.width) {
          x -= params.width;
          y += 1u;
        }
      }
      a0 = join(a0, b0);
      a1 = join(a1, b1);
      a2 = join(a2, b2);
      a3 = join(a3, b3);
    }
  } else {
    // Blocks of BLOCK vec4 are summed apart, then added: the rounding error grows with the
    // block length plus the block count, not with the run length.
    for (var jb = j0 + lid; jb < j1; jb += BLOCK * WG) {
      var blk = empty();
      for (var j = jb; j < min(jb + BLOCK * WG, j1); j += WG) {
        let v = samples4[j];
        let bits = bitcast<vec4u>(v);
        fold(&blk, v, order_key(bits), valid(j, bits));
      }
      a0 = join(a0, blk);
    }
  }
  let groups = select(1u, 4u, bayer);
  publish(0u, a0, lid);
  if (bayer) {
    publish(1u, a1, lid);
    publish(2u, a2, lid);
    publish(3u, a3, lid);
  }
  workgroupBarrier();
  for (var s = WG / 2u; s >= 1u; s = s / 2u) {
    if (lid < s) {
      for (var g = 0u; g < groups; g++) {
        w_sum[g * WG + lid] += w_sum[g * WG + lid + s];
      }
    }
    workgroupBarrier();
  }
  if (lid < groups) {
    partials[wid.x * 4u + lid] = vec4u(atomicLoad(&w_count[lid]), atomicLoad(&w_min[lid]), atomicLoad(&w_max[lid]), bitcast<u32>(w_sum[lid * WG]));
  }
}
