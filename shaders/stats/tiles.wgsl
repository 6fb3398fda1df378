// stats/tiles: the whole statistics contract of shaders/stats/{minmax,histogram}.wgsl, for
// each T x T tile of an f32 image band, inside one workgroup per tile (no host round trips):
// count, min, max and sum of the finite samples, then the exact lower/upper middle order
// statistics (median = their mean) by radix selection over order-preserving u32 keys, then
// the same for the deviations |x - c| with c = f32 median (MAD = mean of their middles).
// Output record per tile, 8 f32: count, min, max, sum, median_lo, median_hi, mad_lo, mad_hi
// (median = (lo + hi) / 2, sigma = 1.4826 * (mad_lo + mad_hi) / 2; the host forms these
// in f64). An empty tile writes count 0 and NaN elsewhere.
// Bindings: 0 uniform Params; 1 read-only array<vec4f> samples, row-major, `width` per row
//           (the binding covers ceil(width * rows / 4) vec4); 2 read_write array<f32> records,
//           8 per tile, tile (tx, tile_row0 + ty) at ((tile_row0 + ty) * tiles_x + tx) * 8.
// Workgroup: WG x 1 x 1 invocations per tile; dispatch (tiles_x, tile rows in this band, 1).
//            Edge tiles are clipped to the image. Each tile row is read as the vec4 that
//            cover it (lanes outside the tile masked off), row by row, invocation i taking
//            vec4 slots i, i + WG, ... (llvmpipe loads per lane: wide loads matter).
//            Each radix level: clear the histograms, count, per-invocation chunk sums, one
//            invocation locates the ranks' bins, broadcast with workgroupUniformLoad. Levels
//            resolve BITS = log2(BINS) key bits, the first one the remainder; levels start
//            below the common prefix of the tile's min and max keys (of 0 and the largest
//            deviation for the MAD). Consecutive increments of one invocation to one bin are
//            combined into one atomicAdd (workgroup atomics are slow on llvmpipe).
//            Workgroup memory: 2 * BINS u32 histograms (one per middle rank) + 3 * WG words.
// Precision: count, min, max, medians and MADs exact (keys; deviations x - c rounded once in
//            f32, as in the TypeScript reference). Sum: sequential f32 per vec4 lane, then
//            the lanes, then a tree: error <= (ceil(n / (4 WG)) + 2 + log2(WG)) * 2^-24 *
//            sum |x| (first order).
// No-data: NaN and +-Inf (exponent bits all set; tested on the bits) are skipped.
// Limits: T <= 4096 (count must stay exact as f32); BINS a power of two.

struct Params {
  width: u32,
  rows: u32,       // rows in this band
  tile: u32,
  tiles_x: u32,
  tile_row0: u32,  // output tile row of this band's first tile row
}

@group(0) @binding(0) var<uniform> params: Params;
@group(0) @binding(1) var<storage, read> samples4: array<vec4f>;
@group(0) @binding(2) var<storage, read_write> records: array<f32>;

override WG: u32 = 64;
override BINS: u32 = 256;

var<workgroup> w_hist: array<atomic<u32>, 2 * BINS>;
var<workgroup> w_part: array<u32, 2 * WG>;
var<workgroup> w_sum: array<f32, WG>;
var<workgroup> w_count: atomic<u32>;
var<workgroup> w_kmin: atomic<u32>;
var<workgroup> w_kmax: atomic<u32>;
// Reduced scalars and selection results broadcast with workgroupUniformLoad.
var<workgroup> w_scalars: array<u32, 4>;

var<private> NAN_BITS: u32 = 0x7fc00000u;

// Tile geometry and this invocation's walk over it, set once per invocation.
var<private> lid: u32;
var<private> t_x0: u32;
var<private> t_y0: u32;
var<private> t_w: u32;
var<private> t_h: u32;
var<private> slots_per_row: u32;  // vec4 slots walked per tile row (covering vec4 + 1)

// Run-length combining of this invocation's increments within a pass.
var<private> pend_idx: u32;
var<private> pend_cnt: u32;

fn bump(idx: u32) {
  if (idx == pend_idx) {
    pend_cnt += 1u;
  } else {
    if (pend_cnt != 0u) {
      atomicAdd(&w_hist[pend_idx], pend_cnt);
    }
    pend_idx = idx;
    pend_cnt = 1u;
  }
}

fn order_key(bits: vec4u) -> vec4u {
  return select(bits | vec4u(0x80000000u), ~bits, (bits & vec4u(0x80000000u)) != vec4u(0u));
}

fn key_value(key: u32) -> f32 {
  return bitcast<f32>(select(~key, key & 0x7fffffffu, (key & 0x80000000u) != 0u));
}

fn top_mask(bits: u32) -> u32 {
  return select(0u, 0xffffffffu << (32u - bits), bits > 0u);
}

// The vec4 at walk slot (cx, cy) and which of its lanes are finite samples of the tile.
struct Quad {
  v: vec4f,
  ok: vec4<bool>,
}

fn quad(cx: u32, cy: u32) -> Quad {
  let s = (t_y0 + cy) * params.width + t_x0;  // first sample of the tile row
  let q = (s >> 2u) + cx;
  let idx = vec4u(q * 4u) + vec4u(0u, 1u, 2u, 3u);
  let v = samples4[min(q, arrayLength(&samples4) - 1u)];
  let inside = (idx >= vec4u(s)) & (idx < vec4u(s + t_w));
  let finite = (bitcast<vec4u>(v) & vec4u(0x7f800000u)) != vec4u(0x7f800000u);
  return Quad(v, inside & finite);
}

// Counts keys matching prefix p0 (histogram 0) or, when p1 differs, p1 (histogram 1).
fn count_pass(dev: bool, center: f32, pmask: u32, p0: u32, p1: u32, shift: u32, bmask: u32) {
  pend_cnt = 0u;
  pend_idx = 0xffffffffu;
  let n = slots_per_row * t_h;
  var cx = lid % slots_per_row;
  var cy = lid / slots_per_row;
  let step_x = WG % slots_per_row;
  let step_y = WG / slots_per_row;
  let two = p0 != p1;
  for (var i = lid; i < n; i += WG) {
    let qd = quad(cx, cy);
    cx += step_x;
    cy += step_y;
    if (cx >= slots_per_row) {
      cx -= slots_per_row;
      cy += 1u;
    }
    var key: vec4u;
    if (dev) {
      key = bitcast<vec4u>(abs(qd.v - vec4f(center))) | vec4u(0x80000000u);
    } else {
      key = order_key(bitcast<vec4u>(qd.v));
    }
    let m = key & vec4u(pmask);
    let ma = qd.ok & (m == vec4u(p0));
    let mb = qd.ok & !ma & (m == vec4u(p1)) & vec4<bool>(two);
    if (any(ma | mb)) {
      let idx = select(vec4u(0u), vec4u(BINS), mb) + ((key >> vec4u(shift)) & vec4u(bmask));
      let mm = ma | mb;
      if (mm.x) { bump(idx.x); }
      if (mm.y) { bump(idx.y); }
      if (mm.z) { bump(idx.z); }
      if (mm.w) { bump(idx.w); }
    }
  }
  if (pend_cnt != 0u) {
    atomicAdd(&w_hist[pend_idx], pend_cnt);
  }
}

// Finds, in histogram h, the bin holding rank `rank`; returns (bin, rank within the bin).
fn locate(h: u32, rank: u32, chunk: u32) -> vec2u {
  var r = rank;
  var c = 0u;
  while (c + 1u < WG && r >= w_part[h * WG + c]) {
    r -= w_part[h * WG + c];
    c += 1u;
  }
  var bin = c * chunk;
  while (bin + 1u < BINS && r >= atomicLoad(&w_hist[h * BINS + bin])) {
    r -= atomicLoad(&w_hist[h * BINS + bin]);
    bin += 1u;
  }
  return vec2u(bin, r);
}

// Exact keys of ranks r_lo <= r_hi among the (value or deviation) keys, all of which lie in
// [k_low, k_high]. Must be called in uniform control flow with uniform arguments.
fn select_pair(dev: bool, center: f32, k_low: u32, k_high: u32, r_lo: u32, r_hi: u32) -> vec2u {
  var known = countLeadingZeros(k_low ^ k_high);
  let bits = countTrailingZeros(BINS);
  let chunk = (BINS + WG - 1u) / WG;
  var p0 = k_low & top_mask(known);
  var p1 = p0;
  var q0 = r_lo;
  var q1 = r_hi;
  while (known < 32u) {
    // The first level takes the remainder bits (fewest, widest bins), as the host driver does.
    let b = (31u - known) % bits + 1u;
    let shift = 32u - known - b;
    let bmask = (1u << b) - 1u;
    // Histogram 1 is in use only once the two ranks' prefixes differ.
    let halves = select(1u, 2u, p0 != p1);
    for (var i = lid; i < halves * BINS; i += WG) {
      atomicStore(&w_hist[i], 0u);
    }
    workgroupBarrier();
    count_pass(dev, center, top_mask(known), p0, p1, shift, bmask);
    workgroupBarrier();
    for (var h = 0u; h < halves; h++) {
      var s = 0u;
      let c0 = lid * chunk;
      for (var j = c0; j < min(c0 + chunk, BINS); j++) {
        s += atomicLoad(&w_hist[h * BINS + j]);
      }
      w_part[h * WG + lid] = s;
    }
    workgroupBarrier();
    if (lid == 0u) {
      let a = locate(0u, q0, chunk);
      let c = locate(halves - 1u, q1, chunk);
      w_scalars = array<u32, 4>(a.x, a.y, c.x, c.y);
    }
    let sel = workgroupUniformLoad(&w_scalars);
    p0 |= sel[0] << shift;
    q0 = sel[1];
    p1 |= sel[2] << shift;
    q1 = sel[3];
    known += b;
  }
  return vec2u(p0, p1);
}

@compute @workgroup_size(WG)
fn main(@builtin(local_invocation_id) lid3: vec3u, @builtin(workgroup_id) wid: vec3u) {
  lid = lid3.x;
  let T = params.tile;
  t_x0 = wid.x * T;
  t_y0 = wid.y * T;
  t_w = min(T, params.width - t_x0);
  t_h = min(T, params.rows - t_y0);
  slots_per_row = (t_w + 3u) / 4u + 1u;
  let out = ((params.tile_row0 + wid.y) * params.tiles_x + wid.x) * 8u;
  if (lid == 0u) {
    atomicStore(&w_kmin, 0xffffffffu);
  }
  workgroupBarrier();

  // Pass 0: count, min, max, sum.
  var cnt = vec4u(0u);
  var kmin = vec4u(0xffffffffu);
  var kmax = vec4u(0u);
  var sum = vec4f(0.0);
  let n = slots_per_row * t_h;
  var cx = lid % slots_per_row;
  var cy = lid / slots_per_row;
  for (var i = lid; i < n; i += WG) {
    let qd = quad(cx, cy);
    cx += WG % slots_per_row;
    cy += WG / slots_per_row;
    if (cx >= slots_per_row) {
      cx -= slots_per_row;
      cy += 1u;
    }
    let key = order_key(bitcast<vec4u>(qd.v));
    cnt += select(vec4u(0u), vec4u(1u), qd.ok);
    kmin = min(kmin, select(vec4u(0xffffffffu), key, qd.ok));
    kmax = max(kmax, select(vec4u(0u), key, qd.ok));
    sum += select(vec4f(0.0), qd.v, qd.ok);
  }
  let c = cnt.x + cnt.y + cnt.z + cnt.w;
  if (c > 0u) {
    atomicAdd(&w_count, c);
    atomicMin(&w_kmin, min(min(kmin.x, kmin.y), min(kmin.z, kmin.w)));
    atomicMax(&w_kmax, max(max(kmax.x, kmax.y), max(kmax.z, kmax.w)));
  }
  w_sum[lid] = (sum.x + sum.y) + (sum.z + sum.w);
  workgroupBarrier();
  for (var s = WG / 2u; s >= 1u; s = s / 2u) {
    if (lid < s) {
      w_sum[lid] += w_sum[lid + s];
    }
    workgroupBarrier();
  }
  if (lid == 0u) {
    w_scalars = array<u32, 4>(atomicLoad(&w_count), atomicLoad(&w_kmin), atomicLoad(&w_kmax), 0u);
  }
  let red = workgroupUniformLoad(&w_scalars);
  let count = red[0];
  if (count == 0u) {
    if (lid == 0u) {
      records[out] = 0.0;
      for (var j = 1u; j < 8u; j++) {
        records[out + j] = bitcast<f32>(NAN_BITS);
      }
    }
    return;
  }
  let r_lo = (count - 1u) / 2u;
  let r_hi = count / 2u;
  let med = select_pair(false, 0.0, red[1], red[2], r_lo, r_hi);
  let lo = key_value(med.x);
  let hi = key_value(med.y);
  // f32 median, rounded once: halves are exact, so this equals fround((lo + hi) / 2).
  let center = lo * 0.5 + hi * 0.5;
  let dmax = max(key_value(red[2]) - center, center - key_value(red[1]));
  let mad = select_pair(true, center, 0x80000000u, bitcast<u32>(dmax) | 0x80000000u, r_lo, r_hi);
  if (lid == 0u) {
    records[out] = f32(count);
    records[out + 1u] = key_value(red[1]);
    records[out + 2u] = key_value(red[2]);
    records[out + 3u] = w_sum[0];
    records[out + 4u] = lo;
    records[out + 5u] = hi;
    records[out + 6u] = key_value(mad.x);
    records[out + 7u] = key_value(mad.y);
  }
}
